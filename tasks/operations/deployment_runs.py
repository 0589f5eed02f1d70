"""A batch's deployment runs on a work pool: the repair deployment checked, a repository's run created
(``run_deployment``, linked to the batch's run in the UI), the watched runs read back (state, worker,
the result the run published) and a run given up on cancelled. ``flows/batch.py`` drives them with
``equisa_core.operations.scaleout``.

A run's result comes back as the ``repository-result-row`` table artifact that ``repair-repository``
publishes (``tasks/operations/batch_results.py``): it lives on the Prefect server, so the batch reads it whichever
machine ran the repository.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from uuid import UUID

from pydantic import ValidationError

from equisa_core.errors import ConfigurationError
from equisa_core.operations.batch import RepositoryEntry, RepositoryResult
from equisa_core.operations.scaleout import RunSeen
from tasks.operations.batch_results import RESULT_ROW_KEY
from tasks.run.parameters import RepositoryRunParameters

__all__ = ["POLL_S", "cancel_run", "check_repair_deployment", "poll_runs", "submit_repository"]

#: Seconds between two reads of the watched runs.
POLL_S = 2.0


def check_repair_deployment(name: str, pool: str) -> str:
    """The id of deployment ``name`` (``flow/deployment``), which must exist and run on ``pool``."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound
    from prefect.settings import get_current_settings

    if not get_current_settings().api.url:
        raise ConfigurationError(f"a batch on work pool {pool} needs the Prefect server its workers poll: "
                                 "set PREFECT_API_URL")
    with get_client(sync_client=True) as client:
        try:
            deployment = client.read_deployment_by_name(name)
        except ObjectNotFound:
            raise ConfigurationError(f"no deployment {name} on the Prefect server: deploy it to work pool "
                                     f"{pool} with `equisa deploy --pool {pool}`") from None
    if deployment.work_pool_name != pool:
        raise ConfigurationError(f"deployment {name} runs on work pool {deployment.work_pool_name}, not "
                                 f"{pool}: deploy it with `equisa deploy --pool {pool}` or pass --work-pool "
                                 f"{deployment.work_pool_name}")
    return str(deployment.id)


def submit_repository(deployment: str, entry: RepositoryEntry, reports_dir: str, no_cache: bool) -> str:
    """Create the deployment run that repairs ``entry``; returns its flow run id (does not wait)."""
    from prefect.deployments import run_deployment

    params = RepositoryRunParameters(entry=entry, reports_dir=reports_dir, no_cache=no_cache)
    run = run_deployment(deployment, parameters={"params": params.model_dump(mode="json")}, timeout=0,
                         as_subflow=True, flow_run_name=f"repair-repository {entry.source}",
                         tags=["equisa", "batch"])
    return str(run.id)


def poll_runs(run_ids: Sequence[str]) -> dict[str, RunSeen]:
    """The runs ``run_ids`` as the server shows them, with the result of each finished one."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        ArtifactFilterKey,
        FlowRunFilter,
        FlowRunFilterId,
    )

    if not run_ids:
        return {}
    ids = [UUID(i) for i in run_ids]
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=ids)),
                                     limit=len(ids))
        finished = [r.id for r in runs if r.state is not None and r.state.is_final()]
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=finished), key=ArtifactFilterKey(any_=[RESULT_ROW_KEY])),
        ) if finished else []
    rows = {str(a.flow_run_id): a.data for a in artifacts}
    seen = {}
    for run in runs:
        state = run.state
        seen[str(run.id)] = RunSeen(
            state_type=state.type.value if state else "SCHEDULED", state_name=state.name if state else "",
            message=state.message if state else None, worker=(run.labels or {}).get("prefect.worker.name"),
            result=_result(rows.get(str(run.id))))
    return seen


def _result(data: object) -> RepositoryResult | None:
    """The result of a ``repository-result-row`` artifact's data (None when absent or unreadable)."""
    try:
        table = json.loads(data) if isinstance(data, str) else data
        return RepositoryResult.model_validate(table[0]) if isinstance(table, list) and table else None
    except (ValueError, ValidationError):
        return None


def cancel_run(run_id: str) -> None:
    """Cancel the run ``run_id``: a running one through its worker (Cancelling), a queued one at once."""
    from prefect.client.orchestration import get_client
    from prefect.states import Cancelled, Cancelling

    with get_client(sync_client=True) as client:
        run = client.read_flow_run(UUID(run_id))
        running = run.state is not None and (run.state.is_running() or run.state.is_pending())
        message = "the batch gave up waiting for it"
        state = Cancelling(message=message) if running else Cancelled(message=message)
        client.set_flow_run_state(run.id, state, force=True)

"""``equisa deploy``'s work: make the work pool if it is missing, ``prefect deploy`` EQUISA's deployments
(``deployments/prefect.yaml``) with Prefect's own CLI, so the file means the same either way, then the
automations:

- the CI-failure automation comes from the ``repair-on-ci-failure`` deployment's trigger (``prefect
  deploy`` installs it, owned by the deployment); ``ci_automation`` reads it back;
- the unresponsive-run automation (``unresponsive_automation``, Prefect's "zombie flow" recipe) marks
  an EQUISA flow run ``Crashed`` when its heartbeats stop (its worker or machine died), so a batch on a
  work pool sees the loss and runs the repository again.

``prefect.yaml`` holds the nightly schedule's default cron and time zone as literals (a plain ``prefect
deploy`` uses them); ``equisa deploy`` deploys a copy of it whose schedule is the one of its settings
(``DeployOptions``: ``--schedule-cron``, ``--schedule-timezone``, ``EQUISA_SCHEDULE_*``), see
``scheduled_spec``.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from equisa_core.common.options import DeployOptions
from equisa_core.errors import DeployError

__all__ = ["CI_AUTOMATION", "NIGHTLY_DEPLOYMENT", "UNRESPONSIVE_AUTOMATION", "checked_spec", "ci_automation",
           "deploy", "ensure_work_pool", "project_root", "scheduled_spec", "spec_schedules",
           "unresponsive_automation", "work_pool"]

#: The name of the CI-failure trigger's automation (``deployments/prefect.yaml``).
CI_AUTOMATION = "equisa-repair-on-ci-failure"
#: The name of the automation that marks silent EQUISA flow runs crashed.
UNRESPONSIVE_AUTOMATION = "equisa-crash-unresponsive-runs"
#: The deployment whose cron schedule ``DeployOptions`` sets.
NIGHTLY_DEPLOYMENT = "nightly-batch"
#: The tag every EQUISA deployment's runs carry (the unresponsive-run automation watches only them).
EQUISA_TAG = "equisa"


def project_root() -> Path:
    """EQUISA's folder: the one that holds ``deployments/prefect.yaml`` and the flows' entrypoints."""
    return Path(__file__).resolve().parents[1]


def ensure_work_pool(name: str, pool_type: str) -> bool:
    """Create the work pool ``name`` unless it exists; returns whether it was created."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        try:
            pool = client.read_work_pool(name)
        except ObjectNotFound:
            client.create_work_pool(WorkPoolCreate(name=name, type=pool_type))
            return True
        if pool.type != pool_type:
            raise DeployError(f"work pool {name} exists with type {pool.type}, not {pool_type}")
        return False


def checked_spec() -> Path:
    """``deployments/prefect.yaml``, once a Prefect server to deploy to is configured and the file exists."""
    from prefect.settings import get_current_settings

    if not get_current_settings().api.url:
        raise DeployError("no Prefect server: set PREFECT_API_URL to the server to deploy to")
    spec = project_root() / "deployments" / "prefect.yaml"
    if not spec.is_file():
        raise DeployError(f"{spec} is missing")
    return spec


def work_pool(pool: str, pool_type: str) -> bool:
    """``ensure_work_pool``, with any failure but a ``DeployError`` of its own said as one."""
    try:
        return ensure_work_pool(pool, pool_type)
    except DeployError:
        raise
    except Exception as error:
        raise DeployError(f"could not read or create work pool {pool}: {error}") from None


def _spec_data(spec: Path) -> dict[str, Any]:
    """The parsed ``spec`` (a ``prefect.yaml``)."""
    import yaml

    try:
        data = yaml.safe_load(spec.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as error:
        raise DeployError(f"{spec} is not valid YAML: {error}") from None
    if not isinstance(data, dict):
        raise DeployError(f"{spec} is not a prefect.yaml (no mapping at the top)")
    return data


def _deployments(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The deployments of a parsed ``prefect.yaml``."""
    return [d for d in data.get("deployments") or [] if isinstance(d, dict)]


def deployment_names(spec: Path) -> list[str]:
    """The names of the deployments ``spec`` defines."""
    return [d["name"] for d in _deployments(_spec_data(spec)) if d.get("name")]


def _cron_schedules(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The cron schedules of the nightly batch in a parsed ``prefect.yaml`` (the dicts themselves)."""
    nightly = [d for d in _deployments(data) if d.get("name") == NIGHTLY_DEPLOYMENT]
    return [schedule for deployment in nightly for schedule in deployment.get("schedules") or []
            if isinstance(schedule, dict) and "cron" in schedule]


def spec_schedules(spec: Path) -> list[tuple[str, str]]:
    """The nightly batch's cron schedules in ``spec`` as (cron, time zone), as a plain ``prefect deploy``
    installs them."""
    return [(str(s["cron"]), str(s.get("timezone") or "UTC")) for s in _cron_schedules(_spec_data(spec))]


def scheduled_spec(spec: Path, options: DeployOptions) -> str:
    """The text of ``spec`` with the nightly batch's cron schedules set to ``options``' cron and time zone
    (the file's own literals are the defaults of a plain ``prefect deploy``)."""
    import yaml

    data = _spec_data(spec)
    schedules = _cron_schedules(data)
    if not schedules:
        raise DeployError(f"{spec} has no cron schedule on deployment {NIGHTLY_DEPLOYMENT}")
    for schedule in schedules:
        schedule["cron"] = options.schedule_cron
        schedule["timezone"] = options.schedule_timezone
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def deploy(spec: Path, pool: str, names: list[str], options: DeployOptions) -> None:
    """``prefect deploy`` the deployments ``names`` of ``spec`` (none: all) to ``pool``, the schedule from
    ``options`` (in a copy of ``spec``, ``scheduled_spec``); raises ``DeployError`` with the tail of
    Prefect's output when it fails.

    One ``prefect deploy`` per deployment: Prefect ignores ``--pool`` when one command deploys several."""
    with tempfile.TemporaryDirectory(prefix="equisa-deploy-") as folder:
        scheduled = Path(folder) / spec.name
        scheduled.write_text(scheduled_spec(spec, options), encoding="utf-8")
        for name in names or deployment_names(spec):
            command = [sys.executable, "-m", "prefect", "--no-prompt", "deploy", f"--name={name}",
                       "--prefect-file", str(scheduled), "--pool", pool]
            done = subprocess.run(command, cwd=project_root(), capture_output=True, text=True)
            if done.returncode != 0:
                tail = (done.stdout + done.stderr).strip().splitlines()[-12:]
                raise DeployError(f"prefect deploy of {name} failed:\n" + "\n".join(tail))


def unresponsive_automation(after_s: float) -> str:
    """Install (or replace) the automation that marks an EQUISA flow run ``Crashed`` when no heartbeat,
    and no final state, follows its last heartbeat within ``after_s``; returns its id."""
    from datetime import timedelta

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.objects import StateType
    from prefect.events.actions import ChangeFlowRunState
    from prefect.events.schemas.automations import AutomationCore, EventTrigger, Posture
    from prefect.events.schemas.events import ResourceSpecification

    automation = AutomationCore(
        name=UNRESPONSIVE_AUTOMATION,
        description="Marks an EQUISA flow run Crashed when its heartbeats stop (its worker died), so a "
                    "batch on a work pool runs the repository again.",
        trigger=EventTrigger(
            after={"prefect.flow-run.heartbeat"},
            expect={"prefect.flow-run.heartbeat", "prefect.flow-run.Completed", "prefect.flow-run.Failed",
                    "prefect.flow-run.Cancelled", "prefect.flow-run.Crashed"},
            match=ResourceSpecification({"prefect.resource.id": ["prefect.flow-run.*"]}),
            match_related=ResourceSpecification({"prefect.resource.role": "tag",
                                                 "prefect.resource.id": f"prefect.tag.{EQUISA_TAG}"}),
            for_each={"prefect.resource.id"}, posture=Posture.Proactive, threshold=1,
            within=timedelta(seconds=after_s)),
        actions=[ChangeFlowRunState(state=StateType.CRASHED,
                                    message=f"no heartbeat for {after_s:g} s: its worker or machine died")],
    )
    try:
        with get_client(sync_client=True) as client:
            for old in client.read_automations_by_name(UNRESPONSIVE_AUTOMATION):
                client.delete_automation(old.id)
            return str(client.create_automation(automation))
    except Exception as error:
        raise DeployError(f"could not install automation {UNRESPONSIVE_AUTOMATION}: {error}") from None


def ci_automation() -> str | None:
    """The event the CI-failure automation (installed by ``prefect deploy``) waits for, read back from the
    server; None when it is missing."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        found = client.read_automations_by_name(CI_AUTOMATION)
    if not found:
        return None
    trigger = found[0].trigger
    return ", ".join(sorted(getattr(trigger, "expect", ()) or ())) or "an event"

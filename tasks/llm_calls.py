"""The LLM calls of each flow run, noted as they are made, for the run's history rows.

``call_llm`` notes every request that got an answer under the flow run it ran in (cache hits spend
nothing and are not noted). When a run is recorded, ``calls_of_current_run`` takes the calls of
its flow run and of its child flow runs (Discovery runs as a sub-flow), found through the Prefect
API, so concurrent runs in one process (a batch's child flow runs) never mix their calls.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from equisa_core.history import LLMCallRecord

__all__ = ["note_llm_call", "calls_of_current_run"]

_CALLS: dict[str, list[LLMCallRecord]] = {}
_LOCK = threading.Lock()
_MAX_DEPTH = 4


def _current_flow_run_id() -> str | None:
    from prefect.context import FlowRunContext, TaskRunContext

    task = TaskRunContext.get()
    if task is not None and task.task_run.flow_run_id is not None:
        return str(task.task_run.flow_run_id)
    flow = FlowRunContext.get()
    if flow is not None and flow.flow_run is not None:
        return str(flow.flow_run.id)
    return None


def note_llm_call(call: Any) -> None:
    """Keep one answered call (a ``equisa_core.common.cost.LLMCall``) under the current flow run."""
    flow_run_id = _current_flow_run_id()
    if flow_run_id is None:
        return
    record = LLMCallRecord(at=datetime.now(UTC), purpose=call.purpose, model=call.model,
                           input_tokens=call.input_tokens, output_tokens=call.output_tokens,
                           cost_usd=call.cost_usd, latency_s=call.latency_s, error=call.error)
    with _LOCK:
        _CALLS.setdefault(flow_run_id, []).append(record)


def calls_of_current_run() -> tuple[LLMCallRecord, ...]:
    """Take (and forget) the calls of the current flow run and its descendants, oldest first."""
    root = _current_flow_run_id()
    with _LOCK:
        if root is None or not _CALLS:
            return ()
        others = set(_CALLS) - {root}
    runs = {root} | (_descendants(root) & others if others else set())
    with _LOCK:
        taken = [c for run in runs for c in _CALLS.pop(run, [])]
    return tuple(sorted(taken, key=lambda c: c.at))


def _descendants(root: str) -> set[str]:
    """Ids of the flow runs below ``root`` (child flow runs, their children, ...)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId

    found: set[str] = set()
    frontier = [UUID(root)]
    try:
        with get_client(sync_client=True) as client:
            for _ in range(_MAX_DEPTH):
                if not frontier:
                    break
                children = client.read_flow_runs(flow_run_filter=FlowRunFilter(
                    parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=frontier)))
                frontier = [c.id for c in children if str(c.id) not in found]
                found |= {str(c.id) for c in children}
    except Exception:  # the API is unreachable: the run's own calls are still recorded
        return found
    return found

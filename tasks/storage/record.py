"""Recording a finished run: its artifacts to the store, its rows to the history, links in Prefect.

Flows call ``record_finished_run(kind, report, ...)`` as their last step: one ``record-run`` task

- writes ``runs/<run_id>/report.json``, ``report.html`` (``equisa_core.report``), ``patch.diff``
  and the final trace as a content-addressed blob, then ``manifest.json`` (``tasks/storage/artifacts.py``;
  what S3 does not take is spooled);
- writes the run's rows to the DuckDB history in one short turn (``tasks/storage/history.py``; spooled
  when the file is unusable);
- publishes a link artifact to the HTML report and a markdown list of the stored objects;

and returns the report with ``run_id``, ``artifacts`` and any storage problem added to its notes.
The run id is the flow run's id, so child flow runs (a batch of repairs) each record their own
run; the parent flow run id is kept too. Recording never fails a run: a storage fault becomes a
note, and nothing is lost.

A run that stops before its report exists (an error, nothing to do, Ctrl-C) is recorded too, the
same way, with its ``FailureReport`` as its report (``record_failed_run``): the flows wrap their
work in ``failures_recorded``, which records the failure under the flow run's id and marks the
error (``recorded_run_id``) so that no caller records it again; the CLI records what stopped a
command outside any flow (bad input found before Prefect starts, Ctrl-C between flows).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote
from pydantic import BaseModel, ConfigDict

from equisa_core.common.cost import LLMCall
from equisa_core.discovery.trace_report import TraceReport, build_trace_report
from equisa_core.errors import EquisaError
from equisa_core.history import LLMCallRecord, RunRecord
from equisa_core.operations.batch import is_remote
from equisa_core.operations.storage import RunManifest, StoredObject, resolve_artifacts, resolve_db, run_key
from equisa_core.report import render_report
from equisa_core.report.failure import FailureReport, failure_report

__all__ = ["RecordResult", "record_run", "record_finished_run", "record_failed_run", "failures_recorded",
           "recorded_run_id", "mark_recorded"]

#: How long the record of an interrupted run waits for its turn at the history before it is spooled
#: instead: the user pressed Ctrl-C and waits for the prompt.
INTERRUPTED_HISTORY_WAIT_S = 3.0

Report = TypeVar("Report", bound=BaseModel)
Kind = Literal["trace", "localize", "repair", "testgen"]


class RecordResult(BaseModel):
    """Where a run was recorded, and what went wrong doing it."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    artifacts: str | None = None
    html: str | None = None
    objects: tuple[StoredObject, ...] = ()
    problems: tuple[str, ...] = ()


def record_finished_run(kind: Kind, report: Report, repository: str, artifacts: str | None = None,
                        db: str | None = None, trace: Any = None,
                        calls: Sequence[LLMCall] = ()) -> Report:
    """Record the run (the ``record-run`` task) and return ``report`` with its run id and artifact URI.

    ``trace`` (a ``SuiteTrace`` or ``TraceReport``) adds per-test results to the history; ``calls``
    (the run's ledger, ``CostLedger.paid_calls``) its model calls.
    """
    result = record_run(kind, quote(report), repository, artifacts, db, quote(trace), quote(calls))
    update: dict[str, Any] = {"run_id": result.run_id, "artifacts": result.artifacts}
    if "problems" in type(report).model_fields:
        # ``model_copy`` does not validate: the merged problems keep the field's own type (a list on
        # ``TestgenReport``, a tuple elsewhere), or dumping the report warns that it is unexpected.
        current = getattr(report, "problems", ())
        problems = dict.fromkeys([*current, *result.problems])
        update["problems"] = list(problems) if isinstance(current, list) else tuple(problems)
    return report.model_copy(update=update)


@task(name="record-run", task_run_name="record-{kind}-run", cache_policy=NO_CACHE)
def record_run(kind: Kind, report: BaseModel, repository: str, artifacts: str | None = None,
               db: str | None = None, trace: Any = None,
               calls: Sequence[LLMCall] = ()) -> RecordResult:
    """Store the run's artifacts, write its history rows, publish links; never raises for storage."""
    trace_report = _trace_report(trace, repository)
    trace_json = json.loads(trace_report.model_dump_json()) if trace_report is not None else None
    return _record(kind, json.loads(report.model_dump_json()), repository, artifacts, db, trace_json, calls)


def _record(kind: Kind, report_json: dict[str, Any], repository: str, artifacts: str | None, db: str | None,
            trace_json: dict[str, Any] | None = None, calls: Sequence[LLMCall] = (),
            history_wait_s: float | None = None) -> RecordResult:
    """``record_run``'s work, in a flow run or outside one (then under a fresh run id)."""
    run_id, flow_run_id, parent, started = _identity()
    problems: list[str] = []
    stored: list[StoredObject] = []
    folder = html_uri = None
    try:
        location = resolve_artifacts(artifacts)
        folder = location.uri(f"runs/{run_id}")
        stored, html_uri, store_problems = _store(location, kind, run_id, repository, report_json, trace_json)
        problems.extend(store_problems)
    except EquisaError as error:
        problems.append(f"artifacts not stored: {error.message}")
    record = RunRecord(
        run_id=run_id, kind=kind, repository=repository, started_at=started, finished_at=datetime.now(UTC),
        flow_run_id=flow_run_id, parent_flow_run_id=parent, artifacts=folder, report=report_json,
        trace=trace_json, llm_calls=_llm_calls(calls), problems=tuple(problems),
    )
    try:
        from tasks.storage.history import record_history

        problem = record_history(record, resolve_db(db), timeout_s=history_wait_s)
        if problem:
            problems.append(problem)
    except EquisaError as error:
        problems.append(f"history not written: {error.message}")
    _publish(run_id, html_uri, stored, problems, report_json)
    return RecordResult(run_id=run_id, artifacts=folder, html=html_uri, objects=tuple(stored),
                        problems=tuple(problems))


def record_failed_run(kind: Kind, error: BaseException, repository: str | Path, artifacts: str | None = None,
                      db: str | None = None) -> FailureReport:
    """Record the run of ``kind`` that ``error`` stopped (its ``FailureReport``, the model calls an
    ``LLMError`` carries) and mark ``error`` with the run id; returns the failure report with its run id
    and artifact folder. Never raises: a run that cannot be recorded keeps its own error."""
    failure = failure_report(kind, error)
    try:
        path = str(repository) if is_remote(str(repository)) else str(Path(repository).resolve())
        calls = [c for c in getattr(error, "calls", ()) if isinstance(c, LLMCall)]
        wait = INTERRUPTED_HISTORY_WAIT_S if isinstance(error, KeyboardInterrupt) else None
        result = _record(kind, json.loads(failure.model_dump_json()), path, artifacts, db, calls=calls,
                         history_wait_s=wait)
    except Exception:  # recording is a courtesy here: the error the user sees is the run's own
        return failure
    mark_recorded(error, result.run_id)
    return failure.model_copy(update={"run_id": result.run_id, "artifacts": result.artifacts})


@contextmanager
def failures_recorded(kind: Kind, repository: str | Path, artifacts: str | None = None,
                      db: str | None = None) -> Iterator[None]:
    """Around a flow's work: an error (or Ctrl-C) that ends it is recorded as a failed run of ``kind``
    (``record_failed_run``) unless it was already, then raised on unchanged."""
    try:
        yield
    except (Exception, KeyboardInterrupt) as error:
        if recorded_run_id(error) is None:
            record_failed_run(kind, error, repository, artifacts, db)
        raise


#: The attribute of an error that holds the id of the run it was recorded under.
_RECORDED_AS = "equisa_run_id"


def recorded_run_id(error: BaseException) -> str | None:
    """The run id ``error`` was recorded under (``record_failed_run``, ``mark_recorded``), or None."""
    return getattr(error, _RECORDED_AS, None)


def mark_recorded(error: BaseException, run_id: str | None) -> BaseException:
    """Say that the run ``error`` ended is in the history already (as ``run_id``); returns ``error``."""
    try:
        setattr(error, _RECORDED_AS, run_id)
    except (AttributeError, TypeError):  # an exception type without a __dict__: recorded twice at worst
        pass
    return error


def _store(location: Any, kind: str, run_id: str, repository: str, report_json: dict[str, Any],
           trace_json: dict[str, Any] | None) -> tuple[list[StoredObject], str, list[str]]:
    """Store the run's objects; returns them, the HTML report's URI and what went wrong storing them."""
    from tasks.storage.artifacts import ArtifactStore

    store = ArtifactStore(location)
    stored, problems = [], []
    if trace_json is not None:
        stored.append(store.put_blob(json.dumps(trace_json, sort_keys=True).encode()))
    stored.append(store.put(run_key(run_id, "report.json"), json.dumps(report_json, indent=2).encode(),
                            "application/json"))
    html = render_report(kind, report_json, run_id=run_id, repository=repository)
    page = store.put(run_key(run_id, "report.html"), html.encode(), "text/html; charset=utf-8")
    stored.append(page)
    if report_json.get("diff"):
        stored.append(store.put(run_key(run_id, "patch.diff"), str(report_json["diff"]).encode(),
                                "text/x-diff; charset=utf-8"))
    manifest = RunManifest(run_id=run_id, kind=kind, repository=repository, objects=tuple(stored))
    stored.append(store.put(run_key(run_id, "manifest.json"), manifest.model_dump_json(indent=2).encode(),
                            "application/json"))
    if store.failure is not None:
        problems.append(f"artifacts spooled, not uploaded ({store.failure.message}); "
                        f"`equisa flush` uploads them once the store is back")
    elif location.kind == "s3" and store.spooled():
        flushed = store.flush()  # the store is back: upload what earlier runs left in the spool
        if flushed.error:
            problems.append(f"{flushed.remaining} spooled artifacts still waiting: {flushed.error}")
    return stored, page.uri, problems


def _trace_report(trace: Any, repository: str) -> TraceReport | None:
    if trace is None or isinstance(trace, TraceReport):
        return trace
    return build_trace_report(trace, repository)


def _identity() -> tuple[str, str | None, str | None, datetime | None]:
    """(run id, flow run id, parent flow run id, start time) of the flow run recording."""
    import uuid

    from prefect.context import FlowRunContext, TaskRunContext

    flow_run_id = parent = None
    started = None
    task_context = TaskRunContext.get()
    flow_context = FlowRunContext.get()
    if flow_context is not None and flow_context.flow_run is not None:
        flow_run_id = str(flow_context.flow_run.id)
        started = flow_context.flow_run.start_time
    elif task_context is not None and task_context.task_run.flow_run_id is not None:
        flow_run_id = str(task_context.task_run.flow_run_id)
    if flow_run_id is not None:
        try:
            from prefect.runtime import flow_run

            parent = flow_run.parent_flow_run_id
        except Exception:  # the API is unreachable: the parent link is a nicety
            parent = None
    return flow_run_id or uuid.uuid4().hex, flow_run_id, parent, started


def _llm_calls(calls: Sequence[LLMCall]) -> tuple[LLMCallRecord, ...]:
    """The history rows of the run's model calls (its ledger's): one per call that went to the
    endpoint, failed ones included; answers from the cache spent nothing and get none."""
    return tuple(LLMCallRecord(at=call.at or datetime.now(UTC), purpose=call.purpose, model=call.model,
                               input_tokens=call.input_tokens, output_tokens=call.output_tokens,
                               cost_usd=call.cost_usd, latency_s=call.latency_s, error=call.error)
                 for call in calls if not call.cached)


def _publish(run_id: str, html_uri: str | None, stored: list[StoredObject], problems: list[str],
             report_json: dict[str, Any]) -> None:
    """Link to the HTML report, list what was stored, table the inspections (in a flow run only)."""
    from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact
    from prefect.context import FlowRunContext, TaskRunContext

    if FlowRunContext.get() is None and TaskRunContext.get() is None:
        return
    try:
        if html_uri:
            create_link_artifact(link=_link(html_uri), link_text=f"report of run {run_id}", key="run-report",
                                 description="The run's HTML report in the artifact store")
        lines = [f"- `{o.key}` ({o.size} bytes){' — spooled, not uploaded yet' if o.spooled else ''}: "
                 f"[{o.uri}]({_link(o.uri)})" for o in stored]
        lines += [f"- note: {p}" for p in problems]
        create_markdown_artifact(markdown="\n".join(lines) or "nothing stored", key="run-artifacts",
                                 description=f"artifacts of run {run_id}")
        localization = report_json.get("localization") or report_json
        inspections = [
            {"iteration": i["iteration"], "target": i["target"], "strategy": i["strategy"],
             "outcome": i.get("outcome"), "fix_evidence": i.get("fix_evidence"),
             "confidence": f"{i['prior']:.3f} -> {i['posterior']:.3f}"}
            for i in localization.get("inspections") or ()
        ]
        if inspections:
            create_table_artifact(table=inspections, key="inspection-history",
                                  description=f"inspections of run {run_id}")
    except Exception:  # the Prefect API is down: the artifacts and history are written already
        pass


def _link(uri: str) -> str:
    """A clickable form of a stored object's location (HTTP on a custom endpoint, file:// locally)."""
    import os

    if uri.startswith("s3://"):
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        return f"{endpoint.rstrip('/')}/{uri[len('s3://'):]}" if endpoint else uri
    return f"file://{uri}"

"""The ``trace-suite`` flow: snapshot, fan the suite out over sandboxed shards, merge, find flaky tests.

Control flow only; the work is in ``tasks`` (``tasks.run.prepared_run``). The report is returned and
published as a table artifact of the most suspicious functions.
"""

from __future__ import annotations

from prefect import flow
from prefect.artifacts import create_table_artifact

from equisa_core.discovery.trace_report import TraceReport, build_trace_report
from tasks.operations.task_runners import FanOutTaskRunner
from tasks.run.parameters import TraceParameters
from tasks.run.prepared_run import prepare_run, run_suite
from tasks.storage.record import failures_recorded, record_finished_run

__all__ = ["TraceParameters", "trace_suite"]


@flow(name="trace-suite", flow_run_name="trace {params.path}", log_prints=True,
      task_runner=FanOutTaskRunner())
def trace_suite(params: TraceParameters) -> TraceReport:
    """Trace a repository's suite in sandboxes and score every function."""
    with failures_recorded("trace", params.path, params.artifacts, params.db):
        prepared, trace, problems = run_suite(prepare_run(params), params)
    report = build_trace_report(trace, str(prepared.repo))
    report = report.model_copy(update={"sandbox": prepared.sandbox,
                                       "problems": (*report.problems, *problems)})
    _publish(report)
    return record_finished_run("trace", report, str(prepared.repo), params.artifacts, params.db)


def _publish(report: TraceReport) -> None:
    rows = [
        {"function": n.fqn, "file": f"{n.file}:{n.start_line}", "failed": n.failed_s,
         "passed": n.passed_s, "tarantula": round(n.tarantula, 4), "ochiai": round(n.ochiai, 4)}
        for n in report.nodes[:10]
    ]
    s = report.summary
    create_table_artifact(
        table=rows, key="trace-ranking",
        description=f"{s.total} tests: {s.passed} passed, {s.failed} failed, {s.error} errors, "
                    f"{s.skipped} skipped, {len(report.flaky)} flaky",
    )

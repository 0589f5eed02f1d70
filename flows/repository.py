"""The ``repair-repository`` flow: one repository of a batch, or one CI failure, repaired and reported.

Control flow only. A git URL, or a folder with a ``ref``, is snapshotted first (``snapshot-workspace``:
a content-hashed read-only checkout) and the ``repair`` flow runs on the snapshot; a plain folder is
repaired where it is (``repair`` snapshots it itself and finds its ``.venv``). The full report is
written as JSON to the reports folder. The run returns a ``RepositoryResult``; when the repair
itself failed (bad input, broken interpreter, a sandbox fault) the flow run ends ``Failed`` with
that result as its data, so the UI shows it and a batch can still read what happened; any other
outcome (not fixed, plausible only, nothing to fix, a localization that did not converge) ends
``Completed``. Every run is in the history: ``repair`` records its own, whatever its outcome, and
an error before it started is recorded here.
"""

from __future__ import annotations

import time
from pathlib import Path

from prefect import flow
from prefect.runtime import flow_run
from prefect.states import Completed, Failed, State

from equisa_core.errors import EXIT_INTERNAL, EquisaError, ForgeError, NothingToLocalizeError, PushError
from equisa_core.operations.batch import RepositoryEntry, RepositoryResult, is_remote
from equisa_core.repair.report import RepairReport
from equisa_core.report.markdown import render_markdown
from flows.repair import repair
from tasks.operations.batch_io import default_reports_dir, write_report
from tasks.operations.batch_results import FullReport, publish_result, result_fields
from tasks.operations.task_runners import FanOutTaskRunner, shared_cluster
from tasks.publish.fix_branch import publish_fix_step, refusal_of
from tasks.run.parameters import RepositoryRunParameters, repair_parameters
from tasks.run.preparation import snapshot_workspace
from tasks.storage.record import failures_recorded

__all__ = ["repair_repository"]


@flow(name="repair-repository", flow_run_name="repair-repository {params.entry.source}", log_prints=True,
      task_runner=FanOutTaskRunner())
def repair_repository(params: RepositoryRunParameters) -> State:
    """Repair one repository (a folder or a git URL at a ref) and write its report."""
    with shared_cluster():
        return _run(params)


def _run(params: RepositoryRunParameters) -> State:
    entry = params.entry
    started = time.monotonic()
    run_id = str(flow_run.get_id() or "")
    reports = Path(params.reports_dir) if params.reports_dir else default_reports_dir()
    base = dict(name=entry.label, source=entry.source, ref=entry.ref, ci_failing_tests=entry.failing_tests,
                ci_run_url=entry.ci_run_url, flow_run_id=run_id)
    report: RepairReport | None = None
    try:
        # The repair flow records its own run, whatever its outcome; what fails before it starts (a
        # clone, a checkout) is recorded here, under this run's id.
        with failures_recorded("repair", entry.source):
            path = entry.source
            if is_remote(entry.source) or entry.ref:
                path = str(snapshot_workspace(entry.source, entry.ref).root)
            report = repair(repair_parameters(entry, path, params.no_cache))
        result = RepositoryResult(**base, **result_fields(report, entry))
        report, result = _published(entry, report, result)
    except NothingToLocalizeError as error:
        result = RepositoryResult(**base, status="nothing_to_fix", error=error.message,
                                  exit_code=error.exit_code)
    except EquisaError as error:
        result = RepositoryResult(**base, status="error", error=error.message, exit_code=error.exit_code)
    except Exception as error:  # a bug or an infrastructure fault: this repository fails, not the batch
        result = RepositoryResult(**base, status="error", error=f"{type(error).__name__}: {error}",
                                  exit_code=EXIT_INTERNAL)
    result = result.model_copy(update={"seconds": round(time.monotonic() - started, 3)})
    saved = write_report(str(reports / (run_id or "local")), entry.label,
                         FullReport(result=result, repair=report))
    result = result.model_copy(update={"report_path": saved})
    publish_result(result)
    print(f"{entry.label}: {result.status}" + (f" ({result.error})" if result.error else ""))
    if result.status == "error":
        return Failed(message=f"{entry.label}: {result.error}", data=result)
    return Completed(message=f"{entry.label}: {result.status}", data=result)


def _published(entry: RepositoryEntry, report: RepairReport,
               result: RepositoryResult) -> tuple[RepairReport, RepositoryResult]:
    """The entry's ``publish`` done: a fixed report's (``allow_plausible``: a plausible one's) branch pushed (and pull request opened), recorded
    in the report and the result; a failure to publish makes the result an error (the fix is kept)."""
    if not entry.publish.publishing:
        return report, result
    refused = refusal_of(report, entry.publish)
    if refused is not None:  # an outcome, in the report's problems and the log; the run is no failure
        print(f"{entry.label}: {refused}")
        return report.model_copy(update={"problems": (*report.problems, refused)}), result
    try:
        published = publish_fix_step(entry.source, entry.ref, report, entry.publish,
                                     render_markdown(report))
    except (PushError, ForgeError) as error:
        return report, result.model_copy(update={"status": "error", "error": f"fixed, but not published: "
                                                 f"{error.message}", "exit_code": error.exit_code})
    return (report.model_copy(update={"published": published}),
            result.model_copy(update={"published": published}))

"""The ``trace-suite`` flow: snapshot, fan the suite out over sandboxed shards, merge, find flaky tests.

Control flow only; the work is in ``tasks``. The report is returned and published as a table
artifact of the most suspicious functions.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import ClassVar

from prefect import flow, unmapped
from prefect.artifacts import create_table_artifact
from prefect.futures import PrefectFuture
from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.models import SuiteTrace
from equisa_core.common.options import SandboxOptions, StorageOptions
from equisa_core.common.sandbox_policy import SandboxIsolation, require_confinement, weak_isolation_warning
from equisa_core.common.trace_merge import combine, interleave, mark_flaky
from equisa_core.discovery.trace_report import TraceReport, build_trace_report
from equisa_core.errors import NoTestsCollectedError
from tasks.prepare import check_interpreter, check_repository, snapshot_workspace
from tasks.record import record_finished_run
from tasks.run_tests import run_tests, sandbox_isolation
from tasks.sandbox import RunRequest, SandboxLimits
from tasks.task_runners import FanOutTaskRunner
from tasks.workspace import Workspace

__all__ = ["TraceParameters", "PreparedRun", "prepare_run", "run_suite", "submit_flaky_rerun", "trace_suite",
           "with_flaky", "MAX_FLAKY_RERUNS"]

#: Failing tests re-run alone to tell flaky ones apart; more than this are not re-run.
MAX_FLAKY_RERUNS = 20


class TraceParameters(SandboxOptions, StorageOptions):
    """Parameters of one traced run of a repository's suite (its sandbox and storage options, plus
    what to run)."""

    model_config = ConfigDict(extra="forbid")
    #: What unreviewed code the flow of these parameters runs (None: only the user's suite); such
    #: code needs a sandbox that confines files (``equisa_core.common.sandbox_policy``).
    generated_code: ClassVar[str | None] = None

    path: str = Field(description="The repository's root folder.")
    tests: list[str] = Field(default_factory=list, description="pytest paths or node ids; empty: all.")
    rerun_failures: bool = Field(True, description="Re-run the failing tests apart to find flaky ones.")
    progress_key: str | None = Field(None, description="Key of a registered progress callback.")


class PreparedRun(BaseModel):
    """What every run of one repository shares: its folder, snapshot, interpreter and base request."""

    model_config = ConfigDict(frozen=True)

    repo: Path
    workspace: Workspace
    interpreter_version: str
    base: RunRequest
    sandbox: SandboxIsolation


def prepare_run(params: TraceParameters) -> PreparedRun:
    """Check the repository and the sandbox's isolation, snapshot the repository and check the
    interpreter (tasks), then the base request.

    Raises ``WeakSandboxError`` when the flow runs generated code and files would not be confined
    (unless the parameters accept it); otherwise weak isolation is logged once.
    """
    isolation = sandbox_isolation(params.sandbox, params.allow_weak_sandbox)
    if params.generated_code:
        require_confinement(isolation, params.generated_code)
    warning = weak_isolation_warning(isolation)
    if warning:
        _run_logger().warning(warning)
    repo = check_repository(Path(params.path))
    workspace = snapshot_workspace(str(repo))
    if params.sandbox != "docker":
        interpreter = check_interpreter(repo, params.python)
        command, version = interpreter.path, interpreter.version
    else:
        command, version = params.python or "python3", f"image:{params.docker_image or 'default'}"
    limits = SandboxLimits(wall_clock_s=params.wall_clock_s, test_timeout_s=params.test_timeout_s)
    base = RunRequest(workspace=workspace.root, workspace_digest=workspace.digest, tests=tuple(params.tests),
                      interpreter=command, limits=limits, allow_weak_isolation=isolation.weak_allowed)
    return PreparedRun(repo=repo, workspace=workspace, interpreter_version=version, base=base,
                       sandbox=isolation)


def _run_logger() -> logging.Logger | logging.LoggerAdapter:
    """The flow run's logger (its lines reach the Prefect UI), or this module's outside a flow run."""
    from prefect.exceptions import MissingContextError
    from prefect.logging import get_run_logger

    try:
        return get_run_logger()
    except MissingContextError:
        return logging.getLogger(__name__)


@flow(name="trace-suite", flow_run_name="trace {params.path}", log_prints=True,
      task_runner=FanOutTaskRunner())
def trace_suite(params: TraceParameters) -> TraceReport:
    """Trace a repository's suite in sandboxes and score every function."""
    prepared = prepare_run(params)
    report = build_trace_report(run_suite(prepared, params), str(prepared.repo))
    report = report.model_copy(update={"sandbox": prepared.sandbox})
    _publish(report)
    return record_finished_run("trace", report, str(prepared.repo), params.artifacts, params.db)


def run_suite(prepared: PreparedRun, params: TraceParameters) -> SuiteTrace:
    """Fan the suite out over shards (mapped ``run-tests`` tasks), merge, and mark flaky tests."""
    base, version = prepared.base, prepared.interpreter_version
    shards = params.shards or os.cpu_count() or 1
    requests = [base] if shards == 1 else [
        base.model_copy(update={"shard": (index, shards)}) for index in range(shards)
    ]
    runner = run_tests.with_options(refresh_cache=params.no_cache or None)
    common = {"backend": unmapped(params.sandbox), "interpreter_version": unmapped(version),
              "docker_image": unmapped(params.docker_image), "progress_key": unmapped(params.progress_key)}
    parts: list[SuiteTrace] = runner.map(requests, **common).result()
    trace = combine(parts, interleave([part.collected for part in parts]))
    if not trace.tests and not trace.crashed:
        raise NoTestsCollectedError(
            "no tests collected" + (f" for {' '.join(params.tests)}" if params.tests else ""))
    if params.rerun_failures:
        trace = with_flaky(trace, submit_flaky_rerun(prepared, params, trace))
    return trace


def submit_flaky_rerun(prepared: PreparedRun, params: TraceParameters, trace: SuiteTrace,
                       ) -> PrefectFuture[SuiteTrace] | None:
    """The failing tests run again in one process, apart from the rest of the suite (a future, so
    other work may run meanwhile; None when no test failed): a test that passes there failed by
    chance or because of what other tests left behind. (One process per test would also catch
    failures caused by another failing test, at the price of a sandbox and the project's imports
    per test: seconds each on projects that import slowly.)"""
    failing = sorted(trace.failed_tests())
    if not failing:
        return None
    again = prepared.base.model_copy(update={"only": tuple(failing[:MAX_FLAKY_RERUNS]), "trace": False})
    runner = run_tests.with_options(refresh_cache=params.no_cache or None)
    return runner.submit(again, backend=params.sandbox, interpreter_version=prepared.interpreter_version,
                         docker_image=params.docker_image)


def with_flaky(trace: SuiteTrace, rerun: PrefectFuture[SuiteTrace] | None) -> SuiteTrace:
    """``trace`` with the tests that passed in ``rerun`` (``submit_flaky_rerun``) marked flaky."""
    if rerun is None:
        return trace
    again: SuiteTrace = rerun.result()
    return mark_flaky(trace, {t.test_id for t in again.tests if t.outcome == "passed"})


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

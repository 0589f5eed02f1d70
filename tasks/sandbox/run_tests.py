"""The ``run_tests`` Prefect task: one sandboxed, cached, crash-resuming run of (part of) a suite.

``execute_request`` is the plain function (no Prefect): it runs the request in a sandbox and,
when a test kills the interpreter, records that test as an ``InterpreterCrash`` error and
resumes with the tests not yet run, up to ``MAX_RESUMES`` times. The task wraps it with a cache
key of everything the result depends on (``RunRequest.cache_key``) and retries that fire only for
``SandboxInfrastructureError`` — a failing test is a result, never a reason to retry.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from prefect import Task, task
from prefect.client.schemas.objects import TaskRun
from prefect.context import TaskRunContext
from prefect.states import State

from equisa_core.common.models import SuiteTrace, TestResult
from equisa_core.common.probe_output import parse_probe_output
from equisa_core.common.sandbox_policy import IsolationLevel, SandboxIsolation
from equisa_core.common.trace_merge import combine, crash_result
from equisa_core.errors import (
    CollectionError,
    InvalidSelectionError,
    NoTestsCollectedError,
    ProbeProtocolError,
)
from tasks.operations.progress_events import finished_test_reporter
from tasks.sandbox.contract import RecordCallback, RunRequest, Sandbox, SandboxInfrastructureError, SandboxRun
from tasks.sandbox.served_runs import run_serving

__all__ = [
    "MAX_RESUMES",
    "NOT_IMPORTING",
    "SANDBOX_BACKENDS",
    "make_sandbox",
    "sandbox_isolation",
    "backend_key",
    "execute_request",
    "run_tests",
]

#: Crashes survived per run before the rest of the tests are given up.
MAX_RESUMES = 10
#: ``none`` is the local sandbox with no isolation, chosen explicitly (it accepts weak isolation).
SANDBOX_BACKENDS = ("local", "docker", "none")
_PYTEST_USAGE_ERROR = 4
_PYTEST_NO_TESTS = 5

def make_sandbox(backend: str, docker_image: str | None = None) -> Sandbox:
    """The sandbox for ``backend`` ('local', 'docker' or 'none')."""
    if backend in ("local", "none"):
        from equisa_core.common.sandbox_policy import IsolationLevel
        from tasks.sandbox.local_backend import LocalSandbox

        return LocalSandbox(level=IsolationLevel.NONE if backend == "none" else None)
    if backend == "docker":
        from tasks.sandbox.docker_backend import DockerSandbox

        return DockerSandbox(image=docker_image) if docker_image else DockerSandbox()
    raise InvalidSelectionError(f"unknown sandbox {backend!r}; choose one of {', '.join(SANDBOX_BACKENDS)}")


def sandbox_isolation(backend: str, weak_allowed: bool = False) -> SandboxIsolation:
    """The isolation ``backend``'s sandboxes give on this machine (``--sandbox none`` accepts weak
    isolation by itself)."""
    if backend == "docker":
        return SandboxIsolation(backend="docker", level=IsolationLevel.DOCKER, weak_allowed=weak_allowed,
                                reason="a container: no network, read-only root, non-root user")
    from tasks.sandbox.local_backend import LocalSandbox

    sandbox = make_sandbox(backend)
    assert isinstance(sandbox, LocalSandbox)  # 'local' and 'none' are local sandboxes
    return sandbox.isolation(weak_allowed or backend == "none")


def backend_key(backend: str, docker_image: str | None) -> str:
    """The sandbox's part of a run's cache key: the backend, the image, the local isolation level
    (a run under weaker isolation may see more, so its result is not reused under stronger)."""
    if backend == "docker":
        return backend + (docker_image or "")
    return f"{backend}/{sandbox_isolation(backend).level.value}"


def execute_request(
    sandbox: Sandbox, request: RunRequest, on_record: RecordCallback | None = None
) -> SuiteTrace:
    """Run ``request`` in ``sandbox``, resuming after crashes; raise when no test could run."""
    first_run = run_serving(sandbox, request, on_record)  # a trace shard may stay to serve mutants
    if not first_run.probe_output:
        raise _no_output_error(first_run, request)
    first = _parse(first_run, request)
    parts, crashed = _resume_after_crashes(sandbox, request, on_record, first, first_run)
    trace = combine(parts, first.collected, extra=crashed)
    if not trace.tests and not trace.crashed and not trace.collect_errors and request.shard is not None:
        return trace  # a shard of a suite smaller than the shard count: the flow judges the whole
    if not trace.tests and not trace.crashed:
        raise _nothing_ran_error(trace, first_run, request)
    return trace


def _resume_after_crashes(
    sandbox: Sandbox, request: RunRequest, on_record: RecordCallback | None,
    first: SuiteTrace, first_run: SandboxRun,
) -> tuple[list[SuiteTrace], list[TestResult]]:
    """The traces of the first run and of each resumed one, and the tests that killed the interpreter.

    Each crashed part is stored with its crash cleared: the crash becomes one ``crash_result``.
    """
    parts = [first]
    crashed: list[TestResult] = []
    current, last_run = first, first_run
    for _ in range(MAX_RESUMES):
        # A timeout spent the run's budget; a death outside any test leaves nothing to resume.
        if not current.crashed or current.crashed_in is None or last_run.timed_out:
            break
        crashed.append(crash_result(current.crashed_in, current.crash_reason or "crashed"))
        done = {t.test_id for part in parts for t in part.tests} | {c.test_id for c in crashed}
        remaining = tuple(t for t in first.collected if t not in done)
        parts[-1] = current.model_copy(update={"crashed": False, "crashed_in": None, "crash_reason": None})
        if not remaining:
            break
        last_run = sandbox.run(request.model_copy(update={"only": remaining, "shard": None}), on_record)
        if not last_run.probe_output:
            break
        current = _parse(last_run, request)
        parts.append(current)
    return parts, crashed


#: How the message of a run in which nothing ran, for its modules did not import, begins.
NOT_IMPORTING = "the test suite does not import: "


def _nothing_ran_error(trace: SuiteTrace, first_run: SandboxRun, request: RunRequest) -> Exception:
    """The error for a run in which no test ran and nothing crashed."""
    if trace.collect_errors:
        first = trace.collect_errors[0]
        more = len(trace.collect_errors) - 1
        return CollectionError(
            f"{NOT_IMPORTING}{first.location}: {_last_line(first.message)}"
            + (f" (and {more} more)" if more else "")
        )
    if first_run.exit_code == _PYTEST_USAGE_ERROR:
        return InvalidSelectionError(f"pytest rejected the selection: {_last_line(first_run.log_tail)}")
    return NoTestsCollectedError(
        "no tests collected" + (f" for {' '.join(request.tests)}" if request.tests else "")
    )


def _parse(run: SandboxRun, request: RunRequest) -> SuiteTrace:
    trace = parse_probe_output(run.probe_output.splitlines())
    if trace.crashed:
        reason = f"timed out after {request.limits.wall_clock_s:g}s" if run.timed_out else (
            f"exit status {run.exit_code}" if run.exit_code is not None else "killed by a signal"
        )
        trace = trace.model_copy(update={"crash_reason": reason})
    return trace


def _no_output_error(run: SandboxRun, request: RunRequest) -> Exception:
    if run.exit_code == _PYTEST_USAGE_ERROR:
        return InvalidSelectionError(f"pytest rejected the selection: {_last_line(run.log_tail)}")
    if run.exit_code == _PYTEST_NO_TESTS:
        return NoTestsCollectedError("no tests collected")
    if run.timed_out:
        return ProbeProtocolError("the run timed out before the probe started")
    return ProbeProtocolError(
        f"pytest exited with status {run.exit_code} before the probe started: {_last_line(run.log_tail)}"
    )


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    meaningful = [line for line in lines if not set(line) <= set("=-_ ")]
    return (meaningful or lines or ["(no output)"])[-1][:300]


# ---------------------------------------------------------------------------------------------
# The Prefect task.


def _cache_key(context: TaskRunContext, parameters: dict[str, Any]) -> str:
    request: RunRequest = parameters["request"]
    return request.cache_key(backend_key(parameters["backend"], parameters.get("docker_image")),
                             parameters.get("interpreter_version", ""))


def _infrastructure_only(task: Task[..., Any], task_run: TaskRun, state: State[Any]) -> bool:
    """Retry only when the sandbox itself failed."""
    try:
        state.result(raise_on_failure=True)
    except SandboxInfrastructureError:
        return True
    except Exception:
        return False
    return False


def _run_name() -> str:
    from prefect.runtime import task_run

    request: RunRequest = task_run.parameters["request"]
    if request.only is not None and len(request.only) == 1:
        return f"rerun {request.only[0]}"
    if request.shard is not None:
        return f"run-tests shard {request.shard[0] + 1}/{request.shard[1]}"
    return "run-tests"


@task(
    name="run-tests",
    task_run_name=_run_name,
    cache_key_fn=_cache_key,
    cache_expiration=timedelta(days=30),
    persist_result=True,
    retries=2,
    retry_delay_seconds=[2, 10],
    retry_condition_fn=_infrastructure_only,
)
def run_tests(
    request: RunRequest,
    backend: str = "local",
    interpreter_version: str = "",
    docker_image: str | None = None,
    report_tests: bool = False,
) -> SuiteTrace:
    """Run (a shard of) a suite in a sandbox and return the probe's per-test results; with
    ``report_tests`` (the suite's traced run: the command's spinner counts its tests), each finished
    test is also a ``FinishedTest`` progress event (``tasks.operations.progress_events``)."""
    on_record = finished_test_reporter() if report_tests else None
    return execute_request(make_sandbox(backend, docker_image), request, on_record)

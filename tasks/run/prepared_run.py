"""A prepared run of a repository's suite: the checked, snapshotted repository and its base request,
the suite traced over sandboxed shards with its flaky tests marked, and requests narrowed to a few
of its tests.

Flaky tests: each shard re-runs its own failing tests apart, in a fork of its process made after
collection, before any test ran (``RunRequest.rerun_failures``; the probe's ``rerun`` records mark
them while its output is parsed). Only the failing tests no shard could re-run so (no ``os.fork``,
threads alive after collection, a crashed shard) are re-run in one new sandboxed process
(``submit_flaky_rerun``), and the run's log says why.

Plain functions that submit or call Prefect tasks (``run-tests``), called from a flow run.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from prefect import unmapped
from prefect.futures import PrefectFuture
from pydantic import BaseModel, ConfigDict

from equisa_core.common.models import Node, SuiteTrace
from equisa_core.common.options import AUTO_TIMEOUT, NEW_TEST_TIMEOUT_S
from equisa_core.common.sandbox_policy import SandboxIsolation, require_confinement, weak_isolation_warning
from equisa_core.common.time_limits import (
    TIMED_OUT,
    first_run_cap,
    limits_from_history,
    limits_from_run,
    stopped_note,
    timed_out,
    uniform_limit,
)
from equisa_core.common.trace_merge import MAX_FLAKY_RERUNS, combine, interleave, mark_flaky
from equisa_core.environment import SuiteEnvironment
from equisa_core.errors import NoTestsCollectedError
from equisa_core.operations.storage import resolve_db
from equisa_core.testgen.carving import GENERATED_TESTS_DIR
from tasks.run.interpreter import Interpreter, resolve_interpreter
from tasks.run.parameters import TraceParameters
from tasks.run.preparation import check_interpreter, check_repository, snapshot_workspace
from tasks.run.workspace import Workspace
from tasks.sandbox import early_runs
from tasks.sandbox.contract import RunRequest, SandboxLimits
from tasks.sandbox.run_tests import run_tests, sandbox_isolation
from tasks.storage.history import recorded_durations

__all__ = ["PreparedRun", "prepare_run", "run_suite", "shard_requests", "submit_flaky_rerun", "with_flaky",
           "focused_request", "source_texts",
           "narrowed", "limited", "elsewhere_note", "MAX_FLAKY_RERUNS"]


class PreparedRun(BaseModel):
    """What every run of one repository shares: its folder, snapshot, interpreter and base request."""

    model_config = ConfigDict(frozen=True)

    repo: Path
    workspace: Workspace
    interpreter_version: str
    base: RunRequest
    sandbox: SandboxIsolation
    environment: SuiteEnvironment | None = None  # None: the docker sandbox (the image's interpreter)


def prepare_run(params: TraceParameters, early: bool = False) -> PreparedRun:
    """Check the repository and the sandbox's isolation, snapshot the repository and check the
    interpreter (tasks), then the base request. ``early``: before any flow run (the command line's
    early trace, ``tasks.run.early_trace``): the tasks' plain functions, nothing logged, and the
    interpreter kept for the flow's own check (``resolve_interpreter``'s ``remember``).

    Raises ``WeakSandboxError`` when the flow runs generated code and files would not be confined
    (unless the parameters accept it); otherwise weak isolation is logged once.
    """
    isolation = sandbox_isolation(params.sandbox, params.allow_weak_sandbox)
    if params.generated_code:
        require_confinement(isolation, params.generated_code)
    warning = weak_isolation_warning(isolation)
    if warning and not early:
        _run_logger().warning(warning)
    repo = check_repository(Path(params.path))
    workspace = snapshot_workspace.fn(str(repo)) if early else snapshot_workspace(str(repo))
    if params.sandbox != "docker":
        interpreter = (_remembered_interpreter if early else check_interpreter)(
            repo, params.python, params.provision, params.environments)
        command, version = interpreter.path, interpreter.version
        environment = interpreter.environment()
    else:
        command, version = params.python or "python3", f"image:{params.docker_image or 'default'}"
        environment = None
    limits = SandboxLimits(wall_clock_s=params.shard_timeout_s,
                           test_timeout_s=uniform_limit(params.test_timeout_s, params.shard_timeout_s),
                           per_test=_first_run_limits(params, repo))
    base = RunRequest(workspace=workspace.root, workspace_digest=workspace.digest, tests=tuple(params.tests),
                      interpreter=command, limits=limits, allow_weak_isolation=isolation.weak_allowed,
                      env=dict(params.test_env))
    return PreparedRun(repo=repo, workspace=workspace, interpreter_version=version, base=base,
                       sandbox=isolation, environment=environment)


def _remembered_interpreter(repo: Path, python: str | None, provision: bool, environments: str | None,
                            ) -> Interpreter:
    """``check_interpreter``'s answer, without its task run, kept for the task's own call."""
    folder = Path(environments).expanduser() if environments else None
    return resolve_interpreter(repo, python, provision, folder, remember=True)


def _first_run_limits(params: TraceParameters, repo: Path) -> dict[str, float]:
    """Under ``--test-timeout auto``, the first run's limits of the tests the history has durations for
    (``equisa_core.common.time_limits``); the others get ``FIRST_RUN_TIMEOUT_S``."""
    if params.test_timeout_s != AUTO_TIMEOUT:
        return {}
    cap = first_run_cap(params.shard_timeout_s)
    recorded = limits_from_history(recorded_durations(resolve_db(params.db), str(repo), TIMED_OUT))
    return {test: min(limit, cap) for test, limit in recorded.items()}


def limited(prepared: PreparedRun, trace: SuiteTrace, params: TraceParameters,
            ) -> tuple[PreparedRun, str | None]:
    """Under ``--test-timeout auto``, ``prepared`` whose base request gives each test of ``trace`` (the
    first run) its own limit from its duration there, for every later run (a test made later gets
    ``NEW_TEST_TIMEOUT_S``); and what to tell the user
    when the first run stopped tests at their limits (None: nothing to tell)."""
    if params.test_timeout_s != AUTO_TIMEOUT:
        return _looping_cut(prepared, trace), None
    first = prepared.base.limits
    note = stopped_note(trace.tests, first.per_test, first.test_timeout_s)
    limits = first.model_copy(update={"per_test": limits_from_run(trace.tests),
                                      "test_timeout_s": NEW_TEST_TIMEOUT_S})
    return prepared.model_copy(update={"base": prepared.base.model_copy(update={"limits": limits})}), note


def _looping_cut(prepared: PreparedRun, trace: SuiteTrace) -> PreparedRun:
    """Under an explicit ``--test-timeout N``: ``prepared`` whose tests that reached N in the first run
    (they loop) get, in every later run, the limit ``auto`` would give them (from the passing tests'
    median duration) when it is shorter than N. Measured on a suite whose every test loops: with
    ``--test-timeout 3`` each mutant and validation run waited 3 s per looping test where ``auto``
    waited 2 s, so an explicit short limit made the repair slower than the default."""
    limit = prepared.base.limits.test_timeout_s
    looping = [r for r in trace.tests if timed_out(r)]
    if limit is None or not looping:
        return prepared
    derived = limits_from_run(trace.tests)
    per_test = {r.test_id: derived[r.test_id] for r in looping if derived[r.test_id] < limit}
    if not per_test:
        return prepared
    limits = prepared.base.limits.model_copy(update={"per_test": {**prepared.base.limits.per_test, **per_test}})
    return prepared.model_copy(update={"base": prepared.base.model_copy(update={"limits": limits})})


def _run_logger() -> logging.Logger | logging.LoggerAdapter:
    """The flow run's logger (its lines reach the Prefect UI), or this module's outside a flow run."""
    from prefect.exceptions import MissingContextError
    from prefect.logging import get_run_logger

    try:
        return get_run_logger()
    except MissingContextError:
        return logging.getLogger(__name__)


def run_suite(prepared: PreparedRun, params: TraceParameters, rerun_later: bool = False,
              serve_owner: str | None = None) -> tuple[PreparedRun, SuiteTrace, list[str]]:
    """Fan the suite out over shards (mapped ``run-tests`` tasks), merge, and mark flaky tests.
    ``serve_owner``: the shards' processes stay to serve a mutant run (``tasks.sandbox.served_runs``).

    With ``params.rerun_failures`` each shard re-runs its failing tests apart; the failing tests no
    shard could re-run are re-run in a new process here, or, with ``rerun_later``, left to the
    caller (``submit_flaky_rerun``, to run alongside other work).

    Returns ``prepared`` with each test's own time limit from this run (``limited``), the trace, and
    the problems to report (tests stopped at their first-run limits)."""
    version = prepared.interpreter_version
    requests = shard_requests(prepared, params, serve_owner)
    runner = run_tests.with_options(refresh_cache=params.no_cache or None)
    common = {"backend": unmapped(params.sandbox), "interpreter_version": unmapped(version),
              "docker_image": unmapped(params.docker_image), "report_tests": unmapped(True)}
    try:
        parts: list[SuiteTrace] = runner.map(requests, **common).result()
    finally:
        early_runs.discard()  # the trace is in: a run started early that no shard adopted is not wanted
    trace = combine(parts, interleave([part.collected for part in parts]))
    if not trace.tests and not trace.crashed:
        raise NoTestsCollectedError(
            "no tests collected" + (f" for {' '.join(params.tests)}" if params.tests else ""))
    prepared, note = limited(prepared, trace, params)
    if params.rerun_failures and not rerun_later:
        trace = with_flaky(trace, submit_flaky_rerun(prepared, params, trace))
    problems = [note] if note else []
    if trace.imported_elsewhere:
        problems.append(elsewhere_note(trace.imported_elsewhere))
        _run_logger().warning(problems[-1])
    return prepared, trace, problems


def shard_requests(prepared: PreparedRun, params: TraceParameters, serve_owner: str | None = None,
                   ) -> list[RunRequest]:
    """The requests of the suite's traced shards (``run_suite``'s ``run-tests`` tasks, one each)."""
    base = prepared.base
    if params.rerun_failures:
        base = base.model_copy(update={"rerun_failures": True})
    if serve_owner is not None:
        base = base.model_copy(update={"serve_owner": serve_owner})
    shards = params.shards or os.cpu_count() or 1
    return [base] if shards == 1 else [
        base.model_copy(update={"shard": (index, shards)}) for index in range(shards)
    ]


def elsewhere_note(modules: Mapping[str, str]) -> str:
    """What to tell the user when the suite imported the repository's packages from outside the
    sandbox's copy (``SuiteTrace.imported_elsewhere``)."""
    listed = ", ".join(f"{name} from {file}" for name, file in sorted(modules.items()))
    return (f"the suite imported {listed}, not the sandbox's copy of the repository: what runs there is "
            "not what EQUISA traces, inspects or patches. An installed copy of the project (pip install "
            "without -e, or a .pth/PYTHONPATH entry for another folder) shadows it: uninstall it from the "
            "suite's interpreter, or run with --no-provision / another --python")


def submit_flaky_rerun(prepared: PreparedRun, params: TraceParameters, trace: SuiteTrace,
                       ) -> PrefectFuture[SuiteTrace] | None:
    """The failing tests run again in one new process, apart from the rest of the suite (a future,
    so other work may run meanwhile; None when no test is left to re-run): a test that passes there
    failed by chance or because of what other tests left behind. (One process per test would also
    catch failures caused by another failing test, at the price of a sandbox and the project's
    imports per test: seconds each on projects that import slowly.) A test stopped at its time
    limit is not re-run: one that loops would only loop again. Nor is one its shard re-ran apart
    itself (``SuiteTrace.rerun_apart``): normally every one, and this submits nothing."""
    stopped = {t.test_id for t in trace.tests if timed_out(t)}
    failing = sorted(trace.failed_tests() - stopped - trace.rerun_apart)
    if not failing:
        return None
    if trace.rerun_skipped:
        _run_logger().info("%d failing test(s) re-run apart in a new process: %s", len(failing),
                           trace.rerun_skipped)
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


def focused_request(prepared: PreparedRun, only: Sequence[str], overlay: Mapping[str, str],
                    **update: object) -> RunRequest:
    """The base request narrowed to the tests ``only`` names: pytest collects just their files.

    Collecting only the files involved is faster, and it is how generated tests (which live in the
    overlay, maybe outside the project's configured test paths) are found. When a test's file is
    not a path of the workspace or the overlay (a rootdir elsewhere), the base selection stays.
    """
    files = sorted({test_id.split("::", 1)[0] for test_id in only})
    root = prepared.workspace.root
    located = all((root / f).is_file() or f in overlay for f in files)
    tests = tuple(files) if files and located else prepared.base.tests
    return prepared.base.model_copy(update={
        "overlay": dict(overlay), "only": tuple(only) or None, "tests": tests, **update})


def narrowed(prepared: PreparedRun, test_ids: Sequence[str]) -> PreparedRun:
    """``prepared`` whose base request runs only the suite's own tests among ``test_ids`` (what the
    test-generation agent's baseline needs: the tests that execute its focus), or ``prepared`` as
    it is when none is left or a test's file is not a path of the workspace (a rootdir elsewhere)."""
    root = prepared.workspace.root
    own = sorted(t for t in test_ids if not t.startswith(GENERATED_TESTS_DIR + "/"))
    if not own or not all((root / t.split("::", 1)[0]).is_file() for t in own):
        return prepared
    return prepared.model_copy(update={"base": prepared.base.model_copy(update={"tests": tuple(own)})})


def source_texts(prepared: PreparedRun, overlay: Mapping[str, str], nodes: Iterable[Node]) -> dict[str, str]:
    """File -> text of the nodes' files as a run sees them: the overlay's version, else the
    workspace copy's (a file that cannot be read is left out). What ``carve_tests`` reads the
    members' definitions from, so that carved tests call them directly."""
    root = prepared.workspace.root
    texts: dict[str, str] = {}
    for file in sorted({n.file for n in nodes if n.file}):
        if file in overlay:
            texts[file] = overlay[file]
            continue
        try:
            texts[file] = (root / file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    return texts

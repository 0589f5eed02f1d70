"""One deadline for every sandboxed run of a flow run (``tasks.sandbox.contract.run_deadline``): a run's wall
clock is the sooner of its own and the time left to the deadline; a run the deadline cut raises
``BudgetSpentError`` and is never cached, so a later run with more time runs it whole, and a run
that ended before the deadline is cached under the key it has without one."""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path

import pytest
from prefect import flow

from equisa_core.errors import EXIT_BUDGET_SPENT, BudgetSpentError, exit_code_for
from tasks.operations.task_runners import FanOutTaskRunner
from tasks.sandbox.contract import RunRequest, SandboxLimits, run_deadline, seconds_to_deadline
from tasks.sandbox.local_backend import LocalSandbox
from tasks.sandbox.run_tests import run_tests
from tests.conftest import small_repo

SLEEP_S = 4.0


def slow_repo(root: Path) -> Path:
    repo = small_repo(root)
    (repo / "tests" / "test_slow.py").write_text(
        f"import time\n\n\ndef test_slow():\n    time.sleep({SLEEP_S})\n")
    return repo


def slow_request(repo: Path) -> RunRequest:
    return RunRequest(workspace=repo, workspace_digest=uuid.uuid4().hex, interpreter=sys.executable,
                      trace=False, limits=SandboxLimits(wall_clock_s=120.0, test_timeout_s=None))


@flow(task_runner=FanOutTaskRunner())
def _run_within(request: RunRequest, seconds: float | None) -> list[str]:
    """The cached run-tests task, submitted to the flow's thread pool under a deadline."""
    with run_deadline(seconds):
        trace = run_tests.submit(request).result()
    return [f"{t.test_id} {t.outcome.value}" for t in trace.tests]


def test_deadlines_nest_to_the_sooner_and_end_with_their_block():
    assert seconds_to_deadline() is None
    with run_deadline(100.0):
        with run_deadline(1000.0):
            left = seconds_to_deadline()
            assert left is not None and 99.0 < left <= 100.0
        with run_deadline(10.0):
            left = seconds_to_deadline()
            assert left is not None and left <= 10.0
        with run_deadline(None):
            assert seconds_to_deadline() is not None
    assert seconds_to_deadline() is None


def test_a_run_started_after_the_deadline_raises_without_running(tmp_path):
    request = slow_request(slow_repo(tmp_path / "slow"))
    started = time.monotonic()
    with run_deadline(0.0), pytest.raises(BudgetSpentError) as raised:
        LocalSandbox(scratch_root=tmp_path).run(request)
    assert time.monotonic() - started < 1.0
    assert exit_code_for(raised.value) == EXIT_BUDGET_SPENT


def test_a_run_cut_by_the_deadline_is_not_cached_and_a_finished_one_keeps_its_key(prefect_api_url, tmp_path):
    request = slow_request(slow_repo(tmp_path / "slow"))
    started = time.monotonic()
    with pytest.raises(BudgetSpentError):
        _run_within(request, 1.0)  # cut at the deadline, well before its own wall clock (120 s)
    assert time.monotonic() - started < 60.0
    # Not served the cut run: it runs whole (the test sleeps, then passes).
    started = time.monotonic()
    assert _run_within(request, None) == ["tests/test_slow.py::test_slow passed"]
    assert time.monotonic() - started >= SLEEP_S
    # Finished without a deadline: served from the cache to a run under one (the same key).
    started = time.monotonic()
    assert _run_within(request, 1.0) == ["tests/test_slow.py::test_slow passed"]
    assert time.monotonic() - started < SLEEP_S

"""Flaky tests found by each traced shard itself: the probe forks the shard's process after collection,
before any test runs, and re-runs the shard's failing tests in that pristine fork; only when it cannot
(here: a thread alive after collection) does the flow re-run them in a new sandboxed process.

The suites run for real in the local sandbox, inside a ``trace-suite`` flow run; each sandboxed run
is counted (``LocalSandbox.run`` wrapped, not replaced), so a re-run in a new process shows.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prefect.settings import PREFECT_LOCAL_STORAGE_PATH, temporary_settings

from equisa_core.discovery.trace_report import TraceReport
from flows.trace import trace_suite
from tasks.run.parameters import TraceParameters
from tasks.sandbox.contract import RunRequest, SandboxRun
from tasks.sandbox.local_backend import LocalSandbox
from tests.conftest import small_repo

T = "tests/test_counter.py::"

#: A module whose state the tests share: ``test_b`` fails only after ``test_a`` ran in its process.
COUNTER = "seen = []\n\n\ndef remember(x):\n    seen.append(x)\n    return len(seen)\n"
STATE_LEFT_BEHIND = (
    "from counter import remember\n\n\n"
    "def test_a_leaves_state():\n    assert remember(1) == 1\n\n\n"
    "def test_b_needs_a_fresh_start():\n    assert remember(2) == 1\n"
)
#: A test that fails the first time it runs in a run folder (it leaves a file behind), then passes.
BY_CHANCE = (
    "from pathlib import Path\n\n"
    "MARK = Path(__file__).with_name('.ran-before')\n\n\n"
    "def test_passes():\n    assert True\n\n\n"
    "def test_fails_the_first_time():\n"
    "    first = not MARK.exists()\n"
    "    MARK.write_text('x')\n"
    "    assert not first\n"
)
REAL_FAILURE = ("def test_passes():\n    assert 1 + 1 == 2\n\n\n"
                "def test_really_wrong():\n    assert 1 + 1 == 3\n")
#: A conftest that leaves a thread running after collection: forking then is unsafe.
THREAD_AT_IMPORT = (
    "import threading\n\n"
    "_stop = threading.Event()\n"
    "threading.Thread(target=_stop.wait, name='suite-helper', daemon=True).start()\n"
)


class Runs:
    """The sandboxed runs of a flow run: each request and how its process ended."""

    def __init__(self) -> None:
        self.done: list[tuple[RunRequest, SandboxRun]] = []

    def records(self, index: int, kind: str) -> list[dict]:
        lines = self.done[index][1].probe_output.splitlines()
        return [r for r in (json.loads(line) for line in lines if line.strip()) if r["kind"] == kind]


@pytest.fixture
def trace(prefect_api_url, tmp_path, monkeypatch):
    """Trace a repository in one shard in this process; return its report and its sandboxed runs."""
    for name, folder in (("EQUISA_WORKSPACES", "workspaces"), ("EQUISA_DB", "history.duckdb"),
                         ("EQUISA_ARTIFACTS", "artifacts"), ("EQUISA_SPOOL", "spool")):
        monkeypatch.setenv(name, str(tmp_path / folder))
    runs = Runs()
    original = LocalSandbox.run

    def counted(sandbox, request, on_record=None):
        ran = original(sandbox, request, on_record)
        runs.done.append((request, ran))
        return ran

    monkeypatch.setattr(LocalSandbox, "run", counted)

    def run(repo: Path) -> tuple[TraceReport, Runs]:
        params = TraceParameters(path=str(repo), shards=1, no_cache=True)
        with temporary_settings({PREFECT_LOCAL_STORAGE_PATH: tmp_path / "storage"}):
            report = trace_suite(params)
        return report, runs

    return run


def write_repo(root: Path, files: dict[str, str]) -> Path:
    repo = small_repo(root)
    for name, text in files.items():
        (repo / name).write_text(text)
    return repo


def test_a_failure_left_by_another_test_is_flaky_without_a_new_process(trace, tmp_path):
    repo = write_repo(tmp_path / "repo", {"counter.py": COUNTER, "tests/test_counter.py": STATE_LEFT_BEHIND})
    report, runs = trace(repo)
    assert set(report.flaky) == {T + "test_b_needs_a_fresh_start"}
    assert len(runs.done) == 1, "the shard re-ran its failing test itself: no other sandboxed run"
    assert runs.done[0][0].rerun_failures
    assert [(r["test"], r["outcome"]) for r in runs.records(0, "rerun")] == [
        (T + "test_b_needs_a_fresh_start", "passed")]


def test_a_real_failure_stays_failing_and_is_not_flaky(trace, tmp_path):
    repo = write_repo(tmp_path / "repo", {"tests/test_counter.py": REAL_FAILURE})
    report, runs = trace(repo)
    assert not report.flaky
    assert {t.test_id for t in report.tests if t.outcome == "failed"} == {T + "test_really_wrong"}
    assert len(runs.done) == 1
    assert [(r["test"], r["outcome"]) for r in runs.records(0, "rerun")] == [
        (T + "test_really_wrong", "failed")]
    assert runs.records(0, "rerun-done")[0]["failing"] == [T + "test_really_wrong"]


def test_a_test_that_failed_by_chance_is_flaky(trace, tmp_path):
    """It fails only the first time it runs in its run folder: the fork, made in the same run folder,
    sees it pass (a new sandbox, with a fresh copy of the repository, would see it fail again)."""
    repo = write_repo(tmp_path / "repo", {"tests/test_counter.py": BY_CHANCE})
    report, runs = trace(repo)
    assert set(report.flaky) == {T + "test_fails_the_first_time"}
    assert len(runs.done) == 1


def test_when_the_shard_cannot_fork_a_new_process_re_runs_its_failing_tests(trace, tmp_path):
    repo = write_repo(tmp_path / "repo", {"counter.py": COUNTER, "tests/test_counter.py": STATE_LEFT_BEHIND,
                                          "conftest.py": THREAD_AT_IMPORT})
    report, runs = trace(repo)
    assert set(report.flaky) == {T + "test_b_needs_a_fresh_start"}
    [skipped] = runs.records(0, "rerun-skipped")
    assert "threads were alive after collection" in skipped["reason"] and "suite-helper" in skipped["reason"]
    assert not runs.records(0, "rerun")
    assert len(runs.done) == 2, "the failing test re-ran in a new sandboxed process"
    again = runs.done[1][0]
    assert (again.only, again.trace, again.rerun_failures) == (
        (T + "test_b_needs_a_fresh_start",), False, False)

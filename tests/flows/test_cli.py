"""``equisa trace`` end to end: real subprocess runs, the JSON report, and every bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from equisa_core.discovery.spectrum import tarantula
from equisa_core.discovery.trace_report import TraceReport
from equisa_core.errors import (
    CollectionError,
    InterpreterError,
    NoTestsCollectedError,
    RepositoryNotFoundError,
    SuiteCrashedError,
)
from tests.conftest import FIXTURES, find_python, small_repo

SHAPES = FIXTURES / "shapes"
EQUISA = shutil.which("equisa") or str(Path(sys.executable).with_name("equisa"))


@pytest.fixture
def run_cli(cli_env):
    """Run ``equisa trace ARGS`` as a subprocess; return (exit code, stderr)."""

    def run(*args: str) -> tuple[int, str]:
        done = subprocess.run([EQUISA, "trace", *args], capture_output=True, text=True, env=cli_env,
                              timeout=600)
        return done.returncode, done.stderr

    return run


def test_trace_writes_a_report_whose_scores_follow_from_its_outcomes(tmp_path, run_cli):
    out = tmp_path / "report.json"
    code, printed = run_cli(str(SHAPES), "--json", str(out))
    assert code == 0, printed
    report = TraceReport.model_validate_json(out.read_text())
    assert report.summary.total == 16
    assert report.summary.failed == 2 and report.summary.error == 1
    failed = {t.test_id for t in report.tests if t.outcome in ("failed", "error")}
    passed = {t.test_id for t in report.tests if t.outcome == "passed"}
    by_fqn = {n.fqn: n for n in report.nodes}
    triangle = by_fqn["shapes.geometry.triangle_area"]
    # Both failures run triangle_area and no passing test does: the top of the ranking.
    assert (triangle.failed_s, triangle.passed_s) == (2, 0)
    assert report.nodes[0].tarantula == 1.0
    assert triangle.tarantula == tarantula(2, 0, len(failed), len(passed)) == 1.0
    for node in report.nodes:
        covering = {t.test_id for t in report.tests if node.fqn in t.covered}
        assert node.failed_s == len(covering & failed)
        assert node.passed_s == len(covering & passed)
        assert node.tarantula == tarantula(node.failed_s, node.passed_s, len(failed), len(passed))
    # Test code is traced (for edges and test selection) but never scored.
    assert not any(n.file.startswith("tests/") for n in report.nodes)
    assert all(len(g) >= 2 for g in report.ambiguity_groups)
    assert "shapes.geometry.triangle_area" in printed
    assert "16 tests: 11 passed, 2 failed, 1 errors, 2 skipped" in printed


def test_failing_tests_rerun_apart_and_those_that_pass_then_are_flaky(tmp_path, run_cli):
    """The failing tests run again in one sandbox without the rest of the suite: one that failed only
    because a passing test left state behind passes there and is flaky; a real failure stays."""
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "counter.py").write_text(
        "seen = []\n\n\ndef remember(x):\n    seen.append(x)\n    return len(seen)\n")
    (repo / "tests" / "test_counter.py").write_text(
        "from counter import remember\n\n\n"
        "def test_a_leaves_state():\n    assert remember(1) == 1\n\n\n"
        "def test_b_needs_a_fresh_start():\n    assert remember(2) == 1\n\n\n"
        "def test_c_really_wrong():\n    assert remember(3) == 0\n"
    )
    out = tmp_path / "r.json"
    code, printed = run_cli(str(repo), "--shards", "1", "--json", str(out))
    assert code == 0, printed
    report = TraceReport.model_validate_json(out.read_text())
    assert set(report.flaky) == {"tests/test_counter.py::test_b_needs_a_fresh_start"}
    failing = {t.test_id for t in report.tests if t.outcome == "failed"}
    assert "tests/test_counter.py::test_c_really_wrong" in failing


def test_trace_a_selection(tmp_path, run_cli):
    out = tmp_path / "r.json"
    assert run_cli(str(SHAPES), "--tests", "tests/test_geometry.py::test_square",
                   "tests/test_geometry.py::test_triangle_area", "--json", str(out))[0] == 0
    data = json.loads(out.read_text())
    assert sorted(t["test_id"] for t in data["tests"]) == [
        "tests/test_geometry.py::test_square", "tests/test_geometry.py::test_triangle_area"]


@pytest.mark.parametrize(
    ("make_args", "error"),
    [
        (lambda tmp: [str(tmp / "missing")], RepositoryNotFoundError),
        (lambda tmp: [str(SHAPES / "shapes" / "geometry.py")], RepositoryNotFoundError),
        (lambda tmp: [str(FIXTURES / "broken_import")], CollectionError),
        (lambda tmp: [str(FIXTURES / "no_tests")], NoTestsCollectedError),
        (lambda tmp: [str(SHAPES), "--python", str(tmp / "nopython")], InterpreterError),
        (lambda tmp: [str(SHAPES), "--python", "python-that-is-not-on-path"], InterpreterError),
    ],
    ids=["missing-path", "file-not-dir", "does-not-import", "no-tests", "no-interpreter",
         "interpreter-not-on-path"],
)
def test_bad_input_gets_one_line_and_its_exit_code(tmp_path, run_cli, make_args, error):
    code, err = run_cli(*make_args(tmp_path))
    assert code == error.exit_code, err
    assert err.startswith("equisa: ") or "\nequisa: " in err
    assert "Traceback" not in err


def test_an_interpreter_older_than_3_8_is_refused(run_cli):
    old = find_python("3.7") or find_python("3.6")
    if old is None:
        pytest.skip("no Python older than 3.8 is installed to try (pyenv has none)")
    code, err = run_cli(str(SHAPES), "--python", str(old))
    assert code == InterpreterError.exit_code
    assert "3.8 or newer" in err


def test_an_interpreter_without_pytest_is_refused(run_cli):
    bare = find_python("3.12") or find_python("3.13")
    if bare is None:
        pytest.skip("no second interpreter (3.12/3.13) without pytest to try")
    code, err = run_cli(str(SHAPES), "--python", str(bare))
    if code == 0:
        pytest.skip(f"{bare} has pytest installed, so it cannot show the missing-pytest error")
    assert code == InterpreterError.exit_code
    assert "pytest is not importable" in err


def test_a_test_that_kills_the_interpreter_is_blamed_and_the_rest_still_run(tmp_path, run_cli):
    out = tmp_path / "crash.json"
    assert run_cli(str(FIXTURES / "crashing"), "--json", str(out))[0] == 0
    data = json.loads(out.read_text())
    assert data["crashed"] is False
    outcomes = {t["test_id"].split("::")[1]: (t["outcome"], t["exception_type"]) for t in data["tests"]}
    assert outcomes == {
        "test_first": ("passed", None),
        "test_second_fails": ("failed", "AssertionError"),
        "test_kills_interpreter": ("error", "InterpreterCrash"),
        "test_never_runs": ("passed", None),
    }


def test_a_hanging_test_fails_at_the_per_test_timeout(tmp_path, run_cli):
    out = tmp_path / "hang.json"
    assert run_cli(str(FIXTURES / "hangs"), "--test-timeout", "2", "--json", str(out))[0] == 0
    data = json.loads(out.read_text())
    hanging = next(t for t in data["tests"] if t["test_id"].endswith("test_hangs"))
    assert (hanging["outcome"], hanging["exception_type"]) == ("failed", "equisa_probe.TestTimeout")


def test_without_the_flag_a_test_that_starts_looping_is_stopped_at_its_limit_from_history(tmp_path, run_cli):
    repo = small_repo(tmp_path / "repo")
    (repo / "tests" / "test_flagged.py").write_text(
        "import time\nfrom pathlib import Path\n\n\ndef test_quick():\n    assert True\n\n\n"
        "def test_loops_when_flagged():\n    while Path(__file__).with_name('loop.flag').exists():\n"
        "        time.sleep(0.01)\n")
    out = tmp_path / "first.json"
    assert run_cli(str(repo), "--json", str(out))[0] == 0
    assert not TraceReport.model_validate_json(out.read_text()).problems
    (repo / "tests" / "loop.flag").write_text("")
    out = tmp_path / "second.json"
    code, err = run_cli(str(repo), "--json", str(out))
    assert code == 0, err
    report = TraceReport.model_validate_json(out.read_text())
    looping = next(t for t in report.tests if t.test_id.endswith("test_loops_when_flagged"))
    assert looping.exception_type == "equisa_probe.TestTimeout"
    # 10x its duration in the first run (as the history has it) + 2 s, rounded up: 3 s, not 10 s
    assert "longer than 3s" in (looping.message or "") and looping.duration < 10
    [note] = report.problems
    assert "tests/test_flagged.py::test_loops_when_flagged (3s)" in note and "--test-timeout" in note


def test_a_suite_past_the_wall_clock_is_killed_and_keeps_what_it_recorded(tmp_path, run_cli):
    out = tmp_path / "hang.json"
    code, err = run_cli(str(FIXTURES / "hangs"), "--shard-timeout", "4", "--test-timeout", "600",
                        "--shards", "1", "--json", str(out))
    assert code == SuiteCrashedError.exit_code
    data = json.loads(out.read_text())
    assert data["crash_reason"] == "timed out after 4s"
    assert data["crashed_in"] == "tests/test_hang.py::test_hangs"
    assert [t["outcome"] for t in data["tests"]] == ["passed"]
    assert "outcomes recorded before are kept" in err


def test_the_console_script_is_installed():
    done = subprocess.run([EQUISA, "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("equisa ")


def test_a_one_shot_commands_flow_runs_send_no_heartbeats_unless_the_user_configured_them(
        prefect_api_url):
    """Prefect joins a flow run's heartbeat thread (which sleeps in one-second steps) when the run
    ends, so each flow run of a one-shot command ended up to a second late."""
    from prefect import flow
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, get_current_settings, temporary_settings

    from cli.progress import without_heartbeats

    @flow
    def frequency() -> int | None:
        return get_current_settings().flows.heartbeat_frequency

    assert frequency() is not None  # Prefect's default: on
    with without_heartbeats():
        assert frequency() is None
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: 60}), without_heartbeats():
        assert frequency() == 60  # as the user's environment or profile set it

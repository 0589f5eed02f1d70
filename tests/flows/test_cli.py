"""``equisa trace`` end to end: real subprocess runs, the JSON report, and every bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from equisa_core.errors import (
    CollectionError,
    InterpreterError,
    NoTestsCollectedError,
    RepositoryNotFoundError,
    SuiteCrashedError,
)
from equisa_core.spectrum import tarantula
from equisa_core.trace_report import TraceReport
from flows.cli import main
from tests.conftest import FIXTURES, find_python

SHAPES = FIXTURES / "shapes"


def run_cli(*args: str) -> int:
    return main(["trace", *args])


def test_trace_writes_a_report_whose_scores_follow_from_its_outcomes(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # rich folds long names on narrow consoles
    out = tmp_path / "report.json"
    assert run_cli(str(SHAPES), "--json", str(out)) == 0
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
    printed = capsys.readouterr().err
    assert "shapes.geometry.triangle_area" in printed
    assert "16 tests: 11 passed, 2 failed, 1 errors, 2 skipped" in printed


def test_trace_a_selection(tmp_path):
    out = tmp_path / "r.json"
    assert run_cli(str(SHAPES), "--tests", "tests/test_geometry.py::test_square",
                   "tests/test_geometry.py::test_triangle_area", "--json", str(out)) == 0
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
def test_bad_input_gets_one_line_and_its_exit_code(tmp_path, capsys, make_args, error):
    code = run_cli(*make_args(tmp_path))
    assert code == error.exit_code
    err = capsys.readouterr().err
    assert err.startswith("equisa: ") or "\nequisa: " in err
    assert "Traceback" not in err


def test_an_interpreter_older_than_3_8_is_refused(capsys):
    old = find_python("3.7") or find_python("3.6")
    if old is None:
        pytest.skip("no Python older than 3.8 is installed to try (pyenv has none)")
    assert run_cli(str(SHAPES), "--python", str(old)) == InterpreterError.exit_code
    assert "3.8 or newer" in capsys.readouterr().err


def test_an_interpreter_without_pytest_is_refused(capsys):
    bare = find_python("3.12") or find_python("3.13")
    if bare is None:
        pytest.skip("no second interpreter (3.12/3.13) without pytest to try")
    code = run_cli(str(SHAPES), "--python", str(bare))
    err = capsys.readouterr().err
    if code == 0:
        pytest.skip(f"{bare} has pytest installed, so it cannot show the missing-pytest error")
    assert code == InterpreterError.exit_code
    assert "pytest is not importable" in err


def test_a_crash_writes_partial_results_and_exits_7(tmp_path, capsys):
    out = tmp_path / "crash.json"
    assert run_cli(str(FIXTURES / "crashing"), "--json", str(out)) == SuiteCrashedError.exit_code
    data = json.loads(out.read_text())
    assert data["crashed"] is True
    assert data["crashed_in"] == "tests/test_crash.py::test_kills_interpreter"
    assert data["summary"]["total"] == 2
    assert "outcomes recorded before are kept" in capsys.readouterr().err


def test_a_hanging_suite_is_killed_at_the_timeout(tmp_path):
    out = tmp_path / "hang.json"
    code = run_cli(str(FIXTURES / "hangs"), "--timeout", "4", "--json", str(out))
    assert code == SuiteCrashedError.exit_code
    data = json.loads(out.read_text())
    assert data["crash_reason"] == "timed out after 4s"
    assert data["crashed_in"] == "tests/test_hang.py::test_hangs"
    assert [t["outcome"] for t in data["tests"]] == ["passed"]


def test_the_console_script_is_installed():
    import shutil
    import subprocess
    import sys

    script = shutil.which("equisa") or str(Path(sys.executable).with_name("equisa"))
    done = subprocess.run([script, "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("equisa ")

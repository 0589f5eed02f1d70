"""The suite's interpreter check (``tasks.run.interpreter``), started early or not."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from equisa_core.errors import InterpreterError
from tasks.run import interpreter
from tasks.run.interpreter import resolve_interpreter, start_check


def test_a_check_started_early_gives_the_same_answer_and_is_read_once(tmp_path: Path):
    plain = resolve_interpreter(tmp_path, sys.executable)
    start_check(tmp_path, sys.executable)
    assert list(interpreter._STARTED) == [plain.path], "the check runs in the background"
    early = resolve_interpreter(tmp_path, sys.executable)
    assert early == plain and early.version.startswith(f"{sys.version_info[0]}.{sys.version_info[1]}.")
    assert interpreter._STARTED == {}, "the answer was read, and the next call checks again"


def test_an_interpreter_that_does_not_exist_is_left_for_the_resolution_to_refuse(tmp_path: Path):
    missing = str(tmp_path / "no-such-python")
    start_check(tmp_path, missing)
    assert interpreter._STARTED == {}
    with pytest.raises(InterpreterError, match="does not exist"):
        resolve_interpreter(tmp_path, missing)


def _pycs_under(prefix: Path, package: str) -> list[Path]:
    return [p for p in prefix.rglob("*.pyc") if f"/site-packages/{package}/" in p.as_posix()]


def test_equisas_own_interpreters_check_compiles_pytest_and_another_interpreters_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # The bytecode goes to a private tree (PYTHONPYCACHEPREFIX), so the test sees exactly what a check
    # wrote, whatever EQUISA's environment already holds.
    own, other = tmp_path / "own", tmp_path / "other"
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(own))
    done = interpreter._check(sys.executable)
    assert done.communicate(timeout=120)[0].split()[1] == __import__("pytest").__version__
    assert _pycs_under(own, "_pytest"), "pytest's modules were compiled"
    assert not _pycs_under(own, "hypothesis"), "with plugin autoload off, as in the sandboxed runs"
    alias = tmp_path / "python"  # the same binary under another name: not EQUISA's own environment
    alias.symlink_to(sys.executable)
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(other))
    interpreter._check(str(alias)).communicate(timeout=120)
    assert not other.exists() or not list(other.rglob("*.pyc"))


def test_once_pytest_has_its_bytecode_the_check_runs_no_test(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # A private bytecode tree, as if this process had started with it, so the first check finds none.
    prefix = tmp_path / "pycache"
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(prefix))
    monkeypatch.setattr(sys, "pycache_prefix", str(prefix))
    assert not interpreter._pytest_compiled()
    first = interpreter._check(sys.executable)
    first.communicate(timeout=120)
    assert "test_equisa_warm" in first.args[2], "no bytecode yet: the check compiles pytest"
    assert interpreter._pytest_compiled()
    second = interpreter._check(sys.executable)
    assert second.communicate(timeout=120)[0].split()[1] == __import__("pytest").__version__
    assert "test_equisa_warm" not in second.args[2], "compiled: the check only asks the versions"

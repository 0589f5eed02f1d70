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

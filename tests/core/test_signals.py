"""Evidence signals read from real Python and pytest output, and from structured tracebacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from equisa_core.common.models import TracebackFrame
from equisa_core.localization.signals import Signals, assertion_files, heartbeat, parse_signals, same_file

FQN = "pkg.target.inspect_me"
TARGET = "pkg/target.py"
CALLEE = "pkg/callee.py"

TARGET_SOURCE = """\
from pkg.callee import helper


def inspect_me(x, mode):
    print("--- INSPECTION_START: pkg.target.inspect_me ---")
    if mode == "own":
        assert x > 0, "x must be positive"
    if mode == "callee":
        return helper(x)
    if mode == "value":
        raise ValueError("not an assertion")
    if mode == "chained":
        try:
            assert x > 0, "inner"
        except AssertionError as exc:
            raise RuntimeError("wrapped") from exc
    return x
"""

CALLEE_SOURCE = """\
def helper(x):
    assert x > 0, "helper wants positive"
    return x
"""

RUN_SOURCE = """\
import sys
from pkg.target import inspect_me

inspect_me(int(sys.argv[1]), sys.argv[2])
"""

PROBE_SOURCE = """\
import json, sys, traceback
from pkg.target import inspect_me

try:
    inspect_me(int(sys.argv[1]), sys.argv[2])
except BaseException as exc:
    frames = [
        {"file": f.filename, "line": f.lineno, "function": f.name}
        for f in traceback.extract_tb(exc.__traceback__)
    ]
    kind = type(exc)
    print(json.dumps({"type": f"{kind.__module__}.{kind.__qualname__}", "frames": frames}))
    sys.exit(1)
"""

TESTS_SOURCE = """\
from pkg.target import inspect_me


def test_own():
    inspect_me(-1, "own")


def test_callee():
    inspect_me(-1, "callee")


def test_value():
    inspect_me(-1, "value")


def test_ok():
    assert inspect_me(1, "own") == 1
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A small repository: a target module, a callee in another file, scripts and tests."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "target.py").write_text(TARGET_SOURCE)
    (tmp_path / "pkg" / "callee.py").write_text(CALLEE_SOURCE)
    (tmp_path / "run.py").write_text(RUN_SOURCE)
    (tmp_path / "probe.py").write_text(PROBE_SOURCE)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_target.py").write_text(TESTS_SOURCE)
    (tmp_path / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    return tmp_path


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def _signals(result: subprocess.CompletedProcess[str], target_file: str = TARGET) -> Signals:
    return parse_signals(FQN, target_file, result.stdout, result.stderr, result.returncode)


def test_heartbeat_is_exact() -> None:
    assert heartbeat("pkg.mod.f") == "--- INSPECTION_START: pkg.mod.f ---"


def test_signals_model_is_frozen_and_strict() -> None:
    signals = Signals(is_covered=True, has_target_assertion=False, is_failure=True)
    frozen: Any = signals  # the assignment a frozen model refuses at run time
    with pytest.raises(ValidationError):
        frozen.is_covered = False
    with pytest.raises(ValidationError):
        Signals(is_covered=True, has_target_assertion=False, is_failure=True, extra=1)


# --- text path: real Python tracebacks ----------------------------------------------------------


def test_python_assertion_in_target(project: Path) -> None:
    result = _run(project, "run.py", "-1", "own")
    assert "AssertionError: x must be positive" in result.stderr
    assert _signals(result) == Signals(is_covered=True, has_target_assertion=True, is_failure=True)


def test_python_assertion_in_callee_is_not_the_targets(project: Path) -> None:
    result = _run(project, "run.py", "-1", "callee")
    assert "helper wants positive" in result.stderr
    assert _signals(result) == Signals(is_covered=True, has_target_assertion=False, is_failure=True)
    # the same output does attribute the assertion to the callee's file
    assert _signals(result, target_file=CALLEE).has_target_assertion


def test_python_other_exception_in_target(project: Path) -> None:
    result = _run(project, "run.py", "-1", "value")
    assert "ValueError: not an assertion" in result.stderr
    assert not _signals(result).has_target_assertion
    assert _signals(result).is_failure


def test_python_chained_assertion_counts(project: Path) -> None:
    result = _run(project, "run.py", "-1", "chained")
    assert "direct cause of the following exception" in result.stderr
    # the first block's AssertionError is raised in the target, the last is a RuntimeError
    assert _signals(result).has_target_assertion


def test_python_passing_run(project: Path) -> None:
    result = _run(project, "run.py", "1", "own")
    assert result.returncode == 0
    assert _signals(result) == Signals(
        is_covered=True, has_target_assertion=False, is_failure=False
    )


def test_heartbeat_of_another_function_is_not_coverage(project: Path) -> None:
    result = _run(project, "run.py", "1", "own")
    signals = parse_signals("pkg.target.inspect", TARGET, result.stdout, result.stderr, 0)
    assert not signals.is_covered
    # the heartbeat must be in stdout, not stderr
    signals = parse_signals(FQN, TARGET, "", result.stdout, 0)
    assert not signals.is_covered


# --- text path: real pytest output --------------------------------------------------------------

STYLES = ["auto", "long", "short", "line", "native"]


@pytest.mark.parametrize("style", STYLES)
def test_pytest_assertion_in_target(project: Path, style: str) -> None:
    result = _run(
        project,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        f"--tb={style}",
        "tests/test_target.py::test_own",
    )
    assert result.returncode == 1, result.stdout
    assert _signals(result) == Signals(is_covered=True, has_target_assertion=True, is_failure=True)


@pytest.mark.parametrize("style", STYLES)
def test_pytest_assertion_in_callee(project: Path, style: str) -> None:
    result = _run(
        project,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        f"--tb={style}",
        "tests/test_target.py::test_callee",
    )
    assert result.returncode == 1, result.stdout
    assert _signals(result) == Signals(is_covered=True, has_target_assertion=False, is_failure=True)
    assert _signals(result, target_file=CALLEE).has_target_assertion


def test_pytest_assertion_in_test_file(project: Path) -> None:
    # A failing (rewritten) assert in the test itself is not an assertion in the target.
    (project / "tests" / "test_own_assert.py").write_text(
        "from pkg.target import inspect_me\n\n\ndef test_eq():\n    assert inspect_me(2, 'own') == 3\n"
    )
    result = _run(project, "-m", "pytest", "-p", "no:cacheprovider", "tests/test_own_assert.py")
    assert "assert 2 == 3" in result.stdout
    assert not _signals(result).has_target_assertion
    assert _signals(result, target_file="tests/test_own_assert.py").has_target_assertion


def test_pytest_other_exception(project: Path) -> None:
    result = _run(
        project, "-m", "pytest", "-p", "no:cacheprovider", "tests/test_target.py::test_value"
    )
    assert result.returncode == 1
    assert assertion_files(result.stdout) == []
    assert not _signals(result).has_target_assertion


def test_pytest_passing_run_with_output(project: Path) -> None:
    result = _run(
        project, "-m", "pytest", "-p", "no:cacheprovider", "-s", "tests/test_target.py::test_ok"
    )
    assert result.returncode == 0
    assert _signals(result) == Signals(
        is_covered=True, has_target_assertion=False, is_failure=False
    )


# --- structured path ----------------------------------------------------------------------------


def _probe(project: Path, x: str, mode: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    result = _run(project, "probe.py", x, mode)
    return result, json.loads(result.stdout.strip().splitlines()[-1])


def _frames(raw: dict) -> list[TracebackFrame]:
    return [TracebackFrame(**frame) for frame in raw["frames"]]


def test_structured_assertion_in_target(project: Path) -> None:
    result, raw = _probe(project, "-1", "own")
    assert raw["type"] == "builtins.AssertionError"
    signals = parse_signals(
        FQN, TARGET, result.stdout, "", result.returncode, _frames(raw), raw["type"]
    )
    assert signals == Signals(is_covered=True, has_target_assertion=True, is_failure=True)


def test_structured_assertion_in_callee(project: Path) -> None:
    result, raw = _probe(project, "-1", "callee")
    frames = _frames(raw)
    assert frames[-1].file.endswith(CALLEE)
    assert not parse_signals(
        FQN, TARGET, result.stdout, "", 1, frames, raw["type"]
    ).has_target_assertion
    assert parse_signals(
        FQN, CALLEE, result.stdout, "", 1, frames, raw["type"]
    ).has_target_assertion


def test_structured_other_exception(project: Path) -> None:
    result, raw = _probe(project, "-1", "value")
    assert raw["type"] == "builtins.ValueError"
    assert not parse_signals(
        FQN, TARGET, result.stdout, "", 1, _frames(raw), raw["type"]
    ).has_target_assertion


def test_structured_wins_over_text() -> None:
    text = 'Traceback (most recent call last):\n  File "/r/pkg/target.py", line 3, in f\nAssertionError\n'
    frames = [TracebackFrame(file="pkg/target.py", line=3, function="f")]
    assert parse_signals(FQN, TARGET, "", text, 1).has_target_assertion
    assert not parse_signals(FQN, TARGET, "", text, 1, frames, "ValueError").has_target_assertion
    # without frames the structured data says nothing and the text is read
    assert parse_signals(FQN, TARGET, "", text, 1, [], "ValueError").has_target_assertion


@pytest.mark.parametrize(
    ("exception_type", "expected"),
    [
        ("AssertionError", True),
        ("builtins.AssertionError", True),
        ("MyAssertionError", False),
        ("AssertionErrorX", False),
        ("RuntimeError", False),
    ],
)
def test_structured_exception_names(exception_type: str, expected: bool) -> None:
    frames = [
        TracebackFrame(file="tests/test_t.py", line=1, function="test_t"),
        TracebackFrame(file="C:\\repo\\pkg\\target.py", line=7, function="inspect_me"),
    ]
    signals = parse_signals(FQN, TARGET, "", "", 1, frames, exception_type)
    assert signals.has_target_assertion is expected


# --- file comparison ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reported", "target", "expected"),
    [
        ("pkg/target.py", "pkg/target.py", True),
        ("./pkg/target.py", "pkg/target.py", True),
        ("pkg\\target.py", "pkg/target.py", True),
        ("/home/u/repo/pkg/target.py", "pkg/target.py", True),
        ("/workspace/pkg/../pkg/target.py", "pkg/target.py", True),
        ("C:\\repo\\pkg\\target.py", "pkg/target.py", True),
        ("pkg/target.py", "/home/u/repo/pkg/target.py", True),
        ("/home/u/repo/xpkg/target.py", "pkg/target.py", False),
        ("/home/u/repo/pkg/target.py", "/other/pkg/target.py", False),
        ("target.py", "pkg/target.py", False),
        ("pkg/target.py", "target.py", False),
        ("", "pkg/target.py", False),
    ],
)
def test_same_file(reported: str, target: str, expected: bool) -> None:
    assert same_file(reported, target) is expected


def test_assertion_files_reads_each_format() -> None:
    text = """\
Traceback (most recent call last):
  File "/r/a.py", line 1, in <module>
    f()
  File "/r/b.py", line 2, in f
    assert x
           ^
AssertionError
Traceback (most recent call last):
  File "/r/c.py", line 2, in g
KeyError: 'k'
src/d.py:3: AssertionError
src/e.py:4: in h
    assert y
E   assert 0
src/f.py:5: in k
    raise ValueError
E   ValueError
/abs/g.py:6: AssertionError: bad
"""
    assert assertion_files(text) == ["/r/b.py", "src/d.py", "src/e.py", "/abs/g.py"]

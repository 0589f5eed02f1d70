"""The three formal signals read from one inspection run (seed 002, section 3.5).

``is_covered``: the inspection patch's heartbeat appears in stdout. ``is_failure``: the run's exit
code is not 0. ``has_target_assertion``: an ``AssertionError`` was raised with its innermost frame
in the target's file (not in a callee's file). The last one is read from the probe's structured
traceback when there is one, else from the text of the run's output: Python tracebacks and
pytest's ``long``, ``short``, ``line`` and ``auto`` report styles.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Sequence

from pydantic import BaseModel, ConfigDict

from equisa_core.common.models import TracebackFrame

__all__ = [
    "Signals",
    "assertion_files",
    "heartbeat",
    "parse_signals",
    "same_file",
]


def heartbeat(fqn: str) -> str:
    """The line an inspection patch prints when the target starts: ``--- INSPECTION_START: fqn ---``."""
    return f"--- INSPECTION_START: {fqn} ---"


class Signals(BaseModel):
    """The formal evidence of one inspection run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    is_covered: bool
    has_target_assertion: bool
    is_failure: bool


# A Python traceback: the header, then `File "...", line N, in func` frames (innermost last),
# then the exception line, the first non-indented line after the frames.
_PY_HEADER = "Traceback (most recent call last):"
_PY_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in .*)?$')
# pytest: `path.py:N: rest`. rest is empty (an intermediate frame, long style), `in func` (a frame,
# short style) or the exception (the innermost frame, long and line styles).
_PT_LOCATION = re.compile(r"^(?P<file>\S.*?\.py):(?P<line>\d+):(?: (?P<rest>.*))?$")
# pytest's explanation lines: `E   AssertionError: msg`, `E       assert 2 == 3`.
_PT_ERROR = re.compile(r"^E {3}\s*(?P<text>.*)$")
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:/")


def _is_assertion(exception_text: str) -> bool:
    """Whether an exception line (``AssertionError: msg``, pytest's ``assert x == y``) is an assertion."""
    text = exception_text.strip()
    if text == "assert" or text.startswith("assert "):
        return True  # pytest's rewritten assertion, shown without its type
    name = text.split(":", 1)[0].strip()
    return " " not in name and name.rsplit(".", 1)[-1] == "AssertionError"


def _python_assertion_files(lines: Sequence[str]) -> Iterator[str]:
    """Innermost frame files of the Python traceback blocks whose exception is an AssertionError."""
    in_block = False
    innermost: str | None = None
    for line in lines:
        if line.strip() == _PY_HEADER:
            in_block, innermost = True, None
            continue
        if not in_block:
            continue
        frame = _PY_FRAME.match(line)
        if frame:
            innermost = frame["file"]
        elif line and not line[0].isspace():
            if innermost is not None and _is_assertion(line):
                yield innermost
            in_block, innermost = False, None


def _pytest_assertion_files(lines: Sequence[str]) -> Iterator[str]:
    """Innermost frame files of pytest-reported failures whose exception is an AssertionError."""
    short_frame: str | None = None  # the last `path:N: in func` frame, until its entry ends
    for line in lines:
        location = _PT_LOCATION.match(line)
        if location:
            rest = (location["rest"] or "").strip()
            if rest.startswith("in "):
                short_frame = location["file"]
            else:
                short_frame = None
                if rest and _is_assertion(rest):
                    yield location["file"]
            continue
        error = _PT_ERROR.match(line)
        if error:
            # Short style: the explanation follows the innermost frame's source lines.
            if short_frame is not None and _is_assertion(error["text"]):
                yield short_frame
            short_frame = None
        elif not line.startswith("    "):
            short_frame = None  # anything but indented source ends a short-style entry


def assertion_files(text: str) -> list[str]:
    """The files of the innermost frames of every AssertionError reported in ``text``.

    Reads Python tracebacks (``Traceback (most recent call last):`` blocks, including chained
    ones) and pytest's failure reports (``path.py:N: AssertionError`` location lines,
    ``path.py:N: in func`` frames followed by ``E   AssertionError`` / ``E   assert ...``). Files
    are returned as printed, in order of appearance.
    """
    lines = text.splitlines()
    return [*_python_assertion_files(lines), *_pytest_assertion_files(lines)]


def _normalize(path: str) -> str:
    """``path`` with forward slashes and no ``.``/``..``/doubled separators."""
    cleaned = path.strip().replace("\\", "/")
    return posixpath.normpath(cleaned) if cleaned else cleaned


def _is_absolute(path: str) -> bool:
    """Whether a normalized path is absolute (POSIX or a Windows drive)."""
    return path.startswith("/") or bool(_WINDOWS_DRIVE.match(path))


def same_file(reported: str, target: str) -> bool:
    """Whether a path reported in a traceback names the target file.

    Both are normalized (forward slashes, no ``./``). They match when equal, or when one is
    relative and the other ends with it on a ``/`` boundary: ``/repo/pkg/mod.py`` (absolute, as
    in tracebacks and containers) matches the repository-relative ``pkg/mod.py``. Two relative
    paths must be equal: ``mod.py`` and ``pkg/mod.py`` are different files of one repository.
    """
    reported, target = _normalize(reported), _normalize(target)
    if not reported or not target:
        return False
    if reported == target:
        return True
    if _is_absolute(reported) and not _is_absolute(target):
        return reported.endswith("/" + target)
    if _is_absolute(target) and not _is_absolute(reported):
        return target.endswith("/" + reported)
    return False


def parse_signals(
    target_fqn: str,
    target_file: str,
    stdout: str,
    stderr: str,
    exit_code: int,
    traceback_frames: Sequence[TracebackFrame] | None = None,
    exception_type: str | None = None,
) -> Signals:
    """Read the three formal signals of one inspection run.

    - ``is_covered``: ``heartbeat(target_fqn)`` appears in ``stdout``.
    - ``is_failure``: ``exit_code != 0``.
    - ``has_target_assertion``: when the probe gave a structured failure (``exception_type`` and
      at least one frame), the exception's last dotted component is ``AssertionError`` and the
      innermost (last) frame is in ``target_file``. Otherwise the text of ``stdout`` and
      ``stderr`` is read (see ``assertion_files``) and any AssertionError whose innermost frame
      is in ``target_file`` counts. Files are compared with ``same_file``.
    """
    if exception_type is not None and traceback_frames:
        has_target_assertion = _is_assertion(exception_type) and same_file(
            traceback_frames[-1].file, target_file
        )
    else:
        has_target_assertion = any(
            same_file(reported, target_file)
            for output in (stdout, stderr)
            for reported in assertion_files(output)
        )
    return Signals(
        is_covered=heartbeat(target_fqn) in stdout,
        has_target_assertion=has_target_assertion,
        is_failure=exit_code != 0,
    )

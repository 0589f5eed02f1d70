"""Runs a repository's suite once under the probe, in a subprocess, on a throwaway copy.

Sandboxing (namespaces, rlimits, Docker) is the sandbox layer's job; this module is the plain
subprocess path: it copies the repository, loads the probe into the repository's interpreter,
watches the probe's output for progress, enforces a wall-clock timeout on the whole process group,
and translates what went wrong into EQUISA's errors.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from equisa_core.errors import (
    CollectionError,
    InvalidSelectionError,
    NoTestsCollectedError,
    ProbeProtocolError,
    RepositoryNotFoundError,
)
from equisa_core.models import SuiteTrace
from equisa_core.probe import PROBE_MODULE, probe_file, pytest_arguments
from equisa_core.probe_output import parse_probe_output
from tasks.interpreter import Interpreter
from tasks.snapshot import copy_repository

__all__ = ["DEFAULT_TIMEOUT_S", "ProgressCallback", "check_repository", "run_traced_suite"]

DEFAULT_TIMEOUT_S = 1800.0
#: pytest's exit codes that mean something other than "tests ran".
_PYTEST_USAGE_ERROR = 4
_PYTEST_NO_TESTS = 5
_POLL_S = 0.2

#: Called with (test_id, outcome) as each test finishes.
ProgressCallback = Callable[[str, str], None]


def check_repository(path: Path) -> Path:
    """Return the resolved repository path, or raise ``RepositoryNotFoundError``."""
    if not path.exists():
        raise RepositoryNotFoundError(f"repository path {path} does not exist")
    if not path.is_dir():
        raise RepositoryNotFoundError(f"repository path {path} is not a directory")
    return path.resolve()


def run_traced_suite(
    repo: Path,
    interpreter: Interpreter,
    tests: Sequence[str] = (),
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: ProgressCallback | None = None,
) -> SuiteTrace:
    """Run ``tests`` (all when empty) of ``repo`` under the probe and return the trace.

    A suite that kills its interpreter, or runs past ``timeout_s``, returns a trace marked
    ``crashed`` with every outcome recorded before. Raises ``NoTestsCollectedError``,
    ``CollectionError`` or ``InvalidSelectionError`` when no test could run.
    """
    repo = check_repository(repo)
    with tempfile.TemporaryDirectory(prefix="equisa-trace-") as scratch_dir:
        scratch = Path(scratch_dir)
        workdir = copy_repository(repo, scratch / "repo")
        probe_dir = scratch / "probe"
        probe_dir.mkdir()
        shutil.copy2(probe_file(), probe_dir / f"{PROBE_MODULE}.py")
        out_path = scratch / "probe.jsonl"
        log_path = scratch / "pytest.log"
        command = [
            interpreter.path, "-m", "pytest",
            *pytest_arguments(str(out_path), str(workdir), tuple(tests)),
        ]
        env = _environment(probe_dir)
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                command, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )
            returncode, timed_out = _wait(process, out_path, timeout_s, progress)
        output = out_path.read_text(encoding="utf-8", errors="replace") if out_path.exists() else ""
        log_tail = _tail(log_path)
    if not output:
        raise _no_output_error(returncode, log_tail, tests)
    trace = parse_probe_output(output.splitlines())
    if trace.crashed:
        reason = f"timed out after {timeout_s:g}s" if timed_out else f"exit status {returncode}"
        trace = trace.model_copy(update={"crash_reason": reason})
    if not trace.tests and not trace.crashed:
        if trace.collect_errors:
            first = trace.collect_errors[0]
            raise CollectionError(
                f"the test suite does not import: {first.location}: {_last_line(first.message)}"
                + (f" (and {len(trace.collect_errors) - 1} more)" if len(trace.collect_errors) > 1 else "")
            )
        if returncode == _PYTEST_USAGE_ERROR:
            raise InvalidSelectionError(f"pytest rejected the selection: {_last_line(log_tail)}")
        raise NoTestsCollectedError(
            f"no tests collected in {repo}" + (f" for {' '.join(tests)}" if tests else "")
        )
    return trace


def _environment(probe_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(probe_dir), env.get("PYTHONPATH")) if p)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.setdefault("PYTHONHASHSEED", "0")
    # EQUISA's own venv must not leak into the repository's interpreter.
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONHOME", None)
    return env


def _wait(
    process: subprocess.Popen[bytes],
    out_path: Path,
    timeout_s: float,
    progress: ProgressCallback | None,
) -> tuple[int, bool]:
    """Wait for the process, reporting finished tests; kill its whole group on timeout."""
    deadline = time.monotonic() + timeout_s
    offset = 0
    while True:
        try:
            returncode = process.wait(timeout=_POLL_S)
            timed_out = False
            break
        except subprocess.TimeoutExpired:
            if time.monotonic() > deadline:
                _kill_group(process)
                returncode, timed_out = process.wait(), True
                break
        if progress is not None:
            offset = _report_progress(out_path, offset, progress)
    if progress is not None:
        _report_progress(out_path, offset, progress)
    _kill_group(process)  # children the suite left behind
    return returncode, timed_out


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _report_progress(out_path: Path, offset: int, progress: ProgressCallback) -> int:
    if not out_path.exists():
        return offset
    with open(out_path, "rb") as handle:
        handle.seek(offset)
        chunk = handle.read()
    complete = chunk[: chunk.rfind(b"\n") + 1]
    for line in complete.splitlines():
        if b'"kind": "test"' in line:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            progress(record["test"], record["outcome"])
    return offset + len(complete)


def _no_output_error(returncode: int, log_tail: str, tests: Sequence[str]) -> Exception:
    if returncode == _PYTEST_USAGE_ERROR and tests:
        return InvalidSelectionError(f"pytest rejected the selection: {_last_line(log_tail)}")
    if returncode == _PYTEST_NO_TESTS:
        return NoTestsCollectedError("no tests collected")
    return ProbeProtocolError(
        f"pytest exited with status {returncode} before the probe started: {_last_line(log_tail)}"
    )


def _tail(path: Path, limit: int = 4000) -> str:
    if not path.exists():
        return ""
    with open(path, "rb") as handle:
        handle.seek(max(0, path.stat().st_size - limit))
        return handle.read().decode("utf-8", errors="replace")


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    meaningful = [line for line in lines if not set(line) <= set("=-_ ")]
    return (meaningful or lines or ["(no output)"])[-1][:300]

"""Compiles, once, the bytecode of what a sandboxed run imports from EQUISA's own venv (issue 47).

uv installs EQUISA without compiling its ~14,000 files up front (``compile-bytecode = false``: the
first command's install is faster by the time that compiling takes). EQUISA's own processes write
``.pyc`` files as they import, but sandboxed runs pin ``PYTHONDONTWRITEBYTECODE=1``: a suite run
with EQUISA's own interpreter would compile pytest, its plugins and what they import again in every
run. So the first time EQUISA's own interpreter is chosen for a suite, the packages of
``SANDBOX_PACKAGES`` found in its venv are compiled with ``compileall``, in a background process
started before EQUISA's slow imports; a marker in the venv (the packages' folders and their
modification times) makes later runs skip it until a package is installed anew.
``EQUISA_SANDBOX_PRECOMPILE=0`` turns it off (the benchmark's ``lazy`` configuration).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

__all__ = [
    "SANDBOX_PACKAGES",
    "finish_precompile",
    "is_own_interpreter",
    "sandbox_sources",
    "start_precompile",
]

#: Top-level modules a sandboxed pytest run imports from EQUISA's venv: pytest and its
#: dependencies, the plugins the venv registers (pytest-cov, hypothesis, anyio) and what they
#: import, coverage.py (the test generator's measure) and pygments (pytest's terminal output).
SANDBOX_PACKAGES = (
    "pytest",
    "_pytest",
    "py",
    "pluggy",
    "iniconfig",
    "packaging",
    "pygments",
    "pytest_cov",
    "coverage",
    "hypothesis",
    "_hypothesis_pytestplugin",
    "_hypothesis_globals",
    "sortedcontainers",
    "attr",
    "attrs",
    "anyio",
    "sniffio",
    "typing_extensions",
    "exceptiongroup",
)
#: The marker file in the venv's folder (``sys.prefix``).
MARKER = ".equisa-sandbox-bytecode.json"
#: The background compile, started by ``start_precompile``.
_STARTED: dict[str, tuple[subprocess.Popen[bytes], dict[str, int]]] = {}


def sandbox_sources(names: tuple[str, ...] = SANDBOX_PACKAGES, prefix: str = sys.prefix) -> dict[str, int]:
    """The folder (package) or file (module) of each of ``names`` that lies in ``prefix``, with its
    modification time in nanoseconds: what is compiled, and the marker's content."""
    found: dict[str, int] = {}
    root = Path(prefix).resolve()
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None or spec.origin is None or not spec.has_location:
            continue
        origin = Path(spec.origin).resolve()
        path = origin.parent if spec.submodule_search_locations is not None else origin
        if root in path.parents:
            try:
                found[str(path)] = path.stat().st_mtime_ns
            except OSError:
                continue
    return found


def is_own_interpreter(path: str) -> bool:
    """Whether ``path`` is EQUISA's own interpreter: ``sys.executable``, or any ``bin/python*`` of
    EQUISA's venv (``uv run`` names it in ``$VIRTUAL_ENV``)."""
    absolute = Path(os.path.abspath(path))
    return str(absolute) == sys.executable or absolute.parent.parent == Path(os.path.abspath(sys.prefix))


def _own_venv() -> Path | None:
    """EQUISA's venv folder when EQUISA runs from a venv that it may write to and the compile is not
    turned off, else None."""
    prefix = Path(sys.prefix)
    if os.environ.get("EQUISA_SANDBOX_PRECOMPILE") == "0":
        return None
    if sys.prefix == sys.base_prefix or not os.access(prefix, os.W_OK):
        return None
    return prefix


def _compiled_already(marker: Path, sources: dict[str, int]) -> bool:
    try:
        return bool(json.loads(marker.read_text(encoding="utf-8")) == sources)
    except (OSError, ValueError):
        return False


def start_precompile(names: tuple[str, ...] = SANDBOX_PACKAGES) -> bool:
    """Start compiling ``names``' files in EQUISA's venv in the background, unless its marker says
    they are compiled; whether a compile was started. Errors leave the runs to compile as before."""
    venv = _own_venv()
    if venv is None or str(venv) in _STARTED:
        return False
    sources = sandbox_sources(names, str(venv))
    if not sources or _compiled_already(venv / MARKER, sources):
        return False
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "compileall", "-q", "-j", "0", *sorted(sources)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    except OSError:
        return False
    _STARTED[str(venv)] = process, sources
    return True


def finish_precompile(timeout_s: float = 120.0) -> bool:
    """Wait for the compile ``start_precompile`` started, if any, and write the marker when it
    ended (a file that does not compile, a test file of Python 2 say, would not compile next time
    either); whether one ended so. A compile that overruns ``timeout_s`` is stopped."""
    venv = _own_venv()
    started = _STARTED.pop(str(venv), None) if venv else None
    if venv is None or started is None:
        return False
    process, sources = started
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return False
    try:  # stat again: the compile made the packages' __pycache__ folders, a change of their mtime
        after = {path: Path(path).stat().st_mtime_ns for path in sources}
        (venv / MARKER).write_text(json.dumps(after, sort_keys=True), encoding="utf-8")
    except OSError:
        return False
    return True

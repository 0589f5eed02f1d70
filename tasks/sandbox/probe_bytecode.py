"""The probe compiled once per interpreter, so that a sandboxed run loads it without parsing it.

pytest imports a ``-p`` plugin through its assertion rewriter, which parses the probe's source
(3,200 lines) into a syntax tree and compiles it in every process: about 0.41 G instructions, 5 %
of a small suite's whole run, the largest share of the probe's overhead left
(``bench/README.md``, "tracing_overhead"). The rewriter only takes modules that a source loader
finds: a run folder that holds the probe as bytecode alone (``equisa_probe.pyc``, no ``.py``) is
imported by Python's sourceless loader, with no parse and no compile.

The bytecode must be the interpreter's own (its magic number): EQUISA's own interpreter compiles it
in this process; any other is asked to compile it once (one short process), and the file is kept
under ``$XDG_CACHE_HOME/equisa/probe`` by the probe's digest and the interpreter's real binary (its
path, size and modification time: an upgrade in place makes another file). When that fails (no
such interpreter on this machine, an old one), the run falls back to the source, as before.
"""

from __future__ import annotations

import hashlib
import os
import py_compile
import subprocess
import sys
import tempfile
from pathlib import Path

from equisa_core.probe import PROBE_MODULE, probe_file
from tasks.sandbox.scratch import cache_folder

__all__ = ["probe_bytecode", "default_probe_cache"]

#: Seconds another interpreter may take to compile the probe.
COMPILE_TIMEOUT_S = 60.0
_COMPILE_SCRIPT = "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)"
#: This process's answers, by (probe digest, interpreter key): asked once per process.
_KNOWN: dict[tuple[str, str], Path | None] = {}
#: The probe's digests, by (path, size, modification time): the file is read and hashed once.
_DIGESTS: dict[tuple[str, int, int], str] = {}


def default_probe_cache() -> Path:
    """``$XDG_CACHE_HOME/equisa/probe``, else ``~/.cache/equisa/probe``."""
    return cache_folder("probe")


def probe_bytecode(interpreter: str, cache: Path | None = None, source: Path | None = None) -> Path | None:
    """The probe (``source``, by default EQUISA's) compiled by ``interpreter`` (a path on this
    machine), made once and kept in ``cache``; None when it cannot be made (the run then copies the
    source)."""
    source = source or probe_file()
    digest = _digest(source)
    key = _interpreter_key(interpreter)
    if key is None:
        return None
    if (digest, key) in _KNOWN:
        return _KNOWN[(digest, key)]
    target = (cache or default_probe_cache()) / digest / f"{key}.pyc"
    made = target if target.is_file() or _compile(source, interpreter, target) else None
    _KNOWN[(digest, key)] = made
    return made


def _digest(source: Path) -> str:
    """The first 16 hex digits of ``source``'s SHA-256, hashed again only when the file changed."""
    stat = source.stat()
    known = (str(source), stat.st_size, stat.st_mtime_ns)
    if known not in _DIGESTS:
        _DIGESTS[known] = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    return _DIGESTS[known]


def _interpreter_key(interpreter: str) -> str | None:
    """A name for the interpreter's binary: its real path, size and modification time, hashed."""
    try:
        real = os.path.realpath(interpreter)
        stat = os.stat(real)
    except OSError:
        return None
    return hashlib.sha256(f"{real}\0{stat.st_size}\0{stat.st_mtime_ns}".encode()).hexdigest()[:16]


def _compile(source: Path, interpreter: str, target: Path) -> bool:
    """Compile ``source`` into ``target`` with ``interpreter`` (written aside, then renamed)."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, scratch = tempfile.mkstemp(dir=target.parent, prefix=f".{PROBE_MODULE}-", suffix=".pyc")
        os.close(handle)
    except OSError:
        return False
    try:
        if interpreter == sys.executable:
            py_compile.compile(str(source), cfile=scratch, doraise=True)
        else:
            done = subprocess.run([interpreter, "-c", _COMPILE_SCRIPT, str(source), scratch],
                                  capture_output=True, timeout=COMPILE_TIMEOUT_S,
                                  env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
            if done.returncode != 0 or os.path.getsize(scratch) == 0:
                return False
        os.replace(scratch, target)
        return True
    except (OSError, py_compile.PyCompileError, subprocess.SubprocessError):
        return False
    finally:
        if os.path.exists(scratch):
            os.unlink(scratch)

"""Where the local sandbox makes its run folders (each run's copy of the workspace), and where
EQUISA keeps what it builds once per machine (``cache_folder``: environments, the compiled probe).

Every sandboxed run copies the workspace into a fresh folder, so the copy is on the critical path
of every run (the trace's shards, each re-run, each batch of mutants, each check of a fix). On a
disk-backed ``/tmp`` creating the files dominates it: 630 files of a FastAPI checkout took 0.4-0.7 s
to copy on the benchmark machine, 0.03 s into a RAM-backed ``/dev/shm``, and a localization makes
six to ten such runs one after another. So the default is ``/dev/shm`` when it is a writable tmpfs
with room to spare, else the system's temporary folder; ``$EQUISA_SCRATCH`` names another folder.

What a suite writes into its copy or its private ``tmp``/``home`` (both in the run folder) then
lives in memory until the run ends; the sandbox's file-size limit caps each file, and the free
space asked for (``RAM_SCRATCH_MIN_FREE``) keeps a margin.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["SCRATCH_ENV", "RAM_SCRATCH", "RAM_SCRATCH_MIN_FREE", "scratch_root", "is_tmpfs", "cache_folder"]

#: Names the folder run folders go to (it must exist); overrides the default.
SCRATCH_ENV = "EQUISA_SCRATCH"
#: The RAM-backed folder preferred for run folders.
RAM_SCRATCH = Path("/dev/shm")
#: Free bytes ``RAM_SCRATCH`` must have for a run folder to go there (2 GiB).
RAM_SCRATCH_MIN_FREE = 2 * 1024**3


def scratch_root(ram: Path = RAM_SCRATCH, min_free: int = RAM_SCRATCH_MIN_FREE) -> Path | None:
    """The folder for the next run folder: ``$EQUISA_SCRATCH`` when set; else ``ram`` when it is a
    writable tmpfs with ``min_free`` bytes free; else None (the system's temporary folder).
    Asked again for every run, so a filling ``/dev/shm`` sends the next runs to disk."""
    named = os.environ.get(SCRATCH_ENV)
    if named:
        return Path(named)
    if not is_tmpfs(ram) or not os.access(ram, os.W_OK | os.X_OK):
        return None
    try:
        stats = os.statvfs(ram)
    except OSError:
        return None
    return ram if stats.f_bavail * stats.f_frsize >= min_free else None


def is_tmpfs(folder: Path, mounts: Path = Path("/proc/self/mounts")) -> bool:
    """Whether ``folder`` is the mount point of a tmpfs (per ``mounts``, ``/proc/self/mounts``)."""
    try:
        lines = mounts.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return False
    target = str(folder)
    for line in lines:
        fields = line.split()
        if len(fields) >= 3 and fields[1] == target and fields[2] == "tmpfs":
            return True
    return False


def cache_folder(name: str) -> Path:
    """``$XDG_CACHE_HOME/equisa/<name>``, else ``~/.cache/equisa/<name>``: what EQUISA builds once
    per machine and keeps between commands."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "equisa" / name

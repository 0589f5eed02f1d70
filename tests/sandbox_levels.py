"""Helpers that pin the local sandbox to one isolation level for a test, bubblewrap hidden or not."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from equisa_core.common.sandbox_policy import IsolationLevel
from tasks.sandbox.isolation import ISOLATION_ENV, detect_isolation


def path_without(tool: str, folder: Path) -> str:
    """A PATH of one folder holding links to every program on PATH but ``tool``."""
    folder.mkdir(parents=True, exist_ok=True)
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            link = folder / entry.name
            if entry.name != tool and not link.exists() and os.access(entry.path, os.X_OK):
                link.symlink_to(entry.path)
    return str(folder)


@contextmanager
def local_isolation(level: IsolationLevel, scratch: Path) -> Iterator[None]:
    """Make ``detect_isolation`` choose ``level`` for the duration, or skip saying why it cannot.

    ``bwrap`` needs bubblewrap. ``unshare`` hides bubblewrap from PATH (for EQUISA and for the
    sandboxed process), so it is the fallback that runs, as on a machine without bubblewrap. The
    weaker levels are named through ``EQUISA_LOCAL_ISOLATION``.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(ISOLATION_ENV, raising=False)
        if level is IsolationLevel.UNSHARE:
            patch.setenv("PATH", path_without("bwrap", scratch / "path-without-bwrap"))
            assert shutil.which("bwrap") is None
        elif level is not IsolationLevel.BWRAP:
            patch.setenv(ISOLATION_ENV, level.value)
        detect_isolation.cache_clear()
        try:
            detected = detect_isolation()
            if detected.level is not level:
                pytest.skip(f"the {level.value} isolation does not run here: {detected.reason}")
            yield
        finally:
            detect_isolation.cache_clear()

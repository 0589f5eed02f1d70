"""Host-side handle on the probe: where its single file lives and how pytest is told to load it.

The probe itself (``equisa_probe.py`` beside this file) runs inside the repository's interpreter
and imports nothing from EQUISA; this package only locates it and builds the command line.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["PROBE_MODULE", "MIN_PYTHON", "probe_file", "pytest_arguments"]

#: The module name pytest loads with ``-p``.
PROBE_MODULE = "equisa_probe"
#: The oldest interpreter the probe supports.
MIN_PYTHON = (3, 8)


def probe_file() -> Path:
    """Path of the probe's source file, to be copied next to the run."""
    return Path(__file__).with_name(f"{PROBE_MODULE}.py")


def pytest_arguments(out_path: str, root: str, tests: tuple[str, ...] = ()) -> list[str]:
    """Arguments after ``python -m pytest`` that load the probe and select ``tests``.

    The cache provider is disabled so nothing is written beside the suite, and ``-rN`` with
    ``-q`` keeps pytest's own report short: the probe's file is the result.
    """
    return [
        "-p", PROBE_MODULE,
        f"--equisa-out={out_path}",
        f"--equisa-root={root}",
        "-p", "no:cacheprovider",
        "-q", "-rN",
        "--rootdir", root,
        *tests,
    ]

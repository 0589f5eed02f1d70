"""Host-side handle on the probe: its module name, where its single file lives, what it supports.

The probe itself (``equisa_probe.py`` beside this file) runs inside the repository's interpreter
and imports nothing from EQUISA; this package only locates it (the command line is built by
``tasks.sandbox.contract.probe_arguments``).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["PROBE_MODULE", "MIN_PYTHON", "probe_file"]

#: The module name pytest loads with ``-p``.
PROBE_MODULE = "equisa_probe"
#: The oldest interpreter the probe supports.
MIN_PYTHON = (3, 8)


def probe_file() -> Path:
    """Path of the probe's source file, to be copied next to the run."""
    return Path(__file__).with_name(f"{PROBE_MODULE}.py")

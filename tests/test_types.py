"""mypy in strict mode (pyproject.toml's [tool.mypy]) over the packages of ``equisa_core`` that pass it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The packages mypy checks: the whole of ``equisa_core``.
STRICT_PACKAGES = (
    "equisa_core/errors.py",
    "equisa_core/common",
    "equisa_core/discovery",
    "equisa_core/validation",
    "equisa_core/repair",
    "equisa_core/mutation",
    "equisa_core/environment",
    "equisa_core/operations",
    "equisa_core/history",
    "equisa_core/localization",
    "equisa_core/probe",
    "equisa_core/report",
    "equisa_core/testgen",
)


def test_strict_packages_type_check() -> None:
    """``mypy`` (strict, with the pydantic plugin) finds no error in STRICT_PACKAGES."""
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), *STRICT_PACKAGES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, f"mypy failed (exit {run.returncode}):\n{run.stdout}{run.stderr}"

"""What the ``equisa`` process imports to run a command: not the libraries only the sandbox's test
runs use (pytest and coverage.py load in the sandboxed interpreter, not here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_repair_flow_imports_neither_pytest_nor_coverage():
    code = "import sys, flows.repair; print(sorted(m for m in ('pytest', 'coverage') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"

"""Local-sandbox details that need no sandbox run."""

from __future__ import annotations

import tempfile
from pathlib import Path

from tasks.sandbox_local import _reexpose_under_tmp


def test_an_interpreter_under_tmp_stays_visible_read_only():
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        venv = Path(folder) / "checkout" / ".venv"
        (venv / "bin").mkdir(parents=True)
        (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
        python = venv / "bin" / "python"
        python.write_text("")
        assert _reexpose_under_tmp(str(python)) == ["--ro-bind", str(venv), str(venv)]


def test_an_interpreter_elsewhere_needs_nothing():
    assert _reexpose_under_tmp("/usr/bin/python3") == []

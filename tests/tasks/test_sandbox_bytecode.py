"""What sandboxed runs import from EQUISA's venv is compiled once (``tasks.sandbox_bytecode``), the
first time EQUISA's own interpreter is chosen for a suite (``tasks.interpreter``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tasks import interpreter, sandbox_bytecode
from tasks.sandbox_bytecode import MARKER, finish_precompile, is_own_interpreter, start_precompile


@pytest.fixture
def venv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A venv folder taken for EQUISA's own, with a package ``fakeplugin`` in its site-packages and a
    module ``elsewhere`` outside it."""
    root = tmp_path / "venv"
    site = root / "lib" / "site-packages"
    (site / "fakeplugin").mkdir(parents=True)
    (site / "fakeplugin" / "__init__.py").write_text("X = 1\n")
    (site / "fakeplugin" / "hooks.py").write_text("def hook():\n    return 2\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "elsewhere.py").write_text("Y = 3\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(tmp_path / "outside"))
    monkeypatch.setattr(sys, "prefix", str(root))
    monkeypatch.delenv("EQUISA_SANDBOX_PRECOMPILE", raising=False)
    monkeypatch.setattr(sandbox_bytecode, "_STARTED", {})
    return root


def _compiled(folder: Path) -> set[str]:
    return {p.name.split(".")[0] for p in (folder / "__pycache__").glob("*.pyc")}


def test_the_packages_are_compiled_once_and_again_when_installed_anew(venv: Path):
    package = venv / "lib" / "site-packages" / "fakeplugin"
    assert start_precompile(("fakeplugin", "elsewhere", "not_installed_anywhere"))
    assert finish_precompile()
    assert _compiled(package) == {"__init__", "hooks"}
    assert (venv / MARKER).is_file()
    assert not (venv.parent / "outside" / "__pycache__").exists(), "only what lies in the venv"
    assert not start_precompile(("fakeplugin",)), "the marker says it is done"

    (package / "new.py").write_text("Z = 4\n")
    os.utime(package, ns=(package.stat().st_atime_ns, package.stat().st_mtime_ns + 10**9))
    assert start_precompile(("fakeplugin",)) and finish_precompile()
    assert "new" in _compiled(package)


def test_it_can_be_turned_off_and_needs_a_venv(venv: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("EQUISA_SANDBOX_PRECOMPILE", "0")
    assert not start_precompile(("fakeplugin",))
    monkeypatch.delenv("EQUISA_SANDBOX_PRECOMPILE")
    monkeypatch.setattr(sys, "base_prefix", sys.prefix)  # not a venv: the system's Python is left alone
    assert not start_precompile(("fakeplugin",))
    assert not finish_precompile(), "nothing was started"


def test_equisas_own_interpreter_is_its_executable_or_any_python_of_its_venv():
    assert is_own_interpreter(sys.executable)
    assert is_own_interpreter(str(Path(sys.prefix) / "bin" / "python3"))
    assert not is_own_interpreter("/opt/elsewhere/bin/python")


def test_choosing_equisas_own_interpreter_compiles_what_the_runs_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    calls: list[str] = []
    monkeypatch.setattr(interpreter, "start_precompile", lambda: calls.append("start") or True)
    monkeypatch.setattr(interpreter, "finish_precompile", lambda: calls.append("finish") or True)
    interpreter.start_check(tmp_path, sys.executable)
    interpreter.resolve_interpreter(tmp_path, sys.executable)
    assert calls == ["start", "start", "finish"]

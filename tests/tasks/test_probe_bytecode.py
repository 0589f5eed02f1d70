"""The probe compiled once per interpreter (``tasks.sandbox.probe_bytecode``) and loaded by a
sandboxed run from that bytecode alone, past pytest's assertion rewriter."""

from __future__ import annotations

import glob
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from equisa_core.common.probe_output import parse_probe_output
from tasks.sandbox import probe_bytecode as bytecode
from tasks.run.environments import default_environments
from tasks.sandbox.contract import RunRequest, SandboxLimits
from tasks.sandbox.local_backend import LocalSandbox
from tests.conftest import small_repo

OTHER_PYTHONS = sorted(p for p in glob.glob("/root/.pyenv/versions/3.*/bin/python3")
                       if not p.startswith(f"/root/.pyenv/versions/{sys.version_info[0]}.{sys.version_info[1]}."))


@pytest.fixture(autouse=True)
def _fresh_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bytecode, "_KNOWN", {})
    monkeypatch.setattr(bytecode, "_DIGESTS", {})


def test_equisas_interpreter_compiles_the_probe_once_and_keeps_it(tmp_path: Path):
    made = bytecode.probe_bytecode(sys.executable, cache=tmp_path)
    assert made is not None and made.suffix == ".pyc" and made.is_relative_to(tmp_path)
    assert made.read_bytes()[:4] == importlib.util.MAGIC_NUMBER
    stamp = made.stat().st_mtime_ns
    bytecode._KNOWN.clear()  # another process: the file is found, not made again
    assert bytecode.probe_bytecode(sys.executable, cache=tmp_path) == made
    assert made.stat().st_mtime_ns == stamp


@pytest.mark.skipif(not OTHER_PYTHONS, reason="no other Python minor version on this machine (pyenv)")
def test_another_interpreter_compiles_it_with_its_own_magic_number(tmp_path: Path):
    other = OTHER_PYTHONS[0]
    made = bytecode.probe_bytecode(other, cache=tmp_path)
    assert made is not None
    magic = subprocess.run([other, "-c", "import importlib.util, sys; "
                            "sys.stdout.write(importlib.util.MAGIC_NUMBER.hex())"],
                           capture_output=True, text=True, check=True).stdout
    assert made.read_bytes()[:4].hex() == magic != importlib.util.MAGIC_NUMBER.hex()
    assert made != bytecode.probe_bytecode(sys.executable, cache=tmp_path)


def test_an_interpreter_that_is_not_here_gets_no_bytecode(tmp_path: Path):
    assert bytecode.probe_bytecode(str(tmp_path / "no-python"), cache=tmp_path / "cache") is None
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\nexit 3\n")
    broken.chmod(0o755)
    assert bytecode.probe_bytecode(str(broken), cache=tmp_path / "cache") is None
    assert not list((tmp_path / "cache").rglob("*.pyc"))  # nothing half-made is left


LOADER = '''
import sys

def test_how_the_probe_was_loaded():
    print("LOADER", type(sys.modules["equisa_probe"].__loader__).__name__)
'''


def test_a_sandboxed_run_loads_the_probe_from_bytecode_past_the_assertion_rewriter(tmp_path: Path):
    repo = tmp_path / "repo"
    small_repo(repo)
    request = RunRequest(workspace=repo, workspace_digest="probe-bytecode", interpreter=sys.executable,
                         limits=SandboxLimits(wall_clock_s=120, test_timeout_s=30),
                         overlay={"tests/test_loader.py": LOADER})
    run = LocalSandbox().run(request)
    trace = parse_probe_output(run.probe_output.splitlines())
    test = next(t for t in trace.tests if t.test_id.endswith("test_how_the_probe_was_loaded"))
    assert test.stdout_tail.split()[-1] == "SourcelessFileLoader"  # not pytest's AssertionRewritingHook
    # The probe ran as before: its session record names this interpreter and its backend.
    assert trace.python_version == "%d.%d.%d" % sys.version_info[:3] and trace.backend


def test_the_probe_is_hashed_again_only_when_it_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    source = tmp_path / "equisa_probe.py"
    source.write_text("X = 1\n")
    reads = []
    original = Path.read_bytes

    def counted(self: Path) -> bytes:
        if self == source:
            reads.append(self)
        return original(self)
    monkeypatch.setattr(Path, "read_bytes", counted)
    first = bytecode.probe_bytecode(sys.executable, cache=tmp_path / "cache", source=source)
    again = bytecode.probe_bytecode(sys.executable, cache=tmp_path / "cache", source=source)
    assert first is not None and again == first and len(reads) == 1, "read and hashed once"
    source.write_text("X = 22\n")  # another size: another file
    changed = bytecode.probe_bytecode(sys.executable, cache=tmp_path / "cache", source=source)
    assert len(reads) == 2 and changed is not None and changed != first


def test_the_caches_follow_xdg_cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert bytecode.default_probe_cache() == tmp_path / "equisa" / "probe"
    assert default_environments() == tmp_path / "equisa" / "environments"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert bytecode.default_probe_cache() == tmp_path / "home" / ".cache" / "equisa" / "probe"

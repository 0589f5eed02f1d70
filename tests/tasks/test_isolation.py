"""The local sandbox's isolation: detection, the util-linux launcher, and the refusal of weak isolation."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from equisa_core.common.models import TestOutcome
from equisa_core.common.probe_output import parse_probe_output
from equisa_core.common.sandbox_policy import IsolationLevel
from equisa_core.errors import WeakSandboxError
from tasks.sandbox.contract import RunRequest, SandboxInfrastructureError, SandboxLimits
from tasks.sandbox.isolation import (
    ISOLATION_ENV,
    _mount_table,
    detect_isolation,
    hidden_folders,
    reexposed_paths,
)
from tasks.sandbox.local_backend import LocalSandbox
from tasks.sandbox.run_tests import sandbox_isolation
from tests.conftest import small_repo
from tests.sandbox_levels import local_isolation, path_without

LIMITS = SandboxLimits(wall_clock_s=120, test_timeout_s=30)

# Generated code as the sandbox sees it: each test checks one property of the confinement.
INSIDE = '''
import os, socket

def test_runs_as_the_caller_with_no_capabilities():
    status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines())
    assert status["CapEff"].strip() == "0" * 16 and status["CapBnd"].strip() == "0" * 16
    assert status["NoNewPrivs"].strip() == "1"
    assert (os.getuid(), os.getgid()) == (int(os.environ["CALLER_UID"]), int(os.environ["CALLER_GID"]))

def test_has_a_loopback_of_its_own():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    socket.create_connection(server.getsockname(), timeout=3).close()

def test_home_and_tmp_are_private_and_writable():
    assert os.listdir(os.environ["HOME"]) == []
    assert not os.path.exists(os.environ["REAL_HOME_MARKER"])
    for folder in (os.environ["HOME"], "/tmp", "/dev/shm"):
        with open(os.path.join(folder, "scratch"), "w") as handle:
            handle.write("ok")

def test_the_system_is_read_only():
    for path in ("/usr/equisa-escape", "/etc/equisa-escape", "/var/tmp/equisa-escape"):
        try:
            open(path, "w").close()
        except OSError:
            continue
        raise AssertionError("wrote " + path)

def test_dev_holds_the_usual_nodes_and_no_disk():
    import stat
    names = os.listdir("/dev")
    assert {"null", "zero", "full", "random", "urandom", "shm", "fd"} <= set(names)
    assert [n for n in names if stat.S_ISBLK(os.lstat("/dev/" + n).st_mode)] == []
'''


def _inside_request(tmp_path: Path, **update) -> RunRequest:
    repo = tmp_path / "repo"
    if not repo.exists():
        small_repo(repo)
    marker = Path.home() / f".equisa-isolation-marker-{os.getpid()}"
    return RunRequest(
        workspace=repo, workspace_digest=f"isolation-{tmp_path.name}", interpreter=sys.executable,
        limits=LIMITS, overlay={"tests/test_inside.py": INSIDE},
        env={"CALLER_UID": str(os.getuid()), "CALLER_GID": str(os.getgid()), "REAL_HOME_MARKER": str(marker)},
        **update,
    )


@pytest.mark.parametrize("level", [IsolationLevel.BWRAP, IsolationLevel.UNSHARE])
def test_both_confining_levels_give_the_same_confinement(level, tmp_path):
    marker = Path.home() / f".equisa-isolation-marker-{os.getpid()}"
    marker.write_text("EQUISA's home must not be visible")
    try:
        with local_isolation(level, tmp_path):
            run = LocalSandbox().run(_inside_request(tmp_path))
    finally:
        marker.unlink()
    assert run.isolation.startswith(level.value)
    trace = parse_probe_output(run.probe_output.splitlines())
    failed = {t.test_id: t.message for t in trace.tests if t.outcome is not TestOutcome.PASSED}
    assert failed == {} and len(trace.tests) == 5


def test_without_bubblewrap_the_util_linux_launcher_is_chosen(tmp_path, monkeypatch):
    if subprocess.run(["unshare", "-r", "true"], capture_output=True).returncode != 0:
        pytest.skip("unprivileged user namespaces are off on this machine (unshare -r fails)")
    monkeypatch.delenv(ISOLATION_ENV, raising=False)
    monkeypatch.setenv("PATH", path_without("bwrap", tmp_path / "bin"))
    detect_isolation.cache_clear()
    try:
        detected = detect_isolation()
    finally:
        detect_isolation.cache_clear()
    assert detected.level is IsolationLevel.UNSHARE
    assert detected.reason.startswith("bwrap: bwrap not found; util-linux builds")


def test_a_named_level_must_exist_and_run(tmp_path, monkeypatch):
    monkeypatch.setenv(ISOLATION_ENV, "chroot")
    detect_isolation.cache_clear()
    with pytest.raises(SandboxInfrastructureError, match="not one of bwrap, unshare, network-only, none"):
        detect_isolation()
    monkeypatch.setenv(ISOLATION_ENV, "bwrap")
    monkeypatch.setenv("PATH", path_without("bwrap", tmp_path / "bin"))
    detect_isolation.cache_clear()
    try:
        with pytest.raises(SandboxInfrastructureError, match="asked for, but bwrap: bwrap not found"):
            detect_isolation()
    finally:
        detect_isolation.cache_clear()


def test_weak_isolation_refuses_generated_code_and_still_runs_the_users_suite(tmp_path):
    with local_isolation(IsolationLevel.NETWORK_ONLY, tmp_path):
        with pytest.raises(WeakSandboxError, match="refusing to run generated code"):
            LocalSandbox().run(_inside_request(tmp_path))
        accepted = LocalSandbox().run(_inside_request(tmp_path, allow_weak_isolation=True))
        own = _inside_request(tmp_path).model_copy(update={"overlay": {}, "tests": ("tests",)})
        assert not own.untrusted
        plain = LocalSandbox().run(own)
    assert accepted.isolation.startswith("network-only") and accepted.probe_output
    assert plain.isolation.startswith("network-only") and plain.exit_code == 5  # no tests but it ran


def test_sandbox_none_accepts_weak_isolation_by_itself():
    chosen = sandbox_isolation("none")
    assert (chosen.backend, chosen.level, chosen.weak_allowed, chosen.confines_files) == (
        "none", IsolationLevel.NONE, True, False)
    assert sandbox_isolation("local", weak_allowed=True).weak_allowed


def test_the_mount_table_escapes_blanks_and_binds_the_run_folder_last(tmp_path, monkeypatch):
    home = tmp_path / "home dir"
    monkeypatch.setattr("tasks.sandbox.isolation.hidden_folders", lambda: [Path("/tmp"), home])
    venv = home / "project" / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin" / "python").write_text("")
    folder = tmp_path / "run"
    rows = [line.split() for line in _mount_table(folder, str(venv / "bin" / "python")).splitlines()]
    escaped_home = str(home).replace(" ", "\\040")
    assert ["equisa-home", f"{folder}/sandbox/root{escaped_home}", "tmpfs"] == rows[2][:3]
    assert [f"{escaped_home}/project/.venv", "none", "bind,ro,X-mount.mkdir"] == [
        rows[-2][0], rows[-2][2], rows[-2][3]]
    assert rows[-1][:4] == [str(folder), f"{folder}/sandbox/root{folder}", "none", "bind,X-mount.mkdir"]


def test_home_is_hidden_when_it_is_a_folder_of_its_own(monkeypatch):
    monkeypatch.setenv("HOME", "/var/tmp")
    assert hidden_folders() == [Path("/tmp"), Path("/var/tmp")]
    for system_or_tmp in ("/", "/usr", "/tmp/somewhere"):
        monkeypatch.setenv("HOME", system_or_tmp)
        assert hidden_folders() == [Path("/tmp")]


def test_an_interpreter_under_a_hidden_folder_stays_visible(tmp_path):
    venv = tmp_path / "checkout" / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin" / "python").write_text("")
    assert reexposed_paths(str(venv / "bin" / "python")) == [str(venv)]
    assert reexposed_paths("/usr/bin/python3") == []


@pytest.mark.parametrize("level", [IsolationLevel.BWRAP, IsolationLevel.UNSHARE])
def test_a_lent_folder_under_the_hidden_home_stays_readable_and_nothing_else_does(level, tmp_path):
    home_folder = Path.home() / f".equisa-isolation-lent-{os.getpid()}"
    (home_folder / "lent").mkdir(parents=True)
    (home_folder / "lent" / "tool.py").write_text("VALUE = 42\n")
    (home_folder / "kept").mkdir()
    (home_folder / "kept" / "key").write_text("private")
    check = (
        "import os, sys\n\n"
        "def test_reads_only_what_was_lent():\n"
        "    sys.path.insert(0, os.environ['LENT'])\n"
        "    import tool\n"
        "    assert tool.VALUE == 42\n"
        "    assert not os.path.exists(os.environ['KEPT'])\n"
        "    open(os.path.join(os.environ['LENT'], 'tool.py'), 'a')\n"
    )
    request = _inside_request(tmp_path).model_copy(update={
        "overlay": {"tests/test_lent.py": check}, "lent": (str(home_folder / "lent"),),
        "env": {"LENT": str(home_folder / "lent"), "KEPT": str(home_folder / "kept" / "key")}})
    try:
        with local_isolation(level, tmp_path):
            run = LocalSandbox().run(request)
    finally:
        shutil.rmtree(home_folder)
    (result,) = parse_probe_output(run.probe_output.splitlines()).tests
    assert result.outcome is TestOutcome.FAILED and result.exception_type == "OSError", result.message
    assert "Read-only file system" in (result.message or "")


PLUGINS = '''
def test_installed_plugins(request):
    manager = request.config.pluginmanager
    print("HYPOTHESIS", manager.hasplugin("hypothesispytest"))
'''


def test_equisas_own_interpreter_runs_a_suite_without_its_own_dependencies_plugins(tmp_path):
    """EQUISA's own interpreter (a repository that declares nothing) runs pytest alone; another
    interpreter, here the same binary under another name, keeps its installed plugins."""
    repo = tmp_path / "repo"
    small_repo(repo)
    alias = tmp_path / "python"
    alias.symlink_to(sys.executable)
    seen = {}
    for name, python in (("own", sys.executable), ("other", str(alias))):
        request = RunRequest(workspace=repo, workspace_digest=f"plugins-{name}", interpreter=python,
                             limits=LIMITS, overlay={"tests/test_plugins.py": PLUGINS})
        run = LocalSandbox().run(request)
        trace = parse_probe_output(run.probe_output.splitlines())
        test = next(t for t in trace.tests if t.test_id.endswith("test_installed_plugins"))
        assert test.outcome is TestOutcome.PASSED
        seen[name] = test.stdout_tail.strip().split()[-1]
    assert seen == {"own": "False", "other": "True"}

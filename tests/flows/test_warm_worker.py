"""The warm worker (``cli/warm_worker.py``, entered from ``cli/launcher.py``): ``equisa`` commands
served by a process that has imported EQUISA and Prefect already.

Real ``equisa`` console-script processes against the test harness's Prefect server; each test has
a runtime folder of its own (so its workers are its own) and stops its workers at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli import warm_worker
from cli.warm_worker import fingerprint, running_workers, stop_workers
from equisa_core.discovery.trace_report import TraceReport
from equisa_core.errors import EXIT_INTERRUPTED, EXIT_USAGE, RepositoryNotFoundError, exit_code_for
from tests.conftest import FIXTURES, small_repo

LINUX_PROC = pytest.mark.skipif(not Path("/proc/self/task").exists(),
                                reason="finds the worker's children in /proc (Linux)")
EQUISA = shutil.which("equisa") or str(Path(sys.executable).with_name("equisa"))
SHAPES = FIXTURES / "shapes"


@pytest.fixture
def warm_env(cli_env: dict[str, str]) -> Iterator[dict[str, str]]:
    """``cli_env`` with the warm worker on, in a runtime folder and a data folder of the test's own
    (short: a socket's path has a length limit), and its workers stopped afterwards."""
    folder = tempfile.mkdtemp(prefix="ew-")
    # XDG_DATA_HOME too: ``equisa server stop`` also stops the shared Prefect server of its data
    # folder, which must be the test's, never the user's.
    env = {**cli_env, "EQUISA_WARM": "1", "XDG_RUNTIME_DIR": folder, "EQUISA_WARM_IDLE_S": "300",
           "XDG_DATA_HOME": str(Path(folder) / "data")}
    yield env
    stop_workers(env)
    shutil.rmtree(folder, ignore_errors=True)


def equisa(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EQUISA, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600)


def worker_pids(env: dict[str, str]) -> list[int]:
    return [int(w["pid"]) for w in running_workers(env)]


def test_a_command_served_warm_gives_what_it_gives_in_its_own_process(warm_env):
    first = equisa(warm_env, "trace", str(SHAPES), "--json", "-")
    assert first.returncode == 0, first.stderr
    started = worker_pids(warm_env)
    assert len(started) == 1, "the first command started one worker"
    second = equisa(warm_env, "trace", str(SHAPES), "--json", "-")
    assert worker_pids(warm_env) == started, "the second command was served by the same worker"
    alone = equisa({**warm_env, "EQUISA_WARM": "0"}, "trace", str(SHAPES), "--json", "-")
    assert (second.returncode, alone.returncode) == (0, 0), alone.stderr
    reports = [TraceReport.model_validate_json(done.stdout) for done in (first, second, alone)]
    outcomes = [{t.test_id: t.outcome for t in r.tests} for r in reports]
    assert outcomes[0] == outcomes[1] == outcomes[2] and len(outcomes[0]) == 16
    scores = [[(n.fqn, n.tarantula) for n in r.nodes] for r in reports]
    assert scores[0] == scores[1] == scores[2]
    for done in (first, second):  # the summary reached the client's stderr, the report its stdout
        assert "16 tests: 11 passed, 2 failed, 1 errors, 2 skipped" in done.stderr


def test_exit_codes_messages_and_usage_errors_pass_through(warm_env, tmp_path):
    missing = equisa(warm_env, "trace", str(tmp_path / "nowhere"))
    assert missing.returncode == exit_code_for(RepositoryNotFoundError("x"))
    assert any(line.startswith("equisa: ") for line in missing.stderr.splitlines()), missing.stderr
    usage = equisa(warm_env, "trace")
    assert usage.returncode == EXIT_USAGE and "usage: equisa trace" in usage.stderr
    version = equisa(warm_env, "--version")
    assert version.returncode == 0 and version.stdout.startswith("equisa ")
    assert len(worker_pids(warm_env)) == 1, "all three were served by one worker"


def test_the_command_runs_in_the_clients_directory_with_the_clients_environment(warm_env, tmp_path):
    shutil.copytree(SHAPES, tmp_path / "proj")
    plain = equisa(warm_env, "trace", "proj", cwd=tmp_path)  # a path relative to the client's directory
    assert plain.returncode == 0, plain.stderr
    assert "\x1b[" not in plain.stderr
    coloured = equisa({**warm_env, "FORCE_COLOR": "1"}, "trace", "proj", cwd=tmp_path)
    assert coloured.returncode == 0, coloured.stderr
    assert "\x1b[" in coloured.stderr, "rich saw the client's FORCE_COLOR"
    assert len(worker_pids(warm_env)) == 1, "FORCE_COLOR is read at run time: the same worker served both"


def _slow_repo(root: Path, seconds: int) -> Path:
    small_repo(root)
    (root / "mod.py").write_text("def f(x):\n    return x\n")
    (root / "tests" / "test_mod.py").write_text(
        f"import time\nfrom mod import f\n\n\ndef test_slow():\n    time.sleep({seconds})\n"
        "    assert f(1) == 1\n\n\n"
        "def test_wrong():\n    assert f(1) == 2\n")
    return root


def _started(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    """Start ``equisa ARGS``; return once its command runs in a worker's child."""
    command = subprocess.Popen([EQUISA, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not _children_of_workers(env):
        assert command.poll() is None, command.communicate()
        time.sleep(0.1)
    assert _children_of_workers(env), "the command did not start in a worker"
    return command


def _children_of_workers(env: dict[str, str]) -> list[int]:
    children = []
    for pid in worker_pids(env):
        listed = Path(f"/proc/{pid}/task/{pid}/children")
        if listed.exists():
            children += [int(c) for c in listed.read_text().split()]
    return children


@LINUX_PROC
def test_ctrl_c_reaches_the_command_which_stops_as_an_interrupted_run(warm_env, tmp_path):
    command = _started(warm_env, "trace", str(_slow_repo(tmp_path / "slow", 120)))
    time.sleep(2)  # the run under way
    command.send_signal(signal.SIGINT)
    _, err = command.communicate(timeout=120)
    assert command.returncode == EXIT_INTERRUPTED, err
    assert "equisa: interrupted" in err


@LINUX_PROC
def test_a_stopped_worker_takes_no_new_command_and_still_reports_the_ones_under_way(warm_env, tmp_path):
    command = _started(warm_env, "trace", str(_slow_repo(tmp_path / "slow", 6)))
    [worker] = worker_pids(warm_env)
    stop = equisa({**warm_env, "EQUISA_WARM": "0"}, "server", "stop")
    assert stop.returncode == 0 and f"Stopped 1 warm worker(s) (pid {worker})" in stop.stdout + stop.stderr
    assert worker_pids(warm_env) == [], "no longer listening"
    _, err = command.communicate(timeout=300)
    assert command.returncode == 0, err
    assert "2 tests: 1 passed, 1 failed" in err
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and Path(f"/proc/{worker}").exists():
        time.sleep(0.1)
    assert not Path(f"/proc/{worker}").exists(), "the worker exits once its command has ended"


def test_an_idle_worker_exits(warm_env):
    env = {**warm_env, "EQUISA_WARM_IDLE_S": "1"}
    assert equisa(env, "--version").returncode == 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and worker_pids(env):
        time.sleep(0.2)
    assert worker_pids(env) == []
    assert not list(Path(env["XDG_RUNTIME_DIR"]).glob("equisa-warm-*/*.sock")), "its socket is removed"


def test_a_runtime_folder_others_may_enter_is_refused_and_the_command_runs_in_its_own_process(warm_env):
    folder = Path(warm_env["XDG_RUNTIME_DIR"]) / f"equisa-warm-{os.getuid()}"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    done = equisa(warm_env, "trace", str(SHAPES), "--json", "-")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["summary"]["total"] == 16
    assert not list(folder.iterdir()), "no worker was started there"


def _package_tree(root: Path) -> Path:
    for package in ("cli", "flows", "tasks", "equisa_core"):
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text("")
    return root


def test_the_fingerprint_changes_with_the_code_and_the_settings_read_at_import(tmp_path, monkeypatch):
    monkeypatch.setattr(warm_worker, "_PACKAGE_ROOT", _package_tree(tmp_path))
    env = {"PATH": "/usr/bin", "HOME": "/home/u", "PREFECT_API_URL": "http://127.0.0.1:1/api"}
    before = fingerprint(env)
    assert fingerprint(dict(env)) == before
    for unread in ({"COLUMNS": "50"}, {"FORCE_COLOR": "1"}, {"EQUISA_WARM_IDLE_S": "5"}):
        assert fingerprint({**env, **unread}) == before, unread
    for read in ({"PREFECT_API_URL": "http://127.0.0.1:2/api"}, {"PREFECT_HOME": "/x"},
                 {"EQUISA_PREFECT_SERVER": "ephemeral"}, {"PYTHONPATH": "/y"}, {"LANG": "C"}):
        assert fingerprint({**env, **read}) != before, read
    source = tmp_path / "tasks" / "__init__.py"
    os.utime(source, ns=(source.stat().st_atime_ns, source.stat().st_mtime_ns + 10**9))
    assert fingerprint(env) != before, "an edited source file"

"""A run killed with SIGKILL leaves the user's tree byte-identical and no sandbox behind."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.integration.test_probe import tree_digest

EQUISA = shutil.which("equisa") or str(Path(sys.executable).with_name("equisa"))

SLOW_SUITE = '''
import time

from slowpkg import work


def test_slow_{n}():
    time.sleep(1.5)
    assert work({n}) == {n} * 2
'''


def make_repo(root: Path) -> Path:
    (root / "slowpkg").mkdir(parents=True)
    (root / "slowpkg" / "__init__.py").write_text("def work(x):\n    return x * 2\n")
    (root / "tests").mkdir()
    for n in range(12):
        (root / "tests" / f"test_slow_{n}.py").write_text(SLOW_SUITE.format(n=n))
    (root / "conftest.py").write_text("")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    identity = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "-C", str(root), *identity, "commit", "-qm", "x"], check=True)
    return root


def descendants(root: int) -> dict[int, str]:
    """Processes below ``root`` (pid -> command line), from /proc."""
    parents: dict[int, int] = {}
    commands: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            commands[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace")
        except OSError:
            continue
        ppid = next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:"))
        parents[int(entry.name)] = int(ppid)
    found: dict[int, str] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in found:
                found[pid] = commands.get(pid, "")
                frontier.append(pid)
    return found


def alive(pid: int) -> bool:
    try:
        state = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                     if line.startswith("State:"))
    except (OSError, StopIteration):
        return False
    return " Z " not in state + " "  # a zombie has already died


def test_sigkill_mid_run_leaves_the_tree_untouched(tmp_path, cli_env):
    repo = make_repo(tmp_path / "user-repo")
    before = tree_digest(repo)
    process = subprocess.Popen([EQUISA, "trace", str(repo), "--shards", "2", "--no-cache"], env=cli_env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        suites: dict[int, str] = {}
        while time.monotonic() < deadline and not suites:
            suites = {p: c for p, c in descendants(process.pid).items() if "--equisa-out=" in c}
            time.sleep(0.2)
        assert suites, "the sandboxed suite never started"
        time.sleep(1.0)  # mid-run: tests are sleeping inside the sandboxes
        below = descendants(process.pid)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == -signal.SIGKILL
    # The sandboxes die with EQUISA (bubblewrap's --die-with-parent, the killed process group).
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(alive(pid) for pid in below):
        time.sleep(0.2)
    assert [below[pid] for pid in below if alive(pid)] == []
    assert tree_digest(repo) == before
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True)
    assert status.stdout == ""


def _flow_runs_running_since(api_url: str, since: datetime.datetime) -> bool:
    """Whether the Prefect server at ``api_url`` has a flow run running that started after ``since``
    (an earlier test's killed run stays "running" there)."""
    import httpx

    running = {"state": {"type": {"any_": ["RUNNING"]}}, "start_time": {"after_": since.isoformat()}}
    query = {"flow_runs": running, "limit": 1}
    answer = httpx.post(f"{api_url.rstrip('/')}/flow_runs/filter", json=query, timeout=10)
    answer.raise_for_status()
    return bool(answer.json())


def test_ctrl_c_mid_run_exits_130_and_the_run_is_recorded_as_interrupted(tmp_path, cli_env):
    """SIGINT while the sandboxed suite runs: exit 130, ``--json`` holds the failure report, and the run
    is in the history as interrupted, under the flow run's id (``equisa report`` shows it)."""
    from tasks.storage.history import query

    repo = make_repo(tmp_path / "user-repo")
    out = tmp_path / "report.json"
    command = [EQUISA, "trace", str(repo), "--shards", "2", "--no-cache", "--json", str(out)]
    started = datetime.datetime.now(datetime.timezone.utc)
    # As a user's shell starts it: SIGINT at its default. A child inherits an ignored signal, and
    # something earlier in the test session leaves SIGINT ignored in this process; Python then never
    # raises KeyboardInterrupt in the command (its run ended with exit 0 in CI).
    process = subprocess.Popen(command, env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(
                "--equisa-out=" in c for c in descendants(process.pid).values()):
            time.sleep(0.2)
        # The early trace starts the suite before Prefect's flow run exists (on a loaded machine,
        # seconds before): interrupted then, the run has no flow run to be recorded under.
        api = cli_env["PREFECT_API_URL"]
        while time.monotonic() < deadline and not _flow_runs_running_since(api, started):
            time.sleep(0.2)
        time.sleep(1.0)  # mid-run
        assert process.poll() is None, "the run ended before the signal: the test saw no sandboxed run"
        os.kill(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    report = json.loads(out.read_text())
    assert (report["status"], report["exit_code"], report["error_type"]) == ("interrupted", 130,
                                                                            "KeyboardInterrupt")
    db = Path(cli_env["EQUISA_DB"])
    (row,) = query(db, "SELECT run_id, kind, status, exit_code, flow_run_id FROM runs")
    assert (row["run_id"], row["kind"], row["status"], row["exit_code"]) == (report["run_id"], "trace",
                                                                            "interrupted", 130)
    assert row["flow_run_id"] == report["run_id"], "recorded by the flow run that was interrupted"
    page = tmp_path / "page.html"
    done = subprocess.run([EQUISA, "report", report["run_id"], "-o", str(page)], env=cli_env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "interrupted" in page.read_text() and "130" in page.read_text()

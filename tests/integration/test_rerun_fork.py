"""The probe's re-run of a run's failing tests in a fork made after collection
(``--equisa-rerun-failures``), run directly under each interpreter's pytest: no sandbox kills the
process group afterwards, so a child left behind would show."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from equisa_core.common.probe_output import parse_probe_output
from equisa_core.probe import probe_file
from tests.conftest import venv_with_pytest

T = "tests/test_hang.py::"

#: Each test writes its process id, then fails the first time it runs in the folder; its second run
#: (in the fork) hangs: until the alarm stops it, or, swallowing the alarm, until it is killed.
HANGS_THE_SECOND_TIME = (
    "import os\nimport time\nfrom pathlib import Path\n\n"
    "HERE = Path(__file__).parent\n\n\n"
    "def _second_run(name):\n"
    "    mark = HERE / (name + '.ran')\n"
    "    (HERE / (name + '.pids')).open('a').write('%d\\n' % os.getpid())\n"
    "    first = not mark.exists()\n"
    "    mark.write_text('x')\n"
    "    return not first\n\n\n"
    "def test_hangs():\n"
    "    assert _second_run('hangs')\n"
    "    time.sleep(60)\n\n\n"
    "def test_swallows_the_alarm():\n"
    "    assert _second_run('swallows')\n"
    "    end = time.monotonic() + 60\n"
    "    while time.monotonic() < end:\n"
    "        try:\n"
    "            time.sleep(0.05)\n"
    "        except BaseException:\n"
    "            pass\n"
)
FLAKY = (
    "import os\nfrom pathlib import Path\n\n"
    "MARK = Path(__file__).with_name('.ran-before')\n\n\n"
    "def test_fails_the_first_time():\n"
    "    first = not MARK.exists()\n"
    "    MARK.write_text('x')\n"
    "    assert not first\n\n\n"
    "def test_really_wrong():\n    assert 1 + 1 == 3\n"
)


def run_probe(python: Path, repo: Path, *options: str, timeout: float = 60) -> tuple[list[dict], float]:
    """Run ``repo``'s suite under the probe (from its own file); its records and the wall time."""
    out = repo.parent / "probe.jsonl"
    env = {**os.environ, "PYTHONPATH": str(probe_file().parent), "PYTHONDONTWRITEBYTECODE": "1"}
    started = time.monotonic()
    subprocess.run([str(python), "-m", "pytest", "-p", "equisa_probe", f"--equisa-out={out}",
                    f"--equisa-root={repo}", "-p", "no:cacheprovider", "-p", "no:randomly", "-q",
                    "--rootdir", str(repo), *options, str(repo)],
                   cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout)
    # (not captured: a process a test left behind would keep the pipes, and this wait, open)
    wall = time.monotonic() - started
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()], wall


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie waiting for its reaper does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


@pytest.mark.parametrize("minor", ["3.8", f"{sys.version_info[0]}.{sys.version_info[1]}"])
def test_a_test_that_hangs_in_the_fork_is_stopped_and_no_child_is_left(minor, tmp_path):
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_hang.py").write_text(HANGS_THE_SECOND_TIME)
    records, wall = run_probe(venv_with_pytest(minor), repo, "--equisa-test-timeout=1",
                              "--equisa-rerun-failures=20")
    reruns = {r["test"]: r for r in records if r["kind"] == "rerun"}
    # Stopped by its alarm in the fork: it failed there, as in the run.
    assert reruns[T + "test_hangs"]["outcome"] == "failed"
    assert 0.8 < reruns[T + "test_hangs"]["duration"] < 5
    # Swallowing the alarm, it kept the fork busy until the parent killed it (2x its limit + 1 s).
    assert reruns[T + "test_swallows_the_alarm"]["outcome"] == "crashed"
    assert [r["kind"] for r in records][-2:] == ["rerun-done", "end"]
    assert wall < 20
    trace = parse_probe_output(json.dumps(r) for r in records)
    assert not trace.flaky and trace.rerun_apart == {T + "test_hangs", T + "test_swallows_the_alarm"}
    for name in ("hangs", "swallows"):
        run_pid, fork_pid = (int(p) for p in (repo / "tests" / f"{name}.pids").read_text().split())
        assert run_pid != fork_pid, "the second run was in the fork"
        assert not alive(fork_pid), f"the fork that ran {name} outlived the run"


@pytest.mark.parametrize("minor", ["3.8", f"{sys.version_info[0]}.{sys.version_info[1]}", "3.12"])
def test_a_test_that_passes_in_the_fork_is_flaky_and_the_fork_writes_no_record(minor, tmp_path):
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_flaky.py").write_text(FLAKY)
    records, _ = run_probe(venv_with_pytest(minor), repo, "--equisa-rerun-failures=20")
    kinds = [r["kind"] for r in records]
    assert kinds.count("session") == 1 and kinds.count("end") == 1 and kinds[-1] == "end"
    assert {r["test"]: r["outcome"] for r in records if r["kind"] == "rerun"} == {
        "tests/test_flaky.py::test_fails_the_first_time": "passed",
        "tests/test_flaky.py::test_really_wrong": "failed"}
    trace = parse_probe_output(json.dumps(r) for r in records)
    assert trace.flaky == {"tests/test_flaky.py::test_fails_the_first_time"}
    assert trace.failed_tests() == {"tests/test_flaky.py::test_really_wrong"}


def test_the_rerun_is_skipped_with_mutants_or_without_tracing_and_says_why(tmp_path):
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_flaky.py").write_text(FLAKY)
    records, _ = run_probe(Path(sys.executable), repo, "--equisa-rerun-failures=20", "--equisa-trace=0")
    assert [r["reason"] for r in records if r["kind"] == "rerun-skipped"] == [
        "the run is not traced (--equisa-trace=0)"]
    assert not [r for r in records if r["kind"] in ("rerun", "rerun-done")]


def test_a_fork_running_a_test_dies_with_its_parent(tmp_path):
    """The run is killed while its fork runs a test that has no time limit: the fork goes too."""
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    only_hangs = HANGS_THE_SECOND_TIME.split("\n\n\ndef test_swallows")[0] + "\n"
    (repo / "tests" / "test_hang.py").write_text(only_hangs)
    out = tmp_path / "probe.jsonl"
    env = {**os.environ, "PYTHONPATH": str(probe_file().parent), "PYTHONDONTWRITEBYTECODE": "1"}
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "equisa_probe", f"--equisa-out={out}",
                            f"--equisa-root={repo}", "-p", "no:cacheprovider", "-p", "no:randomly", "-q",
                            "--equisa-rerun-failures=20", str(repo)],
                           cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pids = repo / "tests" / "hangs.pids"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(pids.read_text().split() if pids.exists() else ()) < 2:
        time.sleep(0.05)
    run_pid, fork_pid = (int(p) for p in pids.read_text().split())
    assert run_pid == run.pid != fork_pid
    run.kill()
    run.wait()
    deadline = time.monotonic() + 5
    while alive(fork_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(fork_pid), "the fork outlived its killed parent"


#: The test leaves a process of its own behind (as a worker pool forked without exec would), then
#: fails: that process holds every pipe end the run's process had open.
LEAVES_A_PROCESS = (
    "import os\nimport time\nfrom pathlib import Path\n\n\n"
    "def test_forks_a_worker_then_fails():\n"
    "    pid = os.fork()\n"
    "    if pid == 0:\n"
    "        time.sleep(30)\n"
    "        os._exit(0)\n"
    "    (Path(__file__).parent / 'workers.pids').open('a').write('%d\\n' % pid)\n"
    "    assert False\n"
)


@pytest.mark.parametrize("minor", ["3.8", f"{sys.version_info[0]}.{sys.version_info[1]}"])
def test_a_process_a_test_left_behind_does_not_hold_up_the_rerun(minor, tmp_path):
    """The fork reads its tests up to the end of the line, and the run reads the answers until it
    has them all: neither waits for an end-of-file that the left-behind processes keep away."""
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_worker.py").write_text(LEAVES_A_PROCESS)
    try:
        records, wall = run_probe(venv_with_pytest(minor), repo, "--equisa-test-timeout=5",
                                  "--equisa-rerun-failures=20")
        reruns = {r["test"]: r for r in records if r["kind"] == "rerun"}
        assert reruns["tests/test_worker.py::test_forks_a_worker_then_fails"]["outcome"] == "failed"
        assert [r["kind"] for r in records][-2:] == ["rerun-done", "end"]
        # Waiting for an end-of-file would take the first rerun's deadline (2 x 5 s + 1 s) or more.
        assert wall < 8
        assert len((repo / "tests" / "workers.pids").read_text().split()) == 2  # the run's, the fork's
    finally:
        pids = repo / "tests" / "workers.pids"
        for pid in (pids.read_text().split() if pids.exists() else ()):
            try:
                os.kill(int(pid), 9)
            except ProcessLookupError:
                pass

"""A batch spread over a work pool (``equisa batch --work-pool``) and the CI-failure automation, on a
real ``prefect server start`` on 127.0.0.1 with two process workers (``--limit 1`` each, so both take
part): both workers repair repositories (their names are the flow runs' ``prefect.worker.name``
labels), all four results reach DuckDB, and a worker killed mid-batch (with its flow-run process:
a dead machine) loses no repository: Prefect's unresponsive-run automation (``equisa deploy``) marks
its run crashed and the batch runs it again on the other worker.

Every process the test starts runs in its own session and is killed by its process group at the end.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import httpx
import pytest

from equisa_core.operations.batch import BatchSummary
from tests.conftest import FIXTURES
from tests.integration.test_deployments import (
    EQUISA,
    PREFECT,
    ROOT,
    Processes,
    _deployment,
    _flow_runs,
    _free_port,
    _healthy,
    _wait_for,
)

pytestmark = pytest.mark.integration

POOL = "equisa-scaleout"
NAMES = ("alpha", "beta", "gamma", "delta")


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[tuple[str, dict[str, str], Processes, Path]]:
    """One Prefect server for the module (own PREFECT_HOME, port and EQUISA storage), deployed to POOL."""
    tmp = tmp_path_factory.mktemp("scaleout")
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "EQUISA_"))}
    env.update({
        "PREFECT_HOME": str(tmp / "prefect-home"), "PREFECT_API_URL": api,
        "PREFECT_SERVER_API_HOST": "127.0.0.1", "PREFECT_SERVER_API_PORT": str(port),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_LOCAL_STORAGE_PATH": str(tmp / "storage"),
        "PREFECT_WORKER_QUERY_SECONDS": "2", "PREFECT_WORKER_PREFETCH_SECONDS": "2",
        "PREFECT_FLOWS_HEARTBEAT_FREQUENCY": "30",  # the minimum: a dead worker's run is found sooner
        "EQUISA_WORKSPACES": str(tmp / "workspaces"), "EQUISA_REPORTS": str(tmp / "reports"),
        "EQUISA_DB": str(tmp / "history.duckdb"), "EQUISA_ARTIFACTS": str(tmp / "artifacts"),
        "EQUISA_SPOOL": str(tmp / "spool"), "PWD": str(ROOT), "COLUMNS": "200",
    })
    logs = tmp / "logs"
    logs.mkdir()
    processes = Processes(logs)
    try:
        processes.start("server", [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                        env)
        _wait_for(lambda: _healthy(api), 180, "the Prefect server to answer", processes, "server")
        deployed = subprocess.run(
            [EQUISA, "deploy", "--pool", POOL, "--schedule-cron", "30 3 * * 1-5",
             "--unresponsive-after-s", "40"],
            env={**env, "EQUISA_SCHEDULE_TIMEZONE": "America/New_York"}, cwd=tmp, capture_output=True,
            text=True, timeout=300)
        assert deployed.returncode == 0, deployed.stderr + deployed.stdout
        yield api, env, processes, tmp
    finally:
        processes.stop_all()


def _automations(api: str, name: str) -> list:
    """The automations of that name on the server at ``api``: the client is pointed there by a
    settings context, which wins over the test session's own (Prefect's test harness's) and leaves
    the process's environment as it was."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    async def read() -> list:
        async with get_client() as client:
            return await client.read_automations_by_name(name)

    with temporary_settings(updates={PREFECT_API_URL: api}):
        return asyncio.run(read())


def test_deploy_installs_the_schedule_and_the_automations_and_an_event_starts_a_repair(server):
    api, env, processes, tmp = server
    nightly = _deployment(api, "batch", "nightly-batch")["schedules"][0]["schedule"]
    assert (nightly["cron"], nightly["timezone"]) == ("30 3 * * 1-5", "America/New_York")

    (ci,) = _automations(api, "equisa-repair-on-ci-failure")
    (unresponsive,) = _automations(api, "equisa-crash-unresponsive-runs")
    ci_deployment = _deployment(api, "repair-repository", "repair-on-ci-failure")
    assert ci.trigger.expect == {"equisa.ci.failed"} and ci.enabled
    (action,) = ci.actions
    assert action.type == "run-deployment" and str(action.deployment_id) == ci_deployment["id"]
    assert unresponsive.trigger.within.total_seconds() == 40
    assert unresponsive.actions[0].state.value == "CRASHED"

    repository = str(tmp / "shop")
    done = subprocess.run([EQUISA, "trigger", "--repository", repository, "--ref", "abc123",
                           "--failing-tests", "tests/test_a.py::test_x", "--ci-run-url",
                           "https://ci.example.com/runs/7", "--no-llm"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    run = _wait_for(lambda: (_flow_runs(api, ci_deployment["id"]) or [None])[0], 120,
                    "the flow run the event starts", processes, "server")
    entry = run["parameters"]["params"]["entry"]
    assert (entry["source"], entry["ref"], entry["failing_tests"], entry["ci_run_url"], entry["llm"]) == (
        repository, "abc123", ["tests/test_a.py::test_x"], "https://ci.example.com/runs/7", False)
    httpx.post(f"{api}/flow_runs/{run['id']}/set_state", timeout=10,  # no worker should spend time on it
               json={"state": {"type": "CANCELLED", "name": "Cancelled"}, "force": True})


def _repositories(tmp: Path, name: str, session_delay_s: int = 0) -> Path:
    """Four copies of the ``fees`` fixture (a one-line bug, a few tests) and their repositories file;
    with ``session_delay_s``, every pytest session in them starts that much later (a ``conftest.py``
    that sleeps), so that a repair lasts well past its first heartbeat."""
    folder = tmp / name
    for repo in NAMES:
        shutil.copytree(FIXTURES / "fees", folder / repo)
        if session_delay_s:
            (folder / repo / "conftest.py").write_text(f"import time\n\ntime.sleep({session_delay_s})\n")
    path = folder / "repositories.yaml"
    path.write_text("defaults: {llm: false}\nrepositories:\n" + "".join(f"  - source: {r}\n" for r in NAMES))
    return path


def _runs_of(api: str, run_ids: list[str]) -> list[dict]:
    body = {"flow_runs": {"id": {"any_": run_ids}}}
    return httpx.post(f"{api}/flow_runs/filter", json=body, timeout=10).json()


def _batch_children(api: str, deployment_id: str, since: str) -> list[dict]:
    body = {"deployments": {"id": {"any_": [deployment_id]}},
            "flow_runs": {"expected_start_time": {"after_": since}}}
    return httpx.post(f"{api}/flow_runs/filter", json=body, timeout=10).json()


def _heartbeats(api: str, flow_run_id: str) -> int:
    """How many heartbeat events of that flow run the server has."""
    body = {"filter": {"event": {"name": ["prefect.flow-run.heartbeat"]},
                       "resource": {"id": [f"prefect.flow-run.{flow_run_id}"]}}, "limit": 10}
    answer = httpx.post(f"{api}/events/filter", json=body, timeout=10)
    answer.raise_for_status()
    return len(answer.json()["events"])


def _descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (from ``/proc``), deepest last."""
    children: dict[int, list[int]] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(proc.name))
    found, queue = [], [pid]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def _repair_rows(db: str) -> list[tuple]:
    with duckdb.connect(db, read_only=True) as connection:
        return connection.execute("SELECT run_id, status FROM runs WHERE kind = 'repair'").fetchall()


def _two_workers(api: str, env: dict[str, str], processes: Processes, *names: str) -> dict:
    """Process workers on POOL (``--limit 1`` each, so every one takes part), once the server lists
    them online."""
    workers = {name: processes.start(name, [PREFECT, "worker", "start", "--pool", POOL, "--type", "process",
                                            "--name", name, "--limit", "1"], env)
               for name in names}
    def online() -> int:
        listed = httpx.post(f"{api}/work_pools/{POOL}/workers/filter", json={}, timeout=10).json()
        return len([w for w in listed if w["status"] == "ONLINE"])

    _wait_for(lambda: online() >= len(names), 90, "the workers online", processes, names[-1])
    return workers


def test_a_batch_spreads_over_two_workers(server):
    api, env, processes, tmp = server
    workers = _two_workers(api, env, processes, "worker-1", "worker-2")
    repair_one = _deployment(api, "repair-repository", "repair-one")["id"]

    # Both workers share the batch; every result comes back, and each run is in DuckDB.
    summary_path = tmp / "first.json"
    done = subprocess.run([EQUISA, "batch", str(_repositories(tmp, "first")), "--work-pool", POOL,
                           "--json", str(summary_path)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr + processes.tail("worker-1") + processes.tail("worker-2")
    assert "as runs of repair-repository/repair-one on work pool equisa-scaleout" in done.stderr
    summary = BatchSummary.model_validate_json(summary_path.read_text())
    assert [(r.name, r.status, r.target) for r in summary.results] == [
        (n, "fixed", "fees.net") for n in NAMES]
    runs = _runs_of(api, [r.flow_run_id for r in summary.results])
    assert {r["labels"]["prefect.worker.name"] for r in runs} == {"worker-1", "worker-2"}
    assert all(r["deployment_id"] == repair_one and r["state"]["type"] == "COMPLETED" for r in runs)
    rows = _repair_rows(env["EQUISA_DB"])
    assert len(rows) == 4 and {status for _, status in rows} == {"fixed"}
    for worker in workers.values():  # the next test starts its own (a worker may take minutes to stop)
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)


def test_a_worker_dying_mid_batch_loses_no_repository(server):
    api, env, processes, tmp = server
    workers = _two_workers(api, env, processes, "worker-3", "worker-4")
    repair_one = _deployment(api, "repair-repository", "repair-one")["id"]

    # Worker 4 dies (with its flow run's process) mid-batch: its repository runs again on worker 3.
    since = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(time.time() - 1))
    summary_path = tmp / "second.json"
    # The repairs are slowed (each pytest session by 5 s, a repair by about 20 s): the worker must die
    # while its run is still going, after the run's first heartbeat has reached the server, and a
    # repair of ``fees`` alone may end within the seconds that event takes to be stored.
    repositories = _repositories(tmp, "second", session_delay_s=5)
    second = processes.start("second-batch", [EQUISA, "batch", str(repositories),
                                              "--work-pool", POOL, "--json", str(summary_path)], env)

    def running_on_worker_4() -> list[str]:
        return [r["id"] for r in _batch_children(api, repair_one, since)
                if r["state"]["type"] == "RUNNING" and r["labels"].get("prefect.worker.name") == "worker-4"]

    doomed_run, *_ = _wait_for(running_on_worker_4, 180, "a repository running on worker 4", processes,
                               "worker-4")
    # Mid-run: the server has its first heartbeat (a run killed before that is not one the automation
    # can see; the batch's own deadline ends its wait for such a run).
    _wait_for(lambda: _heartbeats(api, doomed_run), 60, "the run's first heartbeat", processes, "worker-4")
    victim = workers["worker-4"]
    doomed = [victim.pid, *_descendants(victim.pid)]
    for pid in reversed(doomed):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    victim.wait(timeout=10)
    killed_in = _runs_of(api, [doomed_run])[0]["state"]["type"]
    try:
        assert second.wait(timeout=540) == 0, processes.tail("second-batch") + processes.tail("worker-3")
    finally:
        if second.poll() is None:
            os.killpg(second.pid, signal.SIGKILL)
    summary = BatchSummary.model_validate_json(summary_path.read_text())
    assert [(r.name, r.status) for r in summary.results] == [(n, "fixed") for n in NAMES]
    rerun = [r for r in summary.results if r.problems and "run again after: Crashed" in r.problems[-1]]
    assert len(rerun) == 1, ([r.problems for r in summary.results], f"the run killed was {killed_in}")
    assert "no heartbeat for 40 s" in rerun[0].problems[-1]
    last = _runs_of(api, [r.flow_run_id for r in summary.results])
    assert {r["labels"]["prefect.worker.name"] for r in last
            if r["id"] == rerun[0].flow_run_id} == {"worker-3"}
    assert len(_repair_rows(env["EQUISA_DB"])) >= 4
    json.loads(summary_path.read_text())  # the summary is whole

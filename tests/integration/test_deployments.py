"""EQUISA as a deployment: a real ``prefect server start``, a process work pool, two workers, the
deployments of ``deployments/prefect.yaml``, the nightly batch over three example repositories, a
CI failure posted with ``equisa trigger`` that the deployment trigger turns into a repair, and the
Prefect UI's page of the batch run rendered by headless Chromium.

Every process the test starts runs in its own session and is killed by its process group's id at
the end, even when an assertion fails.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
EQUISA = shutil.which("equisa") or str(Path(sys.executable).with_name("equisa"))
PREFECT = str(Path(sys.executable).with_name("prefect"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Processes:
    """Processes started by the test, each in its own session, killed by process group at the end."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.started: list[subprocess.Popen] = []

    def start(self, name: str, command: list[str], env: dict[str, str], cwd: Path = ROOT) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "w")
        process = subprocess.Popen(command, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        self.started.append(process)
        return process

    def stop_all(self) -> None:
        for process in reversed(self.started):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for process in self.started:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)

    def tail(self, name: str, lines: int = 40) -> str:
        path = self.logs / f"{name}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


@pytest.fixture
def server(tmp_path) -> Iterator[tuple[str, dict[str, str], Processes]]:
    """A fresh Prefect server on 127.0.0.1 (own PREFECT_HOME and port), its URL, env and process list."""
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "EQUISA_"))}
    env.update({
        "PREFECT_HOME": str(tmp_path / "prefect-home"),
        "PREFECT_API_URL": api,
        "PREFECT_SERVER_API_HOST": "127.0.0.1",
        "PREFECT_SERVER_API_PORT": str(port),
        "PREFECT_UI_API_URL": api,
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_LOCAL_STORAGE_PATH": str(tmp_path / "storage"),
        "PREFECT_WORKER_QUERY_SECONDS": "2",
        "PREFECT_LOGGING_LEVEL": "INFO",
        "EQUISA_WORKSPACES": str(tmp_path / "workspaces"),
        "EQUISA_REPORTS": str(tmp_path / "reports"),
        "EQUISA_DB": str(tmp_path / "history.duckdb"),
        "EQUISA_ARTIFACTS": str(tmp_path / "artifacts"),
        "EQUISA_SPOOL": str(tmp_path / "spool"),
        "PWD": str(ROOT),
        # For the git pull step (deployments/prefect.yaml's git_checkout): workers clone EQUISA from here.
        "EQUISA_GIT_URL": ROOT.as_uri(),
        "COLUMNS": "200",
    })
    logs = tmp_path / "logs"
    logs.mkdir()
    processes = Processes(logs)
    try:
        command = [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)]
        processes.start("server", command, env)
        _wait_for(lambda: _healthy(api), 180, "the Prefect server to answer", processes, "server")
        yield api, env, processes
    finally:
        processes.stop_all()


def _healthy(api: str) -> bool:
    try:
        return httpx.get(f"{api}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _wait_for(check: Callable[[], Any], seconds: float, what: str, processes: Processes, log: str) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(1)
    pytest.fail(f"timed out waiting for {what}; {log} log:\n{processes.tail(log)}")


def _flow_runs(api: str, deployment_id: str) -> list[dict]:
    body = {"deployments": {"id": {"any_": [deployment_id]}}, "sort": "EXPECTED_START_TIME_ASC"}
    return httpx.post(f"{api}/flow_runs/filter", json=body, timeout=10).json()


def _deployment(api: str, flow: str, name: str) -> dict:
    response = httpx.get(f"{api}/deployments/name/{flow}/{name}", timeout=10)
    assert response.status_code == 200, response.text
    return response.json()


def _created_run(api: str, deployment_id: str) -> dict | None:
    response = httpx.post(f"{api}/deployments/{deployment_id}/create_flow_run", json={}, timeout=30)
    if response.status_code in (200, 201):
        return response.json()
    print(f"create_flow_run answered {response.status_code}: {response.text[:500]}")
    return None


def _finished(api: str, run_id: str) -> dict | None:
    run = httpx.get(f"{api}/flow_runs/{run_id}", timeout=10).json()
    return run if run["state"]["type"] in FINAL else None


def _artifacts(api: str, run_id: str) -> list[dict]:
    body = {"artifacts": {"flow_run_id": {"any_": [run_id]}}}
    return httpx.post(f"{api}/artifacts/filter", json=body, timeout=10).json()


def _children(api: str, run_id: str, flow_name: str) -> list[dict]:
    """Flow runs named ``flow_name`` whose parent task belongs to the run ``run_id``."""
    tasks = httpx.post(f"{api}/task_runs/filter", json={"flow_runs": {"id": {"any_": [run_id]}}},
                       timeout=10).json()
    ids = [t["id"] for t in tasks]
    runs = httpx.post(f"{api}/flow_runs/filter", json={"flow_runs": {"parent_task_run_id": {"any_": ids}}},
                      timeout=10).json() if ids else []
    flows = {f["id"]: f["name"] for f in httpx.post(f"{api}/flows/filter", json={}, timeout=10).json()}
    return [r for r in runs if flows.get(r["flow_id"]) == flow_name]


def _png_pixels_distinct(png: bytes) -> int:
    """How many distinct colours the PNG's pixels have (stdlib decoder: 8-bit RGB/RGBA, non-interlaced)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    offset, idat, width = 8, b"", 0
    height = depth = colour = 0
    while offset < len(png):
        length, kind = struct.unpack(">I4s", png[offset:offset + 8])
        data = png[offset + 8:offset + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", data[:10])
        elif kind == b"IDAT":
            idat += data
        offset += 12 + length
    assert depth == 8 and colour in (2, 6), (depth, colour)
    channels = 3 if colour == 2 else 4
    stride = width * channels
    raw = zlib.decompress(idat)
    previous = bytearray(stride)
    colours: set[bytes] = set()
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + ((left + up) >> 1)) & 0xFF
            elif kind == 4:
                upper_left = previous[i - channels] if i >= channels else 0
                p = left + up - upper_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - upper_left)
                nearest = left if pa <= pb and pa <= pc else up if pb <= pc else upper_left
                line[i] = (line[i] + nearest) & 0xFF
        if row % 8 == 0:  # a sample of rows is enough to tell a rendered page from a blank one
            colours.update(bytes(line[i:i + 3]) for i in range(0, stride, channels))
        previous = line
    return len(colours)


def _chromium(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-dev-shm-usage", "--virtual-time-budget=20000", *args]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def test_nightly_batch_and_ci_trigger_on_a_prefect_server_with_two_workers(server, tmp_path):
    api, env, processes = server

    deployed = subprocess.run([EQUISA, "deploy"], env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=300)
    assert deployed.returncode == 0, deployed.stderr + deployed.stdout
    pool = httpx.get(f"{api}/work_pools/equisa-process", timeout=10).json()
    assert pool["type"] == "process"

    for name in ("worker-1", "worker-2"):
        processes.start(name, [PREFECT, "worker", "start", "--pool", "equisa-process", "--name", name,
                               "--type", "process"], env)
    _wait_for(lambda: len([w for w in httpx.post(f"{api}/work_pools/equisa-process/workers/filter", json={},
                                                 timeout=10).json() if w["status"] == "ONLINE"]) >= 2,
              90, "two workers online", processes, "worker-2")

    nightly = _deployment(api, "batch", "nightly-batch")
    assert nightly["schedules"] and nightly["schedules"][0]["schedule"]["cron"] == "0 2 * * *"
    assert nightly["schedules"][0]["schedule"]["timezone"] == "UTC"  # the default of the settings
    # Seen once under load: the server answered the creation with an error body (no "id"); it is
    # asked again until it creates the run, and a lasting error shows its body.
    run = _wait_for(lambda: _created_run(api, nightly["id"]), 60, "the nightly batch's flow run",
                    processes, "worker-1")
    batch_run = _wait_for(lambda: _finished(api, run["id"]), 600, "the nightly batch", processes, "worker-1")
    assert batch_run["state"]["type"] == "COMPLETED", (batch_run["state"], processes.tail("worker-1"),
                                                      processes.tail("worker-2"))

    artifacts = _artifacts(api, run["id"])
    summary = next(a for a in artifacts if a["key"] == "batch-summary")
    rows = summary["data"] if isinstance(summary["data"], list) else json.loads(summary["data"])
    assert {(r["repository"], r["status"]) for r in rows} == {
        ("gradebook", "fixed"), ("pagination", "fixed"),
        # no passing test calls Item.receive: nothing outside the failing tests to compare it on
        ("inventory", "plausible_only")}
    children = _children(api, run["id"], "repair-repository")
    assert len(children) == 3 and all(c["state"]["type"] == "COMPLETED" for c in children)
    reports = sorted((tmp_path / "reports").rglob("*.json"))
    assert {p.stem for p in reports} == {"gradebook", "pagination", "inventory"}
    report = json.loads(next(p for p in reports if p.stem == "inventory").read_text())
    assert report["result"]["target"] == "inventory.stock.Item.receive"
    assert "+        self.on_hand += quantity" in report["repair"]["diff"]

    # The UI's page of the batch run, rendered headless: the run and its artifacts.
    page = f"http://127.0.0.1:{env['PREFECT_SERVER_API_PORT']}/runs/flow-run/{run['id']}?tab=Artifacts"
    shot = tmp_path / "batch-run.png"
    done = _chromium(["--window-size=1400,1000", f"--screenshot={shot}", page])
    assert shot.exists() and shot.stat().st_size > 10_000, done.stderr[-2000:]
    assert _png_pixels_distinct(shot.read_bytes()) > 20, "the screenshot is blank"

    # The CI deployment again, now pulling EQUISA with git (a worker without the checkout would).
    spec = (ROOT / "deployments" / "prefect.yaml").read_text()
    anchor = "    entrypoint: flows/repository.py:repair_repository\n    tags: [equisa, ci]\n"
    assert anchor in spec
    variant = tmp_path / "prefect-git-pull.yaml"
    variant.write_text(spec.replace(anchor, anchor + "    pull: *git_checkout\n"))
    redeployed = subprocess.run([PREFECT, "--no-prompt", "deploy", "--name", "repair-on-ci-failure",
                                 "--prefect-file", str(variant)], env=env, cwd=ROOT, capture_output=True,
                                text=True, timeout=300)
    assert redeployed.returncode == 0, redeployed.stdout + redeployed.stderr
    ci = _deployment(api, "repair-repository", "repair-on-ci-failure")
    assert "prefect.deployments.steps.git_clone" in ci["pull_steps"][0], ci["pull_steps"]

    # A CI failure: `equisa trigger` posts the event; the deployment trigger starts the repair.
    failing = "tests/test_grades.py::test_exactly_ninety_is_an_a"
    gradebook = str(ROOT / "examples" / "gradebook")
    triggered = subprocess.run(
        [EQUISA, "trigger", "--repository", gradebook, "--failing-tests", failing,
         "--ci-run-url", "https://ci.example.com/acme/gradebook/runs/42", "--no-llm"],
        env=env, capture_output=True, text=True, timeout=120)
    assert triggered.returncode == 0, triggered.stderr
    ci_run = _wait_for(lambda: (_flow_runs(api, ci["id"]) or [None])[0], 120, "the triggered flow run",
                       processes, "server")
    entry = ci_run["parameters"]["params"]["entry"]
    assert (entry["source"], entry["failing_tests"], entry["ci_run_url"], entry["llm"]) == (
        gradebook, [failing], "https://ci.example.com/acme/gradebook/runs/42", False)
    finished = _wait_for(lambda: _finished(api, ci_run["id"]), 400, "the triggered repair", processes,
                         "worker-1")
    assert finished["state"]["type"] == "COMPLETED", finished["state"]
    ci_artifacts = _artifacts(api, ci_run["id"])
    markdown = next(a for a in ci_artifacts if a["key"] == "repository-result")["data"]
    assert "**fixed**" in markdown and "runs/42" in markdown and "gradebook.grades.letter" in markdown


def test_plain_prefect_deploy_of_the_file_installs_every_deployment_and_the_nightly_schedule(server):
    """The README's Prefect-only way, with none of the variables ``equisa deploy`` sets."""
    api, env, processes = server
    plain = {k: v for k, v in env.items() if not k.startswith("EQUISA_")}
    pool = subprocess.run([PREFECT, "work-pool", "create", "equisa-process", "--type", "process"], env=plain,
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert pool.returncode == 0, pool.stdout + pool.stderr
    command = [PREFECT, "--no-prompt", "deploy", "--all", "--prefect-file", "deployments/prefect.yaml"]
    deployed = subprocess.run(command, env=plain, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr

    nightly = _deployment(api, "batch", "nightly-batch")
    schedules = [(s["schedule"]["cron"], s["schedule"]["timezone"], s["active"])
                 for s in nightly["schedules"]]
    assert schedules == [("0 2 * * *", "UTC", True)]
    assert nightly["work_pool_name"] == "equisa-process"
    for flow, name in (("repair-repository", "repair-on-ci-failure"), ("repair-repository", "repair-one")):
        deployment = _deployment(api, flow, name)
        assert deployment["work_pool_name"] == "equisa-process" and not deployment["schedules"]
    scheduled = _wait_for(lambda: _flow_runs(api, nightly["id"]), 60, "the nightly batch's scheduled runs",
                          processes, "server")
    assert all(run["state"]["type"] == "SCHEDULED" for run in scheduled)

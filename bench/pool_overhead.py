"""Orchestration overhead of a batch spread over a work pool's workers: 2 workers against 1, and
each against the in-process batch of the same parallelism.

Run from the repository root::

    uv run python bench/pool_overhead.py [--repositories 20] [--out bench/results/pool_overhead.json]

What it does (issue 21, "Done means", bench item):

1. copies the ``fees`` fixture (``tests/fixtures/fees``: a one-line bug, a few tests) into
   ``--repositories`` folders, each with a one-line marker so that no copy shares another's cache,
   and writes a repositories file (``llm: false``);
2. starts ``prefect server start`` on 127.0.0.1 in a temporary ``PREFECT_HOME`` and runs
   ``equisa deploy`` to a process work pool;
3. times, one after another, with every sandboxed run forced (``--no-cache``), the whole
   ``equisa batch`` command:

   - ``in-process c=1`` and ``in-process c=2``: the batch's own thread pool, as without a work pool;
   - ``pool, 1 worker`` and ``pool, 2 workers``: ``--work-pool``, with that many
     ``prefect worker start --type process --limit 1`` workers (so the parallelism matches);

4. reports the wall times and the ratios: **speed-up** ``wall(1 worker) / wall(2 workers)``, and the
   **per-repository overhead** of deployment runs ``(wall(pool, k workers) - wall(in-process c=k)) /
   repositories`` (a flow-run process per repository, the worker's polling, the batch's polling),
   also as a fraction of the in-process wall time.

On the 2-core machine the two workers share the cores with the server and the batch, so the
speed-up says more about orchestration than about scaling; on N machines each worker has its own.
It asserts nothing: the exit status is 0 unless the benchmark itself could not run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
FEES = ROOT / "tests" / "fixtures" / "fees"
BIN = Path(sys.executable).parent
POOL = "equisa-bench"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(command, env=env, cwd=ROOT, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def _wait_healthy(api: str, seconds: float) -> None:
    import httpx

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{api}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise SystemExit(f"the Prefect server at {api} did not answer in {seconds:g} s")


def _repositories(root: Path, count: int) -> Path:
    for i in range(count):
        folder = root / f"fees-{i:02d}"
        shutil.copytree(FEES, folder)
        (folder / "fees.py").write_text((folder / "fees.py").read_text() + f"\n# copy {i}\n")
    listing = root / "repositories.yaml"
    listing.write_text("defaults: {llm: false}\nrepositories:\n"
                       + "".join(f"  - source: fees-{i:02d}\n" for i in range(count)))
    return listing


def _batch(env: dict[str, str], listing: Path, out: Path, *extra: str) -> tuple[float, dict[str, int]]:
    started = time.monotonic()
    command = [str(BIN / "equisa"), "batch", str(listing), "--no-cache", "--json", str(out), *extra]
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=7200)
    wall = time.monotonic() - started
    if not out.exists():
        raise SystemExit(f"equisa batch {' '.join(extra)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return round(wall, 2), json.loads(out.read_text())["counts"]


def main() -> int:
    """Run the four batches and print and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repositories", type=int, default=20)
    parser.add_argument("--out", type=Path, default=BENCH / "results" / "pool_overhead.json")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="equisa-pool-bench-", dir="/var/tmp"))
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "EQUISA_"))}
    env.update({"PREFECT_HOME": str(tmp / "prefect-home"), "PREFECT_API_URL": api,
                "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                "PREFECT_LOCAL_STORAGE_PATH": str(tmp / "storage"),
                "PREFECT_WORKER_QUERY_SECONDS": "2", "EQUISA_WORKSPACES": str(tmp / "workspaces"),
                "EQUISA_REPORTS": str(tmp / "reports"), "EQUISA_DB": str(tmp / "history.duckdb"),
                "EQUISA_ARTIFACTS": str(tmp / "artifacts"), "EQUISA_SPOOL": str(tmp / "spool")})
    listing = _repositories(tmp / "repos", args.repositories)
    server = _start([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                    env, tmp / "server.log")
    figures: dict[str, dict] = {}
    try:
        _wait_healthy(api, 180)
        subprocess.run([str(BIN / "equisa"), "deploy", "--pool", POOL], env=env, cwd=ROOT, check=True,
                       capture_output=True, timeout=600)
        for c in (1, 2):
            wall, counts = _batch(env, listing, tmp / f"inprocess-{c}.json", "--concurrency", str(c))
            figures[f"in-process c={c}"] = {"wall_s": wall, "counts": counts}
        workers: list[subprocess.Popen] = []
        try:
            for k in (1, 2):
                while len(workers) < k:
                    n = len(workers) + 1
                    workers.append(_start([str(BIN / "prefect"), "worker", "start", "--pool", POOL, "--type",
                                           "process", "--limit", "1", "--name", f"bench-{n}"], env,
                                          tmp / f"worker-{n}.log"))
                time.sleep(10)  # the new worker polls
                wall, counts = _batch(env, listing, tmp / f"pool-{k}.json", "--work-pool", POOL)
                figures[f"pool, {k} worker{'s' if k > 1 else ''}"] = {"wall_s": wall, "counts": counts}
        finally:
            for worker in workers:
                _stop(worker)
    finally:
        _stop(server)
    n = args.repositories
    ratios = {
        "speed-up, 2 workers vs 1": round(figures["pool, 1 worker"]["wall_s"]
                                          / figures["pool, 2 workers"]["wall_s"], 2),
        "speed-up, in-process c=2 vs c=1": round(figures["in-process c=1"]["wall_s"]
                                                 / figures["in-process c=2"]["wall_s"], 2),
    }
    for k, label in ((1, "pool, 1 worker"), (2, "pool, 2 workers")):
        base = figures[f"in-process c={k}"]["wall_s"]
        extra = figures[label]["wall_s"] - base
        ratios[f"per-repository overhead, {k} worker(s), s"] = round(extra / n, 2)
        ratios[f"wall ratio, {label} / in-process c={k}"] = round(figures[label]["wall_s"] / base, 2)
    result = {"repositories": n, "cores": os.cpu_count(), "figures": figures, "ratios": ratios}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print("| run | wall (s) | statuses |\n|---|---:|---|")
    for name, figure in figures.items():
        statuses = ", ".join(f"{s} {c}" for s, c in figure["counts"].items() if c)
        print(f"| {name} | {figure['wall_s']:.1f} | {statuses} |")
    print("\n| ratio | value |\n|---|---:|")
    for name, value in ratios.items():
        print(f"| {name} | {value} |")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

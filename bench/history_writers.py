"""Concurrent history writers: EQUISA's turn-taking next to DuckDB's own lock with retries.

Eight writer processes start at the same moment and each records ``--runs`` real runs (the
recorded repair of ``examples/invoicing``: ~370 rows each) into one DuckDB file, two ways:

- ``equisa``: ``tasks.storage.history.write_run`` — writers take turns through ``flock`` on
  ``<db>.lock``; one short transaction per run;
- ``retry`` (the peer: what a writer does without a turn-taking design): connect directly and,
  on DuckDB's ``Conflicting lock`` error, sleep with the same capped exponential backoff and try
  again; then the same migration and transaction.

Rounds alternate the two so both share the machine's noise. Reported per design: wall time of a
round (median), each run's write latency from its first attempt (median, p90, max), the lock
conflicts met, and whether every row arrived. Writes ``bench/results/history_writers.json``.

    uv run python bench/history_writers.py [--writers 8] [--runs 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "tests" / "data" / "repair_invoicing.json"

WRITER = textwrap.dedent("""
    import json, random, sys, time
    from datetime import UTC, datetime
    from pathlib import Path
    import duckdb
    from equisa_core.history import RunRecord
    from tasks.storage import history
    design, db, spool, start, index, runs, data = sys.argv[1:]
    db, report = Path(db), json.loads(Path(data).read_text())
    latencies, conflicts = [], 0

    def direct(record):
        global conflicts
        delay = 0.05
        while True:
            try:
                connection = duckdb.connect(str(db))
                break
            except duckdb.Error as error:
                if "lock" not in str(error).lower():
                    raise
                conflicts += 1
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 1.0)
        try:
            history._migrate(connection, db)
            history._insert(connection, record)
        finally:
            connection.close()

    while not Path(start).exists():
        time.sleep(0.002)
    for n in range(int(runs)):
        record = RunRecord(run_id=f"w{index}-{n}", kind="repair", repository=f"/repos/r{index}",
                           report=report, finished_at=datetime.now(UTC))
        began = time.perf_counter()
        if design == "equisa":
            history.write_run(db, record, Path(spool))
        else:
            direct(record)
        latencies.append(time.perf_counter() - began)
    print(json.dumps({"latencies": latencies, "conflicts": conflicts}))
""")


def one_round(design: str, writers: int, runs: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="equisa-bench-history-") as folder:
        base = Path(folder)
        db, start = base / "history.duckdb", base / "go"
        from tasks.storage.history import write_run

        write_run(db, None, base / "spool")  # both start from a migrated file: only the writing differs
        procs = [subprocess.Popen([sys.executable, "-c", WRITER, design, str(db), str(base / "spool"),
                                   str(start), str(i), str(runs), str(REPORT)], cwd=ROOT,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for i in range(writers)]
        time.sleep(1.5)  # every interpreter imported and waiting
        began = time.perf_counter()
        start.touch()
        outputs = [p.communicate(timeout=900) for p in procs]
        wall = time.perf_counter() - began
        failed = [err.strip().splitlines()[-1] for (out, err), p in zip(outputs, procs, strict=True)
                  if p.returncode != 0]
        stats = [json.loads(out) for (out, _), p in zip(outputs, procs, strict=True) if p.returncode == 0]
        import duckdb

        connection = duckdb.connect(str(db), read_only=True)
        rows = connection.execute("SELECT count(*) FROM runs").fetchone()[0]
        scores = connection.execute("SELECT count(*) FROM node_scores").fetchone()[0]
        connection.close()
    return {"design": design, "wall_s": wall, "latencies": [x for s in stats for x in s["latencies"]],
            "conflicts": sum(s["conflicts"] for s in stats), "failed_writers": failed,
            "runs_present": rows, "node_scores_present": scores}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "history_writers.json")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from equisa_core.history import RunRecord, rows_for_run

    sample = rows_for_run(RunRecord(run_id="x", kind="repair", repository="/r",
                                    report=json.loads(REPORT.read_text()), finished_at="2026-01-01T00:00:00"))
    rows_per_run = sum(len(v) for v in sample.tables.values())
    scores_per_run = len(sample.tables["node_scores"])
    rounds = []
    for index in range(args.rounds):
        for design in (("equisa", "retry") if index % 2 == 0 else ("retry", "equisa")):
            result = one_round(design, args.writers, args.runs)
            rounds.append(result)
            print(f"round {index + 1} {design:7s} wall {result['wall_s']:.2f}s "
                  f"conflicts {result['conflicts']} runs {result['runs_present']}/{args.writers * args.runs} "
                  f"failed {len(result['failed_writers'])}", flush=True)
    summary = {}
    expected = args.writers * args.runs
    for design in ("equisa", "retry"):
        mine = [r for r in rounds if r["design"] == design]
        latencies = sorted(x for r in mine for x in r["latencies"])
        summary[design] = {
            "wall_s_median": statistics.median(r["wall_s"] for r in mine),
            "latency_s_median": statistics.median(latencies) if latencies else None,
            "latency_s_p90": latencies[int(0.9 * (len(latencies) - 1))] if latencies else None,
            "latency_s_max": latencies[-1] if latencies else None,
            "lock_conflicts": sum(r["conflicts"] for r in mine),
            "failed_writers": sum(len(r["failed_writers"]) for r in mine),
            "all_rows_present": all(r["runs_present"] == expected
                                    and r["node_scores_present"] == expected * scores_per_run for r in mine),
        }
    ratio = summary["equisa"]["wall_s_median"] / summary["retry"]["wall_s_median"]
    print(f"\n{'design':8s} {'wall (median)':>14s} {'write p50':>10s} {'p90':>8s} {'max':>8s} "
          f"{'conflicts':>10s} {'failed':>7s} {'all rows':>9s}")
    for design, s in summary.items():
        print(f"{design:8s} {s['wall_s_median']:13.2f}s {s['latency_s_median']:9.3f}s "
              f"{s['latency_s_p90']:7.3f}s {s['latency_s_max']:7.3f}s {s['lock_conflicts']:10d} "
              f"{s['failed_writers']:7d} "
              f"{str(s['all_rows_present']):>9s}")
    print(f"equisa / retry wall time: {ratio:.2f}x")
    import duckdb

    record = {
        "benchmark": "history_writers", "writers": args.writers, "runs_per_writer": args.runs,
        "rounds": args.rounds, "rows_per_run": rows_per_run, "summary": summary,
        "equisa_over_retry_wall": ratio, "rounds_detail": [{k: v for k, v in r.items() if k != "latencies"}
                                                           for r in rounds],
        "environment": {"python": platform.python_version(), "duckdb": duckdb.__version__,
                        "cpus": os.cpu_count(), "platform": platform.platform(),
                        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()

"""What the test-generation agent adds to Discovery (``--testgen``), and what it costs.

Run from the repository root::

    uv run python bench/discovery_testgen.py [--repeats 2] [--out bench/results/discovery_testgen.json]

For each repository (the four examples, and the ``ambiguous`` and ``streamed`` test fixtures) the
``discovery`` flow runs in deterministic mode with ``testgen`` off (the peer) and on, interleaved
(off, on, off, on, ...) so both share the machine's noise, every sandboxed run forced (``no_cache``),
after one untimed warm-up run per repository. Per run it records the wall time, the ambiguity
groups before and after, and the tests kept (testgen's apart). The figure is the ratio of the
median wall times (on / off) per repository, and over all of them the ratio of the summed medians;
next to it, the groups testgen split that carving left whole.

It asserts nothing: the exit status is 0 unless the benchmark itself could not run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(1, str(REPO))
from tracing_overhead import environment as tracing_environment  # noqa: E402  (shared helpers)
from tracing_overhead import finish_report  # noqa: E402

DEFAULT_OUT = REPO / "bench" / "results" / "discovery_testgen.json"
REPOSITORIES = {
    "invoicing": REPO / "examples" / "invoicing",
    "gradebook": REPO / "examples" / "gradebook",
    "inventory": REPO / "examples" / "inventory",
    "pagination": REPO / "examples" / "pagination",
    "ambiguous (fixture)": REPO / "tests" / "fixtures" / "ambiguous",
    "streamed (fixture)": REPO / "tests" / "fixtures" / "streamed",
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=2, help="timed runs per setting (default 2)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    args = parser.parse_args(argv)
    console = Console() if Console().is_terminal else Console(width=160)
    started = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="equisa-discovery-bench-", dir="/var/tmp"))
    os.environ.update({
        "PREFECT_HOME": str(scratch / "prefect-home"),
        "PREFECT_LOCAL_STORAGE_PATH": str(scratch / "storage"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "EQUISA_WORKSPACES": str(scratch / "workspaces"),
        "EQUISA_DB": str(scratch / "history.duckdb"),
        "EQUISA_ARTIFACTS": str(scratch / "artifacts"),
        "EQUISA_SPOOL": str(scratch / "spool"),
    })
    try:
        report = run(args, console)
        finish_report(console, report, print_table, args.out, started)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


def _one(path: Path, testgen: bool) -> dict:
    from flows.discovery import discovery
    from tasks.run.parameters import DiscoveryParameters

    start = time.perf_counter()
    found = discovery(DiscoveryParameters(path=str(path), llm=False, testgen=testgen, no_cache=True))
    wall = time.perf_counter() - start
    report = found.report
    return {
        "wall_s": round(wall, 2),
        "groups_before": list(report.group_sizes_before),
        "groups_after": list(report.group_sizes_after),
        "kept": report.generated,
        "testgen_proposed": sum(r.testgen_proposed for r in report.rounds),
        "testgen_kept": sum(r.testgen_kept for r in report.rounds),
        "stopped_because": report.stopped_because,
    }


def run(args: argparse.Namespace, console: Console) -> dict:
    from prefect.testing.utilities import prefect_test_harness

    environment = tracing_environment(shutil.which("uv") or "uv")
    results: dict[str, dict] = {}
    with prefect_test_harness(server_startup_timeout=180):
        for name, path in REPOSITORIES.items():
            console.print(f"{name}: warm-up, then {args.repeats} x (off, on)")
            _one(path, testgen=False)
            runs: dict[str, list[dict]] = {"off": [], "on": []}
            for _ in range(args.repeats):
                runs["off"].append(_one(path, testgen=False))
                runs["on"].append(_one(path, testgen=True))
            off = statistics.median(r["wall_s"] for r in runs["off"])
            on = statistics.median(r["wall_s"] for r in runs["on"])
            results[name] = {"runs": runs, "median_off_s": off, "median_on_s": on,
                             "ratio_on_off": round(on / off, 2) if off else None}
    total_off = sum(r["median_off_s"] for r in results.values())
    total_on = sum(r["median_on_s"] for r in results.values())
    return {
        "benchmark": "discovery_testgen",
        "environment": environment,
        "repeats": args.repeats,
        "repositories": results,
        "ratio_on_off_all": round(total_on / total_off, 2) if total_off else None,
        "groups_split_only_with_testgen": {
            name: len(r["runs"]["off"][-1]["groups_after"]) - len(r["runs"]["on"][-1]["groups_after"])
            for name, r in results.items()
        },
    }


def print_table(console: Console, report: dict) -> None:
    table = Table(title="Discovery with testgen off (peer) and on, deterministic mode, no cache")
    for column in ("repository", "off s", "on s", "on/off", "groups before", "after (off)", "after (on)",
                   "kept off", "kept on (testgen)", "testgen proposed"):
        table.add_column(column, justify="left" if column == "repository" else "right")
    for name, r in report["repositories"].items():
        off, on = r["runs"]["off"][-1], r["runs"]["on"][-1]
        table.add_row(name, f"{r['median_off_s']:.1f}", f"{r['median_on_s']:.1f}", f"{r['ratio_on_off']:.2f}",
                      str(off["groups_before"]), str(off["groups_after"]), str(on["groups_after"]),
                      str(off["kept"]), f"{on['kept']} ({on['testgen_kept']})", str(on["testgen_proposed"]))
    console.print(table)
    console.print(f"all repositories: on/off {report['ratio_on_off_all']}")


if __name__ == "__main__":
    raise SystemExit(main())

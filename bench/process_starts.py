"""Sandboxed process starts per localization (issue 48 item 2): how many pytest processes one
``equisa localize --no-llm --no-cache`` starts, and what each was started for.

Run from the repository root::

    uv run python bench/process_starts.py [--bugs scrapy-1,luigi-10,fastapi-12] [--rounds 3]
                                          [--out bench/results/process_starts.json]

Targets: the bundled ``examples/invoicing``, and the BugsInPy bugs named by ``--bugs`` that the
real-bug repair benchmark has prepared (``python -m bench.realrepair prepare --sources bugsinpy``:
their buggy checkout, interpreter and test selection are read from its ``case.json``; a bug not
prepared is reported as skipped). Each command runs as a whole process with its own data folder,
Prefect home and scratch folder (``$EQUISA_SCRATCH``), the shared local server (started by the
first command, stopped at the end) and ``EQUISA_WARM=0`` (the command's own process), after one
untimed warm-up per target. A process start is a new ``equisa-run-*`` folder in the scratch folder
(the local sandbox makes one per process it starts, ``LocalSandbox.launch``); while it exists, the
bench reads the pytest process's ``--equisa-*`` options from ``/proc`` to name its kind: ``trace``
(a trace shard), ``mutants`` (a screening run of its own), ``record``, or ``other``. A screening
served by a trace shard's fork (``tasks.sandbox.served_runs``) starts no process, so it does not
count. Recorded per run: the starts and their kinds, the whole-process seconds, the exit status,
and the ranking's first five. It asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
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
from oneshot_startup import UV, clean_environment, stop_shared  # noqa: E402  (shared helpers)
from tracing_overhead import environment, finish_report  # noqa: E402

EXAMPLE = "examples/invoicing"
REALREPAIR_BUGS = Path.home() / ".cache" / "equisa-bench" / "realrepair" / "bugs"
#: Seconds between two looks at the scratch folder: a sandboxed pytest process lives far longer.
POLL_S = 0.01


def targets(bugs: list[str], folder: Path = REALREPAIR_BUGS) -> tuple[dict[str, list[str]], list[str]]:
    """The localize arguments of the example and of each prepared bug; the bugs not prepared."""
    found: dict[str, list[str]] = {"invoicing": [EXAMPLE]}
    skipped = []
    for bug in bugs:
        case_file = folder / f"bugsinpy-{bug}" / "case.json"
        if not case_file.is_file():
            skipped.append(bug)
            continue
        case = json.loads(case_file.read_text())
        found[bug] = [case["buggy"], "--python", case["python"], "--tests", *case["selection"]]
    return found, skipped


def kind_of(options: set[str]) -> str:
    """A sandboxed run's kind, from its pytest process's ``--equisa-*`` option names."""
    if "--equisa-mutants" in options:
        return "mutants"
    if "--equisa-record" in options:
        return "record"
    if options & {"--equisa-trace", "--equisa-shard", "--equisa-serve"}:
        return "trace"
    return "other"


def _options_of(folder_name: str) -> set[str] | None:
    """The ``--equisa-*`` option names of the pytest process started in ``folder_name``, if alive."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"pytest" in argv and any(folder_name.encode() in arg for arg in argv):
            return {arg.decode().split("=", 1)[0] for arg in argv if arg.startswith(b"--equisa-")}
    return None


def run_once(arguments: list[str], env: dict[str, str], scratch: Path, out: Path) -> dict:
    """One whole ``equisa localize`` process: its starts, their kinds, seconds, status and ranking."""
    out.unlink(missing_ok=True)
    command = [UV, "run", "--no-sync", "equisa", "localize", *arguments, "--no-llm", "--no-cache",
               "--json", str(out)]
    options: dict[str, set[str] | None] = {}
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    while process.poll() is None:
        for folder in scratch.glob("equisa-run-*"):
            if options.get(folder.name) is None:
                options[folder.name] = _options_of(folder.name)
        time.sleep(POLL_S)
    _, stderr = process.communicate()
    seconds = time.perf_counter() - started
    report = json.loads(out.read_text()) if out.is_file() else {}
    kinds = [kind_of(found) if found is not None else "unseen" for found in options.values()]
    return {"returncode": process.returncode, "starts": len(options), "kinds": sorted(kinds),
            "seconds": round(seconds, 2), "top5": [r["fqn"] for r in report.get("ranking", [])[:5]],
            "stopped_because": report.get("stopped_because"),
            "problem": None if report else stderr.strip().splitlines()[-1:]}


def print_table(console: Console, report: dict) -> None:
    table = Table(title=f"sandboxed process starts per `equisa localize --no-cache` ({report['label']})")
    for column in ("target", "starts (per run)", "kinds (first run)", "median s", "same top-5"):
        table.add_column(column)
    for name, row in report["targets"].items():
        starts = " ".join(str(r["starts"]) for r in row["runs"])
        table.add_row(name, starts, ", ".join(row["runs"][0]["kinds"]), f"{row['median_s']:.2f}",
                      str(row["same_top5"]))
    console.print(table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bugs", default="scrapy-1,luigi-10,fastapi-12",
                        help="prepared BugsInPy bugs, comma-separated (default scrapy-1,luigi-10,fastapi-12)")
    parser.add_argument("--rounds", type=int, default=3, help="timed runs per target (default 3)")
    parser.add_argument("--label", default="", help="a name for this run in the report (default: the commit)")
    parser.add_argument("--out", type=Path, default=BENCH / "results" / "process_starts.json")
    args = parser.parse_args(argv)
    console = Console()
    started = time.perf_counter()
    chosen, skipped = targets([b for b in args.bugs.split(",") if b])
    root = Path(tempfile.mkdtemp(prefix="equisa-process-starts-"))
    env = clean_environment(root)
    env.update({"EQUISA_SCRATCH": str(root / "scratch"), "EQUISA_WARM": "0"})
    (root / "scratch").mkdir()
    report: dict = {"environment": environment(UV), "rounds": args.rounds, "skipped": skipped, "targets": {}}
    report["label"] = args.label or report["environment"]["git_commit"][:7]
    try:
        for name, arguments in chosen.items():
            run_once(arguments, env, root / "scratch", root / "out.json")  # warm-up: environments built
            runs = [run_once(arguments, env, root / "scratch", root / "out.json") for _ in range(args.rounds)]
            report["targets"][name] = {
                "arguments": arguments, "runs": runs,
                "median_starts": statistics.median(r["starts"] for r in runs),
                "median_s": round(statistics.median(r["seconds"] for r in runs), 2),
                "same_top5": len({tuple(r["top5"]) for r in runs}) == 1,
            }
            median = report["targets"][name]["median_s"]
            console.print(f"{name}: starts {[r['starts'] for r in runs]}, {median} s", highlight=False)
    finally:
        stop_shared(env)
    finish_report(console, report, print_table, args.out, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

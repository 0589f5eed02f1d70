"""Whole-process time of one-shot ``equisa`` commands: Prefect's temporary server against the
shared local one, cold and warm; and where a warm command's time goes.

Run from the repository root::

    uv run python bench/oneshot_startup.py [--rounds 5] [--example examples/invoicing]
                                           [--out bench/results/oneshot_startup.json] [--no-profile]

What it does (issue 17, part 4, "as fast as SBFL for a user, counted as a whole process"):

1. makes a temporary data folder (``XDG_DATA_HOME``: the shared server's folder, artifacts,
   history), Prefect home and workspace cache, and an environment without any ``PREFECT_*`` or
   ``EQUISA_PREFECT_*`` setting, as on a fresh laptop;
2. times, as a user types them, whole processes (``uv run ...`` from start to exit, ``--rounds``
   times each after one untimed warm-up round, median reported):

   - references: ``uv run true`` and ``uv run --no-sync true`` (uv's own cost: with the
     project's ``compile-bytecode = true``, uv re-compiles the whole venv on every ``uv run``,
     astral-sh/uv#12202), ``python -c 'import prefect'`` with and without ``uv run``, and the
     example's own suite under plain ``uv run pytest -q`` and the venv's ``python -m pytest -q``
     (SBFL's floor: one pytest process);
   - ``uv run equisa localize EXAMPLE --no-llm`` and ``uv run equisa trace EXAMPLE``, each as
     ``ephemeral`` (``EQUISA_PREFECT_SERVER=ephemeral``: Prefect's temporary server, the behaviour
     before the shared server), ``cold`` (the shared server and the warm worker stopped before
     every round, so the command starts both), ``warm`` (both already running) and ``warm, own
     process`` (the server running, ``EQUISA_WARM=0``: the command imports EQUISA and Prefect
     itself, as before the warm worker);
   - ``localize --no-cache`` ephemeral, warm and warm in its own process: every sandboxed test run
     forced;

   the task cache is on otherwise, so after the warm-up round ``localize`` and ``trace`` find their
   suite runs cached in every mode alike (the one-shot re-run a user makes after an edit elsewhere);
3. profiles one warm ``localize``: ``python -X importtime`` (the heaviest imports, cumulative) and
   ``cProfile`` of the CLI process (the functions with the most cumulative time: the flow, its
   tasks, waiting for sandboxes), plus ``uv run``'s own cost (``uv run true`` against the venv's
   interpreter directly);
4. stops the shared server and the warm workers it started (``equisa server stop``) and writes
   the figures and the environment to ``--out``.

It asserts nothing: the exit status is 0 unless the benchmark itself could not run.
"""

from __future__ import annotations

import argparse
import os
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(1, str(REPO))
from tracing_overhead import environment as tracing_environment  # noqa: E402  (shared helpers)
from tracing_overhead import finish_report  # noqa: E402

from equisa_core.errors import EXIT_NOT_CONVERGED, EXIT_OK  # noqa: E402

DEFAULT_OUT = REPO / "bench" / "results" / "oneshot_startup.json"
UV = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
PYTHON = str(REPO / ".venv" / "bin" / "python")

#: ``pstats.Stats``'s table: (file, line, function) -> (primitive calls, calls, own s, cumulative s, callers).
RawStats = dict[tuple[str, int, str], tuple[int, int, float, float, dict[Any, Any]]]


def clean_environment(root: Path) -> dict[str, str]:
    """A fresh laptop's environment, with every EQUISA and Prefect path in ``root``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "EQUISA_"))}
    env.update({
        "XDG_DATA_HOME": str(root / "data"),
        "PREFECT_HOME": str(root / "prefect-home"),
        "EQUISA_WORKSPACES": str(root / "workspaces"),
        "XDG_RUNTIME_DIR": str(root / "run"),  # the warm workers' sockets: this run's own
        "COLUMNS": "160",
    })
    return env


def timed(command: list[str], env: dict[str, str], cwd: Path = REPO,
          ) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
    return time.perf_counter() - started, done


def stop_shared(env: dict[str, str]) -> None:
    subprocess.run([UV, "run", "--no-sync", "equisa", "server", "stop"], cwd=REPO, env=env,
                   capture_output=True, timeout=300, check=True)


def measure(name: str, command: list[str], env: dict[str, str], rounds: int, console: Console,
            before=None, cwd: Path = REPO, expect: str | None = None) -> dict:
    """One warm-up round, then ``rounds`` timed ones (``before`` runs untimed before each)."""
    seconds, problems = [], []
    for index in range(rounds + 1):
        if before:
            before()
        elapsed, done = timed(command, env, cwd)
        if done.returncode not in (EXIT_OK, EXIT_NOT_CONVERGED):  # localize's 25: ranked, not converged
            problems.append(f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
        if expect and expect not in done.stderr:
            problems.append(f"{expect!r} not printed: {done.stderr.strip()[:300]}")
        if index:
            seconds.append(round(elapsed, 3))
    row = {"name": name, "command": " ".join(command), "rounds": seconds,
           "median_s": round(statistics.median(seconds), 3), "min_s": min(seconds),
           "max_s": max(seconds), "problems": problems}
    console.print(f"{name}: median {row['median_s']:.2f} s {seconds}", highlight=False)
    return row


def import_costs(env: dict[str, str], example: str, top: int = 20) -> list[dict]:
    """``-X importtime`` of a warm ``equisa localize``: the modules with the most cumulative time
    among those imported at depth 0 or 1 (a package and its direct imports)."""
    done = subprocess.run([PYTHON, "-X", "importtime", "-m", "cli.main", "localize", example, "--no-llm"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    rows = []
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if match:
            rows.append({"module": match.group(4), "depth": len(match.group(3)) // 2,
                         "self_ms": int(match.group(1)) / 1000, "cumulative_ms": int(match.group(2)) / 1000})
    total = sum(r["cumulative_ms"] for r in rows if r["depth"] == 0)
    shallow = sorted((r for r in rows if r["depth"] <= 1), key=lambda r: -r["cumulative_ms"])[:top]
    return [{"module": "(all imports)", "depth": 0, "self_ms": 0, "cumulative_ms": round(total, 1)}, *shallow]


def raw_stats(stats: pstats.Stats) -> RawStats:
    """The table ``stats`` keeps in its ``stats`` attribute (pstats's own format; typeshed leaves it out)."""
    table: RawStats = vars(stats)["stats"]
    return table


def profile_costs(env: dict[str, str], example: str, folder: Path, top: int = 30) -> dict:
    """cProfile of a warm ``equisa localize`` in-process: wall time and the top functions."""
    out = folder / "localize.prof"
    started = time.perf_counter()
    subprocess.run([PYTHON, "-m", "cProfile", "-o", str(out), "-m", "cli.main", "localize", example,
                    "--no-llm"], cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - started
    stats = pstats.Stats(str(out))
    rows: list[dict[str, Any]] = []
    for (file, line, function), (_, calls, own, cumulative, _) in raw_stats(stats).items():
        rows.append({"function": f"{Path(file).name}:{line}({function})", "calls": calls,
                     "own_s": round(own, 3), "cumulative_s": round(cumulative, 3)})
    rows.sort(key=lambda r: -r["cumulative_s"])
    return {"wall_s": round(wall, 2), "top": rows[:top]}


def print_table(console: Console, report: dict) -> None:
    table = Table(title=f"One-shot whole-process time ({report['example']}, {report['rounds']} rounds)",
                  title_justify="left")
    for column in ("run", "median s", "min s", "max s", "problems"):
        table.add_column(column, justify="left" if column in ("run", "problems") else "right")
    for row in report["runs"]:
        table.add_row(row["name"], f"{row['median_s']:.2f}", f"{row['min_s']:.2f}", f"{row['max_s']:.2f}",
                      str(len(row["problems"])) if row["problems"] else "")
    console.print(table)
    for row in report.get("imports", [])[:12]:
        console.print(f"  import {row['module']:<45} {row['cumulative_ms']:8.1f} ms", highlight=False)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per run (default 5)")
    parser.add_argument("--example", default="examples/invoicing", help="the repository to localize")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    parser.add_argument("--no-profile", action="store_true", help="skip -X importtime and cProfile")
    args = parser.parse_args(argv)

    console = Console() if Console().is_terminal else Console(width=160)
    started = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="equisa-oneshot-"))
    env = clean_environment(root)
    (root / "run").mkdir(mode=0o700)
    ephemeral = {**env, "EQUISA_PREFECT_SERVER": "ephemeral"}
    own_process = {**env, "EQUISA_WARM": "0"}
    example = args.example
    localize = [UV, "run", "equisa", "localize", example, "--no-llm"]  # as a user types it
    trace = [UV, "run", "equisa", "trace", example]
    report = {"environment": tracing_environment(UV), "example": example, "rounds": args.rounds, "runs": []}
    runs = report["runs"]
    try:
        runs.append(measure("uv run true (uv's own cost)", [UV, "run", "true"], env, args.rounds, console))
        runs.append(measure("uv run --no-sync true", [UV, "run", "--no-sync", "true"], env, args.rounds,
                            console))
        runs.append(measure("python -c 'import prefect' (venv python)", [PYTHON, "-c", "import prefect"],
                            env, args.rounds, console))
        runs.append(measure("uv run python -c 'import prefect'",
                            [UV, "run", "python", "-c", "import prefect"], env, args.rounds, console))
        runs.append(measure("uv run pytest -q (plain, the example's suite)",
                            [UV, "run", "--project", str(REPO), "pytest", "-q", "-p", "no:cacheprovider"],
                            env, args.rounds, console, cwd=REPO / example))
        runs.append(measure("python -m pytest -q (venv python, the example's suite)",
                            [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                            env, args.rounds, console, cwd=REPO / example))
        for label, command in (("localize", localize), ("trace", trace)):
            runs.append(measure(f"{label} ephemeral (before)", command, ephemeral, args.rounds, console))
            runs.append(measure(f"{label} shared cold", command, env, args.rounds, console,
                                before=lambda: stop_shared(env), expect="local server started"))
            runs.append(measure(f"{label} shared warm", command, env, args.rounds, console,
                                expect="Prefect UI: http://127.0.0.1:"))
            runs.append(measure(f"{label} shared warm, own process (EQUISA_WARM=0)", command, own_process,
                                args.rounds, console, expect="Prefect UI: http://127.0.0.1:"))
        runs.append(measure("localize --no-cache ephemeral (before)", [*localize, "--no-cache"], ephemeral,
                            args.rounds, console))
        runs.append(measure("localize --no-cache shared warm", [*localize, "--no-cache"], env, args.rounds,
                            console))
        runs.append(measure("localize --no-cache shared warm, own process (EQUISA_WARM=0)",
                            [*localize, "--no-cache"], own_process, args.rounds, console))
        if not args.no_profile:
            report["imports"] = import_costs(env, example)
            report["profile"] = profile_costs(env, example, root)
    finally:
        stop_shared(env)
        shutil.rmtree(root, ignore_errors=True)
    finish_report(console, report, print_table, args.out, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())

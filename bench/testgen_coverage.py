"""Coverage and mutation score of generated tests: EQUISA testgen against the modules' own suites and Pynguin.

Run from the repository root::

    uv run python bench/testgen_coverage.py [--modules invoicing-discounts,boltons-mathutils]
                                            [--pynguin-seconds 45] [--max-mutants 80] [--prepare]
                                            [--out bench/results/testgen_coverage.json]

For each module (``MODULES``, 22: two of ``examples/invoicing``, ten of boltons 26.2.0 and sqlparse
0.6.1, pinned in ``bench/corpus``, and ten of codetiming 1.4.0, docstring_parser 0.18.0, toolz 1.2.0 and
inflection 0.5.1, pinned in ``projects()``; ``--prepare`` downloads their sdists, checks their sha256,
unpacks them into ``~/.cache/equisa-bench/src`` and makes their venvs, with
``localization_corpus.prepare_package``), three test suites are measured the same way, by EQUISA's
runner (``tasks.testgen.setup.measure_tests``: coverage.py branch coverage of the module, and the
mutation score over the same ``--max-mutants`` mutants of the shared engine, each run against only
the tests that cover it, in the local sandbox):

- ``own``: the module's own test file(s) from the project;
- ``equisa``: ``generate_tests`` in deterministic mode (carved + boundary-value tests, the seed-001
  loop with ``--max-iterations`` attempts, targets ``--coverage-target``/``--mutation-target``,
  100 % by default so every attempt is used as Pynguin uses its whole search), its best module;
- ``pynguin``: Pynguin (``pip install pynguin`` into a Python 3.10 venv made with uv: Pynguin runs
  on 3.10 only; DYNAMOSA, ``--maximum-search-time``, seed 0, assertions generated), its module
  copied into the workspace copy and measured like the others.

Side by side per module, as means and as medians (over the modules both tools finished, and over
all with a missing module counted 0); wall time per tool. Each generated suite is then run
``--order-runs`` (3) more times in the sandbox, each in an order shuffled with seed 1, 2, 3 and
under that ``PYTHONHASHSEED`` (``tasks.testgen.setup.shuffled_failures``): the tests that passed
when measured and failed in one of those runs are listed (``order_failures``). It asserts nothing:
the exit status is 0 unless the benchmark itself could not run. A tool that raises on a module is
a result too: its error in the row, its traceback in ``<out>_tracebacks/<module>-<tool>.txt``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))
from tracing_overhead import environment, find_python, finish_report  # noqa: E402

DEFAULT_OUT = REPO / "bench" / "results" / "testgen_coverage.json"
CACHE = Path(os.environ.get("EQUISA_BENCH_CACHE", Path.home() / ".cache" / "equisa-bench"))
PYNGUIN_VERSION = "0.48.0"
PYNGUIN_PYTHON = "3.10"
CORPUS_PYTHON = "3.11"


def projects():
    """The PyPI projects the modules come from, as ``localization_corpus.Package`` (name, version,
    sdist, sha256): boltons and sqlparse as pinned in ``bench/corpus/*.yaml``, the others here."""
    from localization_corpus import Package, load_corpus

    corpus = [p for p in load_corpus() if p.name in ("boltons", "sqlparse")]
    return (*corpus, *(
        Package(name=name, version=version, sdist=sdist, sha256=sha256, src=src, tests=(tests,))
        for name, version, sdist, sha256, src, tests in (
            ("codetiming", "1.4.0", "codetiming-1.4.0.tar.gz",
             "4937bf913a2814258b87eaaa43d9a1bb24711ffd3557a9ab6934fa1fe3ba0dbc", "codetiming", "tests"),
            ("docstring_parser", "0.18.0", "docstring_parser-0.18.0.tar.gz",
             "292510982205c12b1248696f44959db3cdd1740237a968ea1e2e7a900eeb2015", "docstring_parser",
             "docstring_parser/tests"),
            ("toolz", "1.2.0", "toolz-1.2.0.tar.gz",
             "9667a038e9d6ecba37995e26cb2f59ec6420b6ad8dd9677de59db9b956b08490", "toolz", "toolz/tests"),
            ("inflection", "0.5.1", "inflection-0.5.1.tar.gz",
             "1a29730d366e996aaacffb2f1f1cb9593dc38e2ddd30c91250c6dde09ea9b417", "inflection",
             "test_inflection.py"),
        )
    ))


def prepare(console: Console, uv: str) -> bool:
    """Every project's sdist fetched, checked and unpacked into CACHE/src, its venv made in CACHE/venvs
    (``localization_corpus.prepare_package``, without FauxPy's venv); False if one could not be."""
    from importlib.metadata import version

    from localization_corpus import prepare_package

    base, why = find_python(CORPUS_PYTHON)
    if base is None:
        console.print(f"no Python {CORPUS_PYTHON} for the projects' venvs: {why}")
        return False
    ok = True
    for package in projects():
        try:
            prepare_package(package, uv, base, CACHE, version("pytest"), fauxpy=False)
            console.print(f"prepared {package.folder}")
        except (RuntimeError, subprocess.CalledProcessError) as error:
            console.print(f"could not prepare {package.folder}: {error}")
            ok = False
    return ok


@dataclass(frozen=True)
class Module:
    """One module under test: where its project is, the file, its own tests, the interpreter."""

    id: str
    project: str  # "examples/invoicing" or a corpus folder under CACHE/src
    target: str
    own_tests: tuple[str, ...]
    venv: str | None = None  # corpus venv under CACHE/venvs; None: EQUISA's interpreter

    def root(self) -> Path:
        return REPO / self.project if self.project.startswith("examples/") else CACHE / "src" / self.project

    def python(self) -> str | None:
        return str(CACHE / "venvs" / self.venv / "bin" / "python") if self.venv else None


MODULES = (
    Module(
        "invoicing-discounts", "examples/invoicing", "invoicing/discounts.py", ("tests/test_discounts.py",)
    ),
    Module("invoicing-money", "examples/invoicing", "invoicing/money.py", ("tests/test_money.py",)),
    Module(
        "boltons-mathutils",
        "boltons-26.2.0",
        "boltons/mathutils.py",
        ("tests/test_mathutils.py",),
        "boltons-26.2.0-equisa",
    ),
    Module(
        "boltons-queueutils",
        "boltons-26.2.0",
        "boltons/queueutils.py",
        ("tests/test_queueutils.py",),
        "boltons-26.2.0-equisa",
    ),
    Module(
        "boltons-formatutils",
        "boltons-26.2.0",
        "boltons/formatutils.py",
        ("tests/test_formatutils.py",),
        "boltons-26.2.0-equisa",
    ),
    Module(
        "sqlparse-utils",
        "sqlparse-0.6.1",
        "sqlparse/utils.py",
        ("tests/test_utils.py",),
        "sqlparse-0.6.1-equisa",
    ),
    *(
        Module(f"boltons-{name}", "boltons-26.2.0", f"boltons/{name}.py", (f"tests/test_{name}.py",),
               "boltons-26.2.0-equisa")
        for name in ("listutils", "setutils", "statsutils", "strutils", "timeutils")
    ),
    Module(
        "sqlparse-formatter",
        "sqlparse-0.6.1",
        "sqlparse/formatter.py",
        ("tests/test_format.py",),
        "sqlparse-0.6.1-equisa",
    ),
    *(
        Module(f"docstring_parser-{name}", "docstring_parser-0.18.0", f"docstring_parser/{name}.py",
               (f"docstring_parser/tests/test_{name}.py",), "docstring_parser-0.18.0-equisa")
        for name in ("google", "rest", "epydoc", "util", "parser")
    ),
    *(
        Module(f"codetiming-{name.strip('_')}", "codetiming-1.4.0", f"codetiming/{name}.py",
               ("tests/test_codetiming.py",), "codetiming-1.4.0-equisa")
        for name in ("_timer", "_timers")
    ),
    Module("toolz-dicttoolz", "toolz-1.2.0", "toolz/dicttoolz.py", ("toolz/tests/test_dicttoolz.py",),
           "toolz-1.2.0-equisa"),
    Module("toolz-sandbox-core", "toolz-1.2.0", "toolz/sandbox/core.py",
           ("toolz/sandbox/tests/test_core.py",), "toolz-1.2.0-equisa"),
    Module("inflection", "inflection-0.5.1", "inflection/__init__.py", ("test_inflection.py",),
           "inflection-0.5.1-equisa"),
)


def figures(coverage, mutation, wall: float | None, tests: int | None) -> dict:
    return {
        "coverage": coverage.percent,
        "branch_coverage": coverage.branch_percent,
        "mutation_score": mutation.score,
        "killed": mutation.count("killed"),
        "survived": mutation.count("survived"),
        "not_covered": mutation.count("not_covered"),
        "unswappable": mutation.count("unswappable"),
        "not_run": mutation.count("not_run"),
        "tests": tests,
        "passed": sum(1 for t in coverage.trace.tests if t.outcome == "passed"),
        "wall_s": round(wall, 1) if wall is not None else None,
        "error": coverage.error,
    }


def pynguin_python(uv: str) -> tuple[Path | None, str]:
    """Python 3.10 venv with Pynguin (cached in CACHE/venvs/pynguin), or why there is none."""
    base, why = find_python(PYNGUIN_PYTHON)
    if base is None:
        return None, f"Pynguin {PYNGUIN_VERSION} needs Python {PYNGUIN_PYTHON}: {why}"
    venv = CACHE / "venvs" / f"pynguin-{PYNGUIN_VERSION}"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([uv, "venv", "-q", "-p", str(base), str(venv)], check=True)
        subprocess.run(
            [uv, "pip", "install", "-q", "--python", str(python), f"pynguin=={PYNGUIN_VERSION}", "pytest"],
            check=True,
        )
    return python, ""


def run_pynguin(python: Path, module: Module, seconds: int, work: Path) -> tuple[str | None, float, str]:
    """Pynguin's test module for ``module`` (text), its wall time, and its log tail."""
    project = work / "project"
    shutil.copytree(
        module.root(), project, ignore=shutil.ignore_patterns("__pycache__", ".equisa-bench-sha256")
    )
    out = work / "pynguin-out"
    name = module.target.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "PREFECT"))},
        "PYNGUIN_DANGER_AWARE": "1",
        "PYTHONHASHSEED": "0",
    }
    started = time.perf_counter()
    command = [str(python.parent / "pynguin"), "--project-path", str(project), "--module-name", name,
               "--output-path", str(out), "--maximum-search-time", str(seconds), "--seed", "0", "-v"]
    # Pynguin runs a master and worker processes; now and then one of them does not end after the
    # module is written, so the whole group is killed at the deadline and what was written is used.
    log = work / "pynguin.log"
    with open(log, "w") as handle:
        process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=project,
                                   start_new_session=True)
        timed_out = False
        try:
            process.wait(timeout=seconds * 4 + 120)
        except subprocess.TimeoutExpired:
            timed_out = True
        with contextlib.suppress(ProcessLookupError):  # workers left behind, if any
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    wall = time.perf_counter() - started
    found = sorted(out.glob("test_*.py"))
    tail = log.read_text(errors="replace").strip().splitlines()[-3:]
    if timed_out:
        tail.insert(0, f"killed after {seconds * 4 + 120} s")
    return (found[0].read_text(encoding="utf-8") if found else None), wall, " | ".join(tail)[-400:]


def measure_module(module: Module, args, pynguin: Path | None, pynguin_reason: str, console: Console) -> dict:
    from prefect import flow

    from flows.testgen import generate_tests
    from tasks.run.parameters import TestgenParameters
    from tasks.run.prepared_run import prepare_run
    from tasks.testgen.setup import measure_tests, shuffled_failures

    def order_check(prepared, params, data: dict, path: str, text: str, coverage) -> None:
        """The suite run again ``--order-runs`` times, shuffled and under other hash seeds."""
        if args.order_runs <= 0:
            return
        passed = [t.test_id for t in coverage.trace.tests if t.outcome == "passed"]
        failed = shuffled_failures(prepared, params, path, text, passed, tuple(range(1, args.order_runs + 1)))
        data["order_runs"] = args.order_runs
        data["order_failures"] = sorted({t for tests in failed.values() for t in tests})

    row: dict = {
        "id": module.id,
        "target": module.target,
        "project": module.project,
        "own_tests": module.own_tests,
    }
    tracebacks = args.out.with_name(args.out.stem + "_tracebacks")

    @contextlib.contextmanager
    def kept_failure(tool: str):
        """An exception in one tool's step ends that step only: its message in the row, its traceback
        in ``<out>_tracebacks/<module>-<tool>.txt``; the next tool still runs."""
        started = time.perf_counter()
        try:
            yield
        except Exception as error:  # any failure of the tool is a result to keep
            tracebacks.mkdir(parents=True, exist_ok=True)
            path = tracebacks / f"{module.id}-{tool}.txt"
            path.write_text(traceback.format_exc(), encoding="utf-8")
            row[tool] = {
                "error": f"{type(error).__name__}: {error}"[:400],
                "wall_s": round(time.perf_counter() - started, 1),
                "traceback": str(path.relative_to(REPO) if path.is_relative_to(REPO) else path),
            }
            console.print(f"{module.id}: {tool} failed: {row[tool]['error'][:200]}")

    @flow(name="bench-testgen", flow_run_name=module.id)
    def run() -> None:
        with tempfile.TemporaryDirectory(prefix="equisa-bench-testgen-") as scratch:
            work = Path(scratch)
            params = TestgenParameters(
                path=str(module.root()),
                target=module.target,
                python=module.python(),
                tests=list(module.own_tests),
                llm=False,
                out=str(work / "equisa"),
                max_attempts=args.max_iterations,
                coverage_target=args.coverage_target,
                mutation_target=args.mutation_target,
                mutants_per_measurement=args.max_mutants,
                no_cache=True,
                shards=1,
                **{k: v for k, v in (("input_search_examples", args.search_examples),
                                     ("input_search_seconds", args.search_seconds)) if v is not None},
            )
            prepared = None
            with kept_failure("own"):
                prepared = prepare_run(params)
                started = time.perf_counter()
                coverage, mutation = measure_tests(prepared, params)
                wall = time.perf_counter() - started
                row["own"] = figures(coverage, mutation, wall, len(coverage.trace.tests))
                console.print(f"{module.id}: own {row['own']['coverage']}% / {row['own']['mutation_score']}")
            if prepared is None:
                return
            with kept_failure("equisa"):
                run_equisa(prepared, params)
            if pynguin is None:
                row["pynguin"] = {"error": pynguin_reason}
                return
            with kept_failure("pynguin"):
                run_pynguin_measured(prepared, params, work)

    def run_equisa(prepared, params) -> None:
        started = time.perf_counter()
        generated = generate_tests(prepared, params)
        wall = time.perf_counter() - started
        if generated.source:
            coverage, mutation = measure_tests(prepared, params, generated.path, generated.source)
            row["equisa"] = figures(
                coverage,
                mutation,
                wall,
                len(generated.report.attempts[generated.report.best_attempt or 0].tests),
            )
            order_check(prepared, params, row["equisa"], generated.path, generated.source, coverage)
            row["equisa"]["attempts"] = len(generated.report.attempts)
            row["equisa"]["stopped_because"] = generated.report.stopped_because
        else:
            row["equisa"] = {"error": "no module kept: " + "; ".join(generated.report.problems)[-300:]}
        console.print(
            f"{module.id}: equisa {row['equisa'].get('coverage')}% / "
            f"{row['equisa'].get('mutation_score')}"
        )

    def run_pynguin_measured(prepared, params, work: Path) -> None:
        text, wall, log = run_pynguin(pynguin, module, args.pynguin_seconds, work / "pynguin")
        if text is None:
            row["pynguin"] = {"error": f"no test module written: {log}", "wall_s": round(wall, 1)}
            return
        path = f"tests/equisa_generated/test_pynguin_{module.id.replace('-', '_')}.py"
        coverage, mutation = measure_tests(prepared, params, path, text)
        row["pynguin"] = figures(coverage, mutation, wall, text.count("\ndef test_"))
        row["pynguin"]["log"] = log
        order_check(prepared, params, row["pynguin"], path, text, coverage)
        console.print(
            f"{module.id}: pynguin {row['pynguin']['coverage']}% / {row['pynguin']['mutation_score']}"
        )

    run()
    return row


def summarize(rows: list[dict]) -> dict:
    summary: dict = {}
    for tool in ("own", "equisa", "pynguin"):
        values = [
            r[tool] for r in rows if isinstance(r.get(tool), dict) and r[tool].get("coverage") is not None
        ]
        scores = [v["mutation_score"] for v in values if v.get("mutation_score") is not None]
        summary[tool] = {
            "modules": len(values),
            "mean_coverage": round(statistics.fmean(v["coverage"] for v in values), 2) if values else None,
            "mean_mutation_score": round(statistics.fmean(scores), 2) if scores else None,
            "total_wall_s": round(sum(v.get("wall_s") or 0 for v in values), 1),
        }
    both = [
        r
        for r in rows
        if r.get("equisa", {}).get("coverage") is not None
        and r.get("pynguin", {}).get("coverage") is not None
    ]
    for tool in ("equisa", "pynguin"):
        figures_both = [r[tool] for r in both]
        every = [r.get(tool) or {} for r in rows]
        summary[tool].update({
            "median_coverage_both": _median([v["coverage"] for v in figures_both]),
            "median_branch_coverage_both": _median([v.get("branch_coverage") or 0 for v in figures_both]),
            "median_mutation_score_both": _median([v["mutation_score"] or 0 for v in figures_both]),
            "median_coverage_all": _median([v.get("coverage") or 0 for v in every]),
            "median_branch_coverage_all": _median([v.get("branch_coverage") or 0 for v in every]),
            "median_mutation_score_all": _median([v.get("mutation_score") or 0 for v in every]),
            "order_failures": sum(len(v.get("order_failures", ())) for v in every),
            "order_checked_modules": sum(1 for v in every if "order_failures" in v),
        })
    summary["equisa_vs_pynguin"] = {
        "modules": len(both),
        "coverage_higher": sum(1 for r in both if r["equisa"]["coverage"] > r["pynguin"]["coverage"]),
        "mutation_higher": sum(
            1 for r in both if (r["equisa"]["mutation_score"] or 0) > (r["pynguin"]["mutation_score"] or 0)
        ),
    }
    return summary


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


def print_table(console: Console, report: dict) -> None:
    table = Table(
        title="Generated tests: coverage (branch mode) / mutation score, per module", title_justify="left"
    )
    table.add_column("module")
    for tool in ("own suite", "EQUISA testgen", "Pynguin"):
        table.add_column(tool, justify="right")
    for row in report["modules"]:
        cells = []
        for tool in ("own", "equisa", "pynguin"):
            data = row.get(tool) or {}
            if data.get("coverage") is None:
                cells.append(f"error: {str(data.get('error'))[:40]}")
            else:
                score = data.get("mutation_score")
                cells.append(
                    f"{data['coverage']:.1f}% / {score if score is not None else '-'}% "
                    f"({data.get('wall_s')} s)"
                )
        table.add_row(row["id"], *cells)
    console.print(table)
    console.print(json.dumps(report["summary"], indent=1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modules", help="comma-separated module ids (default: all)")
    parser.add_argument("--pynguin-seconds", type=int, default=45, help="Pynguin's search time per module")
    parser.add_argument("--max-mutants", type=int, default=80)
    parser.add_argument("--max-iterations", type=int, default=2)
    parser.add_argument("--coverage-target", type=float, default=100.0,
                        help="EQUISA's --coverage-target (default 100: every attempt is used, as Pynguin "
                             "spends its whole search; the command's own default is 80)")
    parser.add_argument("--mutation-target", type=float, default=100.0,
                        help="EQUISA's --mutation-target (default 100; the command's own default is 60)")
    parser.add_argument("--no-pynguin", action="store_true")
    parser.add_argument("--order-runs", type=int, default=3,
                        help="runs of each generated suite in a shuffled order under another PYTHONHASHSEED "
                             "(0: none); tests that passed when measured and fail in one are listed")
    parser.add_argument("--search-examples", type=int, default=None,
                        help="EQUISA's --input-search-examples (default: its own default)")
    parser.add_argument("--search-seconds", type=float, default=None,
                        help="EQUISA's --input-search-seconds (default: its own default)")
    parser.add_argument("--prepare", action="store_true",
                        help="first fetch, check and unpack the projects' sdists and make their venvs")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    from cli.flow_runs import (
        PREFECT_DEFAULTS,  # the settings `equisa` uses: embedded server, slow start allowed
    )

    for name, value in PREFECT_DEFAULTS.items():
        os.environ.setdefault(name, value)
    console = Console()
    started = time.perf_counter()
    uv = shutil.which("uv") or "uv"
    if args.prepare and not prepare(console, uv):
        return 2
    chosen = [m for m in MODULES if not args.modules or m.id in args.modules.split(",")]
    missing = [
        m.id for m in chosen if not m.root().is_dir() or (m.python() and not Path(m.python()).exists())
    ]
    if missing:
        console.print(
            f"missing corpus sources or venvs for {missing}: run with --prepare first"
        )
        return 2
    pynguin, reason = (None, "--no-pynguin") if args.no_pynguin else pynguin_python(uv)
    report = {
        "environment": environment(uv),
        "settings": {
            "max_mutants": args.max_mutants,
            "max_iterations": args.max_iterations,
            "order_runs": args.order_runs,
            "coverage_target": args.coverage_target,
            "mutation_target": args.mutation_target,
            "search_examples": args.search_examples,
            "search_seconds": args.search_seconds,
            "pynguin": {
                "version": PYNGUIN_VERSION,
                "python": PYNGUIN_PYTHON,
                "seconds": args.pynguin_seconds,
                "available": pynguin is not None,
                "reason": reason,
            },
        },
        "modules": [],
    }
    for module in chosen:
        report["modules"].append(measure_module(module, args, pynguin, reason, console))
    report["summary"] = summarize(report["modules"])
    finish_report(console, report, print_table, args.out, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())

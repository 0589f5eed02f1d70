"""What the mutant screening costs against what it gains, on the real-bug benchmark's stored runs:
would a rule that screens only where the screening is cheap, next to the trace, keep its gains?
And the fit of that rule's ratio (``--screen-cost-ratio``), with leave-one-project-out validation.

Each EQUISA run of ``bench/realbugs`` keeps its report: the first answer (the trace and the prior
alone), the screening's evidence (with the seconds it took) and the whole run's answer. Its time
without the screening is taken as the whole run's wall time less the screening's and the fix
confirmation's seconds (runs that went on after the screening also lose the later steps' time
then, so this is a lower bound on what screening nothing saves). A rule *screen when the
screening costs at most beta times the trace* then answers, per bug, the whole run (screened) or
the first answer (not screened), and the wall time with or without the screening; the median of
the per-bug ratios to FauxPy's wall time is the figure ``bench/README.md`` targets (1.0).

Two rules are replayed for each beta: the *oracle*, which knows each run's own screening seconds
before it runs (no rule can do better at the same beta), and the *estimate* a run could make after
its trace: per screened function, min(mutants per inspection, 2 per line) mutants times its failing
tests' traced durations plus 10 ms each (a round's own cost), summed, halved for the two processes
that run them, plus 0.2 s (making the mutants, the request). The estimate reads each run's
trace (its artifacts' trace blob) for the tests' durations. No test runs here.

Runs whose report records the machine's own ``screening_cost`` (from 34f5701 on) are replayed with
the rule EQUISA applies: screen when its ``estimate_s`` is at most beta times its ``traced_s`` (the
seconds the run took to trace, start-up not included), the rest of the run (Discovery, the
inspections' recorded seconds) dropped with the screening. The fit picks, among the betas, the one
with the most Top-1 answers whose median wall ratio stays at most ``--max-median-ratio`` (then
Top-3, Top-5, fewer screenings); leave-one-project-out, each project's runs are replayed with the
beta fitted on the other projects, and the pooled figures are reported beside the in-sample ones.

    uv run python bench/screening_cost.py --from-realbugs ~/.cache/equisa-bench/realbugs \
        [--results DIR] [--out FILE] [--max-median-ratio R]

Writes bench/results/screening_cost.json (``--out``) and prints the table docs/commands/localize.md quotes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import likelihood_fit as lf  # noqa: E402
import prior_fit as pf  # noqa: E402
from screening_stop import rank_in  # noqa: E402

from equisa_core.common.options import LocalizationOptions, default_of  # noqa: E402
from equisa_core.localization.machine import FIX_CONFIRMATION, SCREENING  # noqa: E402
from equisa_core.localization.screening_cost import MUTANTS_PER_LINE, ROUND_TEST_S, SETUP_S  # noqa: E402

RESULTS = BENCH / "results"
BETAS = (0.0, 0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 7.5, 10.0, float("inf"))
MUTANTS_CAP = default_of(LocalizationOptions, "mutants_per_inspection")
#: The processes that ran the benchmark's screenings (its machine's cores), for runs that did not
#: record the machine's own estimate (the other constants: equisa_core.localization.screening_cost).
PROCESSES = 2
#: The fit's bound on the median wall ratio to FauxPy (bench/README.md targets 1.0; the margin is
#: for a run's noise).
MAX_MEDIAN_RATIO = 0.9


@dataclass(frozen=True)
class Run:
    """One bug's stored run: the truth's rank first and at the end, the times, the estimate."""

    project: str
    bug: str
    first_rank: float
    final_rank: float
    wall_s: float
    fauxpy_s: float
    screening_s: float
    estimate_s: float
    traced_s: float | None = None
    after_s: float = 0.0

    @property
    def trace_s(self) -> float:
        """The run's time without its screening and what came after it (module docstring)."""
        return max(self.wall_s - self.screening_s - self.after_s, 0.1)

    @property
    def reference_s(self) -> float:
        """What beta multiplies: the seconds the run took to trace as the machine saw them, or else
        the run's time without its screening."""
        return self.traced_s if self.traced_s is not None else self.trace_s


def load_run(entry: dict, report: dict, run: dict) -> Run | None:
    """A ``Run`` from a bug's report and its ``run.json``; None when either tool did not finish."""
    bug = lf.load_bug(report, entry["project"], str(entry["bug"]), entry["truth"])
    equisa, fauxpy = run.get("equisa") or {}, run.get("fauxpy") or {}
    if bug is None or not equisa.get("wall_s") or not fauxpy.get("wall_s"):
        return None
    screened = [i for i in report.get("inspections") or () if i.get("strategy") == SCREENING]
    seconds = max((i.get("seconds") or 0.0 for i in screened), default=0.0)
    seconds += sum(i.get("seconds") or 0.0 for i in report.get("inspections") or ()
                   if i.get("strategy") == FIX_CONFIRMATION)
    own = report.get("screening_cost")
    if own:  # the machine's own estimate and trace seconds; the later inspections go with the screening
        after = sum(i.get("seconds") or 0.0 for i in report.get("inspections") or ()
                    if i.get("strategy") not in (SCREENING, FIX_CONFIRMATION))
        return Run(project=entry["project"], bug=str(entry["bug"]),
                   first_rank=rank_in(bug, bug.first_answer), final_rank=rank_in(bug, bug.stored),
                   wall_s=float(equisa["wall_s"]), fauxpy_s=float(fauxpy["wall_s"]),
                   screening_s=seconds if own.get("functions") else 0.0,
                   estimate_s=float(own["estimate_s"]) if own.get("functions") else 0.0,
                   traced_s=float(own["traced_s"]), after_s=after)
    return Run(project=entry["project"], bug=str(entry["bug"]),
               first_rank=rank_in(bug, bug.first_answer), final_rank=rank_in(bug, bug.stored),
               wall_s=float(equisa["wall_s"]), fauxpy_s=float(fauxpy["wall_s"]), screening_s=seconds,
               estimate_s=estimate(report, screened))


def traced_tests(report: dict) -> dict[str, tuple[str, float]] | None:
    """The run's traced tests (node id -> outcome, duration), from its artifacts' trace blob."""
    folder = report.get("artifacts")
    if not isinstance(folder, str) or not (Path(folder) / "manifest.json").exists():
        return None
    for stored in json.loads((Path(folder) / "manifest.json").read_text()).get("objects", ()):
        if not str(stored.get("key", "")).startswith("blobs/"):
            continue
        try:
            blob = json.loads(gzip.open(stored["uri"]).read())
        except (OSError, ValueError):
            continue
        if isinstance(blob, dict) and "tests" in blob and "nodes" in blob:
            return {t["test_id"]: (t["outcome"], t.get("duration") or 0.0) for t in blob["tests"]}
    return None


def estimate(report: dict, screened: Sequence[dict]) -> float:
    """The estimate's seconds for the run's screening (module docstring); 0 when nothing was
    screened, inf when its trace cannot be read."""
    if not screened:
        return 0.0
    tests = traced_tests(report)
    if tests is None:
        return float("inf")
    lines = {r["fqn"]: r.get("end_line", 0) - r.get("start_line", 0) + 1 for r in report.get("ranking") or ()}
    total = 0.0
    for record in screened:
        mutants = min(MUTANTS_CAP, MUTANTS_PER_LINE * lines.get(record["target"], 1))
        failing = [tests[t][1] for t in record.get("tests_run") or ()
                   if tests.get(t, ("",))[0] in ("failed", "error")]
        total += mutants * sum(duration + ROUND_TEST_S for duration in failing)
    return SETUP_S + total / PROCESSES


def replay(runs: Sequence[Run], beta: float, oracle: bool) -> dict:
    """Top-1/3/5 and the median wall ratio to FauxPy when a run screens only where its screening
    costs (known, or estimated) at most ``beta`` times its trace."""
    outcomes = [outcome(run, beta, oracle) for run in runs]
    return {"beta": beta, **_figures(outcomes), "screened": sum(screens for screens, _, _ in outcomes)}


def outcome(run: Run, beta: float, oracle: bool) -> tuple[bool, float, float]:
    """Whether ``run`` screens at ``beta`` (its known or its estimated screening seconds against
    beta times its reference), the truth's rank then, and its wall ratio to FauxPy."""
    screens = (run.screening_s if oracle else run.estimate_s) <= beta * run.reference_s
    return screens, run.final_rank if screens else run.first_rank, \
        (run.wall_s if screens else run.trace_s) / run.fauxpy_s


def _figures(outcomes: Sequence[tuple[bool, float, float]]) -> dict:
    """Top-1/3/5 and the median wall ratio of ``outcome`` results."""
    ranks = [rank for _, rank, _ in outcomes]
    return {"top1": sum(r <= 1 for r in ranks), "top3": sum(r <= 3 for r in ranks),
            "top5": sum(r <= 5 for r in ranks),
            "median_ratio": round(statistics.median(ratio for _, _, ratio in outcomes), 3)}


def fit(runs: Sequence[Run], max_median_ratio: float) -> dict:
    """The estimate rule's beta with the most Top-1 answers whose median ratio is at most
    ``max_median_ratio`` (then the most Top-3, Top-5, the fewest screenings, the lower ratio, the
    smaller beta, on ties); the smallest ratio's beta when none is within it."""
    rows = [replay(runs, beta, oracle=False) for beta in BETAS]
    within = [r for r in rows if r["median_ratio"] <= max_median_ratio]
    if not within:
        return min(rows, key=lambda r: (r["median_ratio"], r["beta"]))
    return max(within, key=lambda r: (r["top1"], r["top3"], r["top5"], -r["screened"],
                                      -r["median_ratio"]))


def cross_validated(runs: Sequence[Run], max_median_ratio: float) -> dict:
    """Leave-one-project-out: each project's runs replayed with the beta fitted on the others; the
    pooled Top-1/3/5 and median ratio, and each fold's beta."""
    outcomes, folds = [], {}
    for project in sorted({r.project for r in runs}):
        folds[project] = fit([r for r in runs if r.project != project], max_median_ratio)["beta"]
        outcomes += [outcome(r, folds[project], oracle=False) for r in runs if r.project == project]
    return {**_figures(outcomes), "betas": folds}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from-realbugs", type=Path, required=True, metavar="CACHE",
                        help="a real-bug benchmark cache (its manifest.json and results/)")
    parser.add_argument("--results", type=Path, metavar="DIR",
                        help="the runs' folder (default CACHE/results)")
    parser.add_argument("--out", type=Path, default=RESULTS / "screening_cost.json")
    parser.add_argument("--max-median-ratio", type=float, default=MAX_MEDIAN_RATIO,
                        help=f"the fit's bound on the median wall ratio to FauxPy "
                        f"(default {MAX_MEDIAN_RATIO})")
    args = parser.parse_args(argv)
    cache = args.from_realbugs.expanduser()
    if not (cache / "manifest.json").exists():
        print(f"screening_cost: no benchmark manifest in {cache}: prepare it first (bench/README.md)",
              file=sys.stderr)
        return 2
    results = args.results.expanduser() if args.results else cache / "results"
    runs, skipped = [], []
    for entry in pf.cases_from_realbugs(cache, results):
        folder = Path(entry["report"]).parent
        try:
            loaded = load_run(entry, json.loads(Path(entry["report"]).read_text()),
                              json.loads((folder / "run.json").read_text()))
        except (OSError, ValueError) as error:
            skipped.append(f"{folder.name}: {error}")
            continue
        if loaded is None:
            skipped.append(f"{folder.name}: no prior signals, or a tool did not finish")
        else:
            runs.append(loaded)
    if not runs:
        print("screening_cost: no usable run: run the benchmark first", file=sys.stderr)
        return 2
    rows = {"oracle": [replay(runs, b, oracle=True) for b in BETAS],
            "estimate": [replay(runs, b, oracle=False) for b in BETAS]}
    fitted = {"max_median_ratio": args.max_median_ratio, "in_sample": fit(runs, args.max_median_ratio),
              "leave_one_project_out": cross_validated(runs, args.max_median_ratio)}
    result = {"results": str(results), "bugs": len(runs), "skipped": skipped, "rows": rows,
              "fit": fitted, "runs": [run.__dict__ for run in runs]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(f"{len(runs)} bugs ({len(skipped)} skipped)")
    print("| rule | beta | screened | Top-1 | Top-3 | Top-5 | median ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for rule, table in rows.items():
        for row in table:
            print(f"| {rule} | {row['beta']:g} | {row['screened']} | {row['top1']} | {row['top3']} | "
                  f"{row['top5']} | {row['median_ratio']} |")
    inside, lopo = fitted["in_sample"], fitted["leave_one_project_out"]
    print(f"fit (median ratio at most {args.max_median_ratio:g}): beta {inside['beta']:g}, "
          f"{inside['top1']}/{inside['top3']}/{inside['top5']} at {inside['median_ratio']}; "
          f"leave-one-project-out {lopo['top1']}/{lopo['top3']}/{lopo['top5']} at {lopo['median_ratio']} "
          f"(betas {', '.join(f'{p} {b:g}' for p, b in lopo['betas'].items())})")
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

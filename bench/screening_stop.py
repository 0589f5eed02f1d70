"""Fit the margin at which a deterministic run stops once its mutant screening is in, on the real-bug
benchmark, with leave-one-project-out validation.

Each EQUISA run of the benchmark (``bench/realbugs``) made with every check (``--stop-margin off``,
or a run before the rule) keeps its report: the first answer (the trace and the prior alone, its
top 20), the evidence in order (``inspections``: the screening's mutants, a fix's confirmation, the
value comparison, the inspections) and the final ranking. The screening runs on the suite as first
traced, so the answer once it is in is the first answer with the screening's and the
confirmation's evidence counted on it, in order, as the Localization loop counts it
(``bench/likelihood_fit.py``'s ``load_bug``: the pairs the run used). Its leader margin
(``equisa_core.localization.stop_margin.leader_margin``) is what the rule looks at; the rest of the
run depends only on what came before, so where the rule goes on, the answer is the report's final
ranking. No test runs here.

The rest of a run (Discovery, the value comparison, the inspections) costs several times the trace,
and the time target is a median: so a threshold may let at most ``--max-going-on`` of the runs (0.2
by default) go on, and among those it is scored by Top-1, then Top-3, then Top-5 (ties as the
average rank), then by fewer runs going on. The candidates are 1 (always stop) and every margin
seen; the threshold kept is the middle of the gap below the best one (``midpoint``), so that it
does not hinge on one bug's exact margin. The best one on all the bugs is the in-sample fit; each
project is also answered with the threshold fitted on the other projects (leave-one-project-out).

    uv run python bench/screening_stop.py --from-realbugs ~/.cache/equisa-bench/realbugs \
        [--results DIR] [--out FILE]

Writes bench/results/screening_stop.json (``--out``) and prints the table docs/commands/localize.md quotes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import likelihood_fit as lf  # noqa: E402
import prior_fit as pf  # noqa: E402

from equisa_core.localization.machine import FIX_CONFIRMATION, SCREENING  # noqa: E402
from equisa_core.localization.stop_margin import leader_margin  # noqa: E402

RESULTS = BENCH / "results"
TOP_N = (1, 3, 5)
#: The evidence in before the rule looks: the screening's, and its fix's confirmation.
SCREENED = frozenset({SCREENING, FIX_CONFIRMATION})


@dataclass(frozen=True)
class Case:
    """One bug: the truth's rank in the first answer, once the screening is in, and at the end of the
    whole run; and the margin once the screening is in."""

    project: str
    bug: str
    first_rank: float
    screened_rank: float
    final_rank: float
    margin: float  # inf: no runner-up


def rank_in(bug: lf.Bug, confidences: Mapping[str, float]) -> float:
    """The truth's rank among ``confidences`` (ties as the average rank; inf when absent)."""
    return pf.rank_of_truth(lf.as_case(bug, confidences), [1.0])[0]


def screened_confidences(bug: lf.Bug) -> dict[str, float]:
    """The first answer with the screening's and the confirmation's evidence counted on it, in order.
    (The first answer keeps its top 20: the screened functions are among them, and counting evidence
    on one function moves the others alike, so their order is the whole suite's.)"""
    kept = dataclasses.replace(bug, initial=dict(bug.first_answer),
                               steps=tuple(s for s in bug.steps if s.strategy in SCREENED))
    return lf.replay(kept)


def case_of(bug: lf.Bug) -> Case:
    screened = screened_confidences(bug)
    return Case(project=bug.project, bug=bug.bug, first_rank=rank_in(bug, bug.first_answer),
                screened_rank=rank_in(bug, screened), final_rank=rank_in(bug, bug.stored),
                margin=leader_margin(sorted(screened.values(), reverse=True)))


def answer(case: Case, threshold: float) -> float:
    """The truth's rank in the answer the rule gives at ``threshold``."""
    return case.screened_rank if case.margin >= threshold else case.final_rank


def figures(cases: Sequence[Case], threshold_of: Mapping[str, float] | float) -> dict:
    """Top-N of the answers and how many runs went on, with one threshold or one per project."""
    def threshold(case: Case) -> float:
        return threshold_of if isinstance(threshold_of, float) else threshold_of[case.project]
    ranks = [answer(c, threshold(c)) for c in cases]
    out: dict = {f"top{k}": sum(1 for r in ranks if r <= k) for k in TOP_N}
    out["went_on"] = sum(1 for c in cases if c.margin < threshold(c))
    out["bugs"] = len(cases)
    return out


def fixed(cases: Sequence[Case], rank_of) -> dict:
    """Top-N of one fixed answer per bug (``rank_of(case)``)."""
    ranks = [rank_of(c) for c in cases]
    return {**{f"top{k}": sum(1 for r in ranks if r <= k) for k in TOP_N}, "went_on": 0, "bugs": len(cases)}


def fit(cases: Sequence[Case], max_going_on: float) -> float:
    """The best threshold on ``cases`` among those that let at most ``max_going_on`` of the runs go on:
    Top-1, Top-3, Top-5, then fewer runs going on; among equals, the smallest."""
    candidates = sorted({1.0, *(c.margin for c in cases if math.isfinite(c.margin))})
    allowed = [t for t in candidates if figures(cases, t)["went_on"] <= max_going_on * len(cases)]

    def score(t: float) -> tuple[float, ...]:
        f = figures(cases, t)
        return (f["top1"], f["top3"], f["top5"], -f["went_on"], -t)
    return max(allowed, key=score)


def midpoint(cases: Sequence[Case], threshold: float) -> float:
    """A threshold in the middle of the gap between ``threshold`` and the largest margin below it."""
    below = [c.margin for c in cases if c.margin < threshold]
    if not below or threshold <= 1.0:
        return threshold
    return round((max(below) + threshold) / 2, 3)


def run(cases: Sequence[Case], max_going_on: float) -> dict:
    """The in-sample and leave-one-project-out fits and their figures, overall and per project."""
    projects = sorted({c.project for c in cases})
    in_sample = midpoint(cases, fit(cases, max_going_on))
    others = {p: [c for c in cases if c.project != p] for p in projects}
    folds = {p: midpoint(others[p], fit(others[p], max_going_on)) for p in projects}
    answers = {
        "first answer (trace and prior)": lambda cs: fixed(cs, lambda c: c.first_rank),
        "once the screening is in (always stop there)": lambda cs: fixed(cs, lambda c: c.screened_rank),
        "whole run (never stop)": lambda cs: fixed(cs, lambda c: c.final_rank),
        f"stop there at margin >= {in_sample:g} (in-sample)": lambda cs: figures(cs, in_sample),
        "stop there at the margin fitted on the other projects (leave-one-project-out)":
            lambda cs: figures(cs, folds),
    }
    return {"max_going_on": max_going_on, "bugs": len(cases), "threshold_in_sample": in_sample,
            "threshold_per_fold": folds, "rows": {name: f(cases) for name, f in answers.items()},
            "per_project": {p: {name: f([c for c in cases if c.project == p]) for name, f in answers.items()}
                            for p in projects},
            "cases": [dataclasses.asdict(c) for c in cases]}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from-realbugs", type=Path, required=True, metavar="CACHE",
                        help="a real-bug benchmark cache (its manifest.json and results/)")
    parser.add_argument("--results", type=Path, metavar="DIR",
                        help="the runs' folder (default CACHE/results)")
    parser.add_argument("--max-going-on", type=float, default=0.2,
                        help="the largest share of runs a threshold may let go on (default %(default)s)")
    parser.add_argument("--out", type=Path, default=RESULTS / "screening_stop.json")
    args = parser.parse_args(argv)
    cache = args.from_realbugs.expanduser()
    if not (cache / "manifest.json").exists():
        print(f"screening_stop: no benchmark manifest in {cache}: prepare it first (bench/README.md)",
              file=sys.stderr)
        return 2
    entries = pf.cases_from_realbugs(cache, args.results.expanduser() if args.results else None)
    stopped = [e for e in entries
               if json.loads(Path(e["report"]).read_text()).get("decisive_after_screening")]
    if stopped:
        print(f"screening_stop: {len(stopped)} runs stopped after their screening, so no whole run to "
              "compare with: fit on runs made with --stop-margin off", file=sys.stderr)
        return 2
    bugs, skipped = lf.load_bugs(entries)
    usable = [b for b in bugs if b.first_answer]
    skipped += [f"{b.project}-{b.bug}: no first answer (a report before 5e3c5c0)"
                for b in bugs if not b.first_answer]
    if not usable:
        print("screening_stop: no report keeps its first answer: run the benchmark first", file=sys.stderr)
        return 2
    result = {"results": str(args.results or cache / "results"), "skipped": skipped,
              **run([case_of(b) for b in usable], args.max_going_on)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    folds = ", ".join(f"{p} {t:g}" for p, t in result["threshold_per_fold"].items())
    print(f"{result['bugs']} bugs ({len(skipped)} skipped); in-sample threshold "
          f"{result['threshold_in_sample']:g}; per fold: {folds}")
    print(f"| {'answer':<80} | Top-1 | Top-3 | Top-5 | runs going on |")
    print(f"|{'-' * 82}|------:|------:|------:|--------------:|")
    for name, f in result["rows"].items():
        print(f"| {name:<80} | {f['top1']:>5} | {f['top3']:>5} | {f['top5']:>5} | {f['went_on']:>13} |")
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Fit the prior's signal weights on the real-bug benchmark, with leave-one-project-out validation.

Each EQUISA run of the benchmark (``bench/realbugs``) keeps its localization report, and the report
keeps every function's prior signals (``LocalizationReport.prior``). This script replays those
signals under new weights, without running a test:

* **fit**: a conditional logit (the bug is one of a run's functions, chosen with probability
  ``softmax(w . features)``), maximum likelihood with an L2 penalty, by gradient ascent. Written
  here rather than with scikit-learn: the model is one softmax per bug over a few hundred rows,
  and the project has no numeric dependency to add for 40 lines;
* **in-sample**: the weights fitted on every bug, scored on the same bugs;
* **cross-validated**: for each project, weights fitted on the other projects, scored on it.

Ranks count ties as the average rank over the tied group; EXAM is the rank over the number of
functions ranked; Top-k counts bugs whose best truth function ranks at k or better.

    uv run python bench/prior_fit.py [--cases bench/results/realbugs_cases.json] [--l2 0.01]

``--cases`` lists, per verified bug, its project, the truth functions and the path of EQUISA's
JSON report (what ``bench/realbugs`` writes). The result goes to ``bench/results/prior_fit.json``
and prints the fitted weights as ``equisa_core.localization.prior.PriorWeights`` arguments.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from equisa_core.localization.prior import DEFAULT_WEIGHTS, FEATURES  # noqa: E402

RESULTS = ROOT / "bench" / "results"


@dataclass(frozen=True)
class Case:
    """One bug: its functions' feature vectors and which of them the fix touched."""

    project: str
    bug: str
    features: Mapping[str, tuple[float, ...]]
    truth: frozenset[str]


def load_cases(path: Path) -> list[Case]:
    """The cases of a ``--cases`` file whose report has prior signals and whose truth is among them."""
    cases = []
    for entry in json.loads(path.read_text()):
        report_path = Path(entry["report"])
        if not report_path.is_absolute():
            report_path = path.parent / report_path
        if not report_path.exists():
            continue
        report = json.loads(report_path.read_text())
        prior = report.get("prior") or {}
        signals = prior.get("signals") or {}
        features = {fqn: tuple(float(s.get(name, 0.0)) for name in FEATURES) for fqn, s in signals.items()}
        cases.append(Case(project=entry["project"], bug=str(entry["bug"]), features=features,
                          truth=frozenset(entry["truth"])))
    return cases


def cases_from_realbugs(cache: Path, results: Path | None = None) -> list[dict]:
    """The ``--cases`` entries of a real-bug benchmark cache (``bench/realbugs``): each verified
    bug whose EQUISA report exists (in ``results``, by default the cache's ``results/``), with the
    functions its fix touches as the truth."""
    results = results or cache / "results"
    entries = []
    for bug in json.loads((cache / "manifest.json").read_text()):
        if not bug.get("verified"):
            continue
        truth = bug.get("truth") or {}
        functions = truth.get("functions", []) if isinstance(truth, dict) else []
        report = results / f"{bug['project']}-{bug['bug']}" / "equisa_report.json"
        if functions and report.exists():
            entries.append({"project": bug["project"], "bug": bug["bug"], "report": str(report),
                            "truth": sorted({f["fqn"] for f in functions if f.get("fqn")})})
    return entries


def _scores(case: Case, weights: Sequence[float]) -> dict[str, float]:
    return {fqn: math.fsum(w * x for w, x in zip(weights, vector, strict=True))
            for fqn, vector in case.features.items()}


def fit(cases: Sequence[Case], l2: float = 0.01, steps: int = 400, rate: float = 0.5) -> list[float]:
    """Weights maximizing ``sum log P(truth)`` of a per-bug softmax, minus ``l2 * |w|^2``."""
    usable = [c for c in cases if c.truth & c.features.keys()]
    weights = [0.0] * len(FEATURES)
    if not usable:
        return weights
    for _ in range(steps):
        gradient = [-2.0 * l2 * w * len(usable) for w in weights]
        for case in usable:
            scores = _scores(case, weights)
            top = max(scores.values())
            exp = {f: math.exp(s - top) for f, s in scores.items()}
            total = math.fsum(exp.values())
            true_total = math.fsum(exp[f] for f in case.truth if f in exp)
            for k in range(len(FEATURES)):
                expected_all = math.fsum(exp[f] * case.features[f][k] for f in exp) / total
                expected_true = math.fsum(
                    exp[f] * case.features[f][k] for f in case.truth if f in exp) / true_total
                gradient[k] += expected_true - expected_all
        weights = [w + rate * g / len(usable) for w, g in zip(weights, gradient, strict=True)]
    return weights


def rank_of_truth(case: Case, weights: Sequence[float]) -> tuple[float, int]:
    """The best truth function's rank (ties averaged) and the number of functions ranked; a truth
    the run never ranked is a miss: rank infinite, EXAM 1 (``evaluate``)."""
    scores = _scores(case, weights)
    ranked = len(scores)
    best = math.inf
    for truth in case.truth & scores.keys():
        above = sum(1 for s in scores.values() if s > scores[truth])
        tied = sum(1 for s in scores.values() if s == scores[truth])
        best = min(best, above + (tied + 1) / 2)
    return best, max(ranked, 1)


def evaluate(cases: Iterable[Case], weights_of: Mapping[str, Sequence[float]] | Sequence[float]) -> dict:
    """Top-1/3/5 and mean EXAM; ``weights_of`` is one weight vector, or one per project."""
    ranks = []
    for case in cases:
        weights = weights_of[case.project] if isinstance(weights_of, Mapping) else weights_of
        ranks.append(rank_of_truth(case, weights))
    count = len(ranks)
    return {
        "bugs": count,
        **{f"top{k}": sum(1 for r, _ in ranks if r <= k) for k in (1, 3, 5)},
        "exam": round(math.fsum(min(1.0, r / n) for r, n in ranks) / count, 4) if count else None,
    }


def cross_validated(cases: Sequence[Case], l2: float) -> dict[str, list[float]]:
    """Per project, the weights fitted on every other project."""
    projects = sorted({c.project for c in cases})
    return {p: fit([c for c in cases if c.project != p], l2) for p in projects}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=Path, default=RESULTS / "realbugs_cases.json")
    parser.add_argument("--from-realbugs", type=Path, metavar="CACHE",
                        help="write --cases from a real-bug benchmark cache first (its manifest.json and "
                             "results/), e.g. ~/.cache/equisa-bench/realbugs")
    parser.add_argument("--l2", type=float, default=0.01)
    parser.add_argument("--out", type=Path, default=RESULTS / "prior_fit.json")
    args = parser.parse_args(argv)
    if args.from_realbugs is not None:
        args.cases.parent.mkdir(parents=True, exist_ok=True)
        found = cases_from_realbugs(args.from_realbugs.expanduser())
        args.cases.write_text(json.dumps(found, indent=1) + "\n")
    if not args.cases.exists():
        print(f"no cases file at {args.cases}: run the real-bug benchmark first (bench/README.md)",
              file=sys.stderr)
        return 2
    cases = load_cases(args.cases)
    if not cases:
        print(f"{args.cases} names no report with prior signals", file=sys.stderr)
        return 2
    current = [getattr(DEFAULT_WEIGHTS, name) for name in FEATURES]
    ochiai_only = [1.0 if name == "ochiai" else 0.0 for name in FEATURES]
    fitted = fit(cases, args.l2)
    folds = cross_validated(cases, args.l2)
    table = {
        "ochiai alone": evaluate(cases, ochiai_only),
        "current weights": evaluate(cases, current),
        "fitted, in-sample": evaluate(cases, fitted),
        "fitted, leave-one-project-out": evaluate(cases, folds),
    }
    projects = sorted({c.project for c in cases})
    per_project = {
        p: {name: evaluate([c for c in cases if c.project == p], w) for name, w in
            (("ochiai alone", ochiai_only), ("fitted, in-sample", fitted), ("cross-validated", folds))}
        for p in projects
    }
    result = {
        "cases": len(cases), "l2": args.l2, "features": list(FEATURES),
        "fitted": dict(zip(FEATURES, (round(w, 3) for w in fitted), strict=True)),
        "folds": {p: dict(zip(FEATURES, (round(w, 3) for w in ws), strict=True))
                  for p, ws in folds.items()},
        "table": table, "per_project": per_project,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{'weights':32} {'bugs':>5} {'top1':>5} {'top3':>5} {'top5':>5} {'EXAM':>7}")
    for name, row in table.items():
        print(f"{name:32} {row['bugs']:>5} {row['top1']:>5} {row['top3']:>5} {row['top5']:>5} "
              f"{row['exam']:>7}")
    print("PriorWeights(" + ", ".join(f"{k}={v}" for k, v in result["fitted"].items()) + ")")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

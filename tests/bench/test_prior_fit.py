"""The prior's fit: it finds the signal that marks the bug, and ranks count ties fairly."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import prior_fit as pf  # noqa: E402

from equisa_core.localization.prior import FEATURES  # noqa: E402

DEEPEST = FEATURES.index("deepest")
OCHIAI = FEATURES.index("ochiai")


def vector(**values: float) -> tuple[float, ...]:
    return tuple(values.get(name, 0.0) for name in FEATURES)


def case(project: str, bug: int) -> pf.Case:
    # Ochiai prefers a decoy; the bug holds the deepest frame.
    return pf.Case(project=project, bug=str(bug), truth=frozenset({"bug"}), features={
        "bug": vector(ochiai=0.5, deepest=1.0),
        "decoy": vector(ochiai=1.0),
        "other": vector(ochiai=0.2),
    })


def test_the_fit_weighs_the_signal_that_marks_the_bug():
    cases = [case(p, i) for p in ("a", "b", "c") for i in range(3)]
    weights = pf.fit(cases, l2=0.01)
    assert weights[DEEPEST] > 0.5 and weights[DEEPEST] > weights[OCHIAI]
    ochiai_only = [1.0 if n == "ochiai" else 0.0 for n in FEATURES]
    assert pf.evaluate(cases, ochiai_only)["top1"] == 0
    assert pf.evaluate(cases, weights)["top1"] == len(cases)
    folds = pf.cross_validated(cases, l2=0.01)
    assert sorted(folds) == ["a", "b", "c"] and pf.evaluate(cases, folds)["top1"] == len(cases)


def test_ties_count_as_the_average_rank_and_an_unranked_truth_as_a_miss():
    tied = pf.Case(project="p", bug="1", truth=frozenset({"x"}),
                   features={"x": vector(ochiai=1.0), "y": vector(ochiai=1.0), "z": vector()})
    assert pf.rank_of_truth(tied, [1.0 if n == "ochiai" else 0.0 for n in FEATURES]) == (1.5, 3)
    missing = pf.Case(project="p", bug="2", truth=frozenset({"gone"}), features={"x": vector()})
    assert pf.rank_of_truth(missing, [0.0] * len(FEATURES)) == (math.inf, 1)
    nothing = pf.Case(project="p", bug="3", truth=frozenset({"gone"}), features={})
    assert pf.evaluate([missing, nothing], [0.0] * len(FEATURES)) == {"bugs": 2, "top1": 0, "top3": 0,
                                                                      "top5": 0, "exam": 1.0}


def test_cases_are_read_from_reports(tmp_path):
    signals = {"m.f": dict(zip(FEATURES, vector(deepest=1.0), strict=True))}
    report = {"prior": {"weights": {}, "signals": signals}}
    (tmp_path / "r.json").write_text(json.dumps(report))
    (tmp_path / "cases.json").write_text(json.dumps([
        {"project": "p", "bug": 1, "truth": ["m.f"], "report": "r.json"},
        {"project": "p", "bug": 2, "truth": ["m.g"], "report": "missing.json"},
    ]))
    [only] = pf.load_cases(tmp_path / "cases.json")
    assert only.features["m.f"][DEEPEST] == 1.0 and only.truth == {"m.f"}

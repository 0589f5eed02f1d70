"""``bench/oracle_calls_fit.py``: which judged patches hang on the failing tests alone, what a
threshold claims, the fit's cost of a wrong ``fixed``, and the held-out groups."""

from __future__ import annotations

import json
from pathlib import Path

from bench.oracle_calls_fit import (
    NO_PASSING_CALL,
    THRESHOLDS,
    UNDECIDED_PREFIX,
    WRONG_COST,
    Point,
    cross_validated,
    fit,
    outcome,
    point_of,
)
from bench.realrepair.patches import JudgedPatch


def _patch(tmp_path: Path, name: str, evaluation: dict, label: str = "withheld_correct") -> JudgedPatch:
    report = tmp_path / f"{name}.report.json"
    report.write_text(json.dumps({"candidate": "c1", "evaluations": [{"candidate": "c0", "detail": "other"},
                                                                     {"candidate": "c1", **evaluation}]}))
    return JudgedPatch(project="refactory", bug_id=name, version="v", commit="v" * 40, status="plausible_only",
                       target="solution.f", diff="", label=label, original=None, report=report, question=3)


def test_a_patch_counts_only_when_its_verdict_hangs_on_the_failing_tests_alone(tmp_path: Path):
    alone = _patch(tmp_path, "a", {"detail": UNDECIDED_PREFIX + NO_PASSING_CALL, "calls": {"failing": 2.0}})
    assert point_of(alone) == Point("a", "refactory-Q3", 2, True)
    claimed = _patch(tmp_path, "b", {"detail": "passes", "calls": {"failing": 9.0, "failing_inputs": 4.0},
                                     "evidence": "...; the failing tests' assertions check 4 different call(s)"},
                     label="overfit")
    assert point_of(claimed) == Point("b", "refactory-Q3", 4, False), "the distinct inputs, not every call"
    other_doubt = _patch(tmp_path, "c", {"detail": UNDECIDED_PREFIX + NO_PASSING_CALL + "; a pattern",
                                         "calls": {"failing": 3.0}})
    assert point_of(other_doubt) is None, "another doubt would withhold it anyway"
    with_passing = _patch(tmp_path, "d", {"detail": UNDECIDED_PREFIX + NO_PASSING_CALL,
                                          "calls": {"recorded": 1.0, "failing": 3.0}})
    assert point_of(with_passing) is None


def test_the_fit_prices_a_wrong_fixed_and_holds_each_group_out():
    points = ([Point(f"q1-{i}", "Q1", 3, True) for i in range(4)] + [Point("q1-w", "Q1", 2, False)]
              + [Point(f"q2-{i}", "Q2", 2, True) for i in range(3)] + [Point("q3-w", "Q3", 3, False)])
    assert outcome(points, 3) == {"claimed": 5, "correct": 4, "wrong": 1, "withheld_correct": 3}
    assert outcome(points, 2)["correct"] == 7 and WRONG_COST > 7
    assert fit(points) == max(THRESHOLDS), "a wrong one costs more than all the correct ones: claim none"
    held_out = cross_validated(points)
    # without Q3, a threshold of 3 claims Q1's four and no wrong one; Q3's wrong one is then claimed
    assert held_out["thresholds"]["Q3"] == 3 and held_out["wrong"] >= 1
    assert held_out["claimed"] == held_out["correct"] + held_out["wrong"]

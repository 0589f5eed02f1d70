"""``bench/oracle_calls_fit.py``: which judged patches hang on the failing tests alone, what a
threshold claims, the fit's cost of a wrong ``fixed``, and the held-out groups."""

from __future__ import annotations

import json
from pathlib import Path

from bench.oracle_calls_fit import (
    NO_PASSING_CALL,
    THRESHOLDS,
    TOO_FEW_CHECKED,
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


def test_a_patch_counts_only_when_its_verdict_hangs_on_the_count_of_checked_calls(tmp_path: Path):
    alone = _patch(tmp_path, "a", {"detail": UNDECIDED_PREFIX + NO_PASSING_CALL, "calls": {"failing": 2.0}})
    assert point_of(alone) == Point("a", "refactory-Q3", 2, True)
    claimed = _patch(tmp_path, "b", {"detail": "passes", "calls": {"failing": 9.0, "failing_inputs": 4.0},
                                     "evidence": "...; the failing tests' assertions check 4 different call(s)"},
                     label="overfit")
    assert point_of(claimed) == Point("b", "refactory-Q3", 4, False), "the distinct inputs, not every call"
    other_doubt = _patch(tmp_path, "c", {"detail": UNDECIDED_PREFIX + NO_PASSING_CALL + "; a pattern",
                                         "calls": {"failing": 3.0}})
    assert point_of(other_doubt) is None, "another doubt would withhold it anyway"
    thin = _patch(tmp_path, "d", {"detail": UNDECIDED_PREFIX + TOO_FEW_CHECKED + "2 call(s) of the function",
                                  "calls": {"recorded": 1.0, "generated": 0.0, "failing_inputs": 1.0}})
    assert point_of(thin) == Point("d", "refactory-Q3", 2, True), "a passing call and a failing one: two"
    sound = _patch(tmp_path, "e", {"status": "sound", "detail": "passes the suite and every anti-overfitting check",
                                   "calls": {"recorded": 4.0, "generated": 51.0, "failing_inputs": 1.0}},
                   label="correct")
    assert point_of(sound) == Point("e", "refactory-Q3", 56, True), "every checked call counts"
    crashes = _patch(tmp_path, "f", {"status": "overfitting", "detail": "still crashes next to the tests' calls",
                                     "calls": {"failing_inputs": 3.0},
                                     "evidence": "...; the failing tests' assertions check 3 different call(s)"})
    assert point_of(crashes) is None, "withheld by another check, whatever the count"


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

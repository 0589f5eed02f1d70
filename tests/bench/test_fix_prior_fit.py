"""bench/fix_prior_fit.py on tiny hand-made data: fitting, the folds, and the sandboxed executor."""

from __future__ import annotations

import shutil

import pytest

from bench import fix_prior_fit as fpf
from equisa_core.repair.fix_prior import candidate_score


def _program(source: str, group: str, pid: str, candidates: list[tuple[str, int, bool]]) -> dict:
    return {"source": source, "group": group, "id": pid, "candidates": [list(c) for c in candidates]}


RECORDS = [
    _program("refactory", "refactory-q1", "p1", [("swap", 1, False), ("fix", 2, True), ("swap", 1, False)]),
    _program("refactory", "refactory-q1", "p2", [("swap", 1, False), ("fix", 3, True)]),
    _program("refactory", "refactory-q2", "p3", [("swap", 1, False), ("swap", 1, False), ("fix", 2, True)]),
    _program("bugsinpy", "bugsinpy-black", "b1", [("swap", 1, False), ("fix", 1, True)]),
    _program("bugsinpy", "bugsinpy-luigi", "b2", [("swap", 1, False), ("fix", 1, False)]),
    {**_program("refactory", "refactory-q2", "p4", []), "skipped": "passes every case"},
]


def test_the_fit_is_add_one_with_a_pooled_default_and_a_weight_that_puts_fixes_first():
    programs = fpf.programs_of(RECORDS)
    assert [p["id"] for p in programs] == ["p1", "p2", "p3", "b1", "b2"]
    prior = fpf.fit(programs, weights=(0.0, 1.0, 5.0))
    assert prior.counts["swap"].candidates == 7 and prior.counts["swap"].correct == 0
    assert prior.probabilities["fix"] == pytest.approx((4 + 1) / (5 + 2))
    assert prior.probabilities["swap"] == pytest.approx(1 / 9)
    assert prior.default_probability == pytest.approx((4 + 1) / (12 + 2))
    assert prior.edit_weight == 0.0  # a larger weight would put the one-token swaps first again
    for program in programs:
        if any(c.correct for c in program["labelled"]):
            assert fpf.prior_rank(prior, program["labelled"]) == 1
    assert candidate_score(prior, "fix", 3) > candidate_score(prior, "swap", 1)


def test_the_baseline_is_by_edit_size_ties_in_generation_order():
    labelled = [fpf.Labelled("x", 2, False), fpf.Labelled("y", 1, False), fpf.Labelled("z", 1, True)]
    assert fpf.baseline_rank(labelled) == 2
    assert fpf.baseline_rank([fpf.Labelled("x", 1, False)]) is None


def test_a_fold_never_trains_on_its_own_question_or_project():
    programs = fpf.programs_of(RECORDS)
    seen = []
    for group, train, held_out in fpf.folds(programs):
        seen.append(group)
        assert held_out and all(p["group"] == group for p in held_out)
        assert all(p["group"] != group for p in train)
        assert len(train) + len(held_out) == len(programs)
    assert seen == ["bugsinpy-black", "bugsinpy-luigi", "refactory-q1", "refactory-q2"]
    evaluation = fpf.evaluate(programs)
    assert evaluation["all"]["baseline"]["with_correct"] == 4
    assert evaluation["refactory"]["in_sample"]["median_rank"] == 1
    assert set(evaluation["folds"]) == set(seen)
    assert "refactory" in fpf.markdown(
        {"date": "d", "programs": {}, "skipped": {}, "evaluation": evaluation,
         "prior": fpf.fit(programs).model_dump()}
    )


def test_candidates_are_deduplicated_and_a_function_is_replaced_in_its_module():
    module = "X = 1\n\n\ndef f(a, b):\n    return a - b\n\n\ndef g():\n    return 2\n"
    made = fpf.function_candidates(module, "f")
    assert made and len({m.source for m in made}) == len(made)
    replaced = fpf.with_function(module, "f", "def f(a, b):\n    return a + b\n")
    assert replaced == module.replace("a - b", "a + b")


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
def test_the_sandboxed_executor_labels_a_correct_and_a_wrong_candidate():
    buggy = "def add(a, b):\n    return a - b\n"
    module = "import os\n\n\n" + buggy
    made = fpf.function_candidates(module, "add")
    programs = [module] + [fpf.with_function(module, "add", m.source) for m in made]
    programs += [
        "def add(a, b):\n    while True:\n        pass\n",  # stopped by the alarm
        "import os\nos._exit(3)\n",  # kills the runner: resumed after it
        "def add(a, b):\n    return a + b\n",
    ]
    cases = [("add(1, 2)", "3"), ("add(0, 0)", "0"), ("add(-1, 5)", "4")]
    results = fpf.run_candidates(programs, cases)
    assert results[0] is False and results[-3:] == [False, False, True]
    correct = {m.source for m, ok in zip(made, results[1:], strict=False) if ok}
    assert "def add(a, b):\n    return a + b\n" in correct  # (``a - -b`` is correct too)
    assert not all(results[1 : len(made) + 1])

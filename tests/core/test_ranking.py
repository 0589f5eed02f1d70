"""The order of the deterministic repair's candidates (``equisa_core.repair.ranking``)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from equisa_core.mutation.mutants import Mutant
from equisa_core.repair.ranking import MIN_CONFIDENCE, rank_candidates, spread


def mutant(operator: str, edit_size: int, pattern: str = "", name: str = "") -> Mutant:
    return Mutant(fqn="m.f", operator=operator, description=name or operator, line=1,
                  source=f"def f():\n    return {name or operator!r}\n", edit_size=edit_size, pattern=pattern)


def by_size(pattern: str, edit_size: int) -> float:
    return -float(edit_size)


def test_the_smallest_edit_of_a_function_comes_first_and_ties_keep_the_generators_order():
    candidates = {"m.f": [mutant("a", 3), mutant("b", 1), mutant("c", 1), mutant("d", 2)]}
    ranked = rank_candidates(candidates, {"m.f": 0.5}, by_size)
    assert [c.mutant.operator for c in ranked] == ["b", "c", "d", "a"]
    assert [c.index for c in ranked] == [1, 2, 3, 0]


def test_a_likelier_function_comes_before_a_smaller_edit_of_an_unlikely_one():
    candidates = {"m.likely": [mutant("a", 2, name="likely")],
                  "m.unlikely": [mutant("a", 1, name="unlikely")]}
    ranked = rank_candidates(candidates, {"m.likely": 0.9, "m.unlikely": 0.01}, by_size)
    assert [c.target for c in ranked] == ["m.likely", "m.unlikely"]
    assert ranked[0].score == pytest.approx(math.log(0.9) - 2)


def test_the_pattern_prior_orders_candidates_of_equal_size():
    prior = {"name_replace": 0.2, "constant_replace": 0.05}

    def score(pattern: str, edit_size: int) -> float:
        return math.log(prior.get(pattern, 0.01)) - edit_size

    candidates = {"m.f": [mutant("constant_replace", 1, "constant_replace"), mutant("x", 1, "name_replace"),
                          mutant("arithmetic_operator_swap", 1)]}
    ranked = rank_candidates(candidates, {"m.f": 1.0}, score)
    # a mutant without a pattern is scored by its operator
    assert [c.mutant.pattern or c.mutant.operator for c in ranked] == [
        "name_replace", "constant_replace", "arithmetic_operator_swap"]


def test_a_function_the_loop_ruled_out_is_still_ranked_last():
    candidates = {"m.out": [mutant("a", 1, name="out")], "m.in": [mutant("a", 5, name="in")]}
    ranked = rank_candidates(candidates, {"m.out": 0.0, "m.in": 0.3}, by_size)
    assert [c.target for c in ranked] == ["m.in", "m.out"]
    assert ranked[1].score == pytest.approx(math.log(MIN_CONFIDENCE) - 1)


@given(st.lists(st.integers(1, 9), max_size=40), st.integers(1, 5))
def test_spreading_keeps_every_candidate_once_in_rank_order_and_starts_each_part_with_the_best_left(
        sizes: list[int], parts: int) -> None:
    ranked = rank_candidates({"m.f": [mutant("a", s, name=str(i)) for i, s in enumerate(sizes)]},
                             {"m.f": 1.0}, by_size)
    dealt = spread(ranked, parts)
    assert sorted(c.index for part in dealt for c in part) == list(range(len(sizes)))
    assert len(dealt) == min(parts, len(sizes)) and all(dealt)
    rank = {id(c): i for i, c in enumerate(ranked)}
    for part in dealt:
        assert [rank[id(c)] for c in part] == sorted(rank[id(c)] for c in part)
    assert [part[0] for part in dealt] == ranked[:len(dealt)]


def test_spreading_into_no_part_is_refused():
    with pytest.raises(ValueError, match="parts must be >= 1"):
        spread([], 0)

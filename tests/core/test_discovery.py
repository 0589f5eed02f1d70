"""Discovery-loop decisions: which groups to split and when the budget says stop."""

from __future__ import annotations

from equisa_core.discovery.rules import (
    DiscoveryBudget,
    group_sizes,
    groups_to_split,
    keep_test_functions,
    module_test_names,
)

A = frozenset({"m.a", "m.b", "m.c"})
B = frozenset({"m.d", "m.e"})
C = frozenset({"m.f", "m.g"})  # only passing tests run it: Tarantula 0
SCORES = {"m.a": 0.9, "m.b": 0.9, "m.c": 0.9, "m.d": 0.95, "m.e": 0.95, "m.f": 0.0, "m.g": 0.0}


def test_suspicious_groups_first_and_harmless_ones_never():
    assert groups_to_split([A, B, C], SCORES, DiscoveryBudget(), 0, 0) == [B, A]


def test_equal_scores_put_larger_groups_first():
    scores = {**SCORES, "m.d": 0.9, "m.e": 0.9}
    assert groups_to_split([B, A], scores, DiscoveryBudget(), 0, 0) == [A, B]


def test_the_budget_stops_the_loop():
    budget = DiscoveryBudget(max_rounds=2, max_tests=10, max_groups_per_round=1)
    assert groups_to_split([A, B], SCORES, budget, 0, 0) == [B]
    assert groups_to_split([A, B], SCORES, budget, 2, 0) == []
    assert groups_to_split([A, B], SCORES, budget, 1, 10) == []


def test_small_groups_can_be_ignored():
    assert groups_to_split([A, B], SCORES, DiscoveryBudget(min_group_size=3), 0, 0) == [A]


def test_group_sizes_largest_first():
    assert group_sizes([B, A, C]) == [3, 2, 2]


MODULE = """\
import pytest

from pkg import f


def helper():
    return 1


@pytest.mark.parametrize("x", [1, 2])
def test_one(x):
    assert f(x)


async def test_two():
    assert f(2)


class TestThree:
    def test_inside(self):
        assert f(3)
"""


def test_module_test_names_are_top_level_tests_in_order():
    assert module_test_names(MODULE) == ["test_one", "test_two"]


def test_keep_test_functions_cuts_whole_definitions_with_decorators():
    kept = keep_test_functions(MODULE, {"test_two"})
    assert "test_one" not in kept and "parametrize" not in kept
    assert kept == MODULE.replace(
        '@pytest.mark.parametrize("x", [1, 2])\ndef test_one(x):\n    assert f(x)\n', ""
    )
    assert module_test_names(kept) == ["test_two"]
    assert keep_test_functions(MODULE, {"test_one", "test_two"}) == MODULE


def test_only_groups_near_the_top_of_the_prior_are_worth_tests():
    from equisa_core.discovery.rules import near_the_top

    prior = {"a": 1.0, "b": 1.0, "c": 0.5, "d": 0.9, "e": 0.9, "f": 0.1, "g": 0.1, "h": 0.0, "i": 0.0}
    groups = [frozenset("abc"), frozenset("de"), frozenset("fg"), frozenset("hi"), frozenset("dc")]
    # The four best scores are a, b, d, e: the groups holding one of them are kept whole; f and g
    # are too far down; h and i were never run by a failing test.
    assert near_the_top(groups, prior, top=4) == [frozenset("abc"), frozenset("de"), frozenset("dc")]
    assert near_the_top(groups, prior, top=2) == [frozenset("abc")]
    assert near_the_top(groups, prior, top=9) == [frozenset("abc"), frozenset("de"), frozenset("fg"),
                                                  frozenset("dc")]
    assert near_the_top(groups, {}, top=3) == []

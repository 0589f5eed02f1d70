"""Ambiguity groups: nodes with identical non-empty test sets."""

from __future__ import annotations

import time

from equisa_core.discovery.ambiguity import ambiguity_groups


def test_groups_largest_first_ties_by_sorted_names() -> None:
    coverage = {
        "m.z1": {"t1"},
        "m.z2": frozenset({"t1"}),  # set and frozenset with the same tests are one group
        "m.a1": {"t2", "t3"},
        "m.a2": {"t3", "t2"},
        "m.big1": {"t4"},
        "m.big2": {"t4"},
        "m.big3": {"t4"},
        "m.alone": {"t1", "t2"},
    }
    assert ambiguity_groups(coverage) == [
        frozenset({"m.big1", "m.big2", "m.big3"}),
        frozenset({"m.a1", "m.a2"}),  # ["m.a1", "m.a2"] < ["m.z1", "m.z2"]
        frozenset({"m.z1", "m.z2"}),
    ]


def test_order_does_not_depend_on_insertion_order() -> None:
    items = [("b1", {"x"}), ("b2", {"x"}), ("a1", {"y"}), ("a2", {"y"})]
    forward = ambiguity_groups(dict(items))
    backward = ambiguity_groups(dict(reversed(items)))
    assert forward == backward == [frozenset({"a1", "a2"}), frozenset({"b1", "b2"})]


def test_nodes_without_tests_are_not_a_group() -> None:
    coverage = {"m.dead1": set(), "m.dead2": frozenset(), "m.live": {"t"}, "m.dead3": set()}
    assert ambiguity_groups(coverage) == []


def test_singletons_and_empty_input() -> None:
    assert ambiguity_groups({}) == []
    assert ambiguity_groups({"a": {"t1"}, "b": {"t2"}}) == []


def test_returns_frozensets() -> None:
    groups = ambiguity_groups({"a": {"t"}, "b": {"t"}})
    assert groups == [frozenset({"a", "b"})]
    assert all(type(g) is frozenset for g in groups)


def test_fast_for_a_hundred_thousand_nodes() -> None:
    # 100k nodes over 1,000 distinct test sets of 5 tests: 1,000 groups of 100.
    coverage = {
        f"pkg.mod{i % 1000}.f{i}": frozenset(f"t{(i % 1000) + k}" for k in range(5))
        for i in range(100_000)
    }
    start = time.perf_counter()
    groups = ambiguity_groups(coverage)
    elapsed = time.perf_counter() - start
    assert len(groups) == 1000
    assert all(len(g) == 100 for g in groups)
    assert elapsed < 5.0

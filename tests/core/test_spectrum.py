"""Spectrum formulas: hand-computed values, defined zero denominators, and properties."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from equisa_core.discovery.spectrum import FORMULAS, dstar, ochiai, score_nodes, tarantula


@st.composite
def counts(draw: st.DrawFn) -> tuple[int, int, int, int]:
    """Valid (failed_s, passed_s, total_failed, total_passed)."""
    total_failed = draw(st.integers(0, 60))
    total_passed = draw(st.integers(0, 60))
    return (
        draw(st.integers(0, total_failed)),
        draw(st.integers(0, total_passed)),
        total_failed,
        total_passed,
    )


# --- tarantula ---------------------------------------------------------------------------------


def test_tarantula_hand_value() -> None:
    # failed ratio 2/4 = 0.5, passed ratio 1/5 = 0.2 -> 0.5 / (0.2 + 0.5) = 5/7
    assert tarantula(2, 1, 4, 5) == pytest.approx(5 / 7)


def test_tarantula_equal_ratios_is_one_half() -> None:
    # 1/2 / (1/2 + 1/2) = 0.5
    assert tarantula(1, 1, 2, 2) == pytest.approx(0.5)


def test_tarantula_only_failing_tests_is_one() -> None:
    # 3/3 / (0/5 + 3/3) = 1
    assert tarantula(3, 0, 3, 5) == 1.0


def test_tarantula_zero_failed_s_is_zero() -> None:
    # numerator 0/4 = 0 -> 0.0; (0, 0, ...) would be 0/0 without the defined value
    assert tarantula(0, 3, 4, 5) == 0.0
    assert tarantula(0, 0, 4, 5) == 0.0


def test_tarantula_no_failing_tests_at_all_is_zero() -> None:
    # total_failed = 0 forces failed_s = 0: defined as 0.0, not 0/0
    assert tarantula(0, 2, 0, 5) == 0.0
    assert tarantula(0, 0, 0, 0) == 0.0


def test_tarantula_no_passing_tests_gives_one() -> None:
    # total_passed = 0: passed ratio taken as 0 -> (1/4) / (0 + 1/4) = 1
    assert tarantula(1, 0, 4, 0) == 1.0


@pytest.mark.parametrize(
    "args",
    [(-1, 0, 1, 1), (0, -1, 1, 1), (0, 0, -1, 1), (0, 0, 1, -1), (3, 0, 2, 1), (0, 3, 1, 2)],
)
@pytest.mark.parametrize("formula", [tarantula, ochiai, dstar])
def test_formulas_reject_impossible_counts(formula, args: tuple[int, int, int, int]) -> None:
    with pytest.raises(ValueError):
        formula(*args)


@given(counts())
def test_tarantula_is_within_unit_interval(c: tuple[int, int, int, int]) -> None:
    assert 0.0 <= tarantula(*c) <= 1.0


# --- ochiai ------------------------------------------------------------------------------------


def test_ochiai_hand_value() -> None:
    # 2 / sqrt(4 * (2 + 1)) = 2 / sqrt(12) = 0.57735...
    assert ochiai(2, 1, 4, 5) == pytest.approx(2 / math.sqrt(12))
    assert ochiai(2, 1, 4, 5) == pytest.approx(0.5773502692)


def test_ochiai_only_failing_half_of_failures() -> None:
    # 1 / sqrt(4 * (1 + 0)) = 1 / 2
    assert ochiai(1, 0, 4, 0) == pytest.approx(0.5)


def test_ochiai_zero_denominators_are_zero() -> None:
    # total_failed = 0 -> sqrt(0 * 3) = 0 -> defined 0.0
    assert ochiai(0, 3, 0, 3) == 0.0
    # node never executed: sqrt(4 * 0) = 0 -> defined 0.0
    assert ochiai(0, 0, 4, 5) == 0.0


@given(counts())
def test_ochiai_is_within_unit_interval(c: tuple[int, int, int, int]) -> None:
    assert 0.0 <= ochiai(*c) <= 1.0 + 1e-12


# --- dstar -------------------------------------------------------------------------------------


def test_dstar_hand_values() -> None:
    # 2**2 / (1 + (4 - 2)) = 4 / 3
    assert dstar(2, 1, 4, 5) == pytest.approx(4 / 3)
    # 2**3 / (1 + (4 - 2)) = 8 / 3
    assert dstar(2, 1, 4, 5, star=3) == pytest.approx(8 / 3)


def test_dstar_zero_denominator_doubles_numerator() -> None:
    # every failing test and no passing test ran it: denominator 0 + (3 - 3) = 0
    # -> defined as 3**2 * 2 = 18
    assert dstar(3, 0, 3, 5) == 18.0
    # the same failed_s with denominator 1: 3**2 / (0 + (4 - 3)) = 9 < 18
    assert dstar(3, 0, 4, 5) == 9.0
    assert dstar(3, 0, 3, 5) > dstar(3, 0, 4, 5)


def test_dstar_zero_everything_is_zero() -> None:
    # 0**2 / (0 + 0) -> defined 0.0
    assert dstar(0, 0, 0, 4) == 0.0
    # 0**2 / (2 + 3) = 0
    assert dstar(0, 2, 3, 4) == 0.0


def test_dstar_rejects_star_below_one() -> None:
    with pytest.raises(ValueError, match="star"):
        dstar(1, 1, 2, 2, star=0)


@given(counts())
def test_dstar_is_finite_and_non_negative(c: tuple[int, int, int, int]) -> None:
    value = dstar(*c)
    assert math.isfinite(value)
    assert value >= 0.0


# --- FORMULAS and score_nodes -------------------------------------------------------------------


def test_formulas_registry() -> None:
    assert set(FORMULAS) == {"tarantula", "ochiai", "dstar"}
    assert FORMULAS["tarantula"] is tarantula
    read_only: Any = FORMULAS  # the write a read-only mapping refuses at run time
    with pytest.raises(TypeError):
        read_only["other"] = tarantula


def test_score_nodes_hand_values_and_ignored_tests() -> None:
    coverage = {
        "pkg.a": {"f1", "f2", "p1"},
        "pkg.b": {"p1", "p2", "skipped"},
        "pkg.c": set(),
        "pkg.d": {"f1", "skipped"},
    }
    failed, passed = {"f1", "f2"}, {"p1", "p2", "p3"}
    scores = score_nodes(coverage, failed, passed)
    # a: (2/2) / (1/3 + 2/2) = 1 / (4/3) = 0.75
    assert scores["pkg.a"] == pytest.approx(0.75)
    # b: failed_s = 0 -> 0.0 ("skipped" is in neither set and is ignored)
    assert scores["pkg.b"] == 0.0
    # c: never executed -> 0.0
    assert scores["pkg.c"] == 0.0
    # d: (1/2) / (0/3 + 1/2) = 1.0
    assert scores["pkg.d"] == 1.0
    # ochiai of a: 2 / sqrt(2 * (2 + 1)) = 2 / sqrt(6)
    assert score_nodes(coverage, failed, passed, "ochiai")["pkg.a"] == pytest.approx(
        2 / math.sqrt(6)
    )
    # dstar of d: 1**2 / (0 + (2 - 1)) = 1
    assert score_nodes(coverage, failed, passed, "dstar")["pkg.d"] == 1.0


def test_score_nodes_unknown_formula_names_valid_ones() -> None:
    with pytest.raises(ValueError, match="dstar, ochiai, tarantula"):
        score_nodes({"a": {"t"}}, {"t"}, set(), formula="jaccard")


def test_score_nodes_rejects_overlapping_sets() -> None:
    with pytest.raises(ValueError, match="both failed and passed"):
        score_nodes({"a": {"t"}}, {"t", "u"}, {"t"})


def test_score_nodes_empty_coverage() -> None:
    assert score_nodes({}, {"f"}, {"p"}) == {}


@st.composite
def spectra(draw: st.DrawFn) -> tuple[dict[str, set[str]], set[str], set[str]]:
    """A coverage map over failed, passed and ignored tests."""
    failed = {f"f{i}" for i in range(draw(st.integers(0, 8)))}
    passed = {f"p{i}" for i in range(draw(st.integers(0, 8)))}
    ignored = {f"s{i}" for i in range(draw(st.integers(0, 3)))}
    everything = sorted(failed | passed | ignored)
    tests = st.sets(st.sampled_from(everything)) if everything else st.just(set())
    coverage = draw(st.dictionaries(st.text("abcxyz.", min_size=1, max_size=6), tests))
    return coverage, failed, passed


@given(spectra(), st.sampled_from(sorted(FORMULAS)))
def test_score_nodes_agrees_with_the_formula_by_hand(spectrum, name: str) -> None:
    coverage, failed, passed = spectrum
    scores = score_nodes(coverage, failed, passed, name)
    assert set(scores) == set(coverage)
    for fqn, tests in coverage.items():
        failed_s = sum(1 for t in tests if t in failed)
        passed_s = sum(1 for t in tests if t in passed)
        assert scores[fqn] == FORMULAS[name](failed_s, passed_s, len(failed), len(passed))

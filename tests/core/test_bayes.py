"""Bayesian updates: the likelihood table, hand-computed posteriors, and properties."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from equisa_core.localization.bayes import (
    CLAMP_HIGH,
    CLAMP_LOW,
    CONFIDENCE_THRESHOLD,
    LIKELIHOODS,
    PRIOR_FLOOR,
    Outcome,
    bayes,
    clamp,
    classify,
    initial_confidence,
    is_converged,
    posterior,
    update_confidences,
    update_with_likelihoods,
)
from equisa_core.localization.signals import Signals

Out = Outcome
probabilities = st.floats(0.0, 1.0, allow_nan=False)


def test_constants() -> None:
    assert CONFIDENCE_THRESHOLD == 0.9
    assert PRIOR_FLOOR == 0.01
    assert (CLAMP_LOW, CLAMP_HIGH) == (0.01, 0.99)


# --- likelihood table (seed 002, 3.6) -----------------------------------------------------------

TABLE = {
    Out.TARGET_ASSERTION_FAILED: (0.95, 0.05),
    Out.TARGET_ASSERTION_FAILED_BUT_LLM_DISAGREES: (0.60, 0.40),
    Out.COVERED_AND_PASSED: (0.10, 0.90),
    Out.COLLATERAL_FAILURE_LLM_SUSPICIOUS: (0.70, 0.30),
    Out.COLLATERAL_FAILURE_LLM_INNOCENT: (0.40, 0.60),
    Out.COLLATERAL_FAILURE: (0.60, 0.40),
    Out.NO_COVERAGE: (0.50, 0.50),
    Out.INCONCLUSIVE: (0.50, 0.50),
}


def test_likelihood_table_is_verbatim() -> None:
    assert dict(LIKELIHOODS) == TABLE
    assert len(Outcome) == 8
    for outcome in Outcome:
        assert outcome.value == outcome.name
        assert outcome.likelihoods == TABLE[outcome]
    read_only: Any = LIKELIHOODS  # the write a read-only mapping refuses at run time
    with pytest.raises(TypeError):
        read_only[Out.NO_COVERAGE] = (1.0, 0.0)


# Posteriors computed by hand.
# From prior 0.5 the prior cancels: P = P(E|B) / (P(E|B) + P(E|~B)), and each row sums to 1.
# From prior 0.2: P = 0.2 P(E|B) / (0.2 P(E|B) + 0.8 P(E|~B)).
HAND = [
    # outcome, posterior from 0.5, posterior from 0.2
    (Out.TARGET_ASSERTION_FAILED, 0.95, 0.19 / 0.23),  # .19/(.19+.04) = 0.826087
    (Out.TARGET_ASSERTION_FAILED_BUT_LLM_DISAGREES, 0.60, 0.12 / 0.44),  # .12/(.12+.32) = 0.272727
    (Out.COVERED_AND_PASSED, 0.10, 0.02 / 0.74),  # .02/(.02+.72) = 0.027027
    (Out.COLLATERAL_FAILURE_LLM_SUSPICIOUS, 0.70, 0.14 / 0.38),  # .14/(.14+.24) = 0.368421
    (Out.COLLATERAL_FAILURE_LLM_INNOCENT, 0.40, 0.08 / 0.56),  # .08/(.08+.48) = 0.142857
    (Out.COLLATERAL_FAILURE, 0.60, 0.12 / 0.44),  # .12/(.12+.32) = 0.272727
    (Out.NO_COVERAGE, 0.50, 0.20),  # .10/(.10+.40) = 0.2
    (Out.INCONCLUSIVE, 0.50, 0.20),  # .10/(.10+.40) = 0.2
]


@pytest.mark.parametrize(("outcome", "from_half", "from_fifth"), HAND)
def test_posterior_by_hand(outcome: Outcome, from_half: float, from_fifth: float) -> None:
    assert posterior(0.5, outcome) == pytest.approx(from_half)
    assert posterior(0.2, outcome) == pytest.approx(from_fifth)


def test_hand_values_in_decimals() -> None:
    assert posterior(0.2, Out.TARGET_ASSERTION_FAILED) == pytest.approx(0.826087, abs=1e-6)
    assert posterior(0.2, Out.COVERED_AND_PASSED) == pytest.approx(0.027027, abs=1e-6)
    assert posterior(0.2, Out.COLLATERAL_FAILURE_LLM_INNOCENT) == pytest.approx(0.142857, abs=1e-6)


def test_posterior_is_clamped() -> None:
    # .95*.99 / (.95*.99 + .05*.01) = .9405 / .941 = 0.99947 -> 0.99
    assert bayes(0.99, 0.95, 0.05) == pytest.approx(0.9405 / 0.941)
    assert posterior(0.99, Out.TARGET_ASSERTION_FAILED) == 0.99
    # .1*.01 / (.1*.01 + .9*.99) = .001 / .892 = 0.00112 -> 0.01
    assert bayes(0.01, 0.10, 0.90) == pytest.approx(0.001 / 0.892)
    assert posterior(0.01, Out.COVERED_AND_PASSED) == 0.01
    # certain priors are pulled inside the range too
    assert posterior(1.0, Out.NO_COVERAGE) == 0.99
    assert posterior(0.0, Out.NO_COVERAGE) == 0.01


def test_bayes_zero_denominator_returns_prior() -> None:
    # 0*.3 + 0*.7 = 0 -> the prior
    assert bayes(0.3, 0.0, 0.0) == 0.3
    # prior 1 and P(E|B) = 0: 0*1 + .5*0 = 0 -> the prior
    assert bayes(1.0, 0.0, 0.5) == 1.0


def test_clamp() -> None:
    assert clamp(0.0) == 0.01
    assert clamp(0.5) == 0.5
    assert clamp(1.0) == 0.99


@pytest.mark.parametrize("prior", [-0.1, 1.1, math.nan, math.inf])
def test_posterior_rejects_bad_prior(prior: float) -> None:
    with pytest.raises(ValueError, match="prior"):
        posterior(prior, Out.NO_COVERAGE)


def test_bayes_rejects_bad_likelihood() -> None:
    with pytest.raises(ValueError, match=r"P\(E\|B\)"):
        bayes(0.5, 1.5, 0.5)


# --- priors (3.3) -------------------------------------------------------------------------------


def test_initial_confidence_by_hand() -> None:
    # raw = {a: .5, b: max(.01, 0) = .01, c: 1.0, d: max(.01, -2) = .01}; sum = 1.52
    result = initial_confidence({"a": 0.5, "b": 0.0, "c": 1.0, "d": -2.0})
    assert result == pytest.approx(
        {"a": 0.5 / 1.52, "b": 0.01 / 1.52, "c": 1 / 1.52, "d": 0.01 / 1.52}
    )


def test_initial_confidence_all_zero_is_uniform() -> None:
    # raw all .01, sum .03 -> 1/3 each
    assert initial_confidence({"a": 0.0, "b": 0.0, "c": 0.0}) == pytest.approx(
        {"a": 1 / 3, "b": 1 / 3, "c": 1 / 3}
    )


def test_initial_confidence_empty() -> None:
    assert initial_confidence({}) == {}


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_initial_confidence_rejects_non_finite(bad: float) -> None:
    with pytest.raises(ValueError, match="finite"):
        initial_confidence({"a": 0.5, "b": bad})


@given(st.dictionaries(st.text(max_size=5), st.floats(-10, 1e6, allow_nan=False), min_size=1))
def test_priors_sum_to_one_and_are_positive(suspiciousness: dict[str, float]) -> None:
    priors = initial_confidence(suspiciousness)
    assert set(priors) == set(suspiciousness)
    assert abs(math.fsum(priors.values()) - 1.0) <= 1e-9
    assert all(p >= 0.0 for p in priors.values())


# --- classify -----------------------------------------------------------------------------------

B, NB = "CONFIRMED_BUGGY", "CONFIRMED_NOT_BUGGY"


@pytest.mark.parametrize(
    ("covered", "assertion", "failure", "llm", "expected"),
    [
        (False, False, False, None, Out.NO_COVERAGE),
        (False, True, True, B, Out.NO_COVERAGE),
        (False, False, True, NB, Out.NO_COVERAGE),
        (True, True, True, None, Out.TARGET_ASSERTION_FAILED),
        (True, True, True, B, Out.TARGET_ASSERTION_FAILED),
        (True, True, True, NB, Out.TARGET_ASSERTION_FAILED_BUT_LLM_DISAGREES),
        (True, True, False, None, Out.INCONCLUSIVE),
        (True, True, False, B, Out.INCONCLUSIVE),
        (True, False, False, None, Out.COVERED_AND_PASSED),
        (True, False, False, NB, Out.COVERED_AND_PASSED),
        (True, False, True, B, Out.COLLATERAL_FAILURE_LLM_SUSPICIOUS),
        (True, False, True, NB, Out.COLLATERAL_FAILURE_LLM_INNOCENT),
        (True, False, True, None, Out.COLLATERAL_FAILURE),
    ],
)
def test_classify_decision_table(
    covered: bool, assertion: bool, failure: bool, llm: str | None, expected: Outcome
) -> None:
    signals = Signals(is_covered=covered, has_target_assertion=assertion, is_failure=failure)
    assert classify(signals, llm) is expected


@pytest.mark.parametrize("llm", ["BUGGY", "confirmed_buggy", ""])
def test_classify_rejects_unknown_decision(llm: str) -> None:
    signals = Signals(is_covered=True, has_target_assertion=False, is_failure=True)
    with pytest.raises(ValueError, match="llm_decision"):
        classify(signals, llm)


# --- posterior properties -----------------------------------------------------------------------


@given(probabilities, st.sampled_from(list(Outcome)))
def test_posterior_stays_in_clamp_range(prior: float, outcome: Outcome) -> None:
    # ... unless evidence against a node that starts below it would be turned around by the clamp.
    new = posterior(prior, outcome)
    against = outcome.likelihoods[0] < outcome.likelihoods[1]
    assert CLAMP_LOW <= new <= CLAMP_HIGH or (new == prior < CLAMP_LOW and against)


@given(probabilities, st.sampled_from(list(Outcome)))
def test_posterior_moves_with_the_evidence(prior: float, outcome: Outcome) -> None:
    p_b, p_nb = outcome.likelihoods
    new = posterior(prior, outcome)
    if p_b > p_nb:
        assert new >= clamp(prior)
    elif p_b < p_nb:
        assert new <= clamp(prior)
    else:
        assert math.isclose(new, clamp(prior), rel_tol=1e-12, abs_tol=1e-12)


@given(st.floats(0.001, 0.999), st.sampled_from(list(Outcome)))
def test_bayes_moves_strictly_inside_the_interval(prior: float, outcome: Outcome) -> None:
    p_b, p_nb = outcome.likelihoods
    new = bayes(prior, p_b, p_nb)
    if p_b > p_nb:
        assert new > prior
    elif p_b < p_nb:
        assert new < prior


# --- update_confidences (4.3) -------------------------------------------------------------------


def test_update_confidences_by_hand_up() -> None:
    # a: .95*.5 / (.95*.5 + .05*.5) = .95; the others share 1 - .95 = .05 as .3 : .2
    result = update_confidences({"a": 0.5, "b": 0.3, "c": 0.2}, "a", Out.TARGET_ASSERTION_FAILED)
    assert result == pytest.approx({"a": 0.95, "b": 0.03, "c": 0.02})
    assert list(result) == ["a", "b", "c"]


def test_update_confidences_by_hand_down() -> None:
    # b: .1*.3 / (.1*.3 + .9*.7) = .03 / .66 = 0.0454545
    # rest 1 - .03/.66 = .63/.66 shared as .5 : .2 -> a = .63/.66 * 5/7, c = .63/.66 * 2/7
    result = update_confidences({"a": 0.5, "b": 0.3, "c": 0.2}, "b", Out.COVERED_AND_PASSED)
    assert result == pytest.approx(
        {"a": 0.63 / 0.66 * 5 / 7, "b": 0.03 / 0.66, "c": 0.63 / 0.66 * 2 / 7}
    )
    assert result["a"] == pytest.approx(0.681818, abs=1e-6)


def test_update_confidences_others_at_zero_share_evenly() -> None:
    # a: .1*1 / (.1*1 + .9*0) = 1 -> clamped to .99; b and c share .01 evenly
    result = update_confidences({"a": 1.0, "b": 0.0, "c": 0.0}, "a", Out.COVERED_AND_PASSED)
    assert result == pytest.approx({"a": 0.99, "b": 0.005, "c": 0.005})


def test_evidence_against_never_raises_a_node_below_the_clamp() -> None:
    # b starts below CLAMP_LOW; evidence against it must not lift it to the clamp.
    start = {"a": 0.995, "b": 0.005}
    against = update_with_likelihoods(start, "b", (0.6, 0.9))
    assert against["b"] == pytest.approx(0.005) and against["a"] == pytest.approx(0.995)
    # Evidence for it still lifts it (and the clamp keeps it below CLAMP_HIGH).
    assert CLAMP_LOW < update_with_likelihoods(start, "b", (0.9, 0.08))["b"] < CLAMP_HIGH


def test_update_confidences_single_node_keeps_clamped_posterior() -> None:
    assert update_confidences({"a": 1.0}, "a", Out.TARGET_ASSERTION_FAILED) == {"a": 0.99}


def test_update_confidences_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="target"):
        update_confidences({"a": 0.5, "b": 0.5}, "zzz", Out.NO_COVERAGE)
    with pytest.raises(ValueError, match=">= 0"):
        update_confidences({"a": 0.5, "b": -0.5}, "a", Out.NO_COVERAGE)


@st.composite
def distributions(draw: st.DrawFn) -> tuple[dict[str, float], str]:
    """A normalized confidence map of two or more nodes and a target among them."""
    raw = draw(st.lists(st.floats(0.0, 100.0), min_size=2, max_size=20))
    total = math.fsum(raw)
    if total == 0:
        raw, total = [1.0] * len(raw), float(len(raw))
    confidences = {f"n{i}": r / total for i, r in enumerate(raw)}
    return confidences, draw(st.sampled_from(sorted(confidences)))


@given(distributions(), st.sampled_from(list(Outcome)))
# Found by Hypothesis in CI: the other nodes' mass is subnormal, and multiplying first underflowed to 0.
@example(({"n0": 0.0, "n1": 5e-324, "n2": 1.0}, "n2"), Outcome.TARGET_ASSERTION_FAILED)
def test_update_confidences_keeps_the_sum_at_one(dist, outcome: Outcome) -> None:
    confidences, target = dist
    result = update_confidences(confidences, target, outcome)
    assert set(result) == set(confidences)
    assert abs(math.fsum(result.values()) - 1.0) <= 1e-9
    assert all(0.0 <= c <= 1.0 for c in result.values())
    assert result[target] == posterior(confidences[target], outcome)


@given(distributions(), st.sampled_from(list(Outcome)))
def test_update_confidences_keeps_the_others_ratios(dist, outcome: Outcome) -> None:
    confidences, target = dist
    result = update_confidences(confidences, target, outcome)
    others = [fqn for fqn in confidences if fqn != target]
    first = others[0]
    if confidences[first] > 1e-300:  # below that, the ratio overflows to inf (subnormal floats)
        ratio = result[first] / confidences[first]
        for fqn in others:
            assert math.isclose(result[fqn], confidences[fqn] * ratio, rel_tol=1e-9, abs_tol=1e-12)


# --- convergence --------------------------------------------------------------------------------


def test_is_converged() -> None:
    assert is_converged({"a": 0.9, "b": 0.1}) == "a"
    assert is_converged({"a": 0.05, "b": 0.95}) == "b"
    assert is_converged({"a": 0.89, "b": 0.11}) is None
    assert is_converged({}) is None
    # a tie on the top value goes to the smaller FQN
    assert is_converged({"z": 0.95, "m": 0.95}) == "m"

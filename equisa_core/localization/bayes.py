"""Bayesian fault localization (seed 002, sections 3.2-3.7 and 4.3).

Confidences start as normalized suspiciousness; each inspection run of one target node is
classified into an ``Outcome`` whose likelihood pair updates that node by Bayes' theorem, and the
other nodes share the rest of the probability mass under the single-bug hypothesis.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType

from equisa_core.localization.signals import Signals

__all__ = [
    "CLAMP_HIGH",
    "CLAMP_LOW",
    "CONFIDENCE_THRESHOLD",
    "LIKELIHOODS",
    "LLM_BUGGY",
    "LLM_NOT_BUGGY",
    "PRIOR_FLOOR",
    "Outcome",
    "bayes",
    "clamp",
    "classify",
    "initial_confidence",
    "is_converged",
    "posterior",
    "update_confidences",
    "update_with_likelihoods",
]

#: A node whose confidence reaches this is reported as the bug (section 2.1).
CONFIDENCE_THRESHOLD = 0.9
#: Suspiciousness below this is raised to it before normalizing, so no node starts at 0 (3.3).
PRIOR_FLOOR = 0.01
#: Posteriors are clamped to [CLAMP_LOW, CLAMP_HIGH] so later evidence can still move them (3.7).
CLAMP_LOW = 0.01
CLAMP_HIGH = 0.99

#: The LLM reflection's two decisions (3.5); ``None`` stands for a neutral reflection.
LLM_BUGGY = "CONFIRMED_BUGGY"
LLM_NOT_BUGGY = "CONFIRMED_NOT_BUGGY"


class Outcome(StrEnum):
    """The evidence categories of one inspection run (3.6); each value is its name."""

    TARGET_ASSERTION_FAILED = "TARGET_ASSERTION_FAILED"
    TARGET_ASSERTION_FAILED_BUT_LLM_DISAGREES = "TARGET_ASSERTION_FAILED_BUT_LLM_DISAGREES"
    COVERED_AND_PASSED = "COVERED_AND_PASSED"
    COLLATERAL_FAILURE_LLM_SUSPICIOUS = "COLLATERAL_FAILURE_LLM_SUSPICIOUS"
    COLLATERAL_FAILURE_LLM_INNOCENT = "COLLATERAL_FAILURE_LLM_INNOCENT"
    COLLATERAL_FAILURE = "COLLATERAL_FAILURE"
    NO_COVERAGE = "NO_COVERAGE"
    INCONCLUSIVE = "INCONCLUSIVE"

    @property
    def likelihoods(self) -> tuple[float, float]:
        """``(P(E|B), P(E|~B))`` for this outcome, from ``LIKELIHOODS``."""
        return LIKELIHOODS[self]


#: ``(P(E|B), P(E|~B))`` per outcome, verbatim from the table of section 3.6 (read-only).
LIKELIHOODS: Mapping[Outcome, tuple[float, float]] = MappingProxyType(
    {
        Outcome.TARGET_ASSERTION_FAILED: (0.95, 0.05),
        Outcome.TARGET_ASSERTION_FAILED_BUT_LLM_DISAGREES: (0.60, 0.40),
        Outcome.COVERED_AND_PASSED: (0.10, 0.90),
        Outcome.COLLATERAL_FAILURE_LLM_SUSPICIOUS: (0.70, 0.30),
        Outcome.COLLATERAL_FAILURE_LLM_INNOCENT: (0.40, 0.60),
        Outcome.COLLATERAL_FAILURE: (0.60, 0.40),
        Outcome.NO_COVERAGE: (0.50, 0.50),
        Outcome.INCONCLUSIVE: (0.50, 0.50),
    }
)


def initial_confidence(suspiciousness: Mapping[str, float]) -> dict[str, float]:
    """Priors from suspiciousness (3.3): floor, then normalize to sum 1.

        raw[n] = max(PRIOR_FLOOR, s[n]);   confidence[n] = raw[n] / sum(raw)

    The floor makes ``sum(raw) >= 0.01 * len(s) > 0`` for any non-empty mapping; an empty one
    gives ``{}``. A NaN or infinite score raises ``ValueError``.
    """
    bad = sorted(fqn for fqn, s in suspiciousness.items() if not math.isfinite(s))
    if bad:
        raise ValueError(f"suspiciousness must be finite; not for: {', '.join(bad[:5])}")
    raw = {fqn: max(PRIOR_FLOOR, s) for fqn, s in suspiciousness.items()}
    total = math.fsum(raw.values())
    return {fqn: r / total for fqn, r in raw.items()}


def classify(signals: Signals, llm_decision: str | None) -> Outcome:
    """Map the formal signals and the LLM's decision to an ``Outcome``.

    ``llm_decision`` is ``"CONFIRMED_BUGGY"``, ``"CONFIRMED_NOT_BUGGY"`` or ``None`` (neutral);
    anything else raises ``ValueError``. Decision table ("-" = any):

    ========== ============= ========== ================ ==========================================
    covered    target assert failure    LLM              outcome
    ========== ============= ========== ================ ==========================================
    no         -             -          -                NO_COVERAGE (uninformative)
    yes        yes           yes        BUGGY / neutral  TARGET_ASSERTION_FAILED
    yes        yes           yes        NOT_BUGGY        TARGET_ASSERTION_FAILED_BUT_LLM_DISAGREES
    yes        yes           no         -                INCONCLUSIVE (contradictory signals)
    yes        no            no         -                COVERED_AND_PASSED
    yes        no            yes        BUGGY            COLLATERAL_FAILURE_LLM_SUSPICIOUS
    yes        no            yes        NOT_BUGGY        COLLATERAL_FAILURE_LLM_INNOCENT
    yes        no            yes        neutral          COLLATERAL_FAILURE
    ========== ============= ========== ================ ==========================================

    The LLM is not consulted when the run passed: the table of 3.6 has one row for that case.
    """
    if llm_decision not in (LLM_BUGGY, LLM_NOT_BUGGY, None):
        raise ValueError(
            f"llm_decision must be {LLM_BUGGY!r}, {LLM_NOT_BUGGY!r} or None, got {llm_decision!r}"
        )
    if not signals.is_covered:
        return Outcome.NO_COVERAGE
    if signals.has_target_assertion:
        if not signals.is_failure:
            return Outcome.INCONCLUSIVE
        if llm_decision == LLM_NOT_BUGGY:
            return Outcome.TARGET_ASSERTION_FAILED_BUT_LLM_DISAGREES
        return Outcome.TARGET_ASSERTION_FAILED
    if not signals.is_failure:
        return Outcome.COVERED_AND_PASSED
    if llm_decision == LLM_BUGGY:
        return Outcome.COLLATERAL_FAILURE_LLM_SUSPICIOUS
    if llm_decision == LLM_NOT_BUGGY:
        return Outcome.COLLATERAL_FAILURE_LLM_INNOCENT
    return Outcome.COLLATERAL_FAILURE


def _check_probability(name: str, value: float) -> None:
    """Raise ``ValueError`` unless ``value`` is in [0, 1] (NaN is not)."""
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")


def bayes(prior: float, p_e_given_buggy: float, p_e_given_not_buggy: float) -> float:
    """Bayes' theorem (3.2), unclamped.

        P(B|E) = P(E|B) P(B) / (P(E|B) P(B) + P(E|~B) (1 - P(B)))

    Defined value: when the denominator is 0 the evidence is impossible under both hypotheses
    and says nothing, so the prior is returned. Arguments outside [0, 1] raise ``ValueError``.
    """
    _check_probability("prior", prior)
    _check_probability("P(E|B)", p_e_given_buggy)
    _check_probability("P(E|~B)", p_e_given_not_buggy)
    numerator = p_e_given_buggy * prior
    denominator = numerator + p_e_given_not_buggy * (1.0 - prior)
    if denominator == 0:
        return prior
    return numerator / denominator


def clamp(probability: float) -> float:
    """Clamp to the posterior range (3.7): ``min(CLAMP_HIGH, max(CLAMP_LOW, p))``."""
    return min(CLAMP_HIGH, max(CLAMP_LOW, probability))


def _clamped_posterior(prior: float, likelihoods: tuple[float, float]) -> float:
    """``clamp(bayes(prior, *likelihoods))``, never against the evidence.

    The clamp keeps a posterior where later evidence can still move it; it must not turn evidence
    around: a prior already below ``CLAMP_LOW`` stays where it is under evidence against the node
    (the clamp would raise it), and evidence for a node never lowers it (but past ``CLAMP_HIGH``).
    """
    result = clamp(bayes(prior, *likelihoods))
    if likelihoods[0] < likelihoods[1]:
        return min(result, prior)
    if likelihoods[0] > likelihoods[1]:
        return max(result, min(prior, CLAMP_HIGH))
    return result


def posterior(prior: float, outcome: Outcome) -> float:
    """The target's new confidence: ``clamp(bayes(prior, *outcome.likelihoods))``, where the
    clamp never moves it against the evidence (``_clamped_posterior``).

    A prior outside [0, 1] raises ``ValueError``.
    """
    return _clamped_posterior(prior, outcome.likelihoods)


def update_confidences(
    confidences: Mapping[str, float], target: str, outcome: Outcome
) -> dict[str, float]:
    """All nodes' confidences after inspecting ``target`` with the given outcome.

        new[target] = posterior(c[target], outcome)
        new[n]      = (1 - new[target]) * c[n] / sum(c[m] for m != target)    for n != target
        new[n]      = (1 - new[target]) / (number of other nodes)   when that sum is 0

    Single-bug hypothesis (4.3): exactly one node is the bug, and the evidence about the target
    has the same likelihood ``P(E|~B)`` whichever other node it is, so Bayes leaves the others'
    ratios unchanged; they share the remaining mass in proportion to their previous values. The
    clamp applies to the target only, and never against the evidence: a target below ``CLAMP_LOW``
    that the evidence speaks against keeps its confidence. With at least one other node the result
    sums to 1 (even if the input did not); a lone target keeps just its clamped posterior. An
    unknown target or a negative confidence raises ``ValueError``.
    """
    return update_with_likelihoods(confidences, target, outcome.likelihoods)


def update_with_likelihoods(
    confidences: Mapping[str, float], target: str, likelihoods: tuple[float, float]
) -> dict[str, float]:
    """``update_confidences`` for evidence given directly as ``(P(E|B), P(E|~B))``.

    Used for evidence outside the seed's outcome table (``equisa_core.localization.fix_evidence``); the rule
    for the other nodes is the same.
    """
    if target not in confidences:
        raise ValueError(f"target {target!r} is not among the {len(confidences)} nodes")
    negative = sorted(fqn for fqn, c in confidences.items() if not c >= 0.0)
    if negative:
        raise ValueError(f"confidences must be >= 0; not for: {', '.join(negative[:5])}")
    new_target = _clamped_posterior(confidences[target], likelihoods)
    others = {fqn: c for fqn, c in confidences.items() if fqn != target}
    remaining = 1.0 - new_target
    others_total = math.fsum(others.values())
    if others_total >= sys.float_info.min:
        updated = {fqn: remaining * c / others_total for fqn, c in others.items()}
    elif others_total > 0:  # subnormal: ``remaining * c`` would underflow to 0, so divide first
        updated = {fqn: remaining * (c / others_total) for fqn, c in others.items()}
    else:
        updated = {fqn: remaining / len(others) for fqn in others}
    updated[target] = new_target
    return {fqn: updated[fqn] for fqn in confidences}


def is_converged(confidences: Mapping[str, float]) -> str | None:
    """The FQN whose confidence is highest if it is >= ``CONFIDENCE_THRESHOLD``, else ``None``.

    Ties on the highest value go to the smallest FQN.
    """
    if not confidences:
        return None
    fqn, confidence = min(confidences.items(), key=lambda item: (-item[1], item[0]))
    return fqn if confidence >= CONFIDENCE_THRESHOLD else None

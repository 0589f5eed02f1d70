"""Spectrum-based suspiciousness: how strongly each node's coverage correlates with failing tests.

Every formula takes the four counts of one node and returns a score; none adds an epsilon, each
zero denominator has a defined value stated in its docstring. ``score_nodes`` applies a formula to
a whole coverage map.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from types import MappingProxyType

__all__ = [
    "FORMULAS",
    "dstar",
    "ochiai",
    "score_nodes",
    "tarantula",
]


def _check_counts(failed_s: int, passed_s: int, total_failed: int, total_passed: int) -> None:
    """Raise ``ValueError`` unless 0 <= failed_s <= total_failed and 0 <= passed_s <= total_passed."""
    if min(failed_s, passed_s, total_failed, total_passed) < 0:
        raise ValueError(
            "test counts must be non-negative, got "
            f"failed_s={failed_s}, passed_s={passed_s}, "
            f"total_failed={total_failed}, total_passed={total_passed}"
        )
    if failed_s > total_failed:
        raise ValueError(f"failed_s={failed_s} exceeds total_failed={total_failed}")
    if passed_s > total_passed:
        raise ValueError(f"passed_s={passed_s} exceeds total_passed={total_passed}")


def tarantula(failed_s: int, passed_s: int, total_failed: int, total_passed: int) -> float:
    """Tarantula (Jones, Harrold & Stasko 2002), in [0, 1].

        tarantula = (failed_s / total_failed)
                    / (passed_s / total_passed + failed_s / total_failed)

    Defined values: 0.0 when ``failed_s == 0`` (no failing test ran the node, which also covers
    ``total_failed == 0``); when ``total_passed == 0`` the passed ratio is taken as 0, so any
    ``failed_s > 0`` gives 1.0. Counts out of range raise ``ValueError``.
    """
    _check_counts(failed_s, passed_s, total_failed, total_passed)
    if failed_s == 0:
        return 0.0
    failed_ratio = failed_s / total_failed
    passed_ratio = passed_s / total_passed if total_passed else 0.0
    return failed_ratio / (passed_ratio + failed_ratio)


def ochiai(failed_s: int, passed_s: int, total_failed: int, total_passed: int) -> float:
    """Ochiai, in [0, 1].

        ochiai = failed_s / sqrt(total_failed * (failed_s + passed_s))

    Defined value: 0.0 when the denominator is 0 (no failing test at all, or no test ran the
    node). Counts out of range raise ``ValueError``.
    """
    _check_counts(failed_s, passed_s, total_failed, total_passed)
    denominator = math.sqrt(total_failed * (failed_s + passed_s))
    if denominator == 0:
        return 0.0
    return failed_s / denominator


def dstar(
    failed_s: int, passed_s: int, total_failed: int, total_passed: int, star: int = 2
) -> float:
    """DStar (Wong et al. 2014), in [0, inf).

        dstar = failed_s ** star / (passed_s + (total_failed - failed_s))

    Defined value when the denominator is 0 (every failing test and no passing test ran the
    node): ``failed_s ** star * 2``, i.e. the denominator is taken as 1/2. Every other
    denominator is an integer >= 1, so such a node ranks strictly above every node with the same
    ``failed_s`` while the score stays finite (and JSON-serialisable). With ``failed_s == 0``
    the score is 0.0. ``star`` must be >= 1; counts out of range raise ``ValueError``.
    """
    _check_counts(failed_s, passed_s, total_failed, total_passed)
    if star < 1:
        raise ValueError(f"star must be >= 1, got {star}")
    numerator = float(failed_s**star)
    denominator = passed_s + (total_failed - failed_s)
    if denominator == 0:
        return numerator * 2
    return numerator / denominator


#: The formulas ``score_nodes`` accepts, by name (read-only).
FORMULAS: Mapping[str, Callable[[int, int, int, int], float]] = MappingProxyType(
    {"tarantula": tarantula, "ochiai": ochiai, "dstar": dstar}
)


def score_nodes(
    coverage: Mapping[str, AbstractSet[str]],
    failed_tests: AbstractSet[str],
    passed_tests: AbstractSet[str],
    formula: str = "tarantula",
) -> dict[str, float]:
    """Score every node of ``coverage`` with one formula of ``FORMULAS``.

        score[node] = formula(|tests(node) & failed|, |tests(node) & passed|, |failed|, |passed|)

    ``coverage`` maps a node's FQN to the ids of the tests that executed it. Tests that are in
    neither ``failed_tests`` nor ``passed_tests`` (skipped, flaky, unknown) are ignored. An
    unknown formula name or a test that is both failed and passed raises ``ValueError``.
    """
    try:
        score = FORMULAS[formula]
    except KeyError:
        valid = ", ".join(sorted(FORMULAS))
        raise ValueError(f"unknown formula {formula!r}; valid formulas: {valid}") from None
    overlap = failed_tests & passed_tests
    if overlap:
        shown = ", ".join(sorted(overlap)[:5])
        raise ValueError(f"{len(overlap)} test(s) are both failed and passed: {shown}")
    total_failed = len(failed_tests)
    total_passed = len(passed_tests)
    return {
        fqn: score(len(tests & failed_tests), len(tests & passed_tests), total_failed, total_passed)
        for fqn, tests in coverage.items()
    }

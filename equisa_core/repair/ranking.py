"""The order in which the deterministic repair screens its candidate fixes. Pure.

Candidates of every target function are ranked together by

    score = log confidence(function) + pattern_score(pattern, edit size)

``confidence`` is the Localization loop's posterior of the function; ``pattern_score`` is the
fitted prior's ``log P(pattern) - edit_weight * edit_size`` (``equisa_core.repair.fix_prior``),
so that a likely pattern in a likely function comes first, and a small edit before a large one of the
same pattern. Ties keep the functions' order, then the generators' own order. The search spends
its time budget down this order, and the candidates that fix the failing tests are validated in it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from equisa_core.mutation.mutants import Mutant

__all__ = ["MIN_CONFIDENCE", "PatternScore", "RankedCandidate", "rank_candidates", "spread"]

#: A confidence below this counts as this (log 0 is minus infinity, and a function the loop rules
#: out is still worth trying after the others).
MIN_CONFIDENCE = 1e-6

#: ``(pattern, edit_size) -> score``: higher is tried first.
PatternScore = Callable[[str, int], float]


@dataclass(frozen=True)
class RankedCandidate:
    """One candidate of one target, with its score."""

    target: str
    index: int  # in that target's candidate list
    mutant: Mutant
    score: float


def rank_candidates(candidates: Mapping[str, Sequence[Mutant]], confidence: Mapping[str, float],
                    pattern_score: PatternScore) -> list[RankedCandidate]:
    """Every target's candidates in the order to try them (see the module docstring); ``candidates``
    iterates the targets in the ranking's order, which breaks ties."""
    scored = []
    for position, (target, mutants) in enumerate(candidates.items()):
        weight = math.log(max(confidence.get(target, 0.0), MIN_CONFIDENCE))
        for index, mutant in enumerate(mutants):
            score = weight + pattern_score(mutant.pattern or mutant.operator, mutant.edit_size)
            scored.append((-score, position, index, RankedCandidate(target, index, mutant, score)))
    scored.sort(key=lambda item: item[:3])
    return [item[3] for item in scored]


def spread(ranked: Sequence[RankedCandidate], parts: int) -> list[list[RankedCandidate]]:
    """``ranked`` dealt round-robin into at most ``parts`` non-empty lists, each still in rank order:
    parallel screens that each start with the best candidates left."""
    if parts < 1:
        raise ValueError(f"parts must be >= 1, got {parts}")
    dealt: list[list[RankedCandidate]] = [[] for _ in range(min(parts, len(ranked)))]
    for position, candidate in enumerate(ranked):
        dealt[position % len(dealt)].append(candidate)
    return dealt

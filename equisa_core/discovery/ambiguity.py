"""Ambiguity groups: nodes that coverage cannot tell apart.

Two nodes executed by exactly the same tests get the same score from every spectrum formula, so
no amount of re-running those tests separates them; only inspection can.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet

__all__ = ["ambiguity_groups"]


def ambiguity_groups(coverage: Mapping[str, AbstractSet[str]]) -> list[frozenset[str]]:
    """Groups of two or more nodes executed by exactly the same non-empty set of tests.

    ``coverage`` maps a node's FQN to the ids of the tests that executed it; nodes no test ran
    are left out (they are alike only in being unobserved). One pass hashes each test set as a
    frozenset, so the cost is linear in the size of ``coverage``. Groups come largest first,
    ties broken by their sorted member names.
    """
    by_tests: dict[frozenset[str], list[str]] = {}
    for fqn, tests in coverage.items():
        if tests:
            by_tests.setdefault(frozenset(tests), []).append(fqn)
    groups = [sorted(members) for members in by_tests.values() if len(members) > 1]
    groups.sort(key=lambda members: (-len(members), members))
    return [frozenset(members) for members in groups]

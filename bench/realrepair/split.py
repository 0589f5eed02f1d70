"""Which tests EQUISA sees and which the judge keeps hidden: about half of each, seeded by the bug.

``repair_corpus.split_tests`` keeps whole test *files* aside; here the unit is a test (a Refactory
case) or a test function (BugsInPy, so that the cases of one parametrized function stay together).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from bench.repair_corpus import function_of

SEED_PREFIX = "realrepair:"


@dataclass(frozen=True)
class Split:
    """The visible and hidden tests of one bug (units: test ids or test function ids)."""

    seed: str
    tests: tuple[str, ...]
    failing: tuple[str, ...]
    visible: tuple[str, ...]
    hidden: tuple[str, ...]
    visible_failing: tuple[str, ...]
    hidden_failing: tuple[str, ...]

    def is_kept_aside(self, test_id: str) -> bool:
        """A hidden unit, or a case of one (``repair_corpus.classify`` asks this)."""
        hidden = set(self.hidden)
        return test_id in hidden or function_of(test_id) in hidden

    def to_json(self) -> dict:
        return {
            "seed": self.seed,
            "visible": list(self.visible),
            "hidden": list(self.hidden),
            "visible_failing": list(self.visible_failing),
            "hidden_failing": list(self.hidden_failing),
        }

    @classmethod
    def from_json(cls, data: dict) -> Split:
        visible, hidden = tuple(data["visible"]), tuple(data["hidden"])
        vf, hf = tuple(data["visible_failing"]), tuple(data["hidden_failing"])
        return cls(
            seed=data["seed"],
            tests=tuple(sorted(visible + hidden)),
            failing=tuple(sorted(vf + hf)),
            visible=visible,
            hidden=hidden,
            visible_failing=vf,
            hidden_failing=hf,
        )


def split_half(bug_id: str, tests: Iterable[str], failing: Iterable[str]) -> Split:
    """The deterministic split of one bug's tests, seeded with ``realrepair:<bug_id>``.

    Visible: ``ceil(f / 2)`` of the ``f`` failing tests (so at least one) and ``floor(p / 2)`` of
    the ``p`` passing ones; everything else is hidden. Raises ``ValueError`` when no test fails or
    a failing test is not among ``tests``.
    """
    all_tests = sorted(set(tests))
    failing_tests = sorted(set(failing))
    if not failing_tests:
        raise ValueError(f"{bug_id}: no failing test to show")
    unknown = [t for t in failing_tests if t not in set(all_tests)]
    if unknown:
        raise ValueError(f"{bug_id}: failing tests not among the tests: {unknown[:3]}")
    rng = random.Random(SEED_PREFIX + bug_id)  # str seeds are hashed with sha512: stable
    passing = [t for t in all_tests if t not in set(failing_tests)]
    visible_failing = sorted(rng.sample(failing_tests, math.ceil(len(failing_tests) / 2)))
    visible_passing = sorted(rng.sample(passing, len(passing) // 2))
    visible = sorted(visible_failing + visible_passing)
    hidden = [t for t in all_tests if t not in set(visible)]
    return Split(
        seed=SEED_PREFIX + bug_id,
        tests=tuple(all_tests),
        failing=tuple(failing_tests),
        visible=tuple(visible),
        hidden=tuple(hidden),
        visible_failing=tuple(visible_failing),
        hidden_failing=tuple(t for t in failing_tests if t not in set(visible_failing)),
    )


def precheck(
    split: Split, outcomes: dict[str, str], unit_of: Callable[[str], str] = function_of
) -> list[str]:
    """Problems with a plain pytest run of the visible selection (empty: it is as the split says).

    ``outcomes``: pytest id -> PASSED/FAILED/ERROR/..., ``unit_of`` maps an id to its split unit.
    The run must collect exactly the visible units and fail exactly the visible failing ones.
    """
    seen = {unit_of(t) for t in outcomes}
    failed = {unit_of(t) for t, outcome in outcomes.items() if outcome in ("FAILED", "ERROR")}
    problems = []
    if seen != set(split.visible):
        problems.append(f"collected {_diff(seen, split.visible)}")
    if failed != set(split.visible_failing):
        problems.append(f"failing {_diff(failed, split.visible_failing)}")
    return problems


def _diff(got: set[str], wanted: Sequence[str]) -> str:
    extra, missing = sorted(got - set(wanted)), sorted(set(wanted) - got)
    return f"{len(got)} instead of {len(wanted)} (extra {extra[:3]}, missing {missing[:3]})"

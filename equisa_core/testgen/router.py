"""The Router (seed 001): ENHANCE or FINISH, and the stagnation rule it relies on.

``decide`` is the seed's decision function, in its order, with one addition for the seed's
"early exit on critical errors" termination condition (an error no enhancement can fix, such as
the target module failing to import on its own), checked right after the iteration budget:

    iterations_done >= max_iterations -> FINISH
    critical_error                    -> FINISH   (EQUISA: early exit)
    no_progress                       -> FINISH
    compile_error                     -> ENHANCE  (try to fix compilation)
    not low_coverage and not low_mutation -> FINISH (targets met)
    otherwise                         -> ENHANCE

``track_progress`` is the seed's progress tracking, exactly: progress when coverage_delta >= 1.0
or mutation_delta >= 2.0 (percentage points); with no progress while coverage or mutation is below
its target the stagnation counter goes up by one; at 2 ``no_progress`` is set. As in the seed, the
counter is never reset by a later attempt that progresses: two stalled attempts end the loop.
"""

from __future__ import annotations

from typing import Literal

from equisa_core.testgen.critique import Critique

__all__ = [
    "COVERAGE_PROGRESS",
    "MUTATION_PROGRESS",
    "STAGNATION_LIMIT",
    "TARGETS_MET",
    "Decision",
    "decide",
    "track_progress",
]

COVERAGE_PROGRESS = 1.0
MUTATION_PROGRESS = 2.0
STAGNATION_LIMIT = 2
#: The reason of a FINISH with both targets met (a verdict whose reason starts so is ``converged``).
TARGETS_MET = "targets met"

Decision = Literal["ENHANCE", "FINISH"]


def track_progress(
    stagnation_count: int,
    coverage_delta: float,
    mutation_delta: float,
    *,
    low_coverage: bool,
    low_mutation: bool,
) -> tuple[bool, int, bool]:
    """(progress, new stagnation count, no_progress) after one attempt (module docstring)."""
    progress = coverage_delta >= COVERAGE_PROGRESS or mutation_delta >= MUTATION_PROGRESS
    if not progress and (low_coverage or low_mutation):
        stagnation_count += 1
    return progress, stagnation_count, stagnation_count >= STAGNATION_LIMIT


def decide(critique: Critique, iterations_done: int, max_iterations: int) -> tuple[Decision, str]:
    """The decision and its reason (module docstring)."""
    if iterations_done >= max_iterations:
        return "FINISH", f"max iterations ({max_iterations}) reached"
    if critique.critical_error:
        return "FINISH", f"critical error: {critique.critical_error}"
    if critique.no_progress:
        return "FINISH", f"no progress in {critique.stagnation_count} attempts"
    if critique.compile_error:
        return "ENHANCE", "try to fix compilation"
    if not critique.low_coverage and not critique.low_mutation:
        return "FINISH", TARGETS_MET
    return "ENHANCE", "below target" + (" with progress" if critique.progress else "")

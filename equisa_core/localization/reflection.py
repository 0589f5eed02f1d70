"""Deterministic reflection: the Golden Rule of Callees applied to tracebacks (seed 002 §4.2).

Where the LLM reads an inspection run's output and says CONFIRMED_BUGGY or CONFIRMED_NOT_BUGGY,
this module reads the probe's structured tracebacks and decides from *where the failure
originated*: the deepest frame that belongs to the project (not to tests, not to libraries).

- The deepest project frame lies inside the target function: the failure comes from the target's
  own code (one of its inspection assertions, or its logic) → CONFIRMED_BUGGY.
- The target is on the failing stack but a callee below it is the deepest project frame: the
  failure originated in a dependency → CONFIRMED_NOT_BUGGY (the Golden Rule).
- One of the inspection's own assertions fails in the target, but the value it checks may come
  from elsewhere: a *postcondition* (an invariant on the target's result) while project callees of
  the target ran in that test, or a *precondition* (on the arguments or ``self`` at entry, before
  the target's code ran in that call) while other project functions ran in that test. The test
  then blames those functions, as above, and the mutants of the target decide. On the localization
  corpus an inspection assertion fired in a caller or a later reader of the buggy function's
  output in 8 of 37 bugs and made the loop converge on the wrong node, and in the bug itself in 2;
  only a postcondition of a function that called no project code still blames the target.
- The target is not on the failing stack, or nothing failed: no opinion (``None``, neutral), which
  the Bayesian model turns into COLLATERAL_FAILURE or COVERED_AND_PASSED.

Over several failing tests, one that blames the target is enough for CONFIRMED_BUGGY; otherwise
CONFIRMED_NOT_BUGGY needs every failing stack that includes the target to blame a callee, or one
inspection assertion put down to other code (the last case above).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from pydantic import BaseModel, ConfigDict

from equisa_core.common.models import Node, TestOutcome, TestResult, TracebackFrame
from equisa_core.localization.bayes import LLM_BUGGY, LLM_NOT_BUGGY
from equisa_core.localization.inspection import ASSERTION_PREFIX
from equisa_core.localization.invariants import RESULT_NAME
from equisa_core.localization.selection import is_test_file
from equisa_core.localization.signals import same_file

__all__ = ["Reflection", "reflect", "deepest_project_frame"]


class Reflection(BaseModel):
    """A reflection's decision (None: neutral) and the reasoning behind it, for the history."""

    model_config = ConfigDict(frozen=True)

    decision: str | None
    reasoning: str


def deepest_project_frame(frames: Sequence[TracebackFrame]) -> TracebackFrame | None:
    """The innermost frame in the project's own code (relative path, not test code)."""
    for frame in reversed(frames):
        if not frame.file.startswith("/") and not is_test_file(frame.file):
            return frame
    return None


def _in_target(frame: TracebackFrame, target: Node) -> bool:
    if target.file is None or target.start_line is None or target.end_line is None:
        return False
    return same_file(frame.file, target.file) and target.start_line <= frame.line <= target.end_line


def is_inspection_assertion(result: TestResult) -> bool:
    """Did the test fail on one of the assertions of EQUISA's inspection patch?"""
    return result.exception_type == "AssertionError" and ASSERTION_PREFIX in (result.message or "")


def is_postcondition_failure(result: TestResult) -> bool:
    """Did the test fail on one of EQUISA's inspection assertions about the target's result?"""
    return is_inspection_assertion(result) and RESULT_NAME in (result.message or "")


def _other_sources(result: TestResult, target: Node, callees: Collection[str],
                   project: Collection[str]) -> list[str]:
    """Project functions that ran in the test and may have produced the value an inspection
    assertion of the target rejected (see the module docstring); empty when it is the target's."""
    if not is_inspection_assertion(result):
        return []
    pool = callees if is_postcondition_failure(result) else project
    return sorted(f for f in pool if f in result.covered and f != target.fqn)


def reflect(target: Node, results: Sequence[TestResult], callees: Collection[str] = (),
            project: Collection[str] = ()) -> Reflection:
    """Decide whether ``target`` is buggy from the failing tests' tracebacks (see module doc).

    ``callees``: the project functions the target called in this run (from the run's edges);
    ``project``: the project's functions that may hold the bug (candidates, not tests).
    """
    failing = [r for r in results if r.outcome in (TestOutcome.FAILED, TestOutcome.ERROR)]
    if not failing:
        return Reflection(decision=None, reasoning="No test failed; nothing to attribute.")
    blamed_callees: list[str] = []
    reattributed: list[str] = []
    unrelated = 0
    for result in failing:
        on_stack = [f for f in result.traceback if _in_target(f, target)]
        deepest = deepest_project_frame(result.traceback)
        if deepest is not None and _in_target(deepest, target):
            others = _other_sources(result, target, callees, project)
            if others:
                checked = "a result computed with callees" if is_postcondition_failure(result) else \
                    "inputs that these functions, run before it, may have produced:"
                reattributed.append(f"{result.test_id}: an inspection assertion of {target.fqn} fails on "
                                    f"{checked} {', '.join(others[:3])}")
                continue
            return Reflection(
                decision=LLM_BUGGY,
                reasoning=(
                    f"{result.test_id} fails with {result.exception_type} raised in {target.fqn} "
                    f"itself ({deepest.file}:{deepest.line}, in {deepest.function}): the error is "
                    "in the target's own implementation."
                ),
            )
        if on_stack and deepest is not None:
            blamed_callees.append(
                f"{result.test_id}: {result.exception_type} originates in callee {deepest.function} "
                f"({deepest.file}:{deepest.line})"
            )
        else:
            unrelated += 1
    if blamed_callees and not unrelated:
        return Reflection(
            decision=LLM_NOT_BUGGY,
            reasoning="Golden Rule of Callees: every failing stack through the target fails deeper, "
            "in a function it calls. " + "; ".join(blamed_callees[:3]),
        )
    if reattributed:
        # The inspection's assertions are what make the run count as the target's own failure
        # (seed: TARGET_ASSERTION_FAILED); once they are put down to other code, nothing singles
        # the target out, whatever the other failing tests show.
        return Reflection(
            decision=LLM_NOT_BUGGY,
            reasoning="The inspection's assertions in the target reject values other project code may "
            "have produced. " + "; ".join([*reattributed, *blamed_callees][:3]),
        )
    return Reflection(
        decision=None,
        reasoning=f"{len(failing)} failing test(s); {unrelated} fail without {target.fqn} on the "
        "stack, so the evidence does not single it out.",
    )

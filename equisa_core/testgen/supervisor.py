"""The Supervisor (seed 001, Agent 2): a rule-based critique of one attempt, no LLM call.

It reads the runner's result, the static report, both reliability levels and the targets, flags
the issues (``compile_error``, ``no_tests``, ``low_coverage``, ``low_mutation``) and writes the
instructions in the seed's priority order:

1. syntax/compilation: syntax issues; lint/type errors; runner errors (when the syntax is fine);
2. test collection: no tests;
3. coverage: the first 10 missing lines, else "more assertions";
4. mutation: the score toward the target, or "unavailable";
5. reliability guidance: post-execution blockers; lint issues again; the runner's error.

It also computes the deltas against the previous attempt and the stagnation counter the router
reads (``router.track_progress``). Scores are percentages.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.testgen.reliability import PostReliability, PreReliability
from equisa_core.testgen.router import track_progress
from equisa_core.testgen.static import StaticReport

__all__ = ["RunnerMetrics", "Critique", "supervise"]

MAX_MISSING_LINES = 10


class RunnerMetrics(BaseModel):
    """What the runner measured for one attempt."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    success: bool = Field(description="The module ran: it collected and no runner error happened.")
    tests_collected: int = Field(0, ge=0)
    tests_passed: int = Field(0, ge=0)
    coverage: float = Field(0.0, ge=0, le=100, description="Branch coverage of the target file, percent.")
    mutation_score: float | None = Field(None, description="Percent of mutants killed; None: not measured.")
    missing_lines: tuple[int, ...] = ()
    test_error: str | None = Field(None, description="The runner's error, when it failed.")


class Critique(BaseModel):
    """The supervisor's critique (seed 001 ``Critique``) plus the progress fields the router reads."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    compile_error: bool
    no_tests: bool
    low_coverage: bool
    low_mutation: bool
    critical_error: str | None = Field(None, description="An error no enhancement can fix: stop now.")
    coverage: float
    mutation_score: float | None
    lint_issue_count: int
    coverage_delta: float | None = None
    mutation_delta: float | None = None
    progress: bool | None = Field(
        None, description="coverage_delta >= 1.0 or mutation_delta >= 2.0; None on attempt 0."
    )
    stagnation_count: int = 0
    no_progress: bool = False
    instructions: tuple[str, ...] = ()
    missing_lines: tuple[int, ...] = ()


def supervise(
    metrics: RunnerMetrics,
    static: StaticReport,
    pre: PreReliability,
    post: PostReliability,
    *,
    coverage_target: float,
    mutation_target: float,
    previous: Critique | None = None,
    critical_error: str | None = None,
) -> Critique:
    """The critique of one attempt (module docstring); ``previous`` is the last attempt's critique."""
    del pre  # the seed's supervisor reads it but no rule depends on it; kept for the signature
    syntax_ok = static.syntax_ok
    compile_error = not syntax_ok or not metrics.success
    no_tests = metrics.tests_collected == 0
    low_coverage = metrics.coverage < coverage_target
    score = metrics.mutation_score
    low_mutation = score is None or score < mutation_target
    lint = static.lint_issue_count
    missing = tuple(metrics.missing_lines)

    instructions: list[str] = []
    if not syntax_ok:
        instructions.append("Static analyzer found syntax issues; fix parser errors first.")
    if lint > 0:
        instructions.append(f"Resolve {lint} lint/type errors reported by available tools.")
    if compile_error and syntax_ok:
        instructions.append("Resolve Runner errors and ensure tests execute successfully.")
    if no_tests:
        instructions.append("Add at least one pytest/unittest case so tests are collected.")
    if low_coverage:
        if missing:
            instructions.append(f"Add coverage for lines: {_lines(missing[:MAX_MISSING_LINES])}.")
        else:
            instructions.append("Increase test coverage with more assertions.")
    if low_mutation:
        if score is not None and score >= 0.0:
            instructions.append(f"Improve mutation score from {score:.2f}% toward {mutation_target:.2f}%.")
        else:
            instructions.append(
                "Mutation score unavailable; ensure mutation testing runs and improves surviving mutants."
            )
    if post.level not in ("trusted", "pass"):
        instructions.append(f"Reliability blockers: {'; '.join(post.reasons) or post.level}.")
    if lint > 0:
        instructions.append(f"Fix {lint} lint/type issues noted in reliability analysis.")
    if metrics.test_error:
        instructions.append(f"Address runner error reported: {metrics.test_error}.")

    coverage_delta = mutation_delta = None
    progress: bool | None = None
    stagnation = previous.stagnation_count if previous is not None else 0
    no_progress = False
    if previous is not None:
        coverage_delta = round(metrics.coverage - previous.coverage, 4)
        mutation_delta = round((score or 0.0) - (previous.mutation_score or 0.0), 4)
        progress, stagnation, no_progress = track_progress(
            stagnation, coverage_delta, mutation_delta, low_coverage=low_coverage, low_mutation=low_mutation
        )
    return Critique(
        compile_error=compile_error,
        no_tests=no_tests,
        low_coverage=low_coverage,
        low_mutation=low_mutation,
        critical_error=critical_error,
        coverage=metrics.coverage,
        mutation_score=score,
        lint_issue_count=lint,
        coverage_delta=coverage_delta,
        mutation_delta=mutation_delta,
        progress=progress,
        stagnation_count=stagnation,
        no_progress=no_progress,
        instructions=tuple(instructions),
        missing_lines=missing,
    )


def _lines(lines: Sequence[int]) -> str:
    return ", ".join(str(line) for line in lines)

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
reads (``router.track_progress``). Scores are percentages. The types it reads and writes
(``RunnerMetrics``, ``Critique``) live in ``critique``, which the router reads too.
"""

from __future__ import annotations

from collections.abc import Sequence

from equisa_core.testgen.critique import Critique, RunnerMetrics
from equisa_core.testgen.reliability import PostReliability, PreReliability
from equisa_core.testgen.router import track_progress
from equisa_core.testgen.static import StaticReport

__all__ = ["RunnerMetrics", "Critique", "supervise"]

MAX_MISSING_LINES = 10


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

    instructions = _instructions(
        metrics, static, post, compile_error=compile_error, low_coverage=low_coverage,
        low_mutation=low_mutation, mutation_target=mutation_target,
    )

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
        instructions=instructions,
        missing_lines=missing,
    )


def _instructions(
    metrics: RunnerMetrics,
    static: StaticReport,
    post: PostReliability,
    *,
    compile_error: bool,
    low_coverage: bool,
    low_mutation: bool,
    mutation_target: float,
) -> tuple[str, ...]:
    """The instructions, in the seed's priority order (module docstring)."""
    syntax_ok = static.syntax_ok
    lint = static.lint_issue_count
    missing = tuple(metrics.missing_lines)
    score = metrics.mutation_score
    no_tests = metrics.tests_collected == 0
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
    return tuple(instructions)


def _lines(lines: Sequence[int]) -> str:
    return ", ".join(str(line) for line in lines)

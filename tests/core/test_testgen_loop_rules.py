"""Seed 001, exactly: the router's stagnation rule and decision order, the supervisor's priority order."""

from __future__ import annotations

import pytest

from equisa_core.testgen.reliability import PostReliability, PreReliability
from equisa_core.testgen.router import decide, track_progress
from equisa_core.testgen.static import LintIssue, StaticReport
from equisa_core.testgen.supervisor import Critique, RunnerMetrics, supervise

PRE = PreReliability(level="high")


def static(ok: bool = True, lint: int = 0, tests: int = 3) -> StaticReport:
    issues = tuple(LintIssue(tool="ruff", code="F401", line=i + 1, message="unused") for i in range(lint))
    return StaticReport(
        syntax_ok=ok,
        syntax_error=None if ok else "line 1: invalid syntax",
        lint_issues=issues,
        test_count=tests,
    )


def critique(**fields) -> Critique:
    values = dict(
        compile_error=False,
        no_tests=False,
        low_coverage=True,
        low_mutation=True,
        coverage=50.0,
        mutation_score=40.0,
        lint_issue_count=0,
    )
    values.update(fields)
    return Critique(**values)


@pytest.mark.parametrize(
    ("cov", "mut", "progress"),
    [
        (1.0, 0.0, True),
        (0.99, 1.99, False),
        (0.0, 2.0, True),
        (0.99, 2.0, True),
        (-5.0, -5.0, False),
    ],
)
def test_progress_is_coverage_delta_1_or_mutation_delta_2(cov, mut, progress):
    assert track_progress(0, cov, mut, low_coverage=True, low_mutation=True)[0] is progress


def test_two_stalled_attempts_set_no_progress_and_a_progress_does_not_reset_the_counter():
    progress, count, stop = track_progress(0, 0.5, 1.0, low_coverage=True, low_mutation=False)
    assert (progress, count, stop) == (False, 1, False)
    progress, count, stop = track_progress(count, 3.0, 0.0, low_coverage=True, low_mutation=True)
    assert (progress, count, stop) == (True, 1, False)
    progress, count, stop = track_progress(count, 0.0, 0.0, low_coverage=False, low_mutation=True)
    assert (progress, count, stop) == (False, 2, True)


def test_no_progress_with_targets_met_does_not_count_as_stagnation():
    assert track_progress(1, 0.0, 0.0, low_coverage=False, low_mutation=False) == (False, 1, False)


def test_decide_follows_the_seed_order():
    stalled_and_broken = critique(no_progress=True, compile_error=True)
    assert decide(stalled_and_broken, 3, 3)[0] == "FINISH"  # the budget first
    assert decide(stalled_and_broken, 3, 3)[1] == "max iterations (3) reached"
    assert decide(critique(critical_error="x", compile_error=True), 1, 3) == ("FINISH", "critical error: x")
    assert decide(stalled_and_broken, 1, 3)[0] == "FINISH"  # no progress before compile errors
    assert decide(critique(compile_error=True, low_coverage=False, low_mutation=False), 1, 3) == (
        "ENHANCE",
        "try to fix compilation",
    )
    assert decide(critique(low_coverage=False, low_mutation=False), 1, 3) == ("FINISH", "targets met")
    assert decide(critique(low_coverage=False, low_mutation=True), 1, 3)[0] == "ENHANCE"


def test_supervisor_writes_every_instruction_in_the_seed_priority_order():
    metrics = RunnerMetrics(
        success=False,
        tests_collected=0,
        coverage=12.5,
        mutation_score=None,
        missing_lines=tuple(range(1, 15)),
        test_error="ImportError: no module x",
    )
    post = PostReliability(level="discard", reasons=("no tests ran",))
    result = supervise(
        metrics, static(ok=True, lint=2), PRE, post, coverage_target=60.0, mutation_target=50.0
    )
    assert result.instructions == (
        "Resolve 2 lint/type errors reported by available tools.",
        "Resolve Runner errors and ensure tests execute successfully.",
        "Add at least one pytest/unittest case so tests are collected.",
        "Add coverage for lines: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10.",
        "Mutation score unavailable; ensure mutation testing runs and improves surviving mutants.",
        "Reliability blockers: no tests ran.",
        "Fix 2 lint/type issues noted in reliability analysis.",
        "Address runner error reported: ImportError: no module x.",
    )
    assert (result.compile_error, result.no_tests, result.low_coverage, result.low_mutation) == (
        True,
        True,
        True,
        True,
    )


def test_supervisor_syntax_first_and_the_seed_example():
    broken = supervise(
        RunnerMetrics(success=False),
        static(ok=False),
        PRE,
        PostReliability(level="discard"),
        coverage_target=60.0,
        mutation_target=50.0,
    )
    assert broken.instructions[0] == "Static analyzer found syntax issues; fix parser errors first."
    assert "Resolve Runner errors and ensure tests execute successfully." not in broken.instructions
    # Seed 001's attempt-0 example: 44.44% / 37.68%, targets 60 / 50, trusted-looking module.
    example = supervise(
        RunnerMetrics(
            success=True,
            tests_collected=5,
            tests_passed=5,
            coverage=44.44,
            mutation_score=37.68,
            missing_lines=(45, 67, 89),
        ),
        static(),
        PRE,
        PostReliability(level="trusted"),
        coverage_target=60.0,
        mutation_target=50.0,
    )
    assert example.instructions == (
        "Add coverage for lines: 45, 67, 89.",
        "Improve mutation score from 37.68% toward 50.00%.",
    )
    assert example.coverage_delta is None and example.stagnation_count == 0


def test_supervisor_computes_deltas_and_stagnation_from_the_previous_critique():
    first = supervise(
        RunnerMetrics(success=True, tests_collected=3, tests_passed=3, coverage=44.44, mutation_score=37.68),
        static(),
        PRE,
        PostReliability(level="needs_review"),
        coverage_target=60,
        mutation_target=50,
    )
    second = supervise(
        RunnerMetrics(success=True, tests_collected=3, tests_passed=3, coverage=52.11, mutation_score=41.23),
        static(),
        PRE,
        PostReliability(level="needs_review"),
        coverage_target=60,
        mutation_target=50,
        previous=first,
    )
    assert (second.coverage_delta, second.mutation_delta, second.progress) == (7.67, 3.55, True)
    stalled = first
    for expected in (1, 2):
        stalled = supervise(
            RunnerMetrics(
                success=True, tests_collected=3, tests_passed=3, coverage=44.9, mutation_score=38.0
            ),
            static(),
            PRE,
            PostReliability(level="needs_review"),
            coverage_target=60,
            mutation_target=50,
            previous=stalled,
        )
        assert stalled.stagnation_count == expected
    assert stalled.no_progress and decide(stalled, 2, 5)[0] == "FINISH"

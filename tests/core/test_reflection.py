"""The deterministic reflection applies the Golden Rule of Callees to real tracebacks."""

from __future__ import annotations

from equisa_core.common.models import Node, TestResult, TracebackFrame
from equisa_core.localization.bayes import LLM_BUGGY, LLM_NOT_BUGGY
from equisa_core.localization.reflection import deepest_project_frame, reflect

TARGET = Node(fqn="pkg.mod.outer", file="pkg/mod.py", start_line=10, end_line=20)


def failing(*frames: tuple[str, int, str], test: str = "tests/test_m.py::test_x") -> TestResult:
    return TestResult(
        test_id=test, outcome="failed", duration=0.0, exception_type="ValueError",
        traceback=tuple(TracebackFrame(file=f, line=n, function=fn) for f, n, fn in frames),
    )


TEST_FRAME = ("tests/test_m.py", 5, "test_x")


def test_failure_raised_in_the_target_is_its_own_bug():
    result = failing(TEST_FRAME, ("pkg/mod.py", 14, "outer"))
    assert reflect(TARGET, [result]).decision == LLM_BUGGY


def test_failure_in_a_callee_clears_the_target():
    result = failing(TEST_FRAME, ("pkg/mod.py", 14, "outer"), ("pkg/helpers.py", 3, "inner"),
                     ("/usr/lib/python3.11/json/__init__.py", 346, "loads"))
    reflection = reflect(TARGET, [result])
    assert reflection.decision == LLM_NOT_BUGGY
    assert "inner" in reflection.reasoning


def test_library_frames_below_the_target_still_blame_the_target():
    result = failing(TEST_FRAME, ("pkg/mod.py", 15, "outer"), ("/usr/lib/python3.11/json/decoder.py", 9, "x"))
    assert deepest_project_frame(result.traceback).function == "outer"
    assert reflect(TARGET, [result]).decision == LLM_BUGGY


def test_failure_without_the_target_on_the_stack_is_neutral():
    result = failing(TEST_FRAME, ("pkg/other.py", 4, "other"))
    assert reflect(TARGET, [result]).decision is None


def test_passing_runs_are_neutral():
    passed = TestResult(test_id="t", outcome="passed", duration=0.0)
    assert reflect(TARGET, [passed]).decision is None


def test_one_test_blaming_the_target_wins_over_callee_failures():
    callee = failing(TEST_FRAME, ("pkg/mod.py", 14, "outer"), ("pkg/helpers.py", 3, "inner"), test="t1")
    own = failing(TEST_FRAME, ("pkg/mod.py", 18, "outer"), test="t2")
    assert reflect(TARGET, [callee, own]).decision == LLM_BUGGY
    unrelated = failing(TEST_FRAME, ("pkg/other.py", 4, "other"), test="t3")
    assert reflect(TARGET, [callee, unrelated]).decision is None


def postcondition_failure(covered: frozenset[str], test: str = "t") -> TestResult:
    """A failure of the inspection's assertion on the target's result, raised in the target."""
    from equisa_core.localization.inspection import ASSERTION_PREFIX
    from equisa_core.localization.invariants import RESULT_NAME

    return TestResult(
        test_id=test, outcome="failed", duration=0.0, exception_type="AssertionError",
        message=f"{ASSERTION_PREFIX}: relation invariant violated in {TARGET.fqn}: result >= n "
                f"[{RESULT_NAME} >= n]",
        traceback=(TracebackFrame(file="tests/test_m.py", line=5, function="test_x"),
                   TracebackFrame(file="pkg/mod.py", line=19, function="outer")),
        covered=covered,
    )


def test_a_postcondition_failing_on_a_callees_result_blames_the_callee():
    result = postcondition_failure(frozenset({TARGET.fqn, "pkg.helpers.inner"}))
    reflection = reflect(TARGET, [result], callees={"pkg.helpers.inner", "pkg.helpers.unused"})
    assert reflection.decision == LLM_NOT_BUGGY
    assert "pkg.helpers.inner" in reflection.reasoning and "unused" not in reflection.reasoning


def test_a_postcondition_of_a_function_that_called_nothing_blames_it():
    result = postcondition_failure(frozenset({TARGET.fqn}))
    assert reflect(TARGET, [result], callees={"pkg.helpers.inner"}).decision == LLM_BUGGY
    assert reflect(TARGET, [result]).decision == LLM_BUGGY


def test_a_precondition_failure_blames_the_functions_that_ran_before():
    result = postcondition_failure(frozenset({TARGET.fqn, "pkg.helpers.inner", "pkg.state.setup"}))
    message = "EQUISA inspection: type invariant violated in pkg.mod.outer: n is an int [isinstance(n, int)]"
    precondition = result.model_copy(update={"message": message})
    # Callees do not count for a precondition: at entry the target has called nothing yet.
    assert reflect(TARGET, [precondition], callees={"pkg.helpers.inner"}).decision == LLM_BUGGY
    reflection = reflect(TARGET, [precondition], project={TARGET.fqn, "pkg.state.setup", "pkg.unrun"})
    assert reflection.decision == LLM_NOT_BUGGY
    assert "pkg.state.setup" in reflection.reasoning and "pkg.unrun" not in reflection.reasoning


def test_a_reattributed_assertion_clears_the_target_even_beside_unrelated_failures():
    reattributed = postcondition_failure(frozenset({TARGET.fqn, "pkg.helpers.inner"}), test="t1")
    unrelated = failing(TEST_FRAME, ("pkg/other.py", 4, "other"), test="t2")
    reflection = reflect(TARGET, [reattributed, unrelated], callees={"pkg.helpers.inner"})
    assert reflection.decision == LLM_NOT_BUGGY and "t1" in reflection.reasoning
    own = failing(TEST_FRAME, ("pkg/mod.py", 18, "outer"), test="t3")
    assert reflect(TARGET, [reattributed, own], callees={"pkg.helpers.inner"}).decision == LLM_BUGGY

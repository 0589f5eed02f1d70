"""Node selection (seed 002, section 5) and per-node test selection (section 4.4)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from equisa_core.common.models import Edge, Node, SuiteTrace, TestOutcome, TestResult
from equisa_core.localization.selection import (
    TestSelection,
    is_test_file,
    is_test_id,
    is_valid_node,
    recording_sample,
    select_node,
    tests_for_node,
)


def node(fqn: str, file: str | None = "pkg/mod.py", start: int | None = 1) -> Node:
    return Node(fqn=fqn, file=file, start_line=start, end_line=None if start is None else start + 3)


# --- is_test_file / is_test_id ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("test_mod.py", True),
        ("pkg/test_mod.py", True),
        ("pkg/mod_test.py", True),
        ("conftest.py", True),
        ("src/pkg/conftest.py", True),
        ("tests/helpers.py", True),
        ("pkg/test/util.py", True),
        ("tests\\unit\\helpers.py", True),
        ("pkg\\test_win.py", True),
        ("pkg/mod.py", False),
        ("pkg/testing.py", False),
        ("pkg/latest_mod.py", False),
        ("pkg/test_data.txt", False),
        ("pkg/contest.py", False),
        ("testsuite/mod.py", False),
        ("pkg/tests.py", False),
    ],
)
def test_is_test_file(path: str, expected: bool) -> None:
    assert is_test_file(path) is expected


@pytest.mark.parametrize(
    ("test_id", "expected"),
    [
        ("tests/test_a.py::test_x", True),
        ("tests/test_a.py::TestK::test_y[1-2]", True),
        ("src/pkg/checks.py::test_inline", True),  # name starts with test
        ("src/pkg/checks.py::check_it", False),
        ("src/pkg/mod.py::pkg.mod.f", False),  # a doctest item
        ("tests/data.py::something", True),  # under tests/
    ],
)
def test_is_test_id(test_id: str, expected: bool) -> None:
    assert is_test_id(test_id) is expected


# --- is_valid_node ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (node("pkg.mod.f"), True),
        (node("pkg.mod.Cls.method"), True),
        (node("pkg.mod.f", file=None), False),
        (node("pkg.mod.f", file=""), False),
        (node("pkg.mod.f", start=None), False),
        (node("pkg.mod.<lambda>"), False),
        (node("pkg.mod.f.<locals>.<listcomp>"), False),
        (node("pkg.mod.<genexpr>"), False),
        (node("pkg.mod.<dictcomp>"), False),
        (node("pkg.mod.<setcomp>"), False),
        (node("pkg.mod.<module>"), False),
        (node("<module>"), False),
        (node("<string>.f"), False),
        (node("pkg.mod.outer.<locals>.inner"), False),
        (node(""), False),
    ],
)
def test_is_valid_node(n: Node, expected: bool) -> None:
    assert is_valid_node(n) is expected


# --- select_node --------------------------------------------------------------------------------


def test_select_node_picks_the_maximum_valid_node() -> None:
    nodes = {fqn: node(fqn) for fqn in ["m.a", "m.b", "m.c"]}
    nodes["m.<lambda>"] = node("m.<lambda>")
    nodes["m.nofile"] = node("m.nofile", file=None)
    confidences = {"m.a": 0.2, "m.b": 0.3, "m.c": 0.1, "m.<lambda>": 0.9, "m.nofile": 0.8}
    assert select_node(confidences, nodes) == "m.b"
    assert select_node(confidences, nodes, exclude={"m.b"}) == "m.a"
    assert select_node(confidences, nodes, exclude={"m.a", "m.b", "m.c"}) is None


def test_select_node_ties_go_to_the_smallest_fqn() -> None:
    nodes = {fqn: node(fqn) for fqn in ["m.z", "m.k", "m.a"]}
    assert select_node({"m.z": 0.4, "m.k": 0.4, "m.a": 0.2}, nodes) == "m.k"


def test_select_node_ignores_fqns_without_nodes() -> None:
    assert select_node({"m.ghost": 0.9, "m.real": 0.1}, {"m.real": node("m.real")}) == "m.real"
    assert select_node({"m.ghost": 0.9}, {}) is None
    assert select_node({}, {"m.real": node("m.real")}) is None


# --- tests_for_node -----------------------------------------------------------------------------


def result(test_id: str, outcome: TestOutcome, covered: set[str] = frozenset()) -> TestResult:
    return TestResult(test_id=test_id, outcome=outcome, duration=0.1, covered=frozenset(covered))


P, F, E, S = TestOutcome.PASSED, TestOutcome.FAILED, TestOutcome.ERROR, TestOutcome.SKIPPED
TARGET = "pkg.mod.f"


def trace() -> SuiteTrace:
    return SuiteTrace(
        python_version="3.11.7",
        backend="setprofile",
        backend_reason="Python < 3.12",
        tests=(
            result("tests/test_b.py::test_pass2", P, {TARGET}),
            result("tests/test_a.py::test_pass1", P, {TARGET, "pkg.mod.g"}),
            result("tests/test_a.py::test_fail2", F, {TARGET}),
            result("tests/test_a.py::test_fail1[0]", F, {TARGET}),
            result("tests/test_a.py::test_error", E, {TARGET}),
            result("tests/test_a.py::test_skipped", S, {TARGET}),
            result("tests/test_a.py::test_other", F, {"pkg.mod.g"}),
            result("src/pkg/mod.py::pkg.mod.f", P, {TARGET}),  # doctest: not a test by 4.4
            # no per-test coverage, but a test-code caller of the target (module name as on
            # sys.path without the tests package)
            result("tests/test_c.py::TestK::test_via_edge", P),
        ),
        nodes=(
            node(TARGET),
            node("pkg.mod.g"),
            node("test_c.TestK.test_via_edge", file="tests/test_c.py"),
            node("pkg.mod.caller", file="pkg/mod.py"),
        ),
        edges=(
            Edge(caller="test_c.TestK.test_via_edge", callee=TARGET),
            Edge(caller="pkg.mod.caller", callee=TARGET),
        ),
    )


def test_tests_for_node_failing_first_each_sorted() -> None:
    selection = tests_for_node(TARGET, trace())
    assert selection == TestSelection(
        test_ids=(
            "tests/test_a.py::test_error",
            "tests/test_a.py::test_fail1[0]",
            "tests/test_a.py::test_fail2",
            "tests/test_a.py::test_pass1",
            "tests/test_b.py::test_pass2",
            "tests/test_c.py::TestK::test_via_edge",
        ),
        fallback=False,
    )


def test_tests_for_node_cap_keeps_every_failing_test() -> None:
    selection = tests_for_node(TARGET, trace(), max_tests=4)
    assert selection.test_ids == (
        "tests/test_a.py::test_error",
        "tests/test_a.py::test_fail1[0]",
        "tests/test_a.py::test_fail2",
        "tests/test_a.py::test_pass1",
    )
    # a cap below the number of failing tests drops passing ones only
    assert tests_for_node(TARGET, trace(), max_tests=1).test_ids == (
        "tests/test_a.py::test_error",
        "tests/test_a.py::test_fail1[0]",
        "tests/test_a.py::test_fail2",
    )


def test_tests_for_node_cap_fills_with_the_projects_own_tests_before_generated_ones() -> None:
    own = [TestResult(test_id=f"tests/test_own.py::test_{i}", outcome=TestOutcome.PASSED, duration=1.0 + i,
                      covered=frozenset({TARGET})) for i in range(3)]
    carved = [TestResult(test_id=f"tests/equisa_generated/test_carved_group_0.py::test_c{i}",
                         outcome=TestOutcome.PASSED, duration=0.001, covered=frozenset({TARGET}))
              for i in range(3)]
    failing = TestResult(test_id="tests/test_own.py::test_bad", outcome=TestOutcome.FAILED, duration=5.0,
                         covered=frozenset({TARGET}))
    suite = trace().model_copy(update={"tests": (failing, *carved, *own), "edges": ()})
    # the generated tests are the fastest, yet the own ones take the room first
    assert tests_for_node(TARGET, suite, max_tests=3).test_ids == (
        "tests/test_own.py::test_bad", "tests/test_own.py::test_0", "tests/test_own.py::test_1")
    # room left over goes to the generated ones, fastest first
    assert tests_for_node(TARGET, suite, max_tests=6).test_ids == (
        "tests/test_own.py::test_bad",
        "tests/equisa_generated/test_carved_group_0.py::test_c0",
        "tests/equisa_generated/test_carved_group_0.py::test_c1",
        "tests/test_own.py::test_0", "tests/test_own.py::test_1", "tests/test_own.py::test_2")


def test_tests_for_node_rejects_a_cap_below_one() -> None:
    with pytest.raises(ValueError, match="max_tests"):
        tests_for_node(TARGET, trace(), max_tests=0)


def test_tests_for_node_other_node() -> None:
    assert tests_for_node("pkg.mod.g", trace()).test_ids == (
        "tests/test_a.py::test_other",
        "tests/test_a.py::test_pass1",
    )


def test_tests_for_node_falls_back_when_nothing_runs_it() -> None:
    assert tests_for_node("pkg.mod.unused", trace()) == TestSelection(test_ids=(), fallback=True)
    # a non-test caller does not select anything on its own
    assert tests_for_node("pkg.mod.caller", trace()).fallback


def test_test_selection_is_frozen_and_not_collected() -> None:
    selection = TestSelection(test_ids=("t",), fallback=False)
    frozen: Any = selection  # the assignment a frozen model refuses at run time
    with pytest.raises(ValidationError):
        frozen.fallback = True
    assert TestSelection.__test__ is False


def test_suite_trace_coverage_uses_is_test_file() -> None:
    coverage = trace().coverage()
    assert "test_c.TestK.test_via_edge" not in coverage
    assert coverage["pkg.mod.g"] == {"tests/test_a.py::test_pass1", "tests/test_a.py::test_other"}
    assert "test_c.TestK.test_via_edge" in trace().coverage(include_tests=True)


# --- recording_sample ---------------------------------------------------------------------------


def timed(test_id: str, outcome: TestOutcome, duration: float, covered: set[str]) -> TestResult:
    return TestResult(test_id=test_id, outcome=outcome, duration=duration, covered=frozenset(covered))


def test_recording_sample_takes_the_fastest_covering_tests_per_function() -> None:
    passed, failed, skipped = TestOutcome.PASSED, TestOutcome.FAILED, TestOutcome.SKIPPED
    suite = SuiteTrace(
        python_version="3.11.0", backend="instrument", backend_reason="Python < 3.12", collected=(),
        tests=(
            timed("t::slow", passed, 2.0, {"f", "g"}),
            timed("t::fast", passed, 0.1, {"f"}),
            timed("t::mid", passed, 0.5, {"f", "g"}),
            timed("t::tie_b", passed, 0.5, {"g"}),
            timed("t::red_slow", failed, 3.0, {"f"}),
            timed("t::red_fast", failed, 0.2, {"f"}),
            timed("t::flaky", passed, 0.0, {"f"}),
            timed("t::skipped", skipped, 0.0, {"f"}),
            timed("t::other", passed, 0.0, {"h"}),
        ),
        flaky=frozenset({"t::flaky"}),
    )
    # f: fast, mid (passing), red_fast (failing); g: mid, tie_b (0.5 each, by id), not slow.
    assert recording_sample(["f", "g"], suite, passing_per_function=2, failing_per_function=1) == (
        "t::fast", "t::mid", "t::red_fast", "t::tie_b")
    assert recording_sample(["f"], suite, passing_per_function=1) == ("t::fast",)
    assert recording_sample(["nowhere"], suite, 5, 5) == ()
    with pytest.raises(ValueError):
        recording_sample(["f"], suite, -1)

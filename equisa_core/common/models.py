"""The domain types shared by every loop: nodes of the call graph, test results, traces.

Plain pydantic models, immutable where they are keys. Files are always relative to the repository
root with forward slashes, so results are portable between machines and sandboxes.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.testcode import is_test_file

__all__ = [
    "REPORT_SCHEMA_VERSION",
    "Node",
    "Edge",
    "TestOutcome",
    "TracebackFrame",
    "EncodedValue",
    "RecordedCall",
    "TestResult",
    "CollectError",
    "SuiteTrace",
]

#: The version of the JSON reports' schema (``trace``, ``localize``, ``repair``, ``testgen``;
#: ``docs/schema/``): the major part changes when a field is removed or changes meaning, the minor
#: part when one is added.
REPORT_SCHEMA_VERSION = "1.0"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Node(_Frozen):
    """A function of the repository: a node of the dynamic call graph."""

    fqn: str = Field(description="Dotted module path plus qualified name, e.g. 'pkg.mod.Cls.meth'.")
    file: str | None = Field(description="Path relative to the repository root, '/'-separated.")
    start_line: int | None = Field(description="First line of the definition, decorators included.")
    end_line: int | None = Field(description="Last line of the definition.")


class Edge(_Frozen):
    """A caller → callee relation observed at run time."""

    caller: str
    callee: str


class TestOutcome(StrEnum):
    """What happened to one test: pytest's outcome, with setup/teardown failures as ``error``."""

    __test__ = False  # not a pytest test class

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"


class TracebackFrame(_Frozen):
    """One frame of a failure's traceback, innermost last."""

    file: str = Field(description="Relative to the repository root when inside it, else absolute.")
    line: int
    function: str


class EncodedValue(_Frozen):
    """A value seen by the probe: its type, a capped repr, and how to rebuild it if possible."""

    type: str = Field(description="Qualified type name, e.g. 'builtins.int'.")
    repr: str | None = None
    literal: str | None = Field(None, description="A Python literal equal to the value.")
    build: str | None = Field(
        None,
        description=(
            "Only when there is no literal: an expression in the build grammar of "
            "equisa_core.common.values (e.g. \"decimal.Decimal('10.00')\", enum members, "
            "\"__equisa_object__('pkg.mod:Money', {...})\"); untrusted text, checked by "
            "values.parse_build and never evaluated."
        ),
    )
    state: dict[str, str] | None = Field(None, description="Attribute -> literal, for plain objects.")


class RecordedCall(_Frozen):
    """One call of a function whose calls were asked for: arguments, then result or exception."""

    fqn: str
    args: dict[str, EncodedValue]
    result: EncodedValue | None = None
    raised: str | None = Field(None, description="Qualified exception type, when it raised.")
    raised_message: str | None = None


class TestResult(_Frozen):
    """One test's run as the probe recorded it."""

    __test__ = False

    test_id: str = Field(description="pytest node id, e.g. 'tests/test_x.py::TestA::test_b'.")
    outcome: TestOutcome
    duration: float = Field(ge=0.0, description="Seconds over setup, call and teardown.")
    exception_type: str | None = None
    message: str | None = Field(default=None, description="The exception's message, capped.")
    traceback: tuple[TracebackFrame, ...] = ()
    stdout_tail: str = ""
    stderr_tail: str = ""
    covered: frozenset[str] = Field(default=frozenset(), description="FQNs of nodes executed.")
    calls: tuple[RecordedCall, ...] = Field((), description="Recorded calls (only when asked).")


class CollectError(_Frozen):
    """A module or item that failed to collect (import errors, syntax errors)."""

    location: str
    message: str


class SuiteTrace(_Frozen):
    """Everything one traced run of a suite produced."""

    python_version: str
    backend: str = Field(description="'sys.monitoring' or 'setprofile'.")
    backend_reason: str
    tests: tuple[TestResult, ...] = ()
    nodes: tuple[Node, ...] = ()
    edges: tuple[Edge, ...] = ()
    collect_errors: tuple[CollectError, ...] = ()
    crashed: bool = Field(default=False, description="The interpreter died before the suite ended.")
    crashed_in: str | None = Field(default=None, description="The test running when it died.")
    crash_reason: str | None = Field(default=None, description="Exit status or timeout.")
    collected: tuple[str, ...] = Field(default=(), description="Test ids pytest collected, in order.")
    flaky: frozenset[str] = Field(
        default=frozenset(), description="Tests that failed, then passed when re-run alone."
    )
    rerun_apart: frozenset[str] = Field(
        default=frozenset(), description="Failing tests the run itself judged by re-running them apart "
        "(in a fork of its process made before any test ran; those over its cap are not re-run): no "
        "new process re-runs them.")
    rerun_skipped: str | None = Field(
        default=None, description="Why a run asked to re-run its failing tests apart could not (then a "
        "new process re-runs them).")
    imported_elsewhere: dict[str, str] = Field(
        default_factory=dict, description="The repository's packages the run imported from outside its "
        "copy (an editable install of the original tree, an installed release), with the file imported.")

    def coverage(self, *, include_tests: bool = False) -> dict[str, set[str]]:
        """Map each node's FQN to the ids of the tests that executed it.

        Nodes defined in test code (see ``testcode.is_test_file``) are left out unless asked
        for: a test function is executed only by itself, which says nothing about the bug.
        """
        wanted = {
            n.fqn for n in self.nodes if include_tests or not (n.file and is_test_file(n.file))
        }
        result: dict[str, set[str]] = {fqn: set() for fqn in wanted}
        for test in self.tests:
            if test.test_id in self.flaky:
                continue
            if test.outcome in (TestOutcome.PASSED, TestOutcome.FAILED, TestOutcome.ERROR):
                for fqn in test.covered & wanted:
                    result[fqn].add(test.test_id)
        return result

    def failed_tests(self) -> set[str]:
        """Ids of tests that failed or errored, flaky ones excluded."""
        failing = (TestOutcome.FAILED, TestOutcome.ERROR)
        return {t.test_id for t in self.tests if t.outcome in failing and t.test_id not in self.flaky}

    def passed_tests(self) -> set[str]:
        """Ids of tests that passed, flaky ones excluded."""
        return {
            t.test_id for t in self.tests if t.outcome is TestOutcome.PASSED and t.test_id not in self.flaky
        }

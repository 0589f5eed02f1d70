"""Which node to inspect next (seed 002, section 5) and which tests exercise it (section 4.4)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet

from pydantic import BaseModel, ConfigDict

from equisa_core.common.models import Node, SuiteTrace, TestOutcome
from equisa_core.common.testcode import is_generated_test, is_test_file, is_test_id  # last two re-exported

__all__ = [
    "GENERATED_NAMES",
    "TestSelection",
    "is_test_file",
    "is_test_id",
    "is_valid_node",
    "recording_sample",
    "select_node",
    "tests_for_node",
]

#: Code-object names the compiler makes up; such nodes have no definition to patch (5.1).
GENERATED_NAMES = frozenset(
    {"<listcomp>", "<lambda>", "<genexpr>", "<dictcomp>", "<setcomp>", "<module>"}
)


def is_valid_node(node: Node) -> bool:
    """Whether a node can be inspected (5.1).

    It has a file and a start line, its FQN's last component is not compiler-generated
    (``GENERATED_NAMES``), and its FQN neither starts with ``<`` nor contains ``.<`` (which also
    leaves out functions nested in others: ``outer.<locals>.inner``).
    """
    fqn = node.fqn
    return (
        bool(node.file)
        and node.start_line is not None
        and bool(fqn)
        and fqn.rsplit(".", 1)[-1] not in GENERATED_NAMES
        and not fqn.startswith("<")
        and ".<" not in fqn
    )


def select_node(
    confidences: Mapping[str, float],
    nodes: Mapping[str, Node],
    exclude: AbstractSet[str] = frozenset(),
) -> str | None:
    """The valid node with the highest confidence (5.2), or ``None`` when there is none.

    Candidates are the FQNs of ``confidences`` that have a ``Node`` in ``nodes`` passing
    ``is_valid_node`` and are not in ``exclude``. Ties on confidence go to the smallest FQN.
    """
    candidates = [
        (confidence, fqn)
        for fqn, confidence in confidences.items()
        if fqn not in exclude and fqn in nodes and is_valid_node(nodes[fqn])
    ]
    if not candidates:
        return None
    return min(candidates, key=lambda item: (-item[0], item[1]))[1]


class TestSelection(BaseModel):
    """The tests to run when inspecting one node."""

    __test__ = False  # not a pytest test class

    model_config = ConfigDict(frozen=True, extra="forbid")

    test_ids: tuple[str, ...]
    fallback: bool


def _dotted(test_id: str) -> str:
    """A pytest node id as a dotted name: ``tests/test_x.py::C::t[1]`` -> ``tests.test_x.C.t``."""
    file_part, _, rest = test_id.partition("::")
    module = file_part.replace("\\", "/").removesuffix(".py").strip("/").replace("/", ".")
    names = [name.split("[", 1)[0] for name in rest.split("::") if name]
    return ".".join([module, *names])


def _same_dotted(a: str, b: str) -> bool:
    """Whether two dotted names agree, one possibly a suffix of the other on a ``.`` boundary.

    The module part of an FQN depends on ``sys.path`` (``tests.test_x`` or ``test_x``), so
    ``test_x.test_b`` and ``tests.test_x.test_b`` name the same test.
    """
    return a == b or a.endswith("." + b) or b.endswith("." + a)


def _is_test_caller(fqn: str, nodes: Mapping[str, Node]) -> bool:
    """Whether a caller FQN is test code: its node's file is a test file, or its name starts with test."""
    node = nodes.get(fqn)
    if node is not None and node.file and is_test_file(node.file):
        return True
    return fqn.rsplit(".", 1)[-1].startswith("test")


def tests_for_node(fqn: str, trace: SuiteTrace, max_tests: int | None = None) -> TestSelection:
    """The tests that exercise node ``fqn`` (4.4), failing ones first.

    A test of ``trace.tests`` is selected when it looks like a test (``is_test_id``) and either
    its per-test coverage contains ``fqn``, or an edge of ``trace.edges`` shows a test-code caller
    of ``fqn`` whose dotted name matches the test's id. Skipped tests are never selected. The ids
    come failing (failed or errored) first, then passing, each group sorted. ``max_tests`` (>= 1)
    caps the passing ones: every failing test is kept, the fastest passing tests fill the remaining
    room, the project's own before Discovery's generated ones (``is_generated_test``).
    When nothing is selected the result is ``test_ids=()``, ``fallback=True``: run the whole
    suite.
    """
    if max_tests is not None and max_tests < 1:
        raise ValueError(f"max_tests must be >= 1 or None, got {max_tests}")
    nodes = {node.fqn: node for node in trace.nodes}
    test_callers = {
        edge.caller
        for edge in trace.edges
        if edge.callee == fqn and _is_test_caller(edge.caller, nodes)
    }
    failing: set[str] = set()
    passing: set[str] = set()
    for test in trace.tests:
        if test.outcome is TestOutcome.SKIPPED or not is_test_id(test.test_id):
            continue
        dotted = _dotted(test.test_id)
        if fqn in test.covered or any(_same_dotted(dotted, caller) for caller in test_callers):
            if test.outcome is TestOutcome.PASSED:
                passing.add(test.test_id)
            else:
                failing.add(test.test_id)
    if not failing and not passing:
        return TestSelection(test_ids=(), fallback=True)
    chosen_passing = sorted(passing)
    if max_tests is not None:
        # The fastest passing tests fill the room (ties by id): an inspection runs them all. The
        # project's own come first: Discovery's generated tests replay a few recorded calls, run
        # faster than any, and would crowd out the varied passing runs that the value comparison
        # and the invariants learn what is normal from (luigi 11 and 20 of bench/realbugs lost a
        # place when carving began to keep more tests).
        duration = {t.test_id: t.duration for t in trace.tests}
        fastest = sorted(passing, key=lambda t: (is_generated_test(t), duration.get(t, 0.0), t))
        chosen_passing = sorted(fastest[: max(0, max_tests - len(failing))])
    return TestSelection(test_ids=(*sorted(failing), *chosen_passing), fallback=False)


tests_for_node.__test__ = False  # type: ignore[attr-defined]  # its name is pytest's test prefix


def recording_sample(
    fqns: Iterable[str], trace: SuiteTrace, passing_per_function: int, failing_per_function: int = 0,
) -> tuple[str, ...]:
    """The tests a recording run (``RunRequest.record``) needs for ``fqns``, fastest first.

    Recording arguments and results puts a trace hook on every call of the run, which makes a test
    several times slower; carved tests and invariants need a few executions per function, not every
    test that happens to run it. Per function, the ``passing_per_function`` fastest passing tests
    that cover it and the ``failing_per_function`` fastest failing (or erroring) ones; flaky and
    skipped tests never. Ties in duration go by test id, so the sample is deterministic. Sorted ids.
    """
    if passing_per_function < 0 or failing_per_function < 0:
        raise ValueError("the tests per function must be >= 0")
    usable = sorted(
        (t for t in trace.tests if t.test_id not in trace.flaky and t.outcome is not TestOutcome.SKIPPED),
        key=lambda t: (t.duration, t.test_id),
    )
    chosen: set[str] = set()
    for fqn in set(fqns):
        covering = [t for t in usable if fqn in t.covered]
        passing = [t.test_id for t in covering if t.outcome is TestOutcome.PASSED]
        failing = [t.test_id for t in covering if t.outcome is not TestOutcome.PASSED]
        chosen.update(passing[:passing_per_function], failing[:failing_per_function])
    return tuple(sorted(chosen))

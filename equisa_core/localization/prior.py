"""The Localization loop's prior: several signals of one traced suite, combined per function.

Spectrum formulas alone rank a function by how its coverage correlates with failing tests. On real
bugs that misleads in known ways: an exception's constructor runs only in failing tests, and the
function whose value is wrong is often not the one that raised. This module reads, from the same
``SuiteTrace``, what a debugging engineer reads first and turns each into a feature in [0, 1]:

* spectrum: Ochiai, DStar (scaled by the suite's largest), Tarantula;
* the failing tests' tracebacks: whether the function is on the stack, whether it holds the
  deepest frame of the project, and its call-graph distance from that frame;
* closeness to the failing test: called by it directly, and the call depth from it;
* failure machinery: methods of exception classes (what runs only once the fault has shown),
  which the weights demote;
* optionally, the lines changed since a git ref (``--since``), for CI users;
* once the leading functions' calls are recorded, where a wrong value starts
  (``equisa_core.localization.value_evidence``): those two features are 0 in the first prior and come in as
  evidence (``value_likelihoods``).

``combine`` weighs them with ``PriorWeights`` (fitted on the real-bug benchmark, see
``bench/README.md``) into a score whose order is the prior's order. Everything is pure: the flow
passes the trace and, if asked for, the changed lines.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.models import Node, SuiteTrace, TestResult
from equisa_core.discovery.interface import dstar, ochiai, tarantula
from equisa_core.localization.selection import is_test_file
from equisa_core.localization.value_evidence import ValueFinding

__all__ = [
    "FEATURES",
    "DEFAULT_WEIGHTS",
    "NodeSignals",
    "PriorWeights",
    "combine",
    "is_failure_machinery",
    "node_signals",
    "prior_scores",
    "value_likelihoods",
    "with_values",
]

#: The features of ``NodeSignals``, in the order ``PriorWeights`` weighs them.
FEATURES = (
    "ochiai", "dstar", "tarantula", "on_stack", "deepest", "near_deepest",
    "test_calls", "near_test", "failure_machinery", "changed", "value_origin", "value_passed_on",
)

#: Class names that mark exception classes, beside the types the failing tests raised.
_EXCEPTION_SUFFIXES = ("Error", "Exception", "Warning", "Exit", "Failure")


class NodeSignals(BaseModel):
    """What the traced suite says of one function; every feature in [0, 1]."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ochiai: float
    dstar: float = Field(description="DStar (*=2) divided by the suite's largest DStar.")
    tarantula: float
    on_stack: float = Field(description="Share of failing tests whose traceback has a frame in it.")
    deepest: float = Field(description="Share of failing tests whose deepest project frame is in it.")
    near_deepest: float = Field(
        description="Best over failing tests of 1/(1+d), d the call-graph distance (either direction, "
                    "among what the test ran) from the function holding the deepest project frame.")
    test_calls: float = Field(description="Share of failing tests that call it directly.")
    near_test: float = Field(description="1/(1+d), d the fewest calls from a failing test down to it.")
    failure_machinery: float = Field(description="1 for a method of an exception class, else 0.")
    changed: float = Field(0.0, description="1 when its lines changed since the ref given, else 0.")
    value_origin: float = Field(
        0.0, description="Share of failing tests in which a wrong value starts in it "
                         "(equisa_core.localization.value_evidence); 0 when its calls were not recorded.")
    value_passed_on: float = Field(0.0, description="Share in which it returned a new kind of value that a "
                                                    "callee or a caller's argument brought.")

    def vector(self) -> tuple[float, ...]:
        """The features in ``FEATURES`` order."""
        return tuple(getattr(self, name) for name in FEATURES)


class PriorWeights(BaseModel):
    """Weights of a linear combination of the features; the score is ``bias + sum(w * feature)``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ochiai: float = 0.0
    dstar: float = 0.0
    tarantula: float = 0.0
    on_stack: float = 0.0
    deepest: float = 0.0
    near_deepest: float = 0.0
    test_calls: float = 0.0
    near_test: float = 0.0
    failure_machinery: float = 0.0
    changed: float = 0.0
    value_origin: float = 0.0
    value_passed_on: float = 0.0
    source: str = Field("hand-set", description="Where the weights come from (a fit, by hand).")


#: The deterministic mode's weights. Fitted on the real-bug benchmark (``bench/realbugs``) with
#: leave-one-project-out cross-validation; ``bench/README.md`` shows the fit and its figures.
DEFAULT_WEIGHTS = PriorWeights(
    ochiai=2.0, dstar=0.5, tarantula=0.5, on_stack=1.0, deepest=1.5, near_deepest=0.5,
    test_calls=0.5, near_test=0.5, failure_machinery=-3.0, changed=1.0, value_origin=3.0,
    value_passed_on=-1.0,
    source="hand-set before the fit",
)


def is_failure_machinery(fqn: str, raised: AbstractSet[str]) -> bool:
    """Whether ``fqn`` is a method of an exception class: its class is one of the ``raised`` type
    names (unqualified) or its name ends like an exception's (``...Error``, ``...Exception``)."""
    parts = [p for p in fqn.split(".") if p != "<locals>"]
    if len(parts) < 2:
        return False
    owner = parts[-2]
    if not owner[:1].isupper():  # a module or a function, not a class
        return False
    return owner in raised or owner.endswith(_EXCEPTION_SUFFIXES)


def _frame_nodes(nodes: Iterable[Node]) -> dict[str, list[Node]]:
    """Project nodes (outside test code) with a known span, by file, innermost first per line."""
    by_file: dict[str, list[Node]] = {}
    for node in nodes:
        if node.file and node.start_line is not None and node.end_line is not None \
                and not is_test_file(node.file):
            by_file.setdefault(node.file, []).append(node)
    for spans in by_file.values():
        spans.sort(key=lambda n: (n.end_line or 0) - (n.start_line or 0))  # innermost first
    return by_file


def _stack(test: TestResult, by_file: Mapping[str, list[Node]]) -> list[str]:
    """The project functions on a failing test's traceback, outermost first."""
    stack: list[str] = []
    for frame in test.traceback:
        for node in by_file.get(frame.file, ()):
            if node.start_line is not None and node.end_line is not None \
                    and node.start_line <= frame.line <= node.end_line:
                stack.append(node.fqn)
                break
    return stack


def _distances(start: Iterable[str], neighbours: Mapping[str, AbstractSet[str]],
               allowed: AbstractSet[str]) -> dict[str, int]:
    """Breadth-first call-graph distances from ``start`` within ``allowed``."""
    seen = {s: 0 for s in start if s in allowed}
    queue = deque(seen)
    while queue:
        here = queue.popleft()
        for there in neighbours.get(here, ()):
            if there in allowed and there not in seen:
                seen[there] = seen[here] + 1
                queue.append(there)
    return seen


def node_signals(trace: SuiteTrace,
                 changed_lines: Mapping[str, AbstractSet[int]] | None = None) -> dict[str, NodeSignals]:
    """The signals of every project function of ``trace`` (test code left out).

    ``changed_lines`` maps a repository-relative file to the line numbers changed since a ref;
    a function whose span holds one of them gets ``changed = 1``.
    """
    coverage = trace.coverage()
    failed, passed = trace.failed_tests(), trace.passed_tests()
    total_f, total_p = len(failed), len(passed)
    failing = [t for t in trace.tests if t.test_id in failed]
    spectrum = {
        fqn: (len(tests & failed), len(tests & passed)) for fqn, tests in coverage.items()
    }
    dstars = {fqn: dstar(f, p, total_f, total_p) for fqn, (f, p) in spectrum.items()}
    top_dstar = max(dstars.values(), default=0.0) or 1.0
    paths = _failure_paths(trace, failing)
    raised = {t.exception_type.rsplit(".", 1)[-1] for t in failing if t.exception_type}

    spans = {n.fqn: n for n in trace.nodes}
    result: dict[str, NodeSignals] = {}
    share = 1.0 / total_f if total_f else 0.0
    for fqn, (f, p) in spectrum.items():
        result[fqn] = NodeSignals(
            ochiai=ochiai(f, p, total_f, total_p),
            dstar=min(1.0, dstars[fqn] / top_dstar),
            tarantula=tarantula(f, p, total_f, total_p),
            on_stack=paths.on_stack.get(fqn, 0) * share,
            deepest=paths.deepest.get(fqn, 0) * share,
            near_deepest=paths.near_deepest.get(fqn, 0.0),
            test_calls=min(1.0, paths.test_calls.get(fqn, 0) * share),
            near_test=paths.near_test.get(fqn, 0.0),
            failure_machinery=1.0 if is_failure_machinery(fqn, raised) else 0.0,
            changed=1.0 if _is_changed(spans.get(fqn), changed_lines) else 0.0,
        )
    return result


@dataclass
class _FailurePaths:
    """What the failing tests' tracebacks and calls say about each function (counts over tests)."""

    on_stack: dict[str, int] = field(default_factory=dict)
    deepest: dict[str, int] = field(default_factory=dict)
    near_deepest: dict[str, float] = field(default_factory=dict)
    test_calls: dict[str, int] = field(default_factory=dict)
    near_test: dict[str, float] = field(default_factory=dict)


def _failure_paths(trace: SuiteTrace, failing: Sequence[TestResult]) -> _FailurePaths:
    """For each failing test: the project frames of its traceback (the deepest one, and each
    function's call distance from it), and what the test function calls, directly and how deep."""
    by_file = _frame_nodes(trace.nodes)
    callees: dict[str, set[str]] = {}
    either: dict[str, set[str]] = {}
    for edge in trace.edges:
        callees.setdefault(edge.caller, set()).add(edge.callee)
        either.setdefault(edge.caller, set()).add(edge.callee)
        either.setdefault(edge.callee, set()).add(edge.caller)
    test_nodes = {n.fqn for n in trace.nodes if n.file and is_test_file(n.file)}
    paths = _FailurePaths()
    for test in failing:
        ran = set(test.covered)
        stack = _stack(test, by_file)
        for fqn in set(stack):
            paths.on_stack[fqn] = paths.on_stack.get(fqn, 0) + 1
        if stack:
            paths.deepest[stack[-1]] = paths.deepest.get(stack[-1], 0) + 1
            for fqn, d in _distances([stack[-1]], either, ran).items():
                paths.near_deepest[fqn] = max(paths.near_deepest.get(fqn, 0.0), 1.0 / (1 + d))
        own = [fqn for fqn in ran & test_nodes]  # the test function (and helpers in test code)
        for fqn in {c for t in own for c in callees.get(t, ())}:
            paths.test_calls[fqn] = paths.test_calls.get(fqn, 0) + 1
        for fqn, d in _distances(own, callees, ran).items():
            if d:
                paths.near_test[fqn] = max(paths.near_test.get(fqn, 0.0), 1.0 / d)
    return paths


def _is_changed(node: Node | None, changed_lines: Mapping[str, AbstractSet[int]] | None) -> bool:
    """Whether a line changed since the ref lies in ``node``'s span."""
    if not changed_lines or node is None or not node.file or node.start_line is None or node.end_line is None:
        return False
    start, end = node.start_line, node.end_line
    return any(start <= line <= end for line in changed_lines.get(node.file, ()))


def combine(signals: NodeSignals, weights: PriorWeights = DEFAULT_WEIGHTS) -> float:
    """The weighted sum of one function's features."""
    pairs = zip(FEATURES, signals.vector(), strict=True)
    return math.fsum(getattr(weights, name) * value for name, value in pairs)


def prior_scores(signals: Mapping[str, NodeSignals],
                 weights: PriorWeights = DEFAULT_WEIGHTS) -> dict[str, float]:
    """Scores in (0, 1] with the order of ``combine``: a softmax-free squash so that the Bayes
    prior (``bayes.initial_confidence``) keeps its floor meaningful.

        score = exp(combined - max combined)

    The best function scores 1; each unit of combined score below it divides by e. A function
    that no failing test ran keeps the floor's share: its score is 0.
    """
    combined = {fqn: combine(s, weights) for fqn, s in signals.items()}
    if not combined:
        return {}
    top = max(combined.values())
    return {
        fqn: (math.exp(c - top) if signals[fqn].ochiai > 0 or signals[fqn].changed else 0.0)
        for fqn, c in combined.items()
    }


def with_values(signals: Mapping[str, NodeSignals],
                findings: Mapping[str, ValueFinding]) -> dict[str, NodeSignals]:
    """``signals`` with the value comparison's findings filled in."""
    return {
        fqn: s.model_copy(update={"value_origin": findings[fqn].origin,
                                  "value_passed_on": findings[fqn].passed_on})
        if fqn in findings else s
        for fqn, s in signals.items()
    }


def value_likelihoods(finding: ValueFinding, weights: PriorWeights = DEFAULT_WEIGHTS) -> tuple[float, float]:
    """``(P(E|B), P(E|~B))`` of a value finding, whose ratio is ``exp`` of the weighted features:
    counted on the confidences, the finding moves a function's odds as ``combine`` would have moved
    its score had it been known from the start."""
    ratio = math.exp(weights.value_origin * finding.origin + weights.value_passed_on * finding.passed_on)
    return (0.9, 0.9 / ratio) if ratio >= 1 else (0.9 * ratio, 0.9)

"""Choosing the recorded calls a carving turns into tests: what may be asserted about each call
(a result only from a passing test, an exception unless it is the one a failing test failed
with), and which calls to keep per member (distinct inputs with one outcome, spread over outcomes
and argument values).

Part of the carving (``equisa_core.testgen.carving``); pure.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from equisa_core.common.models import EncodedValue, RecordedCall, SuiteTrace, TestOutcome, TestResult
from equisa_core.common.values import walk_build
from equisa_core.testgen.carving_assertions import assertable
from equisa_core.testgen.carving_names import Target
from equisa_core.testgen.carving_values import literal, parsed_build

__all__ = ["COVERING_FACTOR", "Candidate", "candidates_by_member", "select"]

#: Exceptions a carved test never asserts: interpreter control flow and test-runner outcomes.
_UNASSERTABLE_EXCEPTIONS = frozenset(
    {"builtins.BaseException", "builtins.GeneratorExit", "builtins.KeyboardInterrupt", "builtins.SystemExit"}
)
_UNASSERTABLE_MODULES = ("_pytest.", "pytest.", "equisa_probe.")


@dataclass(frozen=True)
class Candidate:
    """A recorded call that may become a test, with what the test would assert."""

    call: RecordedCall
    test: TestResult
    index: int  # order of appearance in the trace
    inputs: tuple[tuple[str, str], ...]
    outcome: tuple[str, str]  # ("result", literal) or ("exception", type)

    @property
    def trusted_source(self) -> bool:
        """Whether the call was recorded in a passing test."""
        return self.test.outcome is TestOutcome.PASSED


def candidates_by_member(trace: SuiteTrace, targets: Sequence[Target]) -> dict[str, list[Candidate]]:
    """Member FQN -> its recorded calls whose outcome can be trusted, in the trace's order;
    flaky tests give none."""
    by_fqn = {t.fqn: t for t in targets}
    candidates: dict[str, list[Candidate]] = {t.fqn: [] for t in targets}
    index = 0
    for test in trace.tests:
        if test.test_id in trace.flaky:
            continue
        for call in test.calls:
            target = by_fqn.get(call.fqn)
            index += 1
            if target is None:
                continue
            outcome = _outcome_of(call, test, target)
            if outcome is None:
                continue
            inputs = tuple((name, _input_key(value)) for name, value in call.args.items())
            candidates[call.fqn].append(Candidate(call, test, index, inputs, outcome))
    return candidates


def _input_key(value: EncodedValue) -> str:
    if value.literal is not None:
        return "L" + value.literal
    if value.build is not None:
        return "B" + value.build
    if value.state is not None:
        return "S" + value.type + repr(sorted(value.state.items()))
    return "R" + value.type + (value.repr or "")


def _short_exception(raised: str) -> str:
    return raised[len("builtins.") :] if raised.startswith("builtins.") else raised


def _assertable_exception(raised: str) -> bool:
    return raised not in _UNASSERTABLE_EXCEPTIONS and not raised.startswith(_UNASSERTABLE_MODULES)


def _failure_came_from(test: TestResult, call: RecordedCall, target: Target) -> bool:
    """Whether the exception ``call`` raised is, as far as the trace shows, the one that failed ``test``."""
    if call.raised is None or test.exception_type != _short_exception(call.raised):
        return False
    if not test.traceback:
        return True
    return any(
        frame.function == target.code_name and (target.file is None or frame.file == target.file)
        for frame in test.traceback
    )


def _outcome_of(call: RecordedCall, test: TestResult, target: Target) -> tuple[str, str] | None:
    """What a carved test may assert about ``call``, or None when nothing can be trusted."""
    if call.raised is not None:
        if not _assertable_exception(call.raised):
            return None
        if test.outcome is not TestOutcome.PASSED and _failure_came_from(test, call, target):
            return None
        return ("exception", call.raised)
    if test.outcome is not TestOutcome.PASSED or call.result is None:
        return None
    pasted = literal(call.result.literal)
    if pasted is not None and _hash_ordered_inputs(call) and _shows_order(pasted):
        return None  # ``repr`` of a set of texts, or an item it gave first: PYTHONHASHSEED decides
    if pasted is not None:
        return ("result", pasted)
    build = call.result.build
    node = parsed_build(build)
    if build is None or node is None or not assertable(node):
        return None
    return ("result", build)


def _hash_ordered_inputs(call: RecordedCall) -> bool:
    """Whether an argument of ``call`` (``self`` included) holds a set of anything but numbers: its
    iteration order, pinned in the sandbox by ``PYTHONHASHSEED``, changes in the user's runs."""
    for value in call.args.values():
        node = parsed_build(value.literal if value.literal is not None else value.build)
        if node is None:
            continue
        for part in walk_build(node):
            if isinstance(part, ast.Set) and any(not _number(item) for item in part.elts):
                return True
    return False


def _number(node: ast.expr) -> bool:
    value = node.operand if isinstance(node, ast.UnaryOp) else node
    return isinstance(value, ast.Constant) and type(value.value) in (int, float)


def _shows_order(literal: str) -> bool:
    """Whether a result's literal is compared in an order (a text, list or tuple: not a number, a
    set or a dict, whose equality ignores the order)."""
    return not isinstance(
        ast.literal_eval(literal), bool | int | float | complex | set | frozenset | dict | type(None)
    )


def _distance(a: Candidate, b: Candidate) -> int:
    """Arguments whose recorded values differ between two calls."""
    left, right = dict(a.inputs), dict(b.inputs)
    return sum(left.get(name) != right.get(name) for name in left.keys() | right.keys())


#: How many times ``limit`` the calls ``select`` may keep while each still reaches lines of the
#: member that the calls chosen before it did not.
COVERING_FACTOR = 4


def select(candidates: list[Candidate], limit: int,
           lines: Callable[[Candidate], frozenset[int]] | None = None) -> list[Candidate]:
    """Up to ``limit`` calls with distinct inputs, spread over outcomes and argument values; with
    ``lines`` (the member's lines a call's test executed), first the calls that reach lines the
    ones chosen before did not, the most new lines first, up to ``COVERING_FACTOR * limit``.

    Inputs seen with two different outcomes are dropped. Among the rest, each pick prefers an
    outcome kind not chosen yet, then the call whose arguments differ most from those chosen
    (the smallest number of differing arguments to any chosen call, maximised), then the
    earliest call; calls from passing tests come first among equal inputs.
    """
    outcomes: dict[tuple[tuple[str, str], ...], set[tuple[str, str]]] = {}
    for candidate in candidates:
        outcomes.setdefault(candidate.inputs, set()).add(candidate.outcome)
    unique: dict[tuple[tuple[str, str], ...], Candidate] = {}
    for candidate in sorted(candidates, key=lambda c: (not c.trusted_source, c.index)):
        if len(outcomes[candidate.inputs]) == 1:
            unique.setdefault(candidate.inputs, candidate)
    pool = sorted(unique.values(), key=lambda c: c.index)
    chosen = _covering(pool, COVERING_FACTOR * limit, lines) if lines is not None and limit else []
    pool = [c for c in pool if c not in chosen]
    while pool and len(chosen) < limit:
        kinds = {c.outcome[0] for c in chosen}

        def preference(candidate: Candidate, kinds: set[str] = kinds) -> tuple[int, int, int]:
            spread = min((_distance(candidate, c) for c in chosen), default=0)
            return (candidate.outcome[0] not in kinds, spread, -candidate.index)

        best = max(pool, key=preference)
        chosen.append(best)
        pool.remove(best)
    return chosen


def _covering(pool: list[Candidate], cap: int,
              lines: Callable[[Candidate], frozenset[int]]) -> list[Candidate]:
    """Greedily, the calls that reach the most lines not reached yet (ties: the earliest), while
    one still adds a line, at most ``cap``."""
    chosen: list[Candidate] = []
    reached: set[int] = set()
    while len(chosen) < cap:
        gains = [(len(lines(c) - reached), -c.index, c) for c in pool if c not in chosen]
        best = max(gains, key=lambda gain: gain[:2], default=None)
        if best is None or best[0] == 0:
            break
        chosen.append(best[2])
        reached |= lines(best[2])
    return chosen

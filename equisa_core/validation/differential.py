"""The overfitting guard's differential test: a candidate against the original on inputs near the
suite's own calls. Pure.

A candidate that passes the visible tests may still be wrong where no test looks. The guard asks
how it behaves next to what the tests exercise. It takes the target's calls recorded in the
visible tests (``RecordedCall``: literal arguments only) and their neighbours
(``neighbour_values``: a number one step off or 0; a sequence with an element dropped, repeated,
swapped or sorted, reversed, or empty; a string shortened or empty; a boolean flipped: the core's
literal rule, ``equisa_core.inputs.neighbours.LITERAL_RULE``, whose scalars the shadow plugin moves
alike; and, for a parameter the body compares with another's items, ``x < seq[0]`` or ``seq[i] <= x``, that
argument's first and last items: the comparison's boundaries, ``compared_with_items``), and runs each
input on the original and on the candidate (``driver_module``: one test per call, the call guarded
by ``try/except``, its result recorded by the probe).

Each input carries the origin of the call it came from. The original program passes the tests
that made the *passing* calls, so near them it is the best oracle there is: a candidate that
changes results there changes behaviour away from the failure (``far_changes``), which is what an
overfitting patch does (a special case, a condition widened past the failing inputs); one such
change, or up to a tenth of those inputs, is tolerated (``FAR_CHANGES_TOLERATED``), unless it
makes the function worse there (``degraded``): a result that becomes None, an exception or a
time-out is never what a fix does next to inputs the original gets right. Where the original
crashed, it is no oracle: a candidate that answers there instead (a value, not None, of a type the
original returns elsewhere) is not counted against it.

Near the *failing* calls the candidate is expected to differ, and it is not judged there, except
for two things. A candidate that gives one and the same answer on every compared input where the
original's answers differed (``collapsed``: at least ``COLLAPSE_MIN_INPUTS`` inputs, booleans
aside) no longer depends on its input: it silenced the function rather than fixed it. And a
candidate that still crashes on a neighbour of any call (``CRASHES``: an ``IndexError``, a
``TypeError``, a time-out...) fixed the tests' inputs, not the function, and is withheld
(``crashes``). An exception the function raises on purpose is a refusal, not a crash
(``refusals``): one its source raises by name, or one the original raised on a call that a
passing test makes.

An input made from both kinds of call takes the strongest origin (``differential_inputs``): an
exact call before a neighbour, a failing call before a passing one. The verdict (``judge``) lists
the far changes and the crashes; ``flows.validation`` rejects a candidate that does not pass as
``OVERFITTING``, with the first of them as the reason, so the search goes on to its next candidate.

Inputs are capped (``MAX_INPUTS``, ``MAX_NEIGHBOURS_PER_CALL``) and deterministic. Results are
compared by their literal (or, without one, their repr) and exceptions by type; an input on which
either version timed out or recorded nothing is left out.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from typing import Literal, TypeGuard

from pydantic import BaseModel, ConfigDict

from equisa_core.common.models import RecordedCall
from equisa_core.inputs.neighbours import LITERAL_RULE, neighbours
from equisa_core.mutation.fix_context import raised_types

__all__ = ["MAX_INPUTS", "MAX_NEIGHBOURS_PER_CALL", "FAR_CHANGES_TOLERATED", "FAR_SHARE_TOLERATED", "CRASHES",
           "COLLAPSE_MIN_INPUTS",
           "DifferentialInput", "Observed", "FarChange", "Crash", "DifferentialVerdict",
           "DifferentialBaseline", "neighbour_values", "compared_with_items", "differential_inputs",
           "driver_module", "observed_of", "raised_by_name", "falls_through_to_none", "judge"]

#: At most this many inputs per target (the exact calls first, then their neighbours).
MAX_INPUTS = 120
#: A candidate may change the result of this many inputs near passing calls, or of this share of
#: them, and pass: a correct fix of a boundary bug changes isolated inputs there (``x <= e`` for
#: ``x < e`` changes the one neighbour that equals an element), while an overfitting patch
#: (a condition widened past the failure) changes a region.
FAR_CHANGES_TOLERATED = 1
FAR_SHARE_TOLERATED = 0.1
#: The exceptions that mean the function crashed, not that it refused its input on purpose (a
#: ``ValueError`` it raises itself is a refusal); ``TestTimeout`` is the probe's time limit.
CRASHES = frozenset({"IndexError", "KeyError", "TypeError", "AttributeError", "NameError",
                     "UnboundLocalError", "ZeroDivisionError", "RecursionError", "TestTimeout"})
#: A candidate that gives one and the same answer on at least this many compared inputs, where the
#: original gave different answers, no longer depends on its input there (``collapsed``).
COLLAPSE_MIN_INPUTS = 4
#: At most this many neighbours of one recorded call.
MAX_NEIGHBOURS_PER_CALL = 14
#: Literals longer than this are not perturbed (their neighbours would make long tests).
_MAX_LITERAL_CHARS = 400
_DRIVER_PREFIX = "test_equisa_differential_"

Origin = Literal["passing", "failing"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DifferentialInput(_Model):
    """One call to make: its driver test's name, where it came from, its text, and whether a test
    made it as it is (``exact``) rather than a neighbour of such a call."""

    name: str
    origin: Origin
    call: str
    exact: bool = False


class Observed(_Model):
    """What one call did: the result's literal (or repr), or the exception's type."""

    result: str | None = None
    raised: str | None = None

    @property
    def raised_name(self) -> str | None:
        """The exception's class name, without its module."""
        return None if self.raised is None else self.raised.rsplit(".", 1)[-1]

    @property
    def answered(self) -> bool:
        """Whether the call returned a value other than None."""
        return self.raised is None and self.result not in (None, "None")

    @property
    def answer_type(self) -> str | None:
        """The type of the value returned (``repr`` when it has no literal), None without one."""
        if not self.answered or self.result is None:
            return None
        try:
            return type(ast.literal_eval(self.result)).__name__
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return "repr"

    @property
    def crashed(self) -> bool:
        """Whether the call raised one of ``CRASHES`` (or ran out of time)."""
        return self.raised_name in CRASHES


class DifferentialBaseline(_Model):
    """The inputs of one target, their driver module and what the original did with each."""

    target: str
    inputs: tuple[DifferentialInput, ...]
    module: str
    per_test_s: float
    original: dict[str, Observed]
    refusals: frozenset[str] = frozenset()
    falls_through: bool = False


class FarChange(_Model):
    """An input near a passing call on which the candidate behaves differently from the original."""

    call: str
    original: Observed
    patched: Observed

    @property
    def degraded(self) -> bool:
        """The original returned a value there, and the candidate returns None, crashes or runs out
        of time: a fix does not do that next to inputs the original gets right."""
        return self.original.answered and (self.patched.crashed or not self.patched.raised and
                                           not self.patched.answered)


class Crash(_Model):
    """A neighbour of a recorded call on which the candidate crashes."""

    call: str
    patched: Observed


class DifferentialVerdict(_Model):
    """The guard's findings on one candidate."""

    compared: int
    far_changes: tuple[FarChange, ...] = ()
    near_changes: int = 0
    crashes: tuple[Crash, ...] = ()
    collapsed: str | None = None
    """The one answer the candidate gives on every compared input, where the original's differed."""

    @property
    def degraded(self) -> tuple[FarChange, ...]:
        """The far changes that make the function worse (``FarChange.degraded``)."""
        return tuple(c for c in self.far_changes if c.degraded)

    @property
    def tolerated(self) -> bool:
        """As many far changes as a boundary fix makes (``FAR_CHANGES_TOLERATED``), or fewer."""
        far, near_passing = len(self.far_changes), self.compared - self.near_changes
        return far <= FAR_CHANGES_TOLERATED or far <= FAR_SHARE_TOLERATED * near_passing

    @property
    def passed(self) -> bool:
        """No more change of behaviour away from the failure than a boundary fix makes, none for
        the worse, no crash next to any call, and answers that still depend on the input."""
        return self.tolerated and not self.degraded and not self.crashes and self.collapsed is None

    def reason(self) -> str:
        """One line for the report."""
        near_passing = self.compared - self.near_changes
        if self.collapsed is not None:
            return (f"no longer depends on its input: returns {self.collapsed} on all {self.compared} "
                    "inputs, on which the original's answers differed")
        if self.degraded:
            first = self.degraded[0]
            return (f"makes the function worse away from the failure on {len(self.degraded)} of "
                    f"{near_passing} input(s) near passing calls, e.g. {first.call}: "
                    f"{_shown(first.original)} before, {_shown(first.patched)} now")
        if not self.tolerated:
            first = self.far_changes[0]
            return (f"changes behaviour away from the failure on {len(self.far_changes)} of {near_passing} "
                    f"input(s) near passing calls, e.g. {first.call}: {_shown(first.original)} "
                    f"before, {_shown(first.patched)} now")
        if self.crashes:
            crash = self.crashes[0]
            return (f"still crashes next to the tests' calls on {len(self.crashes)} of {self.compared} "
                    f"input(s), e.g. {crash.call}: {_shown(crash.patched)}")
        if not self.far_changes:
            return f"same as the original on {near_passing} input(s) near passing calls"
        first = self.far_changes[0]
        return (f"same as the original on {near_passing - len(self.far_changes)} of {near_passing} "
                f"input(s) near passing calls; tolerated: {first.call}: {_shown(first.original)} "
                f"before, {_shown(first.patched)} now")


def _shown(observed: Observed) -> str:
    if observed.raised is not None:
        return f"raised {observed.raised.rsplit('.', 1)[-1]}"
    return f"returned {observed.result}"


def neighbour_values(value: object) -> list[object]:
    """Values next to ``value``: the core's literal rule (``equisa_core.inputs.neighbours``,
    ``LITERAL_RULE``, see the module docstring). Deterministic, without ``value`` itself."""
    return neighbours(value, LITERAL_RULE)


def compared_with_items(source: str) -> dict[str, str]:
    """Parameter -> the parameter whose items the function's body compares it with (``x < seq[0]``,
    ``seq[i] <= x <= seq[i + 1]``, ``x == seq[k]``): those items are the boundaries of ``x``'s
    comparisons, where an off-by-one index or a missed equal case shows."""
    tree = ast.parse(source)
    function = next((n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)), None)
    if function is None:
        return {}
    parameters = {a.arg for a in function.args.posonlyargs + function.args.args}
    pairs: dict[str, str] = {}
    for node in ast.walk(function):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for left, right in zip(operands, operands[1:], strict=False):
            for plain, indexed in ((left, right), (right, left)):
                indexed = _unwrapped(indexed)
                if not (isinstance(plain, ast.Name) and isinstance(indexed, ast.Subscript)
                        and isinstance(indexed.value, ast.Name)):
                    continue
                if {plain.id, indexed.value.id} <= parameters and indexed.value.id != plain.id:
                    pairs.setdefault(plain.id, indexed.value.id)
    return pairs


def _unwrapped(node: ast.expr) -> ast.expr:
    """The argument of a one-argument call (``int(seq[0])`` -> ``seq[0]``), else the node."""
    while isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        node = node.args[0]
    return node


def _numeric_ends(items: object) -> tuple[int | float | None, int | float | None]:
    """The first and last of ``items`` (a non-empty list or tuple), each None unless it is a number
    (not a boolean): what a comparison with the items' boundaries is made against."""
    if not isinstance(items, list | tuple) or not items:
        return None, None
    first, last = items[0], items[-1]
    return (first if _is_number(first) else None), (last if _is_number(last) else None)


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _item_boundaries(value: object, items: object) -> list[object]:
    """The first and last of ``items`` that are numbers when ``value`` is one, other than ``value``:
    the boundaries of a comparison of ``value`` with them."""
    if not _is_number(value):
        return []
    return list(dict.fromkeys(end for end in _numeric_ends(items) if end is not None and end != value))


def _call_text(function: str, args: Sequence[object]) -> str:
    return f"{function}({', '.join(repr(a) for a in args)})"


def _literal_args(call: RecordedCall, parameters: Sequence[str]) -> list[object] | None:
    """The call's positional arguments as values, when every one is a literal."""
    if list(call.args) != list(parameters):
        return None
    values = []
    for name in parameters:
        text = call.args[name].literal
        if text is None or len(text) > _MAX_LITERAL_CHARS:
            return None
        try:
            values.append(ast.literal_eval(text))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
    return values


def differential_inputs(function: str, parameters: Sequence[str],
                        calls: Sequence[tuple[Origin, RecordedCall]],
                        compared: Mapping[str, str] | None = None) -> list[DifferentialInput]:
    """The exact calls of ``function`` (a module-level function called by its name) and their
    neighbours, one argument varied at a time, the failing calls' first, at most ``MAX_INPUTS``.
    ``compared`` (``compared_with_items``): a parameter's neighbours also take the first and last
    items of the argument its body compares it with.

    An input made more than once takes the strongest origin: an exact failing call, then an exact
    passing call (the original passes that test there), then a failing call's neighbour, then a
    passing call's neighbour. A passing call's neighbour in the class of inputs of an exact failing
    call (``_boundary_class``: each compared number at, below or above the first and last item) lies
    where the failure is, and counts as failing: a boundary fix changes it too."""
    strength: dict[str, int] = {}
    classes: dict[str, str] = {}
    order: list[str] = []
    for origin, call in sorted(calls, key=lambda c: c[0] != "failing"):
        args = _literal_args(call, parameters)
        if args is None:
            continue
        made = [args, *_neighbours(args, parameters, compared or {})]
        for position, values in enumerate(made[:1 + MAX_NEIGHBOURS_PER_CALL]):
            text = _call_text(function, values)
            rank = (2 if position == 0 else 0) + (1 if origin == "failing" else 0)
            if text not in strength:
                order.append(text)
                classes[text] = _boundary_class(values, parameters, compared or {})
            strength[text] = max(strength.get(text, -1), rank)
    failing_classes = {classes[t] for t in order if strength[t] == 3} - {""}
    for text in order:
        if strength[text] == 0 and classes[text] in failing_classes:
            strength[text] = 1
    return [DifferentialInput(name=f"{_DRIVER_PREFIX}{i}", origin="failing" if strength[t] % 2 else "passing",
                              call=t, exact=strength[t] >= 2)
            for i, t in enumerate(order[:MAX_INPUTS])]


def _neighbours(args: list[object], parameters: Sequence[str],
                compared: Mapping[str, str]) -> list[list[object]]:
    """The argument lists one argument away from ``args`` (``neighbour_values``, and a compared
    parameter's item boundaries)."""
    made: list[list[object]] = []
    for index, value in enumerate(args):
        other = compared.get(parameters[index])
        bounds = _item_boundaries(value, args[parameters.index(other)]) if other in parameters else []
        near = neighbour_values(value)
        made += [[*args[:index], neighbour, *args[index + 1:]] for neighbour in near + [b for b in bounds
                                                                                       if b not in near]]
    return made


def _sign(difference: float) -> str:
    return "-" if difference < 0 else "0" if difference == 0 else "+"


def _boundary_class(args: list[object], parameters: Sequence[str], compared: Mapping[str, str]) -> str:
    """Where each compared number stands against the first and last item it is compared with
    (``x == seq[-1]``: ``x:+0``), with the arguments' types (a list or a tuple: a sequence); "" with
    no such comparison."""
    parts: list[str] = []
    for name, other in sorted(compared.items()):
        if name not in parameters or other not in parameters:
            continue
        value = args[parameters.index(name)]
        first, last = _numeric_ends(args[parameters.index(other)])
        if _is_number(value) and first is not None and last is not None:
            parts.append(f"{name}:{_sign(value - first)}{_sign(value - last)}")
    if not parts:
        return ""
    kinds = ("sequence" if isinstance(a, list | tuple) else type(a).__name__ for a in args)
    return ",".join(kinds) + "|" + ";".join(parts)


def driver_module(module: str, function: str, inputs: Sequence[DifferentialInput]) -> str:
    """A pytest module with one driver test per input: the call, guarded by ``try/except``."""
    tests = [f"def {i.name}():\n    try:\n        {i.call}\n    except Exception:\n        pass\n"
             for i in inputs]
    return f"from {module} import {function}\n\n\n" + "\n\n".join(tests)


def observed_of(calls_by_test: Mapping[str, Sequence[RecordedCall]]) -> dict[str, Observed]:
    """Driver test name -> what its (first) recorded call did; tests that recorded none, or a call
    with neither a result nor an exception (stopped at its time limit), are left out."""
    observed = {}
    for test, calls in calls_by_test.items():
        call = calls[0] if calls else None
        if call is None or (call.result is None and call.raised is None):
            continue  # no call, or one stopped at its time limit (the driver's ``except`` caught it)
        result = None if call.result is None else (call.result.literal or call.result.repr)
        observed[test] = Observed(result=result, raised=call.raised)
    return observed


def falls_through_to_none(source: str) -> bool:
    """Whether the function (the first ``def`` of ``source``) returns None only by running off its
    end: each of its own ``return`` statements gives a value that is not the constant None, and it
    has one at least (a generator, or a function with a bare ``return``, may mean None)."""
    function = next((n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)), None)
    if function is None:
        return False
    returns: list[ast.Return] = []
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue  # a nested function's returns are its own
        if isinstance(node, ast.Yield | ast.YieldFrom):
            return False
        if isinstance(node, ast.Return):
            returns.append(node)
        pending.extend(ast.iter_child_nodes(node))
    def gives_a_value(r: ast.Return) -> bool:
        return r.value is not None and not (isinstance(r.value, ast.Constant) and r.value.value is None)

    return bool(returns) and all(gives_a_value(r) for r in returns)


def raised_by_name(source: str) -> frozenset[str]:
    """The exception classes ``source`` raises by name (``raise IndexError(...)``), module left
    off: its refusals (``fix_context.raised_types`` finds them)."""
    return frozenset(name.rsplit(".", 1)[-1] for name in raised_types(ast.parse(source)))


def judge(inputs: Sequence[DifferentialInput], original: Mapping[str, Observed],
          patched: Mapping[str, Observed], refusals: frozenset[str] = frozenset(),
          falls_through: bool = False) -> DifferentialVerdict:
    """The far changes of a candidate (inputs near passing calls where it differs from the
    original) and its crashes next to any call; an exception in ``refusals``, or one the original
    raised on an exact passing call, is not a crash. ``falls_through`` (``falls_through_to_none``):
    the function returns None only by running off its end, so a None from the candidate is a crash
    too (a fix that still runs off the end there left a path unanswered)."""
    far: list[FarChange] = []
    crashes: list[Crash] = []
    refused = _refused(inputs, original, refusals)
    answer_types = {seen.answer_type for seen in original.values() if seen.answered}
    near = compared = 0
    pairs: list[tuple[Observed, Observed]] = []
    for item in inputs:
        before, after = original.get(item.name), patched.get(item.name)
        if before is None or after is None:
            continue
        compared += 1
        pairs.append((before, after))
        ran_off = falls_through and after.raised is None and after.result in (None, "None")
        if (after.crashed or ran_off) and not item.exact and after.raised_name not in refused:
            crashes.append(Crash(call=item.call, patched=after))
        if not _changed(before, after, refused, answer_types):
            continue
        if item.origin == "failing":
            near += 1
        else:
            far.append(FarChange(call=item.call, original=before, patched=after))
    return DifferentialVerdict(compared=compared, far_changes=tuple(far), near_changes=near,
                               crashes=tuple(crashes), collapsed=_collapsed(pairs))


def _refused(inputs: Sequence[DifferentialInput], original: Mapping[str, Observed],
             refusals: frozenset[str]) -> set[str]:
    """The exceptions that are refusals, not crashes: ``refusals`` and those the original raised on
    an exact passing call."""
    refused = set(refusals)
    for item in inputs:
        seen = original.get(item.name)
        if item.exact and item.origin == "passing" and seen is not None and seen.raised_name:
            refused.add(seen.raised_name)
    return refused


def _changed(before: Observed, after: Observed, refused: set[str], answer_types: set[str | None]) -> bool:
    """Whether the candidate's outcome counts as a change: it differs, and is not an answer (of a type
    the original answers with, if any) where the original crashed with no refusal."""
    if before == after:
        return False
    return not (before.crashed and before.raised_name not in refused and after.answered
                and (not answer_types or after.answer_type in answer_types))


def _collapsed(pairs: Sequence[tuple[Observed, Observed]]) -> str | None:
    """The candidate's one answer on every compared input (at least ``COLLAPSE_MIN_INPUTS``), when
    the original answered them with at least two different values; None otherwise. A boolean is
    not counted: a predicate fixed to hold on every input near the failure is plausible."""
    answers = {after.result for _, after in pairs}
    if len(pairs) < COLLAPSE_MIN_INPUTS or len(answers) != 1:
        return None
    first = pairs[0][1]
    if not first.answered or first.answer_type == "bool":
        return None
    original_answers = {before.result for before, _ in pairs if before.answered}
    return first.result if len(original_answers) >= 2 else None

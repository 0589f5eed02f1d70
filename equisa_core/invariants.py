"""Likely invariants of one function, mined from its calls in passing tests (deterministic mode).

The deterministic inspection patch (seed 000 §5, issue 4) asserts what always held when the
function was called by tests that pass: if a failing test breaks one of these, the assertion fires
inside the target and the run says so. The probe records, per test, the arguments of requested
functions at entry and their result (or the exception they raised) as ``EncodedValue``s; the
caller keeps the calls of passing tests only and hands them here with the function's parameter
names.

What is mined, per subject (each parameter, and the result of calls that returned):

========== ============================================== ================= =========
kind       expression                                     from              evidence
========== ============================================== ================= =========
type       ``isinstance(x, int)``, ``(int, float)`` when  type names of     2 calls
           both were seen, ``x is None or ...`` when None  every call
none       ``x is not None`` (types not all builtin),     type names        2 calls
           ``x is None`` (always None)
range      ``0 <= x <= 1`` (all in [0, 1], one inside)    literal values    3 calls
sign       ``x > 0``, ``x >= 0``, ``x < 0``, ``x <= 0``   literal values    2 calls
length     ``len(x) > 0``                                 literal values    2 calls
relation   ``__equisa_result__ == x`` / ``>= x`` /        literal pairs     3 calls
           ``<= x``; ``len(__equisa_result__) == len(x)``
           / ``<= len(x)``
membership ``__equisa_result__ in x``                     literal pairs     3 calls
========== ============================================== ================= =========

Choices:

* Arguments are mined from every call, the ones that raised included: a passing test may expect
  the exception, and an argument assertion must not turn it into an AssertionError. Results come
  from calls that returned.
* Types only for builtins: a user type's name is not importable from inside the function. ``bool``
  is an ``int``, so ints and bools give ``isinstance(x, int)``; ints and floats give
  ``isinstance(x, (int, float))``, and so do floats alone for an argument (callers pass ``2`` for
  ``2.0``), but not for the result: an int where a float was always returned is the symptom of
  ``//`` written for ``/``.
* No tight ranges (``3 <= x <= 17`` is noise from the tests' choice of inputs): only signs, and
  ``0 <= x <= 1`` when a value lay strictly inside, which marks a fraction rather than a flag
  that happened to be 0 or 1.
* Values come from ``EncodedValue.literal`` (``ast.literal_eval``), and the reprs ``nan``,
  ``inf``, ``-inf`` of floats. Calls without a literal are left out of value invariants, as the
  probe gives none for unrepresentable or very large values; type and None-ness use every call.
* Every value invariant (sign, range, length, relation, membership) needs the type invariant of
  each subject it reads, which makes its expression safe to evaluate once that one held. When the
  limit (8) is applied, strongest first, a kept invariant brings its type invariants along.
* Strength: result invariants before argument ones (a wrong result is what a bug in the target
  shows), then relation, membership, range, sign, length, none, type; more evidence first; then
  parameter order and expression text, so the order is deterministic.
"""

from __future__ import annotations

import ast
import keyword
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.models import EncodedValue, RecordedCall

__all__ = [
    "RESULT_NAME",
    "RESULT_SUBJECT",
    "MAX_INVARIANTS",
    "MIN_UNARY_EVIDENCE",
    "MIN_RELATION_EVIDENCE",
    "InvariantKind",
    "Invariant",
    "mine_invariants",
]

#: The name the inspection patch binds the returned value to; expressions about the result use it.
RESULT_NAME = "__equisa_result__"
#: ``Invariant.subject`` of invariants checked at ``return``.
RESULT_SUBJECT = "result"
MAX_INVARIANTS = 8
MIN_UNARY_EVIDENCE = 2
MIN_RELATION_EVIDENCE = 3
#: Parameters never mined: the receiver of a method (a user type, the same object every call).
SKIPPED_PARAMETERS = frozenset({"self", "cls"})


class InvariantKind(StrEnum):
    """What an invariant states."""

    TYPE = "type"
    NONE = "none"
    RANGE = "range"
    SIGN = "sign"
    LENGTH = "length"
    RELATION = "relation"
    MEMBERSHIP = "membership"


class Invariant(BaseModel):
    """One property that held in every observed call of a function in passing tests."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: InvariantKind
    subject: str = Field(description="The argument it is about, or 'result' (checked at every return).")
    expression: str = Field(
        description=f"A Python boolean expression over the argument names and {RESULT_NAME!r}."
    )
    evidence: int = Field(ge=1, description="Observations (calls, or argument-result pairs) it held in.")
    description: str = Field(description="The invariant in words, for assertion messages and reports.")


# Builtin types a type invariant may name, in the order they are written in ``isinstance``.
_TYPE_ORDER = (
    "bool", "int", "float", "complex", "str", "bytes", "bytearray",
    "list", "tuple", "dict", "set", "frozenset", "NoneType",
)
_NUMERIC = frozenset({"int", "float"})
_SIZED = frozenset({"str", "bytes", "bytearray", "list", "tuple", "dict", "set", "frozenset"})
_SEQUENCE_CONTAINERS = frozenset({"list", "tuple"})
_HASHED_CONTAINERS = frozenset({"set", "frozenset", "dict"})
_HASHABLE_SCALARS = frozenset({"NoneType", "bool", "int", "float", "complex", "str", "bytes"})
# Sign invariants, strongest first: the first that holds of every value is stated.
_SIGNS: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    (">", lambda v: v > 0, "positive"),
    (">=", lambda v: v >= 0, "non-negative"),
    ("<", lambda v: v < 0, "negative"),
    ("<=", lambda v: v <= 0, "non-positive"),
)
_FLOAT_SPECIALS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_MAX_UNION = 3

_KIND_RANK = {
    InvariantKind.RELATION: 0,
    InvariantKind.MEMBERSHIP: 1,
    InvariantKind.RANGE: 2,
    InvariantKind.SIGN: 3,
    InvariantKind.LENGTH: 4,
    InvariantKind.NONE: 5,
    InvariantKind.TYPE: 6,
}


@dataclass(frozen=True)
class _Obs:
    """One observed value: its builtin type name (None for other types) and decoded literal."""

    type_name: str | None
    has_value: bool
    value: Any = None


@dataclass
class _Subject:
    """Everything seen of one argument, or of the result."""

    name: str  # the name in expressions: the parameter, or RESULT_NAME
    label: str  # the name in words and in ``Invariant.subject``
    index: int  # 0 for the result, then parameter order
    observations: list[_Obs] = field(default_factory=list)
    types: frozenset[str] | None = None  # raw builtin type names when all were builtin
    has_type_invariant: bool = False

    @property
    def is_result(self) -> bool:
        return self.name == RESULT_NAME

    def values(self) -> list[Any]:
        return [o.value for o in self.observations if o.has_value]

    def typed_as(self, allowed: frozenset[str]) -> bool:
        """A type invariant is mined and every observed type is in ``allowed`` (so never None)."""
        return self.has_type_invariant and self.types is not None and self.types <= allowed


@dataclass(frozen=True)
class _Candidate:
    invariant: Invariant
    subject: str  # the subject's name in expressions
    requires: tuple[str, ...]  # subject names whose type invariant must come along
    rank: tuple[Any, ...]


def _builtin_type(type_field: str) -> str | None:
    module, _, name = type_field.rpartition(".")
    return name if module == "builtins" and name in _TYPE_ORDER else None


def _decode(encoded: EncodedValue) -> _Obs:
    """The observation of one encoded value; ``has_value`` when its literal could be rebuilt."""
    type_name = _builtin_type(encoded.type)
    if encoded.literal is not None:
        try:
            return _Obs(type_name, True, ast.literal_eval(encoded.literal))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
    if type_name == "float" and encoded.repr in _FLOAT_SPECIALS:
        return _Obs(type_name, True, _FLOAT_SPECIALS[encoded.repr])
    return _Obs(type_name, False)


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)


def _isinstance_target(types: frozenset[str]) -> str | None:
    """The second argument of ``isinstance`` for a set of builtin type names (None excluded)."""
    if types <= {"int", "bool", "float"}:
        if types == {"bool"}:
            return "bool"
        if types == {"float"}:
            return "float"
        return "(int, float)" if "float" in types else "int"
    names = set(types)
    if "int" in names:
        names.discard("bool")  # bool is an int
    if len(names) > _MAX_UNION:
        return None
    ordered = [t for t in _TYPE_ORDER if t in names]
    return ordered[0] if len(ordered) == 1 else "(" + ", ".join(ordered) + ")"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _make(
    kind: InvariantKind,
    subject: _Subject,
    expression: str,
    evidence: int,
    description: str,
    requires: tuple[str, ...] = (),
    tiebreak: tuple[int, int] = (0, 0),
) -> _Candidate:
    invariant = Invariant(
        kind=kind,
        subject=subject.label,
        expression=expression,
        evidence=evidence,
        description=f"{description} (held in {_plural(evidence, 'passing call')})",
    )
    rank = (0 if subject.is_result else 1, _KIND_RANK[kind], -evidence, subject.index, *tiebreak, expression)
    return _Candidate(invariant, subject.name, requires, rank)


def _type_candidates(subject: _Subject) -> list[_Candidate]:
    """Type and None-ness, from the type names of every observation."""
    count = len(subject.observations)
    if count < MIN_UNARY_EVIDENCE:
        return []
    names = [o.type_name for o in subject.observations]
    x, label = subject.name, subject.label
    never_none = _make(InvariantKind.NONE, subject, f"{x} is not None", count, f"{label} is never None")
    if any(name is None for name in names):  # some user type: only None-ness is safe to state
        return [] if "NoneType" in names else [never_none]
    types = frozenset(n for n in names if n is not None)
    subject.types = types
    if types == {"NoneType"}:
        return [_make(InvariantKind.NONE, subject, f"{x} is None", count, f"{subject.label} is always None")]
    optional = "NoneType" in types
    base = types - {"NoneType"}
    if base == {"float"} and not subject.is_result:
        base = _NUMERIC  # an int where a float was passed is fine; a result's int is a symptom
    target = _isinstance_target(base)
    if target is None:
        return [] if optional else [never_none]
    subject.has_type_invariant = True
    check = f"isinstance({x}, {target})"
    words = target.strip("()")
    if optional:
        return [_make(InvariantKind.TYPE, subject, f"{x} is None or {check}", count,
                      f"{subject.label} is None or of type {words}")]
    return [_make(InvariantKind.TYPE, subject, check, count, f"{subject.label} is of type {words}")]


def _value_candidates(subject: _Subject) -> list[_Candidate]:
    """Range, sign and length: unary properties of the decoded values."""
    values = subject.values()
    count = len(values)
    if count < MIN_UNARY_EVIDENCE:
        return []
    x, label, needs = subject.name, subject.label, (subject.name,)
    out: list[_Candidate] = []
    if subject.typed_as(_NUMERIC) and all(_is_number(v) for v in values):
        if (
            count >= MIN_RELATION_EVIDENCE
            and all(0 <= v <= 1 for v in values)
            and any(0 < v < 1 for v in values)
        ):
            out.append(_make(InvariantKind.RANGE, subject, f"0 <= {x} <= 1", count,
                             f"{label} lies in [0, 1]", needs))
        else:
            for op, holds, words in _SIGNS:
                if all(holds(v) for v in values):
                    expression, words = f"{x} {op} 0", f"{label} is {words}"
                    out.append(_make(InvariantKind.SIGN, subject, expression, count, words, needs))
                    break
    if subject.typed_as(_SIZED) and all(type(v).__name__ in _SIZED for v in values):
        if all(len(v) > 0 for v in values):
            out.append(_make(InvariantKind.LENGTH, subject, f"len({x}) > 0", count, f"{label} is never empty",
                             needs))
    return out


def _holds(pairs: Sequence[tuple[Any, Any]], test: Callable[[Any, Any], bool]) -> bool:
    """``test`` is true of every pair; a pair it cannot evaluate counts as false."""
    try:
        return all(bool(test(r, a)) for r, a in pairs)
    except Exception:
        return False


def _membership_allowed(result: _Subject, argument: _Subject) -> bool:
    """Whether ``result in argument`` cannot raise once both type invariants held."""
    container, item = argument.types, result.types
    if not (argument.has_type_invariant and result.has_type_invariant) or container is None or item is None:
        return False
    if "NoneType" in container:
        return False
    if container <= _SEQUENCE_CONTAINERS:
        return True
    if container <= _HASHED_CONTAINERS:
        return item <= _HASHABLE_SCALARS
    return container in ({"str"}, {"bytes"}) and item == container


def _relation_candidates(
    result: _Subject, argument: _Subject, pairs: list[tuple[Any, Any]]
) -> list[_Candidate]:
    """Relations between the result and one argument, over calls where both had literals."""
    count = len(pairs)
    if count < MIN_RELATION_EVIDENCE:
        return []
    r, a, needs = RESULT_NAME, argument.name, (RESULT_NAME, argument.name)
    out: list[_Candidate] = []

    def add(kind: InvariantKind, expression: str, words: str, strength: int) -> None:
        out.append(_make(kind, result, expression, count, words, needs, (strength, argument.index)))

    numeric = result.typed_as(_NUMERIC) and argument.typed_as(_NUMERIC)
    if numeric and all(_is_number(v) and _is_number(w) for v, w in pairs):
        if _holds(pairs, lambda v, w: v == w):
            add(InvariantKind.RELATION, f"{r} == {a}", f"the result equals {a}", 0)
        elif _holds(pairs, lambda v, w: v >= w):
            add(InvariantKind.RELATION, f"{r} >= {a}", f"the result is at least {a}", 1)
        elif _holds(pairs, lambda v, w: v <= w):
            add(InvariantKind.RELATION, f"{r} <= {a}", f"the result is at most {a}", 1)
    sized = result.typed_as(_SIZED) and argument.typed_as(_SIZED)
    if sized and all(type(v).__name__ in _SIZED and type(w).__name__ in _SIZED for v, w in pairs):
        if _holds(pairs, lambda v, w: len(v) == len(w)):
            add(InvariantKind.RELATION, f"len({r}) == len({a})", f"the result is as long as {a}", 0)
        elif _holds(pairs, lambda v, w: len(v) <= len(w)):
            add(InvariantKind.RELATION, f"len({r}) <= len({a})", f"the result is no longer than {a}", 1)
    if _membership_allowed(result, argument) and _holds(pairs, lambda v, w: v in w):
        add(InvariantKind.MEMBERSHIP, f"{r} in {a}", f"the result is an element of {a}", 2)
    return out


def _usable_parameters(parameters: Sequence[str]) -> list[str]:
    """Parameters worth mining, first occurrence order: identifiers, not self/cls, not ours."""
    seen: list[str] = []
    for name in parameters:
        if (
            name in seen
            or name in SKIPPED_PARAMETERS
            or not name.isidentifier()
            or keyword.iskeyword(name)
            or name.startswith("__equisa_")
        ):
            continue
        seen.append(name)
    return seen


def _select(candidates: Sequence[_Candidate], limit: int) -> list[Invariant]:
    """The strongest ``limit`` candidates, each with the type invariants it requires."""
    type_of: dict[str, _Candidate] = {}
    for candidate in candidates:
        if candidate.invariant.kind is InvariantKind.TYPE:
            type_of[candidate.subject] = candidate
    chosen: list[_Candidate] = []
    for candidate in sorted(candidates, key=lambda c: c.rank):
        if candidate in chosen:
            continue
        needed = [type_of[s] for s in candidate.requires if type_of[s] not in chosen]
        if len(chosen) + len(needed) + 1 > limit:
            continue
        chosen.extend(needed)
        chosen.append(candidate)
    return [c.invariant for c in sorted(chosen, key=lambda c: c.rank)]


def mine_invariants(
    calls: Sequence[RecordedCall],
    parameters: Sequence[str],
    *,
    limit: int = MAX_INVARIANTS,
) -> list[Invariant]:
    """Invariants that held in every one of ``calls``, strongest first, at most ``limit``.

    ``calls`` are calls of one function from passing tests (the caller filters); ``parameters``
    are its parameter names, in order (``self`` and ``cls`` are skipped). See the module
    docstring for what is mined and the evidence each kind needs. The result is a pure function
    of the input: the same calls give the same list in the same order.
    """
    names = _usable_parameters(parameters)
    arguments = [_Subject(name, name, i + 1) for i, name in enumerate(names)]
    result = _Subject(RESULT_NAME, RESULT_SUBJECT, 0)
    pairs: dict[str, list[tuple[Any, Any]]] = {name: [] for name in names}
    for call in calls:
        decoded = {name: _decode(call.args[name]) for name in names if name in call.args}
        for subject in arguments:
            if subject.name in decoded:
                subject.observations.append(decoded[subject.name])
        if call.raised is not None or call.result is None:
            continue
        returned = _decode(call.result)
        result.observations.append(returned)
        if not returned.has_value:
            continue
        for name, obs in decoded.items():
            if obs.has_value:
                pairs[name].append((returned.value, obs.value))

    candidates: list[_Candidate] = []
    for subject in (result, *arguments):
        candidates.extend(_type_candidates(subject))
        candidates.extend(_value_candidates(subject))
    for subject in arguments:
        candidates.extend(_relation_candidates(result, subject, pairs[subject.name]))
    return _select(candidates, limit) if limit > 0 else []

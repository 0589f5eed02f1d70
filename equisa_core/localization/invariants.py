"""Likely invariants of one function, mined from its calls in passing tests (deterministic mode).

The deterministic inspection patch (seed 000 §5, issue 4) asserts what always held when the
function was called by tests that pass: if a failing test breaks one of these, the assertion fires
inside the target and the run says so. The probe records, per test, the arguments of requested
functions at entry and their result (or the exception they raised) as ``EncodedValue``s; the
caller keeps the calls of passing tests only and hands them here with the function's parameter
names.

What is mined, per subject (each parameter, the result of calls that returned, and the public
attributes of either when it was always an object the probe could describe, as ``x.amount``):

========== ============================================== ================= =========
kind       expression                                     from              evidence
========== ============================================== ================= =========
type       ``isinstance(x, int)``, ``(int, float)`` when  type names of     2 calls
           both were seen, ``x is None or ...`` when None  every call
           was; ``type(x).__name__ == 'Money'``
none       ``x is not None`` (types not all builtin),     type names        2 calls
           ``x is None`` (always None)
range      ``0 <= x <= 1`` (all in [0, 1], one inside)    decoded values    3 calls
sign       ``x > 0``, ``x >= 0``, ``x < 0``, ``x <= 0``   decoded values    2 calls
length     ``len(x) > 0``                                 decoded values    2 calls
relation   ``__equisa_result__ == x`` / ``>= x`` /        decoded pairs     3 calls
           ``<= x``; ``len(__equisa_result__) == len(x)``
           / ``<= len(x)``
membership ``__equisa_result__ in x``                     decoded pairs     3 calls
========== ============================================== ================= =========

Choices:

* Arguments are mined from every call, the ones that raised included: a passing test may expect
  the exception, and an argument assertion must not turn it into an AssertionError. Results come
  from calls that returned.
* Builtin types through ``isinstance``; other types only when every value was decoded from
  the probe's build (``equisa_core.common.values``: ``Decimal``, dates, enum members, plain objects), and
  then by name, ``type(x).__name__ == 'Decimal'``, since the type cannot be imported inside the
  function. Values of other user types (no build: a lock, a mock) get only None-ness. ``bool``
  is an ``int``, so ints and bools give ``isinstance(x, int)``; ints and floats give
  ``isinstance(x, (int, float))``, and so do floats alone for an argument (callers pass ``2`` for
  ``2.0``), but not for the result: an int where a float was always returned is the symptom of
  ``//`` written for ``/``.
* No tight ranges (``3 <= x <= 17`` is noise from the tests' choice of inputs): only signs, and
  ``0 <= x <= 1`` when a value lay strictly inside, which marks a fraction rather than a flag
  that happened to be 0 or 1.
* Values come from ``EncodedValue.literal`` (``ast.literal_eval``), the reprs ``nan``, ``inf``,
  ``-inf`` of floats, and ``EncodedValue.build`` (``values.decode_value``, which evaluates
  nothing: objects become read-only ``ObjectValue`` views). Calls without either are left out of
  value invariants, as the probe gives none for unrepresentable or very large values; type and
  None-ness use every call. ``Decimal`` and ``Fraction`` are numbers like ``int`` and ``float``.
* Attributes: one level (``subtotal.amount``, not ``subtotal.amount.real``), at most
  ``MAX_ATTRIBUTES`` per object, public names only, and only those every observed object had.
  An attribute subject's invariants need its object's type invariant too, which ranks first, so
  the patch checks ``type(subtotal).__name__ == 'Money'`` before it reads ``subtotal.amount``.
  Relations pair the result or its attributes with the arguments or theirs. The inspection patch
  reads attributes at ``return`` from the objects as they are then: an argument whose attributes
  the function changes may break a relation mined from entry values (``self``, the object
  usually changed, is never mined).
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
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.models import EncodedValue, RecordedCall
from equisa_core.common.values import EnumMember, ObjectValue, decode_value
from equisa_core.errors import ProbeProtocolError

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
#: Attributes of one object subject that become subjects of their own, at most.
MAX_ATTRIBUTES = 8


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
    subject: str = Field(
        description="The argument it is about, or 'result' (checked at every return), or an attribute "
        "of either ('subtotal.amount', 'result.amount')."
    )
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
#: Numbers the sign, range and relation invariants compare: builtins, and decoded stdlib numbers.
_NUMBERS = _NUMERIC | {"decimal.Decimal", "fractions.Fraction"}
_NUMBER_TYPES = (int, float, Decimal, Fraction)
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
    """One observed value: its type key and decoded value.

    The key is a builtin's name (``int``) or, for a value decoded from a build, its type's
    dotted name (``decimal.Decimal``, ``pkg.mod:Money``, an enum's ``pkg.mod.Color``); None
    when the type is neither (a user type the probe could not describe).
    """

    type_name: str | None
    has_value: bool
    value: Any = None


@dataclass
class _Subject:
    """Everything seen of one argument, of the result, or of an attribute of either."""

    name: str  # the name in expressions: the parameter, RESULT_NAME, or 'subtotal.amount'
    label: str  # the name in words and in ``Invariant.subject``
    index: tuple[int, int]  # (0 for the result, then parameter order; 0, then attribute order)
    observations: list[_Obs] = field(default_factory=list)
    types: frozenset[str] | None = None  # type keys, when every one was known
    has_type_invariant: bool = False
    parent: str | None = None  # the subject an attribute subject is read from

    @property
    def is_result(self) -> bool:
        return RESULT_NAME in (self.name, self.parent)

    @property
    def guards(self) -> tuple[str, ...]:
        """Subjects whose type invariants make reading this one safe."""
        return (self.name,) if self.parent is None else (self.name, self.parent)

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
    """The observation of one encoded value; ``has_value`` when its literal or build was read."""
    type_name = _builtin_type(encoded.type)
    if encoded.literal is not None:
        try:
            return _Obs(type_name, True, ast.literal_eval(encoded.literal))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
    if type_name == "float" and encoded.repr in _FLOAT_SPECIALS:
        return _Obs(type_name, True, _FLOAT_SPECIALS[encoded.repr])
    if encoded.build is not None:
        try:
            return _observed(decode_value(encoded.build))
        except ProbeProtocolError:
            pass
    return _Obs(type_name, False)


def _observed(value: Any) -> _Obs:
    """The observation of a decoded value: a build's, or an attribute of a decoded object."""
    kind = type(value)
    if kind.__module__ == "builtins" and kind.__name__ in _TYPE_ORDER:
        return _Obs(kind.__name__, True, value)
    if isinstance(value, ObjectValue):
        return _Obs(value.__type__, True, value)
    if isinstance(value, EnumMember):
        return _Obs(value.owner, True, value)
    return _Obs(f"{kind.__module__}.{kind.__qualname__}", True, value)  # Decimal, date, UUID...


def _is_builtin_key(key: str) -> bool:
    return "." not in key and ":" not in key


def _class_name(key: str) -> str:
    """The ``__name__`` of the type with this key: ``pkg.mod:Outer.Money`` -> ``Money``."""
    return key.replace(":", ".").rsplit(".", 1)[-1]


def _type_check(x: str, types: frozenset[str]) -> tuple[str, str] | None:
    """The expression stating ``x`` has one of ``types`` (None excluded), and its words.

    Builtins through ``isinstance``; other types, whose names cannot be imported inside the
    function, by their ``__name__``: ``type(x).__name__ == 'Decimal'``. None when more than
    three would be named, or two types share a name.
    """
    builtins = frozenset(t for t in types if _is_builtin_key(t))
    names = sorted({_class_name(t) for t in types - builtins})
    if len(names) != len(types - builtins):
        return None
    parts: list[str] = []
    words: list[str] = []
    count = 0
    if builtins:
        target = _isinstance_target(builtins)
        if target is None:
            return None
        parts.append(f"isinstance({x}, {target})")
        words.append(target.strip("()"))
        count = target.count(",") + 1
    if names:
        if count + len(names) > _MAX_UNION:
            return None
        named = repr(names[0]) if len(names) == 1 else repr(tuple(names))
        parts.append(f"type({x}).__name__ {'==' if len(names) == 1 else 'in'} {named}")
        words.extend(names)
    return " or ".join(parts), ", ".join(words)


def _is_number(value: Any) -> bool:
    return type(value) in _NUMBER_TYPES


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
    tiebreak: tuple[int, ...] = (0, 0),
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
    """Type and None-ness, from the type keys of every observation.

    An attribute subject states only a type (it reads its parent first, so it needs the
    parent's type invariant, which is ranked before it); no None-ness on its own.
    """
    count = len(subject.observations)
    if count < MIN_UNARY_EVIDENCE:
        return []
    names = [o.type_name for o in subject.observations]
    x, label = subject.name, subject.label
    attribute = subject.parent is not None
    never_none = [] if attribute else [
        _make(InvariantKind.NONE, subject, f"{x} is not None", count, f"{label} is never None")
    ]
    if any(name is None for name in names):  # some user type: only None-ness is safe to state
        return [] if "NoneType" in names else never_none
    types = frozenset(n for n in names if n is not None)
    subject.types = types
    if types == {"NoneType"}:
        if attribute:
            return []
        return [_make(InvariantKind.NONE, subject, f"{x} is None", count, f"{subject.label} is always None")]
    optional = "NoneType" in types
    base = types - {"NoneType"}
    if base == {"float"} and not subject.is_result:
        base = _NUMERIC  # an int where a float was passed is fine; a result's int is a symptom
    found = _type_check(x, base)
    if found is None:
        return [] if optional else never_none
    subject.has_type_invariant = True
    check, words = found
    requires = subject.guards[1:]
    if optional:
        return [_make(InvariantKind.TYPE, subject, f"{x} is None or {check}", count,
                      f"{subject.label} is None or of type {words}", requires)]
    return [_make(InvariantKind.TYPE, subject, check, count, f"{subject.label} is of type {words}", requires)]


def _attribute_subjects(subject: _Subject) -> list[_Subject]:
    """Subjects for the public attributes every observed object of ``subject`` had (one level).

    Only when each observation decoded to an object (``values.ObjectValue``) and ``subject``
    has a type invariant, which guards reading them: ``subtotal.amount``, ``result.currency``.
    """
    observations = subject.observations
    if subject.parent is not None or not subject.has_type_invariant or len(observations) < MIN_UNARY_EVIDENCE:
        return []
    if not all(o.has_value and isinstance(o.value, ObjectValue) for o in observations):
        return []
    tables = [o.value.__attributes__ for o in observations]
    common = [
        name for name in sorted(tables[0])
        if all(name in table for table in tables[1:])
        and name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("_")
    ]
    out = []
    for position, name in enumerate(common[:MAX_ATTRIBUTES], start=1):
        child = _Subject(f"{subject.name}.{name}", f"{subject.label}.{name}", (subject.index[0], position),
                         parent=subject.name)
        child.observations = [_observed(table[name]) for table in tables]
        out.append(child)
    return out


def _value_candidates(subject: _Subject) -> list[_Candidate]:
    """Range, sign and length: unary properties of the decoded values."""
    values = subject.values()
    count = len(values)
    if count < MIN_UNARY_EVIDENCE:
        return []
    x, label, needs = subject.name, subject.label, subject.guards
    out: list[_Candidate] = []
    if subject.typed_as(_NUMBERS) and all(_is_number(v) for v in values):
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
    """Relations between the result (or an attribute of it) and one argument (or an attribute),
    over calls where both had values."""
    count = len(pairs)
    if count < MIN_RELATION_EVIDENCE:
        return []
    r, a, needs = result.name, argument.name, (*result.guards, *argument.guards)
    it = "the result" if result.name == RESULT_NAME else result.label
    out: list[_Candidate] = []

    def add(kind: InvariantKind, expression: str, words: str, strength: int) -> None:
        out.append(_make(kind, result, expression, count, words, needs, (strength, *argument.index)))

    numeric = result.typed_as(_NUMBERS) and argument.typed_as(_NUMBERS)
    if numeric and all(_is_number(v) and _is_number(w) for v, w in pairs):
        if _holds(pairs, lambda v, w: v == w):
            add(InvariantKind.RELATION, f"{r} == {a}", f"{it} equals {a}", 0)
        elif _holds(pairs, lambda v, w: v >= w):
            add(InvariantKind.RELATION, f"{r} >= {a}", f"{it} is at least {a}", 1)
        elif _holds(pairs, lambda v, w: v <= w):
            add(InvariantKind.RELATION, f"{r} <= {a}", f"{it} is at most {a}", 1)
    sized = result.typed_as(_SIZED) and argument.typed_as(_SIZED)
    if sized and all(type(v).__name__ in _SIZED and type(w).__name__ in _SIZED for v, w in pairs):
        if _holds(pairs, lambda v, w: len(v) == len(w)):
            add(InvariantKind.RELATION, f"len({r}) == len({a})", f"{it} is as long as {a}", 0)
        elif _holds(pairs, lambda v, w: len(v) <= len(w)):
            add(InvariantKind.RELATION, f"len({r}) <= len({a})", f"{it} is no longer than {a}", 1)
    if _membership_allowed(result, argument) and _holds(pairs, lambda v, w: v in w):
        add(InvariantKind.MEMBERSHIP, f"{r} in {a}", f"{it} is an element of {a}", 2)
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
    arguments = [_Subject(name, name, (i + 1, 0)) for i, name in enumerate(names)]
    result = _Subject(RESULT_NAME, RESULT_SUBJECT, (0, 0))
    returning = _observe(calls, names, arguments, result)
    candidates: list[_Candidate] = []
    for subject in (result, *arguments):
        candidates.extend(_type_candidates(subject))
    attributes = [child for subject in (result, *arguments) for child in _attribute_subjects(subject)]
    for subject in attributes:
        candidates.extend(_type_candidates(subject))
    for subject in (result, *arguments, *attributes):
        candidates.extend(_value_candidates(subject))
    result_side = [result, *(s for s in attributes if s.is_result)]
    argument_side = [*arguments, *(s for s in attributes if not s.is_result)]
    for left in result_side:
        for right in argument_side:
            candidates.extend(_relation_candidates(left, right, _value_pairs(left, right, returning)))
    return _select(candidates, limit) if limit > 0 else []


#: One call that returned: its result and its arguments, as observed.
_Returned = tuple[_Obs, dict[str, _Obs]]


def _observe(calls: Sequence[RecordedCall], names: Sequence[str], arguments: Sequence[_Subject],
             result: _Subject) -> list[_Returned]:
    """Adds each call's observations to its subjects; returns the calls that returned a value."""
    returning: list[_Returned] = []
    for call in calls:
        decoded = {name: _decode(call.args[name]) for name in names if name in call.args}
        for subject in arguments:
            if subject.name in decoded:
                subject.observations.append(decoded[subject.name])
        if call.raised is not None or call.result is None:
            continue
        returned = _decode(call.result)
        result.observations.append(returned)
        returning.append((returned, decoded))
    return returning


def _value_pairs(left: _Subject, right: _Subject, returning: Sequence[_Returned]) -> list[tuple[Any, Any]]:
    """The values of ``left`` and ``right`` in the calls where both had one."""
    pairs = []
    for returned, decoded in returning:
        row = {RESULT_NAME: returned, **decoded}
        v, w = _value_in(left, row), _value_in(right, row)
        if v.has_value and w.has_value:
            pairs.append((v.value, w.value))
    return pairs


def _value_in(subject: _Subject, row: dict[str, _Obs]) -> _Obs:
    """What ``subject`` was in one call, from that call's observations of results and arguments."""
    if subject.parent is None:
        return row.get(subject.name, _Obs(None, False))
    parent = row.get(subject.parent)
    name = subject.name.rsplit(".", 1)[1]
    if parent is None or not isinstance(parent.value, ObjectValue) or name not in parent.value.__attributes__:
        return _Obs(None, False)
    return _observed(parent.value.__attributes__[name])

"""Value-based inspection: the deterministic twin of the model's inspection assertions.

What each recorded function receives, returns and raises in the failing tests is compared with
what it did in the passing tests, as coarse kinds (type, None, sign, emptiness, length, the
exception raised). A function that, in a failing test, returned or raised a kind no passing run
ever saw is where a wrong value shows. Following it down the call tree gives the Golden Rule of
Callees applied to values:

* **origin**: its callees all returned kinds seen in passing runs and the arguments its callers
  passed it were of seen kinds, yet its own result was not: the wrong value starts here;
* **passed on**: its result was new, but so was a callee's result or an argument from a project
  caller: it may only pass a wrong value along.

Arguments that the failing test itself passes are given, not wrong: a failing test often tries an
input the passing ones never did. Pure: the flow records the calls (``RunRequest.record``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.models import EncodedValue, RecordedCall

__all__ = ["ValueFinding", "compare_values", "value_kind"]

#: Lengths kept apart by ``value_kind``: empty, one, a few, many.
_LENGTH_BUCKETS = ((0, "0"), (1, "1"), (5, "2-5"))
_SIZED = frozenset({"builtins.str", "builtins.bytes", "builtins.list", "builtins.tuple", "builtins.dict",
                    "builtins.set", "builtins.frozenset"})
_NUMBERS = frozenset({"builtins.int", "builtins.float", "decimal.Decimal", "fractions.Fraction"})


class ValueFinding(BaseModel):
    """What the value comparison found for one function, as shares of the failing tests."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    origin: float = Field(description="Share of failing tests in which a wrong value starts here.")
    passed_on: float = Field(description="Share in which it returned a new kind that came from "
                                         "a callee or a caller's argument.")
    seen_in: tuple[str, ...] = Field((), description="Failing tests where its result was new (a few).")


def _length_bucket(length: int) -> str:
    for limit, name in _LENGTH_BUCKETS:
        if length <= limit:
            return name
    return "many"


def _literal_length(literal: str) -> int | None:
    """The length of a container or string literal, read without evaluating it."""
    import ast

    try:
        value = ast.literal_eval(literal)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    try:
        return len(value)
    except TypeError:
        return None


def value_kind(value: EncodedValue | None, raised: str | None = None) -> str:
    """A coarse kind of a recorded value: its type plus None, the bool, the sign of a number
    (zero, negative, positive, nan), or the length bucket of a sized value; ``raise:Type`` for an
    exception."""
    if raised:
        return f"raise:{raised}"
    if value is None:
        return "unrecorded"
    kind = value.type
    literal = value.literal
    if kind == "builtins.NoneType":
        return "None"
    if kind == "builtins.bool":
        return f"bool:{literal}"
    if kind in _NUMBERS and literal is not None:
        text = literal.strip()
        if "nan" in text.lower():
            return f"{kind}:nan"
        if text.startswith("-"):
            return f"{kind}:neg"
        digits = [c for c in text if c.isdigit()]
        return f"{kind}:zero" if digits and set(digits) == {"0"} else f"{kind}:pos"
    if kind in _SIZED and literal is not None:
        length = _literal_length(literal)
        if length is not None:
            return f"{kind}:len{_length_bucket(length)}"
    return kind


def _result_kinds(calls: Sequence[RecordedCall]) -> set[str]:
    return {value_kind(c.result, c.raised) for c in calls}


def compare_values(
    calls_by_test: Mapping[str, Sequence[RecordedCall]],
    failed: AbstractSet[str],
    passed: AbstractSet[str],
    callees: Mapping[str, AbstractSet[str]],
    called_by_tests: AbstractSet[str],
) -> dict[str, ValueFinding]:
    """Compare the recorded calls of failing tests with those of passing tests.

    ``calls_by_test`` maps a test id to the calls recorded while it ran; ``callees`` is the call
    graph (caller -> callees); ``called_by_tests`` the functions some test calls directly, whose
    arguments count as given. Functions recorded in no passing test have no baseline and get no
    finding.
    """
    results: dict[str, set[str]] = {}
    arguments: dict[str, dict[str, set[str]]] = {}
    for test_id in passed:
        for call in calls_by_test.get(test_id, ()):
            results.setdefault(call.fqn, set()).add(value_kind(call.result, call.raised))
            for name, value in call.args.items():
                arguments.setdefault(call.fqn, {}).setdefault(name, set()).add(value_kind(value))
    failing = sorted(t for t in failed if calls_by_test.get(t))
    if not failing or not results:
        return {}
    origin: dict[str, int] = {}
    passed_on: dict[str, int] = {}
    seen_in: dict[str, list[str]] = {}
    for test_id in failing:
        by_function: dict[str, list[RecordedCall]] = {}
        for call in calls_by_test[test_id]:
            by_function.setdefault(call.fqn, []).append(call)
        new_result = {f for f, calls in by_function.items()
                      if f in results and not _result_kinds(calls) <= results[f]}
        for fqn in new_result:
            given = fqn in called_by_tests
            new_argument = not given and any(
                value_kind(value) not in arguments.get(fqn, {}).get(name, {value_kind(value)})
                for call in by_function[fqn] for name, value in call.args.items())
            from_callee = bool(callees.get(fqn, set()) & new_result)
            if from_callee or new_argument:
                passed_on[fqn] = passed_on.get(fqn, 0) + 1
            else:
                origin[fqn] = origin.get(fqn, 0) + 1
            seen_in.setdefault(fqn, []).append(test_id)
    share = 1.0 / len(failed)
    return {
        fqn: ValueFinding(origin=origin.get(fqn, 0) * share, passed_on=passed_on.get(fqn, 0) * share,
                          seen_in=tuple(seen_in[fqn][:3]))
        for fqn in seen_in
    }

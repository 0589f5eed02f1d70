"""Tests for equisa_core.invariants: what is mined from recorded calls, and what is not."""

from __future__ import annotations

import ast
import math
from typing import Any

import pytest

from equisa_core.invariants import (
    MAX_INVARIANTS,
    RESULT_NAME,
    Invariant,
    InvariantKind,
    mine_invariants,
)
from equisa_core.models import EncodedValue, RecordedCall
from equisa_core.probe.equisa_probe import encode_value

R = RESULT_NAME
_NO_RESULT = object()


class Opaque:
    """A user type: no literal, a non-builtin type name."""

    def __repr__(self) -> str:
        return "Opaque()"


def ev(value: Any) -> EncodedValue:
    """Encode a value exactly as the probe does."""
    return EncodedValue(**encode_value(value))


def call(result: Any = _NO_RESULT, raised: str | None = None, **args: Any) -> RecordedCall:
    return RecordedCall(
        fqn="pkg.mod.f",
        args={name: ev(value) for name, value in args.items()},
        result=None if result is _NO_RESULT else ev(result),
        raised=raised,
    )


def expressions(calls: list[RecordedCall], parameters: list[str], **kwargs: Any) -> list[str]:
    return [inv.expression for inv in mine_invariants(calls, parameters, **kwargs)]


def unary(values: list[Any]) -> list[str]:
    """Expressions mined about argument ``x`` alone, from calls returning nothing useful."""
    return [
        inv.expression
        for inv in mine_invariants([call(x=v) for v in values], ["x"])
        if inv.subject == "x"
    ]


# --- types -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([1, 2, 3], "isinstance(x, int)"),
        ([1, True, 0], "isinstance(x, int)"),  # bool is an int
        ([True, False], "isinstance(x, bool)"),
        ([1, 2.5], "isinstance(x, (int, float))"),
        ([1.5, 2.5], "isinstance(x, (int, float))"),  # an argument: ints are welcome too
        (["a", "b"], "isinstance(x, str)"),
        ([b"a", b""], "isinstance(x, bytes)"),
        ([[1], [2, 3]], "isinstance(x, list)"),
        ([(1,), ()], "isinstance(x, tuple)"),
        ([{1: 2}, {}], "isinstance(x, dict)"),
        ([{1}, set()], "isinstance(x, set)"),
        ([[1], (2,)], "isinstance(x, (list, tuple))"),
        ([1, None, 3], "x is None or isinstance(x, int)"),
        ([None, None], "x is None"),
    ],
)
def test_type_invariants_name_the_builtin_types_seen(values: list[Any], expected: str) -> None:
    mined = unary(values)
    assert expected in mined
    kinds = {inv.kind for inv in mine_invariants([call(x=v) for v in values], ["x"])}
    assert kinds & {InvariantKind.TYPE, InvariantKind.NONE}


def test_a_float_result_stays_float() -> None:
    calls = [call(result=x / 2, x=x) for x in (1, 3, 5)]
    assert f"isinstance({R}, float)" in expressions(calls, ["x"])


def test_user_types_get_no_type_invariant_but_none_ness() -> None:
    assert unary([Opaque(), Opaque()]) == ["x is not None"]
    assert unary([Opaque(), 3]) == ["x is not None"]  # a mixture with a user type: still never None


def test_none_ness_is_not_mined_when_none_was_seen() -> None:
    assert unary([Opaque(), None]) == []


def test_none_ness_is_implied_by_a_type_invariant_and_not_repeated() -> None:
    assert "x is not None" not in unary([1, 2])


def test_too_many_builtin_types_give_only_none_ness() -> None:
    assert unary([1, "a", [1], {1: 1}]) == ["x is not None"]


def test_one_call_is_not_enough_evidence() -> None:
    assert mine_invariants([call(result=5, x=1)], ["x"]) == []


def test_type_invariants_use_calls_without_literals() -> None:
    long_list = list(range(2000))  # too long for the probe to give a literal
    assert ev(long_list).literal is None
    mined = mine_invariants([call(x=long_list), call(x=[1])], ["x"])
    assert [inv.expression for inv in mined] == ["isinstance(x, list)"]  # len(x) > 0: one literal only


# --- signs and ranges ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([1, 2, 7], "x > 0"),
        ([0, 2, 7], "x >= 0"),
        ([-1, -2.5], "x < 0"),
        ([0, -2], "x <= 0"),
        ([0.5, 0.0, 1.0], "0 <= x <= 1"),
    ],
)
def test_signs_and_the_unit_range_are_mined(values: list[Any], expected: str) -> None:
    assert expected in unary(values)


@pytest.mark.parametrize(
    "values",
    [
        [-1, 2],  # both signs
        [1, 2, math.nan],  # NaN compares false: no sign holds
        [True, 2],  # a bool among the numbers
        [1, None, 2],  # None among them
    ],
)
def test_no_sign_when_the_evidence_contradicts(values: list[Any]) -> None:
    assert not [e for e in unary(values) if " 0" in e or "<=" in e]


def test_nan_and_inf_are_read_from_the_repr() -> None:
    assert ev(math.inf).literal is None
    assert "x > 0" in unary([math.inf, 2.0])
    assert "x < 0" in unary([-math.inf, -2.0])


def test_unit_range_needs_three_values_and_one_strictly_inside() -> None:
    assert "0 <= x <= 1" not in unary([0.5, 0.2])  # two observations
    assert "0 <= x <= 1" not in unary([0, 1, 1])  # a flag, not a fraction
    assert "0 <= x <= 1" not in unary([0.5, 0.2, 1.5])
    assert unary([0, 1, 1]) == ["x >= 0", "isinstance(x, int)"]


def test_no_tight_ranges() -> None:
    mined = unary([3, 9, 17])
    assert mined == ["x > 0", "isinstance(x, int)"]


# --- lengths ---------------------------------------------------------------------------------


def test_non_empty_containers_are_mined() -> None:
    assert "len(x) > 0" in unary([[1], [2, 3]])
    assert "len(x) > 0" in unary(["ab", "c"])
    assert "len(x) > 0" not in unary([[1], []])


def test_length_relations_between_result_and_argument() -> None:
    same = [call(result=[v * 2 for v in xs], xs=xs) for xs in ([1], [2, 3], [4, 5, 6])]
    assert f"len({R}) == len(xs)" in expressions(same, ["xs"])
    shorter = [call(result=xs[:1], xs=xs) for xs in ([1], [2, 3], [4, 5, 6])]
    mined = expressions(shorter, ["xs"])
    assert f"len({R}) <= len(xs)" in mined
    assert f"len({R}) == len(xs)" not in mined
    longer = [call(result=xs + [0], xs=xs) for xs in ([1], [2, 3], [4, 5, 6])]
    assert not [e for e in expressions(longer, ["xs"]) if e.startswith(f"len({R})") and "xs" in e]


# --- relations -------------------------------------------------------------------------------


def test_numeric_relations_need_three_calls() -> None:
    calls = [call(result=x + 1, x=x) for x in (1, 5, -3)]
    assert f"{R} >= x" in expressions(calls, ["x"])
    assert f"{R} >= x" not in expressions(calls[:2], ["x"])


def test_numeric_relations() -> None:
    identity = [call(result=x, x=x) for x in (1, 5, -3)]
    mined = expressions(identity, ["x"])
    assert f"{R} == x" in mined and f"{R} >= x" not in mined
    smaller = [call(result=x - 2.5, x=x) for x in (1, 5, -3)]
    assert f"{R} <= x" in expressions(smaller, ["x"])
    mixed = [call(result=-x, x=x) for x in (1, 5, -3)]
    assert not [e for e in expressions(mixed, ["x"]) if e.startswith(f"{R} ") and e.endswith(" x")]


def test_relations_with_several_arguments() -> None:
    calls = [call(result=max(lo, min(x, hi)), x=x, lo=lo, hi=hi) for x, lo, hi in
             ((5, 0, 10), (-3, 0, 10), (12, 1, 9), (4, 4, 4))]
    mined = expressions(calls, ["x", "lo", "hi"])
    assert f"{R} >= lo" in mined and f"{R} <= hi" in mined
    assert not [e for e in mined if e.startswith(f"{R} ") and e.endswith(" x")]


def test_membership() -> None:
    calls = [call(result=max(xs), xs=xs) for xs in ([1], [2, 3], [4, 9, 6])]
    assert f"{R} in xs" in expressions(calls, ["xs"])
    words = [call(result=s[1:], s=s) for s in ("abc", "hello", "xy")]
    assert f"{R} in s" in expressions(words, ["s"])
    keys = [call(result=min(d), d=d) for d in ({1: 2}, {3: 4, 5: 6}, {7: 0})]
    assert f"{R} in d" in expressions(keys, ["d"])


def test_membership_not_mined_when_it_fails_or_could_raise() -> None:
    calls = [call(result=max(xs) + 1, xs=xs) for xs in ([1], [2, 3], [4, 9, 6])]
    assert f"{R} in xs" not in expressions(calls, ["xs"])
    # A list result in a set would raise TypeError (unhashable): never stated.
    lists = [call(result=[1], s=s) for s in ({1}, {2}, {3})]
    assert f"{R} in s" not in expressions(lists, ["s"])


# --- which calls count -----------------------------------------------------------------------


def test_arguments_of_raising_calls_count_but_their_results_do_not() -> None:
    calls = [call(result=x * 2, x=x) for x in (1, 2, 3)] + [call(raised="builtins.ValueError", x=-1)]
    mined = mine_invariants(calls, ["x"])
    assert "x > 0" not in [inv.expression for inv in mined]  # -1 was passed (and expected to fail)
    result_type = next(inv for inv in mined if inv.expression == f"isinstance({R}, int)")
    assert result_type.evidence == 3


def test_value_invariants_skip_calls_without_literals() -> None:
    calls = [call(result=x, x=x) for x in (1, 2)] + [call(result=Opaque(), x=Opaque())]
    mined = expressions(calls, ["x"])
    assert mined == [f"{R} is not None", "x is not None"]


def test_self_and_cls_are_skipped_and_unknown_parameters_ignored() -> None:
    calls = [
        RecordedCall(fqn="m.C.f", args={"self": ev(Opaque()), "n": ev(n)}, result=ev(n))
        for n in (1, 2, 3)
    ]
    mined = mine_invariants(calls, ["self", "n", "missing"])
    assert all("self" not in inv.expression for inv in mined)
    assert {inv.subject for inv in mined} == {"result", "n"}
    assert mine_invariants(calls, ["cls", "self"]) == [
        inv for inv in mine_invariants(calls, []) if inv.subject == "result"
    ]


def test_invariant_model_fields() -> None:
    inv = mine_invariants([call(result=1, x=1), call(result=2, x=5)], ["x"])[0]
    assert isinstance(inv, Invariant)
    assert inv.subject == "result" and inv.evidence == 2
    assert "held in 2 passing calls" in inv.description


# --- selection and order ---------------------------------------------------------------------


def _rich_calls() -> list[RecordedCall]:
    rows = ((5, 0, 10, [1]), (-3, 0, 10, [2, 3]), (12, 1, 9, [4]), (4, 4, 4, [5, 6]))
    return [
        call(result=max(lo, min(x, hi)), x=x, lo=lo, hi=hi, xs=xs, ys=xs[::-1], flag=True)
        for x, lo, hi, xs in rows
    ]


def test_at_most_eight_strongest_first_with_their_type_guards() -> None:
    mined = mine_invariants(_rich_calls(), ["x", "lo", "hi", "xs", "ys", "flag"])
    assert len(mined) == MAX_INVARIANTS
    assert mined[0].kind is InvariantKind.RELATION
    types = {inv.subject for inv in mined if inv.kind is InvariantKind.TYPE}
    for inv in mined:
        if inv.kind not in (InvariantKind.TYPE, InvariantKind.NONE):
            names = {n.id for n in ast.walk(ast.parse(inv.expression)) if isinstance(n, ast.Name)}
            readers = {inv.subject} | (names & {"x", "lo", "hi", "xs", "ys", "flag"})
            assert readers <= types, inv


def test_a_small_limit_keeps_whole_invariants_with_guards() -> None:
    mined = mine_invariants(_rich_calls(), ["x", "lo", "hi"], limit=3)
    assert [inv.expression for inv in mined] == [f"{R} >= lo", f"isinstance({R}, int)", "isinstance(lo, int)"]
    assert mine_invariants(_rich_calls(), ["x"], limit=0) == []


def test_mining_is_deterministic_and_ignores_call_order() -> None:
    calls = _rich_calls()
    params = ["x", "lo", "hi", "xs", "ys", "flag"]
    first = mine_invariants(calls, params)
    assert mine_invariants(list(reversed(calls)), params) == first
    assert mine_invariants(calls, params) == first


def test_mined_expressions_hold_on_the_observations() -> None:
    calls = _rich_calls()
    for inv in mine_invariants(calls, ["x", "lo", "hi", "xs", "ys", "flag"], limit=50):
        for c in calls:
            env = {name: eval(value.literal, {}) for name, value in c.args.items()}
            env[R] = eval(c.result.literal, {})
            assert eval(inv.expression, {}, env), inv

"""Tests for equisa_core.localization.invariants: what is mined from recorded calls, and what is not."""

from __future__ import annotations

import ast
import dataclasses
import datetime
import enum
import math
import threading
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest

from equisa_core.common.models import EncodedValue, RecordedCall
from equisa_core.localization.invariants import (
    MAX_INVARIANTS,
    RESULT_NAME,
    Invariant,
    InvariantKind,
    mine_invariants,
)
from equisa_core.probe.equisa_probe import encode_value

R = RESULT_NAME
_NO_RESULT = object()


class Opaque:
    """A user type the probe cannot rebuild: no literal, and no build (it holds a lock)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

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


# --- values without literals: builds ---------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Money:
    """Like the invoicing example's: a frozen dataclass holding a Decimal (importable by name)."""

    amount: Decimal
    currency: str = "EUR"


def take_off(subtotal: Money, off: Money) -> Money:
    if off.amount > subtotal.amount:
        return subtotal
    return Money(subtotal.amount - off.amount, subtotal.currency)


TAKE_OFF_SOURCE = '''
def take_off(subtotal, off):
    if off.amount > subtotal.amount:
        return subtotal
    return Money(subtotal.amount - off.amount, subtotal.currency)
'''


def take_off_calls() -> list[RecordedCall]:
    rows = (("150.00", "10.00"), ("99.99", "5.00"), ("20.00", "30.00"), ("10.00", "10.00"))
    pairs = [(Money(Decimal(s)), Money(Decimal(o))) for s, o in rows]
    return [call(result=take_off(subtotal, off), subtotal=subtotal, off=off) for subtotal, off in pairs]


def test_decimals_get_a_type_by_name_and_signs() -> None:
    assert ev(Decimal("1.5")).build == "decimal.Decimal('1.5')"
    assert unary([Decimal("1.5"), Decimal("2")]) == ["x > 0", "type(x).__name__ == 'Decimal'"]
    assert "0 <= x <= 1" in unary([Fraction(1, 3), Fraction(1, 2), Fraction(1)])
    assert unary([1, Decimal("2")]) == ["x > 0", "isinstance(x, int) or type(x).__name__ == 'Decimal'"]
    assert unary([None, Decimal("2")]) == ["x is None or type(x).__name__ == 'Decimal'"]


def test_dates_get_a_type_but_no_sign() -> None:
    assert unary([datetime.date(2024, 1, 1), datetime.date(2024, 2, 1)]) == ["type(x).__name__ == 'date'"]


def test_attributes_of_objects_are_subjects_of_their_own() -> None:
    mined = mine_invariants(take_off_calls(), ["subtotal", "off"], limit=50)
    expressions_ = [inv.expression for inv in mined]
    for expected in (
        f"type({R}).__name__ == 'Money'",
        f"type({R}.amount).__name__ == 'Decimal'",
        f"{R}.amount <= subtotal.amount",
        f"{R}.amount >= 0",
        "type(subtotal).__name__ == 'Money'",
        "type(subtotal.amount).__name__ == 'Decimal'",
        "subtotal.amount > 0",
        "isinstance(subtotal.currency, str)",
        "len(subtotal.currency) > 0",
    ):
        assert expected in expressions_, expected
    subjects = {inv.subject for inv in mined}
    assert {"result", "result.amount", "subtotal", "subtotal.amount", "off.amount"} <= subjects
    relation = next(inv for inv in mined if inv.expression == f"{R}.amount <= subtotal.amount")
    assert relation.kind is InvariantKind.RELATION and relation.evidence == 4
    assert "result.amount is at most subtotal.amount" in relation.description
    # An object's type is guarded before its attributes are read.
    assert expressions_.index("type(subtotal).__name__ == 'Money'") < expressions_.index(
        "type(subtotal.amount).__name__ == 'Decimal'")


def test_a_relation_on_attributes_brings_every_guard_along() -> None:
    mined = expressions(take_off_calls(), ["subtotal", "off"], limit=5)
    assert mined == [
        f"{R}.amount <= subtotal.amount",
        f"type({R}).__name__ == 'Money'",
        f"type({R}.amount).__name__ == 'Decimal'",
        "type(subtotal).__name__ == 'Money'",
        "type(subtotal.amount).__name__ == 'Decimal'",
    ]


def test_mined_attribute_invariants_hold_on_the_real_objects() -> None:
    rows = (("150.00", "10.00"), ("99.99", "5.00"), ("20.00", "30.00"), ("10.00", "10.00"))
    calls = take_off_calls()
    mined = mine_invariants(calls, ["subtotal", "off"], limit=50)
    assert len(mined) > 10
    for s, o in rows:
        env = {"subtotal": Money(Decimal(s)), "off": Money(Decimal(o))}
        env[R] = take_off(env["subtotal"], env["off"])
        for inv in mined:
            assert eval(inv.expression, {}, env), inv


def test_inspection_patches_assert_attribute_invariants_on_real_objects() -> None:
    from equisa_core.localization.inspection import ASSERTION_PREFIX, build_inspection_patch

    mined = mine_invariants(take_off_calls(), ["subtotal", "off"])
    patched = build_inspection_patch(TAKE_OFF_SOURCE.lstrip(), "pkg.take_off", mined)
    namespace: dict[str, Any] = {"Money": Money}
    exec(compile(patched, "patched.py", "exec"), namespace)
    function = namespace["take_off"]
    assert function(Money(Decimal("50.00")), Money(Decimal("5.00"))) == Money(Decimal("45.00"))
    # A plain string where Money was always passed: the type guard fires, not an AttributeError.
    with pytest.raises(AssertionError, match=ASSERTION_PREFIX):
        function("50.00", Money(Decimal("5.00")))
    # A bug that adds the discount: the result's amount exceeds the subtotal's.
    buggy = build_inspection_patch(TAKE_OFF_SOURCE.lstrip().replace("amount - off", "amount + off"),
                                   "pkg.take_off", mined)
    exec(compile(buggy, "buggy.py", "exec"), namespace)
    with pytest.raises(AssertionError, match=r"result\.amount is at most subtotal\.amount"):
        namespace["take_off"](Money(Decimal("50.00")), Money(Decimal("5.00")))


def test_builds_that_are_rejected_or_undecodable_give_no_value() -> None:
    hostile = EncodedValue(type="pkg.Money", build="__import__('os').system('echo hacked')")
    wrong = EncodedValue(type="datetime.date", build="datetime.date(2024, 13, 1)")
    calls = [RecordedCall(fqn="m.f", args={"x": value}) for value in (hostile, wrong, hostile)]
    assert expressions(calls, ["x"]) == ["x is not None"]


def test_enum_members_and_objects_mixed_with_none() -> None:
    members = [ev(Color.RED), ev(Color.BLUE)]
    assert members[0].build is not None and members[0].build.endswith(".Color.RED")
    calls = [RecordedCall(fqn="m.f", args={"x": value}) for value in members]
    assert expressions(calls, ["x"]) == ["type(x).__name__ == 'Color'"]
    optional = [call(x=Money(Decimal("1"))), call(x=None), call(x=Money(Decimal("2")))]
    mined = expressions(optional, ["x"])
    assert mined == ["x is None or type(x).__name__ == 'Money'"]  # no attributes read from a maybe-None


class Color(enum.Enum):
    RED = 1
    BLUE = 2

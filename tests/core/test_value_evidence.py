"""The value comparison's pure parts: kinds of values, and the Golden Rule of Callees on values."""

from __future__ import annotations

from equisa_core.common.models import EncodedValue, RecordedCall
from equisa_core.localization.value_evidence import compare_values, value_kind


def value(type_: str, literal: str | None) -> EncodedValue:
    return EncodedValue(type=type_, repr=literal, literal=literal)


def call(fqn: str, result: EncodedValue | None = None, raised: str | None = None,
         **args: EncodedValue) -> RecordedCall:
    return RecordedCall(fqn=fqn, args=args, result=result, raised=raised)


def test_kinds_are_coarse():
    assert value_kind(value("builtins.NoneType", "None")) == "None"
    assert value_kind(value("builtins.int", "0")) == "builtins.int:zero"
    assert value_kind(value("builtins.float", "-0.5")) == "builtins.float:neg"
    assert value_kind(value("builtins.int", "7")) == value_kind(value("builtins.int", "12"))
    assert value_kind(value("builtins.list", "[1, 2]")) == "builtins.list:len2-5"
    assert value_kind(value("builtins.str", "''")) == "builtins.str:len0"
    assert value_kind(value("builtins.bool", "True")) != value_kind(value("builtins.bool", "False"))
    assert value_kind(None, raised="pkg.errors.Boom") == "raise:pkg.errors.Boom"
    assert value_kind(value("pkg.Money", None)) == "pkg.Money"


def test_the_wrong_value_starts_where_callees_and_arguments_were_as_in_passing_tests():
    one, none = value("builtins.int", "1"), value("builtins.NoneType", "None")
    calls = {
        "t_pass": [call("m.lookup", one, key=one), call("m.render", value("builtins.str", "'a'"), item=one)],
        "t_fail": [call("m.lookup", none, key=one), call("m.render", None, "builtins.TypeError", item=none)],
    }
    callees = {"m.render": {"m.lookup"}}
    found = compare_values(calls, {"t_fail"}, {"t_pass"}, callees, {"m.render"})
    assert (found["m.lookup"].origin, found["m.lookup"].passed_on) == (1.0, 0.0)
    assert (found["m.render"].origin, found["m.render"].passed_on) == (0.0, 1.0)
    assert found["m.lookup"].seen_in == ("t_fail",)


def test_an_argument_the_failing_test_gives_is_not_a_wrong_value():
    calls = {
        "t_pass": [call("m.parse", value("builtins.int", "3"), text=value("builtins.str", "'3'"))],
        "t_fail": [call("m.parse", value("builtins.int", "-1"), text=value("builtins.str", "''"))],
    }
    given = compare_values(calls, {"t_fail"}, {"t_pass"}, {}, {"m.parse"})
    assert given["m.parse"].origin == 1.0
    passed_along = compare_values(calls, {"t_fail"}, {"t_pass"}, {}, set())
    assert passed_along["m.parse"].passed_on == 1.0 and passed_along["m.parse"].origin == 0.0


def test_nothing_to_compare_gives_no_finding():
    calls = {"t_fail": [call("m.f", value("builtins.int", "1"))]}
    assert compare_values(calls, {"t_fail"}, set(), {}, set()) == {}
    assert compare_values({}, {"t_fail"}, {"t_pass"}, {}, set()) == {}

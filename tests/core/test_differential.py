"""The overfitting guard's differential test (``equisa_core.validation.differential``)."""

from __future__ import annotations

import ast

from hypothesis import given
from hypothesis import strategies as st

from equisa_core.common.models import EncodedValue, RecordedCall
from equisa_core.validation.differential import (
    COLLAPSE_MIN_INPUTS,
    MAX_INPUTS,
    MAX_NEIGHBOURS_PER_CALL,
    Observed,
    compared_with_items,
    differential_inputs,
    driver_module,
    falls_through_to_none,
    judge,
    neighbour_values,
    observed_of,
    raised_by_name,
)


def call(fqn: str, result: str | None = None, raised: str | None = None, **args: str) -> RecordedCall:
    def encoded(text: str) -> EncodedValue:
        return EncodedValue(type="builtins.object", literal=text)

    return RecordedCall(fqn=fqn, args={k: encoded(v) for k, v in args.items()},
                        result=None if result is None else encoded(result), raised=raised)


def test_neighbours_of_numbers_sequences_strings_and_booleans():
    assert neighbour_values(3) == [2, 4, 0, -3]
    assert neighbour_values(True) == [False]
    assert neighbour_values("ab") == ["b", "a", "", "abb"]
    assert neighbour_values([3, 1, 2]) == [[1, 2], [3, 1], [3, 1, 2, 2], [2, 1, 3], [1, 3, 2], [1, 2, 3], []]
    assert neighbour_values((1,)) == [(), (1, 1)]
    assert neighbour_values([1, "a"]) == [["a"], [1], [1, "a", "a"], ["a", 1], []]  # no sorted: mixed types


@given(st.recursive(st.integers() | st.text(max_size=5) | st.booleans(),
                    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner), max_leaves=8))
def test_a_neighbour_is_never_the_value_itself_and_never_repeats(value: object) -> None:
    found = neighbour_values(value)
    assert all(not (type(n) is type(value) and n == value) for n in found)
    assert len({repr(n) for n in found}) == len(found)


def test_inputs_are_the_calls_and_their_neighbours_failing_ones_first_and_the_strongest_origin_wins():
    calls = [("passing", call("m.search", x="1", seq="(1, 2)")),
             ("failing", call("m.search", x="2", seq="(1, 2)"))]
    inputs = differential_inputs("search", ["x", "seq"], calls)
    assert inputs[0].call == "search(2, (1, 2))" and inputs[0].origin == "failing"
    by_call = {i.call: i.origin for i in inputs}
    # an exact passing call stays passing, though it is also the failing call's neighbour (x - 1)
    assert by_call["search(1, (1, 2))"] == "passing"
    # the passing call's neighbour x + 1 is the exact failing call; x = 0 is both calls' neighbour
    assert by_call["search(0, (1, 2))"] == "failing"
    assert by_call["search(3, (1, 2))"] == "failing" and by_call["search(1, (2,))"] == "passing"
    assert len({i.name for i in inputs}) == len(inputs)
    for item in inputs:
        ast.parse(item.call, mode="eval")


def test_a_parameter_compared_with_another_s_items_is_found():
    assert compared_with_items("def f(x, seq):\n    if x < seq[0] or seq[i] <= x <= seq[i + 1]:\n"
                               "        return 1\n") == {"x": "seq"}
    assert compared_with_items("def f(seq, k):\n    return seq[k] == k\n") == {"k": "seq"}
    # plain comparisons, items of a local or of the parameter itself, a method: none
    assert compared_with_items("def f(lo, x, hi):\n    return lo <= x <= hi\n") == {}
    assert compared_with_items("def f(x):\n    rows = [1]\n    return x < rows[0] or x < x[0]\n") == {}
    assert compared_with_items("x = 1\n") == {}


def test_a_comparison_with_a_converted_item_counts_too():
    assert compared_with_items("def f(x, seq):\n    return x < int(seq[0])\n") == {"x": "seq"}


def test_a_function_that_returns_none_only_by_running_off_its_end_is_found():
    assert falls_through_to_none("def f(x):\n    if x:\n        return 1\n    elif x == 0:\n"
                                 "        return x\n")
    assert not falls_through_to_none("def f(x):\n    if x:\n        return None\n    return 1\n")
    assert not falls_through_to_none("def f(x):\n    if x:\n        return\n    return 1\n")
    assert not falls_through_to_none("def f(x):\n    print(x)\n")  # no return: None is its answer
    assert not falls_through_to_none("def f(x):\n    yield x\n    return 1\n")
    # a nested function's returns are its own
    assert falls_through_to_none("def f(x):\n    def g():\n        return None\n    return g\n")


def test_a_candidate_that_still_runs_off_the_end_is_a_crash_where_the_function_never_means_none():
    calls = [("passing", call("m.search", x="5", seq="(1, 5, 10)")),
             ("failing", call("m.search", x="7", seq="()"))]
    inputs = differential_inputs("search", ["x", "seq"], calls, {"x": "seq"})
    names = {i.call: i.name for i in inputs}
    original = {i.name: Observed(result="1") for i in inputs}
    original[names["search(1, (1, 5, 10))"]] = Observed(result="None")  # the original runs off its end
    patched = {**original, names["search(7, ())"]: Observed(result="0")}
    assert judge(inputs, original, patched).passed  # None may be an answer: no crash
    verdict = judge(inputs, original, patched, falls_through=True)
    assert not verdict.passed and [c.call for c in verdict.crashes] == ["search(1, (1, 5, 10))"]


def test_a_passing_call_s_neighbour_in_a_failing_call_s_boundary_class_counts_as_failing():
    """The failing call has x equal to the last item: the neighbour of a passing call with x equal
    to its last item lies where the failure is (a boundary fix changes it); x equal to the first
    item does not."""
    calls = [("passing", call("m.search", x="42", seq="[1, 5, 10]")),
             ("failing", call("m.search", x="10", seq="(-5, 3, 10)"))]
    origin = {i.call: i.origin for i in differential_inputs("search", ["x", "seq"], calls, {"x": "seq"})}
    assert origin["search(10, [1, 5, 10])"] == "failing" and origin["search(1, [1, 5, 10])"] == "passing"
    assert origin["search(42, [1, 5, 10])"] == "passing"  # an exact passing call stays passing
    plain = {i.call: i.origin for i in differential_inputs("search", ["x", "seq"], calls)}
    assert "search(10, [1, 5, 10])" not in plain  # without the comparison, no boundary and no class


def test_a_number_compared_with_a_sequence_s_items_takes_its_first_and_last_item():
    calls = [("passing", call("m.rank", score="15", ladder="[10, 20, 30]"))]
    plain = {i.call for i in differential_inputs("rank", ["score", "ladder"], calls)}
    bounded = {i.call for i in differential_inputs("rank", ["score", "ladder"], calls, {"score": "ladder"})}
    assert bounded - plain == {"rank(10, [10, 20, 30])", "rank(30, [10, 20, 30])"}
    # a text is not given a number's boundaries; an item equal to the value is not made twice
    texts = [("passing", call("m.f", x="'a'", seq="[1, 2]")), ("passing", call("m.f", x="1", seq="[1, 2]"))]
    made = [i.call for i in differential_inputs("f", ["x", "seq"], texts, {"x": "seq"})]
    assert "f(2, [1, 2])" in made and made.count("f(1, [1, 2])") == 1


def test_calls_without_literal_arguments_or_with_other_parameters_give_no_input():
    no_literal = RecordedCall(fqn="m.f", args={"x": EncodedValue(type="m.Thing", repr="<Thing>")})
    assert differential_inputs("f", ["x"], [("passing", no_literal)]) == []
    assert differential_inputs("f", ["x", "y"], [("passing", call("m.f", x="1"))]) == []


def test_inputs_are_capped_per_call_and_in_all():
    calls = [("passing", call("m.f", xs=repr([i + 3, i, i + 2]), n=str(i + 7), s="'ab'")) for i in range(40)]
    inputs = differential_inputs("f", ["xs", "n", "s"], calls)
    assert len(inputs) == MAX_INPUTS
    one = differential_inputs("f", ["xs", "n", "s"], calls[:1])  # 1 + 7 + 4 + 4 made
    assert len(one) == 1 + MAX_NEIGHBOURS_PER_CALL


def test_the_driver_module_makes_each_call_guarded():
    inputs = differential_inputs("f", ["x"], [("passing", call("m.f", x="1"))])
    module = driver_module("pkg.mod", "f", inputs)
    tree = ast.parse(module)
    assert module.startswith("from pkg.mod import f\n")
    tests = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert [t.name for t in tests] == [i.name for i in inputs]
    assert all(isinstance(t.body[0], ast.Try) for t in tests)


def test_a_change_near_a_passing_call_is_far_and_near_a_failing_call_is_not():
    calls = [("passing", call("m.f", x="5")), ("failing", call("m.f", x="-5"))]
    inputs = differential_inputs("f", ["x"], calls)
    names = {i.call: i.name for i in inputs}
    original = {i.name: Observed(result="1") for i in inputs}
    fixed = {**original, names["f(-5)"]: Observed(result="0"), names["f(-4)"]: Observed(result="0")}
    verdict = judge(inputs, original, fixed)
    assert verdict.passed and verdict.near_changes == 2 and verdict.compared == len(inputs)
    boundary = {**fixed, names["f(6)"]: Observed(raised="builtins.ValueError")}
    verdict = judge(inputs, original, boundary)  # one change near a passing call: tolerated
    assert verdict.passed and [c.call for c in verdict.far_changes] == ["f(6)"]
    assert "tolerated: f(6): returned 1 before, raised ValueError now" in verdict.reason()
    overfit = {**boundary, names["f(4)"]: Observed(result="7")}
    verdict = judge(inputs, original, overfit)
    assert not verdict.passed
    assert sorted(c.call for c in verdict.far_changes) == ["f(4)", "f(6)"]
    assert "changes behaviour away from the failure on 2 of" in verdict.reason()


def test_a_single_change_for_the_worse_near_a_passing_call_is_not_tolerated():
    # a special case for the failing input (``x < 0`` for ``x < xs[0]``) leaves the function without
    # an answer next to a passing call: one such change is one too many
    calls = [("passing", call("m.f", x="5")), ("failing", call("m.f", x="-5"))]
    inputs = differential_inputs("f", ["x"], calls)
    names = {i.call: i.name for i in inputs}
    original = {i.name: Observed(result="1") for i in inputs}
    for worse in (Observed(result="None"), Observed(raised="builtins.IndexError"),
                  Observed(raised="equisa_probe.TestTimeout")):
        verdict = judge(inputs, original, {**original, names["f(6)"]: worse})
        assert not verdict.passed and len(verdict.far_changes) == 1
        assert verdict.reason().startswith("makes the function worse away from the failure on 1 of")
    # where the original returned None, a change is not for the worse
    none_before = {**original, names["f(6)"]: Observed(result="None")}
    assert judge(inputs, none_before, {**none_before, names["f(6)"]: Observed(result="0")}).passed
    # and where it crashed it is no oracle: answers there are not far changes at all
    crashed = {**original, names["f(6)"]: Observed(raised="builtins.IndexError"),
               names["f(4)"]: Observed(raised="builtins.IndexError")}
    verdict = judge(inputs, crashed, {**crashed, names["f(6)"]: Observed(result="2"),
                                      names["f(4)"]: Observed(result="0")})
    assert verdict.passed and not verdict.far_changes
    # an answer of a type the function never returns (an int where it returns booleans) is not one
    booleans = {k: Observed(result="True") if not v.crashed else v for k, v in crashed.items()}
    four = {names["f(4)"]: Observed(result="True")}
    verdict = judge(inputs, booleans, {**booleans, **four, names["f(6)"]: Observed(result="1")})
    assert [c.call for c in verdict.far_changes] == ["f(6)"]
    assert judge(inputs, booleans, {**booleans, **four, names["f(6)"]: Observed(result="False")}).passed
    # None is no answer: a crash turned into None is a far change like any other
    none_now = {**crashed, names["f(6)"]: Observed(result="None"), names["f(4)"]: Observed(result="None")}
    assert len(judge(inputs, crashed, none_now).far_changes) == 2


def test_a_candidate_that_still_crashes_next_to_a_call_is_withheld():
    # the candidate fixed the failing test's input, but the function still raises IndexError on a
    # neighbour (the empty list), as the original did: the fix covers the tests, not the function
    calls = [("passing", call("m.f", xs="[1, 2]")), ("failing", call("m.f", xs="[2, 1]"))]
    inputs = differential_inputs("f", ["xs"], calls)
    names = {i.call: i.name for i in inputs}
    original = {i.name: Observed(result="1") for i in inputs}
    crash = Observed(raised="builtins.IndexError")
    original[names["f([])"]] = crash
    verdict = judge(inputs, original, original)
    assert not verdict.passed and not verdict.far_changes
    assert [c.call for c in verdict.crashes] == ["f([])"]
    assert verdict.reason().startswith("still crashes next to the tests' calls on 1 of")
    # a refusal is not a crash: an exception the source raises by name, one the original raised
    # on a call a passing test makes (the test expects it), or one outside CRASHES
    assert judge(inputs, original, original, refusals=raised_by_name(
        "def f(xs):\n    if not xs:\n        raise IndexError('empty')\n    return 1\n")).passed
    expected = {**original, names["f([1, 2])"]: crash}
    assert judge(inputs, expected, expected).passed
    assert [i.call for i in inputs if i.exact] == ["f([2, 1])", "f([1, 2])"]
    refused = {**original, names["f([])"]: Observed(raised="builtins.ValueError")}
    assert judge(inputs, refused, refused).passed


def test_a_candidate_that_answers_the_same_whatever_the_input_is_withheld():
    # the original splits each header ("Basic x" -> ("Basic", "x")); the candidate's negated guard
    # returns ("", "") for every one: it passes a test that expects a refusal, and no longer
    # depends on its input
    calls = [("failing", call("m.split", header="'Basic x'"))]
    inputs = differential_inputs("split", ["header"], calls)
    assert len(inputs) >= COLLAPSE_MIN_INPUTS
    def split(header: str) -> Observed:
        scheme, _, param = header.partition(" ")
        return Observed(result=repr((scheme, param)))
    original = {i.name: split(ast.literal_eval(i.call[len("split("):-1])) for i in inputs}
    silenced = {i.name: Observed(result="('', '')") for i in inputs}
    verdict = judge(inputs, original, silenced)
    assert not verdict.passed and verdict.collapsed == "('', '')"
    expected = f"no longer depends on its input: returns ('', '') on all {len(inputs)} "
    assert verdict.reason().startswith(expected)
    # not a collapse: a constant original, a boolean answer, an original that only crashed, or too few inputs
    assert judge(inputs, silenced, silenced).passed
    yes = {i.name: Observed(result="True") for i in inputs}
    assert judge(inputs, {**yes, inputs[0].name: Observed(result="False")}, yes).passed
    crashed = {i.name: Observed(raised="builtins.IndexError") for i in inputs}
    assert judge(inputs, crashed, silenced).collapsed is None
    few = inputs[:COLLAPSE_MIN_INPUTS - 1]
    assert judge(few, original, silenced).collapsed is None


def test_the_exceptions_a_source_raises_by_name():
    source = ("def f(x):\n    if x < 0:\n        raise ValueError('negative')\n    if x > 9:\n"
              "        raise errors.TooBig\n    try:\n        return 1 / x\n    except ZeroDivisionError:\n"
              "        raise\n")
    assert raised_by_name(source) == {"ValueError", "TooBig"}


def test_inputs_without_a_record_in_either_run_are_not_compared():
    inputs = differential_inputs("f", ["x"], [("passing", call("m.f", x="5"))])
    original = {i.name: Observed(result="1") for i in inputs[1:]}
    verdict = judge(inputs, original, {i.name: Observed(result="2") for i in inputs[:-1]})
    assert verdict.compared == len(inputs) - 2 and len(verdict.far_changes) == verdict.compared


def test_what_a_driver_test_observed_is_its_first_recorded_call():
    observed = observed_of({"t1": [call("m.f", result="[1, 2]", x="1")], "t2": [],
                            "t3": [call("m.f", raised="builtins.KeyError", x="2")],
                            "t4": [call("m.f", x="3")]})  # stopped at its time limit: no result
    assert observed == {"t1": Observed(result="[1, 2]"), "t3": Observed(raised="builtins.KeyError")}

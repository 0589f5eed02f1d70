"""The shape of a parameter read from how the body uses it (issue 49), and the strategy it gives."""

from __future__ import annotations

import ast
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from equisa_core.testgen.searched_members import searched_functions
from equisa_core.testgen.usage_shapes import Shape, forwarded, parameter_shapes, shape_strategy
from tests.conftest import FIXTURES

INTERVALS = (FIXTURES / "untyped_intervals" / "intervals.py").read_text()  # merge, total_length, contains


def functions(source: str) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in ast.parse(textwrap.dedent(source)).body if isinstance(n, ast.FunctionDef)}


def test_unpacking_loop_gives_pairs_of_numbers():
    found = functions(INTERVALS)
    assert parameter_shapes(found["merge"], found) == {"intervals": Shape("pairs", width=2, item="number")}


def test_a_parameter_passed_on_takes_the_callee_shape_and_a_compared_one_is_a_number():
    found = functions(INTERVALS)
    assert forwarded(found["contains"], found) == {"intervals": [("merge", 0)]}
    assert parameter_shapes(found["contains"], found) == {
        "intervals": Shape("pairs", width=2, item="number"),
        "x": Shape("number"),
    }


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def f(options):\n    return options.get('a', 1)\n", Shape("mapping")),
        ("def f(options):\n    return options['a']\n", Shape("mapping")),
        ("def f(name):\n    return name.lower()\n", Shape("text")),
        ("def f(name):\n    return len(name) > 3 and name.startswith('x')\n", Shape("text")),
        ("def f(values):\n    return values[0] if len(values) else None\n", Shape("sequence")),
        ("def f(words):\n    return [w.upper() for w in words]\n", Shape("sequence", item="text")),
        ("def f(n):\n    return list(range(n))\n", Shape("number")),
        ("def f(n):\n    return n * 2\n", Shape("number")),
        ("def f(rows):\n    for i, (a, b) in enumerate(rows):\n        pass\n", Shape("pairs", width=2)),
    ],
)
def test_each_use_gives_its_shape(source, expected):
    function = functions(source)["f"]
    assert parameter_shapes(function) == {function.args.args[0].arg: expected}


def test_nothing_telling_gives_no_shape_and_recursion_stops():
    found = functions("def f(x):\n    return g(x)\n\ndef g(y):\n    return f(y)\n")
    assert parameter_shapes(found["f"], found) == {}


@pytest.mark.parametrize(
    "shape",
    [Shape("pairs", width=2), Shape("pairs", width=3, item="text"), Shape("sequence"), Shape("mapping"),
     Shape("text"), Shape("number")],
)
def test_each_shape_strategy_draws_values_of_that_shape(shape):
    strategy = eval(shape_strategy(shape, [], ["ab"]), {"st": st})  # the driver evaluates it the same way

    @settings(max_examples=25, database=None)
    @given(strategy)
    def check(value):
        if shape.kind == "pairs":
            assert isinstance(value, list)
            assert all(isinstance(v, tuple) and len(v) == shape.width for v in value)
        elif shape.kind == "sequence":
            assert isinstance(value, list)
        elif shape.kind == "mapping":
            assert isinstance(value, dict)
        elif shape.kind == "text":
            assert isinstance(value, str)
        else:
            assert isinstance(value, int)

    check()


def test_the_search_draws_an_uncalled_function_from_its_callee_recorded_values():
    [contains] = searched_functions(INTERVALS, ["contains"], {"merge": [("[(1, 2)]",)]}, [])
    intervals, x = contains.strategies
    assert "st.lists(st.tuples(" in intervals and "st.text" not in intervals
    assert x.startswith("st.one_of(st.sampled_from([-2") and "st.text" not in x

"""Callables as inputs of the input search (issue 49): a parameter the body calls is a callable of
the arity its call sites use, the search draws it from a small set written as source, and the kept
inputs holding callables become tests that show them as source."""

from __future__ import annotations

import ast
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from equisa_core.testgen.annotation_strategies import strategy_for
from equisa_core.testgen.callable_inputs import (
    DOCUMENTED,
    callable_strategy,
    documented_styles,
    is_callable_text,
    recorded_callable_text,
)
from equisa_core.testgen.input_search import (
    KeptInput,
    SearchedFunction,
    SearchRecord,
    read_search_records,
    search_driver_module,
)
from equisa_core.testgen.search_callable_tests import callable_input_tests, without_callable_inputs
from equisa_core.testgen.searched_members import searched_classes, searched_functions
from equisa_core.testgen.usage_shapes import Shape, attribute_shapes, parameter_shapes
from equisa_core.testgen.value_texts import is_drawable_text
from tests.conftest import FIXTURES

FUNCS = (FIXTURES / "callables" / "funcs.py").read_text()


def shapes(source: str) -> dict[str, Shape]:
    (function,) = ast.parse(textwrap.dedent(source)).body
    assert isinstance(function, ast.FunctionDef)
    return parameter_shapes(function)


@pytest.mark.parametrize(
    ("source", "name", "arity"),
    [
        ("def f(func, xs):\n    return [func(x) for x in xs]\n", "func", 1),
        ("def f(combine, a, b):\n    return combine(a, b)\n", "combine", 2),
        ("def f(words, key):\n    return sorted(words, key=key)\n", "key", 1),
        ("def f(g, xs):\n    return list(map(g, xs, xs))\n", "g", 2),
        ("def f(g, xs):\n    import functools\n    return functools.reduce(g, xs)\n", "g", 2),
        ("def f(g, *args):\n    return g(*args)\n", "g", -1),
    ],
)
def test_a_called_parameter_is_a_callable_of_the_arity_its_call_sites_use(source, name, arity):
    assert shapes(source)[name] == Shape("callable", width=arity)


def test_a_callable_outranks_other_evidence_and_a_docstring_read_marks_it_documented():
    found = shapes("def f(func, others):\n    n = len(func)\n    func(n)\n"
                   "    return [o.__doc__ for o in others]\n")
    assert found["func"] == Shape("callable", width=1)
    assert found["others"] == Shape("sequence", item="callable", documented=True)


def test_an_annotation_callable_draws_callables_of_its_arity():
    def strategy(text: str) -> str | None:
        return strategy_for(ast.parse(text, mode="eval").body, [], [], [])

    assert strategy("Callable[[int, int], int]") == callable_strategy(2)
    assert strategy("typing.Callable[..., None]") == callable_strategy(-1)
    assert strategy("Optional[Callable[[str], None]]") == f"st.one_of(st.none(), {callable_strategy(1)})"


def _draw(strategy: str, count: int = 30) -> list[str]:
    """The texts a callable strategy draws (the driver's ``_callable`` stood in by ``eval``)."""
    import operator

    texts: list[str] = []
    registry: dict[int, str] = {}

    def made(text: str) -> object:
        value = eval(text, {"operator": operator})
        registry[id(value)] = text
        texts.append(text)
        return value

    drawn = eval(strategy, {"st": st, "_callable": made})

    @settings(max_examples=count, database=None, derandomize=True)
    @given(drawn)
    def run(value: object) -> None:
        assert callable(value)

    run()
    return texts


def test_callables_drawn_are_written_as_source_and_take_the_arity_asked():
    for arity in (0, 1, 2):
        texts = _draw(callable_strategy(arity))
        assert texts and all(is_callable_text(t) and is_drawable_text(t) for t in texts)
        assert all(not t.startswith("<") for t in texts)
    assert "<function" not in callable_strategy(1)
    assert not is_callable_text("__import__('os')") and not is_drawable_text("open")


def test_a_function_taking_functions_and_a_decorator_factory_are_searched_with_callables():
    found = {f.qualname: f for f in searched_functions(FUNCS, ["map_values", "fold", "rank", "merge_notes"],
                                                        {}, [])}
    assert found["map_values"].strategies[0] == callable_strategy(1)
    assert found["fold"].strategies[0] == callable_strategy(2)
    assert found["rank"].strategies[1] == callable_strategy(1)
    notes = found["merge_notes"]
    # Two of *sources, ``heading`` (keyword-only, passed by name or not), then what its result decorates.
    assert notes.applied and len(notes.strategies) == 4
    assert "google_documented" in notes.strategies[0] and "functools.wraps(" in notes.strategies[3]
    assert notes.strategies[2].startswith("_keyword('heading', ") and notes.strategies[2].endswith(", False)")


def test_recorded_functions_are_evidence_and_styles_follow_the_module():
    assert recorded_callable_text("builtins.builtin_function_or_method", "<built-in function len>") == "len"
    assert recorded_callable_text("builtins.function", "<function f at 0x1>") == "lambda *args: args"
    assert recorded_callable_text("builtins.int", "1") is None
    assert documented_styles("x = ':param a: the a'") == ("rest_documented",)
    assert documented_styles("nothing") == tuple(DOCUMENTED)
    source = "def apply(func, x):\n    return 1\n"
    (searched,) = searched_functions(source, ["apply"], {"apply": [("len", "'ab'")]}, [])
    assert searched.strategies[0] == callable_strategy()


def test_a_key_stored_by_init_and_called_by_a_method_is_a_callable_and_dataclass_fields_are_parameters():
    source = textwrap.dedent('''
        import dataclasses
        from typing import Callable, ClassVar, Optional

        class Keyed:
            def __init__(self, key, item):
                self.key = key
                self.item = item

            def value(self):
                return self.key(self.item)

        @dataclasses.dataclass
        class Logged:
            count: ClassVar[int] = 0
            text: str = "done"
            logger: Optional[Callable[[str], None]] = print
            last: float = dataclasses.field(default=0.0, init=False)

            def report(self):
                self.logger(self.text)
    ''')
    tree = ast.parse(source)
    keyed = tree.body[2]
    assert isinstance(keyed, ast.ClassDef) and isinstance(keyed.body[0], ast.FunctionDef)
    assert attribute_shapes(keyed, keyed.body[0])["key"] == Shape("callable", width=1)
    found = {c.qualname: c for c in searched_classes(source, ["Keyed.value", "Logged.report"], {}, [])}
    assert found["Keyed"].init[0] == callable_strategy(1)
    assert len(found["Logged"].init) == 2 and callable_strategy(1) in found["Logged"].init[1]


def test_kept_inputs_holding_callables_become_tests_showing_them_as_source():
    lines = [
        '{"kind": "testgen-search", "qualname": "map_values", "typed": false, "kept": ['
        '{"args": ["len", "{\'a\': \'xy\'}"], "raised": null, "result": "{\'a\': 2}", "literal": true}, '
        '{"args": ["operator.itemgetter(0)", "{\'a\': 1}"], "raised": "TypeError", '
        '"raised_module": "builtins"}, '
        '{"args": ["[1]", "{}"], "raised": null, "result": "{}", "literal": true}]}',
        '{"kind": "testgen-search", "qualname": "merge_notes", "typed": false, "applied": true, "kept": ['
        '{"args": ["rest_documented", "functools.wraps(google_documented)(lambda *args: None)"], '
        '"raised": null, "result": "<function f at 0x1>", "literal": false, "callable": true, '
        '"doc": "\'Add.\'"}]}',
    ]
    records = read_search_records(lines)
    taken: set[str] = set()
    (valmap, raised), _ = callable_input_tests(records[0], "funcs", 0, taken)
    assert "assert map_values(len, {'a': 'xy'}) == {'a': 2}" in valmap.code
    assert "import operator" in raised.imports and "pytest.raises(TypeError)" in raised.code
    assert [k.args for k in without_callable_inputs(records[0]).kept] == [("[1]", "{}")]
    (decorated,), _ = callable_input_tests(records[1], "funcs", 0, taken)
    applied = "merge_notes(rest_documented)(functools.wraps(google_documented)(lambda *args: None))"
    assert applied in decorated.code
    assert "assert result.__doc__ == 'Add.'" in decorated.code and "0x" not in decorated.code
    defined = sorted(d.split("(")[0] for d in decorated.definitions)
    assert defined == ["def google_documented", "def rest_documented"]
    function_result = KeptInput(("len",), None, result="<function g at 0x2>", returned_callable=True)
    record = SearchRecord("make", False, 1, 1, (function_result,))
    (plain,), _ = callable_input_tests(record, "funcs", 0, taken)
    assert "assert callable(make(len))" in plain.code


def test_star_args_items_are_drawn_from_their_use_or_the_values_seen_and_an_empty_seed_is_valid_code():
    source = textwrap.dedent('''
        def merge(*dicts):
            """>>> merge({1: 'one'}, {2: 'two'})"""
            out = {}
            for d in dicts:
                out.update(d)
            return out

        def merge_with(func, *dicts):
            if len(dicts) == 1:
                dicts = dicts[0]
            return {k: func(v) for d in dicts for k, v in d.items()}
    ''')
    found = {f.qualname: f for f in searched_functions(source, ["merge", "merge_with"], {}, [])}
    assert len(found["merge"].strategies) == 2 and "st.dictionaries(" in found["merge"].strategies[0]
    assert found["merge"].seeds == (("{1: 'one'}", "{2: 'two'}"),)
    with_func = found["merge_with"].strategies
    assert with_func[0] == callable_strategy(1)
    assert with_func[1] == with_func[2] and "st.dictionaries(" in with_func[1]
    empty = SearchedFunction("now", (), False, ((),))
    compile(search_driver_module("m.py", "m", [empty], 10, 1.0), "driver.py", "exec")

"""The coverage-guided input search (``equisa_core.testgen.input_search``): strategies from
annotations and from the values seen, which functions it can call, and its driver module run for
real under pytest with Hypothesis and coverage.py (a subprocess, as in the sandbox)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from equisa_core.testgen.annotation_strategies import strategy_for
from equisa_core.testgen.carving import CarvedTest
from equisa_core.testgen.input_search import (
    KeptInput,
    KeptSequence,
    SearchRecord,
    SequenceRecord,
    Step,
    bug_like,
    crosshair_driver_tests,
    read_crosshair_records,
    read_search_records,
    read_sequence_records,
    search_driver_module,
)
from equisa_core.testgen.search_sequence_tests import sequence_tests
from equisa_core.testgen.searched_members import annotated_members, searched_classes, searched_functions
from equisa_core.testgen.value_texts import is_drawable_text, is_object_text, is_value_text
from tests.conftest import FIXTURES

#: The intervals fixture's module, and three functions the search leaves out or calls as it can.
INTERVALS = (FIXTURES / "intervals" / "intervals" / "core.py").read_text() + textwrap.dedent('''

    def untyped(pairs, limit=3):
        return [p for p in pairs if p[0] < limit]


    def _private(x: int) -> int:
        return x


    def keyword_only(x: int, *, scale: int) -> int:
        return x * scale
''')


def _annotation(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def _drawn(strategy_text: str, count: int = 60) -> list[object]:
    """Values drawn from a strategy's text, as the driver module would evaluate it."""
    import datetime
    import decimal

    # The text is ours (built by strategy_for); the driver module has the same names.
    strategy = eval(strategy_text, {"st": st, "datetime": datetime, "decimal": decimal})
    drawn: list[object] = []

    @settings(max_examples=count, database=None, derandomize=True)
    @given(strategy)
    def collect(value: object) -> None:
        drawn.append(value)

    collect()
    return drawn


def test_an_annotated_list_of_pairs_draws_lists_of_pairs_longer_than_one():
    text = strategy_for(_annotation("list[tuple[int, int]]"), [], [Decimal(10)], [])
    assert text is not None
    drawn = _drawn(text)
    assert all(isinstance(v, list) and all(isinstance(p, tuple) and len(p) == 2 for p in v) for v in drawn)
    assert max(len(v) for v in drawn) >= 3
    assert any(9 in p or 10 in p or 11 in p for v in drawn for p in v)  # the file's constant and neighbours


@pytest.mark.parametrize(("annotation", "check"), [
    ("Optional[int]", lambda v: v is None or type(v) is int),
    ("int | None", lambda v: v is None or type(v) is int),
    ("dict[str, float]", lambda v: isinstance(v, dict) and all(type(k) is str for k in v)),
    ("typing.Tuple[int, ...]", lambda v: type(v) is tuple and all(type(i) is int for i in v)),
    ("set[bool]", lambda v: isinstance(v, set)),
    ("'list[int]'", lambda v: isinstance(v, list)),
])
def test_annotations_map_to_their_strategies(annotation, check):
    text = strategy_for(_annotation(annotation), [], [], [])
    assert text is not None
    assert all(check(v) for v in _drawn(text, 30))


def test_an_unreadable_annotation_gives_no_strategy_and_no_annotation_falls_back_to_the_values_seen():
    assert strategy_for(_annotation("Money"), [], [], []) is None
    assert strategy_for(None, [], [], []) is None
    text = strategy_for(None, [[(1, 5), (7, 9)]], [], [])
    assert text is not None
    drawn = _drawn(text)
    assert all(isinstance(v, list) for v in drawn) and max(len(v) for v in drawn) > 2


@pytest.mark.parametrize("annotation", ["dict", "Dict", "Mapping", "typing.MutableMapping"])
def test_a_mapping_without_type_arguments_draws_dicts_around_those_seen_nested_as_they_nest(annotation):
    text = strategy_for(_annotation(annotation), [], [], ["k"])
    keys = strategy_for(_annotation("str"), [], [], ["k"])
    assert text is not None and text.startswith(f"st.dictionaries({keys}, ")
    # Its values, declared by nothing: ints, and small lists, sets, tuples and dicts (open_values).
    kinds = {type(x) for v in _drawn(text, 150) for x in v.values()}
    assert kinds == {int, list, set, tuple, dict}, kinds
    text = strategy_for(_annotation(annotation), [{"a": 1}, {"b": {"c": [2]}}], [], [])
    assert text is not None
    drawn = _drawn(text, 100)
    assert all(isinstance(v, dict) for v in drawn)
    assert any(v.get("a") == 1 for v in drawn) and any("a" in v and "b" in v for v in drawn)
    assert any(isinstance(x, dict) and isinstance(x.get("c"), list) for v in drawn for x in v.values())


@pytest.mark.parametrize("annotation", ["Any", "typing.Any", "_t.Any", "object"])
def test_any_draws_the_kinds_seen_else_ints_texts_and_none(annotation):
    text = strategy_for(_annotation(annotation), [], [], [])
    assert text == (f"st.one_of({strategy_for(_annotation('int'), [], [], [])}, "
                    f"{strategy_for(_annotation('str'), [], [], [])}, st.none())")
    assert {type(v) for v in _drawn(text)} == {int, str, type(None)}
    assert strategy_for(_annotation(annotation), [1, "x"], [], []) == strategy_for(None, [1, "x"], [], [])
    assert all(isinstance(v, dict) for v in _drawn(strategy_for(_annotation("dict[str, Any]"), [], [], [])))


#: Functions whose annotations give no strategy of their own, or a new one (issue 49).
UNREADABLE = textwrap.dedent('''
    from typing import Any


    def total(prices: dict) -> int:
        return sum(prices.values())


    def store(key: str, value: Any) -> None:
        return None


    def weigh(parcel: Parcel) -> int:
        return len(parcel.items())


    def stamp(parcel: Parcel) -> str:
        return str(parcel)


    def label(text: str, size: int = 1, unit: Unit = Unit.CM, scale: int = 2) -> str:
        return text * size


    def ship(parcel: Parcel) -> str:
        return str(parcel)


    class Shelf:
        def put(self, key: str, value: Any) -> None:
            self.last = (key, value)

        def move(self, parcel: Parcel) -> None:
            self.last = parcel

        def count(self, parcel: Parcel) -> int:
            return len(parcel.items())
''')


def test_an_annotation_without_a_strategy_falls_back_to_the_values_seen_then_the_body_else_a_note():
    dropped: list[str] = []
    found = {f.qualname: f for f in searched_functions(
        UNREADABLE, ["total", "store", "weigh", "stamp", "label", "ship"],
        {"stamp": [("'box'",)]}, [], dropped)}
    assert set(found) == {"total", "store", "weigh", "stamp", "label"}
    assert found["total"].typed and found["total"].strategies[0].startswith("st.dictionaries(")
    assert found["store"].typed and found["store"].strategies[1].startswith("st.one_of(")
    assert not found["weigh"].typed and "st.dictionaries(" in found["weigh"].strategies[0]  # .items()
    assert found["stamp"].typed and found["stamp"].strategies == (strategy_for(None, ["box"], [], []),)
    assert len(found["label"].strategies) == 2  # unit (and so scale) left at their defaults
    assert dropped == ["ship (no strategy for parcel: Parcel, and no value seen)"]
    assert annotated_members(UNREADABLE) >= {"total", "store", "stamp", "Shelf.put"}
    assert "weigh" not in annotated_members(UNREADABLE)


def test_a_method_taking_any_is_searched_and_one_without_a_strategy_is_noted():
    dropped: list[str] = []
    (shelf,) = searched_classes(UNREADABLE, ["Shelf.put"], {"Shelf.put": [("'a'", "1")]}, [], dropped)
    methods = dict(shelf.methods)
    assert set(methods) == {"put", "count"} and methods["put"][1] == strategy_for(None, [1], [], ["a"])
    assert methods["count"][0].startswith("st.dictionaries(")  # the body's use: a mapping
    assert dropped == ["Shelf.move (no strategy for parcel: Parcel, and no value seen)"]


def test_recorded_calls_seed_the_items_of_args_of_a_constructor_and_a_method():
    source = textwrap.dedent('''
        class Bag(dict):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)

            def add(self, key, *values):
                self[key] = values
    ''')
    seen = {"Bag.__init__": [("({'a': {'b': 1}},)", "{}")], "Bag.add": [("'k'", "(1, 2)")]}
    (bag,) = searched_classes(source, ["Bag.add"], seen, [])
    (item,) = bag.init
    assert all(isinstance(v, dict) for v in _drawn(item))
    assert any(isinstance(v.get("a"), dict) and v["a"].get("b") == 1 for v in _drawn(item))
    key, *values = dict(bag.methods)["add"]
    assert values == [strategy_for(None, [1], [], []), strategy_for(None, [2], [], [])]
    (plain,) = searched_classes(source, ["Bag.add"], {}, [])
    assert plain.init == () and len(dict(plain.methods)["add"]) == 1  # nothing recorded: no items


def test_searched_functions_are_the_callable_public_ones_with_their_seeds():
    found = {f.qualname: f for f in searched_functions(
        INTERVALS, ["merge", "first_gap", "untyped", "_private", "keyword_only"],
        {"untyped": [("[(1, 2)]", "3")], "merge": [("[(1, 3)]",)]}, [])}
    assert set(found) == {"merge", "first_gap", "untyped", "keyword_only"}
    assert found["keyword_only"].strategies[1].startswith("_keyword('scale', ")  # required: passed by name
    assert found["merge"].typed and found["merge"].seeds == (("[(1, 3)]",),)
    assert not found["untyped"].typed and len(found["untyped"].strategies) == 2  # the default's kind too


def test_bug_like_needs_an_input_the_annotations_allow():
    kept = KeptInput(("[]",), "IndexError")
    assert bug_like(SearchRecord("first_gap", True, 10, 4, (kept,)), kept)
    assert not bug_like(SearchRecord("untyped", False, 10, 4, (kept,)), kept)
    assert not bug_like(SearchRecord("first_gap", True, 10, 4, (kept,)), KeptInput(("[]",), "ValueError"))


def test_records_without_a_literal_argument_drop_that_input():
    lines = [json.dumps({"kind": "testgen-search", "qualname": "f", "typed": True, "examples": 5, "arcs": 2,
                         "kept": [{"args": ["[1, 2]"], "raised": None}, {"args": ["<object at 0x1>"]}]}),
             json.dumps({"kind": "mutant-done"}), "not json"]
    (record,) = read_search_records(lines)
    assert record.kept == (KeptInput(("[1, 2]",), None),)


def _run_driver(tmp_path: Path, module: str, source: str, driver: str, timeout: int = 300) -> list[str]:
    """Run a driver module in ``tmp_path`` beside ``source`` (saved as ``module``.py) under pytest, as
    the sandbox does; the records it wrote."""
    (tmp_path / f"{module}.py").write_text(source)
    (tmp_path / "conftest.py").write_text(
        "def pytest_addoption(parser):\n    parser.addoption('--equisa-out', default=None)\n")
    (tmp_path / "test_drive.py").write_text(driver)
    out = tmp_path / "out.jsonl"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_drive.py",
                           f"--equisa-out={out}"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stdout[-2000:]
    return out.read_text().splitlines()


def test_the_driver_module_keeps_inputs_that_reach_new_branches(tmp_path: Path):
    functions = searched_functions(INTERVALS, ["merge", "first_gap"], {"merge": [("[(1, 3)]",)]}, [])
    driver = search_driver_module("intervals.py", "intervals", functions, 150, 30.0)
    lines = _run_driver(tmp_path, "intervals", INTERVALS, driver)
    records = {r.qualname: r for r in read_search_records(lines)}
    merge, gap = records["merge"], records["first_gap"]
    assert merge.error is None and merge.examples >= 100
    assert merge.kept[0].args == ("[(1, 3)]",)  # the value seen goes first
    inputs = [ast.literal_eval(k.args[0]) for k in merge.kept]
    # Both branches of the loop: a pair merged into one, and a disjoint pair kept apart.
    namespace: dict[str, object] = {}
    exec(INTERVALS, namespace)  # the module under test, here in the test's own process
    merged = [(v, namespace["merge"](v)) for v in inputs]  # type: ignore[operator]
    assert any(len(result) < len(v) for v, result in merged), inputs
    assert any(len(result) >= 2 for _, result in merged), inputs
    assert merge.arcs >= 8
    raised = {k.raised for k in gap.kept}
    assert "IndexError" in raised  # a list of fewer than two intervals: listed as a possible bug
    assert all(bug_like(gap, k) for k in gap.kept if k.raised == "IndexError")


FILTERS = textwrap.dedent('''
    class Stack:
        def __init__(self):
            self.steps = []
            self.grouping = False


    def build(stack, options):
        if options.get("strip"):
            stack.steps.append("strip")
        if stack.grouping:
            stack.steps.append("group")
        return len(stack.steps)
''')


def test_objects_the_suite_passed_are_drawn_again_fresh_and_written_as_their_builds(tmp_path: Path):
    """An argument the suite passed as an object (recorded as its build) is drawn from those
    builds, each draw a fresh copy: a call that changes it does not change the next one."""
    grouped = "__equisa_object__('filters:Stack', {'steps': [], 'grouping': True})"
    plain = "__equisa_object__('filters:Stack', {'steps': [], 'grouping': False})"
    assert is_object_text(grouped) and not is_object_text("__equisa_object__('m:C', {'a': m.E.X})")
    assert not is_object_text("[1]") and is_drawable_text("[1]") and is_drawable_text(plain)
    (function,) = searched_functions(FILTERS, ["build"], {"build": [(plain, "{'strip': True}"),
                                                                  (grouped, "{}")]}, [])
    assert ".map(_rebuild)" in function.strategies[0] and function.seeds == ()
    driver = search_driver_module("filters.py", "filters", [function], 100, 30.0)
    (record,) = read_search_records(_run_driver(tmp_path, "filters", FILTERS, driver))
    assert record.error is None and record.kept
    assert {k.args[0] for k in record.kept} == {plain, grouped}  # written as drawn, before the call changed it
    assert any("'strip': True" in k.args[1] for k in record.kept)  # the branch that appends


def test_driver_observed_tests_that_expect_a_bug_like_exception_of_an_annotated_member_are_listed_instead():
    from equisa_core.testgen.assembly import without_bug_like
    from equisa_core.testgen.carving import CarvedTest

    def carved(name: str, body: str, expects: str) -> CarvedTest:
        return CarvedTest(name=name, target_fqn="intervals.core.first_gap", source_test="t", expects=expects,
                          code=f"def {name}():\n{textwrap.indent(body, '    ')}\n")

    index = carved("test_a", "with pytest.raises(IndexError):\n    first_gap([(0, 6)])", "exception")
    value = carved("test_b", "with pytest.raises(ValueError):\n    first_gap([(6, 0)])", "exception")
    result = carved("test_c", "assert first_gap([(1, 2), (4, 6)]) == 2", "result")
    annotated = {f"intervals.core.{q}" for q in annotated_members(INTERVALS)}
    assert "intervals.core.first_gap" in annotated and "intervals.core.untyped" not in annotated
    kept, notes = without_bug_like([index, value, result], annotated)
    assert kept == [value, result]
    assert notes == ["possible bug, not asserted: first_gap([(0, 6)]) raised IndexError (a driver's input; "
                     "intervals.core.first_gap was called with such values)"]
    # Unannotated, nothing says the input was allowed: the exception is asserted as observed.
    assert without_bug_like([index], set()) == ([index], [])


STACK = textwrap.dedent('''
    class Base:
        def push(self, item):
            self.items.append(item)

        def pop(self):
            return self.items.pop()


    class Stack(Base):
        def __init__(self, limit: int = 3):
            self.items = []
            self.limit = limit

        def peek(self):
            return self.items[-1]

        def room(self) -> int:
            return self.limit - len(self.items)

        def __len__(self):
            return len(self.items)

        def _hidden(self):
            return 0
''')


def test_searched_classes_drive_public_methods_the_inherited_ones_with_the_owners_values():
    (stack,) = searched_classes(STACK, ["Stack.peek"], {"Base.push": [("'a'",)]}, [])
    assert stack.qualname == "Stack" and len(stack.init) == 1 and stack.typed
    methods = dict(stack.methods)
    assert set(methods) == {"push", "pop", "peek", "room", "__len__"}  # len(obj): a step too
    assert "'a'" in methods["push"][0]  # Base.push's recorded value seeds Stack.push's strategy


def test_sequence_tests_construct_call_and_observe_and_list_bug_like_exceptions():
    record = SequenceRecord("Stack", True, 50, 9, (
        KeptSequence(init=("2",), steps=(Step("push", ("'a'",), "None", True), Step("peek", (), "'a'", True)),
                     state=(("len(obj)", "1"), ("obj.limit", "2"))),
        KeptSequence(init=("2",), steps=(Step("pop", (), raised="IndexError", raised_module="builtins"),)),
        KeptSequence(init=("2",), steps=(Step("push", ("1.5",), "None", True),
                                         Step("room", (), "0.5", True))),
        KeptSequence(init=("2",), steps=(Step("push", ("[]",), raised="TypeError", raised_module="builtins"),)),
        KeptSequence(init=("object()",), steps=(Step("pop", (), "1", True),)),
    ))
    assert annotated_members(STACK) == {"Stack.__init__"}  # room takes nothing but self
    tests, notes = sequence_tests(record, "stacks", 0, {"Stack.push"})
    by_name = {t.name: t.code for t in tests}
    assert by_name["test_search_0_Stack_push_then_peek"] == (
        "def test_search_0_Stack_push_then_peek():\n    obj = Stack(2)\n    obj.push('a')\n"
        "    assert obj.peek() == 'a'\n    assert len(obj) == 1\n    assert obj.limit == 2\n")
    assert "    with pytest.raises(IndexError):\n        obj.pop()\n" in by_name["test_search_0_Stack_pop"]
    assert "assert obj.room() == pytest.approx(0.5)" in by_name["test_search_0_Stack_push_then_room"]
    assert len(tests) == 3  # the TypeError is listed; a constructor argument with no literal is left out
    assert notes == ["possible bug, not asserted: Stack(2).push([]) raised TypeError after 0 calls "
                     "(a searched sequence)"]
    assert all("from stacks import Stack" in t.imports for t in tests)


def _search_sequences(tmp_path: Path, module: str, source: str, qualnames: list[str],
                      seen: dict[str, list[tuple[str, ...]]]) -> SequenceRecord:
    """Run the driver module's sequence search on ``source`` (saved as ``module``) for real."""
    classes = searched_classes(source, qualnames, seen, [])
    driver = search_driver_module(f"{module}.py", module, [], 100, 30.0, classes)
    (record,) = read_sequence_records(_run_driver(tmp_path, module, source, driver))
    return record


def _run_made(tmp_path: Path, header: str, tests: list[CarvedTest]) -> str:
    """Run the tests made from a search; their module's text."""
    module = header + "\n\n\n" + "\n\n".join(t.code for t in tests)
    (tmp_path / "test_made.py").write_text(module)
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_made.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0 and f"{len(tests)} passed" in ran.stdout, ran.stdout[-2000:]
    return module


def test_the_driver_module_searches_method_sequences(tmp_path: Path):
    record = _search_sequences(tmp_path, "stacks", STACK, ["Stack.push"], {"Base.push": [("'a'",)]})
    assert record.error is None and record.examples >= 50
    # A push followed by a peek or pop that returned what was pushed: a sequence, not single calls.
    assert any(any(s.method == "push" for s in k.steps) and any(s.method in ("peek", "pop") and s.raised is None
                                                                for s in k.steps) for k in record.kept)
    assert any(dict(k.state).get("len(obj)") not in (None, "0") for k in record.kept)
    tests, _ = sequence_tests(record, "stacks", 0)
    _run_made(tmp_path, "import pytest\nfrom stacks import Stack", tests)


BAG = textwrap.dedent('''
    import functools


    class _Counted:
        """A descriptor of the class's own, as statistics classes define them."""

        def __get__(self, obj, owner=None):
            return 0 if obj is None else len(obj.items)


    class Bag:
        count = _Counted()

        def __init__(self, first: int = 0):
            self.items = [first]

        def add(self, item: int):
            self.items.append(item)

        @property
        def largest(self):
            if len(self.items) > 2:
                return max(self.items)
            return None

        @functools.cached_property
        def label(self):
            return "big" if sum(self.items) > 10 else "small"

        def __iter__(self):
            return iter(self.items)

        def __repr__(self):
            return "Bag(%r)" % (self.items,)
''')


def test_the_sequence_search_observes_properties_repr_and_items(tmp_path: Path):
    """After its calls, an object is observed through what its class offers besides methods: the
    branches inside properties are reached, and the tests assert what they read."""
    record = _search_sequences(tmp_path, "bags", BAG, ["Bag.add"], {"Bag.add": [("12",)]})
    observed = [dict(k.state) for k in record.kept]
    assert any(state.get("obj.largest") not in (None, "None") for state in observed)  # the branch inside
    assert {"'big'", "'small'"} <= {state.get("obj.label") for state in observed}
    listed = [state for state in observed if "list(obj)" in state]  # the class's own descriptor, read too
    assert listed
    assert all(state["obj.count"] == str(len(ast.literal_eval(state["list(obj)"]))) for state in listed)
    assert any(state.get("repr(obj)", "").startswith("'Bag([") for state in observed)
    assert any(state.get("list(obj)", "").count(",") >= 2 for state in observed)
    assert all("str(obj)" not in state for state in observed)  # str is repr here: asserted once
    tests, _ = sequence_tests(record, "bags", 0)
    module = _run_made(tmp_path, "import pytest\nfrom bags import Bag", tests)
    assert "assert obj.largest == " in module and "assert repr(obj) == 'Bag([" in module


COMPLEMENT = textwrap.dedent('''
    class _Complement:
        __slots__ = ("excluded",)

        def __init__(self, excluded):
            self.excluded = excluded

        def __contains__(self, item):
            return item not in self.excluded

        def __and__(self, other):
            if type(other) is _Complement:
                return complement(self.excluded | other.excluded)
            return {x for x in other if x not in self.excluded}

        def add(self, item):
            self.excluded.discard(item)


    def complement(wrapped):
        return _Complement(set(wrapped))
''')


def test_a_private_class_is_searched_through_its_factory_with_operators_and_recorded_objects(tmp_path: Path):
    """``_Complement`` is made by ``complement()``; its ``in`` and ``&`` are steps like its methods,
    written as operators, and an object the suite passed to ``&`` is rebuilt in the test."""
    other = "__equisa_object__('sets:_Complement', {}, {'excluded': {5}})"
    seen = {"complement": [("{1, 2}",)], "_Complement.__and__": [("{2, 3}",), (other,)],
            "_Complement.__contains__": [("1",)]}
    (searched,) = searched_classes(COMPLEMENT, ["_Complement.add"], seen, [])
    assert searched.factory == "complement"
    assert {name for name, _ in searched.methods} == {"__contains__", "__and__", "add"}
    record = _search_sequences(tmp_path, "sets", COMPLEMENT, ["_Complement.add"], seen)
    assert record.factory == "complement" and record.error is None
    assert any(s.method == "__and__" and s.args == (other,) for k in record.kept for s in k.steps)
    tests, _ = sequence_tests(record, "sets", 0)
    module = _run_made(tmp_path, "import pytest\nfrom sets import _Complement, complement", tests)
    assert "obj = complement(" in module and "(obj & " in module and " in obj)" in module
    assert "other = _Complement.__new__(_Complement)" in module
    assert "object.__setattr__(other, 'excluded', {5})" in module
    assert all("from sets import complement" in t.imports for t in tests)
    assert any("from sets import _Complement" in t.imports for t in tests if "other = " in t.code)


TAGS = textwrap.dedent('''
    class Tags:
        def __init__(self):
            self.names = set()

        def add(self, name: str):
            self.names.add(name)

        def pop(self):
            return self.names.pop()

        def __repr__(self):
            return "Tags(%r)" % (self.names,)
''')


def test_what_depends_on_the_order_of_a_set_of_texts_is_not_asserted(tmp_path: Path):
    """The order of a set of strings changes with PYTHONHASHSEED: a test asserting the object's repr
    or the name ``pop`` picked would fail for a user whose seed differs from the sandbox's."""
    record = _search_sequences(tmp_path, "tags", TAGS, ["Tags.add"], {"Tags.add": [("'x'",), ("'y'",)]})
    popped = [s for k in record.kept for s in k.steps if s.method == "pop" and s.raised is None]
    assert popped and not any(s.literal for s in popped)
    states = [dict(k.state) for k in record.kept]
    assert all(state.get("repr(obj)", "'Tags(set())'") == "'Tags(set())'" for state in states)  # empty only
    # Once it holds texts, what a pop leaves depends on which one went: nothing but a length is asserted.
    added = [dict(k.state) for k in record.kept if any(s.method == "add" for s in k.steps)]
    assert added and all(set(state) <= {"len(obj)"} for state in added)
    tests, _ = sequence_tests(record, "tags", 0)
    _run_made(tmp_path, "import pytest\nfrom tags import Tags", tests)


def test_dates_timedeltas_and_decimals_are_values_the_search_draws_and_writes():
    import datetime

    assert is_value_text("[decimal.Decimal('1.50'), datetime.date(2024, 3, 31)]")
    assert is_value_text("{'at': datetime.datetime(2024, 3, 31, 12, 0), 'n': (1, -2.5)}")
    assert not is_value_text("os.system('true')") and not is_value_text("datetime.date(*days)")
    dates = _drawn(strategy_for(None, [datetime.date(2024, 3, 31)], [], []) or "", 40)
    assert all(type(d) is datetime.date for d in dates) and datetime.date(2024, 3, 31) in dates
    assert all(abs((d - datetime.date(2024, 3, 31)).days) <= 366 for d in dates)
    amounts = _drawn(strategy_for(_annotation("Decimal"), [Decimal("59.90")], [], []) or "", 40)
    assert all(isinstance(a, Decimal) and a.as_tuple().exponent >= -2 for a in amounts)
    spans = _drawn(strategy_for(_annotation("datetime.timedelta"), [], [], []) or "", 20)
    assert all(isinstance(s, datetime.timedelta) for s in spans)


def test_crosshair_finds_inputs_for_annotated_functions_in_a_child_process(tmp_path: Path):
    functions = [f for f in searched_functions(INTERVALS, ["merge"], {}, []) if f.typed]
    module = search_driver_module("intervals.py", "intervals", [], 10, 5.0)
    module += crosshair_driver_tests("intervals", functions, 5.0)
    (record,) = read_crosshair_records(_run_driver(tmp_path, "intervals", INTERVALS, module, timeout=600))
    assert record.qualname == "merge" and record.error is None
    inputs = [ast.literal_eval(args[0]) for args in record.inputs]
    assert [] in inputs and any(len(v) >= 2 for v in inputs), inputs  # both sides of `if not intervals`


def test_the_driver_is_the_shipped_search_driver_filled_in_and_stands_alone():
    """``search_driver.py`` with the searched file, ``MAX_PROPERTIES`` and the rebuild helpers written
    in: one module that imports nothing of EQUISA's (the sandbox has none); the helpers alone put at
    the top of a module still compile."""
    from equisa_core.testgen.input_search import MAX_PROPERTIES, REBUILD_HELPERS

    driver = search_driver_module("pkg/intervals.py", "pkg.intervals", [], 10, 5.0)
    compile(driver, "test_drive.py", "exec")
    assert "equisa_core" not in driver
    assert "_TARGET = os.path.abspath('pkg/intervals.py')\n" in driver
    assert f"_MAX_PROPERTIES = {MAX_PROPERTIES}\n" in driver
    assert driver.count("def __equisa_object__(") == 1 and driver.count("from __future__ import") == 1
    assert driver.endswith("\n\nimport pkg.intervals as _target\n")
    compile(REBUILD_HELPERS.lstrip() + "\n\nimport pytest\n", "test_drive.py", "exec")

"""No misuse tests (issue 49): a generated test may assert only an exception its function raises itself."""

from __future__ import annotations

import textwrap

from equisa_core.testgen.assembly import without_misuse
from equisa_core.testgen.carving import CarvedTest
from equisa_core.testgen.raised_on_purpose import raised_in_block, raised_on_purpose

SOURCE = textwrap.dedent('''
    class BadInterval(ValueError):
        pass

    def _check(lo, hi):
        if lo > hi:
            raise ValueError("empty interval")

    def width(lo, hi):
        _check(lo, hi)
        return hi - lo + 1

    def merge(intervals):
        return sorted(intervals)

    def first(values: list[int]) -> int:
        return values[0]

    class Cache:
        def get(self, key):
            if key is None:
                raise KeyError(key)
            return self._load(key)

        def _load(self, key):
            raise LookupError(key)
''')


def test_raised_through_a_helper_counts_and_module_exceptions_always_do():
    assert raised_on_purpose(SOURCE, "width") == {"ValueError", "BadInterval"}
    assert raised_on_purpose(SOURCE, "merge") == {"BadInterval"}


def test_a_method_raises_what_it_and_its_self_calls_raise_and_a_class_all_its_methods_do():
    assert raised_on_purpose(SOURCE, "Cache.get") == {"KeyError", "LookupError", "BadInterval"}
    assert {"KeyError", "LookupError"} <= raised_on_purpose(SOURCE, "Cache")


def carved(name: str, call: str, exception: str | None) -> CarvedTest:
    body = f"    assert {call} == 1\n"
    if exception:
        body = f"    with pytest.raises({exception}):\n        {call}\n"
    return CarvedTest(name=name, target_fqn="intervals." + call.split("(")[0],
                      expects="exception" if exception else "result", code=f"def {name}():\n{body}",
                      source_test="driver", imports=("import pytest",))


def test_a_test_of_an_exception_the_function_does_not_raise_itself_is_left_out_with_a_note():
    tests = [
        carved("test_misuse", "merge('0a  0b a')", "ValueError"),
        carved("test_contract", "width(2, 1)", "ValueError"),
        carved("test_result", "width(1, 1)", None),
        carved("test_annotated", "first([])", "IndexError"),  # an input its annotation allows
    ]
    kept, notes = without_misuse(tests, SOURCE, "intervals")
    assert [t.name for t in kept] == ["test_contract", "test_result", "test_annotated"]
    assert len(notes) == 1 and notes[0].startswith("left out 1")
    assert "merge('0a  0b a') raised ValueError" in notes[0]


FROZEN = textwrap.dedent('''
    class Frozen:
        def __init__(self, items=None):
            object.__setattr__(self, "_items", dict(items or {}))

        def __setattr__(self, name, value):
            raise AttributeError(f"{name} is read-only")

        def __getitem__(self, key):
            return self._items[key]

        def copy(self):
            return Frozen(self._items.keys().copy())

        def put(self, key, value):
            self._check(key)
            self._items[key] = value

        def _check(self, key):
            if not isinstance(key, str):
                raise TypeError(key)


    class Child(Frozen):
        pass
''')


def sequence(name: str, block: str, exception: str, cls: str = "Frozen") -> CarvedTest:
    body = f"    obj = {cls}()\n    obj.put('a', 1)\n    with pytest.raises({exception}):\n        {block}\n"
    return CarvedTest(name=name, target_fqn=f"frozen.{cls}", expects="exception", source_test="input search",
                      code=f"def {name}():\n{body}", imports=("import pytest", f"from frozen import {cls}"))


def test_a_method_sequence_is_judged_by_the_methods_its_block_calls_not_the_whole_class():
    # The class as a whole raises AttributeError on purpose (``__setattr__``); ``copy`` does not.
    assert "AttributeError" in raised_on_purpose(FROZEN, "Frozen")
    tests = [
        sequence("test_copy_misuse", "obj.copy()", "AttributeError"),
        sequence("test_setattr_contract", "obj.size = 3", "AttributeError"),
        sequence("test_put_contract", "obj.put(1, 2)", "TypeError"),  # through ``self._check``
        sequence("test_item_misuse", "obj['b']", "KeyError"),  # ``__getitem__`` does not raise it itself
        sequence("test_inherited_misuse", "obj.copy()", "AttributeError", cls="Child"),
        sequence("test_inherited_contract", "obj.put(1, 2)", "TypeError", cls="Child"),
    ]
    kept, notes = without_misuse(tests, FROZEN, "frozen")
    assert [t.name for t in kept] == ["test_setattr_contract", "test_put_contract", "test_inherited_contract"]
    assert any(n.startswith("left out 2 test(s) that Frozen.copy raises") for n in notes), notes
    assert any("Frozen.__getitem__" in n and "obj['b'] raised KeyError" in n for n in notes), notes


def test_the_members_a_block_calls_are_resolved_through_the_bases_and_operators():
    import ast

    def called(block: str, cls: str = "Child") -> list[str]:
        return raised_in_block(FROZEN, cls, ast.parse(block).body)[1]

    assert called("obj.copy()") == ["Frozen.copy"]
    assert called("obj.x = 1") == ["Frozen.__setattr__"]
    assert called("obj['a']") == ["Frozen.__getitem__"]
    assert called("Child({'a': 1})") == ["Frozen.__init__"]
    assert called("obj.keys()") == []  # not the module's: nothing raised on purpose
    assert raised_in_block(FROZEN, "Frozen", ast.parse("obj.keys()").body)[0] == frozenset()


def test_a_searched_sequence_ending_in_pytest_raises_expects_an_exception_so_it_is_judged():
    from equisa_core.testgen.input_search import KeptSequence, SequenceRecord, Step
    from equisa_core.testgen.search_sequence_tests import sequence_tests

    steps = (Step("put", ("'a'", "1"), "None", True), Step("copy", (), raised="AttributeError",
                                                            raised_module="builtins"))
    record = SequenceRecord("Frozen", False, 10, 3, (KeptSequence((), steps),))
    (test,), _ = sequence_tests(record, "frozen", 0)
    assert test.expects == "exception"
    assert "with pytest.raises(AttributeError):\n        obj.copy()" in test.code
    kept, notes = without_misuse([test], FROZEN, "frozen")
    assert kept == [] and "Frozen.copy raises" in notes[0]

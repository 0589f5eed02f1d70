"""No misuse tests (issue 49): a generated test may assert only an exception its function raises itself."""

from __future__ import annotations

import textwrap

from equisa_core.testgen.assembly import without_misuse
from equisa_core.testgen.carving import CarvedTest
from equisa_core.testgen.raised_on_purpose import raised_on_purpose

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

"""Tests written from the inputs the search kept that hold callables (``callable_inputs``): the
probe cannot record a lambda, so these are not carved from a recorded run but written from what the
search's driver saw (``KeptInput.result``): ``assert valmap(len, {'a': 'xy'}) == {'a': 2}``. A result
that is a function is not asserted by its repr (it holds an address): its docstring when it has one
(``combine_docstrings(google_documented)(functools.wraps(rest_documented)(lambda *args: None))``,
a decorator factory's result applied), else that it is callable."""

from __future__ import annotations

import re
from dataclasses import replace

from equisa_core.testgen.carving import CarvedTest
from equisa_core.testgen.input_search import POSSIBLE_BUG, KeptInput, SearchRecord, bug_like
from equisa_core.testgen.search_sequence_tests import _check, _raising, _Setup
from equisa_core.testgen.value_texts import is_callable_text, literal_value

__all__ = ["callable_input_tests", "holds_callables", "without_callable_inputs"]


def holds_callables(record: SearchRecord, kept: KeptInput) -> bool:
    """Whether ``kept`` is written here: its function's result was applied, or an argument is a callable."""
    return record.applied or any(map(is_callable_text, kept.args))


def _behaviour(kept: KeptInput) -> str:
    """What the test checks, as words for its name."""
    if kept.raised is not None:
        return "raises_" + re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", kept.raised).lower()
    if kept.returned_callable:
        return "returns_a_function"
    ok, value = literal_value(kept.result or "")
    return f"returns_a_{type(value).__name__.lower()}" if ok and value is not None else "returns_none"


def _body(record: SearchRecord, kept: KeptInput, module: str, setup: _Setup) -> list[str] | None:
    """The test's lines (None: nothing to assert, or an argument that cannot be written)."""
    arguments = setup.arguments(kept.args)
    if arguments is None:
        return None
    lines, setup.lines = setup.lines, []
    inner = arguments[:-1] if record.applied else arguments
    call = f"{record.qualname}({', '.join(inner)})" + (f"({arguments[-1]})" if record.applied else "")
    setup.imports.add(f"from {module} import {record.qualname}")
    if kept.raised is not None:
        raising = _raising(kept.raised, kept.raised_module, module)
        if raising is None:
            return None
        setup.imports |= raising[1]
        return [*lines, f"with pytest.raises({raising[0]}):", f"    {call}"]
    if kept.returned_callable:
        if kept.doc is None:
            return [*lines, f"assert callable({call})"]
        return [*lines, f"result = {call}", f"assert result.__doc__ == {kept.doc}"]
    if not kept.literal or kept.result is None:
        return None
    check, approx = _check(call, kept.result)
    setup.imports |= {"import pytest"} if approx else set()
    return [*lines, check]


def callable_input_tests(record: SearchRecord, module: str, round_number: int,
                         taken: set[str]) -> tuple[list[CarvedTest], list[str]]:
    """The tests of ``record``'s kept inputs that hold callables (``holds_callables``; their names
    not in ``taken``, then added to it), and the notes of those that raised what looks like a bug."""
    tests: list[CarvedTest] = []
    notes: list[str] = []
    for kept in record.kept:
        if not holds_callables(record, kept):
            continue
        if bug_like(record, kept):
            notes.append(f"{POSSIBLE_BUG}{record.qualname}({', '.join(kept.args)}) raised {kept.raised}, "
                         "on an input its annotations allow")
            continue
        setup = _Setup(module, (), record.names)
        body = _body(record, kept, module, setup)
        if body is None:
            continue
        stem = f"test_search_{round_number}_{record.qualname.lstrip('_')}"
        name = _free_name(f"{stem}_{_behaviour(kept)}", taken)
        tests.append(CarvedTest(
            name=name,
            target_fqn=f"{module}.{record.qualname}",
            source_test="input search",
            expects="exception" if kept.raised else "result",
            code=f"def {name}():\n" + "".join(f"    {line}\n" for line in body),
            imports=tuple(sorted(setup.imports)),
            definitions=tuple(setup.definitions),
        ))
    return tests, notes


def _free_name(name: str, taken: set[str]) -> str:
    """``name``, numbered when taken; added to ``taken``."""
    unique, number = name, 2
    while unique in taken:
        unique, number = f"{name}_{number}", number + 1
    taken.add(unique)
    return unique


def without_callable_inputs(record: SearchRecord) -> SearchRecord:
    """``record`` without the kept inputs ``callable_input_tests`` writes (the others are carved)."""
    return replace(record, kept=tuple(k for k in record.kept if not holds_callables(record, k)))

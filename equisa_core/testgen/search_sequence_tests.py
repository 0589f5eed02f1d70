"""Tests written from the method sequences the input search kept (``SequenceRecord``): construct (or
call the factory), call each method, assert each literal result and the state the calls left; a call
that raised ends its test in ``pytest.raises``, unless the exception looks like a bug on an input the
annotations allow: that one is listed, not asserted."""

from __future__ import annotations

import ast
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from equisa_core.common.values import build_expression, parse_build
from equisa_core.testgen.callable_inputs import callable_imports, definitions_used
from equisa_core.testgen.carving import CarvedTest
from equisa_core.testgen.input_search import (
    BUG_LIKE,
    OPERATOR_SYNTAX,
    POSSIBLE_BUG,
    STATEMENT_STEPS,
    KeptSequence,
    SequenceRecord,
    Step,
)
from equisa_core.testgen.named_inputs import is_named_text, named_imports
from equisa_core.testgen.value_texts import argument_parts, is_callable_text, is_object_text, literal_value

__all__ = ["sequence_tests"]


def _check(call: str, result: str) -> tuple[str, bool]:
    """An assertion that ``call`` gives ``result`` (a literal), and whether it needs ``pytest``."""
    value = literal_value(result)[1]
    if value is None or isinstance(value, bool):
        return f"assert {call} is {result}", False
    if isinstance(value, float):
        return f"assert {call} == pytest.approx({result})", True
    return f"assert {call} == {result}", False


def _raising(name: str | None, where: str | None, module: str) -> tuple[str, set[str]] | None:
    """The ``pytest.raises`` argument for an exception and its imports; None when it cannot be named."""
    if name is None or not name.isidentifier() or where not in ("builtins", module):
        return None
    return name, {"import pytest", *((f"from {module} import {name}",) if where == module else ())}


class _Setup:
    """A ``values.Emitter`` for sequence tests: classes of the target module imported by name, any
    other through its module; setup lines and fresh local names. ``names``: the module's names the
    search drew values from (``named_inputs``: ``DocstringStyle.GOOGLE`` imports ``DocstringStyle``)."""

    def __init__(self, module: str, makers: Collection[str] = (), names: Collection[str] = ()) -> None:
        self.target = module
        self.makers = makers  # what makes objects of the searched class: another one is written as its call
        self.drawn = names
        self.imports: set[str] = set()
        self.lines: list[str] = []
        self.names = {"obj"}
        self.definitions: list[str] = []  # module-level functions the arguments name

    def module(self, name: str) -> str:
        self.imports.add(f"import {name}")
        return name

    def cls(self, module: str | None, qualname: str) -> str | None:
        if module is None:
            return None
        if module == self.target:
            self.imports.add(f"from {module} import {qualname.split('.')[0]}")
            return qualname
        self.imports.add(f"import {module}")
        return f"{module}.{qualname}"

    def variable(self, hint: str) -> str:
        name, number = hint, 2
        while name in self.names:
            name, number = f"{hint}_{number}", number + 1
        self.names.add(name)
        return name

    def statement(self, line: str) -> None:
        self.lines.append(line)

    def arguments(self, texts: Sequence[str]) -> list[str] | None:
        """Each argument as code (a literal as it is, an object from its build, its setup lines
        emitted, a callable as its source, the functions it names to define; a keyword-only one
        after its name, ``scale=2``), or None when one cannot be written."""
        written = []
        for argument in texts:
            name, text = argument_parts(argument)
            value = self._value(text)
            if value is None:
                return None
            written.append(value if name is None else f"{name}={value}")
        return written

    def _value(self, text: str) -> str | None:
        """One argument's value as code (``arguments``), or None when it cannot be written."""
        if literal_value(text)[0]:
            self.imports |= {f"import {m}" for m in ("datetime", "decimal") if f"{m}." in text}
            return text
        if is_callable_text(text):  # a callable the search offers, written as its source
            self.imports |= callable_imports([text])
            self.definitions += [d for d in definitions_used([text]) if d not in self.definitions]
            return text
        if is_object_text(text):
            return build_expression(parse_build(text), self, "other")
        if is_named_text(text, self.drawn):  # enum members and classes, by the module's names
            self.imports |= {f"from {self.target} import {n}" for n in named_imports([text], self.drawn)}
            return text
        return self._made(text)

    def _made(self, text: str) -> str | None:
        """Another object of the searched class, as the call of one of ``makers`` that made it
        (``Stack(3, strict=True)``) with its arguments written; None for any other text."""
        try:
            call = ast.parse(text, mode="eval").body
        except SyntaxError:
            return None
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
            return None
        if call.func.id not in self.makers:
            return None
        texts = [ast.get_source_segment(text, a) or "" for a in call.args]
        texts += [f"{k.arg}={ast.get_source_segment(text, k.value)}" for k in call.keywords if k.arg]
        if len(texts) != len(call.args) + len(call.keywords):
            return None
        written = self.arguments(texts)
        return None if written is None else f"{call.func.id}({', '.join(written)})"


def _step_text(method: str, arguments: Sequence[str]) -> str:
    """A step as a test writes it: ``obj.add(1)``, or the operator of a special method (``obj[0]``)."""
    syntax = OPERATOR_SYNTAX.get(method)
    if syntax is not None:
        return syntax.format("obj", *arguments)
    return f"obj.{method}({', '.join(arguments)})"


@dataclass
class _Writing:
    """The body of one kept sequence's test as it is written: its lines (setup lines included), how
    many of them assert, and the notes of bug-like exceptions (shared by the record's tests)."""

    record: SequenceRecord
    module: str
    annotated: Collection[str]
    notes: list[str]
    setup: _Setup
    construct: str = ""
    lines: list[str] = field(default_factory=list)
    asserted: int = 0
    raising: bool = False  # it ends in ``pytest.raises``

    def take_setup(self) -> None:
        """Move the setup lines the arguments emitted into the body."""
        self.lines, self.setup.lines = self.lines + self.setup.lines, []

    def check(self, call: str, result: str) -> None:
        """Assert that ``call`` gives the literal ``result``."""
        check, approx = _check(call, result)
        self.lines.append(check)
        self.setup.imports |= {"import pytest"} if approx else set()
        self.asserted += 1

    def raises(self, raising: tuple[str, set[str]], call: str) -> None:
        """Assert that ``call`` raises (``raising``: the exception's name and imports)."""
        self.lines += [f"with pytest.raises({raising[0]}):", f"    {call}"]
        self.setup.imports |= raising[1]
        self.asserted += 1
        self.raising = True

    def constructor_raised(self, kept: KeptSequence) -> None:
        """The constructor raised: assert it, or note it when it looks like a bug."""
        raising = _raising(kept.raised, kept.raised_module, self.module)
        if raising is None:
            return
        if self.record.typed and kept.init and kept.raised in BUG_LIKE:
            self.notes.append(
                f"{POSSIBLE_BUG}{self.construct} raised {kept.raised}, on an input its annotations allow"
            )
            return
        self.raises(raising, self.construct)

    def steps(self, kept: KeptSequence) -> None:
        """Construct, make each call (asserting its literal result; None only in a sequence kept for
        the mutants it tells apart), then assert the state they left
        when every call returned; a call whose arguments cannot be written ends the test before it,
        one that raised ends it."""
        self.lines.append(f"obj = {self.construct}")
        for step in kept.steps:
            arguments = self.setup.arguments(step.args)
            if arguments is None:
                return
            self.take_setup()
            call = _step_text(step.method, arguments)
            if step.raised is not None:
                self.step_raised(step, call)
                return
            # None is asserted only in a sequence kept for telling a mutant apart (it may be what
            # the mutant does not return); elsewhere ``assert obj.put(...) is None`` is noise.
            if step.method in STATEMENT_STEPS:
                self.lines.append(call)
            elif step.literal and step.result is not None and (step.result != "None" or kept.kills):
                self.check(call, step.result)
            else:
                self.lines.append(call)
        for observed, value in kept.state:
            self.check(observed, value)

    def step_raised(self, step: Step, call: str) -> None:
        """A call raised: assert it, or note it when it looks like a bug (a method in ``annotated``
        given arguments)."""
        raising = _raising(step.raised, step.raised_module, self.module)
        if raising is None:
            return
        typed = f"{self.record.qualname}.{step.method}" in self.annotated
        if step.args and typed and step.raised in BUG_LIKE:
            self.notes.append(
                f"{POSSIBLE_BUG}{self.construct}.{step.method}({', '.join(step.args)}) "
                f"raised {step.raised} after {len(self.lines) - 1} calls (a searched sequence)"
            )
            return
        self.raises(raising, call)


def _written(
    record: SequenceRecord, kept: KeptSequence, module: str, annotated: Collection[str], notes: list[str]
) -> _Writing | None:
    """The test body of ``kept``, or None when its constructor's arguments cannot be written."""
    maker = record.factory or record.qualname
    writing = _Writing(record, module, annotated, notes, _Setup(module, {maker}, record.names))
    init = writing.setup.arguments(kept.init)
    if init is None:
        return None
    writing.construct = f"{maker}({', '.join(init)})"
    writing.setup.imports.add(f"from {module} import {maker}")
    writing.take_setup()
    if kept.raised is not None:
        writing.constructor_raised(kept)
    else:
        writing.steps(kept)
    return writing


def _test_name(cls: str, kept: KeptSequence, round_number: int, taken: set[str]) -> str:
    """A test name not in ``taken`` (then added to it): the round, the class and up to three of the
    methods called (``init`` when the constructor raised)."""
    steps = [t.method.strip("_") for t in kept.steps]
    methods = list(dict.fromkeys(steps))[:3] if kept.raised is None else ["init"]
    name = f"test_search_{round_number}_{cls.lstrip('_')}_" + "_then_".join(methods)
    unique, number = name, 2
    while unique in taken:
        unique, number = f"{name}_{number}", number + 1
    taken.add(unique)
    return unique


def sequence_tests(
    record: SequenceRecord,
    module: str,
    round_number: int,
    annotated: Collection[str] = (),
) -> tuple[list[CarvedTest], list[str]]:
    """Tests of ``record``'s kept sequences (construct, or call the factory; call, assert each literal
    result; a call that raised ends the test in ``pytest.raises``), and notes for calls whose
    exception looks like a bug (``BUG_LIKE``, raised by a call with arguments of a method in
    ``annotated``, ``Class.method``, or by the constructor of a class whose ``__init__`` is
    annotated): listed, not asserted. Objects among the arguments are rebuilt from their builds."""
    cls = record.qualname
    tests: list[CarvedTest] = []
    notes: list[str] = []
    names: set[str] = set()
    for kept in record.kept:
        writing = _written(record, kept, module, annotated, notes)
        if writing is None or not writing.asserted:
            continue
        name = _test_name(cls, kept, round_number, names)
        body = "".join(f"    {line}\n" for line in writing.lines)
        tests.append(
            CarvedTest(
                name=name,
                target_fqn=f"{module}.{cls}",
                source_test="input search",
                expects="exception" if writing.raising else "result",
                code=f"def {name}():\n{body}",
                imports=tuple(sorted(writing.setup.imports)),
                definitions=tuple(writing.setup.definitions),
            )
        )
    return tests, notes

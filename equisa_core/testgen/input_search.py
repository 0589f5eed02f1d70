"""Coverage-guided input search (issue 22): Hypothesis draws a function's arguments, coverage.py keeps
the ones that reach new branches.

Carved and boundary tests only move the values the suite already passes; a function over lists of
intervals never sees a list of two. The search builds, per parameter, a Hypothesis strategy (as the
text of an expression, for a driver module that runs in the sandbox):

- from the **annotation** (``int``, ``float``, ``str``, ``bool``, ``None``, ``list[X]``, ``tuple[X, Y]``,
  ``tuple[X, ...]``, ``dict[K, V]``, ``set[X]``, ``Optional[X]``, ``X | None``, their ``typing``
  spellings): containers of varied sizes, nested as the annotation nests them;
- else from the **values seen** in the suite's recorded calls and the docstring's ``>>>`` examples
  (a list of pairs of ints gives lists of pairs of ints of any length up to a few more than seen),
  else from the **default**;
- numbers near the file's constants and the values seen (each one and its neighbours are drawn
  often, any number in their range too), strings from every string any recorded call or docstring
  example of the module passed, the module's string constants, and texts over their characters.

``search_driver_module`` writes the module (``search_driver.py``, the rebuild helpers of
``rebuild_helpers.py`` inlined): one driver test per function, in which Hypothesis
(``derandomize=True``: the same inputs on every run; no database) draws up to ``max_examples``
argument tuples, the values seen going first (``@example``). Each call runs under coverage.py
measuring the target file with branches; an input is kept when it adds an arc no earlier input
reached, or raises an exception type no earlier input of that function raised. The driver
appends one record per function to the probe's output (``--equisa-out``)::

    {"kind": "testgen-search", "qualname": ..., "typed": bool, "examples": n, "arcs": n,
     "kept": [{"args": [repr, ...], "raised": "IndexError" | null}, ...]}

The host turns the kept inputs into driver calls whose recorded calls are carved into tests
(``tasks/testgen/generation.py``). Hypothesis and coverage.py are the suite's own when it has them,
else EQUISA's (``EQUISA_COVERAGE_PATH``, read-only in the sandbox).

Behaviour that looks like a bug is listed, not asserted (``bug_like``): a ``TypeError``,
``IndexError``, ``KeyError``, ``AttributeError``, ``ZeroDivisionError`` or ``UnboundLocalError``
raised on an input that every parameter's annotation allows.

This module holds what the host and the driver exchange: the searched functions and classes, the
driver module's text, the records read back. The strategies come from ``annotation_strategies`` and
``value_strategies`` (the value texts: ``value_texts``), and for enum members and classes from
``named_inputs`` (a record's ``names``: the module's names they are written by, which the tests
import); the members searched from ``searched_members``, the tests of method sequences from
``search_sequence_tests``.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from equisa_core.testgen.callable_inputs import DOCUMENTED
from equisa_core.testgen.named_inputs import is_named_text
from equisa_core.testgen.value_texts import argument_parts, is_drawable_argument, literals

__all__ = [
    "BUG_LIKE",
    "CrosshairRecord",
    "KeptInput",
    "KeptSequence",
    "MAX_PROPERTIES",
    "MAX_STEPS",
    "OPERATOR_SYNTAX",
    "POSSIBLE_BUG",
    "REBUILD_HELPERS",
    "SearchRecord",
    "SearchedClass",
    "STATEMENT_STEPS",
    "SearchedFunction",
    "SequenceRecord",
    "Step",
    "bug_like",
    "drawn_names",
    "crosshair_driver_tests",
    "read_crosshair_records",
    "read_search_records",
    "read_sequence_records",
    "search_driver_module",
]

#: Exceptions that, raised on an input the annotations allow, look like a bug rather than a contract.
BUG_LIKE = frozenset(
    {"TypeError", "IndexError", "KeyError", "AttributeError", "ZeroDivisionError", "UnboundLocalError"}
)
#: How the generator's notes (``AttemptReport.deterministic``) start a possible bug; the summary prints them.
POSSIBLE_BUG = "possible bug, not asserted: "
#: Method calls in one searched sequence at most (after the constructor).
MAX_STEPS = 6
#: Public properties of a searched object read after its sequence at most (the driver's ``_state``).
MAX_PROPERTIES = 16
#: The special methods a sequence calls, each as a test writes it (``{0}`` the object, ``{1}`` the
#: argument); the driver performs the same operation (``_OPERATIONS``), so ``obj & other`` falls back
#: to the other operand as the written test does.
OPERATOR_SYNTAX = {
    "__getitem__": "{0}[{1}]",
    "__contains__": "({1} in {0})",
    "__eq__": "({0} == {1})",
    "__hash__": "(hash({0}) == hash({1}))",  # the hashes compared, never a hash's value (the hash seed)
    "__lt__": "({0} < {1})",
    "__le__": "({0} <= {1})",
    "__gt__": "({0} > {1})",
    "__ge__": "({0} >= {1})",
    "__and__": "({0} & {1})",
    "__or__": "({0} | {1})",
    "__xor__": "({0} ^ {1})",
    "__sub__": "({0} - {1})",
    "__add__": "({0} + {1})",
    "__invert__": "(~{0})",
    "__reversed__": "list(reversed({0}))",
    "__len__": "len({0})",
    "__iter__": "list({0})",
    "__setitem__": "{0}[{1}] = {2}",
    "__delitem__": "del {0}[{1}]",
}
#: The special methods whose step is a statement: written as it is, its result (None) never asserted.
STATEMENT_STEPS = frozenset({"__setitem__", "__delitem__"})


@dataclass(frozen=True)
class SearchedFunction:
    """One function to search: its name in the module, one strategy text per argument passed (a
    keyword-only one as the driver's ``_keyword``: passed by name, written ``name=value``), whether
    every strategy came from an annotation, and argument tuples seen (literal texts)."""

    qualname: str
    strategies: tuple[str, ...]
    typed: bool
    seeds: tuple[tuple[str, ...], ...] = ()
    #: The last strategy draws what the function's result (a decorator) is applied to:
    #: ``combine_docstrings(a, b)(c)``.
    applied: bool = False


@dataclass(frozen=True)
class SearchedClass:
    """One class to search through method sequences: its name, a strategy per ``__init__`` parameter
    passed (or per parameter of ``factory``, the module's public function that returns its objects,
    for a private class), each method it calls with a strategy per parameter, whether ``__init__``'s
    came from annotations."""

    qualname: str
    init: tuple[str, ...]
    methods: tuple[tuple[str, tuple[str, ...]], ...]
    typed: bool
    factory: str | None = None


@dataclass(frozen=True)
class KeptInput:
    """An input that reached new arcs: its arguments (literal texts) and what it raised, if anything."""

    args: tuple[str, ...]
    raised: str | None
    kills: tuple[str, ...] = ()  # the surviving mutants it tells from the original, if kept for that
    #: What the call gave, as the driver saw it (for the inputs holding callables, whose tests are
    #: written from it): the result's text, whether it is a literal, the exception's module, and for a
    #: function returned, its docstring's literal (None: it has none).
    result: str | None = None
    literal: bool = False
    raised_module: str | None = None
    returned_callable: bool = False
    doc: str | None = None


@dataclass(frozen=True)
class SearchRecord:
    """What the search of one function found."""

    qualname: str
    typed: bool
    examples: int
    arcs: int
    kept: tuple[KeptInput, ...]
    error: str | None = None
    mutants: int = 0  # surviving mutants compared with the function on each input
    applied: bool = False  # the last argument is what the function's result was applied to
    #: The module's names the drawn enum members and classes start from (``named_inputs``).
    names: tuple[str, ...] = ()

    @property
    def killed(self) -> int:
        """How many of the surviving mutants a kept input tells from the original."""
        return len({name for kept in self.kept for name in kept.kills})


@dataclass(frozen=True)
class Step:
    """One method call of a kept sequence: the method, its arguments, and its result's repr (a
    literal or not) or what it raised (the sequence ends there)."""

    method: str
    args: tuple[str, ...]
    result: str | None = None
    literal: bool = False
    raised: str | None = None
    raised_module: str | None = None


@dataclass(frozen=True)
class KeptSequence:
    """A constructor call and the method calls after it, kept because they reached new arcs, and the
    object's observable state after them (``len(obj)``, ``obj.attribute``, ``repr(obj)``... -> literal,
    as the driver's ``_state`` reads it)."""

    init: tuple[str, ...]
    steps: tuple[Step, ...]
    raised: str | None = None  # by the constructor
    raised_module: str | None = None
    state: tuple[tuple[str, str], ...] = ()
    kills: tuple[str, ...] = ()  # the surviving mutants it tells from the original, if kept for that


@dataclass(frozen=True)
class SequenceRecord:
    """What the search of one class found."""

    qualname: str
    typed: bool
    examples: int
    arcs: int
    kept: tuple[KeptSequence, ...]
    error: str | None = None
    factory: str | None = None
    mutants: int = 0  # surviving mutants of its methods, swapped in as each sequence was made again
    names: tuple[str, ...] = ()  # the module's names the drawn enum members and classes start from

    @property
    def killed(self) -> int:
        """How many of the surviving mutants a kept sequence tells from the original."""
        return len({name for kept in self.kept for name in kept.kills})


def drawn_names(records: Iterable[SearchRecord]) -> list[str]:
    """The module's names the records' drawn enum members and classes start from, sorted."""
    return sorted({name for record in records for name in record.names})


def bug_like(record: SearchRecord, kept: KeptInput) -> bool:
    """Whether ``kept`` raised an exception that, on an input the annotations allow, looks like a bug."""
    return record.typed and kept.raised is not None and kept.raised.rsplit(".", 1)[-1] in BUG_LIKE


# --- the driver module --------------------------------------------------------------------------


def _shipped_source(module: str) -> str:
    """The source of a module of this package that runs in the sandbox. Found, not imported: the
    driver imports Hypothesis and coverage.py, which the host does not need to."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, f"{module} ships with equisa_core"
    return Path(spec.origin).read_text(encoding="utf-8")


#: What a driver module needs to run the builds of objects (``value_texts.is_object_text``): the
#: markers as functions that import the class and set the recorded state without running
#: ``__init__``, as carved tests rebuild objects (``equisa_core.common.values.build_expression``).
#: The text of ``rebuild_helpers.py``, to put at the top of a module.
REBUILD_HELPERS = _shipped_source("equisa_core.testgen.rebuild_helpers")


def _helpers_code() -> str:
    """``REBUILD_HELPERS`` past its docstring and ``from __future__`` import: code to inline below
    another module's imports."""
    tree = ast.parse(REBUILD_HELPERS)
    preamble = [
        n
        for n in tree.body
        if isinstance(n, ast.ImportFrom)
        and n.module == "__future__"
        or isinstance(n, ast.Expr)
        and isinstance(n.value, ast.Constant)
        and isinstance(n.value.value, str)
    ]
    start = max((n.end_lineno or n.lineno for n in preamble), default=0)
    return "".join(REBUILD_HELPERS.splitlines(keepends=True)[start:]).strip("\n") + "\n"


def _with_line(text: str, start: str, line: str) -> str:
    """``text`` with its one line that starts with ``start`` replaced by ``line``."""
    pattern = re.compile(rf"^{re.escape(start)}.*$", re.MULTILINE)
    assert len(pattern.findall(text)) == 1, f"the driver has one line starting {start!r}"
    return pattern.sub(lambda _: line, text)


def _driver_header(target: str) -> str:
    """The driver's code (``search_driver.py``) with ``target``, ``MAX_PROPERTIES`` and the rebuild
    helpers filled in."""
    text = _shipped_source("equisa_core.testgen.search_driver")
    text = _with_line(text, "from equisa_core.testgen.rebuild_helpers import ", _helpers_code())
    text = _with_line(text, "_MAX_PROPERTIES = ", f"_MAX_PROPERTIES = {MAX_PROPERTIES}")
    return _with_line(text, "_TARGET = ", f"_TARGET = os.path.abspath({target!r})")


def search_driver_module(
    target: str,
    module: str,
    functions: Sequence[SearchedFunction],
    max_examples: int,
    seconds: float,
    classes: Sequence[SearchedClass] = (),
    mutants: Mapping[str, Sequence[tuple[str, str]]] | None = None,
) -> str:
    """The driver module searching ``functions`` and ``classes`` of ``module`` (file ``target``,
    relative to the run's repository copy): one driver test per function or class, each with
    ``max_examples`` inputs (a class: a constructor call and up to ``MAX_STEPS`` method calls)
    and ``seconds`` at most. ``mutants``: qualname -> its surviving mutants (name, mutated
    ``def``), compared with the function on each input (an input that tells one apart is kept); a
    method's (``Class.method``) are swapped into the class while each sequence is made again."""
    definitions = "".join(f"\n\n{definition}" for definition in DOCUMENTED.values())
    parts = [_driver_header(target), definitions, f"\n\nimport {module} as _target\n"]
    for searched in classes:
        methods = ", ".join(
            f"({name!r}, st.tuples({', '.join(strategies)}))" for name, strategies in searched.methods
        )
        parts.append(
            f"\n\ndef test_sequence_{searched.qualname}(pytestconfig):\n"
            f"    _sequence(pytestconfig, {searched.qualname!r}, {searched.typed!r},\n"
            f"              _target.{searched.factory or searched.qualname},\n"
            f"              st.tuples({', '.join(searched.init)}), [{methods}],\n"
            f"              {MAX_STEPS}, {max_examples}, {seconds!r}, {searched.factory!r}"
            f"{_method_mutants_argument(searched.qualname, mutants)})\n"
        )
    for function in functions:
        seeds = ", ".join(f"({', '.join(seed)},)" if seed else "()" for seed in function.seeds)
        compared = _mutants_argument(function.qualname, mutants)
        compared += ", applied=True" if function.applied else ""
        parts.append(
            f"\n\ndef test_search_{function.qualname}(pytestconfig):\n"
            f"    _search(pytestconfig, {function.qualname!r}, {function.typed!r},\n"
            f"            _target.{function.qualname},\n"
            f"            st.tuples({', '.join(function.strategies)}),\n"
            f"            [{seeds}], {max_examples}, {seconds!r}{compared})\n"
        )
    return "".join(parts)


def _method_mutants_argument(qualname: str, mutants: Mapping[str, Sequence[tuple[str, str]]] | None) -> str:
    """The sequence driver call's ``owner`` and ``mutants`` arguments for the class ``qualname``
    (its methods' survivors, keyed ``Class.method``; "" when it has none)."""
    mine = [(name, key.rsplit(".", 1)[-1], text) for key, found in (mutants or {}).items()
            if key.rsplit(".", 1)[0] == qualname and "." in key for name, text in found]
    return f",\n              _target.{qualname}, {mine!r}" if mine and "." not in qualname else ""


def _mutants_argument(qualname: str, mutants: Mapping[str, Sequence[tuple[str, str]]] | None) -> str:
    """The driver call's ``mutants`` argument for ``qualname`` ("" when it has none)."""
    mine = (mutants or {}).get(qualname, ())
    return f", {list(mine)!r}" if mine else ""


@dataclass(frozen=True)
class CrosshairRecord:
    """The inputs CrossHair found for one function (argument texts, positional), or why none."""

    qualname: str
    inputs: tuple[tuple[str, ...], ...]
    error: str | None = None


def crosshair_driver_tests(module: str, functions: Sequence[SearchedFunction], seconds: float) -> str:
    """Driver tests (to append to ``search_driver_module``'s) that run ``crosshair cover`` on each of
    ``functions`` (annotated ones: CrossHair reads the annotations) in a child process of the
    sandboxed test, ``seconds`` per condition, and write its inputs as ``testgen-crosshair`` records."""
    return "".join(
        f"\n\ndef test_crosshair_{f.qualname}(pytestconfig):\n"
        f"    _crosshair(pytestconfig, {module!r}, {f.qualname!r}, {seconds!r})\n"
        for f in functions
    )


def read_crosshair_records(lines: Iterable[str]) -> list[CrosshairRecord]:
    """CrossHair's records among the probe's output lines (inputs that are not values dropped)."""
    return [
        CrosshairRecord(
            qualname=d["qualname"],
            inputs=tuple(tuple(i) for i in d.get("inputs", ()) if literals(i)),
            error=d.get("error"),
        )
        for d in _records(lines, "testgen-crosshair")
    ]


def read_search_records(lines: Iterable[str]) -> list[SearchRecord]:
    """The function search's records among the probe's output lines."""
    records = []
    for data in _records(lines, "testgen-search"):
        names = _names(data)
        kept = tuple(
            _kept_input(k) for k in data.get("kept", ())
            if all(_drawable(text, names) for text in _passed(k))
        )
        records.append(
            SearchRecord(
                qualname=data["qualname"],
                typed=bool(data.get("typed")),
                examples=int(data.get("examples") or 0),
                arcs=int(data.get("arcs") or 0),
                kept=kept,
                error=data.get("error"),
                mutants=int(data.get("mutants") or 0),
                applied=bool(data.get("applied")),
                names=names,
            )
        )
    return records


def _names(data: dict[str, Any]) -> tuple[str, ...]:
    """A record's names of the module drawn (``names``): identifiers only (they become imports)."""
    names = data.get("names")
    if not isinstance(names, list):
        return ()
    return tuple(n for n in names if isinstance(n, str) and n.isidentifier())


def _drawable(text: str, names: Sequence[str]) -> bool:
    """Whether an argument's text is one the search draws: a value, object or callable
    (``is_drawable_argument``), or the module's names it drew (``named_inputs.is_named_text``)."""
    return is_drawable_argument(text) or is_named_text(argument_parts(text)[1], names)


def _passed(data: dict[str, Any]) -> tuple[str, ...]:
    """A kept input's arguments as passed: the keyword-only ones left out (shown as "") dropped."""
    return tuple(text for text in data.get("args", ()) if text)


def _kept_input(data: dict[str, Any]) -> KeptInput:
    """One kept input of a search record."""
    doc = data.get("doc")
    return KeptInput(
        args=_passed(data),
        raised=data.get("raised"),
        kills=tuple(data.get("kills", ())),
        result=data.get("result") if isinstance(data.get("result"), str) else None,
        literal=bool(data.get("literal")),
        raised_module=data.get("raised_module") if isinstance(data.get("raised_module"), str) else None,
        returned_callable=bool(data.get("callable")),
        doc=doc if isinstance(doc, str) and literals([doc]) else None,
    )


def _records(lines: Iterable[str], kind: str) -> list[dict[str, Any]]:
    found = []
    for line in lines:
        if f'"{kind}"' not in line:
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and data.get("kind") == kind:
            found.append(data)
    return found


def read_sequence_records(lines: Iterable[str]) -> list[SequenceRecord]:
    """The class search's records among the probe's output lines."""
    records = []
    for data in _records(lines, "testgen-sequence"):
        kept = tuple(
            KeptSequence(
                init=tuple(text for text in k["init"] if text),
                steps=tuple(
                    Step(
                        method=t["method"],
                        args=_passed(t),
                        result=t.get("result"),
                        literal=bool(t.get("literal")),
                        raised=t.get("raised"),
                        raised_module=t.get("raised_module"),
                    )
                    for t in k.get("steps", ())
                ),
                raised=k.get("raised"),
                raised_module=k.get("raised_module"),
                state=tuple(sorted((k.get("state") or {}).items())),
                kills=tuple(k.get("kills", ())),
            )
            for k in data.get("kept", ())
        )
        records.append(
            SequenceRecord(
                qualname=data["qualname"],
                typed=bool(data.get("typed")),
                examples=int(data.get("examples") or 0),
                arcs=int(data.get("arcs") or 0),
                kept=kept,
                error=data.get("error"),
                factory=_factory_name(data.get("factory")),
                mutants=int(data.get("mutants") or 0),
                names=_names(data),
            )
        )
    return records


def _factory_name(value: object) -> str | None:
    """A record's factory: a plain name (it becomes code), else None."""
    return value if isinstance(value, str) and value.isidentifier() else None

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

``search_driver_module`` writes the module: one driver test per function, in which Hypothesis
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
"""

from __future__ import annotations

import ast
import datetime
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from equisa_core.common.values import OBJECT_MARKER, build_expression, parse_build, walk_build
from equisa_core.errors import ProbeProtocolError
from equisa_core.testgen.carving import CarvedTest

__all__ = [
    "BUG_LIKE",
    "CrosshairRecord",
    "crosshair_driver_tests",
    "read_crosshair_records",
    "KeptInput",
    "KeptSequence",
    "POSSIBLE_BUG",
    "annotated_members",
    "SearchedClass",
    "SearchedFunction",
    "SearchRecord",
    "SequenceRecord",
    "Step",
    "bug_like",
    "is_value_text",
    "is_object_text",
    "is_drawable_text",
    "REBUILD_HELPERS",
    "read_search_records",
    "read_sequence_records",
    "search_driver_module",
    "searched_classes",
    "searched_functions",
    "sequence_tests",
    "strategy_for",
]

#: Exceptions that, raised on an input the annotations allow, look like a bug rather than a contract.
BUG_LIKE = frozenset({"TypeError", "IndexError", "KeyError", "AttributeError", "ZeroDivisionError",
                      "UnboundLocalError"})
#: How the generator's notes (``AttemptReport.deterministic``) start a possible bug; the summary prints them.
POSSIBLE_BUG = "possible bug, not asserted: "
#: Dicts with at most this many string keys seen are drawn key by key (``_dict_strategy``).
MAX_DICT_KEYS = 40
#: Method calls in one searched sequence at most (after the constructor).
MAX_STEPS = 6
#: Public properties of a searched object read after its sequence at most (``_state``).
MAX_PROPERTIES = 16
#: The special methods a sequence calls, each as a test writes it (``{0}`` the object, ``{1}`` the
#: argument); the driver performs the same operation (``_OPERATIONS``), so ``obj & other`` falls back
#: to the other operand as the written test does.
OPERATOR_SYNTAX = {
    "__getitem__": "{0}[{1}]", "__contains__": "({1} in {0})", "__eq__": "({0} == {1})",
    "__lt__": "({0} < {1})", "__le__": "({0} <= {1})", "__gt__": "({0} > {1})", "__ge__": "({0} >= {1})",
    "__and__": "({0} & {1})", "__or__": "({0} | {1})", "__xor__": "({0} ^ {1})", "__sub__": "({0} - {1})",
    "__add__": "({0} + {1})", "__invert__": "(~{0})", "__reversed__": "list(reversed({0}))",
}
#: The longest container drawn beyond the longest one seen.
EXTRA_LENGTH = 4
#: Containers drawn with no observation to size them go up to this length.
DEFAULT_MAX_LENGTH = 6
#: Values seen (per parameter) that seed the strategies' sampled numbers and strings.
MAX_SEEN = 12

_SEQUENCES = {"list", "List", "Sequence", "Iterable", "MutableSequence", "Collection"}
_SETS = {"set", "Set", "frozenset", "FrozenSet", "AbstractSet"}
_MAPPINGS = {"dict", "Dict", "Mapping", "MutableMapping"}


@dataclass(frozen=True)
class SearchedFunction:
    """One function to search: its name in the module, one strategy text per positional parameter,
    whether every strategy came from an annotation, and argument tuples seen (literal texts)."""

    qualname: str
    strategies: tuple[str, ...]
    typed: bool
    seeds: tuple[tuple[str, ...], ...] = ()


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


@dataclass(frozen=True)
class SearchRecord:
    """What the search of one function found."""

    qualname: str
    typed: bool
    examples: int
    arcs: int
    kept: tuple[KeptInput, ...]
    error: str | None = None


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


def bug_like(record: SearchRecord, kept: KeptInput) -> bool:
    """Whether ``kept`` raised an exception that, on an input the annotations allow, looks like a bug."""
    return record.typed and kept.raised is not None and kept.raised.rsplit(".", 1)[-1] in BUG_LIKE


# --- strategies ---------------------------------------------------------------------------------


def _numbers(values: Iterable[object]) -> list[Decimal]:
    found: list[Decimal] = []
    for value in values:
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float | Decimal):
            number = Decimal(str(value))
            if number.is_finite() and number not in found:
                found.append(number)
        elif isinstance(value, list | tuple | set | frozenset):
            found += [n for n in _numbers(value) if n not in found]
        elif isinstance(value, dict):
            found += [n for n in _numbers([*value.keys(), *value.values()]) if n not in found]
    return found


def _strings(values: Iterable[object]) -> list[str]:
    found: list[str] = []
    for value in values:
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, list | tuple | set | frozenset):
            found += _strings(value)
        elif isinstance(value, dict):
            found += _strings([*value.keys(), *value.values()])
    return list(dict.fromkeys(found))


def _int_strategy(numbers: Sequence[Decimal]) -> str:
    ints = sorted({int(n) for n in numbers} | {0, 1, -1})
    near = sorted({i + d for i in ints for d in (-1, 0, 1)})
    low, high = min(near), max(near)
    return f"st.one_of(st.sampled_from({near!r}), st.integers(min_value={low}, max_value={high}))"


def _float_strategy(numbers: Sequence[Decimal]) -> str:
    values = sorted({float(n) for n in numbers} | {0.0, 1.0, -1.0})
    low, high = min(values) - 1.0, max(values) + 1.0
    return (f"st.one_of(st.sampled_from({values!r}), st.floats(min_value={low!r}, max_value={high!r}, "
            "allow_nan=False, allow_infinity=False))")


def _text_strategy(strings: Sequence[str]) -> str:
    samples = list(dict.fromkeys(["", "a", *strings[:MAX_SEEN]]))
    alphabet = "".join(sorted(set("ab 0" + "".join(strings[:MAX_SEEN]))))[:40]
    return f"st.one_of(st.sampled_from({samples!r}), st.text(alphabet={alphabet!r}, max_size=8))"


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Constant) and node.value is None:
        return "None"
    return ""


def _arguments(node: ast.Subscript) -> list[ast.expr]:
    inner = node.slice
    return list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]


def strategy_for(annotation: ast.expr | None, seen: Sequence[object], numbers: Sequence[Decimal],
                 strings: Sequence[str]) -> str | None:
    """A Hypothesis strategy's text for one parameter: from its annotation when there is one it can
    read, else from the values seen; None when neither gives one. ``numbers`` and ``strings`` are
    the file's constants; the values seen join them."""
    numbers = [*numbers, *_numbers(seen[:MAX_SEEN])]
    strings = [*strings, *_strings(seen[:MAX_SEEN])]
    if annotation is not None:
        return _from_annotation(annotation, seen, numbers, strings)
    return _from_values(seen, numbers, strings)


def _from_annotation(node: ast.expr, seen: Sequence[object], numbers: Sequence[Decimal],
                     strings: Sequence[str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a string annotation
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        parts = [_from_annotation(side, seen, numbers, strings) for side in (node.left, node.right)]
        return f"st.one_of({', '.join(parts)})" if all(parts) else None  # type: ignore[arg-type]
    name = _name(node.value if isinstance(node, ast.Subscript) else node)
    if not isinstance(node, ast.Subscript):
        if name == "int":
            return _int_strategy(numbers)
        if name == "float":
            return _float_strategy(numbers)
        if name == "str":
            return _text_strategy(strings)
        if name in ("bool", "None"):
            return "st.booleans()" if name == "bool" else "st.none()"
        kinds = {"datetime": datetime.datetime, "date": datetime.date, "timedelta": datetime.timedelta,
                 "Decimal": Decimal}
        if name in kinds:
            return _value_type_strategy(kinds[name], [v for v in seen if type(v) is kinds[name]])
        if name in _SEQUENCES | {"tuple", "Tuple"}:  # unparametrized: lists of what was seen, or ints
            element = _from_values(_elements(seen), numbers, strings) or _int_strategy(numbers)
            wrap = ".map(tuple)" if name in ("tuple", "Tuple") else ""
            return f"st.lists({element}, max_size={_max_length(seen)}){wrap}"
        return None
    arguments = _arguments(node)
    inner = [_from_annotation(a, _elements(seen), numbers, strings) for a in arguments]
    if name == "Optional" and inner[0]:
        return f"st.one_of(st.none(), {inner[0]})"
    if name == "Union" and all(inner):
        return f"st.one_of({', '.join(inner)})"  # type: ignore[arg-type]
    if name in ("tuple", "Tuple"):
        if len(arguments) == 2 and isinstance(arguments[1], ast.Constant) and arguments[1].value is Ellipsis:
            return f"st.lists({inner[0]}, max_size={_max_length(seen)}).map(tuple)" if inner[0] else None
        return f"st.tuples({', '.join(inner)})" if all(inner) else None  # type: ignore[arg-type]
    if name in _SEQUENCES and inner[0]:
        return f"st.lists({inner[0]}, max_size={_max_length(seen)})"
    if name in _SETS and inner[0]:
        return f"st.sets({inner[0]}, max_size={_max_length(seen)})"
    if name in _MAPPINGS and len(inner) == 2 and all(inner):
        return f"st.dictionaries({inner[0]}, {inner[1]}, max_size={_max_length(seen)})"
    return None


def _elements(seen: Sequence[object]) -> list[object]:
    """The items of the containers seen (a dict's keys): what an element strategy is seeded with."""
    items: list[object] = []
    for value in seen:
        if isinstance(value, list | tuple | set | frozenset):
            items += list(value)
        elif isinstance(value, dict):
            items += list(value)
    return items


def _max_length(seen: Sequence[object]) -> int:
    lengths = [len(v) for v in seen if isinstance(v, list | tuple | set | frozenset | dict | str)]
    return max(lengths) + EXTRA_LENGTH if lengths else DEFAULT_MAX_LENGTH


def _dict_strategy(dicts: Sequence[dict[Any, Any]], numbers: Sequence[Decimal],
                   strings: Sequence[str]) -> str:
    """Dicts like those seen. String keys (a few dozen at most, as options and records have): each
    key seen present or not, its value drawn from the values seen under it or, now and then, from
    those seen under any key (what a function that checks each option is given wrong); other keys:
    dicts of the keys and values seen."""
    items = [x for d in dicts for x in d.values()]
    anything = _from_values(items, numbers, strings) or _int_strategy(numbers)
    keys = list(dict.fromkeys(k for d in dicts for k in d))
    if keys and len(keys) <= MAX_DICT_KEYS and all(type(k) is str for k in keys):
        per_key = {key: [d[key] for d in dicts if key in d] for key in keys}
        optional = ", ".join(f"{key!r}: {_value_strategy(values, anything, numbers, strings)}"
                             for key, values in per_key.items())
        return f"st.fixed_dictionaries({{}}, optional={{{optional}}})"
    key = _from_values(keys, numbers, strings) or _text_strategy(strings)
    return f"st.dictionaries({key}, {anything}, max_size={_max_length(dicts)})"


def _value_strategy(values: Sequence[object], anything: str, numbers: Sequence[Decimal],
                    strings: Sequence[str]) -> str:
    """One dict key's values: those seen under it, others of their kinds, and ``anything``."""
    plain = (str, int, float, bool, type(None))
    exact = list(dict.fromkeys(repr(v) for v in values if isinstance(v, plain)))
    parts = [f"st.sampled_from([{', '.join(exact[:MAX_SEEN])}])"] if exact else []
    parts += [_from_values(values, numbers, strings) or anything, anything]
    return f"st.one_of({', '.join(parts)})"


def _value_type_strategy(kind: type, seen: Sequence[Any]) -> str:
    """Dates, datetimes (naive), timedeltas or decimals around the values seen (a year either side
    of the dates; up to twice the longest timedelta, either sign; decimals with their places)."""
    if kind is datetime.datetime or kind is datetime.date:
        year = datetime.timedelta(days=366)
        start = datetime.datetime(2000, 1, 1)
        low = min(seen, default=start if kind is datetime.datetime else start.date())
        high = max(seen, default=low)
        maker = "st.datetimes" if kind is datetime.datetime else "st.dates"
        drawn = f"{maker}({low - year!r}, {high + year!r})"
        return f"st.one_of(st.sampled_from({sorted(set(seen))!r}), {drawn})" if seen else drawn
    if kind is datetime.timedelta:
        longest = max((abs(v) for v in seen), default=datetime.timedelta(days=1)) * 2
        return f"st.timedeltas({-longest!r}, {longest!r})"
    places = max((-v.as_tuple().exponent for v in seen if v.is_finite()), default=2)
    bound = max((abs(v) for v in seen if v.is_finite()), default=Decimal(100)) * 2 + 1
    return (f"st.decimals(min_value={str(-bound)!r}, max_value={str(bound)!r}, places={max(places, 0)}, "
            "allow_nan=False, allow_infinity=False)")


def _from_values(seen: Sequence[object], numbers: Sequence[Decimal], strings: Sequence[str]) -> str | None:
    """A strategy of the shape of the values seen: each kind seen gives one alternative."""
    if not seen:
        return None
    options: list[str] = []
    kinds = {type(v) for v in seen}
    if bool in kinds:
        options.append("st.booleans()")
    if int in kinds:
        options.append(_int_strategy(numbers))
    if float in kinds:
        options.append(_float_strategy(numbers))
    if str in kinds:
        options.append(_text_strategy(strings))
    if type(None) in kinds:
        options.append("st.none()")
    for value_type in (datetime.datetime, datetime.date, datetime.timedelta, Decimal):
        if value_type in kinds:
            options.append(_value_type_strategy(value_type, [v for v in seen if type(v) is value_type]))
    tuples = [v for v in seen if type(v) is tuple]
    for width in sorted({len(t) for t in tuples})[:3]:
        columns = [_from_values([t[i] for t in tuples if len(t) == width], numbers, strings)
                   for i in range(width)]
        if all(columns):
            options.append(f"st.tuples({', '.join(columns)})")  # type: ignore[arg-type]
    for kind, maker in ((list, "st.lists"), (set, "st.sets"), (frozenset, "st.frozensets")):
        containers = [v for v in seen if type(v) is kind]
        if containers:
            element = _from_values(_elements(containers), numbers, strings) or _int_strategy(numbers)
            options.append(f"{maker}({element}, max_size={_max_length(containers)})")
    dicts = [v for v in seen if type(v) is dict]
    if dicts:
        options.append(_dict_strategy(dicts, numbers, strings))
    if not options:
        return None
    return options[0] if len(options) == 1 else f"st.one_of({', '.join(options)})"


# --- the functions of a module ------------------------------------------------------------------


#: The calls a value's text may make besides literals: the standard library's value types, which
#: ``repr`` writes as such calls (``Decimal`` reprs are written with their module by the driver).
_VALUE_CALLS = {
    "datetime.date": datetime.date, "datetime.datetime": datetime.datetime, "datetime.time": datetime.time,
    "datetime.timedelta": datetime.timedelta, "decimal.Decimal": Decimal,
}


def _literal_value(text: str) -> tuple[bool, object]:
    """(True, the value) of a value's text: a literal, maybe holding ``_VALUE_CALLS`` calls with
    literal arguments; (False, None) for anything else (the text is never executed)."""
    try:
        return True, _value_of(ast.parse(text, mode="eval").body)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, ArithmeticError):
        return False, None


def is_value_text(text: str) -> bool:
    """Whether ``text`` writes a value the search can pass: a literal, maybe holding calls of the
    standard library's value types (``datetime.date(2024, 3, 31)``, ``decimal.Decimal('1.50')``)."""
    return _literal_value(text)[0]


def is_object_text(text: str) -> bool:
    """Whether ``text`` is a build holding an object (``__equisa_object__('m:C', {...})``, from a
    recorded call) that a driver can rebuild with ``REBUILD_HELPERS``: it passes the build grammar
    and names no enum member nor other module attribute (the helpers import only the classes)."""
    if OBJECT_MARKER not in text:
        return False
    try:
        node = parse_build(text)
    except ProbeProtocolError:
        return False
    return not any(isinstance(part, ast.Attribute) for part in walk_build(node))


def is_drawable_text(text: str) -> bool:
    """Whether the search can draw the argument ``text``: a value (``is_value_text``) or a
    rebuildable object (``is_object_text``)."""
    return is_value_text(text) or is_object_text(text)


def _value_of(node: ast.expr) -> object:
    if isinstance(node, ast.Call) and ast.unparse(node.func) in _VALUE_CALLS:
        if any(k.arg is None for k in node.keywords):
            raise ValueError("** in a value's call")
        keywords = {k.arg: _value_of(k.value) for k in node.keywords if k.arg}
        return _VALUE_CALLS[ast.unparse(node.func)](*[_value_of(a) for a in node.args], **keywords)
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        items = [_value_of(e) for e in node.elts]
        if isinstance(node, ast.List):
            return items
        return tuple(items) if isinstance(node, ast.Tuple) else set(items)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError("** in a dict")
        return {_value_of(k): _value_of(v) for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]
    return ast.literal_eval(node)


def _module_strings(tree: ast.Module, seen: Mapping[str, Sequence[Sequence[str]]]) -> list[str]:
    """Strings worth drawing anywhere in the module: those every recorded call and docstring example
    passed (a format string seen by one function is a good input for its neighbours), then the
    module's own short string constants."""
    rows = [*(row for rows in seen.values() for row in rows),
            *(row for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) for row in _doctest_rows(f))]
    passed = _strings([_literal_value(text)[1] for row in rows for text in row])
    constants = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                 and len(n.value) <= 20]
    return list(dict.fromkeys(passed[:MAX_SEEN] + constants[:MAX_SEEN]))


def _doctest_rows(function: ast.FunctionDef) -> list[tuple[str, ...]]:
    """The literal argument tuples of the calls of ``function`` in its docstring's examples (``>>>``
    lines, with their ``...`` continuations)."""
    docstring = ast.get_docstring(function) or ""
    examples, current = [], ""
    for line in docstring.splitlines():
        text = line.strip()
        if text.startswith(">>> "):
            current = text[4:]
            examples.append(current)
        elif text.startswith("... ") and examples:
            examples[-1] += "\n" + text[4:]
    rows = []
    for example in examples:  # each call's text: the shortest span from its name that parses
        for at in (i for i in range(len(example)) if example.startswith(function.name + "(", i)):
            for close in (i for i in range(at, len(example)) if example[i] == ")"):
                try:
                    call = ast.parse(example[at : close + 1], mode="eval").body
                except SyntaxError:
                    continue
                if isinstance(call, ast.Call) and not call.keywords:
                    texts = tuple(ast.unparse(a) for a in call.args)
                    if _literals(texts):
                        rows.append(texts)
                break
    return rows


def _parameters(function: ast.FunctionDef, skip_first: bool, rows: Sequence[Sequence[str]],
                numbers: Sequence[Decimal], strings: Sequence[str]) -> tuple[list[str], bool] | None:
    """A strategy per positional parameter the search passes (``self``/``cls`` skipped when
    ``skip_first``; ``*args``, ``**kwargs`` and defaulted parameters without one are left out), and
    whether every one came from an annotation; None when a required parameter has none, or a
    keyword-only parameter has no default. ``rows``: argument tuples seen, as literal texts."""
    args = function.args
    if args.posonlyargs or any(d is None for d in args.kw_defaults):
        return None
    positional = list(args.args)[1 if skip_first else 0:]
    required = len(positional) - len(args.defaults)
    rows = [r for r in rows if len(r) == len(positional)]
    values = [[v for ok, v in (_literal_value(r[i]) for r in rows) if ok] for i in range(len(positional))]
    strategies: list[str] = []
    typed = True
    for index, parameter in enumerate(positional):
        strategy = strategy_for(parameter.annotation, values[index], numbers, strings)
        built = list(dict.fromkeys(r[index] for r in rows if is_object_text(r[index])))[:MAX_SEEN]
        if built:  # objects the suite passed, each draw a fresh copy (a call may change it)
            drawn = f"st.sampled_from({built!r}).map(_rebuild)"
            strategy = f"st.one_of({drawn}, {strategy})" if strategy and values[index] else drawn
        if strategy is None and parameter.annotation is None:
            default = args.defaults[index - required] if index >= required else None
            ok, value = _literal_value(ast.unparse(default)) if default is not None else (False, None)
            strategy = _from_values([value], numbers, strings) if ok else None
            if strategy is None and default is None:  # nothing to go by: numbers and short strings
                strategy = f"st.one_of({_int_strategy(numbers)}, {_text_strategy(strings)})"
        if strategy is None:
            if index >= required:
                break  # this parameter and the next keep their defaults
            return None
        typed = typed and parameter.annotation is not None
        strategies.append(strategy)
    return strategies, typed and bool(strategies)


def searched_functions(source: str, qualnames: Iterable[str], seen: Mapping[str, Sequence[Sequence[str]]],
                       numbers: Sequence[Decimal]) -> list[SearchedFunction]:
    """The module-level public functions of ``source`` named in ``qualnames`` that the search can call
    (``_parameters``). ``seen``: qualname -> argument tuples recorded from the suite (literal texts,
    positional)."""
    wanted = set(qualnames)
    tree = ast.parse(source)
    strings = _module_strings(tree, seen)
    found = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or node.name not in wanted or node.name.startswith("_"):
            continue
        rows = [*_doctest_rows(node), *(tuple(r) for r in seen.get(node.name, ()))]
        made = _parameters(node, False, rows, numbers, strings)
        if made is None:
            continue
        strategies, typed = made
        width = len(strategies)
        seeds = tuple(r[:width] for r in rows if len(r) >= width and _literals(r[:width]))
        found.append(SearchedFunction(node.name, tuple(strategies), typed,
                                      tuple(dict.fromkeys(seeds))[:MAX_SEEN]))
    return found


def _class_methods(classes: Mapping[str, ast.ClassDef], name: str) -> dict[str, tuple[str, ast.FunctionDef]]:
    """Method name -> (the class defining it, its definition): the plain methods of class ``name``,
    its bases' in this module included (its own win)."""
    node = classes[name]
    methods: dict[str, tuple[str, ast.FunctionDef]] = {}
    for base in node.bases:
        if isinstance(base, ast.Name) and base.id in classes and base.id != name:
            methods.update(_class_methods(classes, base.id))
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and not item.decorator_list:
            methods[item.name] = (name, item)
    return methods


def _seen_for(seen: Mapping[str, Sequence[Sequence[str]]], name: str, owner: str,
              method: str) -> list[Sequence[str]]:
    """The argument tuples recorded for ``method`` on class ``name`` or on the class defining it."""
    return [*seen.get(f"{name}.{method}", ()), *(seen.get(f"{owner}.{method}", ()) if owner != name else ())]


def annotated_members(source: str) -> frozenset[str]:
    """The qualnames (``f``, ``Cls.method``: inherited methods under each subclass too) of the
    module-level functions and plain methods whose parameters, ``self``/``cls`` aside, are all
    annotated (at least one): where an input "the types allow" has a meaning (``bug_like``)."""
    tree = ast.parse(source)

    def annotated(function: ast.FunctionDef, skip_first: bool) -> bool:
        args = function.args
        parameters = [*args.posonlyargs, *args.args][1 if skip_first else 0:] + args.kwonlyargs
        return bool(parameters) and all(a.annotation is not None for a in parameters)

    found = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and annotated(n, False)}
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    for name in classes:
        methods = _class_methods(classes, name).items()
        found |= {f"{name}.{m}" for m, (_, node) in methods if annotated(node, True)}
    return frozenset(found)


def searched_classes(source: str, qualnames: Iterable[str], seen: Mapping[str, Sequence[Sequence[str]]],
                     numbers: Sequence[Decimal]) -> list[SearchedClass]:
    """The module-level classes of ``source`` with a method in ``qualnames`` that the search can build
    (a public class: its ``__init__``'s parameters, or none; a private one, or one whose ``__init__``
    gets no strategies: a public function returning it, ``_factories``) and drive: each public plain
    method and each special method of ``OPERATOR_SYNTAX`` whose parameters get strategies
    (``_parameters``; ``seen`` keyed ``Class.method``, ``self`` left out)."""
    wanted = set(qualnames)
    tree = ast.parse(source)
    strings = _module_strings(tree, seen)
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    factories = _factories(tree, set(classes))
    found = []
    for name in classes:
        if not any(q.startswith(name + ".") for q in wanted):
            continue
        methods = _class_methods(classes, name)
        owner, init = methods.get("__init__", (name, None))
        made, factory = None, None
        if not name.startswith("_"):
            recorded = _seen_for(seen, name, owner, "__init__")
            made = _parameters(init, True, recorded, numbers, strings) if init else ([], True)
        for function in factories.get(name, []) if made is None else []:
            rows = [*_doctest_rows(function), *(tuple(r) for r in seen.get(function.name, ()))]
            made, factory = _parameters(function, False, rows, numbers, strings), function.name
            if made is not None:
                break
        if made is None:
            continue
        calls = []
        for method_name, (owner, method) in methods.items():
            if method_name.startswith("_") and method_name not in OPERATOR_SYNTAX:
                continue
            recorded = _seen_for(seen, name, owner, method_name)
            parameters = _parameters(method, True, recorded, numbers, strings)
            if parameters is not None:
                calls.append((method_name, tuple(parameters[0])))
        if calls:
            found.append(SearchedClass(name, tuple(made[0]), tuple(calls), made[1], factory))
    return found


def _factories(tree: ast.Module, classes: set[str]) -> dict[str, list[ast.FunctionDef]]:
    """Class name -> the module's public functions with a ``return Class(...)``: how a private class's
    objects are made (``complement(wrapped)`` returns a ``_ComplementSet``)."""
    found: dict[str, list[ast.FunctionDef]] = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or node.name.startswith("_"):
            continue
        made = {n.value.func.id for n in ast.walk(node) if isinstance(n, ast.Return)
                and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Name)
                and n.value.func.id in classes}
        for name in sorted(made):
            found.setdefault(name, []).append(node)
    return found


# --- the driver module --------------------------------------------------------------------------

#: What a driver module needs to run the builds of objects (``is_object_text``): the markers as
#: functions that import the class and set the recorded state without running ``__init__``, as
#: carved tests rebuild objects (``equisa_core.common.values.build_expression``).
REBUILD_HELPERS = '''

import datetime
import decimal
import fractions
import importlib as _importlib
import pathlib
import uuid


def _named_class(type_name):
    module, _, qualname = type_name.partition(":")
    found = _importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def __equisa_class__(type_name):
    return _named_class(type_name)


def __equisa_object__(type_name, attributes, slots=None):
    cls = _named_class(type_name)
    obj = cls.__new__(cls)
    if attributes:
        vars(obj).update(attributes)
    for name, value in (slots or {}).items():
        object.__setattr__(obj, name, value)
    return obj


_BUILD_NAMES = {"__builtins__": {"float": float, "set": set, "frozenset": frozenset},
                "__equisa_object__": __equisa_object__, "__equisa_class__": __equisa_class__,
                "datetime": datetime, "decimal": decimal, "fractions": fractions, "pathlib": pathlib,
                "uuid": uuid}
'''

_DRIVER_HEADER = '''"""EQUISA's input search (a driver: run once in the sandbox, never kept)."""
import ast
import json
import os
import sys
import time

try:
    import coverage
    import hypothesis
except ImportError:  # the suite has none: EQUISA's own (read-only in the sandbox)
    sys.path.append(os.environ.get("EQUISA_COVERAGE_PATH", ""))
    import coverage
    import hypothesis
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

import datetime  # noqa: F401  (the strategies' bounds are datetime values)
import decimal
import itertools

_MAX_PROPERTIES = {max_properties}
_TARGET = os.path.abspath({target!r})
_BUILT = {{}}  # id -> (object, the build it was made from), the object kept alive so the id stays its


def _rebuild(text):
    """A fresh object from a recorded build (checked against the build grammar by the host)."""
    value = eval(text, _BUILD_NAMES)
    _BUILT[id(value)] = (value, text)
    return value


def _source(value):
    """A value's text: the build it was rebuilt from, else its repr, with ``decimal.Decimal`` for the
    decimals inside."""
    built = _BUILT.get(id(value))
    if built is not None and built[0] is value:
        return built[1]
    if isinstance(value, decimal.Decimal):
        return "decimal.Decimal(%r)" % str(value)
    if type(value) in (list, tuple, set, frozenset) and any(isinstance(v, decimal.Decimal) for v in value):
        items = ", ".join(_source(v) for v in value)
        shapes = {{list: "[%s]", tuple: "(%s,)", set: "{{%s}}", frozenset: "frozenset({{%s}})"}}
        return shapes[type(value)] % items
    if type(value) is dict and any(isinstance(v, decimal.Decimal) for v in value.values()):
        return "{{%s}}" % ", ".join("%s: %s" % (_source(k), _source(v)) for k, v in value.items())
    return repr(value)
_COV = coverage.Coverage(branch=True, include=[_TARGET], data_file=None, config_file=False)


def _search(pytestconfig, qualname, typed, function, strategy, seeds, max_examples, seconds):
    started, arcs, kept, count, exceptions = time.monotonic(), set(), [], [0], set()

    def attempt(args):
        if time.monotonic() - started > seconds:
            return
        count[0] += 1
        shown = [_source(a) for a in args]
        raised = None
        _COV.start()
        try:
            function(*args)
        except Exception as error:
            raised = type(error).__name__
        finally:
            _COV.stop()
        reached = set(_COV.get_data().arcs(_TARGET) or ())
        if reached - arcs or (raised is not None and raised not in exceptions):
            arcs.update(reached)
            exceptions.add(raised)
            kept.append({{"args": shown, "raised": raised}})

    run = given(strategy)(attempt)
    for seed in reversed(seeds):
        run = example(seed)(run)
    run = settings(max_examples=max_examples, database=None, derandomize=True, deadline=None,
                   phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))(run)
    record = {{"kind": "testgen-search", "qualname": qualname, "typed": typed, "kept": kept}}
    try:
        run()
    except Exception as error:  # Hypothesis itself (a strategy it cannot draw from)
        record["error"] = "%s: %s" % (type(error).__name__, str(error)[:300])
    record.update(examples=count[0], arcs=len(arcs))
    _write(pytestconfig, record)


def _write(pytestconfig, record):
    out = pytestconfig.getoption("--equisa-out", default=None)
    if out:
        with open(out, "a", encoding="utf-8") as stream:
            stream.write(json.dumps(record) + "\\n")


def _shown(value):
    """(text, whether it is a literal) of a result."""
    text = _source(value)
    try:
        ast.literal_eval(text)
    except Exception:
        return text[:200], False
    return text, True


def _state(obj):
    """What a test can observe of an object after its calls, each as a literal (name -> repr):
    ``len(obj)``, ``list(obj)`` (20 items at most), ``repr(obj)`` and ``str(obj)`` when its class
    writes them, its public attributes and the values of its classes' public properties (any
    descriptor that is not a method: ``property``, ``cached_property``, a class's own)."""
    state, cls = {{}}, type(obj)

    def observe(key, read):
        try:
            shown, literal = _shown(read())
        except Exception:
            return
        if literal and len(shown) <= 80 and " at 0x" not in shown:
            state[key] = shown

    observe("len(obj)", lambda: len(obj))
    if getattr(cls, "__iter__", None) is not None:
        observe("list(obj)", lambda: _all_items(obj))
    if cls.__repr__ is not object.__repr__:
        observe("repr(obj)", lambda: repr(obj))
    if cls.__str__ is not object.__str__ and cls.__str__ is not cls.__repr__:
        observe("str(obj)", lambda: str(obj))
    for name, value in sorted(getattr(obj, "__dict__", {{}}).items())[:8]:
        if not name.startswith("_"):
            observe("obj." + name, lambda value=value: value)
    properties, named = [], set()
    for klass in cls.__mro__[:-1]:  # the first class naming a member wins, as attribute lookup does
        for name, member in vars(klass).items():
            if name.startswith("_") or name in named:
                continue
            named.add(name)
            if isinstance(member, (staticmethod, classmethod)) or callable(member):
                continue
            if hasattr(type(member), "__get__"):
                properties.append(name)
    for name in properties[:_MAX_PROPERTIES]:
        observe("obj." + name, lambda name=name: getattr(obj, name))
    return state


def _hash_ordered(obj, depth=0):
    """Whether ``obj`` holds (itself, or two levels down) a set of anything but numbers: its order,
    and so its repr, its items' order, what it pops and what is left after, change with
    ``PYTHONHASHSEED`` (pinned in the sandbox, not for the user running the tests)."""
    if isinstance(obj, (set, frozenset)):
        return any(not isinstance(item, (int, float, type(None))) for item in obj)
    if depth >= 2:
        return False
    if isinstance(obj, (list, tuple)):
        values = list(obj[:50])
    elif isinstance(obj, dict):
        values = list(obj.values())[:50]
    else:
        values = list(getattr(obj, "__dict__", {{}}).values())[:50]
        for klass in type(obj).__mro__:
            names = vars(klass).get("__slots__", ())
            values += [getattr(obj, n, None) for n in ([names] if isinstance(names, str) else names)]
    return any(_hash_ordered(value, depth + 1) for value in values)


def _all_items(obj):
    items = list(itertools.islice(iter(obj), 21))
    if len(items) > 20:
        raise ValueError("too many items to assert")
    return items


def _crosshair(pytestconfig, module, qualname, seconds):
    """``crosshair cover`` on one function, in a child process: its inputs, one per path it covered."""
    import subprocess

    record = {{"kind": "testgen-crosshair", "qualname": qualname, "inputs": []}}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    try:
        done = subprocess.run(
            [sys.executable, "-m", "crosshair", "cover", "%s.%s" % (module, qualname),
             "--example_output_format", "arg_dictionary", "--per_condition_timeout", str(seconds)],
            capture_output=True, text=True, timeout=4 * seconds + 60, env=env)
    except subprocess.TimeoutExpired:
        record["error"] = "crosshair cover did not end in %gs" % (4 * seconds + 60)
        return _write(pytestconfig, record)
    for line in done.stdout.splitlines():
        try:  # CrossHair writes shared values with ``:=`` (``[v1:=(0, 0), v1]``): evaluated, in the sandbox
            arguments = eval(line.strip(), {{"__builtins__": {{}}}}, {{}})
        except Exception:
            continue
        if isinstance(arguments, dict):
            record["inputs"].append([_source(v) for v in arguments.values()])
    if done.returncode not in (0, 1) and not record["inputs"]:
        record["error"] = "crosshair cover exited %s: %s" % (done.returncode, done.stderr.strip()[-300:])
    _write(pytestconfig, record)


_OPERATIONS = {{
    "__getitem__": lambda o, a: o[a], "__contains__": lambda o, a: a in o, "__eq__": lambda o, a: o == a,
    "__lt__": lambda o, a: o < a, "__le__": lambda o, a: o <= a, "__gt__": lambda o, a: o > a,
    "__ge__": lambda o, a: o >= a, "__and__": lambda o, a: o & a, "__or__": lambda o, a: o | a,
    "__xor__": lambda o, a: o ^ a, "__sub__": lambda o, a: o - a, "__add__": lambda o, a: o + a,
    "__invert__": lambda o: ~o, "__reversed__": lambda o: list(reversed(o)),
}}


def _step(obj, name, args):
    operation = _OPERATIONS.get(name)
    return operation(obj, *args) if operation is not None else getattr(obj, name)(*args)


def _sequence(pytestconfig, qualname, typed, cls, init, methods, max_steps, max_examples, seconds,
              factory=None):
    started, arcs, kept, count, outcomes = time.monotonic(), set(), [], [0], set()
    steps = st.lists(st.one_of([st.tuples(st.just(name), strategy) for name, strategy in methods]),
                     min_size=1, max_size=max_steps)

    def attempt(case):
        if time.monotonic() - started > seconds:
            return
        count[0] += 1
        init_args, calls = case
        made = {{"init": [_source(a) for a in init_args], "steps": [], "raised": None}}
        unordered = False  # a step ran on an object holding a set of texts: what follows is not asserted
        _COV.start()
        try:
            obj = cls(*init_args)
            for name, args in calls:
                step = {{"method": name, "args": [_source(a) for a in args]}}
                made["steps"].append(step)
                try:
                    unordered = unordered or _hash_ordered(obj)
                    step["result"], step["literal"] = _shown(_step(obj, name, args))
                    step["literal"] = step["literal"] and not unordered
                except Exception as error:
                    step["raised"], step["raised_module"] = type(error).__name__, type(error).__module__
                    break
            state = _state(obj)
            if unordered or _hash_ordered(obj):  # what the calls left may hang on which item came first
                state = {{k: v for k, v in state.items() if k == "len(obj)"}}
            made["state"] = state
        except Exception as error:
            made["raised"], made["raised_module"] = type(error).__name__, type(error).__module__
        finally:
            _COV.stop()
        reached = set(_COV.get_data().arcs(_TARGET) or ())
        met = {{(step["method"], step.get("raised")) for step in made["steps"]}}
        if reached - arcs or met - outcomes:  # new arcs, or a method that returned or raised anew
            arcs.update(reached)
            outcomes.update(met)
            kept.append(made)

    run = given(st.tuples(init, steps))(attempt)
    run = settings(max_examples=max_examples, database=None, derandomize=True, deadline=None,
                   phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))(run)
    record = {{"kind": "testgen-sequence", "qualname": qualname, "typed": typed, "kept": kept,
              "factory": factory}}
    try:
        run()
    except Exception as error:
        record["error"] = "%s: %s" % (type(error).__name__, str(error)[:300])
    record.update(examples=count[0], arcs=len(arcs))
    _write(pytestconfig, record)
'''


def search_driver_module(target: str, module: str, functions: Sequence[SearchedFunction], max_examples: int,
                         seconds: float, classes: Sequence[SearchedClass] = ()) -> str:
    """The driver module searching ``functions`` and ``classes`` of ``module`` (file ``target``,
    relative to the run's repository copy): one driver test per function or class, each with
    ``max_examples`` inputs (a class: a constructor call and up to ``MAX_STEPS`` method calls)
    and ``seconds`` at most."""
    header = _DRIVER_HEADER.format(target=target, max_properties=MAX_PROPERTIES) + REBUILD_HELPERS
    parts = [header, f"import {module} as _target\n"]
    for searched in classes:
        methods = ", ".join(f"({name!r}, st.tuples({', '.join(strategies)}))"
                            for name, strategies in searched.methods)
        parts.append(
            f"\n\ndef test_sequence_{searched.qualname}(pytestconfig):\n"
            f"    _sequence(pytestconfig, {searched.qualname!r}, {searched.typed!r},\n"
            f"              _target.{searched.factory or searched.qualname},\n"
            f"              st.tuples({', '.join(searched.init)}), [{methods}],\n"
            f"              {MAX_STEPS}, {max_examples}, {seconds!r}, {searched.factory!r})\n"
        )
    for function in functions:
        seeds = ", ".join(f"({', '.join(seed)},)" for seed in function.seeds)
        parts.append(
            f"\n\ndef test_search_{function.qualname}(pytestconfig):\n"
            f"    _search(pytestconfig, {function.qualname!r}, {function.typed!r},\n"
            f"            _target.{function.qualname},\n"
            f"            st.tuples({', '.join(function.strategies)}),\n"
            f"            [{seeds}], {max_examples}, {seconds!r})\n"
        )
    return "".join(parts)


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
        for f in functions)


def read_crosshair_records(lines: Iterable[str]) -> list[CrosshairRecord]:
    """CrossHair's records among the probe's output lines (inputs that are not values dropped)."""
    return [CrosshairRecord(qualname=d["qualname"],
                            inputs=tuple(tuple(i) for i in d.get("inputs", ()) if _literals(i)),
                            error=d.get("error")) for d in _records(lines, "testgen-crosshair")]


def read_search_records(lines: Iterable[str]) -> list[SearchRecord]:
    """The function search's records among the probe's output lines."""
    records = []
    for data in _records(lines, "testgen-search"):
        kept = tuple(KeptInput(tuple(k["args"]), k.get("raised")) for k in data.get("kept", ())
                     if all(map(is_drawable_text, k["args"])))
        records.append(SearchRecord(qualname=data["qualname"], typed=bool(data.get("typed")),
                                    examples=int(data.get("examples") or 0), arcs=int(data.get("arcs") or 0),
                                    kept=kept, error=data.get("error")))
    return records


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
                init=tuple(k["init"]),
                steps=tuple(Step(method=t["method"], args=tuple(t["args"]), result=t.get("result"),
                                 literal=bool(t.get("literal")), raised=t.get("raised"),
                                 raised_module=t.get("raised_module")) for t in k.get("steps", ())),
                raised=k.get("raised"), raised_module=k.get("raised_module"),
                state=tuple(sorted((k.get("state") or {}).items())))
            for k in data.get("kept", ()))
        records.append(SequenceRecord(qualname=data["qualname"], typed=bool(data.get("typed")),
                                      examples=int(data.get("examples") or 0),
                                      arcs=int(data.get("arcs") or 0), kept=kept, error=data.get("error"),
                                      factory=_factory_name(data.get("factory"))))
    return records


def _factory_name(value: object) -> str | None:
    """A record's factory: a plain name (it becomes code), else None."""
    return value if isinstance(value, str) and value.isidentifier() else None


def _literals(texts: Sequence[str]) -> bool:
    return all(_literal_value(t)[0] for t in texts)


def _check(call: str, result: str) -> tuple[str, bool]:
    """An assertion that ``call`` gives ``result`` (a literal), and whether it needs ``pytest``."""
    value = _literal_value(result)[1]
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
    other through its module; setup lines and fresh local names."""

    def __init__(self, module: str) -> None:
        self.target = module
        self.imports: set[str] = set()
        self.lines: list[str] = []
        self.names = {"obj"}

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
        emitted), or None when one cannot be written."""
        written = []
        for text in texts:
            if _literal_value(text)[0]:
                self.imports |= {f"import {m}" for m in ("datetime", "decimal") if f"{m}." in text}
                written.append(text)
            elif is_object_text(text):
                expression = build_expression(parse_build(text), self, "other")
                if expression is None:
                    return None
                written.append(expression)
            else:
                return None
        return written


def _step_text(method: str, arguments: Sequence[str]) -> str:
    """A step as a test writes it: ``obj.add(1)``, or the operator of a special method (``obj[0]``)."""
    syntax = OPERATOR_SYNTAX.get(method)
    if syntax is not None:
        return syntax.format("obj", *arguments)
    return f"obj.{method}({', '.join(arguments)})"


def sequence_tests(record: SequenceRecord, module: str, round_number: int, annotated: Collection[str] = (),
                   ) -> tuple[list[CarvedTest], list[str]]:
    """Tests of ``record``'s kept sequences (construct, or call the factory; call, assert each literal
    result; a call that raised ends the test in ``pytest.raises``), and notes for calls whose
    exception looks like a bug (``BUG_LIKE``, raised by a call with arguments of a method in
    ``annotated``, ``Class.method``, or by the constructor of a class whose ``__init__`` is
    annotated): listed, not asserted. Objects among the arguments are rebuilt from their builds."""
    cls = record.qualname
    maker = record.factory or cls
    tests: list[CarvedTest] = []
    notes: list[str] = []
    names: set[str] = set()
    for kept in record.kept:
        setup = _Setup(module)
        init = setup.arguments(kept.init)
        if init is None:
            continue
        construct = f"{maker}({', '.join(init)})"
        setup.imports.add(f"from {module} import {maker}")
        lines, setup.lines = setup.lines, []
        if kept.raised is not None:
            raising = _raising(kept.raised, kept.raised_module, module)
            if raising is None:
                continue
            if record.typed and kept.init and kept.raised in BUG_LIKE:
                notes.append(f"{POSSIBLE_BUG}{construct} raised {kept.raised}, on an input its annotations "
                             "allow")
                continue
            lines, asserted = [*lines, f"with pytest.raises({raising[0]}):", f"    {construct}"], 1
            setup.imports |= raising[1]
        else:
            lines, asserted = [*lines, f"obj = {construct}"], 0
            for step in kept.steps:
                arguments = setup.arguments(step.args)
                if arguments is None:
                    break
                lines, setup.lines = lines + setup.lines, []
                call = _step_text(step.method, arguments)
                if step.raised is not None:
                    raising = _raising(step.raised, step.raised_module, module)
                    typed = f"{cls}.{step.method}" in annotated
                    if raising is not None and step.args and typed and step.raised in BUG_LIKE:
                        notes.append(f"{POSSIBLE_BUG}{construct}.{step.method}({', '.join(step.args)}) "
                                     f"raised {step.raised} after {len(lines) - 1} calls (a searched "
                                     "sequence)")
                    elif raising is not None:
                        lines += [f"with pytest.raises({raising[0]}):", f"    {call}"]
                        setup.imports |= raising[1]
                        asserted += 1
                    break
                if step.literal and step.result not in (None, "None"):
                    check, approx = _check(call, step.result)
                    lines.append(check)
                    setup.imports |= {"import pytest"} if approx else set()
                    asserted += 1
                else:
                    lines.append(call)
            else:  # every call returned: the state they left
                for observed, value in kept.state:
                    check, approx = _check(observed, value)
                    lines.append(check)
                    setup.imports |= {"import pytest"} if approx else set()
                    asserted += 1
        if not asserted:
            continue
        steps = [t.method.strip("_") for t in kept.steps]
        methods = list(dict.fromkeys(steps))[:3] if kept.raised is None else ["init"]
        name = f"test_search_{round_number}_{cls.lstrip('_')}_" + "_then_".join(methods)
        unique, number = name, 2
        while unique in names:
            unique, number = f"{name}_{number}", number + 1
        names.add(unique)
        body = "".join(f"    {line}\n" for line in lines)
        tests.append(CarvedTest(name=unique, target_fqn=f"{module}.{cls}", source_test="input search",
                                expects="exception" if kept.raised else "result",
                                code=f"def {unique}():\n{body}", imports=tuple(sorted(setup.imports))))
    return tests, notes

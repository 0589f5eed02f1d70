"""The grammar of builds (written out in ``equisa_core.common.values``): checking a build's text
without evaluating it (``parse_build``), and reading the parts of a checked tree (``object_build``,
``class_build``, ``walk_build``, ``dotted_name``, ``dict_keys``, ``is_literal``). Pure.

The whitelisted calls are in ``_CALLS``, with what each accepts and the constructor that makes its
value (``constructor_of``).
"""

from __future__ import annotations

import ast
import datetime
import decimal
import fractions
import pathlib
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from equisa_core.common.decoded_values import ClassValue
from equisa_core.errors import ProbeProtocolError

__all__ = [
    "BUILTIN_CALLS",
    "CLASS_MARKER",
    "FLOAT_SPECIALS",
    "MAX_BUILD_NESTING",
    "MAX_BUILD_NODES",
    "MAX_BUILD_TEXT",
    "OBJECT_MARKER",
    "STDLIB_CONSTANTS",
    "ObjectBuild",
    "class_build",
    "constructor_of",
    "dict_keys",
    "dotted_name",
    "is_literal",
    "object_build",
    "parse_build",
    "walk_build",
]

#: The name of the marker call that describes a plain object.
OBJECT_MARKER = "__equisa_object__"
#: The name of the marker call that names a class (a value such as ``int`` in ``[(1, int)]``).
CLASS_MARKER = "__equisa_class__"
MAX_BUILD_TEXT = 20_000
MAX_BUILD_NODES = 5_000
MAX_BUILD_NESTING = 8
#: Syntax depth at which validation stops (well above what the nesting limit allows).
_MAX_SYNTAX_DEPTH = 40

_TYPE_NAME = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\Z")
FLOAT_SPECIALS = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}
_LITERAL_TYPES = (type(None), bool, int, float, complex, str, bytes)


@dataclass(frozen=True)
class ObjectBuild:
    """The parts of an object marker: ``module``, ``qualname``, dict attributes and slot values."""

    module: str
    qualname: str
    attributes: dict[str, ast.expr]
    slots: dict[str, ast.expr]

    @property
    def type_name(self) -> str:
        return f"{self.module}:{self.qualname}"


@dataclass(frozen=True)
class _Parameter:
    name: str
    kind: str  # int, str, int_or_str, decimal, tz, timedelta, float_special, set, type, attributes
    positional: bool = True


@dataclass(frozen=True)
class _Spec:
    parameters: tuple[_Parameter, ...]
    required: int  # the first ``required`` parameters must be given
    make: Callable[..., Any]


def _ints(*names: str) -> tuple[_Parameter, ...]:
    return tuple(_Parameter(name, "int") for name in names)


_KIND_WORDS = {
    "int": "an int literal",
    "str": "a str literal",
    "decimal": "a str (not NaN) or int literal",
    "float_special": "'nan', 'inf' or '-inf'",
    "tz": "None, datetime.timezone.utc or a datetime.timezone(...) call",
    "timedelta": "a datetime.timedelta(...) call",
    "set": "a set display",
    "type": "a 'module:Qualname' string",
    "attributes": "a dict display with str keys",
}
_TZ = (_Parameter("tzinfo", "tz"), _Parameter("fold", "int", positional=False))

#: The calls a build may contain, by dotted name: what they accept and how they are made.
_CALLS: dict[str, _Spec] = {
    "decimal.Decimal": _Spec((_Parameter("value", "decimal"),), 1, decimal.Decimal),
    "fractions.Fraction": _Spec(_ints("numerator", "denominator"), 1, fractions.Fraction),
    "datetime.date": _Spec(_ints("year", "month", "day"), 3, datetime.date),
    "datetime.datetime": _Spec(
        _ints("year", "month", "day", "hour", "minute", "second", "microsecond") + _TZ, 3, datetime.datetime
    ),
    "datetime.time": _Spec(_ints("hour", "minute", "second", "microsecond") + _TZ, 0, datetime.time),
    "datetime.timedelta": _Spec(_ints("days", "seconds", "microseconds"), 0, datetime.timedelta),
    "datetime.timezone": _Spec(
        (_Parameter("offset", "timedelta"), _Parameter("name", "str")), 1, datetime.timezone
    ),
    "uuid.UUID": _Spec((_Parameter("hex", "str"),), 1, uuid.UUID),
    "pathlib.PurePosixPath": _Spec((_Parameter("path", "str"),), 1, pathlib.PurePosixPath),
    "pathlib.PureWindowsPath": _Spec((_Parameter("path", "str"),), 1, pathlib.PureWindowsPath),
    "pathlib.PosixPath": _Spec((_Parameter("path", "str"),), 1, pathlib.PosixPath),
    "pathlib.WindowsPath": _Spec((_Parameter("path", "str"),), 1, pathlib.WindowsPath),
    "float": _Spec((_Parameter("x", "float_special"),), 1, float),
    "set": _Spec((), 0, set),
    "frozenset": _Spec((_Parameter("items", "set"),), 0, frozenset),
    OBJECT_MARKER: _Spec(
        (
            _Parameter("type", "type"),
            _Parameter("attributes", "attributes"),
            _Parameter("slots", "attributes"),
        ),
        2,
        lambda *args: args,
    ),
    CLASS_MARKER: _Spec((_Parameter("type", "type"),), 1, ClassValue),
}
#: Attribute paths that name a standard-library constant.
STDLIB_CONSTANTS = {"datetime.timezone.utc": datetime.UTC}
BUILTIN_CALLS = frozenset({"float", "set", "frozenset", OBJECT_MARKER, CLASS_MARKER})


def dotted_name(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of attribute accesses on a name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _plain_name(part: str) -> bool:
    return part.isidentifier() and not part.startswith("__")


def is_literal(node: ast.expr) -> bool:
    """A literal as ``ast.literal_eval`` reads it: constants, signed numbers, complex sums."""
    if isinstance(node, ast.Constant):
        return type(node.value) in _LITERAL_TYPES
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd | ast.USub):
        operand = node.operand
        return isinstance(operand, ast.Constant) and type(operand.value) in (int, float, complex)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
        left, right = node.left, node.right
        real = left.operand if isinstance(left, ast.UnaryOp) and isinstance(left.op, ast.USub) else left
        return (
            isinstance(real, ast.Constant)
            and type(real.value) in (int, float)
            and isinstance(right, ast.Constant)
            and type(right.value) is complex
        )
    return False


class _Validator:
    """Checks a parsed build against the grammar; raises ProbeProtocolError at the first breach."""

    def __init__(self) -> None:
        self.nodes = 0

    def fail(self, node: ast.expr, why: str) -> ProbeProtocolError:
        where = f"{type(node).__name__} at column {node.col_offset}"
        return ProbeProtocolError(f"build rejected: {why} ({where})")

    def build(self, node: ast.expr, nesting: int, depth: int) -> None:
        self.nodes += 1
        if self.nodes > MAX_BUILD_NODES:
            raise ProbeProtocolError(f"build rejected: more than {MAX_BUILD_NODES} syntax nodes")
        if depth > _MAX_SYNTAX_DEPTH:
            raise ProbeProtocolError(f"build rejected: nested deeper than {_MAX_SYNTAX_DEPTH}")
        if is_literal(node):
            return
        if isinstance(node, ast.List | ast.Tuple | ast.Set | ast.Dict):
            if nesting >= MAX_BUILD_NESTING:
                raise self.fail(node, f"containers and objects nested deeper than {MAX_BUILD_NESTING}")
            if isinstance(node, ast.Dict):
                if any(key is None for key in node.keys):
                    raise self.fail(node, "'**' in a dict display")
                children = [*dict_keys(node), *node.values]
            else:
                if isinstance(getattr(node, "ctx", ast.Load()), ast.Store):
                    raise self.fail(node, "an assignment target")
                children = node.elts
            for child in children:
                if isinstance(child, ast.Starred):
                    raise self.fail(child, "'*' unpacking")
                self.build(child, nesting + 1, depth + 1)
            return
        if isinstance(node, ast.Call):
            self.call(node, nesting, depth)
            return
        if isinstance(node, ast.Attribute):
            dotted = dotted_name(node)
            if dotted in STDLIB_CONSTANTS:
                return
            if dotted is not None and dotted.count(".") >= 2 and all(map(_plain_name, dotted.split("."))):
                if dotted.split(".", 1)[0] in ("datetime", "decimal", "fractions", "uuid", "pathlib"):
                    raise self.fail(node, f"{dotted} is not a value the grammar knows")
                return  # an enum member
            raise self.fail(node, "attribute access")
        raise self.fail(node, "not part of the build grammar")

    def call(self, node: ast.Call, nesting: int, depth: int) -> None:
        name = dotted_name(node.func)
        spec = _CALLS.get(name or "")
        if spec is None:
            raise self.fail(node, f"a call of {name or 'an expression'}, which is not whitelisted")
        if name == OBJECT_MARKER:
            if nesting >= MAX_BUILD_NESTING:
                raise self.fail(node, f"containers and objects nested deeper than {MAX_BUILD_NESTING}")
            nesting += 1
        for argument, parameter in self.bind(node, spec).items():
            self.argument(argument, parameter, nesting, depth + 1)

    def bind(self, node: ast.Call, spec: _Spec) -> dict[ast.expr, _Parameter]:
        """Arguments to parameters by the constructor's signature; checks arity and names."""
        positional = [p for p in spec.parameters if p.positional]
        if len(node.args) > len(positional):
            raise self.fail(node, f"{len(node.args)} positional arguments, at most {len(positional)}")
        bound: dict[str, ast.expr] = {}
        for argument, parameter in zip(node.args, positional, strict=False):
            if isinstance(argument, ast.Starred):
                raise self.fail(argument, "'*' unpacking")
            bound[parameter.name] = argument
        by_name = {p.name: p for p in spec.parameters}
        for named in node.keywords:
            if named.arg is None:
                raise self.fail(node, "'**' unpacking")
            if named.arg not in by_name or named.arg in bound:
                raise self.fail(node, f"keyword {named.arg!r} is unknown or given twice")
            bound[named.arg] = named.value
        missing = [p.name for p in spec.parameters[: spec.required] if p.name not in bound]
        if missing:
            raise self.fail(node, f"missing {', '.join(missing)}")
        return {argument: by_name[name] for name, argument in bound.items()}

    def argument(self, node: ast.expr, parameter: _Parameter, nesting: int, depth: int) -> None:
        self.nodes += 1
        check = _ARGUMENT_CHECKS.get(parameter.kind)
        if check is None:  # pragma: no cover - the table names every kind
            raise AssertionError(parameter.kind)
        if not check(self, node, nesting, depth):
            raise self.fail(node, f"{parameter.name} must be {_KIND_WORDS[parameter.kind]}")

    # One check per parameter kind: is ``node`` a valid argument of that kind? Those whose
    # argument nests other values validate them too.

    def int_argument(self, node: ast.expr, nesting: int, depth: int) -> bool:
        return is_literal(node) and _literal_value(node).__class__ is int

    def str_argument(self, node: ast.expr, nesting: int, depth: int) -> bool:
        return type(_constant(node)) is str

    def decimal_argument(self, node: ast.expr, nesting: int, depth: int) -> bool:
        value = _constant(node)
        return self.int_argument(node, nesting, depth) or (type(value) is str and "nan" not in value.lower())

    def float_special_argument(self, node: ast.expr, nesting: int, depth: int) -> bool:
        value = _constant(node)
        return type(value) is str and value in FLOAT_SPECIALS

    def tz_argument(self, node: ast.expr, nesting: int, depth: int) -> bool:
        if (
            _constant(node) is None
            and isinstance(node, ast.Constant)
            or dotted_name(node) in STDLIB_CONSTANTS
        ):
            return True
        if isinstance(node, ast.Call) and dotted_name(node.func) == "datetime.timezone":
            self.call(node, nesting, depth)
            return True
        return False

    def timedelta_argument(self, node: ast.expr, nesting: int, depth: int) -> bool:
        if isinstance(node, ast.Call) and dotted_name(node.func) == "datetime.timedelta":
            self.call(node, nesting, depth)
            return True
        return False

    def set_argument(self, node: ast.expr, nesting: int, depth: int) -> bool:
        if isinstance(node, ast.Set):
            self.build(node, nesting, depth)
            return True
        return False

    def type_argument(self, node: ast.expr, nesting: int, depth: int) -> bool:
        value = _constant(node)
        return (
            isinstance(value, str)
            and _TYPE_NAME.match(value) is not None
            and all(map(_plain_name, value.replace(":", ".").split(".")))
        )

    def attributes_argument(self, node: ast.expr, nesting: int, depth: int) -> bool:
        if not (
            isinstance(node, ast.Dict)
            and all(isinstance(key, ast.Constant) and type(key.value) is str for key in node.keys)
        ):
            return False
        for child in node.values:
            self.build(child, nesting, depth + 1)
        return True


_ARGUMENT_CHECKS: dict[str, Callable[[_Validator, ast.expr, int, int], bool]] = {
    "int": _Validator.int_argument,
    "str": _Validator.str_argument,
    "decimal": _Validator.decimal_argument,
    "float_special": _Validator.float_special_argument,
    "tz": _Validator.tz_argument,
    "timedelta": _Validator.timedelta_argument,
    "set": _Validator.set_argument,
    "type": _Validator.type_argument,
    "attributes": _Validator.attributes_argument,
}


def _constant(node: ast.expr) -> Any:
    """The value of a constant node; None for any other node."""
    return node.value if isinstance(node, ast.Constant) else None


def _literal_value(node: ast.expr) -> Any:
    return ast.literal_eval(node)


def dict_keys(node: ast.Dict) -> list[ast.expr]:
    """The keys of a dict display; a build has no ``**`` in one (the validator rejects it)."""
    keys = [key for key in node.keys if key is not None]
    if len(keys) != len(node.keys):
        raise ProbeProtocolError("build rejected: '**' in a dict display")
    return keys


def parse_build(text: str) -> ast.expr:
    """The syntax tree of ``text`` once it is known to be a build; ProbeProtocolError otherwise.

    Nothing is evaluated: the text is parsed, then every node is checked against the grammar
    (module docstring), within the size and nesting limits.
    """
    if not isinstance(text, str):
        raise ProbeProtocolError(f"build rejected: a {type(text).__name__}, not text")
    if len(text) > MAX_BUILD_TEXT:
        raise ProbeProtocolError(f"build rejected: longer than {MAX_BUILD_TEXT} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as error:
        raise ProbeProtocolError(f"build rejected: it does not parse ({type(error).__name__})") from None
    _Validator().build(tree.body, 0, 0)
    return tree.body


def object_build(node: ast.expr) -> ObjectBuild | None:
    """The parts of ``node`` when it is an object marker (from ``parse_build``), else None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == OBJECT_MARKER):
        return None
    arguments = [*node.args, *(k.value for k in node.keywords)]
    names = [*("type", "attributes", "slots")[: len(node.args)], *(k.arg for k in node.keywords)]
    given = dict(zip(names, arguments, strict=True))
    module, _, qualname = str(_literal_value(given["type"])).partition(":")

    def attributes(key: str) -> dict[str, ast.expr]:
        found = given.get(key)
        if not isinstance(found, ast.Dict):
            return {}
        return {str(_literal_value(k)): v for k, v in zip(dict_keys(found), found.values, strict=True)}

    return ObjectBuild(module, qualname, attributes("attributes"), attributes("slots"))


def class_build(node: ast.expr) -> str | None:
    """The ``'module:Qualname'`` of ``node`` when it is a class marker (from ``parse_build``), else None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == CLASS_MARKER):
        return None
    argument = node.args[0] if node.args else node.keywords[0].value
    return str(_literal_value(argument))


def constructor_of(name: str) -> Callable[..., Any]:
    """What makes the value of the whitelisted call ``name`` (a dotted name of ``_CALLS``)."""
    return _CALLS[name].make


def walk_build(node: ast.expr) -> Iterator[ast.expr]:
    """``node`` and every value nested in it (not callees, nor the parts of an attribute path)."""
    yield node
    if isinstance(node, ast.Call):
        children = [*node.args, *(k.value for k in node.keywords)]
    elif isinstance(node, ast.Dict):
        children = [*dict_keys(node), *node.values]
    elif isinstance(node, ast.List | ast.Tuple | ast.Set):
        children = node.elts
    else:
        children = []
    for child in children:
        yield from walk_build(child)

"""Values the probe could not write as literals, rebuilt from their ``build`` expressions.

The probe (``equisa_probe.encode_value``) describes a value that has no Python literal, such as
``Decimal('10.00')`` or a frozen dataclass holding one, by a *build*: a Python expression in the
small grammar below. The text comes from the process that ran the user's code, so it is data,
never code: ``parse_build`` checks it against the grammar and rejects everything else,
``decode_value`` turns it into a value in this process without evaluating anything (stdlib
values are made by calling their whitelisted constructors with the literal arguments; objects
become read-only ``ObjectValue`` views, enum members ``EnumMember`` names, classes ``ClassValue``
names, and no user module is
ever imported), and ``build_expression`` writes it out as code for a carved test, which runs
only in a sandbox.

Grammar (``NAME`` is an identifier that does not start with two underscores)::

    build     := literal | special | container | stdlib | tz | member | class | object
    literal   := None | True | False | int | float | complex | str | bytes
                 (as ast.literal_eval reads them: -1, 1.5e3, (1-2j), b'x')
    special   := float('nan') | float('inf') | float('-inf')
    container := [build, ...] | (build, ...) | {build: build, ...} | {build, ...}
               | set() | frozenset() | frozenset({build, ...})
    stdlib    := decimal.Decimal(str | int)                  (not NaN: it cannot be compared)
               | fractions.Fraction(int[, int])
               | datetime.date(int, int, int)
               | datetime.datetime(int, int, int[, int[, int[, int[, int]]]][, tzinfo=tz][, fold=int])
               | datetime.time([int[, int[, int[, int]]]][, tzinfo=tz][, fold=int])
               | datetime.timedelta([int[, int[, int]]])    (or as days=, seconds=, microseconds=)
               | uuid.UUID(str)
               | pathlib.PurePosixPath(str) | pathlib.PureWindowsPath(str)
               | pathlib.PosixPath(str) | pathlib.WindowsPath(str)
    tz        := None | datetime.timezone.utc | datetime.timezone(datetime.timedelta(...)[, str])
    member    := NAME.NAME.NAME[.NAME ...]
                 an enum member: module path, class, member name (``shop.status.Status.PAID``)
    class     := __equisa_class__('module:Qualname')
                 a class as a value (``int`` is ``__equisa_class__('builtins:int')``)
    object    := __equisa_object__('module:Qualname', {str: build, ...}[, {str: build, ...}])
                 an instance rebuilt without running its ``__init__``: its ``__dict__``, then
                 the values of its ``__slots__``

Positional and keyword arguments follow the constructors' own signatures. A build is at most
``MAX_BUILD_TEXT`` characters and ``MAX_BUILD_NODES`` syntax nodes, with containers and objects
nested at most ``MAX_BUILD_NESTING`` deep (the probe writes at most 3).

An ``EncodedValue`` carries either ``literal`` (any Python literal) or ``build`` (only for values
without one); ``build_of`` returns whichever is there.
"""

from __future__ import annotations

import ast
import datetime
import decimal
import fractions
import keyword
import pathlib
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

from equisa_core.common.models import EncodedValue
from equisa_core.errors import ProbeProtocolError

__all__ = [
    "OBJECT_MARKER",
    "CLASS_MARKER",
    "ClassValue",
    "MAX_BUILD_TEXT",
    "MAX_BUILD_NODES",
    "MAX_BUILD_NESTING",
    "EnumMember",
    "ObjectValue",
    "ObjectBuild",
    "Emitter",
    "build_of",
    "parse_build",
    "object_build",
    "class_build",
    "walk_build",
    "decode_value",
    "build_expression",
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
_FLOAT_SPECIALS = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}
_LITERAL_TYPES = (type(None), bool, int, float, complex, str, bytes)


class EnumMember:
    """An enum member named by a build (``shop.status.Status.PAID``); its class is never imported."""

    __slots__ = ("owner", "name")
    owner: str
    name: str

    def __init__(self, owner: str, name: str) -> None:
        object.__setattr__(self, "owner", owner)
        object.__setattr__(self, "name", name)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("an EnumMember is read-only")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EnumMember):
            return NotImplemented
        return (self.owner, self.name) == (other.owner, other.name)

    def __hash__(self) -> int:
        return hash((EnumMember, self.owner, self.name))

    def __repr__(self) -> str:
        return f"{self.owner}.{self.name}"


@dataclass(frozen=True)
class ClassValue:
    """A class named by a build (``'builtins:int'``, ``'shop.cart:Cart'``); it is never imported."""

    type_name: str

    def __repr__(self) -> str:
        return self.type_name.partition(":")[2]


class ObjectValue:
    """A read-only view of an object a build describes: its type's name and its attributes.

    ``__type__`` is ``'module:Qualname'``; ``__attributes__`` maps every recorded attribute
    (``__dict__`` and slots) to its decoded value, which attribute access also reads
    (``money.amount``). The class itself is never imported.
    """

    __slots__ = ("__type__", "__attributes__")

    def __init__(self, type_name: str, attributes: Mapping[str, Any]) -> None:
        object.__setattr__(self, "__type__", type_name)
        object.__setattr__(self, "__attributes__", MappingProxyType(dict(attributes)))

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__attributes__[name]
        except KeyError:
            raise AttributeError(f"{self.__type__} object has no recorded attribute {name!r}") from None

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("an ObjectValue is read-only")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("an ObjectValue is read-only")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ObjectValue):
            return NotImplemented
        return self.__type__ == other.__type__ and dict(self.__attributes__) == dict(other.__attributes__)

    def __hash__(self) -> int:
        return hash((self.__type__, tuple(self.__attributes__.items())))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in self.__attributes__.items())
        return f"{self.__type__.partition(':')[2]}({fields})"


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


class Constructor(Protocol):
    """How calling a class rebuilds one of its objects (``testgen.call_shape.Constructor``)."""

    @property
    def parameters(self) -> tuple[tuple[str, str], ...]:
        """(name, kind) in order, each stored under its own name."""

    @property
    def constants(self) -> tuple[tuple[str, str], ...]:
        """Attribute -> the literal text ``__init__`` always stores in it."""


class Emitter(Protocol):
    """Where ``build_expression`` asks for names and puts setup statements (see carving).

    An emitter may also have ``constructor(module, qualname)``: a ``Constructor`` when calling the
    class rebuilds an object whose attributes are its parameters and its constants (holding their
    literals), else None (then the object is rebuilt from its state, ``__init__`` bypassed)."""

    def module(self, name: str) -> str:
        """An expression naming the standard-library module ``name``, imported."""

    def cls(self, module: str | None, qualname: str) -> str | None:
        """An expression naming a class, imported; ``module`` None: ``qualname`` is a dotted path
        whose module part has to be guessed. None when it cannot be named."""

    def variable(self, hint: str) -> str:
        """A fresh local variable name, close to ``hint``."""

    def statement(self, line: str) -> None:
        """Append one setup statement, run before the expression is used."""


def build_of(value: EncodedValue) -> str | None:
    """The text that rebuilds ``value``: its literal, else its build, else None."""
    return value.literal if value.literal is not None else value.build


# ---------------------------------------------------------------------------------------------
# The grammar.


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
        (_Parameter("type", "type"), _Parameter("attributes", "attributes"),
         _Parameter("slots", "attributes")),
        2,
        lambda *args: args,
    ),
    CLASS_MARKER: _Spec((_Parameter("type", "type"),), 1, ClassValue),
}
#: Attribute paths that name a standard-library constant.
_CONSTANTS = {"datetime.timezone.utc": datetime.UTC}
_BUILTIN_CALLS = frozenset({"float", "set", "frozenset", OBJECT_MARKER, CLASS_MARKER})


def _dotted(node: ast.expr) -> str | None:
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
        if self.literal(node):
            return
        if isinstance(node, ast.List | ast.Tuple | ast.Set | ast.Dict):
            if nesting >= MAX_BUILD_NESTING:
                raise self.fail(node, f"containers and objects nested deeper than {MAX_BUILD_NESTING}")
            if isinstance(node, ast.Dict):
                if any(key is None for key in node.keys):
                    raise self.fail(node, "'**' in a dict display")
                children = [*_keys(node), *node.values]
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
            dotted = _dotted(node)
            if dotted in _CONSTANTS:
                return
            if dotted is not None and dotted.count(".") >= 2 and all(map(_plain_name, dotted.split("."))):
                if dotted.split(".", 1)[0] in ("datetime", "decimal", "fractions", "uuid", "pathlib"):
                    raise self.fail(node, f"{dotted} is not a value the grammar knows")
                return  # an enum member
            raise self.fail(node, "attribute access")
        raise self.fail(node, "not part of the build grammar")

    @staticmethod
    def literal(node: ast.expr) -> bool:
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
                isinstance(real, ast.Constant) and type(real.value) in (int, float)
                and isinstance(right, ast.Constant) and type(right.value) is complex
            )
        return False

    def call(self, node: ast.Call, nesting: int, depth: int) -> None:
        name = _dotted(node.func)
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
        return self.literal(node) and _literal_value(node).__class__ is int

    def str_argument(self, node: ast.expr, nesting: int, depth: int) -> bool:
        return type(_constant(node)) is str

    def decimal_argument(self, node: ast.expr, nesting: int, depth: int) -> bool:
        value = _constant(node)
        return self.int_argument(node, nesting, depth) or (type(value) is str and "nan" not in value.lower())

    def float_special_argument(self, node: ast.expr, nesting: int, depth: int) -> bool:
        value = _constant(node)
        return type(value) is str and value in _FLOAT_SPECIALS

    def tz_argument(self, node: ast.expr, nesting: int, depth: int) -> bool:
        if _constant(node) is None and isinstance(node, ast.Constant) or _dotted(node) in _CONSTANTS:
            return True
        if isinstance(node, ast.Call) and _dotted(node.func) == "datetime.timezone":
            self.call(node, nesting, depth)
            return True
        return False

    def timedelta_argument(self, node: ast.expr, nesting: int, depth: int) -> bool:
        if isinstance(node, ast.Call) and _dotted(node.func) == "datetime.timedelta":
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
        return isinstance(value, str) and _TYPE_NAME.match(value) is not None and all(
            map(_plain_name, value.replace(":", ".").split("."))
        )

    def attributes_argument(self, node: ast.expr, nesting: int, depth: int) -> bool:
        if not (isinstance(node, ast.Dict) and all(
            isinstance(key, ast.Constant) and type(key.value) is str for key in node.keys
        )):
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


def _keys(node: ast.Dict) -> list[ast.expr]:
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
        return {str(_literal_value(k)): v for k, v in zip(_keys(found), found.values, strict=True)}

    return ObjectBuild(module, qualname, attributes("attributes"), attributes("slots"))


def class_build(node: ast.expr) -> str | None:
    """The ``'module:Qualname'`` of ``node`` when it is a class marker (from ``parse_build``), else None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == CLASS_MARKER):
        return None
    argument = node.args[0] if node.args else node.keywords[0].value
    return str(_literal_value(argument))


# ---------------------------------------------------------------------------------------------
# Decoding: a value in this process.


def decode_value(build: str | ast.expr) -> Any:
    """The value a build (text, or a tree from ``parse_build``) describes; ProbeProtocolError if none.

    Literals and containers are themselves; stdlib values come from their constructors; enum
    members are ``EnumMember``s, classes ``ClassValue``s and objects ``ObjectValue``s. A constructor
    that refuses its arguments (``datetime.date(2024, 13, 1)``), or an unhashable set element or
    dict key, makes the build undecodable.
    """
    node = parse_build(build) if isinstance(build, str) else build
    try:
        return _decode(node)
    except ProbeProtocolError:
        raise
    except Exception as error:  # a whitelisted constructor refused its literal arguments
        raise ProbeProtocolError(f"build not decodable: {type(error).__name__}: {error}") from None


def _decode(node: ast.expr) -> Any:
    if _Validator.literal(node):
        return ast.literal_eval(node)
    decode = _DECODERS.get(type(node))
    if decode is None:  # pragma: no cover
        raise ProbeProtocolError(f"build not decodable: {type(node).__name__}")
    return decode(node)


def _decode_list(node: ast.List) -> list[Any]:
    return [_decode(e) for e in node.elts]


def _decode_tuple(node: ast.Tuple) -> tuple[Any, ...]:
    return tuple(_decode(e) for e in node.elts)


def _decode_set(node: ast.Set) -> set[Any]:
    return {_decode(e) for e in node.elts}


def _decode_dict(node: ast.Dict) -> dict[Any, Any]:
    return {_decode(k): _decode(v) for k, v in zip(_keys(node), node.values, strict=True)}


def _decode_attribute(node: ast.Attribute) -> Any:
    """A stdlib constant (``datetime.timezone.utc``) or an enum member."""
    dotted = _dotted(node) or ""
    if dotted in _CONSTANTS:
        return _CONSTANTS[dotted]
    owner, _, member = dotted.rpartition(".")
    return EnumMember(owner, member)


def _decode_call(node: ast.Call) -> Any:
    """An object marker's ``ObjectValue``, a class marker's ``ClassValue``, a float special, or what a
    whitelisted constructor makes."""
    named = class_build(node)
    if named is not None:
        return ClassValue(named)
    found = object_build(node)
    if found is not None:
        attributes = {name: _decode(child) for name, child in found.attributes.items()}
        attributes.update((name, _decode(child)) for name, child in found.slots.items())
        return ObjectValue(found.type_name, attributes)
    name = _dotted(node.func) or ""
    make = _CALLS[name].make
    if name == "float":
        return _FLOAT_SPECIALS[_literal_value(node.args[0])]
    args = [_decode(a) for a in node.args]
    keywords = {k.arg: _decode(k.value) for k in node.keywords if k.arg is not None}
    return make(*args, **keywords)


#: How each kind of (non-literal) build node decodes.
_DECODERS: dict[type[ast.expr], Callable[[Any], Any]] = {
    ast.List: _decode_list,
    ast.Tuple: _decode_tuple,
    ast.Set: _decode_set,
    ast.Dict: _decode_dict,
    ast.Attribute: _decode_attribute,
    ast.Call: _decode_call,
}


# ---------------------------------------------------------------------------------------------
# Code: an expression for a carved test.


class _Unwritable(Exception):
    """A class of the build cannot be named from the carved test."""


def _identifier(text: str) -> str:
    cleaned = re.sub(r"\W+", "_", text).strip("_") or "value"
    cleaned = cleaned if not cleaned[0].isdigit() else f"v_{cleaned}"
    return cleaned + "_" if keyword.iskeyword(cleaned) else cleaned


def walk_build(node: ast.expr) -> Iterator[ast.expr]:
    """``node`` and every value nested in it (not callees, nor the parts of an attribute path)."""
    yield node
    if isinstance(node, ast.Call):
        children = [*node.args, *(k.value for k in node.keywords)]
    elif isinstance(node, ast.Dict):
        children = [*_keys(node), *node.values]
    elif isinstance(node, ast.List | ast.Tuple | ast.Set):
        children = node.elts
    else:
        children = []
    for child in children:
        yield from walk_build(child)


class _Writer:
    def __init__(self, emitter: Emitter) -> None:
        self.emitter = emitter
        self.classes: dict[tuple[str | None, str], str] = {}
        self.modules: dict[str, str] = {}

    def prepare(self, node: ast.expr) -> None:
        """Import every class and module first, so no variable takes a name an import needs."""
        for part in walk_build(node):
            found = object_build(part) if isinstance(part, ast.Call) else None
            named = class_build(part)
            if found is not None:
                self.cls(found.module, found.qualname)
            elif named is not None:
                self.class_value(named)
            elif isinstance(part, ast.Call) and (_dotted(part.func) or "") not in _BUILTIN_CALLS:
                self.module((_dotted(part.func) or "").split(".", 1)[0])
            elif isinstance(part, ast.Attribute):
                dotted = _dotted(part) or ""
                if dotted in _CONSTANTS:
                    self.module(dotted.split(".", 1)[0])
                elif "." in dotted:
                    self.cls(None, dotted.rpartition(".")[0])

    def cls(self, module: str | None, qualname: str) -> str:
        key = (module, qualname)
        if key not in self.classes:
            named = self.emitter.cls(module, qualname)
            if named is None:
                raise _Unwritable(qualname)
            self.classes[key] = named
        return self.classes[key]

    def class_value(self, type_name: str) -> str:
        """A builtin class by its name (``int``), any other imported through the emitter."""
        module, _, qualname = type_name.partition(":")
        if module == "builtins" and "." not in qualname:
            return qualname
        return self.cls(module, qualname)

    def module(self, name: str) -> str:
        if name not in self.modules:
            self.modules[name] = self.emitter.module(name)
        return self.modules[name]

    def write(self, node: ast.expr, hint: str) -> str:
        if _Validator.literal(node):
            return ast.unparse(node)
        if isinstance(node, ast.List):
            return "[" + ", ".join(self.write(e, f"{hint}_{i}") for i, e in enumerate(node.elts)) + "]"
        if isinstance(node, ast.Tuple):
            items = [self.write(e, f"{hint}_{i}") for i, e in enumerate(node.elts)]
            return "(" + items[0] + ",)" if len(items) == 1 else "(" + ", ".join(items) + ")"
        if isinstance(node, ast.Set):
            return "{" + ", ".join(self.write(e, f"{hint}_{i}") for i, e in enumerate(node.elts)) + "}"
        if isinstance(node, ast.Dict):
            pairs = [
                f"{self.write(k, f'{hint}_key_{i}')}: {self.write(v, f'{hint}_{i}')}"
                for i, (k, v) in enumerate(zip(_keys(node), node.values, strict=True))
            ]
            return "{" + ", ".join(pairs) + "}"
        if isinstance(node, ast.Attribute):
            dotted = _dotted(node) or ""
            if dotted in _CONSTANTS:
                module, _, rest = dotted.partition(".")
                return f"{self.module(module)}.{rest}"
            owner, _, member = dotted.rpartition(".")
            return f"{self.cls(None, owner)}.{member}"
        assert isinstance(node, ast.Call)
        found = object_build(node)
        if found is not None:
            return self.write_object(found, hint)
        named = class_build(node)
        if named is not None:
            return self.class_value(named)
        name = _dotted(node.func) or ""
        if name in _BUILTIN_CALLS:
            callee = name
        else:
            module, _, rest = name.partition(".")
            callee = f"{self.module(module)}.{rest}"
        arguments = [self.write(a, f"{hint}_{i}") for i, a in enumerate(node.args)]
        arguments += [f"{k.arg}={self.write(k.value, f'{hint}_{k.arg}')}" for k in node.keywords]
        return f"{callee}({', '.join(arguments)})"

    def write_object(self, found: ObjectBuild, hint: str) -> str:
        cls = self.cls(found.module, found.qualname)
        known = getattr(self.emitter, "constructor", None)
        constructor: Constructor | None = known(found.module, found.qualname) if known is not None else None
        if constructor is not None and not found.slots and _rebuilds(constructor, found.attributes):
            # ``Money(Decimal('5.99'), 'EUR')``: the constructor, as the code under test writes it.
            arguments = []
            for parameter, kind in constructor.parameters:
                expression = self.write(found.attributes[parameter], f"{hint}_{parameter}")
                arguments.append(expression if kind == "positional" else f"{parameter}={expression}")
            return f"{cls}({', '.join(arguments)})"
        name = self.emitter.variable(_identifier(hint))
        items = [f"{attribute!r}: {self.write(child, f'{name}_{attribute}')}"
                 for attribute, child in found.attributes.items()]
        slots = [(attribute, self.write(child, f"{name}_{attribute}"))
                 for attribute, child in found.slots.items()]
        self.emitter.statement(f"{name} = {cls}.__new__({cls})")
        if items:
            self.emitter.statement(f"{name}.__dict__.update({{{', '.join(items)}}})")
        for attribute, expression in slots:
            self.emitter.statement(f"object.__setattr__({name}, {attribute!r}, {expression})")
        return name


def _rebuilds(constructor: Constructor, attributes: Mapping[str, ast.expr]) -> bool:
    """Whether calling the class with ``attributes``' parameter values gives an object with exactly
    ``attributes``: every other attribute is one of the constructor's constants, holding its literal."""
    constants = dict(constructor.constants)
    if set(attributes) != {p for p, _ in constructor.parameters} | set(constants):
        return False
    for attribute, text in constants.items():
        try:
            expected, found = ast.literal_eval(text), ast.literal_eval(attributes[attribute])
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return False
        if type(expected) is not type(found) or expected != found:
            return False
    return True


def build_expression(node: ast.expr, emitter: Emitter, hint: str = "value") -> str | None:
    """Source of an expression equal to the build ``node`` (from ``parse_build``), or None.

    Standard-library modules and classes are named through ``emitter`` (which imports them). An
    object whose class the emitter knows a constructor for is that call (``Money(Decimal('5.99'),
    'EUR')``); any other is made in a local variable by setup statements, inner objects first::

        obj_minimum = Money.__new__(Money)
        obj_minimum.__dict__.update({'amount': decimal.Decimal('100.00'), 'currency': 'EUR'})
        obj = ThresholdDiscount.__new__(ThresholdDiscount)
        obj.__dict__.update({'minimum': obj_minimum, ...})

    ``__dict__.update`` and ``object.__setattr__`` (for slots) bypass ``__setattr__``, so frozen
    dataclasses are rebuilt too, and ``__init__`` never runs. None when a class cannot be named;
    statements may have been emitted by then, so the caller discards them.
    """
    writer = _Writer(emitter)
    try:
        writer.prepare(node)
        return writer.write(node, hint)
    except _Unwritable:
        return None

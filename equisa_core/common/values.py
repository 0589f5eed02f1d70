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

This module decodes builds and is their entry point; the grammar's checks live in
``equisa_core.common.build_grammar``, the stand-in values in ``equisa_core.common.decoded_values``
and the writing of code in ``equisa_core.common.build_code``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from equisa_core.common.build_code import Emitter, build_expression
from equisa_core.common.build_grammar import (
    CLASS_MARKER,
    FLOAT_SPECIALS,
    MAX_BUILD_NESTING,
    MAX_BUILD_NODES,
    MAX_BUILD_TEXT,
    OBJECT_MARKER,
    STDLIB_CONSTANTS,
    ObjectBuild,
    class_build,
    constructor_of,
    dict_keys,
    dotted_name,
    is_literal,
    object_build,
    parse_build,
    walk_build,
)
from equisa_core.common.decoded_values import ClassValue, EnumMember, ObjectValue
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


def build_of(value: EncodedValue) -> str | None:
    """The text that rebuilds ``value``: its literal, else its build, else None."""
    return value.literal if value.literal is not None else value.build


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
    if is_literal(node):
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
    return {_decode(k): _decode(v) for k, v in zip(dict_keys(node), node.values, strict=True)}


def _decode_attribute(node: ast.Attribute) -> Any:
    """A stdlib constant (``datetime.timezone.utc``) or an enum member."""
    dotted = dotted_name(node) or ""
    if dotted in STDLIB_CONSTANTS:
        return STDLIB_CONSTANTS[dotted]
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
    name = dotted_name(node.func) or ""
    make = constructor_of(name)
    if name == "float":
        return FLOAT_SPECIALS[ast.literal_eval(node.args[0])]
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

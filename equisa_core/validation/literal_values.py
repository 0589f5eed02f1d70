"""Literal values in Python source, as the overfitting checks compare them: constant expressions
folded (``-1``, ``100 * 1.07``, displays of literals), each value's comparison key (``10``, ``10.0``
and ``Decimal("10.00")`` are one value), trivial values, and a node's source shown short. Pure.
See ``equisa_core.validation.overfitting`` for what counts as a literal."""

from __future__ import annotations

import ast
import math
import operator
import re
import warnings
from collections.abc import Callable, Collection, Iterator
from decimal import Decimal, InvalidOperation
from typing import TypeGuard

__all__ = [
    "NOT_LITERAL",
    "NUMERIC_RE",
    "FunctionNode",
    "ValueKey",
    "callee_name",
    "describe_parse_error",
    "fold_literal",
    "folded_elements",
    "is_constructor",
    "is_trivial",
    "parse_quietly",
    "source_excerpt",
    "trivial_keys",
    "value_key",
]

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
NOT_LITERAL = object()
NUMERIC_RE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
# Lower-case callees that construct a value from their arguments, like a class does.
_CONSTRUCTORS = frozenset(
    {
        "int", "float", "complex", "str", "bytes", "bool", "tuple", "list", "set", "frozenset",
        "dict", "cls", "date", "datetime", "time", "timedelta",
    }
)  # fmt: skip
_BINARY: dict[type[ast.operator], Callable[[object, object], object]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_MAX_POWER = 64
_MAX_SHOWN = 60


def _is_number(value: object) -> TypeGuard[int | float | complex | Decimal]:
    return isinstance(value, int | float | complex | Decimal) and not isinstance(value, bool)


def _magnitude(value: int | float | complex | Decimal) -> int | float | Decimal:
    """``abs(value)``, spelled per type so that its type is known (a complex's is a float)."""
    if isinstance(value, Decimal):
        return abs(value)
    if isinstance(value, complex):
        return abs(value)
    return abs(value)


def callee_name(func: ast.expr) -> str | None:
    """The last identifier of a callee: ``Money``, ``decimal.Decimal`` -> ``Decimal``."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def is_constructor(func: ast.expr) -> bool:
    """Whether a callee constructs a value from its arguments: a capitalized name or a builtin type."""
    name = callee_name(func)
    return name is not None and (name[:1].isupper() or name in _CONSTRUCTORS)


def fold_literal(node: ast.expr, *, numeric_strings: bool = False) -> object:
    """The value of a literal expression, or ``NOT_LITERAL``.

    ``numeric_strings``: a string constant that spells a number gives that ``Decimal`` (for the
    arguments of constructors, ``Money("10.00")``).
    """
    if isinstance(node, ast.Constant):
        return _fold_constant(node, numeric_strings)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return _fold_sign(node, numeric_strings)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return _fold_collection(node)
    if isinstance(node, ast.Dict):
        return _fold_dict(node)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _fold_binary(node)
    return NOT_LITERAL


def _fold_constant(node: ast.Constant, numeric_strings: bool) -> object:
    value = node.value
    if value is Ellipsis:
        return NOT_LITERAL
    if numeric_strings and isinstance(value, str) and NUMERIC_RE.fullmatch(value.strip()):
        return Decimal(value.strip())
    return value


def _fold_sign(node: ast.UnaryOp, numeric_strings: bool) -> object:
    """A number with a unary ``-`` or ``+``."""
    operand = fold_literal(node.operand, numeric_strings=numeric_strings)
    if not _is_number(operand):
        return NOT_LITERAL
    return -operand if isinstance(node.op, ast.USub) else +operand


def _fold_collection(node: ast.Tuple | ast.List | ast.Set) -> object:
    """A set display folds to a frozenset, a tuple or list display to a tuple."""
    values = [fold_literal(elt) for elt in node.elts]
    if any(v is NOT_LITERAL for v in values):
        return NOT_LITERAL
    return frozenset(values) if isinstance(node, ast.Set) else tuple(values)


def _fold_dict(node: ast.Dict) -> object:
    """A dict display folds to the frozenset of its (key, value) pairs."""
    keys = [key for key in node.keys if key is not None]
    if len(keys) != len(node.keys):  # a '**' in the display
        return NOT_LITERAL
    items = [(fold_literal(k), fold_literal(v)) for k, v in zip(keys, node.values, strict=True)]
    if any(k is NOT_LITERAL or v is NOT_LITERAL for k, v in items):
        return NOT_LITERAL
    return frozenset(items)


def _fold_binary(node: ast.BinOp) -> object:
    left, right = fold_literal(node.left), fold_literal(node.right)
    numbers = _is_number(left) and _is_number(right)
    strings = isinstance(left, str) and isinstance(right, str) and isinstance(node.op, ast.Add)
    if not (numbers or strings):
        return NOT_LITERAL
    if (
        isinstance(node.op, ast.Pow)
        and _is_number(left)
        and _is_number(right)
        and (_magnitude(right) > _MAX_POWER or _magnitude(left) > 10**6)
    ):
        return NOT_LITERAL
    try:
        with warnings.catch_warnings(action="ignore"):
            return _BINARY[type(node.op)](left, right)
    except (ArithmeticError, TypeError, ValueError, InvalidOperation):
        return NOT_LITERAL


def folded_elements(value: object) -> Iterator[object]:
    """A folded value and, recursively, its elements (of a folded dict, the values)."""
    yield value
    if isinstance(value, tuple):
        for item in value:
            yield from folded_elements(item)
    elif isinstance(value, frozenset):
        # A folded dict is a frozenset of (key, value) pairs; a set of pairs reads the same, harmlessly.
        pairs = all(isinstance(item, tuple) and len(item) == 2 for item in value)
        for item in value:
            yield from folded_elements(item[1] if pairs else item)


ValueKey = tuple[object, ...]


def value_key(value: object) -> ValueKey:
    """A value's identity for comparison: numbers by numeric value (float via repr, so 107.1 and
    Decimal("107.10") agree), everything else by type and value, containers element-wise."""
    if value is None:
        return ("none",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("num", value)
    if isinstance(value, float):
        return ("num", Decimal(repr(value))) if math.isfinite(value) else ("float", repr(value))
    if isinstance(value, Decimal):
        return ("num", value) if value.is_finite() else ("float", str(value).lower())
    if isinstance(value, complex):
        return ("complex", value)
    if isinstance(value, str | bytes):
        return (type(value).__name__, value)
    if isinstance(value, tuple | list):
        return ("seq", tuple(value_key(item) for item in value))
    if isinstance(value, frozenset | set):
        return ("set", frozenset(value_key(item) for item in value))
    if isinstance(value, dict):
        return ("set", frozenset(value_key(item) for item in value.items()))
    return ("other", type(value).__name__, repr(value))


def trivial_keys(trivial: Collection[object]) -> frozenset[ValueKey]:
    """The keys of the trivial values (``value_key``)."""
    return frozenset(value_key(value) for value in trivial)


def is_trivial(key: ValueKey, trivial: frozenset[ValueKey]) -> bool:
    """Whether a value's key is trivial, or that of a container of trivial values only."""
    if key in trivial:
        return True
    if key[0] in ("seq", "set") and isinstance(key[1], tuple | frozenset):  # the keys of a container's items
        return all(is_trivial(item, trivial) for item in key[1])
    return False


def source_excerpt(node: ast.AST, text: str) -> str:
    """A node's source in ``text`` on one line, shortened to ``_MAX_SHOWN`` characters."""
    segment = ast.get_source_segment(text, node) or ast.unparse(node)
    segment = " ".join(segment.split())
    return segment if len(segment) <= _MAX_SHOWN else segment[: _MAX_SHOWN - 1] + "…"


def parse_quietly(text: str) -> ast.Module:
    """``ast.parse`` with its warnings (invalid escape sequences) silenced."""
    with warnings.catch_warnings(action="ignore"):
        return ast.parse(text)


def describe_parse_error(exc: SyntaxError | ValueError) -> str:
    """Why a text does not parse, with the line when known."""
    if isinstance(exc, SyntaxError):
        return f"{exc.msg} (line {exc.lineno})" if exc.lineno else str(exc.msg)
    return str(exc)

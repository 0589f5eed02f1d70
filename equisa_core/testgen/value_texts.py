"""The texts of values the input search passes: literals (maybe holding the standard library's value
types, ``datetime.date(2024, 3, 31)``) read without executing them, builds of recorded objects
(``__equisa_object__('m:C', {...})``) that a driver can rebuild, and the callables it offers
(``callable_inputs``), written as their source (``lambda x: x``), never as a ``<function ...>`` repr."""

from __future__ import annotations

import ast
import datetime
from collections.abc import Sequence
from decimal import Decimal

from equisa_core.common.values import OBJECT_MARKER, parse_build, walk_build
from equisa_core.errors import ProbeProtocolError
from equisa_core.testgen.callable_inputs import is_callable_text

__all__ = [
    "argument_parts",
    "is_callable_text",
    "is_drawable_argument",
    "is_drawable_text",
    "is_object_text",
    "is_value_text",
    "literal_value",
    "literals",
]

#: The calls a value's text may make besides literals: the standard library's value types, which
#: ``repr`` writes as such calls (``Decimal`` reprs are written with their module by the driver).
_VALUE_CALLS = {
    "datetime.date": datetime.date,
    "datetime.datetime": datetime.datetime,
    "datetime.time": datetime.time,
    "datetime.timedelta": datetime.timedelta,
    "decimal.Decimal": Decimal,
}


def literal_value(text: str) -> tuple[bool, object]:
    """(True, the value) of a value's text: a literal, maybe holding ``_VALUE_CALLS`` calls with
    literal arguments; (False, None) for anything else (the text is never executed)."""
    try:
        return True, _value_of(ast.parse(text, mode="eval").body)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, ArithmeticError):
        return False, None


def literals(texts: Sequence[str]) -> bool:
    """Whether every one of ``texts`` is a value's text (``literal_value``)."""
    return all(literal_value(t)[0] for t in texts)


def is_value_text(text: str) -> bool:
    """Whether ``text`` writes a value the search can pass: a literal, maybe holding calls of the
    standard library's value types (``datetime.date(2024, 3, 31)``, ``decimal.Decimal('1.50')``)."""
    return literal_value(text)[0]


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
    """Whether the search can draw the argument ``text``: a value (``is_value_text``), a
    rebuildable object (``is_object_text``) or one of the callables it offers (``is_callable_text``:
    ``len``, ``lambda x: x``, ``operator.add``...)."""
    return is_value_text(text) or is_object_text(text) or is_callable_text(text)


def argument_parts(text: str) -> tuple[str | None, str]:
    """(name, value text) of an argument's text as the search writes it: ``scale=2`` (a keyword-only
    argument, passed by name) gives ``("scale", "2")``, a positional one ``(None, text)``."""
    name, equals, value = text.partition("=")
    if equals and name.isidentifier() and not value.startswith("="):
        return name, value
    return None, text


def is_drawable_argument(text: str) -> bool:
    """Whether ``text`` is an argument the search draws: a drawable value (``is_drawable_text``),
    maybe passed by name (``scale=2``)."""
    return is_drawable_text(argument_parts(text)[1])


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
        keys = [k for k in node.keys if k is not None]
        if len(keys) < len(node.keys):
            raise ValueError("** in a dict")
        return {_value_of(k): _value_of(v) for k, v in zip(keys, node.values, strict=True)}
    return ast.literal_eval(node)

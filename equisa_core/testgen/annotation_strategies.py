"""Hypothesis strategies (as the text of expressions, for the input search's driver) from a
parameter's annotation: ``int``, ``float``, ``str``, ``bool``, ``None``, the standard library's value
types, ``list[X]``, ``tuple[X, Y]``, ``tuple[X, ...]``, ``dict[K, V]``, ``set[X]``, ``Optional[X]``,
``X | None``, ``Callable[[X, Y], R]`` (callables of that arity, ``callable_inputs``) and their
``typing`` spellings, nested as the annotation nests them; ``dict``, ``Mapping``, ``MutableMapping``
without arguments (``value_strategies.mapping_strategy``) and ``Any``, ``object``
(``value_strategies.any_strategy``) around the values seen; else from the values seen
(``value_strategies``)."""

from __future__ import annotations

import ast
import datetime
from collections.abc import Sequence
from decimal import Decimal

from equisa_core.testgen.callable_inputs import callable_strategy
from equisa_core.testgen.value_strategies import (
    MAX_SEEN,
    all_present,
    any_strategy,
    elements,
    float_strategy,
    from_values,
    int_strategy,
    mapping_strategy,
    max_length,
    numbers_in,
    strings_in,
    text_strategy,
    value_type_strategy,
)

__all__ = ["SEQUENCE_NAMES", "SET_NAMES", "TUPLE_NAMES", "strategy_for"]

#: Annotation names of the containers strategies are built for (``named_inputs`` draws classes into them too).
SEQUENCE_NAMES = {"list", "List", "Sequence", "Iterable", "MutableSequence", "Collection"}
TUPLE_NAMES = {"tuple", "Tuple"}
SET_NAMES = {"set", "Set", "frozenset", "FrozenSet", "AbstractSet"}
_MAPPINGS = {"dict", "Dict", "Mapping", "MutableMapping"}
_ANY = {"Any", "object"}
#: The standard library's value types an annotation may name, drawn around the values seen.
_VALUE_TYPES: dict[str, type] = {
    "datetime": datetime.datetime,
    "date": datetime.date,
    "timedelta": datetime.timedelta,
    "Decimal": Decimal,
}


def strategy_for(
    annotation: ast.expr | None, seen: Sequence[object], numbers: Sequence[Decimal], strings: Sequence[str]
) -> str | None:
    """A Hypothesis strategy's text for one parameter: from its annotation when there is one it can
    read, else from the values seen; None when neither gives one. ``numbers`` and ``strings`` are
    the file's constants; the values seen join them."""
    numbers = [*numbers, *numbers_in(seen[:MAX_SEEN])]
    strings = [*strings, *strings_in(seen[:MAX_SEEN])]
    if annotation is not None:
        return _from_annotation(annotation, seen, numbers, strings)
    return from_values(seen, numbers, strings)


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


def _unquoted(node: ast.expr) -> ast.expr | None:
    """A string annotation parsed (None when it does not parse); any other as it is."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return None
    return node


def _from_annotation(
    annotation: ast.expr, seen: Sequence[object], numbers: Sequence[Decimal], strings: Sequence[str]
) -> str | None:
    node = _unquoted(annotation)
    if node is None:
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # X | Y
        sides = all_present(
            [_from_annotation(side, seen, numbers, strings) for side in (node.left, node.right)]
        )
        return f"st.one_of({', '.join(sides)})" if sides is not None else None
    if isinstance(node, ast.Subscript):
        return _from_subscript(node, seen, numbers, strings)
    return _from_plain_name(_name(node), seen, numbers, strings)


def _from_plain_name(
    name: str, seen: Sequence[object], numbers: Sequence[Decimal], strings: Sequence[str]
) -> str | None:
    """An unparametrized annotation's strategy: a scalar's, a value type's around the values seen,
    lists (tuples) of what was seen, else of ints, dicts and any values around those seen."""
    scalar = _scalar_strategy(name, numbers, strings)
    if scalar is not None:
        return scalar
    if name in _MAPPINGS:
        return mapping_strategy(seen, numbers, strings)
    if name in _ANY:
        return any_strategy(seen, numbers, strings)
    if name == "Callable":
        return callable_strategy()
    if name in _VALUE_TYPES:
        kind = _VALUE_TYPES[name]
        return value_type_strategy(kind, [v for v in seen if type(v) is kind])
    if name in SEQUENCE_NAMES | TUPLE_NAMES:
        element = from_values(elements(seen), numbers, strings) or int_strategy(numbers)
        wrap = ".map(tuple)" if name in TUPLE_NAMES else ""
        return f"st.lists({element}, max_size={max_length(seen)}){wrap}"
    return None


def _scalar_strategy(name: str, numbers: Sequence[Decimal], strings: Sequence[str]) -> str | None:
    if name == "int":
        return int_strategy(numbers)
    if name == "float":
        return float_strategy(numbers)
    if name == "str":
        return text_strategy(strings)
    return {"bool": "st.booleans()", "None": "st.none()"}.get(name)


def _from_subscript(
    node: ast.Subscript, seen: Sequence[object], numbers: Sequence[Decimal], strings: Sequence[str]
) -> str | None:
    """A parametrized annotation's strategy: its arguments' strategies (seeded with the items of the
    containers seen) combined as it names."""
    name = _name(node.value)
    arguments = _arguments(node)
    if name == "Callable":  # Callable[[X, Y], R]: called with two arguments; Callable[..., R]: any
        listed = arguments[0] if arguments else None
        return callable_strategy(len(listed.elts) if isinstance(listed, ast.List) else -1)
    items = elements(seen)
    inner = [_from_annotation(a, items, numbers, strings) for a in arguments]
    if name in ("Optional", "Union"):
        return _from_union(name, inner)
    if name in TUPLE_NAMES:
        return _from_tuple(arguments, inner, seen)
    return _from_collection(name, inner, seen)


def _from_union(name: str, inner: Sequence[str | None]) -> str | None:
    """``Optional[X]``: None or X; ``Union[X, Y...]``: any of them (all of them drawable)."""
    if name == "Optional":
        return f"st.one_of(st.none(), {inner[0]})" if inner[0] else None
    parts = all_present(inner)
    return f"st.one_of({', '.join(parts)})" if parts is not None else None


def _from_tuple(
    arguments: Sequence[ast.expr], inner: Sequence[str | None], seen: Sequence[object]
) -> str | None:
    """``tuple[X, ...]``: tuples of X of varied lengths; ``tuple[X, Y]``: pairs of X and Y."""
    if len(arguments) == 2 and isinstance(arguments[1], ast.Constant) and arguments[1].value is Ellipsis:
        return f"st.lists({inner[0]}, max_size={max_length(seen)}).map(tuple)" if inner[0] else None
    parts = all_present(inner)
    return f"st.tuples({', '.join(parts)})" if parts is not None else None


def _from_collection(name: str, inner: Sequence[str | None], seen: Sequence[object]) -> str | None:
    """Lists, sets or dicts of the arguments' strategies, up to a few more items than the most seen."""
    if name in SEQUENCE_NAMES and inner[0]:
        return f"st.lists({inner[0]}, max_size={max_length(seen)})"
    if name in SET_NAMES and inner[0]:
        return f"st.sets({inner[0]}, max_size={max_length(seen)})"
    if name in _MAPPINGS and len(inner) == 2:
        pair = all_present(inner)
        return f"st.dictionaries({pair[0]}, {pair[1]}, max_size={max_length(seen)})" if pair else None
    return None

"""The deterministic input rules, in one place: the values next to a value, the probes of another
kind, and the edges of the code's constants.

Three parts of EQUISA move the inputs they have seen, and they move them alike because they share
these rules:

- the divergence check on any function (the shadow plugin, ``equisa_core/validation/shadow_plugin/``):
  one argument, keyword or attribute of the receiver at a time (``SHADOW_RULE``), and where the
  function checks its inputs, a value of another kind in place of one argument (``kind_probes``);
- the differential test of a module function's literal calls (``equisa_core.validation.differential``,
  ``LITERAL_RULE``);
- the test generator's boundary values and drawn numbers (``equisa_core.testgen.boundary``,
  ``value_strategies``): a number one step either way and zero, and each constant's edges
  (``boundary_values``, ``edges``), a ``Decimal`` stepping by its own last place (``decimal_step``).

A scalar's neighbours (``scalar_neighbours``): a boolean flipped, a number one off either way, zero
and (an integer) negated, a string a character shorter at either end, empty, its last character
repeated. A sequence's neighbours move the whole (named moves, ``SEQUENCE_MOVES``; a rule lists its
own, in its order) and, with ``item_moves``, one item: its first or last item moved to a neighbour
of its own, and inside an item that is itself a sequence, its first item (a record such as
``("January", "1")`` keeps its length), so that a change only an item's value reveals, an index
moved by one, shows. The two kinds take turns, so that a cap on the calls keeps some of each. A
dict's neighbours (with ``dicts``): its first or last key dropped, or empty. The candidates are kept
in order, without the value itself and repeats: by a shape when one is given (the plugin's
normalised repr), else by type and equality.

The two rules were written apart (the plugin's and the differential test's) and are kept as they
were, so that each check makes the inputs it made before, in the same order; they are options of
this one module, not two copies.

Standard library only, no import of ``equisa_core``, and Python 3.8 syntax: the host writes this
file's text into the run's copy as a module of the shadow plugin's package
(``equisa_core.validation.shadow_files``), where it runs under the suite's own interpreter.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from decimal import Decimal
from typing import Any, NamedTuple, TypeVar

__all__ = ["ITEM_NEIGHBOURS", "KIND_PROBES", "MAX_BOUNDARY_VALUES", "SEQUENCE_MOVES", "NeighbourRule",
           "SHADOW_RULE", "LITERAL_RULE", "neighbours", "scalar_neighbours", "number_neighbours",
           "kind_probes", "decimal_step", "edges", "boundary_values"]

#: Neighbours of one item that a sequence's neighbours take, per item moved.
ITEM_NEIGHBOURS = 2
#: Values of another kind put in place of one argument where the function rejects some inputs on
#: purpose (``kind_probes``): an empty string and zero, each falsy, as a guard ``if not x`` lets through.
KIND_PROBES = ("", 0)
#: The most boundary values tried for one input (``boundary_values``).
MAX_BOUNDARY_VALUES = 16

Number = TypeVar("Number", int, float, Decimal)


def _sorted(items: list[Any]) -> list[Any] | None:
    try:
        return sorted(items)
    except TypeError:  # mixed types that do not compare: no sorted neighbour
        return None


#: A whole sequence moved, by name: its items -> the moved items, None where the move does not apply.
SEQUENCE_MOVES: dict[str, Callable[[list[Any]], list[Any] | None]] = {
    "drop_first": lambda items: items[1:],
    "drop_last": lambda items: items[:-1],
    "repeat_first": lambda items: items[:1] + items,
    "repeat_last": lambda items: items + items[-1:],
    "reversed": lambda items: items[::-1],
    "empty": lambda items: [],
    "swap_first_two": lambda items: [items[1], items[0]] + items[2:] if len(items) >= 2 else None,
    "sorted": _sorted,
}


class NeighbourRule(NamedTuple):
    """How a rule moves a value: a sequence's whole moves (``SEQUENCE_MOVES``' names, in order),
    whether one item of a sequence moves too, and whether a dict's keys are dropped."""

    moves: tuple[str, ...]
    item_moves: bool
    dicts: bool


#: The shadow plugin's rule: the first item repeated, the items and a dict's keys moved.
SHADOW_RULE = NeighbourRule(
    moves=("drop_first", "drop_last", "repeat_first", "reversed", "empty", "swap_first_two"),
    item_moves=True, dicts=True)
#: The differential test's rule, on literal calls: the last item repeated, the items sorted.
LITERAL_RULE = NeighbourRule(
    moves=("drop_first", "drop_last", "repeat_last", "reversed", "swap_first_two", "sorted", "empty"),
    item_moves=False, dicts=False)


def neighbours(value: Any, rule: NeighbourRule = SHADOW_RULE, shape: Callable[[Any], Hashable] | None = None,
               depth: int = 0) -> list[Any]:
    """Deterministic values next to ``value`` under ``rule`` (see the module docstring), without
    ``value`` and repeats (by ``shape``, else by type and equality); ``depth``: 0 for an argument, 1
    for an item of one, 2 for an item of an item (only moved by value)."""
    out: list[Any] = scalar_neighbours(value)
    if type(value) in (list, tuple) and depth < 2:
        out = _sequence_neighbours(value, rule, shape, depth)
    elif type(value) is dict and depth == 0 and rule.dicts:
        keys = list(value)
        out = [{k: v for k, v in value.items() if k != key} for key in keys[:1] + keys[-1:]] + [{}]
    return _distinct(value, out, shape)


def scalar_neighbours(value: Any) -> list[Any]:
    """The values next to a boolean (flipped), a number (one off either way, 0, an integer negated)
    or a string (a character fewer at either end, empty, the last one repeated), possibly with
    ``value`` itself or repeats; [] for any other value."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return number_neighbours(value, 1, 0) + [-value]
    if isinstance(value, float):
        return number_neighbours(value, 1.0, 0.0)
    if isinstance(value, str):
        return [value[1:], value[:-1], "", value + value[-1:]]
    return []


def number_neighbours(value: Number, step: Number, zero: Number) -> list[Number]:
    """``value`` one ``step`` down and up, then ``zero`` (of the value's kind: ``0``, ``0.0``,
    ``Decimal(0)``)."""
    return [value - step, value + step, zero]


def _sequence_neighbours(value: list[Any] | tuple[Any, ...], rule: NeighbourRule,
                         shape: Callable[[Any], Hashable] | None, depth: int) -> list[Any]:
    """A list's or tuple's neighbours: the whole moved (only for an argument, ``depth`` 0) and one
    item moved (with ``rule.item_moves``), the two kinds taking turns."""
    items = list(value)
    whole: list[list[Any]] = []
    if depth == 0:
        whole = [m for m in (SEQUENCE_MOVES[name](items) for name in rule.moves) if m is not None]
    indices = sorted({0, len(items) - 1} if depth == 0 else {0}) if items and rule.item_moves else []
    near = {index: neighbours(items[index], rule, shape, depth + 1)[:ITEM_NEIGHBOURS] for index in indices}
    one_item = [items[:index] + [near[index][rank]] + items[index + 1:]
                for rank in range(ITEM_NEIGHBOURS) for index in indices if rank < len(near[index])]
    # The two kinds take turns, so that a cap on the calls keeps some of each.
    made = [m for pair in zip(whole, one_item) for m in pair]
    made += whole[len(one_item):] + one_item[len(whole):]
    return [type(value)(m) for m in made]


def _distinct(value: Any, candidates: list[Any], shape: Callable[[Any], Hashable] | None) -> list[Any]:
    """``candidates`` in order, without ``value`` and repeats: those of the shape of ``value`` or of
    an earlier one (with ``shape``), else those equal to it or to an earlier one of the same type."""
    kept: list[Any] = []
    if shape is None:
        for item in candidates:
            if item != value and not any(type(item) is type(s) and item == s for s in kept):
                kept.append(item)
        return kept
    shapes = {shape(value)}
    for item in candidates:
        seen = shape(item)
        if seen not in shapes:
            shapes.add(seen)
            kept.append(item)
    return kept


def kind_probes(value: Any) -> list[Any]:
    """The ``KIND_PROBES`` of another kind than ``value``: ``""`` unless it is a string, ``0``
    unless it is a number (a boolean is one)."""
    return [probe for probe in KIND_PROBES
            if not (isinstance(value, str) if isinstance(probe, str) else isinstance(value, (int, float)))]


def decimal_step(value: Decimal) -> Decimal:
    """A number's own step: one unit of its last decimal place (``0.01`` for ``10.00``), else 1."""
    exponent = value.as_tuple().exponent
    return Decimal(1).scaleb(exponent) if isinstance(exponent, int) and exponent < 0 else Decimal(1)


def edges(value: Decimal) -> list[Decimal]:
    """A constant's edges: one own step below it (``decimal_step``), itself, one own step above."""
    step = decimal_step(value)
    return [value - step, value, value + step]


def boundary_values(constants: Iterable[Decimal], own: Decimal | None = None,
                    limit: int = MAX_BOUNDARY_VALUES) -> list[Decimal]:
    """The values an input is moved to: ``own``'s neighbours first (one own step either way), zero,
    then each constant's ``edges``; without ``own`` and repeats, at most ``limit``."""
    near = number_neighbours(own, decimal_step(own), Decimal(0)) if own is not None else [Decimal(0)]
    ordered: list[Decimal] = []
    for value in near + [edge for constant in constants for edge in edges(constant)]:
        if value not in ordered and value != own:
            ordered.append(value)
    return ordered[:limit]

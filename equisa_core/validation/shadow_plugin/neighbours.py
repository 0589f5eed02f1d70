"""The shadow plugin's generated calls: deterministic neighbours of one argument, keyword or
attribute of the receiver at a time. Standard library only (it runs in the suite's interpreter).

A sequence's neighbours move the whole (shorter, longer, reversed, two items swapped, empty) and
also one item: its first or last item moved to a neighbour of its own, and inside an item that is
itself a sequence, its first item (a record such as ``("January", "1")`` keeps its length). A
change that only an item's value reveals, an index moved by one, shows there. The arguments take
turns (``_neighbour_calls``), so that a per-call cap leaves none of them unmoved."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from .calls import _Call, _shape

#: Neighbours of one item that a sequence's neighbours take, per item moved.
_ITEM_NEIGHBOURS = 2
#: Values of another kind put in place of one argument where the function rejects some inputs on
#: purpose (``_kind_probes``): an empty string and zero, each falsy, as a guard ``if not x`` lets through.
_KIND_PROBES = ("", 0)


def _neighbours(value: Any, depth: int = 0, item_moves: bool = True) -> list[Any]:
    """Deterministic values next to ``value`` (see the module docstring), without ``value``;
    ``depth``: 0 for an argument, 1 for an item of one, 2 for an item of an item (only moved by value);
    ``item_moves``: whether a sequence's neighbours move one item too."""
    out: list[Any] = scalar_neighbours(value)
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple) and depth < 2:
        out = _sequence_neighbours(value, depth, item_moves)
    elif type(value) is dict and depth == 0:
        keys = list(value)
        out = [{k: v for k, v in value.items() if k != key} for key in keys[:1] + keys[-1:]] + [{}]
    return _of_new_shapes(value, out)


def scalar_neighbours(value: Any) -> list[Any]:
    """The values next to a boolean (flipped), a number (one off either way, 0, negated) or a string
    (a character fewer at either end, empty, the last one repeated), possibly with ``value`` itself
    or repeats; [] for any other value. The rule the repair's literal differential inputs
    (``equisa_core.validation.differential.neighbour_values``) share."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value - 1, value + 1, 0, -value]
    if isinstance(value, float):
        return [value - 1.0, value + 1.0, 0.0]
    if isinstance(value, str):
        return [value[1:], value[:-1], "", value + value[-1:]]
    return []


def _sequence_neighbours(value: list[Any] | tuple[Any, ...], depth: int, item_moves: bool) -> list[Any]:
    """A list's or tuple's neighbours: the whole moved (only for an argument, ``depth`` 0) and one
    item moved (with ``item_moves``), the two kinds taking turns."""
    items = list(value)
    whole: list[list[Any]] = []
    if depth == 0:
        whole = [items[1:], items[:-1], items[:1] + items, items[::-1], []]
        if len(items) >= 2:
            whole.append([items[1], items[0]] + items[2:])
    indices = sorted({0, len(items) - 1} if depth == 0 else {0}) if items and item_moves else []
    one_item = [items[:index] + [item] + items[index + 1:]
                for rank in range(_ITEM_NEIGHBOURS) for index in indices
                for item in _neighbours(items[index], depth + 1)[rank:rank + 1]]
    # The two kinds take turns, so that a cap on the calls keeps some of each.
    made = [m for pair in zip(whole, one_item) for m in pair]
    made += whole[len(one_item):] + one_item[len(whole):]
    return [type(value)(m) for m in made]


def _of_new_shapes(value: Any, candidates: list[Any]) -> list[Any]:
    """``candidates`` in order, without those of the same shape as ``value`` or an earlier one."""
    kept: list[Any] = []
    shapes = {_shape(value)}
    for item in candidates:
        shape = _shape(item)
        if shape not in shapes:
            shapes.add(shape)
            kept.append(item)
    return kept


def _neighbour_calls(call: _Call, item_moves: bool = True) -> Iterator[_Call]:
    """The calls next to ``call``: one argument, keyword or attribute of the receiver (on a copy of
    it) moved to a neighbouring value (``_neighbours``; ``item_moves``: a sequence's items moved too), the
    arguments taking turns."""
    first = 1 if call.receiver else 0
    slots: list[tuple[Any, Any]] = [(i, v) for i, v in enumerate(call.args) if i >= first]
    slots += list(call.kwargs.items())
    receiver = call.args[0] if call.receiver and call.args else None
    fields = (
        vars(receiver)
        if receiver is not None and hasattr(receiver, "__dict__") and not isinstance(receiver, type)
        else {}
    )
    slots += [("." + name, v) for name, v in sorted(fields.items()) if not name.startswith("__")]
    moves = [(slot, _neighbours(value, item_moves=item_moves)) for slot, value in slots]
    turns = max((len(values) for _, values in moves), default=0)
    # The arguments take turns: each one's first neighbour, then each one's second, and so on.
    for slot, neighbour in [(slot, values[turn]) for turn in range(turns) for slot, values in moves
                            if turn < len(values)]:
        args, kwargs = list(call.args), dict(call.kwargs)
        if isinstance(slot, int):
            args[slot] = neighbour
        elif slot.startswith("."):  # an attribute of the receiver, on a copy of it
            args[0] = copy.copy(args[0])
            setattr(args[0], slot[1:], neighbour)
        else:
            kwargs[slot] = neighbour
        yield _Call(args, kwargs, call.receiver)


def _kind_probes(call: _Call) -> Iterator[_Call]:
    """``call`` with one argument or keyword (not the receiver) replaced by a value of another kind
    (``_KIND_PROBES``: ``""`` unless it is a string, ``0`` unless it is a number): inputs that a
    function checking its arguments' types rejects, on which a candidate must reject them too."""
    first = 1 if call.receiver else 0
    slots: list[Any] = list(range(first, len(call.args))) + sorted(call.kwargs)
    for slot in slots:
        value = call.args[slot] if isinstance(slot, int) else call.kwargs[slot]
        for probe in _KIND_PROBES:
            if isinstance(value, str) if isinstance(probe, str) else isinstance(value, (int, float)):
                continue  # the same kind: not a probe
            args, kwargs = list(call.args), dict(call.kwargs)
            if isinstance(slot, int):
                args[slot] = probe
            else:
                kwargs[slot] = probe
            yield _Call(args, kwargs, call.receiver)

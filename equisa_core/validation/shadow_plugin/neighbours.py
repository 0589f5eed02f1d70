"""The shadow plugin's generated calls: deterministic neighbours of one argument, keyword or
attribute of the receiver at a time. Standard library only (it runs in the suite's interpreter)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from .calls import _Call, _shape


def _neighbours(value: Any) -> list[Any]:
    """Deterministic values next to ``value`` (see the module docstring), without ``value``."""
    out: list[Any] = []
    if isinstance(value, bool):
        out = [not value]
    elif isinstance(value, int):
        out = [value - 1, value + 1, 0, -value]
    elif isinstance(value, float):
        out = [value - 1.0, value + 1.0, 0.0]
    elif isinstance(value, str):
        out = [value[1:], value[:-1], "", value + value[-1:]]
    elif isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        items = list(value)
        made = [items[1:], items[:-1], items[:1] + items, items[::-1], []]
        if len(items) >= 2:
            made.append([items[1], items[0]] + items[2:])
        out = [type(value)(m) for m in made]
    elif type(value) is dict:
        keys = list(value)
        out = [{k: v for k, v in value.items() if k != key} for key in keys[:1] + keys[-1:]] + [{}]
    kept: list[Any] = []
    shapes = {_shape(value)}
    for item in out:
        shape = _shape(item)
        if shape not in shapes:
            shapes.add(shape)
            kept.append(item)
    return kept


def _neighbour_calls(call: _Call) -> Iterator[_Call]:
    """The calls next to ``call``: one argument, keyword or attribute of the receiver (on a copy of
    it) moved to a neighbouring value (``_neighbours``)."""
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
    for slot, value in slots:
        for neighbour in _neighbours(value):
            args, kwargs = list(call.args), dict(call.kwargs)
            if isinstance(slot, int):
                args[slot] = neighbour
            elif slot.startswith("."):  # an attribute of the receiver, on a copy of it
                args[0] = copy.copy(args[0])
                setattr(args[0], slot[1:], neighbour)
            else:
                kwargs[slot] = neighbour
            yield _Call(args, kwargs, call.receiver)

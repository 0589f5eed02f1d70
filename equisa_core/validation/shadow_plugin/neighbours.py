"""The shadow plugin's generated calls: one argument, keyword or attribute of the receiver at a time
moved to a neighbouring value, or, where the function checks its inputs, replaced by a value of
another kind. The values come from the core's input rules (``input_neighbours``: the shadow rule,
repeats told apart by the plugin's normalised repr, ``_shape``), which the differential test and
the test generator share; this module makes calls of them. The arguments take turns
(``_neighbour_calls``), so that a per-call cap leaves none of them unmoved. Standard library only
(it runs in the suite's interpreter)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from .calls import _Call, _shape
from .input_neighbours import SHADOW_RULE, kind_probes, neighbours

#: The shadow rule without a sequence's items moved: whole arguments only.
_WHOLE_ONLY = SHADOW_RULE._replace(item_moves=False)


def _neighbour_calls(call: _Call, item_moves: bool = True) -> Iterator[_Call]:
    """The calls next to ``call``: one argument, keyword or attribute of the receiver (on a copy of
    it) moved to a neighbouring value (``neighbours``, the shadow rule; ``item_moves``: a sequence's
    items moved too), the arguments taking turns."""
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
    rule = SHADOW_RULE if item_moves else _WHOLE_ONLY
    moves = [(slot, neighbours(value, rule, _shape)) for slot, value in slots]
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
    (``kind_probes``: ``""`` unless it is a string, ``0`` unless it is a number): inputs that a
    function checking its arguments' types rejects, on which a candidate must reject them too."""
    first = 1 if call.receiver else 0
    slots: list[Any] = list(range(first, len(call.args))) + sorted(call.kwargs)
    for slot in slots:
        value = call.args[slot] if isinstance(slot, int) else call.kwargs[slot]
        for probe in kind_probes(value):
            args, kwargs = list(call.args), dict(call.kwargs)
            if isinstance(slot, int):
                args[slot] = probe
            else:
                kwargs[slot] = probe
            yield _Call(args, kwargs, call.receiver)

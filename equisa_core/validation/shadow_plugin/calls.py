"""The shadow plugin's calls and outcomes: a call's arguments (copied, keyed, classed, shown), what
one call did, the comparison of two outcomes, and running a generator out on copies. Standard
library only (it runs in the suite's interpreter)."""

from __future__ import annotations

import copy
import hashlib
import re
import types
from collections.abc import Callable
from typing import Any

from .code_objects import _CO_VARARGS, _CO_VARKEYWORDS

_ADDRESS = re.compile(r" (?:object )?at 0x[0-9a-fA-F]+")
_MAX_SHAPE = 2000
_MAX_DEPTH = 6
#: A call's class of inputs (``_Call.relation``) is read from at most this many of its numbers, and
#: from the first this many items of each sequence.
_MAX_RELATION_NUMBERS = 8
_RELATION_ITEMS = 4


class _CallTimeout(BaseException):
    """A shadow call outlived its limit (a BaseException: the function's ``except Exception`` must
    not swallow it)."""


def _shape(value: Any, depth: int = 0, path: tuple[int, ...] = ()) -> str:
    """A normalised repr of ``value``: containers and objects' ``vars`` item by item, sets and
    dicts sorted, memory addresses removed. Never raises."""
    try:
        if depth > _MAX_DEPTH or id(value) in path:
            return "..."
        inner = path + (id(value),)
        if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
            return repr(value)[:_MAX_SHAPE]
        if isinstance(value, (list, tuple)):
            items = ", ".join(_shape(item, depth + 1, inner) for item in list(value)[:100])
            return "%s[%s]" % (type(value).__name__, items)
        if isinstance(value, (set, frozenset)):
            return "%s{%s}" % (
                type(value).__name__,
                ", ".join(sorted(_shape(item, depth + 1, inner) for item in value)),
            )
        if isinstance(value, dict):
            pairs = sorted(
                "%s: %s" % (_shape(k, depth + 1, inner), _shape(v, depth + 1, inner))
                for k, v in value.items()
            )
            return "%s{%s}" % (type(value).__name__, ", ".join(pairs))
        attributes = getattr(value, "__dict__", None)
        plain = not isinstance(value, (type, types.ModuleType, types.FunctionType))
        if isinstance(attributes, dict) and plain:
            pairs = sorted("%s=%s" % (k, _shape(v, depth + 1, inner)) for k, v in attributes.items())
            return "%s(%s)" % (type(value).__qualname__, ", ".join(pairs))
        return _ADDRESS.sub("", repr(value))[:_MAX_SHAPE]
    except Exception:
        return "<%s>" % type(value).__qualname__


def _same(before: Any, after: Any, before_shape: str, after_shape: str) -> bool:
    """Whether two returned values are the same: ``==``, else their normalised reprs."""
    try:
        if before is after or bool(before == after):
            return True
    except Exception:
        pass
    return before_shape == after_shape


def _short(text: str, size: int = 60) -> str:
    return text if len(text) <= size else text[: size - 3] + "..."


class _Call:
    """A call's arguments; ``receiver``: the first positional one is ``self`` or ``cls``."""

    def __init__(self, args: list[Any], kwargs: dict[str, Any], receiver: bool) -> None:
        self.args = args
        self.kwargs = kwargs
        self.receiver = receiver

    def copied(self) -> _Call:
        return _Call(*copy.deepcopy((self.args, self.kwargs)), receiver=self.receiver)

    def state(self) -> str:
        return _shape((self.args, self.kwargs))

    def key(self) -> str:
        """The call's inputs, receiver included, as one normalised text: calls with equal keys are the
        same call (a generated call equal to a failing test's call is judged as that call)."""
        shapes = [_shape(a) for a in self.args]
        shapes += ["%s=%s" % (k, _shape(v)) for k, v in sorted(self.kwargs.items())]
        return hashlib.sha1("\x00".join(shapes).encode("utf-8", "replace")).hexdigest()[:16]

    def relation(self) -> str:
        """The call's class of inputs: the arguments' types, and the signs of and order between the
        numbers it holds (``_numbers_of``, then ``_item_numbers_of``). Calls of one class take the
        same comparisons through the function: a generated call of a failing call's class lies where
        the failure is. Empty when the call holds fewer than two numbers (a class by sign alone would
        hold most inputs)."""
        values = list(self.args) + [v for _, v in sorted(self.kwargs.items())]
        numbers: list[float] = []
        for value in values:
            numbers.extend(_numbers_of(value))
        for value in values:  # then what the items hold: a record's fields tell calls apart too
            numbers.extend(_item_numbers_of(value))
        numbers = numbers[:_MAX_RELATION_NUMBERS]
        if len(numbers) < 2:  # no order between numbers: a class by sign alone is too wide to judge
            return ""
        signs = "".join("-" if n < 0 else "0" if n == 0 else "+" for n in numbers)
        order = "".join(
            "<" if a < b else "=" if a == b else ">" for i, a in enumerate(numbers) for b in numbers[i + 1 :]
        )
        types_ = ",".join(type(v).__name__ for v in values)
        return hashlib.sha1(("%s|%s|%s" % (types_, signs, order)).encode()).hexdigest()[:16]

    def shown(self, qualname: str) -> str:
        parts = [_short(_shape(a)) for a in self.args] + [
            "%s=%s" % (k, _short(_shape(v))) for k, v in self.kwargs.items()
        ]
        if self.receiver and parts:
            parts[0] = (
                "<%s>" % _short(_shape(self.args[0]), 50)
                if not isinstance(self.args[0], type)
                else (self.args[0].__name__)
            )
        return "%s(%s)" % (qualname, ", ".join(parts))


class _Outcome:
    """What one call did: its value (or, for a generator, its first items), the exception's type,
    whether it ran out of time, and its arguments' state after it."""

    def __init__(
        self,
        value: Any = None,
        raised: str | None = None,
        timed_out: bool = False,
        state: str = "",
        ended: str = "",
        seconds: float = 0.0,
    ) -> None:
        self.seconds = seconds  # how long the call took (0.0: not measured)
        self.value = value
        self.shape = _shape(value)
        self.raised = raised
        self.timed_out = timed_out
        self.state = state
        self.ended = ended  # a generator's end: "more", "exhausted" or "raised T"

    def kind(self) -> str:
        """``timeout``, ``raised:<type name>``, ``none``, or ``value:<type name>`` (a generator's
        items: ``value:list``)."""
        if self.timed_out:
            return "timeout"
        if self.raised is not None:
            return "raised:" + self.raised.rsplit(".", 1)[-1]
        if self.value is None and not self.ended:
            return "none"
        return "value:" + type(self.value).__name__

    def shown(self, now: bool = False) -> str:
        if self.timed_out:
            return "runs out of time" if now else "ran out of time"
        if self.raised is not None:
            return ("raises " if now else "raised ") + self.raised.rsplit(".", 1)[-1]
        if self.ended:
            return (
                ("yields " if now else "yielded ")
                + _short(self.shape, 80)
                + ("" if self.ended in ("more", "exhausted") else " then " + self.ended)
            )
        return ("returns " if now else "returned ") + _short(self.shape, 80)


def _exception_name(error: BaseException) -> str:
    kind = type(error)
    return "%s.%s" % (kind.__module__, kind.__qualname__)


def _compare(before: _Outcome, after: _Outcome) -> bool | None:
    """Whether the candidate's outcome differs from the original's; None when neither answered in
    time (nothing to compare)."""
    if before.timed_out:
        return None if after.timed_out else True
    if after.timed_out:
        return True
    if before.raised is not None or after.raised is not None:
        changed = before.raised != after.raised
    elif before.ended or after.ended:  # a generator: its items and its end, not its arguments
        return (
            before.ended != after.ended
            or len(before.value) != len(after.value)
            or not all(_same(a, b, _shape(a), _shape(b)) for a, b in zip(before.value, after.value))
        )
    else:
        changed = not _same(before.value, after.value, before.shape, after.shape)
    return changed or before.state != after.state


def _numbers_of(value: Any) -> list[float]:
    """The numbers a value holds, in order: itself (a number, not a bool); a sized value's length
    and its first items' numbers; a plain object's attributes' numbers, by name."""
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, (list, tuple, str, bytes)):
        found = [float(len(value))]
        if not isinstance(value, (str, bytes)):
            for item in list(value)[:_RELATION_ITEMS]:
                if isinstance(item, (int, float)) and not isinstance(item, bool):
                    found.append(float(item))
        return found
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict) and not isinstance(value, (type, types.ModuleType, types.FunctionType)):
        return [
            float(v)
            for _, v in sorted(attributes.items())
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        ]
    return []


def _item_numbers_of(value: Any) -> list[float]:
    """The numbers a sequence's first items hold inside them (``_numbers_of`` counts the items'
    own numbers): a text item's length; a sequence item's length, and its first items' numbers or
    lengths. ``(("May", "1"),)`` holds 2, 3 and 1."""
    found: list[float] = []
    if not isinstance(value, (list, tuple)):
        return found
    for item in list(value)[:_RELATION_ITEMS]:
        if isinstance(item, (str, bytes)):
            found.append(float(len(item)))
        elif isinstance(item, (list, tuple)):
            found.append(float(len(item)))
            for inner in list(item)[:_RELATION_ITEMS]:
                if isinstance(inner, (str, bytes, list, tuple)):
                    found.append(float(len(inner)))
                elif isinstance(inner, (int, float)) and not isinstance(inner, bool):
                    found.append(float(inner))
    return found


class _TargetFunctions:
    """The original and the candidate function of one intercepted definition."""

    def __init__(
        self, original: Callable[..., Any], candidate: Callable[..., Any] | None, generator: bool
    ) -> None:
        self.original = original
        self.candidate = candidate
        self.generator = generator


class _GeneratorRaised(Exception):
    """A generator raised after yielding ``items``."""

    def __init__(self, items: list[Any], name: str) -> None:
        super().__init__(name)
        self.items = items
        self.name = name


def _materialised(generator: Any, limit: int) -> tuple[list[Any], str]:
    """Up to ``limit`` items of ``generator`` and how it ended ("more" when it was not run out)."""
    items: list[Any] = []
    iterator = iter(generator)
    while len(items) < limit:
        try:
            items.append(next(iterator))
        except StopIteration:
            return items, "exhausted"
        except _CallTimeout:
            raise
        except Exception as error:
            raise _GeneratorRaised(items, _exception_name(error)) from None
    return items, "more"


def _bound(frame: types.FrameType, receiver: bool) -> _Call:
    """The arguments of a frame at its ``call`` event, as positional and keyword ones."""
    code = frame.f_code
    values = frame.f_locals
    names = code.co_varnames
    count, kwonly = code.co_argcount, code.co_kwonlyargcount
    args = [values[name] for name in names[:count]]
    kwargs = {name: values[name] for name in names[count : count + kwonly] if name in values}
    index = count + kwonly
    if code.co_flags & _CO_VARARGS:
        args += list(values[names[index]])
        index += 1
    if code.co_flags & _CO_VARKEYWORDS:
        kwargs.update(values[names[index]])
    return _Call(args, kwargs, receiver)


def _on_alarm(signum: int, frame: types.FrameType | None) -> None:
    raise _CallTimeout()

"""Shadow execution of a patch candidate inside the sandbox: a pytest plugin.

It runs under the suite's own interpreter (Python 3.8 to 3.13), which may have none of EQUISA's
libraries (no Hypothesis, no pydantic, no coverage.py): that is why it uses the standard library
and pytest only. ``tasks/validation/divergence.py`` writes this file into the run's repository copy as
``equisa_shadow.py``, loads it with ``PYTEST_PLUGINS=equisa_shadow`` and names its configuration
(a JSON file, ``EQUISA_SHADOW_CONFIG``): the target's file and qualified name, the candidate's text
of that file, the passing and failing tests, and the limits. Nothing runs at import but reading
that file.

The test runs the ORIGINAL program. Each call of the target is intercepted; its arguments (the
receiver of a method among them) are deep-copied before the call, the original runs as usual and
the test goes on with what it did; then the CANDIDATE's version of the function is called on the
copies and the two are compared: the value returned (``==`` where it works, else a repr without
memory addresses), the exception's type, the arguments' state after the call (a normalised repr,
``vars`` of objects), and a time-out (on the candidate only: changed). A call whose arguments
cannot be copied is ``uncomparable``; nothing of this ever fails the test.

The candidate's function is built without importing the patched module: its file's text is
compiled, the code object of the target's qualified name is found among the nested ``co_consts``
(``find_code``), and ``types.FunctionType(code, original.__globals__, ...)`` makes it, with cells
from the original's closure, or from the frame's free variables.

How calls are intercepted:

- module functions, methods, static and class methods, properties: the attribute is replaced by a
  wrapper once the target's module is imported (references to a module function held by other
  modules, ``from mod import f``, are replaced too); a generator function's wrapper returns a
  generator that records the items the test takes (up to ``max_items``);
- anything else (nested functions, functions reached through a decorator or a reference the
  wrapper missed): a ``sys.settrace`` hook matches frames of the original's code (file, first line,
  name) and takes the arguments from the frame's locals at the ``call`` event, the outcome at its
  ``return`` (after an ``exception`` event: raised); a generator frame is compared when it first
  starts, both versions rebuilt from code objects and materialised on copies.

Near each call made under a passing test, GENERATED calls: deterministic neighbours of one
argument, or of one attribute of the receiver, at a time (a number one off or 0; a sequence with
an element dropped or repeated, two swapped, reversed, empty; a string shortened or empty; a
boolean flipped; a dict with a key dropped or empty), on copies, both versions called and compared
the same way; capped per call and in total. A call whose outcomes differ is run once more on the
original (a control, on a fresh copy): an original that differs from itself (a clock, a counter, an
identity in its state) makes the call uncomparable, or unchanged when the candidate equals the
control. Every shadow call runs under ``call_limit_s`` (``setitimer`` in
the main thread; the probe's own per-test alarm is re-armed with what is left of it), and the
shadow calls of one test under ``test_budget_s`` in all.

The original function's lines and line-to-line arcs executed by the calls under passing tests are
recorded (by the same trace hook), and its executable lines are given, so coverage of the function
can be computed. Observations go, as JSON lines flushed one by one, to ``EQUISA_SHADOW_OUT`` or
else to the probe's output file (``--equisa-out``), the only file the host reads back::

    {"kind": "shadow-target", "found": true, "executable": [3, 4, 6]}   (or "found": false, "why": ...)
    {"kind": "shadow-call", "test": "...", "origin": "passing", "call": "recorded", "changed": false,
     "detail": ""}
    {"kind": "shadow-uncomparable", "test": "...", "why": "..."}
    {"kind": "shadow-lines", "executed": [3, 4], "arcs": [[3, 4]]}    (cumulative: the last one holds)

Not covered: async functions and async generators (not intercepted); a candidate that changes a
default argument's value (the original's defaults are used); side effects outside the arguments
(globals, files, class attributes changed through ``cls``) are neither compared nor undone.
"""

from __future__ import annotations

import copy
import dis
import functools
import hashlib
import json
import os
import re
import signal
import sys
import threading
import time
import types
from collections.abc import Callable, Generator, Iterator
from typing import IO, Any

import pytest

_monotonic = time.monotonic  # suites may mock time
_CO_GENERATOR = 0x20
_CO_VARARGS = 0x04
_CO_VARKEYWORDS = 0x08
_CO_ASYNC = 0x80 | 0x100 | 0x200  # coroutine, iterable coroutine, async generator
_FUNCTION_FLAGS = 0x01 | 0x02  # CO_OPTIMIZED | CO_NEWLOCALS: a function's code, not a class body's
_ADDRESS = re.compile(r" (?:object )?at 0x[0-9a-fA-F]+")
_MAX_SHAPE = 2000
_MAX_DEPTH = 6
#: A call's class of inputs (``_Call.relation``) is read from at most this many of its numbers, and
#: from the first this many items of each sequence.
_MAX_RELATION_NUMBERS = 8
_RELATION_ITEMS = 4
#: Inputs next to one failing call whose keys are written (they are only compared, never run).
_MAX_FAILING_NEIGHBOURS = 64
#: A candidate may take this many times the original's time on a call before it counts as looping.
_SLOWER = 5.0
_MARGIN_S = 0.5  # a shadow call is not started when the test has less than its limit plus this left
_RECEIVERS = ("self", "cls")


class _CallTimeout(BaseException):
    """A shadow call outlived its limit (a BaseException: the function's ``except Exception`` must
    not swallow it)."""


# ---------------------------------------------------------------------------------------------
# Code objects


def _code_tree(code: types.CodeType, prefix: str, in_class: bool,
               ) -> Iterator[tuple[str, types.CodeType, bool]]:
    """(qualified name, code, defined in a class body) of every function and class body nested in
    ``code``, in source order; lambdas and comprehensions are left out."""
    for const in code.co_consts:
        if not isinstance(const, types.CodeType) or const.co_name.startswith("<"):
            continue
        qualname = prefix + const.co_name
        yield qualname, const, in_class
        is_function = bool(const.co_flags & _FUNCTION_FLAGS == _FUNCTION_FLAGS)
        yield from _code_tree(const, qualname + (".<locals>." if is_function else "."), not is_function)


def find_code(text: str, filename: str, qualname: str) -> tuple[types.CodeType, bool] | None:
    """The code object of the function ``qualname`` in the module ``text`` (compiled, never run),
    and whether it is defined in a class body; the first definition when there are several (a
    property's getter before its setter). None when there is none."""
    module = compile(text, filename, "exec", dont_inherit=True)
    for name, code, in_class in _code_tree(module, "", False):
        if name == qualname and code.co_flags & _FUNCTION_FLAGS == _FUNCTION_FLAGS:
            return code, in_class
    return None


def _own_codes(code: types.CodeType) -> list[types.CodeType]:
    """``code`` and the comprehensions and lambdas nested in it (their lines are the function's)."""
    codes = [code]
    for const in code.co_consts:
        if isinstance(const, types.CodeType) and const.co_name.startswith("<"):
            codes += _own_codes(const)
    return codes


def executable_lines(code: types.CodeType) -> list[int]:
    """The lines of the function's body that hold instructions (the ``def`` line left out)."""
    lines: set[int] = set()
    for index, own in enumerate(_own_codes(code)):
        for _, line in dis.findlinestarts(own):
            if line is not None and (index > 0 or line != code.co_firstlineno):
                lines.add(line)
    return sorted(lines)


def _key(code: types.CodeType) -> tuple[str, int, str]:
    return os.path.realpath(code.co_filename), code.co_firstlineno, code.co_name


# ---------------------------------------------------------------------------------------------
# Values


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
            return "%s{%s}" % (type(value).__name__,
                               ", ".join(sorted(_shape(item, depth + 1, inner) for item in value)))
        if isinstance(value, dict):
            pairs = sorted("%s: %s" % (_shape(k, depth + 1, inner), _shape(v, depth + 1, inner))
                           for k, v in value.items())
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
        numbers it holds (``_numbers_of``). Calls of one class take the same comparisons through
        the function: a generated call of a failing call's class lies where the failure is. Empty
        when the call holds fewer than two numbers (a class by sign alone would hold most inputs)."""
        values = list(self.args) + [v for _, v in sorted(self.kwargs.items())]
        numbers: list[float] = []
        for value in values:
            numbers.extend(_numbers_of(value))
        numbers = numbers[:_MAX_RELATION_NUMBERS]
        if len(numbers) < 2:  # no order between numbers: a class by sign alone is too wide to judge
            return ""
        signs = "".join("-" if n < 0 else "0" if n == 0 else "+" for n in numbers)
        order = "".join("<" if a < b else "=" if a == b else ">"
                        for i, a in enumerate(numbers) for b in numbers[i + 1:])
        types_ = ",".join(type(v).__name__ for v in values)
        return hashlib.sha1(("%s|%s|%s" % (types_, signs, order)).encode()).hexdigest()[:16]

    def shown(self, qualname: str) -> str:
        parts = [_short(_shape(a)) for a in self.args] + ["%s=%s" % (k, _short(_shape(v)))
                                                          for k, v in self.kwargs.items()]
        if self.receiver and parts:
            parts[0] = "<%s>" % _short(_shape(self.args[0]), 50) if not isinstance(self.args[0], type) else (
                self.args[0].__name__)
        return "%s(%s)" % (qualname, ", ".join(parts))


class _Outcome:
    """What one call did: its value (or, for a generator, its first items), the exception's type,
    whether it ran out of time, and its arguments' state after it."""

    def __init__(self, value: Any = None, raised: str | None = None, timed_out: bool = False,
                 state: str = "", ended: str = "", seconds: float = 0.0) -> None:
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
            return ("yields " if now else "yielded ") + _short(self.shape, 80) + (
                "" if self.ended in ("more", "exhausted") else " then " + self.ended)
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
        return before.ended != after.ended or len(before.value) != len(after.value) or not all(
            _same(a, b, _shape(a), _shape(b)) for a, b in zip(before.value, after.value))
    else:
        changed = not _same(before.value, after.value, before.shape, after.shape)
    return changed or before.state != after.state


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
        return [float(v) for _, v in sorted(attributes.items())
                if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return []


def _neighbour_calls(call: _Call) -> Iterator[_Call]:
    """The calls next to ``call``: one argument, keyword or attribute of the receiver (on a copy of
    it) moved to a neighbouring value (``_neighbours``)."""
    first = 1 if call.receiver else 0
    slots: list[tuple[Any, Any]] = [(i, v) for i, v in enumerate(call.args) if i >= first]
    slots += list(call.kwargs.items())
    receiver = call.args[0] if call.receiver and call.args else None
    fields = vars(receiver) if receiver is not None and hasattr(receiver, "__dict__") and not isinstance(
        receiver, type) else {}
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


def _recorded_generator(generator: Any, record: _GeneratorRecord) -> Generator[Any, Any, Any]:
    """``generator``'s items as they come, each noted in ``record`` (send, throw and close go
    through); ``record`` is finished when it ends or is closed."""
    sent: Any = None
    thrown: BaseException | None = None
    try:
        while True:
            try:
                item = generator.throw(thrown) if thrown is not None else generator.send(sent)
            except StopIteration as stop:
                record.finish("exhausted")
                return stop.value
            except BaseException as error:
                record.finish("raised " + _exception_name(error))
                raise
            thrown = None
            record.add(item)
            try:
                sent = yield item
            except GeneratorExit:
                generator.close()
                raise
            except BaseException as error:
                thrown, sent = error, None
    finally:
        record.finish("more")


class _GeneratorRecord:
    """The items a test took from the original generator of one call, compared once it ends."""

    def __init__(self, shadow: _Shadow, call: _Call | None, state: _TargetFunctions) -> None:
        self.shadow = shadow
        self.call = call
        self.functions = state
        self.test = shadow.test
        self.origin = shadow.origin
        self.items: list[Any] = []
        self.done = False
        shadow.pending.append(self)

    def add(self, item: Any) -> None:
        if len(self.items) < self.shadow.config["max_items"]:
            self.items.append(item)

    def finish(self, ended: str) -> None:
        if self.done:
            return
        self.done = True
        if len(self.items) >= self.shadow.config["max_items"]:
            ended = "more"
        before = _Outcome(value=list(self.items), ended=ended)
        self.shadow.judge(self.call, before, self.functions, self.test, self.origin, items=len(self.items)
                          + (0 if ended == "more" else 1))


class _TargetFunctions:
    """The original and the candidate function of one intercepted definition."""

    def __init__(self, original: Callable[..., Any], candidate: Callable[..., Any] | None,
                 generator: bool) -> None:
        self.original = original
        self.candidate = candidate
        self.generator = generator


# ---------------------------------------------------------------------------------------------
# The plugin


class _Shadow:
    """The plugin's state over one session."""

    def __init__(self, config: dict[str, Any], out: IO[str] | None) -> None:
        self.config = config
        self.out = out
        self.qualname: str = config["qualname"]
        self.path = os.path.realpath(config["file"])
        self.passing = frozenset(config["passing"])
        self.test: str | None = None
        self.origin = "passing"
        self.depth = 0  # intercepted calls in progress: inner ones are the original's own business
        self.busy = False  # a shadow call runs: nothing is intercepted or recorded
        self.mode = "original"  # which version the wrapper gives while busy (a recursive call)
        self.spent = 0.0
        self.recorded = 0
        self.generated = 0
        self.seen_inputs: set[str] = set()
        self.executed: set[int] = set()
        self.arcs: set[tuple[int, int]] = set()
        self.written_lines = (0, 0)
        self.pending: list[_GeneratorRecord] = []
        self.started_frames: dict[int, Any] = {}
        self.wrapped = False  # the attribute was looked for
        self.installed = False  # a wrapper replaced it
        self.previous_trace: Any = None
        self.original_code: types.CodeType | None = None
        self.candidate_code: types.CodeType | None = None
        self.in_class = False
        self.key: tuple[str, int, str] | None = None
        self.own_keys: set[tuple[str, int, str]] = set()
        self.first_lines: set[int] = set()
        self._prepare()

    # -- output ---------------------------------------------------------------------------------

    def write(self, record: dict[str, Any]) -> None:
        if self.out is not None:
            self.out.write(json.dumps(record) + "\n")
            self.out.flush()

    def _prepare(self) -> None:
        try:
            with open(self.path, encoding="utf-8") as handle:
                original = find_code(handle.read(), self.path, self.qualname)
            candidate = find_code(self.config["candidate"], self.path + " (candidate)", self.qualname)
        except (OSError, SyntaxError, ValueError, UnicodeDecodeError) as error:
            why = "%s: %s" % (type(error).__name__, error)
            self.write({"kind": "shadow-target", "found": False, "why": why})
            return
        if original is None or candidate is None:
            which = "the original" if original is None else "the candidate"
            self.write({"kind": "shadow-target", "found": False,
                        "why": "%s has no function %s" % (which, self.qualname)})
            return
        self.original_code, self.in_class = original
        self.candidate_code = candidate[0]
        if self.original_code.co_flags & _CO_ASYNC:
            self.write({"kind": "shadow-target", "found": False, "why": "an async function is not compared"})
            self.original_code = None
            return
        self.key = _key(self.original_code)
        self.own_keys = {_key(c) for c in _own_codes(self.original_code)}
        self.first_lines = {k[1] for k in self.own_keys}
        lines = executable_lines(self.original_code)
        self.write({"kind": "shadow-target", "found": True, "executable": lines})

    # -- functions --------------------------------------------------------------------------------

    def candidate_like(self, original: types.FunctionType) -> types.FunctionType:
        """The candidate's function in the original's module: its globals, defaults, closure."""
        assert self.candidate_code is not None
        cells = {}
        for name, cell in zip(original.__code__.co_freevars, original.__closure__ or ()):
            cells[name] = cell
        return self._function(self.candidate_code, original.__globals__, original.__defaults__,
                              original.__kwdefaults__, cells)

    def _function(self, code: types.CodeType, module: dict[str, Any], defaults: tuple[Any, ...] | None,
                  kwdefaults: dict[str, Any] | None, cells: dict[str, Any]) -> types.FunctionType:
        closure = tuple(cells[name] if name in cells else types.CellType() for name in code.co_freevars)
        made = types.FunctionType(code, module, code.co_name, defaults, closure or None)
        made.__kwdefaults__ = kwdefaults
        made.__qualname__ = self.qualname
        return made

    def from_frame(self, frame: types.FrameType) -> _TargetFunctions:
        """Both versions rebuilt from their code, with the frame's globals and free variables."""
        assert self.original_code is not None and self.candidate_code is not None
        values = frame.f_locals
        cells = {name: types.CellType(values[name]) for name in frame.f_code.co_freevars if name in values}
        original = self._function(frame.f_code, frame.f_globals, None, None, cells)
        candidate = self._function(self.candidate_code, frame.f_globals, None, None, cells)
        return _TargetFunctions(original, candidate, bool(frame.f_code.co_flags & _CO_GENERATOR))

    # -- attributes -------------------------------------------------------------------------------

    def wrap(self) -> None:
        """Replace the target's attribute by a wrapper, once its module is imported."""
        if self.wrapped or self.original_code is None or "<locals>" in self.qualname:
            return
        module = next((m for m in list(sys.modules.values()) if self._is_target_module(m)), None)
        if module is None:
            return
        self.wrapped = True
        *outer, name = self.qualname.split(".")
        owner: Any = module
        for part in outer:
            owner = getattr(owner, part, None)
            if owner is None:
                return
        raw = vars(owner).get(name)
        made: Any = None
        if isinstance(raw, types.FunctionType) and self._matches(raw):
            made = self._wrapper(raw, receiver=bool(outer))
        elif isinstance(raw, staticmethod) and self._matches(raw.__func__):
            made = staticmethod(self._wrapper(raw.__func__, receiver=False))
        elif isinstance(raw, classmethod) and self._matches(raw.__func__):
            made = classmethod(self._wrapper(raw.__func__, receiver=True))
        elif isinstance(raw, property) and self._matches(raw.fget):
            made = property(self._wrapper(raw.fget, receiver=True), raw.fset, raw.fdel, raw.__doc__)
        if made is None:
            return  # decorated, or made at run time: the trace hook sees its frames
        setattr(owner, name, made)
        self.installed = True
        if owner is module:  # ``from module import f`` elsewhere
            for other in list(sys.modules.values()):
                namespace = getattr(other, "__dict__", None)
                if isinstance(namespace, dict) and other is not module:
                    for attribute, value in list(namespace.items()):
                        if value is raw:
                            namespace[attribute] = made

    def _is_target_module(self, module: Any) -> bool:
        file = getattr(module, "__file__", None)
        try:
            return isinstance(file, str) and os.path.realpath(file) == self.path
        except Exception:
            return False

    def _matches(self, function: Any) -> bool:
        return isinstance(function, types.FunctionType) and _key(function.__code__) == self.key

    def _wrapper(self, original: Any, receiver: bool) -> Callable[..., Any]:
        shadow = self
        candidate = self.candidate_like(original)
        functions = _TargetFunctions(original, candidate, bool(original.__code__.co_flags & _CO_GENERATOR))

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if shadow.busy:
                return (candidate if shadow.mode == "candidate" else original)(*args, **kwargs)
            if shadow.depth or shadow.test is None:
                return original(*args, **kwargs)
            real = _Call(list(args), kwargs, receiver)
            call = shadow.copy_of(real)
            if functions.generator:
                record = _GeneratorRecord(shadow, call, functions)
                return _recorded_generator(original(*args, **kwargs), record)
            shadow.depth += 1
            started = _monotonic()
            try:
                value = original(*args, **kwargs)
            except BaseException as error:
                shadow.depth -= 1
                shadow.after(call, real, _Outcome(raised=_exception_name(error), state=real.state(),
                                                  seconds=_monotonic() - started)
                             if type(error).__name__ != "TestTimeout" else None, functions)
                raise
            shadow.depth -= 1
            took = _monotonic() - started
            shadow.after(call, real, _Outcome(value=value, state=real.state(), seconds=took), functions)
            return value

        return wrapper

    # -- shadow calls -----------------------------------------------------------------------------

    def copy_of(self, call: _Call) -> _Call | None:
        self.busy = True
        try:
            return call.copied()
        except Exception:
            return None
        finally:
            self.busy = False

    def after(self, call: _Call | None, real: _Call, before: _Outcome | None,
              functions: _TargetFunctions) -> None:
        """Compare the candidate on ``call`` (copies made before the original ran on ``real``)."""
        if before is not None:
            self.judge(call, before, functions, self.test, self.origin)

    def judge(self, call: _Call | None, before: _Outcome, functions: _TargetFunctions, test: str | None,
              origin: str, items: int = 0) -> None:
        """One recorded call compared, then (under a passing test) its generated neighbours."""
        if test is None:
            return
        try:
            if call is None:
                self.uncomparable(test, "its arguments could not be copied")
                return
            if self.recorded >= self.config["max_recorded"]:
                return
            after = self.run(functions, call.copied(), "candidate", items, self.limit_after(before))
            if after is None:
                self.uncomparable(test, "no time left for a shadow call")
                return
            self.emit(test, origin, "recorded", call, before, after, functions, items)
            if origin == "passing":
                self.generate(call, functions, test)
            else:
                self.failing_neighbours(call, test)
        except Exception as error:
            self.uncomparable(test, "%s: %s" % (type(error).__name__, error))

    def emit(self, test: str, origin: str, kind: str, call: _Call, before: _Outcome, after: _Outcome,
             functions: _TargetFunctions, items: int) -> None:
        changed = _compare(before, after)
        if changed is None:
            self.uncomparable(test, "ran out of time on both versions")
            return
        if changed:
            # A control: the original once more, on a fresh copy. An original that differs from itself
            # (a clock, a counter, randomness, an identity in its state, or a copy that is not the
            # real thing) says nothing about the candidate: equal to the candidate, nothing changed;
            # else the call cannot be compared.
            control = self.run(functions, call.copied(), "original", items, self.limit_after(before))
            if control is not None and _compare(before, control):
                if _compare(control, after) is False:
                    changed = False
                else:
                    self.uncomparable(test, "the original's own outcome differs between two runs of the call")
                    return
        if kind == "recorded":
            self.recorded += 1
        detail = ""
        if changed:
            if before.shown() != after.shown(now=False):
                detail = "%s %s, now %s" % (call.shown(self.qualname), before.shown(), after.shown(now=True))
            else:
                detail = "%s left its arguments as %s, now as %s" % (
                    call.shown(self.qualname), _short(before.state, 100), _short(after.state, 100))
        self.write({"kind": "shadow-call", "test": test, "origin": origin, "call": kind,
                    "changed": changed, "detail": detail, "inputs": call.key(),
                    "before": before.kind(), "after": after.kind(), "relation": call.relation()})

    def uncomparable(self, test: str, why: str) -> None:
        self.write({"kind": "shadow-uncomparable", "test": test, "why": why})

    def generate(self, call: _Call, functions: _TargetFunctions, test: str) -> None:
        """Calls next to ``call`` (one argument changed), on both versions, compared."""
        made = 0
        limits = self.config
        for near in _neighbour_calls(call):
            if made >= limits["max_generated_per_call"] or self.generated >= limits["max_generated"]:
                return
            seen = near.state()
            if seen in self.seen_inputs:
                continue
            self.seen_inputs.add(seen)
            try:
                before = self.run(functions, near.copied(), "original", self.config["max_items"])
                if before is None:
                    return
                after = self.run(functions, near.copied(), "candidate", self.config["max_items"],
                                 self.limit_after(before))
            except Exception:
                continue
            if before is None or after is None:
                return
            made += 1
            self.generated += 1
            self.emit(test, "passing", "generated", near, before, after, functions, self.config["max_items"])

    def failing_neighbours(self, call: _Call, test: str) -> None:
        """The inputs next to a failing test's call (not run): the failure's own neighbourhood, where a
        fix is expected to change the function, so a generated call there is not held against it."""
        keys: list[str] = []
        for near in _neighbour_calls(call):
            if len(keys) >= _MAX_FAILING_NEIGHBOURS:
                break
            try:
                keys.append(near.key())
            except Exception:
                continue
        self.write({"kind": "shadow-failing-neighbours", "test": test, "inputs": keys})

    def limit_after(self, before: _Outcome) -> float:
        """The candidate's time limit on a call the original made in ``before.seconds``: the call limit,
        or ``_SLOWER`` times the original's time when that is longer (a slow call on a loaded
        machine is not a loop)."""
        return max(float(self.config["call_limit_s"]), _SLOWER * before.seconds)

    def run(self, functions: _TargetFunctions, call: _Call, mode: str, items: int,
            limit: float | None = None) -> _Outcome | None:
        """One version on ``call`` under the time limit (``limit``, by default the call limit); None
        when no time is left for it."""
        function = functions.candidate if mode == "candidate" else functions.original
        limit = float(self.config["call_limit_s"]) if limit is None else limit
        if (function is None or threading.current_thread() is not threading.main_thread()
                or not hasattr(signal, "setitimer") or self.spent >= self.config["test_budget_s"]):
            return None
        remaining = signal.getitimer(signal.ITIMER_REAL)[0]
        if remaining and remaining < limit + _MARGIN_S:
            return None
        previous = signal.getsignal(signal.SIGALRM)
        start = _monotonic()
        self.busy, self.mode = True, mode
        try:
            signal.signal(signal.SIGALRM, _on_alarm)
            signal.setitimer(signal.ITIMER_REAL, limit)
            try:
                value = function(*call.args, **call.kwargs)
                if functions.generator:
                    got, ended = _materialised(value, items)
                    return _Outcome(value=got, ended=ended, state=call.state(), seconds=_monotonic() - start)
                return _Outcome(value=value, state=call.state(), seconds=_monotonic() - start)
            except _CallTimeout:
                return _Outcome(timed_out=True)
            except BaseException as error:
                if isinstance(error, _GeneratorRaised):
                    return _Outcome(value=error.items, ended="raised " + error.name, state=call.state())
                return _Outcome(raised=_exception_name(error), state=call.state())
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except _CallTimeout:  # the alarm came as the call ended
            return _Outcome(timed_out=True)
        finally:
            signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
            elapsed = _monotonic() - start
            self.spent += elapsed
            if remaining:
                signal.setitimer(signal.ITIMER_REAL, max(remaining - elapsed, 0.001))
            self.busy, self.mode = False, "original"

    # -- the trace hook ---------------------------------------------------------------------------

    def tracer(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        """The global trace function: a local one for frames of the original's code."""
        code = frame.f_code
        if code.co_firstlineno not in self.first_lines or self.busy or self.test is None:
            return None
        key = _key(code)
        if key not in self.own_keys:
            return None
        passing = self.origin == "passing"
        intercept = key == self.key and self.depth == 0 and self.test is not None
        state: dict[str, Any] = {"last": None, "raised": None}
        if intercept and code.co_flags & _CO_GENERATOR:
            intercept = False
            if not self.installed and id(frame) not in self.started_frames:
                self.started_frames[id(frame)] = frame
                self._generator_frame(frame)
        elif intercept:
            receiver = self.in_class and code.co_argcount > 0 and code.co_varnames[0] in _RECEIVERS
            real = _bound(frame, receiver)
            state["real"], state["call"] = real, self.copy_of(real)
            state["functions"] = self.from_frame(frame)
            state["test"], state["origin"] = self.test, self.origin
            self.depth += 1

        def local(frame: types.FrameType, event: str, arg: Any) -> Any:
            if event == "line":
                line = frame.f_lineno
                if passing and not self.busy:
                    self.executed.add(line)
                    if state["last"] is not None:
                        self.arcs.add((state["last"], line))
                state["last"], state["raised"] = line, None
            elif event == "exception":
                state["raised"] = arg[1] if isinstance(arg, tuple) else arg
            elif event == "return" and "real" in state:
                self.depth -= 1
                real: _Call = state.pop("real")
                raised = state["raised"]
                if raised is not None and type(raised).__name__ == "TestTimeout":
                    return local
                before = _Outcome(raised=_exception_name(raised), state=real.state()) if raised is not None \
                    else _Outcome(value=arg, state=real.state())
                self.judge(state["call"], before, state["functions"], state["test"], state["origin"])
            return local

        return local

    def _generator_frame(self, frame: types.FrameType) -> None:
        """A nested generator's first start: both versions materialised on copies of its arguments."""
        code = frame.f_code
        receiver = self.in_class and code.co_argcount > 0 and code.co_varnames[0] in _RECEIVERS
        call = self.copy_of(_bound(frame, receiver))
        functions = self.from_frame(frame)
        test = self.test
        if call is None or test is None:
            if test is not None:
                self.uncomparable(test, "its arguments could not be copied")
            return
        before = self.run(functions, call.copied(), "original", self.config["max_items"])
        if before is None:
            self.uncomparable(test, "no time left for a shadow call")
            return
        self.judge(call, before, functions, test, self.origin, items=self.config["max_items"])

    # -- tests ------------------------------------------------------------------------------------

    def start_test(self, nodeid: str) -> None:
        self.wrap()
        self.test = nodeid
        self.origin = "passing" if nodeid in self.passing else "failing"
        self.spent = 0.0
        if self.original_code is not None:
            self.previous_trace = sys.gettrace()
            sys.settrace(self.tracer)

    def end_test(self) -> None:
        if self.original_code is not None:
            sys.settrace(self.previous_trace)
        for record in self.pending:
            record.finish("more")
        self.pending = []
        self.started_frames = {}
        self.test = None
        self.depth = 0
        self.write_lines()

    def write_lines(self) -> None:
        size = (len(self.executed), len(self.arcs))
        if size != self.written_lines:
            self.written_lines = size
            self.write({"kind": "shadow-lines", "executed": sorted(self.executed),
                        "arcs": sorted([a, b] for a, b in self.arcs)})


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
    kwargs = {name: values[name] for name in names[count:count + kwonly] if name in values}
    index = count + kwonly
    if code.co_flags & _CO_VARARGS:
        args += list(values[names[index]])
        index += 1
    if code.co_flags & _CO_VARKEYWORDS:
        kwargs.update(values[names[index]])
    return _Call(args, kwargs, receiver)


def _on_alarm(signum: int, frame: types.FrameType | None) -> None:
    raise _CallTimeout()


_SHADOW: _Shadow | None = None


def pytest_configure(config: Any) -> None:
    global _SHADOW
    path = os.environ.get("EQUISA_SHADOW_CONFIG")
    if not path:
        return
    with open(path, encoding="utf-8") as handle:
        settings = json.load(handle)
    out_path = os.environ.get("EQUISA_SHADOW_OUT")
    if not out_path:
        try:
            out_path = config.getoption("--equisa-out")
        except ValueError:
            out_path = None
    out = open(out_path, "a", encoding="utf-8") if out_path else None  # closed at unconfigure
    _SHADOW = _Shadow(settings, out)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_setup(item: Any) -> Iterator[None]:
    if _SHADOW is not None:
        _SHADOW.start_test(item.nodeid)
    yield


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_teardown(item: Any, nextitem: Any) -> Iterator[None]:
    yield
    if _SHADOW is not None:
        _SHADOW.end_test()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: Any) -> None:
    global _SHADOW
    if _SHADOW is not None:
        _SHADOW.write_lines()
        if _SHADOW.out is not None:
            _SHADOW.out.close()
        _SHADOW = None

"""The shadow plugin's state over one pytest session (``_Shadow``): the target's attribute wrapped,
the trace hook on the original's frames, the shadow calls run under their time limits, compared and
written as JSON lines. Standard library only (it runs in the suite's interpreter)."""

from __future__ import annotations

import functools
import json
import os
import signal
import sys
import threading
import time
import types
from collections.abc import Callable, Generator, Iterator
from typing import IO, Any

from .calls import (
    _bound,
    _Call,
    _CallTimeout,
    _compare,
    _exception_name,
    _GeneratorRaised,
    _materialised,
    _on_alarm,
    _Outcome,
    _short,
    _TargetFunctions,
)
from .code_objects import _CO_ASYNC, _CO_GENERATOR, _key, _own_codes, executable_lines, find_code
from .neighbours import _kind_probes, _neighbour_calls

_monotonic = time.monotonic  # suites may mock time
#: Inputs next to one failing call whose keys are written (they are only compared, never run).
_MAX_FAILING_NEIGHBOURS = 64
#: A candidate may take this many times the original's time on a call before it counts as looping.
_SLOWER = 5.0
_MARGIN_S = 0.5  # a shadow call is not started when the test has less than its limit plus this left
_RECEIVERS = ("self", "cls")


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
        self.shadow.judge(
            self.call,
            before,
            self.functions,
            self.test,
            self.origin,
            items=len(self.items) + (0 if ended == "more" else 1),
        )


def _attribute_path(module: Any, outer: list[str]) -> Any:
    """The object at the dotted path ``outer`` in ``module`` (a class, a nested class); None when a
    part is missing."""
    owner: Any = module
    for part in outer:
        owner = getattr(owner, part, None)
        if owner is None:
            return None
    return owner


def _replace_references(module: Any, raw: Any, made: Any) -> None:
    """Every other module's global bound to ``raw`` (``from module import f``) bound to ``made``."""
    for other in list(sys.modules.values()):
        namespace = getattr(other, "__dict__", None)
        if isinstance(namespace, dict) and other is not module:
            for attribute, value in list(namespace.items()):
                if value is raw:
                    namespace[attribute] = made


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
        self.failing_executed: set[int] = set()  # the lines the failing tests' calls ran
        self.arcs: set[tuple[int, int]] = set()
        self.written_lines = (0, 0, 0)
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
            self.write(
                {
                    "kind": "shadow-target",
                    "found": False,
                    "why": "%s has no function %s" % (which, self.qualname),
                }
            )
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
        return self._function(
            self.candidate_code, original.__globals__, original.__defaults__, original.__kwdefaults__, cells
        )

    def _function(
        self,
        code: types.CodeType,
        module: dict[str, Any],
        defaults: tuple[Any, ...] | None,
        kwdefaults: dict[str, Any] | None,
        cells: dict[str, Any],
    ) -> types.FunctionType:
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
        owner = _attribute_path(module, outer)
        if owner is None:
            return
        raw = vars(owner).get(name)
        made = self._wrapped_attribute(raw, in_class=bool(outer))
        if made is None:
            return  # decorated, or made at run time: the trace hook sees its frames
        setattr(owner, name, made)
        self.installed = True
        if owner is module:  # ``from module import f`` elsewhere
            _replace_references(module, raw, made)

    def _wrapped_attribute(self, raw: Any, in_class: bool) -> Any:
        """A wrapper in place of ``raw`` (a function, static or class method, or property of the
        target's code), wrapped the same way; None when ``raw`` is none of these."""
        if isinstance(raw, types.FunctionType) and self._matches(raw):
            return self._wrapper(raw, receiver=in_class)
        if isinstance(raw, staticmethod) and self._matches(raw.__func__):
            return staticmethod(self._wrapper(raw.__func__, receiver=False))
        if isinstance(raw, classmethod) and self._matches(raw.__func__):
            return classmethod(self._wrapper(raw.__func__, receiver=True))
        if isinstance(raw, property) and self._matches(raw.fget):
            return property(self._wrapper(raw.fget, receiver=True), raw.fset, raw.fdel, raw.__doc__)
        return None

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
                shadow.after(
                    call,
                    real,
                    _Outcome(
                        raised=_exception_name(error), state=real.state(), seconds=_monotonic() - started
                    )
                    if type(error).__name__ != "TestTimeout"
                    else None,
                    functions,
                )
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

    def after(
        self, call: _Call | None, real: _Call, before: _Outcome | None, functions: _TargetFunctions
    ) -> None:
        """Compare the candidate on ``call`` (copies made before the original ran on ``real``)."""
        if before is not None:
            self.judge(call, before, functions, self.test, self.origin)

    def judge(
        self,
        call: _Call | None,
        before: _Outcome,
        functions: _TargetFunctions,
        test: str | None,
        origin: str,
        items: int = 0,
    ) -> None:
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

    def emit(
        self,
        test: str,
        origin: str,
        kind: str,
        call: _Call,
        before: _Outcome,
        after: _Outcome,
        functions: _TargetFunctions,
        items: int,
        refused: bool = False,
    ) -> None:
        """Write one comparison; ``refused``: a probe the original rejected on purpose (its outcome is
        written ``refused:<type>``, a refusal to keep, not a crash that a candidate may answer)."""
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
                    call.shown(self.qualname),
                    _short(before.state, 100),
                    _short(after.state, 100),
                )
        self.write(
            {
                "kind": "shadow-call",
                "test": test,
                "origin": origin,
                "call": kind,
                "changed": changed,
                "detail": detail,
                "inputs": call.key(),
                "before": before.kind().replace("raised:", "refused:", 1) if refused else before.kind(),
                "after": after.kind(),
                "relation": call.relation(),
            }
        )

    def uncomparable(self, test: str, why: str) -> None:
        self.write({"kind": "shadow-uncomparable", "test": test, "why": why})

    def generate(self, call: _Call, functions: _TargetFunctions, test: str) -> None:
        """Calls next to ``call`` (one argument changed), on both versions, compared; then, where the
        function raises some exceptions on purpose (``on_purpose`` in the configuration: it checks
        its inputs), ``call`` with one argument of another kind (``_kind_probes``): a probe the
        original rejects with one of them is compared, and a candidate that stops rejecting it has
        widened what the function accepts beyond the failing tests' inputs."""
        per_call = self.config["max_generated_per_call"]
        self._compare_generated(_neighbour_calls(call), functions, test, per_call)
        rejected = frozenset(self.config.get("on_purpose") or ())
        if rejected:
            self._compare_generated(_kind_probes(call), functions, test, None, rejected)

    def _compare_generated(self, calls: Iterator[_Call], functions: _TargetFunctions, test: str,
                           cap: int | None, rejected: frozenset[str] | None = None) -> None:
        """Each of ``calls`` not seen before on both versions, compared, at most ``cap`` of them (None:
        only the run's cap); with ``rejected``, only those the original rejects with one of them."""
        made = 0
        items = self.config["max_items"]
        for near in calls:
            if (cap is not None and made >= cap) or self.generated >= self.config["max_generated"]:
                return
            seen = near.state()
            if seen in self.seen_inputs:
                continue
            self.seen_inputs.add(seen)
            try:
                before = self.run(functions, near.copied(), "original", items)
                if before is None:
                    return
                if rejected is not None and (before.raised is None
                                             or before.raised.rsplit(".", 1)[-1] not in rejected):
                    continue  # accepted, or rejected by accident: not what the function checks
                after = self.run(functions, near.copied(), "candidate", items, self.limit_after(before))
            except Exception:
                continue
            if after is None:
                return
            made += 1
            self.generated += 1
            self.emit(test, "passing", "generated", near, before, after, functions, items,
                      refused=rejected is not None)

    def failing_neighbours(self, call: _Call, test: str) -> None:
        """The inputs next to a failing test's call (not run): the failure's own neighbourhood, where a
        fix is expected to change the function, so a generated call there is not held against it."""
        keys: list[str] = []
        # Whole arguments moved only: the failure's neighbourhood stays as narrow as a step of one
        # argument; a call with one item of a sequence moved is evidence, never excused.
        for near in _neighbour_calls(call, item_moves=False):
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

    def run(
        self, functions: _TargetFunctions, call: _Call, mode: str, items: int, limit: float | None = None
    ) -> _Outcome | None:
        """One version on ``call`` under the time limit (``limit``, by default the call limit); None
        when no time is left for it."""
        function = functions.candidate if mode == "candidate" else functions.original
        limit = float(self.config["call_limit_s"]) if limit is None else limit
        if (
            function is None
            or threading.current_thread() is not threading.main_thread()
            or not hasattr(signal, "setitimer")
            or self.spent >= self.config["test_budget_s"]
        ):
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
                elif not self.busy:
                    self.failing_executed.add(line)
                state["last"], state["raised"] = line, None
            elif event == "exception":
                state["raised"] = arg[1] if isinstance(arg, tuple) else arg
            elif event == "return" and "real" in state:
                self.depth -= 1
                real: _Call = state.pop("real")
                raised = state["raised"]
                if raised is not None and type(raised).__name__ == "TestTimeout":
                    return local
                before = (
                    _Outcome(raised=_exception_name(raised), state=real.state())
                    if raised is not None
                    else _Outcome(value=arg, state=real.state())
                )
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
        size = (len(self.executed), len(self.arcs), len(self.failing_executed))
        if size != self.written_lines:
            self.written_lines = size
            self.write(
                {
                    "kind": "shadow-lines",
                    "executed": sorted(self.executed),
                    "failing_executed": sorted(self.failing_executed),
                    "arcs": sorted([a, b] for a, b in self.arcs),
                }
            )

"""EQUISA's input search (a driver: run once in the sandbox, never kept).

Not imported by EQUISA: ``input_search.search_driver_module`` writes this file's text into the run's
repository copy, with the searched file (``_TARGET``), ``_MAX_PROPERTIES`` and the rebuild helpers
(``rebuild_helpers.py``, in place of their import) filled in, and appends one driver test per
searched function or class (``_search``, ``_sequence``, ``_crosshair``). It runs under the suite's
interpreter, so it keeps to what Python 3.8 runs. Hypothesis seeds each search from the source of
its ``attempt`` function (``derandomize=True``): those two functions keep their text, typed by
comments only, so the same inputs are drawn as before.
"""

from __future__ import annotations

import ast
import copy
import datetime  # noqa: F401  (the strategies' bounds are datetime values)
import decimal
import enum
import functools
import itertools
import json
import operator  # the steps' operations, and the callables drawn (``operator.add``, ``itemgetter(0)``)
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

try:
    import coverage
    import hypothesis
except ImportError:  # the suite has none: EQUISA's own (read-only in the sandbox)
    sys.path.append(os.environ.get("EQUISA_COVERAGE_PATH", ""))
    import coverage
    import hypothesis  # noqa: F401
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from equisa_core.testgen.rebuild_helpers import _BUILD_NAMES  # the host inlines the helpers' code here

_MAX_PROPERTIES = 16  # the host writes ``input_search.MAX_PROPERTIES`` here
_TARGET = os.path.abspath("")  # the host writes the searched file here
_BUILT: dict[int, tuple[Any, str]] = {}  # id -> (object, its build), the object kept so the id stays its


def _rebuild(text: str) -> Any:
    """A fresh object from a recorded build (checked against the build grammar by the host)."""
    value = eval(text, _BUILD_NAMES)
    _BUILT[id(value)] = (value, text)
    return value


def _callable(text: str) -> Any:
    """A fresh callable from one of the host's texts (``callable_inputs``: a builtin, an ``operator``
    function, a lambda, a documented function the host appends here), its text kept for ``_source``."""
    value = eval(text, globals())
    _BUILT[id(value)] = (value, text)
    return value


#: id -> (value, its name in the module): the enum members and classes drawn (``_named``).
_NAMED: dict[int, tuple[Any, str]] = {}
#: The module's names the drawn values start from (``DocstringStyle``): what the host imports.
_NAMES: set[str] = set()


def _named(text: str) -> Any:
    """The value the searched module names ``text`` (``DocstringStyle.GOOGLE``, a class), its text
    kept for ``_source``."""
    module = vars(globals()["_target"])
    value = eval(text, module)
    _NAMED[id(value)] = (value, text)
    root = text.split(".", 1)[0]
    if root in module:
        _NAMES.add(root)
    return value


def _members(owner: str, default: str | None) -> st.SearchStrategy[Any]:
    """All the members of the enum the module names ``owner``, each shown ``owner.MEMBER``; when
    ``owner`` names no enum, ``default`` (the parameter's default) alone, or nothing without one."""
    try:
        cls = eval(owner, vars(globals()["_target"]))
    except Exception:
        cls = None
    if isinstance(cls, type) and issubclass(cls, enum.Enum) and list(cls):
        return st.sampled_from([f"{owner}.{member.name}" for member in cls]).map(_named)
    return st.just(default).map(_named) if default is not None else st.nothing()


def _classes(names: Sequence[str], shape: str) -> st.SearchStrategy[Any]:
    """Collections (``shape``: tuple, list or set) of up to 3 of the classes ``names`` and of the
    module's other public classes of one of their bases (or of them), each shown by its name."""
    module = vars(globals()["_target"])
    found = []
    for name in names:
        try:
            found.append(eval(name, module))
        except Exception:
            continue
    kinds = [c for c in found if isinstance(c, type)]
    bases = {b for c in kinds for b in c.__bases__ if b is not object} | set(kinds)
    others = sorted(n for n, v in module.items()
                    if isinstance(v, type) and not n.startswith("_") and any(issubclass(v, b) for b in bases))
    pool = list(dict.fromkeys([*names, *others]))[:8]
    made = {"tuple": tuple, "list": list, "set": set}.get(shape, tuple)
    drawn = st.lists(st.sampled_from(pool).map(_named), max_size=min(3, len(pool)), unique=True)
    return drawn.map(made) if found else st.nothing()


class _Keyword:
    """A keyword-only argument drawn (``_keyword``): passed by name (``_by_name``), shown as
    ``name=value``; the name "" for one left out (shown as "", which the host drops)."""

    def __init__(self, name: str, value: Any) -> None:
        self.name, self.value = name, value


def _keyword(name: str, strategy: st.SearchStrategy[Any], required: bool) -> st.SearchStrategy[Any]:
    """The strategy of the keyword-only parameter ``name``: always passed when ``required``, else
    left out or passed."""
    passed = strategy.map(functools.partial(_Keyword, name))
    return passed if required else st.one_of(st.just(_Keyword("", None)), passed)


def _by_name(function: Any) -> Any:
    """``function`` called with the ``_Keyword``s among its arguments passed by name."""
    if function is None:
        return None

    def call(*args: Any) -> Any:
        keywords = {a.name: a.value for a in args if isinstance(a, _Keyword) and a.name}
        return function(*[a for a in args if not isinstance(a, _Keyword)], **keywords)

    return call


def _construct(cls: Any, name: str, args: tuple[Any, ...]) -> Any:
    """Another object of a searched class (what its ``==`` and ``hash()`` steps compare it with),
    made by ``cls`` (the class or its factory, ``name``) from drawn arguments, its text that call;
    None when the call raises."""
    try:
        made = _by_name(cls)(*args)
    except Exception:
        return None
    _BUILT[id(made)] = (made, f"{name}({', '.join(t for t in map(_source, args) if t)})")
    return made


def _source(value: Any) -> str:
    """A value's text: the build it was rebuilt from, else its repr, with ``decimal.Decimal`` for the
    decimals inside; a keyword-only argument as ``name=value``."""
    if isinstance(value, _Keyword):
        return f"{value.name}={_source(value.value)}" if value.name else ""
    named = _NAMED.get(id(value))
    if named is not None and named[0] is value:
        return named[1]
    built = _BUILT.get(id(value))
    if built is not None and built[0] is value:
        return built[1]
    if isinstance(value, decimal.Decimal):
        return f"decimal.Decimal({str(value)!r})"
    if type(value) in (list, tuple, set, frozenset) and any(
        isinstance(v, decimal.Decimal) or id(v) in _NAMED for v in value
    ):
        items = ", ".join(_source(v) for v in value)
        shapes: dict[type, str] = {list: "[%s]", tuple: "(%s,)", set: "{%s}", frozenset: "frozenset({%s})"}
        return shapes[type(value)] % items
    if type(value) is dict and any(isinstance(v, decimal.Decimal) for v in value.values()):
        return "{" + ", ".join(f"{_source(k)}: {_source(v)}" for k, v in value.items()) + "}"
    return repr(value)


_COV = coverage.Coverage(branch=True, include=[_TARGET], data_file=None, config_file=False)
#: Seconds one call of the original or of a mutant may take while they are compared.
_MUTANT_CALL_S = 0.25


class _Slow(BaseException):
    """A compared call ran out of its time (a BaseException: the function's ``except Exception``
    does not swallow it)."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Slow()


def _mutant(function: Callable[..., object], source: str) -> Callable[..., object] | None:
    """``source`` (a mutant of ``function``: the whole mutated ``def``) made in a copy of the
    function's module globals, where a recursive call reaches the mutant; None when it does not
    compile or define the name. Compiled under another file name, so coverage does not count it."""
    namespace = dict(getattr(function, "__globals__", {}))
    try:
        exec(compile(source, "<equisa-mutant>", "exec"), namespace)
    except Exception:
        return None
    made = namespace.get(getattr(function, "__name__", ""))
    return made if callable(made) and made is not function else None


def _mutant_method(owner: Any, method: str, source: str) -> Any:
    """A mutant of ``owner``'s ``method`` (its mutated ``def``, decorators included, at column 0)
    made in a copy of the module's globals: what to swap into the class; None when it does not
    compile, or needs what a ``def`` outside its class lacks (``super()``, a private ``__name``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    if "super(" in source or "__class__" in source or any(
        isinstance(node, ast.Attribute) and node.attr.startswith("__") and not node.attr.endswith("__")
        for node in ast.walk(tree)
    ):
        return None
    module = sys.modules.get(getattr(owner, "__module__", ""), None)
    namespace = dict(vars(module)) if module is not None else {}
    try:
        exec(compile(source, "<equisa-mutant>", "exec"), namespace)
    except Exception:
        return None
    return namespace.get(method)


def _plain(value: Any) -> str:
    """A value's text for comparing two outcomes: its source, or its type for an object whose text
    holds an address (two equal objects would differ)."""
    text = _source(value)
    return type(value).__name__ if " at 0x" in text else text


def _outcome(function: Callable[..., object], args: tuple[Any, ...]) -> str | None:
    """What ``function`` does on a deep copy of ``args``, as a text (its value or exception, and the
    arguments after it; "timeout"); None when the arguments do not copy or no alarm can limit the
    call (``_limited``)."""
    try:
        copied = copy.deepcopy(args)
    except Exception:
        return None

    def call() -> str:
        try:
            return "value:" + _plain(function(*copied))
        except Exception as error:  # not _Slow, a BaseException: the time-out is _limited's
            return "raised:" + type(error).__name__

    done, shown = _limited(_MUTANT_CALL_S, call)
    if not done:
        return "timeout" if shown == "timeout" else None
    return str(shown) + "|" + _plain(list(copied))


class _Killer:
    """``function`` as the search calls it, and after each call its surviving mutants on a copy of
    the same input (coverage paused): an input on which a mutant does otherwise (another value or
    exception, other arguments left, a time-out) than the original is kept (``found``), with the
    mutants it tells apart, and those are not tried again."""

    def __init__(self, function: Callable[..., object], mutants: Sequence[tuple[str, Any]],
                 deadline: float) -> None:
        self.function = function
        self.alive = {name: made for name, made in mutants if made is not None}
        self.deadline = deadline
        self.found: list[dict[str, Any]] = []

    def __call__(self, *args: Any) -> object:
        shown = [_source(a) for a in args] if self.alive else []
        before: tuple[Any, ...] | None = None
        if self.alive:
            try:
                before = copy.deepcopy(args)
            except Exception:
                before = None
        try:
            return self.function(*args)
        finally:
            if before is not None and time.monotonic() < self.deadline:
                _COV.stop()
                try:
                    self._compare(before, shown)
                finally:
                    _COV.start()

    def _compare(self, args: tuple[Any, ...], shown: list[str]) -> None:
        expected = _outcome(self.function, args)
        if expected is None or expected == "timeout":
            return
        told = [name for name, made in self.alive.items() if _outcome(made, args) not in (None, expected)]
        if not told:
            return
        for name in told:
            del self.alive[name]
        raised = expected.split("|", 1)[0][len("raised:"):] if expected.startswith("raised:") else None
        self.found.append({"args": shown, "raised": raised, "kills": told})


class _Observed:
    """The searched function as ``attempt`` calls it, each outcome kept by its arguments' texts: the
    host writes the tests of inputs holding callables from these (the probe cannot record a
    lambda). With ``applied``, the function's result (a decorator) is called with the last argument."""

    def __init__(self, function: Callable[..., Any], applied: bool) -> None:
        self.function, self.applied = function, applied
        self.outcomes: dict[tuple[str, ...], dict[str, Any]] = {}

    def __call__(self, *args: Any) -> Any:
        outcome: dict[str, Any] = {}
        self.outcomes[tuple(_source(a) for a in args)] = outcome
        try:
            result = self.function(*args[:-1])(args[-1]) if self.applied else self.function(*args)
        except Exception as error:
            outcome["raised_module"] = type(error).__module__
            raise
        outcome["result"], outcome["literal"] = _shown(result)
        outcome["literal"] = outcome["literal"] and not _hash_ordered(result)
        if callable(result) and not isinstance(result, type):
            outcome["callable"] = True
            doc = getattr(result, "__doc__", None)
            outcome["doc"] = repr(doc) if isinstance(doc, str) else None
        return result


def _search(
    pytestconfig: Any,
    qualname: str,
    typed: bool,
    function: Callable[..., object],
    strategy: st.SearchStrategy[tuple[Any, ...]],
    seeds: Sequence[tuple[Any, ...]],
    max_examples: int,
    seconds: float,
    mutants: Sequence[tuple[str, str]] = (),
    applied: bool = False,
) -> None:
    """Draw inputs of ``function`` and keep those that reach new arcs or raise anew; with
    ``mutants`` (name, mutated source), also those on which a surviving mutant does otherwise; with
    ``applied``, the function's result is called with the last argument drawn."""
    started = time.monotonic()
    compared = [] if applied else [(name, _by_name(_mutant(function, text))) for name, text in mutants]
    function = _by_name(function)
    killer = _Killer(function, compared, started + seconds)
    if killer.alive:
        function = killer
    observed = _Observed(function, applied)
    function = observed
    arcs: set[tuple[int, int]] = set()
    kept: list[dict[str, Any]] = []
    count = [0]
    exceptions: set[str | None] = set()

    def attempt(args):  # type: (tuple[Any, ...]) -> None
        if time.monotonic() - started > seconds:
            return
        count[0] += 1
        shown = [_source(a) for a in args]
        raised = None
        _COV.start()
        try:
            function(*args)
        except Exception as error:
            raised = type(error).__name__
        finally:
            _COV.stop()
        reached = set(_COV.get_data().arcs(_TARGET) or ())
        if reached - arcs or (raised is not None and raised not in exceptions):
            arcs.update(reached)
            exceptions.add(raised)
            kept.append({"args": shown, "raised": raised})

    run = given(strategy)(attempt)
    for seed in reversed(seeds):
        run = example(seed)(run)
    run = _settings(max_examples)(run)
    record: dict[str, Any] = {"kind": "testgen-search", "qualname": qualname, "typed": typed, "kept": kept}
    try:
        run()
    except Exception as error:  # Hypothesis itself (a strategy it cannot draw from)
        record["error"] = f"{type(error).__name__}: {str(error)[:300]}"
    kept.extend(killer.found)
    for entry in kept:
        entry.update(observed.outcomes.get(tuple(entry["args"]), {}))
    record.update(examples=count[0], arcs=len(arcs), mutants=len(compared), applied=applied,
                  names=sorted(_NAMES))
    _write(pytestconfig, record)


def _settings(max_examples: int) -> settings:
    """The searches' settings: the same inputs on every run, no database, no deadline."""
    return settings(
        max_examples=max_examples,
        database=None,
        derandomize=True,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )


def _write(pytestconfig: Any, record: dict[str, Any]) -> None:
    out = pytestconfig.getoption("--equisa-out", default=None)
    if out:
        with open(out, "a", encoding="utf-8") as stream:
            stream.write(json.dumps(record) + "\n")


def _shown(value: Any) -> tuple[str, bool]:
    """(text, whether it is a literal) of a result."""
    text = _source(value)
    try:
        ast.literal_eval(text)
    except Exception:
        return text[:200], False
    return text, True


def _state(obj: Any) -> dict[str, str]:
    """What a test can observe of an object after its calls, each as a literal (name -> repr):
    ``len(obj)``, ``list(obj)`` (20 items at most), ``repr(obj)`` and ``str(obj)`` when its class
    writes them, its public attributes and the values of its classes' public properties (any
    descriptor that is not a method: ``property``, ``cached_property``, a class's own)."""
    state: dict[str, str] = {}
    cls: Any = type(obj)

    def observe(key: str, read: Callable[[], object]) -> None:
        try:
            shown, literal = _shown(read())
        except Exception:
            return
        if literal and len(shown) <= 80 and " at 0x" not in shown:
            state[key] = shown

    observe("len(obj)", lambda: len(obj))
    if getattr(cls, "__iter__", None) is not None:
        observe("list(obj)", lambda: _all_items(obj))
    if cls.__repr__ is not object.__repr__:
        observe("repr(obj)", lambda: repr(obj))
    if cls.__str__ is not object.__str__ and cls.__str__ is not cls.__repr__:
        observe("str(obj)", lambda: str(obj))
    for name, value in sorted(getattr(obj, "__dict__", {}).items())[:8]:
        if not name.startswith("_"):
            observe("obj." + name, functools.partial(_same, value))
    for name in _properties(cls)[:_MAX_PROPERTIES]:
        observe("obj." + name, functools.partial(getattr, obj, name))
    return state


def _same(value: object) -> object:
    return value


def _properties(cls: type) -> list[str]:
    """The public descriptors of ``cls`` and its bases that are not methods, the first class naming
    a member winning, as attribute lookup does."""
    properties: list[str] = []
    named: set[str] = set()
    for klass in cls.__mro__[:-1]:
        for name, member in vars(klass).items():
            if name.startswith("_") or name in named:
                continue
            named.add(name)
            if isinstance(member, (staticmethod, classmethod)) or callable(member):
                continue
            if hasattr(type(member), "__get__"):
                properties.append(name)
    return properties


def _hash_ordered(obj: Any, depth: int = 0) -> bool:
    """Whether ``obj`` holds (itself, or two levels down) a set of anything but numbers: its order,
    and so its repr, its items' order, what it pops and what is left after, change with
    ``PYTHONHASHSEED`` (pinned in the sandbox, not for the user running the tests)."""
    if isinstance(obj, (set, frozenset)):
        return any(not isinstance(item, (int, float, type(None))) for item in obj)
    if depth >= 2:
        return False
    values: list[Any]
    if isinstance(obj, (list, tuple)):
        values = list(obj[:50])
    elif isinstance(obj, dict):
        values = list(obj.values())[:50]
    else:
        values = list(getattr(obj, "__dict__", {}).values())[:50]
        for klass in type(obj).__mro__:
            names = vars(klass).get("__slots__", ())
            values += [getattr(obj, n, None) for n in ([names] if isinstance(names, str) else names)]
    return any(_hash_ordered(value, depth + 1) for value in values)


def _all_items(obj: Any) -> list[Any]:
    items = list(itertools.islice(iter(obj), 21))
    if len(items) > 20:
        raise ValueError("too many items to assert")
    return items


def _crosshair(pytestconfig: Any, module: str, qualname: str, seconds: float) -> None:
    """``crosshair cover`` on one function, in a child process: its inputs, one per path it covered."""
    import subprocess

    inputs: list[list[str]] = []
    record: dict[str, Any] = {"kind": "testgen-crosshair", "qualname": qualname, "inputs": inputs}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "crosshair",
                "cover",
                f"{module}.{qualname}",
                "--example_output_format",
                "arg_dictionary",
                "--per_condition_timeout",
                str(seconds),
            ],
            capture_output=True,
            text=True,
            timeout=4 * seconds + 60,
            env=env,
        )
    except subprocess.TimeoutExpired:
        record["error"] = f"crosshair cover did not end in {4 * seconds + 60:g}s"
        _write(pytestconfig, record)
        return
    for line in done.stdout.splitlines():
        try:  # CrossHair writes shared values with ``:=`` (``[v1:=(0, 0), v1]``): evaluated, in the sandbox
            arguments = eval(line.strip(), {"__builtins__": {}}, {})
        except Exception:
            continue
        if isinstance(arguments, dict):
            inputs.append([_source(v) for v in arguments.values()])
    if done.returncode not in (0, 1) and not inputs:
        record["error"] = f"crosshair cover exited {done.returncode}: {done.stderr.strip()[-300:]}"
    _write(pytestconfig, record)


_OPERATIONS: dict[str, Callable[..., Any]] = {
    "__getitem__": lambda o, a: o[a],
    "__contains__": lambda o, a: a in o,
    "__eq__": lambda o, a: o == a,
    "__hash__": lambda o, a: hash(o) == hash(a),
    "__lt__": lambda o, a: o < a,
    "__le__": lambda o, a: o <= a,
    "__gt__": lambda o, a: o > a,
    "__ge__": lambda o, a: o >= a,
    "__and__": lambda o, a: o & a,
    "__or__": lambda o, a: o | a,
    "__xor__": lambda o, a: o ^ a,
    "__sub__": lambda o, a: o - a,
    "__add__": lambda o, a: o + a,
    "__invert__": lambda o: ~o,
    "__reversed__": lambda o: list(reversed(o)),
    "__len__": len, "__iter__": list, "__setitem__": operator.setitem, "__delitem__": operator.delitem,
}


def _step(obj: Any, name: str, args: Sequence[Any]) -> Any:
    if _WATCHING:  # the sequence under way is also replayed against the class's surviving mutants
        _WATCHING[-1].step(name, args)
    return _apply(obj, name, args)


def _apply(obj: Any, name: str, args: Sequence[Any]) -> Any:
    operation = _OPERATIONS.get(name)
    return operation(obj, *args) if operation is not None else _by_name(getattr(obj, name))(*args)


def _played(cls: Callable[..., Any], init_args: tuple[Any, ...], calls: list[tuple[str, tuple[Any, ...]]],
            ) -> dict[str, Any]:
    """A sequence made again on copies of its arguments, recorded as the search records a kept one
    (results, what ended it, the state left); one alarm limits the whole sequence. It repeats the
    body of ``_sequence``'s ``attempt``, whose text must stay as it is: Hypothesis seeds its draws
    from it (``derandomize=True``), and a change would change every searched class's tests."""
    init_args, calls = copy.deepcopy((init_args, calls))
    made = {"init": [_source(a) for a in init_args], "steps": [], "raised": None}  # type: dict[str, Any]
    unordered = False
    try:
        obj = cls(*init_args)
        for name, args in calls:
            step = {"method": name, "args": [_source(a) for a in args]}  # type: dict[str, Any]
            made["steps"].append(step)
            try:
                unordered = unordered or _hash_ordered(obj)
                step["result"], step["literal"] = _shown(_apply(obj, name, args))
                step["literal"] = step["literal"] and not unordered
            except Exception as error:
                step["raised"], step["raised_module"] = type(error).__name__, type(error).__module__
                break
        state = _state(obj)
        if unordered or _hash_ordered(obj):
            state = {k: v for k, v in state.items() if k == "len(obj)"}
        made["state"] = state
    except Exception as error:
        made["raised"], made["raised_module"] = type(error).__name__, type(error).__module__
    return made


def _compared(made: dict[str, Any]) -> str:
    """What a replayed sequence showed, as one text (addresses left out)."""
    steps = [(s.get("result") if " at 0x" not in str(s.get("result")) else "object", s.get("raised"))
             for s in made["steps"]]
    state = {k: v for k, v in (made.get("state") or {}).items() if " at 0x" not in v}
    return json.dumps([steps, made.get("raised"), state], sort_keys=True)


def _limited(seconds: float, run: Callable[[], Any]) -> tuple[bool, Any]:
    """(True, what ``run`` returned) under an alarm of ``seconds``; (False, None) when it ran out, or
    no alarm can limit it (not the main thread, no ``setitimer``, the test's own limit near)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        return False, None
    remaining = signal.getitimer(signal.ITIMER_REAL)[0]
    if remaining and remaining < 2 * seconds:
        return False, None
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    start = time.monotonic()
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            return True, run()
        except _Slow:
            return False, "timeout"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Slow:
        return False, "timeout"
    finally:
        signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
        if remaining:
            signal.setitimer(signal.ITIMER_REAL, max(remaining - (time.monotonic() - start), 0.001))


class _SequenceKiller:
    """The class (or factory) as a sequence's attempt calls it: each sequence drawn is made again,
    once as it is and once per surviving mutant of one of the class's methods (swapped into the
    class for that run; coverage paused), and a sequence whose results, end or state left differ
    is kept (``found``), as the original made it, with the mutants it tells apart."""

    def __init__(self, cls: Callable[..., Any], owner: Any, mutants: Sequence[tuple[str, str, Any]],
                 deadline: float) -> None:
        self.cls, self.owner, self.deadline = cls, owner, deadline
        self.alive = {name: (method, made) for name, method, made in mutants
                      if made is not None and method in vars(owner)}
        self.pending: tuple[tuple[Any, ...], list[tuple[str, tuple[Any, ...]]]] | None = None
        self.shown: list[list[str]] = []  # the pending sequence's argument texts, as the search has them
        self.found: list[dict[str, Any]] = []

    def __call__(self, *init_args: Any) -> Any:
        self.flush(covering=True)
        if self.alive and time.monotonic() < self.deadline:
            try:
                self.pending = (copy.deepcopy(init_args), [])
                self.shown = [[_source(a) for a in init_args]]
            except Exception:
                self.pending = None
        return self.cls(*init_args)

    def step(self, name: str, args: Sequence[Any]) -> None:
        if self.pending is not None:
            try:
                self.pending[1].append((name, copy.deepcopy(tuple(args))))
                self.shown.append([_source(a) for a in args])
            except Exception:
                self.pending = None

    def flush(self, covering: bool) -> None:
        """Compare the sequence last drawn, if any (``covering``: pause coverage meanwhile)."""
        pending, self.pending = self.pending, None
        if pending is None or not pending[1] or time.monotonic() >= self.deadline:
            return
        if covering:
            _COV.stop()
        try:
            self._compare(*pending)
        finally:
            if covering:
                _COV.start()

    def _compare(self, init_args: tuple[Any, ...], calls: list[tuple[str, tuple[Any, ...]]]) -> None:
        seconds = _MUTANT_CALL_S * (len(calls) + 1)
        done, original = _limited(seconds, lambda: _played(self.cls, init_args, calls))
        if not done:
            return
        expected = _compared(original)
        told = []
        for name, (method, made) in list(self.alive.items()):
            kept = vars(self.owner)[method]
            try:
                setattr(self.owner, method, made)
                done, mutated = _limited(seconds, lambda: _played(self.cls, init_args, calls))
            finally:
                setattr(self.owner, method, kept)
            if mutated == "timeout" or (done and _compared(mutated) != expected):
                told.append(name)
        for name in told:
            del self.alive[name]
        if told:
            original["init"] = self.shown[0]
            for step, shown in zip(original["steps"], self.shown[1:]):  # noqa: B905 (3.8 has no strict)
                step["args"] = shown
            self.found.append(dict(original, kills=told))


_WATCHING: list[_SequenceKiller] = []  # the sequence search under way, when it compares mutants


def _sequence(
    pytestconfig: Any,
    qualname: str,
    typed: bool,
    cls: Callable[..., Any],
    init: st.SearchStrategy[tuple[Any, ...]],
    methods: Sequence[tuple[str, st.SearchStrategy[tuple[Any, ...]]]],
    max_steps: int,
    max_examples: int,
    seconds: float,
    factory: str | None = None,
    owner: Any = None,
    mutants: Sequence[tuple[str, str, str]] = (),
) -> None:
    """Draw sequences of a constructor call and method calls and keep those that reach new arcs or
    a new outcome; with ``mutants`` (name, method, mutated ``def``) of the class ``owner``, also
    those whose replay with a mutant swapped in ends otherwise."""
    started = time.monotonic()
    arcs: set[tuple[int, int]] = set()
    kept: list[dict[str, Any]] = []
    count = [0]
    outcomes: set[tuple[Any, Any]] = set()
    cls = _by_name(cls)
    killer = None
    if owner is not None and mutants:
        made = [(name, method, _mutant_method(owner, method, text)) for name, method, text in mutants]
        killer = _SequenceKiller(cls, owner, made, started + seconds)
    if killer is not None and killer.alive:
        cls = killer
        _WATCHING.append(killer)
    steps = st.lists(
        st.one_of([st.tuples(st.just(name), strategy) for name, strategy in methods]),
        min_size=1,
        max_size=max_steps,
    )

    def attempt(case):  # type: (tuple[tuple[Any, ...], list[tuple[str, tuple[Any, ...]]]]) -> None
        if time.monotonic() - started > seconds:
            return
        count[0] += 1
        init_args, calls = case
        made = {"init": [_source(a) for a in init_args], "steps": [], "raised": None}  # type: dict[str, Any]
        unordered = False  # a step ran on an object holding a set of texts: not asserted after it
        _COV.start()
        try:
            obj = cls(*init_args)
            for name, args in calls:
                step = {"method": name, "args": [_source(a) for a in args]}  # type: dict[str, Any]
                made["steps"].append(step)
                try:
                    unordered = unordered or _hash_ordered(obj)
                    step["result"], step["literal"] = _shown(_step(obj, name, args))
                    step["literal"] = step["literal"] and not unordered
                except Exception as error:
                    step["raised"], step["raised_module"] = type(error).__name__, type(error).__module__
                    break
            state = _state(obj)
            if unordered or _hash_ordered(obj):  # what the calls left may hang on which item came first
                state = {k: v for k, v in state.items() if k == "len(obj)"}
            made["state"] = state
        except Exception as error:
            made["raised"], made["raised_module"] = type(error).__name__, type(error).__module__
        finally:
            _COV.stop()
        reached = set(_COV.get_data().arcs(_TARGET) or ())
        met = {(step["method"], step.get("raised")) for step in made["steps"]}
        if reached - arcs or met - outcomes:  # new arcs, or a method that returned or raised anew
            arcs.update(reached)
            outcomes.update(met)
            kept.append(made)

    run = _settings(max_examples)(given(st.tuples(init, steps))(attempt))
    record: dict[str, Any] = {
        "kind": "testgen-sequence",
        "qualname": qualname,
        "typed": typed,
        "kept": kept,
        "factory": factory,
    }
    try:
        run()
    except Exception as error:
        record["error"] = f"{type(error).__name__}: {str(error)[:300]}"
    finally:
        if killer is not None and _WATCHING and _WATCHING[-1] is killer:
            _WATCHING.pop()
            killer.flush(covering=False)
            kept.extend(killer.found)
    record.update(examples=count[0], arcs=len(arcs), mutants=len(mutants), names=sorted(_NAMES))
    _write(pytestconfig, record)

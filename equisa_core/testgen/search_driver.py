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
import datetime  # noqa: F401  (the strategies' bounds are datetime values)
import decimal
import functools
import itertools
import json
import os
import sys
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


def _source(value: Any) -> str:
    """A value's text: the build it was rebuilt from, else its repr, with ``decimal.Decimal`` for the
    decimals inside."""
    built = _BUILT.get(id(value))
    if built is not None and built[0] is value:
        return built[1]
    if isinstance(value, decimal.Decimal):
        return f"decimal.Decimal({str(value)!r})"
    if type(value) in (list, tuple, set, frozenset) and any(isinstance(v, decimal.Decimal) for v in value):
        items = ", ".join(_source(v) for v in value)
        shapes: dict[type, str] = {list: "[%s]", tuple: "(%s,)", set: "{%s}", frozenset: "frozenset({%s})"}
        return shapes[type(value)] % items
    if type(value) is dict and any(isinstance(v, decimal.Decimal) for v in value.values()):
        return "{" + ", ".join(f"{_source(k)}: {_source(v)}" for k, v in value.items()) + "}"
    return repr(value)


_COV = coverage.Coverage(branch=True, include=[_TARGET], data_file=None, config_file=False)


def _search(
    pytestconfig: Any,
    qualname: str,
    typed: bool,
    function: Callable[..., object],
    strategy: st.SearchStrategy[tuple[Any, ...]],
    seeds: Sequence[tuple[Any, ...]],
    max_examples: int,
    seconds: float,
) -> None:
    started = time.monotonic()
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
    record.update(examples=count[0], arcs=len(arcs))
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
}


def _step(obj: Any, name: str, args: Sequence[Any]) -> Any:
    operation = _OPERATIONS.get(name)
    return operation(obj, *args) if operation is not None else getattr(obj, name)(*args)


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
) -> None:
    started = time.monotonic()
    arcs: set[tuple[int, int]] = set()
    kept: list[dict[str, Any]] = []
    count = [0]
    outcomes: set[tuple[Any, Any]] = set()
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
    record.update(examples=count[0], arcs=len(arcs))
    _write(pytestconfig, record)

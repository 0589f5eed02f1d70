"""Shadow execution of a patch candidate inside the sandbox: a pytest plugin (this package).

It runs under the suite's own interpreter (Python 3.8 to 3.13), which may have none of EQUISA's
libraries (no Hypothesis, no pydantic, no coverage.py): that is why it uses the standard library
and pytest only, and its modules import one another only relatively. ``tasks/validation/divergence.py``
writes this package's files (``equisa_core.validation.shadow_files``) into the run's repository copy
as the package ``equisa_shadow/``, loads it with ``PYTEST_PLUGINS=equisa_shadow`` and names its
configuration (a JSON file, ``EQUISA_SHADOW_CONFIG``): the target's file and qualified name, the
candidate's text of that file, the passing and failing tests, and the limits. Nothing runs at
import but reading that file.

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
the same way; capped per call and in total. Where the function checks its inputs (the host names
the errors it raises itself, ``on_purpose``), each argument also takes a value of another kind
(``""``, ``0``): a probe the original rejects with one of those errors is compared, its outcome
written ``refused:<type>``, and a candidate that now accepts it has widened the function past the
failing tests' inputs (``if not args: return url`` where the fix is ``if args is None``). A call
whose outcomes differ is run once more on the original (a control, on a fresh copy): an original
that differs from itself (a clock, a counter, an identity in its state) makes the call
uncomparable, or unchanged when the candidate equals the control. Every shadow call runs under
``call_limit_s`` (``setitimer`` in the main thread; the probe's own per-test alarm is re-armed
with what is left of it), and the shadow calls of one test under ``test_budget_s`` in all.

The original function's lines and line-to-line arcs executed by the calls under passing tests are
recorded (by the same trace hook), and its executable lines are given, so coverage of the function
can be computed. Observations go, as JSON lines flushed one by one, to ``EQUISA_SHADOW_OUT`` or
else to the probe's output file (``--equisa-out``), the only file the host reads back::

    {"kind": "shadow-target", "found": true, "executable": [3, 4, 6]}   (or "found": false, "why": ...)
    {"kind": "shadow-call", "test": "...", "origin": "passing", "call": "recorded", "changed": false,
     "detail": ""}
    {"kind": "shadow-uncomparable", "test": "...", "why": "..."}
    {"kind": "shadow-lines", "executed": [3, 4], "arcs": [[3, 4]]}    (cumulative: the last one holds)

The package: ``code_objects`` (the target's code found and keyed), ``calls`` (a call's arguments,
its outcome, their comparison), ``neighbours`` (the generated calls), ``input_neighbours`` (the
values they move to: the core's input rules, ``equisa_core/inputs/neighbours.py``, which the host
writes in this module's place, ``equisa_core.validation.shadow_files``), ``session`` (the plugin's
state: the wrapper, the trace hook, the shadow calls); the pytest hooks are here.

Not covered: async functions and async generators (not intercepted); a candidate that changes a
default argument's value (the original's defaults are used); side effects outside the arguments
(globals, files, class attributes changed through ``cls``) are neither compared nor undone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

from .session import _Shadow

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

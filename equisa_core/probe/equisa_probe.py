"""EQUISA's probe: a pytest plugin that runs inside the repository's own interpreter.

It is one stdlib-only file that works on Python 3.8 to 3.13, because the interpreter running the
user's suite is not EQUISA's. The host copies this file to a private folder, puts that folder on
PYTHONPATH and runs ``python -m pytest -p equisa_probe --equisa-out=OUT --equisa-root=ROOT``.

Per test it records the outcome, duration, the failure's exception type, message and traceback
frames, a tail of captured stdout/stderr, the project functions executed and caller -> callee
edges between them (what a test module's own top-level code calls when pytest imports it counts
for each of its tests). It writes JSON lines to OUT, flushed after every record, so a suite that kills
the interpreter mid-run still leaves every outcome recorded before the crash:

    {"kind": "session", "python": "3.12.1", "backend": "sys.monitoring", "reason": "...", ...}
    {"kind": "collected", "tests": ["tests/test_a.py::test_x", ...]}
    {"kind": "start", "test": "tests/test_a.py::test_x"}
    {"kind": "node", "fqn": "pkg.mod.f", "file": "pkg/mod.py", "start": 3, "end": 9}
    {"kind": "test", "test": "...", "outcome": "failed", "duration": 0.01, "covered": [...], ...}
    {"kind": "collect_error", "location": "tests/test_b.py", "message": "..."}
    {"kind": "outside", "modules": {"pkg": "/home/me/pkg/src/pkg/__init__.py"}}
    {"kind": "end", "exitstatus": 1}

A test may run ``--equisa-test-timeout`` seconds, or its own limit from ``--equisa-test-limits FILE``
(a JSON object: node id -> seconds); then it fails with ``TestTimeout``.

With ``--equisa-mutants FILE`` the tests then run again once per mutant of a function, in this
process, adding ``mutant-start``, ``mutant-test`` and ``mutant-done`` records (see the section
"Mutant rounds" below).

With ``--equisa-rerun-failures N`` the first N failing tests run again, untraced, in a fork of this
process made after collection, before any test ran, adding ``rerun`` and ``rerun-done`` records
before ``end``, or ``rerun-skipped`` when it cannot (see the section "Failing tests re-run apart").

With ``--equisa-serve FILE`` a pristine fork made at the same point waits, once the run is over, for
a mutant run written to FILE and runs it, writing ``served.jsonl`` beside it (see the section
"Serving a mutant run").

The tracing backend is chosen in one place, ``choose_backend``, and the session record says which
ran and why:

- ``sys.monitoring`` (3.12+): each function start and call site is reported once per test, then
  disabled until the next test re-arms only those locations; code outside the project is seen once
  per session.
- ``instrument`` (3.8-3.11): the project's modules are compiled, at import, with a one-line entry
  marker in every function; a function calls into the probe once per test and otherwise pays a
  set lookup. (Any profile hook costs more than 2.5x on these versions: CPython runs every
  instruction on its slow path while one is set.) Edges are the first caller per test.
- ``setprofile`` (any version; ``EQUISA_PROBE_BACKEND=setprofile``, or when instrumentation cannot
  be installed first): a profile hook, on only during each test's setup, call and teardown.

Suites that mock ``os`` or ``time`` must not break the probe (nor the probe them), so the probe
keeps private copies of what it needs from those modules, taken at import, as coverage.py's
``isolate_module`` does.

PYTEST_DONT_REWRITE: pytest imports a ``-p`` plugin through its assertion rewriter, which would
walk this module's whole syntax tree in Python at every start (the probe's asserts only narrow
types); these words in the docstring make it skip the walk.

What runs per call or per test does no work that only an import needs (resolving real paths,
walking frames for ``_Recorder.from_module_code``): the backends switch to other callbacks while
pytest imports a test module (``importing``), and tests/core/test_probe_hot_path.py checks it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sys
import threading
import time
import traceback
import types
import warnings
from typing import TYPE_CHECKING, cast

import pytest

if TYPE_CHECKING:  # names for annotations only: nothing here is imported when the probe runs
    import ast
    import datetime
    import decimal
    import fractions
    import pathlib
    import uuid
    from importlib.machinery import ModuleSpec
    from typing import (
        IO,
        Any,
        Callable,
        Generator,
        Iterable,
        Iterator,
        Mapping,
        Protocol,
        Sequence,
        TypeAlias,
    )

    # (This block never runs, so its aliases may use 3.10+ syntax: the probe's annotations are strings.)
    #: One JSON-lines record.
    Record: TypeAlias = dict[str, Any]
    #: A caller -> callee edge, as ids of the two code objects.
    EdgeIds: TypeAlias = tuple[int, int]
    #: A class's slots: (name, member descriptor) for each.
    Slots: TypeAlias = tuple[tuple[str, types.MemberDescriptorType], ...]
    #: ``(outcome, duration or None)`` of a test's unmutated run.
    Baseline: TypeAlias = tuple[str, float | None]
    #: What ``signal.signal`` returns: the handler it replaced.
    SignalHandler: TypeAlias = Callable[[int, types.FrameType | None], Any] | int | signal.Handlers | None
    #: A hook of ``sys.setprofile``, and one of ``sys.settrace`` (which returns the frame's next tracer).
    ProfileFunction: TypeAlias = Callable[[types.FrameType, str, Any], object]
    TraceFunction: TypeAlias = Callable[[types.FrameType, str, Any], "TraceFunction | None"]
    #: ``_pytest.runner.runtestprotocol``.
    RunTestProtocol: TypeAlias = Callable[..., list[pytest.TestReport]]

    class Backend(Protocol):
        """A tracing backend: ``_MonitoringBackend``, ``_ProfileBackend``, ``_InstrumentBackend`` or
        ``_NoBackend``."""

        name: str

        def install(self) -> None: ...

        def uninstall(self) -> None: ...

        def arm(self) -> None: ...

        def importing(self, on: bool) -> None: ...

        def enter(self) -> None: ...

        def leave(self) -> None: ...

__all__ = ["choose_backend", "ProbePlugin"]

PROBE_VERSION = "1"
#: Captured output and messages are capped so a noisy suite cannot flood the host.
OUTPUT_TAIL_CHARS = 4000
MESSAGE_CHARS = 2000
MAX_FRAMES = 40
#: Folders whose code is never the project's own, even when inside the repository root.
FOREIGN_PARTS = ("site-packages", "dist-packages", ".venv", "venv", ".tox", ".nox", "node_modules",
                 "__pypackages__", ".eggs", "build")
BACKEND_ENV = "EQUISA_PROBE_BACKEND"
#: Code objects that are part of their enclosing function, not functions of their own: module
#: bodies, and comprehensions (which 3.12+ inlines anyway, so every version reports the same).
#: Lambdas too: they have no definition to inspect and the import-time instrumentation cannot
#: mark them, so no backend reports them.
NOT_FUNCTIONS = frozenset(("<module>", "<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>", "<lambda>"))
#: Set on the code of every function, and never on a class body or a module: a class body that runs
#: during a test (a module imported inside it, a class defined in a function) is no function either.
CO_OPTIMIZED = 0x01


#: Top-level names of a repository that are not its package, whatever else has them installed.
NOT_PACKAGES = frozenset(("tests", "test", "testing", "conftest", "setup", "docs", "doc", "examples",
                          "benchmarks", "scripts", "tools", "noxfile", "tasks"))


def imported_elsewhere(root: str) -> dict[str, str]:
    """The packages and modules of the copy at ``root`` that the run imported from another tree,
    by name, with the file imported: an editable install, a ``.pth`` or ``PYTHONPATH`` entry that
    points at the original, or an installed release of the project, which no change to the copy
    reaches.

    The copy's packages are those at its top and one folder down (``src/pkg``, ``lib/pkg``); one
    counts as imported elsewhere when the file imported ends with the same path as the copy's file
    (``lib/pkg/__init__.py``), so a vendored copy of another project's package does not."""
    prefix = root.rstrip(_os.sep) + _os.sep
    own: dict[str, str] = {}
    folders = [""] + [entry for entry in sorted(_listdir(root)) if not entry.startswith((".", "_"))
                      and entry not in NOT_PACKAGES and _os_path.isdir(_os_path.join(root, entry))]
    for folder in folders:
        for entry in sorted(_listdir(_os_path.join(root, folder))):
            relative = _os_path.join(folder, entry)
            if entry.endswith(".py") and entry[:-3].isidentifier():
                own.setdefault(entry[:-3], relative)
            elif entry.isidentifier() and _os_path.isfile(_os_path.join(root, relative, "__init__.py")):
                own.setdefault(entry, _os_path.join(relative, "__init__.py"))
    found = {}
    for name, relative in sorted(own.items()):
        filename = getattr(sys.modules.get(name), "__file__", None)
        if name in NOT_PACKAGES or not isinstance(filename, str):
            continue
        real = _os_path.realpath(filename)
        if not real.startswith(prefix) and real.endswith(_os.sep + relative):
            found[name] = real
    return found


def _listdir(path: str) -> list[str]:
    try:
        return _os.listdir(path)
    except OSError:
        return []


def _isolate(module: types.ModuleType) -> types.ModuleType:
    """A private copy of ``module`` that later monkeypatching of the real one cannot reach."""
    copy = types.ModuleType(module.__name__)
    copy.__dict__.update(module.__dict__)
    return copy


if TYPE_CHECKING:  # a copy has its module's attributes: the type checker reads it as the module
    _os = os
    _os_path = os.path
else:
    _os = _isolate(os)
    _os_path = _isolate(os.path)
_time_perf = time.perf_counter
_sleep = time.sleep
#: Real folders by absolute folder name (``real_file``).
_REAL_FOLDERS: dict[str, str] = {}


def real_file(path: str) -> str:
    """``os.path.realpath(path)``, each absolute folder resolved once per process: a file under it
    then costs one ``lstat`` instead of one per component of its path (the probe resolves every
    module the run imports: ``realpath`` was 6 % of a luigi 5 shard's profile samples, before)."""
    folder, name = _os_path.split(path)
    if not _os_path.isabs(folder) or name in ("", ".", ".."):
        return _os_path.realpath(path)  # relative to a working directory that may change
    real = _REAL_FOLDERS.get(folder)
    if real is None:
        real = _REAL_FOLDERS[folder] = _os_path.realpath(folder)
    joined = _os_path.join(real, name)
    return _os_path.realpath(joined) if _os_path.islink(joined) else joined


_getframe = sys._getframe
_json_dumps = json.dumps
#: What ``_json_dumps(record, ensure_ascii=False, default=str)`` would make anew for every record.
_encode = json.JSONEncoder(ensure_ascii=False, default=str).encode
_open = open
_extract_tb = traceback.extract_tb
_FunctionType = types.FunctionType
_MethodType = types.MethodType


def choose_backend() -> tuple[str, str]:
    """Return ``(name, reason)`` of the tracing backend for this interpreter; the one place it is chosen."""
    forced = _os.environ.get(BACKEND_ENV, "").strip()
    if forced == "setprofile":
        return "setprofile", BACKEND_ENV + "=setprofile asked for the profile hook"
    if forced == "instrument":
        return "instrument", BACKEND_ENV + "=instrument asked for import-time instrumentation"
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is None:
        return "instrument", (
            "sys.monitoring needs Python 3.12+; this is %d.%d, where any profile hook costs over "
            "2.5x, so project functions are instrumented at import" % sys.version_info[:2])
    if len(_free_tool_ids(monitoring)) < 2:
        return "setprofile", "fewer than two sys.monitoring tool ids are free for the probe"
    if forced and forced != "sys.monitoring":
        return "sys.monitoring", "unknown %s=%r ignored; Python %d.%d has sys.monitoring" % (
            (BACKEND_ENV, forced) + sys.version_info[:2])
    version = "%d.%d" % sys.version_info[:2]
    return "sys.monitoring", "Python " + version + " has sys.monitoring (PEP 669), the cheapest hook"


def _free_tool_ids(monitoring: Any) -> list[int]:
    """Tool ids the probe may take (the profiler's and the unassigned ones) that are free."""
    return [t for t in (monitoring.PROFILER_ID, 3, 4, 5) if monitoring.get_tool(t) is None]


class _CodeInfo:
    """What the probe knows about one project code object; keeps the code alive so ids stay unique."""

    __slots__ = ("code", "module", "fqn", "emitted")
    code: types.CodeType
    module: str | None
    fqn: str | None
    emitted: bool

    def __init__(self, code: types.CodeType, module: str | None) -> None:
        self.code = code
        self.module = module
        self.fqn = None
        self.emitted = False


def _import_opcodes() -> frozenset[int]:
    import dis

    return frozenset(dis.opmap[name] for name in ("IMPORT_NAME", "IMPORT_FROM", "IMPORT_STAR")
                     if name in dis.opmap)


#: The instructions of an import statement (IMPORT_STAR is gone in 3.12).
_IMPORT_OPCODES = _import_opcodes()


class _Recorder:
    """Collects the project functions executed, and edges between them, for the current test."""

    def __init__(self, root: str) -> None:
        self.root = root.rstrip(_os.sep) + _os.sep
        self.file_is_project: dict[str, bool] = {}
        self.known: dict[int, _CodeInfo] = {}  # id(code) -> _CodeInfo, project code only
        self.active = False
        self.covered: set[int] = set()
        self.edges: set[EdgeIds] = set()
        # While pytest imports a test module: its file. Then only the calls that its own top-level
        # code makes count (``from_module_code``), not those of the modules it imports, nor those
        # its import statements make.
        self.importing: str | None = None
        self._real_paths: dict[str, str] = {}  # a code object's file -> its real path

    def from_module_code(self, frame: types.FrameType) -> bool:
        """Whether the call running in ``frame`` counts: always in a test; while a test module is
        imported, only when the nearest module-level frame above it is that module's (its
        decorators, its ``app = make_app()``) and is not running an import statement."""
        target = self.importing
        if target is None:
            return True
        outer = frame.f_back
        while outer is not None and outer.f_code.co_name != "<module>":
            outer = outer.f_back
        if outer is None:
            return False
        filename = outer.f_code.co_filename
        real = self._real_paths.get(filename)
        if real is None:
            real = self._real_paths[filename] = real_file(filename)
        # Its import statements do not count either: a lazy module's attributes (six.moves) resolved
        # by ``from pkg.moves import name`` are the import system's work, not the tests'.
        return real == target and outer.f_code.co_code[outer.f_lasti] not in _IMPORT_OPCODES

    def _is_project_file(self, filename: str) -> bool:
        verdict = self.file_is_project.get(filename)
        if verdict is None:
            verdict = filename.startswith(self.root) and filename.endswith(".py")
            if verdict:
                parts = filename[len(self.root):].split(_os.sep)
                verdict = not any(p in FOREIGN_PARTS or p.startswith(".") for p in parts[:-1])
            self.file_is_project[filename] = verdict
        return verdict

    def lookup(self, code: types.CodeType, frame: types.FrameType | None) -> _CodeInfo | None:
        """The project info of ``code``, registering it on first sight; None for foreign code.

        Only project code objects are kept (and so pinned in memory): keying foreign code by id
        would let a freed code object's id, reused by a project function, hide that function.
        """
        info = self.known.get(id(code))
        if info is not None:
            return info
        try:
            if (code.co_name in NOT_FUNCTIONS or not code.co_flags & CO_OPTIMIZED
                    or not self._is_project_file(code.co_filename)):
                return None
            module = frame.f_globals.get("__name__") if frame is not None else None
        except Exception:  # never let the probe change a test's outcome
            return None
        info = self.known[id(code)] = _CodeInfo(code, module if isinstance(module, str) else None)
        return info

    def begin(self) -> None:
        self.covered = set()
        self.edges = set()

    def end(self) -> tuple[set[int], set[EdgeIds]]:
        self.active = False
        return self.covered, self.edges


class _MonitoringBackend:
    """sys.monitoring (3.12+) with two tools, so code outside the project costs nothing after once.

    The *discovery* tool listens to PY_START everywhere; it sees each code object once per session
    (it always answers DISABLE and the probe never calls ``restart_events``). Project code found
    that way gets *local* PY_START and CALL events of the *tracking* tool, which record coverage
    and call edges once per function and call site, then DISABLE; at the next test only those
    locations are re-armed, by resetting their local events. pytest's own functions, libraries
    and the standard library are therefore not re-instrumented for every test.
    """

    name = "sys.monitoring"

    def __init__(self, recorder: _Recorder) -> None:
        self.recorder = recorder
        # sys.monitoring is 3.12+ (choose_backend picks this backend only there); mypy checks the
        # probe as 3.11, whose stubs have no sys.monitoring: it is Any here.
        self.monitoring: Any = sys.monitoring  # type: ignore[attr-defined]  # 3.12+, checked as 3.11
        self.events: int = self.monitoring.events.PY_START | self.monitoring.events.CALL
        self.discovery: int | None = None
        self.tracking: int | None = None
        self.disabled: set[int] = set()  # ids of project code whose tracking events fired since the last arm

    def install(self) -> None:
        m = self.monitoring
        self.discovery, self.tracking = _free_tool_ids(m)[:2]
        m.use_tool_id(self.discovery, "equisa-probe-discovery")
        m.use_tool_id(self.tracking, "equisa-probe")
        m.register_callback(self.discovery, m.events.PY_START, self._on_discover)
        self.importing(False)
        m.set_events(self.discovery, m.events.PY_START)

    def importing(self, on: bool) -> None:
        """Switch the tracking callbacks: while a test module is imported (``on``) those that apply
        ``_Recorder.from_module_code``, in tests those that have nothing to check but the call."""
        m = self.monitoring
        if self.tracking is None:
            return
        start, call = ((self._on_start_importing, self._on_call_importing) if on
                       else (self._on_start, self._on_call))
        m.register_callback(self.tracking, m.events.PY_START, start)
        m.register_callback(self.tracking, m.events.CALL, call)

    def uninstall(self) -> None:
        m = self.monitoring
        if self.discovery is None:
            return
        m.set_events(self.discovery, 0)
        for info in self.recorder.known.values():
            m.set_local_events(self.tracking, info.code, 0)
        for tool in (self.discovery, self.tracking):
            m.register_callback(tool, m.events.PY_START, None)
            m.register_callback(tool, m.events.CALL, None)
            m.free_tool_id(tool)
        self.discovery = self.tracking = None

    def arm(self) -> None:
        """Re-enable the project locations the previous test disabled, and only those."""
        m, known = self.monitoring, self.recorder.known
        for key in self.disabled:
            code = known[key].code
            m.set_local_events(self.tracking, code, 0)
            m.set_local_events(self.tracking, code, self.events)
        self.disabled = set()

    def _on_discover(self, code: types.CodeType, offset: int) -> object:
        rec = self.recorder
        frame = _getframe(1)
        info = rec.lookup(code, frame)
        if info is not None:
            self.monitoring.set_local_events(self.tracking, code, self.events)
            # (once per code object and session: the tracking tool does not see this call)
            if rec.active and (rec.importing is None or rec.from_module_code(frame)):
                rec.covered.add(id(code))
                caller = frame.f_back
                if caller is not None and id(caller.f_code) in rec.known:
                    rec.edges.add((id(caller.f_code), id(code)))
        return self.monitoring.DISABLE

    # The tracking callbacks in tests (the hot path: see tests/core/test_probe_hot_path.py).
    def _on_start(self, code: types.CodeType, offset: int) -> object:
        rec = self.recorder
        if not rec.active:  # pytest's reporting between phases: ignore, but stay armed
            return None
        key = id(code)
        self.disabled.add(key)
        rec.covered.add(key)
        caller = _getframe(1).f_back
        if caller is not None and id(caller.f_code) in rec.known:
            rec.edges.add((id(caller.f_code), key))
        return self.monitoring.DISABLE

    def _on_call(self, code: types.CodeType, offset: int, callable_: object, arg0: object) -> object:
        rec = self.recorder
        if not rec.active:
            return None
        self.disabled.add(id(code))
        callee = _callee_code(callable_)
        if callee is not None and id(callee) in rec.known:
            rec.edges.add((id(code), id(callee)))
        return self.monitoring.DISABLE

    # The same while pytest imports a test module (``importing(True)``).
    def _on_start_importing(self, code: types.CodeType, offset: int) -> object:
        rec = self.recorder
        if not rec.active:
            return None
        frame = _getframe(1)
        if not rec.from_module_code(frame):  # an imported module's import-time call: stay armed
            return None
        key = id(code)
        self.disabled.add(key)
        rec.covered.add(key)
        caller = frame.f_back
        if caller is not None and id(caller.f_code) in rec.known:
            rec.edges.add((id(caller.f_code), key))
        return self.monitoring.DISABLE

    def _on_call_importing(self, code: types.CodeType, offset: int, callable_: object,
                           arg0: object) -> object:
        """A test module's import records coverage only: the call site is disabled until the next
        ``arm``, which comes before any later call can count (the next test, or the next module's
        import), so it fires once instead of at every call the module's code makes."""
        if not self.recorder.active:
            return None
        self.disabled.add(id(code))
        return self.monitoring.DISABLE

    def enter(self) -> None:
        pass

    def leave(self) -> None:
        pass


def _callee_code(obj: object) -> types.CodeType | None:
    """The code object a call to ``obj`` starts, for plain functions, methods and classes.

    Only exact types are inspected, never arbitrary attributes: a user's ``__getattr__`` must not run.
    """
    if type(obj) is _FunctionType:
        return obj.__code__
    if type(obj) is _MethodType:
        func = obj.__func__
        return func.__code__ if type(func) is _FunctionType else None
    if isinstance(obj, type):
        for klass in type.__getattribute__(obj, "__mro__"):
            init = type.__getattribute__(klass, "__dict__").get("__init__")
            if init is not None:
                return init.__code__ if type(init) is _FunctionType else None
    return None


class _ProfileBackend:
    """sys.setprofile (3.8-3.11), installed only during a test's setup, call and teardown phases.

    While any profile or trace function is set, CPython before 3.12 runs every instruction on its
    slow path; keeping the hook off during collection and pytest's reporting is what keeps the
    overhead down. Only ``call`` events are looked at.
    """

    name = "setprofile"

    def __init__(self, recorder: _Recorder) -> None:
        self.recorder = recorder
        self.test_hook, self.import_hook = self._make_hooks()
        self.hook = self.test_hook

    def _make_hooks(self) -> tuple[ProfileFunction, ProfileFunction]:
        """The hook in tests (the hot path: see tests/core/test_probe_hot_path.py), and the one
        while pytest imports a test module: the same, for the calls ``from_module_code`` allows
        (asked once the code is known to be the project's)."""
        rec = self.recorder
        known = rec.known
        lookup = rec.lookup

        def hook(frame: types.FrameType, event: str, arg: object) -> None:
            if event != "call":
                return
            code = frame.f_code
            key = id(code)
            if key in known or lookup(code, frame) is not None:
                rec.covered.add(key)
                caller = frame.f_back
                if caller is not None:
                    caller_key = id(caller.f_code)
                    if caller_key in known:
                        rec.edges.add((caller_key, key))

        def import_hook(frame: types.FrameType, event: str, arg: object) -> None:
            code = frame.f_code
            if event == "call" and (id(code) in known or lookup(code, frame) is not None) and (
                    rec.from_module_code(frame)):
                hook(frame, event, arg)

        return hook, import_hook

    def importing(self, on: bool) -> None:
        self.hook = self.import_hook if on else self.test_hook

    def install(self) -> None:
        pass

    def uninstall(self) -> None:
        self.leave()

    def arm(self) -> None:
        pass

    def enter(self) -> None:
        threading.setprofile(self.hook)
        sys.setprofile(self.hook)

    def leave(self) -> None:
        sys.setprofile(None)
        threading.setprofile(None)


class _ImportInstrumenter:
    """A meta-path finder that compiles the project's own modules with a cheap entry marker.

    Every function in a project module (test code excluded: pytest rewrites it) gets, as its
    first statement (after the docstring, on the first statement's line, so tracebacks keep their
    line numbers)::

        if __equisa_todo__[<K>]: __equisa_enter__(<K>)

    ``__equisa_todo__`` is one list of flags shared by every module, one per marked function: its
    first call in a test clears the flag, and the next test sets again those the last one cleared
    (``seen``). A function so calls into the probe once per test and otherwise pays one list index,
    which CPython specializes (a set lookup cost about six times as much on 3.11: issue 48).
    ``__equisa_enter__`` records the function and the caller that reached it first. It must be
    installed before the project is imported, hence at ``pytest_load_initial_conftests`` (before
    conftest files).
    """

    def __init__(self, root: str) -> None:
        self.root = root.rstrip(_os.sep) + _os.sep
        self.recorder: _Recorder | None = None
        self.todo: list[bool] = []  # by key: whether the function is still to be seen in this test
        self.seen: list[int] = []  # the keys cleared in ``todo`` since the last ``rearm``
        self.next_key = 0
        self.instrumented: list[str] = []
        #: The instrumented modules' globals, whose ``__equisa_enter__`` is ``hook``.
        self.namespaces: list[dict[str, object]] = []
        self.hook: Callable[[int], None] = self.enter

    def bind(self, namespace: dict[str, object]) -> None:
        """Give an instrumented module's globals the flags and the current entry hook."""
        namespace["__equisa_todo__"] = self.todo
        namespace["__equisa_enter__"] = self.hook
        self.namespaces.append(namespace)

    def importing(self, on: bool) -> None:
        """While a test module is imported (``on``) the marker calls ``enter_importing``, which
        applies ``_Recorder.from_module_code``; in tests ``enter``, which has nothing to check."""
        self.hook = self.enter_importing if on else self.enter
        for namespace in self.namespaces:
            namespace["__equisa_enter__"] = self.hook

    def enter(self, key: int) -> None:
        """A marked function's first call in this test (the hot path: see
        tests/core/test_probe_hot_path.py)."""
        rec = self.recorder
        if rec is None or not rec.active:
            return
        self.todo[key] = False
        self.seen.append(key)
        frame = _getframe(1)
        known = rec.known
        code = frame.f_code
        if id(code) not in known and rec.lookup(code, frame) is None:
            return
        code_key = id(code)
        rec.covered.add(code_key)
        caller = frame.f_back
        if caller is not None:
            caller_code = caller.f_code
            if id(caller_code) in known or rec.lookup(caller_code, caller) is not None:
                rec.covered.add(id(caller_code))  # it is running too (tests are not instrumented)
                rec.edges.add((id(caller_code), code_key))

    def enter_importing(self, key: int) -> None:
        """``enter`` while pytest imports a test module."""
        rec = self.recorder
        if rec is None or not rec.active:
            return
        frame = _getframe(1)
        if not rec.from_module_code(frame):  # an imported module's import-time call: ask again later
            return
        self.todo[key] = False
        self.seen.append(key)
        if rec.lookup(frame.f_code, frame) is None:
            return
        code_key = id(frame.f_code)
        rec.covered.add(code_key)
        caller = frame.f_back
        if caller is not None and rec.lookup(caller.f_code, caller) is not None:
            rec.covered.add(id(caller.f_code))  # it is running too (tests are not instrumented)
            rec.edges.add((id(caller.f_code), code_key))

    def rearm(self) -> None:
        """A new test: every function the last one saw is to be seen again."""
        todo = self.todo
        for key in self.seen:
            todo[key] = True
        self.seen.clear()

    # -- importlib protocol ----------------------------------------------------------------------
    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None) -> ModuleSpec | None:
        import importlib.machinery

        # Anything not instrumented is declined (None), so the finders after this one, pytest's
        # assertion rewriter among them, handle it exactly as they would without the probe.
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return None
        origin = spec.origin or ""
        relative = origin[len(self.root):] if origin.startswith(self.root) else None
        if relative is None or _is_test_path(relative) or _foreign_path(relative):
            return None
        spec.loader = _InstrumentingLoader(fullname, origin, self)
        return spec

    def transform(self, source: bytes, path: str) -> types.CodeType:
        import ast

        tree = ast.parse(source, path)
        instrumenter = self

        class Marker(ast.NodeTransformer):
            def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
                self.generic_visit(node)
                body = node.body
                first = body[0] if body else None
                at = 1 if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                           and isinstance(first.value.value, str)) else 0
                anchor = body[at] if at < len(body) else body[-1]
                key = instrumenter.next_key
                instrumenter.next_key += 1
                if sys.version_info >= (3, 9):
                    flag: ast.expr = ast.Subscript(ast.Name("__equisa_todo__", ast.Load()), ast.Constant(key),
                                                   ast.Load())
                else:  # an index is wrapped in ast.Index there
                    flag = cast("ast.Expr", ast.parse("__equisa_todo__[%d]" % key).body[0]).value
                marker = ast.If(
                    test=flag,
                    body=[ast.Expr(ast.Call(ast.Name("__equisa_enter__", ast.Load()),
                                            [ast.Constant(key)], []))],
                    orelse=[],
                )
                for part in ast.walk(marker):
                    ast.copy_location(part, anchor)
                    if isinstance(part, (ast.expr, ast.stmt)):  # the nodes with an end position
                        part.end_lineno = anchor.lineno
                        part.end_col_offset = anchor.col_offset
                body.insert(at, marker)
                return node

            visit_AsyncFunctionDef = visit_FunctionDef

        code = compile(Marker().visit(tree), path, "exec", dont_inherit=True)
        self.todo.extend([True] * (self.next_key - len(self.todo)))
        return code

    def instrument_loaded(self, modules: Mapping[str, types.ModuleType]) -> None:
        """Instrument, in place, the project modules imported before this finder was installed.

        A pytest plugin of the project (``pytest-sanic`` for sanic, say, loaded from its entry
        point) imports the project before ``pytest_load_initial_conftests``; without this its
        functions would never be seen. Each module's source is compiled again with the markers,
        and every function of the module (methods, properties, static and class methods, the
        ``__wrapped__`` of a decorator) gets the marked code object of the same name and first
        line. Functions made later by running that code (closures, nested definitions) are
        marked already.
        """
        for name, module in list(modules.items()):
            path = getattr(module, "__file__", None)
            if not path or not path.endswith(".py"):
                continue
            real = real_file(path)
            relative = real[len(self.root):] if real.startswith(self.root) else None
            if relative is None or _is_test_path(relative) or _foreign_path(relative):
                continue
            try:
                with open(real, "rb") as handle:
                    marked = self.transform(handle.read(), path)
            except (OSError, SyntaxError, ValueError):
                continue
            codes: dict[tuple[str, int], types.CodeType] = {}
            _index_codes(marked, codes)
            self.bind(module.__dict__)
            for function in _functions_defined_in(module, path):
                old = function.__code__
                new = codes.get((old.co_name, old.co_firstlineno))
                if new is not None and new.co_freevars == old.co_freevars:
                    function.__code__ = new
            self.instrumented.append(name)


def _index_codes(code: types.CodeType, found: dict[tuple[str, int], types.CodeType]) -> None:
    """Every code object under ``code`` by (name, first line)."""
    for const in code.co_consts:
        if isinstance(const, type(code)):
            found.setdefault((const.co_name, const.co_firstlineno), const)
            _index_codes(const, found)


def _functions_defined_in(module: types.ModuleType, path: str) -> list[types.FunctionType]:
    """The plain functions reachable from a module's namespace whose code comes from ``path``."""
    seen: set[int] = set()
    out: list[types.FunctionType] = []
    stack: list[object] = list(vars(module).values())
    while stack:
        value = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, types.FunctionType):
            if value.__code__.co_filename == path:
                out.append(value)
            wrapped = getattr(value, "__wrapped__", None)
            if wrapped is not None:
                stack.append(wrapped)
        elif isinstance(value, (staticmethod, classmethod)):
            stack.append(value.__func__)
        elif isinstance(value, property):
            stack.extend(f for f in (value.fget, value.fset, value.fdel) if f is not None)
        elif isinstance(value, type) and getattr(value, "__module__", None) == module.__name__:
            stack.extend(vars(value).values())
    return out


def _is_test_path(relative: str) -> bool:
    parts = relative.split(_os.sep)
    name = parts[-1]
    return (name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py")
            or any(p in ("tests", "test") for p in parts[:-1]))


def _foreign_path(relative: str) -> bool:
    return any(p in FOREIGN_PARTS or p.startswith(".") for p in relative.split(_os.sep)[:-1])


try:
    import importlib.machinery as _machinery

    class _InstrumentingLoader(_machinery.SourceFileLoader):
        """Compiles from source (never from a cached .pyc) with the entry markers inserted."""

        def __init__(self, fullname: str, path: str, instrumenter: _ImportInstrumenter) -> None:
            super().__init__(fullname, path)
            self.instrumenter = instrumenter

        def get_code(self, fullname: str) -> types.CodeType | None:
            source = self.get_data(self.path)
            try:
                code = self.instrumenter.transform(source, self.path)
            except SyntaxError:
                return super().get_code(fullname)  # let Python report it as usual
            self.instrumenter.instrumented.append(fullname)
            return code

        def exec_module(self, module: types.ModuleType) -> None:
            self.instrumenter.bind(module.__dict__)
            super().exec_module(module)
except ImportError:  # pragma: no cover - importlib.machinery is always there
    pass


class _InstrumentBackend:
    """Import-time instrumentation (3.8-3.11): see ``_ImportInstrumenter``."""

    name = "instrument"

    def __init__(self, recorder: _Recorder) -> None:
        self.recorder = recorder
        self.instrumenter = _EARLY.get("instrumenter")
        if self.instrumenter is not None:
            self.instrumenter.recorder = recorder

    def install(self) -> None:
        pass

    def uninstall(self) -> None:
        if self.instrumenter is not None and self.instrumenter in sys.meta_path:
            sys.meta_path.remove(self.instrumenter)

    def arm(self) -> None:
        if self.instrumenter is not None:
            self.instrumenter.rearm()

    def importing(self, on: bool) -> None:
        if self.instrumenter is not None:
            self.instrumenter.importing(on)

    def enter(self) -> None:
        pass

    def leave(self) -> None:
        pass


class _NoBackend:
    """Outcomes only: nothing is traced."""

    name = "off"

    def __init__(self, recorder: _Recorder) -> None:
        self.recorder = recorder

    def importing(self, on: bool) -> None:
        pass

    def install(self) -> None:
        pass

    def uninstall(self) -> None:
        pass

    def arm(self) -> None:
        pass

    def enter(self) -> None:
        pass

    def leave(self) -> None:
        pass


# ---------------------------------------------------------------------------------------------
# Node naming: FQN = module + qualified name; line range from the code object.


def _last_line(code: types.CodeType) -> int:
    last = code.co_firstlineno
    stack = [code]
    while stack:
        current = stack.pop()
        if hasattr(current, "co_lines"):
            for _start, _end, line in current.co_lines():
                if line is not None and line > last:
                    last = line
        else:  # Python 3.8 / 3.9
            import dis

            for _offset, line in dis.findlinestarts(current):
                if line > last:
                    last = line
        stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    return last


class _QualnameIndex:
    """Qualified names by (file, first line) from the source, for interpreters without co_qualname,
    and the definitions that share a qualified name (a property's getter and setter, a function
    defined twice): all but the last, which Python binds, are told apart as ``name#k``, the k-th
    definition in source order (``equisa_core.common.source_edit`` reads the same spelling)."""

    def __init__(self) -> None:
        self.by_file: dict[str, tuple[dict[int, str], dict[str, list[int]]]] = {}
        #: file -> the names that two or more ``def`` statements in it may have (None: unknown)
        self.repeated: dict[str, frozenset[str] | None] = {}

    def _tables(self, code: types.CodeType) -> tuple[dict[int, str], dict[str, list[int]]]:
        tables = self.by_file.get(code.co_filename)
        if tables is None:
            tables = self.by_file[code.co_filename] = self._index(code.co_filename)
        return tables

    def lookup(self, code: types.CodeType) -> str | None:
        return self._tables(code)[0].get(code.co_firstlineno)

    def distinct(self, code: types.CodeType, qualname: str) -> str:
        """``qualname``, or ``qualname#k`` for a definition that a later one of the same name
        shadows."""
        repeated = self.repeated.get(code.co_filename, ())
        if repeated == ():
            repeated = self.repeated[code.co_filename] = _repeated_def_names(code.co_filename)
        if repeated is not None and code.co_name not in repeated:
            return qualname  # no other definition has its name, so none has its qualified name
        firsts = self._tables(code)[1].get(qualname)
        if not firsts or len(firsts) < 2 or code.co_firstlineno not in firsts:
            return qualname
        index = firsts.index(code.co_firstlineno)
        return qualname if index == len(firsts) - 1 else "%s#%d" % (qualname, index + 1)

    @staticmethod
    def _index(filename: str) -> tuple[dict[int, str], dict[str, list[int]]]:
        import ast

        try:
            with _open(filename, "rb") as handle:
                tree = ast.parse(handle.read())
        except Exception:
            return {}, {}
        table: dict[int, str] = {}
        sites: dict[str, list[int]] = {}  # qualname -> first lines of its definitions, in source order

        def walk(node: ast.AST, prefix: str) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    qualname = prefix + child.name
                    first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                    table[first] = qualname
                    table.setdefault(child.lineno, qualname)
                    sites.setdefault(qualname, []).append(first)
                    walk(child, qualname + ".<locals>.")
                elif isinstance(child, ast.ClassDef):
                    walk(child, prefix + child.name + ".")
                else:
                    walk(child, prefix)

        walk(tree, "")
        for firsts in sites.values():
            firsts.sort()
        return table, sites


#: ``def`` and what follows it up to the parameters (over line continuations); the ``coding``
#: declaration of PEP 263.
_DEF_NAME = re.compile(r"\bdef(?:\s|\\\r?\n)+([^\s(\[:\\]*)")
_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


def _repeated_def_names(filename: str) -> frozenset[str] | None:
    """The names that more than one ``def`` of ``filename`` has, from a scan of its text (a word
    ``def`` in a string or comment counts too: the set can only be too large); None when the text
    cannot be read so (an encoding other than UTF-8, a name that is not ASCII), which sends the
    caller to the full index. Two definitions that share a qualified name share their name, so a
    function whose name is not in the set has a qualified name of its own and its file need not
    be parsed (``_QualnameIndex._index`` parses and walks the whole file: most of what the probe
    cost on the benchmark's suite, before)."""
    try:
        with _open(filename, "rb") as handle:
            data = handle.read()
        for line in data.split(b"\n", 2)[:2]:
            declared = _CODING.match(line)
            if declared and declared.group(1).lower().replace(b"_", b"-") not in (b"utf-8", b"utf8"):
                return None
        text = data.decode("utf-8")
    except Exception:
        return None
    seen: set[str] = set()
    repeated: set[str] = set()
    for name in _DEF_NAME.findall(text):
        if not name.isascii():
            return None  # the parser normalizes identifiers (NFKC): leave it to the parser
        (repeated if name in seen else seen).add(name)
    return frozenset(repeated)


# ---------------------------------------------------------------------------------------------
# Recording calls (arguments, results, exceptions) of requested functions, for carved tests and
# invariant mining. A trace hook (not the coverage backend) is used because it alone reports
# returns and exceptions of chosen frames on every version from 3.8 on; it is on only during a
# recorded run's test phases, so ordinary traced runs never pay for it.

MAX_CALLS_PER_FUNCTION = 10
MAX_REPR = 500


def encode_value(value: object) -> dict[str, object]:
    """A JSON description of ``value``: type, capped repr, and how to rebuild it when possible.

    ``literal`` is set when ``ast.literal_eval(repr(value))`` gives back an equal value of the
    same type. Otherwise ``build`` is set when ``_build`` can write the value in the build
    grammar (``Decimal('1.50')``, dates, enum members, plain objects holding such values...);
    and objects with a literal ``__dict__`` get ``state`` (attribute -> literal) as well.
    """
    kind = type(value)
    described: dict[str, object] = {"type": kind.__module__ + "." + kind.__qualname__}
    try:
        text = repr(value)
    except Exception:
        return described
    described["repr"] = text[:MAX_REPR]
    if _literal(value, text):
        described["literal"] = text
        return described
    build = _build(value)
    if build is not None:
        described["build"] = build
    state = _literal_state(value)
    if state is not None:
        described["state"] = state
    return described


def _literal_state(value: object) -> dict[str, str] | None:
    """Attribute -> literal for an object whose ``__dict__`` holds only literals, else None."""
    if issubclass(type(value), type):
        return None
    try:  # the raw __dict__: a user __getattribute__ or __getattr__ must not run (nor raise here)
        state = object.__getattribute__(value, "__dict__")
    except Exception:
        return None
    if type(state) is not dict or len(state) > 20:
        return None
    literals: dict[str, str] = {}
    for name, item in state.items():
        try:
            item_text = repr(item)
        except Exception:
            return None
        if not isinstance(name, str) or not _literal(item, item_text):
            return None
        literals[name] = item_text
    return literals


def _literal(value: object, text: str) -> bool:
    if len(text) > 4 * MAX_REPR:
        return False
    import ast

    try:
        again: object = ast.literal_eval(text)
    except Exception:
        return False
    try:
        return type(again) is type(value) and again == value
    except Exception:
        return False


# -- builds: values without a literal, written in a small grammar ----------------------------------
# The host checks a build against this grammar (``equisa_core.common.values.parse_build``) and never
# evaluates it:
#
#   build := literal | float('nan') | float('inf') | float('-inf')
#          | [build, ...] | (build, ...) | {build: build, ...} | {build, ...} | set()
#          | frozenset() | frozenset({build, ...})
#          | decimal.Decimal('1.50') | fractions.Fraction(1, 3) | uuid.UUID('...')
#          | datetime.date(y, m, d) | datetime.datetime(y, m, d, H, M, S, us[, tzinfo=tz][, fold=1])
#          | datetime.time(H, M, S, us[, tzinfo=tz][, fold=1]) | datetime.timedelta(days=.., ...)
#          | datetime.timezone.utc | datetime.timezone(datetime.timedelta(...)[, 'name'])
#          | pathlib.PurePosixPath('a/b') (and PureWindowsPath, PosixPath, WindowsPath)
#          | module.Class.MEMBER                                   an enum member
#          | __equisa_class__('module:Qualname')                   a class (``int``, a user's class)
#          | __equisa_object__('module:Qualname', {'attr': build, ...}[, {'slot': build, ...}])
#
# Objects are instances of classes found again at ``module.Qualname`` whose whole state is their
# ``__dict__`` and ``__slots__`` (no base but ``object`` keeps C-level state: ``_class_layout``).
# Stdlib values are recognised by exact type, so no user code runs: no ``repr``, no
# ``__getattr__``, no ``__eq__``; slots are read through their member descriptors. The cost is
# bounded: containers and objects nest at most MAX_BUILD_DEPTH deep, a build holds at most
# MAX_BUILD_ITEMS values and MAX_BUILD_CHARS characters, and no module is imported.

#: 5: a parser's result object holding a list of objects that each hold a list of texts (a
#: docstring's sections, each with its arguments) is built whole; 3 cut it at the texts.
MAX_BUILD_DEPTH = 5
MAX_BUILD_ITEMS = 200
MAX_BUILD_CHARS = 4 * MAX_REPR
_POINTER = 8 if sys.maxsize > 2 ** 32 else 4
_HEAP_TYPE = 1 << 9
_CLASS_CACHE_SIZE = 2000
#: id(class) -> (class, (module, qualname) or None, slots or None); the class is kept alive so
#: its id cannot be reused.
_CLASSES: dict[int, tuple[type, tuple[str, str] | None, Slots | None]] = {}


class _NoBuild(Exception):
    """The value, or a part of it, has no build."""


def _build(value: object) -> str | None:
    """The build of ``value`` (see above), or None."""
    budget = [MAX_BUILD_ITEMS, MAX_BUILD_CHARS]
    try:
        text = _build_part(value, 0, budget)
    except Exception:  # _NoBuild, or anything a strange value raises: never fail the test
        return None
    return text if len(text) <= MAX_BUILD_CHARS else None


def _spend(budget: list[int], text: str) -> str:
    budget[1] -= len(text)
    if budget[1] < 0:
        raise _NoBuild()
    return text


def _build_part(value: object, depth: int, budget: list[int]) -> str:
    budget[0] -= 1
    if budget[0] < 0:
        raise _NoBuild()
    kind = type(value)
    if value is None or kind is bool:
        return repr(value)
    scalar = _SCALAR_BUILDS.get(kind)
    if scalar is not None:
        return scalar(value, budget)
    if kind in (list, tuple, set, frozenset, dict):
        return _build_container(value, kind, depth, budget)
    if issubclass(kind, type):  # a class (isinstance could ask value.__class__): where it is imported from
        where = _class_place(cast(type, value))
        if where is None:
            raise _NoBuild()
        return _spend(budget, "__equisa_class__(%r)" % (where[0] + ":" + where[1]))
    named = _build_named(value, kind)
    if named is not None:
        return _spend(budget, named)
    return _build_object(value, kind, depth, budget)


def _build_int(value: int, budget: list[int]) -> str:
    if value.bit_length() > 4 * MAX_BUILD_CHARS:
        raise _NoBuild()
    return _spend(budget, repr(value))


def _build_float(value: float, budget: list[int]) -> str:
    if value != value:
        return "float('nan')"
    if value in (_INF, -_INF):
        return "float('inf')" if value > 0 else "float('-inf')"
    return _spend(budget, repr(value))


def _build_complex(value: complex, budget: list[int]) -> str:
    if value != value or abs(value) == _INF:
        raise _NoBuild()
    return _spend(budget, repr(value))


def _build_text(value: str | bytes, budget: list[int]) -> str:
    if len(value) > budget[1]:
        raise _NoBuild()
    return _spend(budget, repr(value))


#: The builds of scalars, by exact type (None and bool are their repr, at no cost).
_SCALAR_BUILDS: dict[type, Callable[[Any, list[int]], str]] = {
    int: _build_int,
    float: _build_float,
    complex: _build_complex,
    str: _build_text,
    bytes: _build_text,
}


def _build_named(value: object, kind: type) -> str | None:
    """The build of a stdlib value or an enum member (a constructor call or a dotted name), else None."""
    stdlib = _STDLIB_BUILDS.get(kind.__name__)
    if stdlib is not None:
        module = sys.modules.get(stdlib[0])
        if module is not None and vars(module).get(kind.__name__) is kind:
            return stdlib[1](value, module)
    enum = sys.modules.get("enum")
    if enum is not None and issubclass(kind, enum.Enum):  # isinstance could ask value.__class__
        return _build_enum(value, kind)
    return None


_INF = float("inf")


def _build_container(value: Any, kind: type, depth: int, budget: list[int]) -> str:
    """The build of ``value``, whose type is exactly ``kind``: list, tuple, set, frozenset or dict."""
    if depth >= MAX_BUILD_DEPTH or len(value) > budget[0]:
        raise _NoBuild()
    if kind is dict:
        items = ["%s: %s" % (_build_part(k, depth + 1, budget), _build_part(v, depth + 1, budget))
                 for k, v in dict.items(value)]
        return "{" + ", ".join(items) + "}"
    parts = [_build_part(item, depth + 1, budget) for item in value]
    if kind is list:
        return "[" + ", ".join(parts) + "]"
    if kind is tuple:
        return "(" + parts[0] + ",)" if len(parts) == 1 else "(" + ", ".join(parts) + ")"
    parts.sort()  # a set's order is the hash's: sorted, the same set is written the same way
    if kind is set:
        return "{" + ", ".join(parts) + "}" if parts else "set()"
    return "frozenset({" + ", ".join(parts) + "})" if parts else "frozenset()"


def _build_enum(value: object, kind: type) -> str:
    where = _class_info(kind)[0]
    name = object.__getattribute__(value, "_name_")
    members = vars(kind).get("_member_map_")
    if where is None or not isinstance(members, dict) or members.get(name) is not value:
        raise _NoBuild()
    if not isinstance(name, str) or not name.isidentifier() or name.startswith("__"):
        raise _NoBuild()
    return where[0] + "." + where[1] + "." + name


def _build_object(value: object, kind: type, depth: int, budget: list[int]) -> str:
    if depth >= MAX_BUILD_DEPTH or kind is object:  # a bare object() is a sentinel: only its identity counts
        raise _NoBuild()
    where, slots = _class_info(kind)[:2]
    if where is None or slots is None:
        raise _NoBuild()
    try:
        state = object.__getattribute__(value, "__dict__")
    except AttributeError:
        state = {}
    if type(state) is not dict or len(state) + len(slots) > budget[0]:
        raise _NoBuild()
    attributes: list[str] = []
    for name, item in dict.items(state):
        if type(name) is not str:
            raise _NoBuild()
        attributes.append(_spend(budget, "%r: " % name) + _build_part(item, depth + 1, budget))
    slot_values: list[str] = []
    for name, descriptor in slots:
        try:
            item = descriptor.__get__(value, kind)
        except AttributeError:  # an unset slot stays unset
            continue
        slot_values.append(_spend(budget, "%r: " % name) + _build_part(item, depth + 1, budget))
    text = "__equisa_object__(%r, {%s}" % (where[0] + ":" + where[1], ", ".join(attributes))
    if slot_values:
        text += ", {%s}" % ", ".join(slot_values)
    _spend(budget, where[0] + where[1])
    return text + ")"


def _class_info(cls: type) -> tuple[tuple[str, str] | None, Slots | None]:
    """``((module, qualname) or None, slots or None)`` of a class, cached.

    The first part is set when ``module.qualname`` names the class itself (so a carved test can
    import it); the second, the slot names and member descriptors, when instances keep all
    their state in ``__dict__`` and slots: each class of the MRO is a Python class adding at
    most its slots, a ``__dict__`` and a weakref pointer to its base's layout, or a C class
    adding nothing (``typing.Generic``). Builtin bases that hold data (``int``, ``list``,
    ``Exception``, ``Decimal``) fail that test.
    """
    known = _CLASSES.get(id(cls))
    if known is not None and known[0] is cls:
        return known[1:]
    info = (_class_place(cls), _class_layout(cls))
    if len(_CLASSES) < _CLASS_CACHE_SIZE:
        _CLASSES[id(cls)] = (cls,) + info
    return info


def _class_place(cls: type) -> tuple[str, str] | None:
    module_name, qualname = cls.__module__, cls.__qualname__
    if not isinstance(module_name, str) or not isinstance(qualname, str):
        return None
    parts = module_name.split(".") + qualname.split(".")
    if not all(p.isidentifier() and not p.startswith("__") for p in parts):
        return None  # <locals>, __main__
    found: object = sys.modules.get(module_name)
    for part in qualname.split("."):
        if found is None:
            return None
        try:
            found = vars(found).get(part)
        except TypeError:
            return None
    return (module_name, qualname) if found is cls else None


def _class_layout(cls: type) -> Slots | None:
    slots: list[tuple[str, types.MemberDescriptorType]] = []
    for klass in cls.__mro__[:-1]:
        base = klass.__base__
        assert base is not None  # only object has none, and the MRO's last class, object, is left out
        growth = klass.__basicsize__ - base.__basicsize__
        if klass.__itemsize__:
            return None
        if not klass.__flags__ & _HEAP_TYPE:
            if growth:
                return None
            continue
        own = vars(klass).get("__slots__", ())
        names = [own] if isinstance(own, str) else list(own)
        if growth > _POINTER * (len(names) + 2):
            return None
        for name in names:
            if not isinstance(name, str) or name in ("__dict__", "__weakref__"):
                continue
            if name.startswith("__") and not name.endswith("__"):
                name = "_" + klass.__name__.lstrip("_") + name
            descriptor = vars(klass).get(name)
            if type(descriptor) is not types.MemberDescriptorType:
                return None
            slots.append((name, descriptor))
    return tuple(slots)


def _build_decimal(value: decimal.Decimal, module: types.ModuleType) -> str:
    if value.is_nan():
        raise _NoBuild()  # NaN cannot be compared (sNaN even raises)
    return "decimal.Decimal(%r)" % str(value)


def _build_fraction(value: fractions.Fraction, module: types.ModuleType) -> str:
    if max(abs(value.numerator).bit_length(), value.denominator.bit_length()) > 4 * MAX_BUILD_CHARS:
        raise _NoBuild()
    return "fractions.Fraction(%d, %d)" % (value.numerator, value.denominator)


def _build_date(value: datetime.date, module: types.ModuleType) -> str:
    return "datetime.date(%d, %d, %d)" % (value.year, value.month, value.day)


def _time_options(value: datetime.time | datetime.datetime, module: types.ModuleType) -> str:
    text = ""
    if value.tzinfo is not None:
        text += ", tzinfo=" + _build_timezone(value.tzinfo, module)
    if value.fold:
        text += ", fold=1"
    return text + ")"


def _build_datetime(value: datetime.datetime, module: types.ModuleType) -> str:
    return "datetime.datetime(%d, %d, %d, %d, %d, %d, %d" % (
        value.year, value.month, value.day, value.hour, value.minute, value.second, value.microsecond
    ) + _time_options(value, module)


def _build_time(value: datetime.time, module: types.ModuleType) -> str:
    return "datetime.time(%d, %d, %d, %d" % (
        value.hour, value.minute, value.second, value.microsecond) + _time_options(value, module)


def _build_timedelta(value: datetime.timedelta, module: types.ModuleType) -> str:
    fields = (("days", value.days), ("seconds", value.seconds), ("microseconds", value.microseconds))
    parts = ["%s=%d" % (name, amount) for name, amount in fields if amount]
    return "datetime.timedelta(%s)" % (", ".join(parts) or "0")


def _build_timezone(value: datetime.tzinfo, module: types.ModuleType) -> str:
    exact = type(value) is module.timezone  # (a bool: a narrowed module.timezone would lose .utc)
    if not exact:
        raise _NoBuild()  # zoneinfo, pytz, dateutil: not in the grammar
    if value is module.timezone.utc:
        return "datetime.timezone.utc"
    offset = value.utcoffset(None)
    if offset is None:  # never for a datetime.timezone
        raise _NoBuild()
    text = "datetime.timezone(" + _build_timedelta(offset, module)
    if value.tzname(None) != module.timezone(offset).tzname(None):
        text += ", %r" % value.tzname(None)
    return text + ")"


def _build_uuid(value: uuid.UUID, module: types.ModuleType) -> str:
    return "uuid.UUID(%r)" % str(value)


def _build_path(value: pathlib.PurePath, module: types.ModuleType) -> str:
    return "pathlib.%s(%r)" % (type(value).__name__, str(value))


#: Stdlib value types by class name: (the module that must hold exactly that class, writer).
_STDLIB_BUILDS: dict[str, tuple[str, Callable[[Any, types.ModuleType], str]]] = {
    "Decimal": ("decimal", _build_decimal),
    "Fraction": ("fractions", _build_fraction),
    "date": ("datetime", _build_date),
    "datetime": ("datetime", _build_datetime),
    "time": ("datetime", _build_time),
    "timedelta": ("datetime", _build_timedelta),
    "timezone": ("datetime", _build_timezone),
    "UUID": ("uuid", _build_uuid),
    "PurePosixPath": ("pathlib", _build_path),
    "PureWindowsPath": ("pathlib", _build_path),
    "PosixPath": ("pathlib", _build_path),
    "WindowsPath": ("pathlib", _build_path),
}


class _CallRecorder:
    """Records calls of the functions named by FQN during test phases."""

    def __init__(self, fqns: Iterable[str],
                 describe_code: Callable[[types.CodeType, types.FrameType | None], str | None]) -> None:
        self.fqns = frozenset(fqns)
        self.names = frozenset(f.rsplit(".", 1)[-1].split("#", 1)[0] for f in self.fqns)
        self.describe_code = describe_code  # (code, frame) -> fqn or None
        self.by_code: dict[int, tuple[types.CodeType, str | None]] = {}  # id(code) -> (code, fqn or None)
        self.calls: list[Record] = []
        self.counts: dict[str, int] = {}

    def begin(self) -> None:
        self.calls = []
        self.counts = {}

    def enter(self) -> None:
        threading.settrace(self._global)
        sys.settrace(self._global)

    def leave(self) -> None:
        sys.settrace(None)
        threading.settrace(None)

    def _fqn(self, code: types.CodeType, frame: types.FrameType) -> str | None:
        known = self.by_code.get(id(code))
        if known is None:
            known = self.by_code[id(code)] = (code, self.describe_code(code, frame))
        return known[1]

    def _global(self, frame: types.FrameType, event: str, arg: object) -> TraceFunction | None:
        code = frame.f_code
        if code.co_name not in self.names:
            return None
        fqn = self._fqn(code, frame)
        if fqn is None or fqn not in self.fqns or self.counts.get(fqn, 0) >= MAX_CALLS_PER_FUNCTION:
            return None
        self.counts[fqn] = self.counts.get(fqn, 0) + 1
        count = code.co_argcount + code.co_kwonlyargcount
        count += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)  # *args, **kwargs
        local = frame.f_locals
        arguments: dict[str, object] = {}
        call: Record = {"fqn": fqn, "args": arguments, "result": None, "raised": None}
        try:
            for name in code.co_varnames[:count]:
                if name in local:
                    arguments[name] = encode_value(local[name])
        except Exception:
            return None
        self.calls.append(call)
        pending: list[BaseException] = []

        def local_tracer(frame: types.FrameType, event: str, arg: Any) -> TraceFunction:
            if event == "exception":
                pending[:] = [arg[1]]
            elif event == "line" and pending:
                pending[:] = []  # the exception was caught inside the function
            elif event == "return":
                if pending:
                    error = pending[0]
                    call["raised"] = type(error).__module__ + "." + type(error).__qualname__
                    call["raised_message"] = _tail(str(error), 300)
                else:
                    call["result"] = encode_value(arg)
            return local_tracer

        return local_tracer


class ProbePlugin:
    """The pytest plugin object: wires pytest's hooks to a recorder, a backend and the output file."""

    def __init__(self, out_path: str, root: str, select_path: str | None = None,
                 shard: tuple[int, int] | None = None, test_timeout: float | None = None, trace: bool = True,
                 record_path: str | None = None, test_limits: dict[str, float] | None = None,
                 order_seed: int | None = None) -> None:
        self.root = _os_path.realpath(root)
        self.selection = _read_selection(select_path) if select_path else None
        self.shard = shard
        self.order_seed = order_seed
        timed = hasattr(signal, "setitimer")
        self.test_timeout = test_timeout if test_timeout and timed else None
        # node id -> that test's own limit (--equisa-test-limits); the others get test_timeout
        self.test_limits = dict(test_limits or {}) if timed else {}
        self.previous_alarm: SignalHandler = None
        self.previous_cpu_alarm: SignalHandler = None
        self.alarm_seconds = 0.0  # the running test's time limit, set with its alarm
        self.cpu_alarm_seconds = 0.0  # its CPU-time limit, when it has one (a mutant's test)
        self.out: IO[str] | None = _open(out_path, "a", encoding="utf-8")
        self.recorder = _Recorder(self.root)
        name, self.reason = choose_backend()
        if not trace:
            name, self.reason = "off", "tracing was not asked for (--equisa-trace=0)"
        if name == "instrument" and "instrumenter" not in _EARLY:
            name, self.reason = "setprofile", "the instrumenter was not installed before the project loaded"
        backends: dict[str, Callable[[_Recorder], Backend]] = {
            "sys.monitoring": _MonitoringBackend, "setprofile": _ProfileBackend,
            "instrument": _InstrumentBackend, "off": _NoBackend}
        self.backend = backends[name](self.recorder)
        self.qualnames = _QualnameIndex()
        self.call_recorder: _CallRecorder | None = None
        if record_path:
            self.call_recorder = _CallRecorder(_read_selection(record_path), self._code_fqn)
        self.reports: dict[str, list[pytest.TestReport]] = {}
        self.excinfo: dict[str, pytest.ExceptionInfo[BaseException]] = {}
        # test module node id -> the project functions its top-level code called on import
        self.module_calls: dict[str, set[int]] = {}
        # node id -> (outcome, duration) of its ordinary run, for mutant rounds
        self.baseline: dict[str, Baseline] = {}
        self.collected: list[pytest.Item] = []  # every test collected, before this run's selection
        self._write_session()

    def _write_session(self) -> None:
        self._write({
            "kind": "session",
            "probe_version": PROBE_VERSION,
            "python": "%d.%d.%d" % sys.version_info[:3],
            "executable": sys.executable,
            "backend": self.backend.name,
            "reason": self.reason,
            "root": self.root,
        })

    # -- output ---------------------------------------------------------------------------------
    def _write(self, record: Record) -> None:
        if self.out is None:  # a fork re-running failing tests: only the parent writes
            return
        self.out.write(_encode(record) + "\n")
        self.out.flush()

    def _relative(self, filename: str) -> str:
        real = filename if _os_path.isabs(filename) else _os_path.join(self.root, filename)
        if real.startswith(self.root + _os.sep):
            return real[len(self.root) + 1:].replace(_os.sep, "/")
        return filename

    # -- pytest hooks ---------------------------------------------------------------------------
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.backend.install()

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int | pytest.ExitCode) -> None:
        self._stop_alarm()
        self.backend.uninstall()
        outside = imported_elsewhere(self.root)
        if outside:
            self._write({"kind": "outside", "modules": outside})
        self._write({"kind": "end", "exitstatus": int(exitstatus)})
        if self.out is not None:
            self.out.close()

    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        """Keep only the selected tests (``--equisa-select``) and this shard's share of them, shuffled
        when asked (``--equisa-order-seed``)."""
        self.collected = list(items)
        keep = items
        if self.selection is not None:
            keep = [item for item in keep if item.nodeid in self.selection]
        if self.shard is not None:
            index, count = self.shard
            keep = [item for position, item in enumerate(keep) if position % count == index]
        if len(keep) != len(items):
            kept = set(id(item) for item in keep)
            config.hook.pytest_deselected(items=[item for item in items if id(item) not in kept])
            items[:] = keep
        if self.order_seed is not None:
            import random

            random.Random(self.order_seed).shuffle(items)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Generator[None, object, None]:
        """Trace a test module's import: what its top-level code calls (a web app's routes added by
        decorators, a fixture object built once) is part of every test in it, as it is of the
        module's failures. Calls made while it imports other modules, or by its import statements,
        do not count (``_Recorder.from_module_code``)."""
        path = getattr(collector, "path", None) or getattr(collector, "fspath", None)
        if not isinstance(collector, pytest.Module) or path is None or isinstance(self.backend, _NoBackend):
            yield
            return
        rec = self.recorder
        self.backend.arm()
        rec.begin()
        rec.importing = _os_path.realpath(str(path))
        self.backend.importing(True)
        rec.active = True
        self.backend.enter()
        try:
            yield
        finally:
            self.backend.leave()
            self.backend.importing(False)
            rec.importing = None
            covered, _ = rec.end()
            if covered:
                self.module_calls[collector.nodeid] = covered

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._write({"kind": "collected", "tests": [item.nodeid for item in session.items]})

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self._write({
                "kind": "collect_error",
                "location": report.nodeid or str(getattr(report, "fspath", "")),
                "message": _tail(report.longreprtext, MESSAGE_CHARS),
            })

    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        # Called before fixtures are set up, so fixture code counts towards the test.
        self._write({"kind": "start", "test": nodeid})
        if self.call_recorder is not None:
            self.call_recorder.begin()
        self._start_alarm(nodeid)
        self.backend.arm()
        self.recorder.begin()

    # (The phases delegate to ``_phase``'s generator: a context manager's objects and calls cost more.)
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, object, None]:
        yield from self._phase()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, object, None]:
        yield from self._phase()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item,
                                nextitem: pytest.Item | None) -> Generator[None, object, None]:
        yield from self._phase()

    def _phase(self) -> Generator[None, object, None]:
        """Trace one of the test's phases; pytest's reporting in between is not traced."""
        self.recorder.active = True
        self.backend.enter()
        if self.call_recorder is not None:
            self.call_recorder.enter()
        try:
            yield
        finally:
            if self.call_recorder is not None:
                self.call_recorder.leave()
            self.backend.leave()
            self.recorder.active = False

    def _code_fqn(self, code: types.CodeType, frame: types.FrameType | None) -> str | None:
        """The FQN of a project code object (None for code outside the project)."""
        info = self.recorder.lookup(code, frame)
        return None if info is None else self._describe(info)

    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> None:
        if call.excinfo is not None and call.when in ("setup", "call", "teardown"):
            self.excinfo.setdefault(item.nodeid, call.excinfo)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.reports.setdefault(report.nodeid, []).append(report)
        if report.when == "teardown":
            self._finish_test(report.nodeid)

    def pytest_runtest_logfinish(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        if nodeid in self.reports:  # teardown never reported (e.g. an internal error)
            self._finish_test(nodeid)

    # -- per-test record ------------------------------------------------------------------------
    def limit_of(self, nodeid: str) -> float | None:
        """The time limit of the test ``nodeid``: its own, else the per-test timeout (None: none)."""
        return self.test_limits.get(nodeid, self.test_timeout)

    def longest_limit(self) -> float | None:
        """The longest time limit any test has (None: tests have no limit)."""
        longest = max([self.test_timeout or 0.0] + list(self.test_limits.values()))
        return longest or None

    def _start_alarm(self, nodeid: str, seconds: float | None = None,
                     cpu_seconds: float | None = None) -> float | None:
        """Arm the test's wall-clock limit (its own, or ``seconds`` when shorter) and, when given and
        shorter, a limit on the CPU time the process spends meanwhile (``ITIMER_PROF``): a loop
        burns CPU time at once, while a busy machine that holds the process back adds none.
        Returns the wall-clock limit armed (None: the test has none)."""
        limit = self.limit_of(nodeid)
        if limit is None:
            return None
        self.alarm_seconds = min(seconds, limit) if seconds else limit
        self.previous_alarm = signal.signal(signal.SIGALRM, self._on_alarm)
        signal.setitimer(signal.ITIMER_REAL, self.alarm_seconds)
        if cpu_seconds and cpu_seconds < self.alarm_seconds and hasattr(signal, "SIGPROF"):
            self.cpu_alarm_seconds = cpu_seconds
            self.previous_cpu_alarm = signal.signal(signal.SIGPROF, self._on_cpu_alarm)
            signal.setitimer(signal.ITIMER_PROF, cpu_seconds)
        return self.alarm_seconds

    def _stop_alarm(self) -> None:
        if self.previous_cpu_alarm is not None:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGPROF, self.previous_cpu_alarm)
            self.previous_cpu_alarm = None
        if self.previous_alarm is None:
            return
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.previous_alarm)
        self.previous_alarm = None

    def _on_alarm(self, signum: int, frame: types.FrameType | None) -> None:
        raise TestTimeout("the test ran longer than %gs (EQUISA's per-test timeout)" % self.alarm_seconds)

    def _on_cpu_alarm(self, signum: int, frame: types.FrameType | None) -> None:
        raise TestTimeout("the test used more than %gs of CPU time (EQUISA's limit for a mutant's test)"
                          % self.cpu_alarm_seconds)

    def _finish_test(self, nodeid: str) -> None:
        self._stop_alarm()
        covered_ids, edge_ids = self.recorder.end()
        covered_ids = covered_ids | self.module_calls.get(nodeid.split("::", 1)[0], set())
        reports = self.reports.pop(nodeid, [])
        excinfo = self.excinfo.pop(nodeid, None)
        known = self.recorder.known
        covered = [self._describe(known[key]) for key in covered_ids]
        edges = {(self._describe(known[a]), self._describe(known[b])) for a, b in edge_ids}
        record: Record = {
            "kind": "test",
            "test": nodeid,
            "outcome": _outcome(reports),
            "duration": round(sum(r.duration for r in reports), 6),
            "covered": sorted(covered),
            "edges": sorted(list(e) for e in edges),
            "stdout": _tail(reports[-1].capstdout, OUTPUT_TAIL_CHARS) if reports else "",
            "stderr": _tail(reports[-1].capstderr, OUTPUT_TAIL_CHARS) if reports else "",
        }
        timed_out = excinfo is not None and isinstance(excinfo.value, TestTimeout)
        self.baseline[nodeid] = (record["outcome"], None if timed_out else record["duration"])
        if self.call_recorder is not None:
            record["calls"] = self.call_recorder.calls
        if excinfo is not None and record["outcome"] in ("failed", "error"):
            record.update(self._describe_failure(excinfo))
        self._write(record)

    def _describe(self, info: _CodeInfo) -> str:
        """The FQN of a project code object, announcing it with a ``node`` record the first time."""
        fqn = info.fqn
        if fqn is None:
            code = info.code
            qualname = getattr(code, "co_qualname", None) or self.qualnames.lookup(code) or code.co_name
            qualname = self.qualnames.distinct(code, qualname)
            fqn = info.fqn = (info.module + "." + qualname) if info.module else qualname
        if not info.emitted:
            info.emitted = True
            self._write({
                "kind": "node",
                "fqn": fqn,
                "file": self._relative(info.code.co_filename),
                "start": info.code.co_firstlineno,
                "end": _last_line(info.code),
            })
        return fqn

    def _describe_failure(self, excinfo: pytest.ExceptionInfo[BaseException], frames: bool = True) -> Record:
        """The failure's exception type, message and (unless ``frames`` is false) traceback frames."""
        exc_type = excinfo.type
        module = getattr(exc_type, "__module__", "builtins")
        name = getattr(exc_type, "__qualname__", exc_type.__name__)
        listed: list[Record] = []
        if frames:
            listed = [
                {"file": self._relative(f.filename), "line": f.lineno or 0, "function": f.name}
                for f in _extract_tb(excinfo.tb)
            ]
            # Drop pytest's own frames above the first frame of the project (usually the test).
            first_project = next((i for i, f in enumerate(listed) if not _os_path.isabs(f["file"])), 0)
            listed = listed[first_project:][-MAX_FRAMES:]
        try:
            message = str(excinfo.value)
        except Exception as error:  # a broken __str__ on the user's exception
            message = "<unprintable %s: %s>" % (name, type(error).__name__)
        return {
            "exception_type": name if module in ("builtins", "exceptions") else module + "." + name,
            "message": _tail(message, MESSAGE_CHARS),
            "traceback": listed,
        }


def _or_forever(duration: float | None) -> float:
    """A duration for sorting: a test that timed out (no duration) goes last."""
    return float("inf") if duration is None else duration


class TestTimeout(Exception):
    """Raised inside a test that outlives the per-test timeout; the test fails with it."""

    __test__ = False


def _read_selection(path: str) -> set[str]:
    with _open(path, encoding="utf-8") as handle:
        return set(line.rstrip("\n") for line in handle if line.strip())


def _parse_shard(text: str) -> tuple[int, int]:
    first, _, total = text.partition("/")
    index, count = int(first), int(total)
    if not 0 <= index < count:
        raise ValueError("--equisa-shard must be K/N with 0 <= K < N, got " + text)
    return index, count


def _outcome(reports: Sequence[pytest.TestReport]) -> str:
    """passed, failed, error or skipped from the setup/call/teardown reports of one test."""
    by_phase = {r.when: r for r in reports}
    setup, call, teardown = by_phase.get("setup"), by_phase.get("call"), by_phase.get("teardown")
    if setup is not None and setup.failed:
        return "error"
    if call is not None and call.failed:
        return "failed"
    if teardown is not None and teardown.failed:
        return "error"
    if any(r.skipped for r in reports):
        return "skipped"
    if call is None:
        return "error"
    return "passed"


def _tail(text: str | None, limit: int) -> str:
    text = text or ""
    return text if len(text) <= limit else "...[truncated]...\n" + text[-limit:]


# ---------------------------------------------------------------------------------------------
# >>> Mutant rounds (``--equisa-mutants FILE``) >>>
#
# Many variants ("mutants") of one function run against the selected tests in this one process,
# instead of one pytest start per mutant. FILE is a JSON list of ``{"id", "fqn", "file" (relative
# to the root), "source" (the function's whole definition at column 0, decorators included),
# optionally "tests" (node ids: the mutant's round runs only those of the selection)}``, so
# mutants of several functions can share one process, each against its own function's tests.
#
# After collection the selected tests run once with the original code (round ``original``,
# through pytest's ordinary protocol, so its ``start``/``test`` records are the usual ones), then
# once per mutant: the mutant's code is swapped into the live function object (its ``__code__``
# and default values are replaced, so every reference to it -- other modules' imports, subclasses,
# decorators' wrappers -- runs the mutant), the tests run through ``runtestprotocol`` under the
# per-test timeout, untraced, and the original is put back. Each round ends with every fixture
# torn down, so each starts from fresh fixtures (state the code under test keeps in its own modules
# is not reset). ``-x``/``--maxfail`` are ignored: every round runs every selected test, except
# that ``--equisa-mutants-fail-fast`` stops a round at the first test that passed unmutated and
# fails, and ``--equisa-mutants-must-fix FILE`` runs FILE's tests first and stops a round in which
# none of them passes. ``--equisa-mutants-confirm FILE`` (node id -> [outcome, duration] in the
# suite's own run) confirms fixes in the same process: the first mutant of each function whose
# round passes every must-fix test and breaks none goes on through FILE's other tests (passing
# ones first, stopping at the first it breaks); tests of FILE in no mutant's own tests are
# collected but not run unmutated, the suite's run being their baseline.
#
#     {"kind": "mutant-start", "mutant": "m1", "tests": 3}
#     {"kind": "mutant-test", "mutant": "m1", "test_id": "...", "outcome": "failed",
#      "duration": 0.01, "exception_type": "AssertionError", "message": "assert 1 == 2"}
#     {"kind": "mutant-done", "mutant": "m1", "status": "ran", "reason": null, "duration": 0.03}
#
# ``status``: ``ran``; ``timeout`` when a test outlived its time limit (it failed with
# TestTimeout; when even that could not stop it, a watchdog thread wrote the test's record and this
# one, then ended the process with WATCHDOG_EXIT); ``unswappable``, with no start or test records,
# when the function cannot be found or replaced (``reason`` says why: no such function, nested in
# another function, does not compile, free variables the original's closure does not have). A
# process that dies mid-mutant leaves a ``mutant-start`` without its ``mutant-done``: the host
# records the crash and resumes with the remaining mutants.

ORIGINAL_ROUND = "original"
MUTANT_MESSAGE_CHARS = 500
#: Exit status of a process whose mutant test the per-test timeout could not stop.
WATCHDOG_EXIT = 87
#: ``__wrapped__`` links and closures followed, at most, from a name to its function.
MAX_UNWRAP = 20
_ModuleType = types.ModuleType
_json_loads = json.loads


class MutantUnswappable(Exception):
    """A mutant that cannot be swapped in; the message says why."""


def _read_confirmation(path: str) -> dict[str, Baseline]:
    with _open(path, encoding="utf-8") as handle:
        tests = _json_loads(handle.read())
    if not isinstance(tests, dict):
        raise ValueError("--equisa-mutants-confirm must name a JSON object: node id -> [outcome, duration]")
    return {nodeid: (value[0], value[1]) for nodeid, value in tests.items()}


def _read_test_limits(path: str) -> dict[str, float]:
    with _open(path, encoding="utf-8") as handle:
        limits = _json_loads(handle.read())
    if not isinstance(limits, dict):
        raise ValueError("--equisa-test-limits must name a JSON object: node id -> seconds")
    return {nodeid: float(seconds) for nodeid, seconds in limits.items() if seconds and float(seconds) > 0}


def _read_mutants(path: str) -> list[Any]:
    """The mutant specs (JSON, checked where they are read)."""
    with _open(path, encoding="utf-8") as handle:
        specs = _json_loads(handle.read())
    if not isinstance(specs, list):
        raise ValueError("--equisa-mutants must name a JSON list of mutants")
    return specs


def _own_attribute(obj: object, name: str) -> object:
    """``obj.name`` from the instance dict only, so no user ``__getattr__`` (or Mock) runs."""
    try:
        namespace = object.__getattribute__(obj, "__dict__")
    except Exception:
        return None
    return namespace.get(name) if isinstance(namespace, dict) else None


def _same_value(old: object, new: object) -> bool:
    try:
        return old is new or (type(old) is type(new) and bool(old == new))
    except Exception:
        return False


def _future_flags(code: types.CodeType) -> int:
    """The ``from __future__`` compiler flags ``code`` was compiled with."""
    import __future__

    flags = 0
    for feature in __future__.all_feature_names:
        flag = getattr(__future__, feature).compiler_flag
        if code.co_flags & flag:
            flags |= flag
    return flags


class _MutantSwap:
    """One live function object, the mutant's code and defaults for it, and what to put back."""

    def __init__(self, func: types.FunctionType, code: types.CodeType, defaults: tuple[object, ...] | None,
                 kwdefaults: dict[str, object] | None, caches: list[Any]) -> None:
        self.func = func
        self.code = code
        self.defaults = defaults
        self.kwdefaults = kwdefaults
        self.caches = caches  # functools.lru_cache wrappers around it: emptied at both swaps
        self.saved: tuple[types.CodeType, tuple[Any, ...] | None, dict[str, Any] | None] | None = None

    def apply(self) -> None:
        func = self.func
        self.saved = (func.__code__, func.__defaults__, func.__kwdefaults__)
        func.__code__ = self.code
        func.__defaults__ = self.defaults
        func.__kwdefaults__ = self.kwdefaults
        self._clear_caches()

    def restore(self) -> None:
        if self.saved is not None:
            func = self.func
            func.__code__, func.__defaults__, func.__kwdefaults__ = self.saved
            self.saved = None
            self._clear_caches()

    def _clear_caches(self) -> None:
        for cache in self.caches:
            try:
                cache.cache_clear()
            except Exception:
                pass


class _MutantSwapper:
    """Finds the live function object(s) a mutant names and compiles the mutant for each."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.real_files: dict[str, str] = {}  # a module's __file__ -> its real path

    def prepare(self, spec: Any) -> list[_MutantSwap]:
        """The swaps that put ``spec`` in place; raises MutantUnswappable with the reason."""
        try:
            fqn, file, source = str(spec["fqn"]), str(spec["file"]), str(spec["source"])
        except (KeyError, TypeError):
            raise MutantUnswappable("the mutant needs an fqn, a file and a source") from None
        wanted = _os_path.realpath(_os_path.join(self.root, file))
        modules = self._modules_from(wanted) or [self._import(fqn, file, wanted)]
        qualname = self._qualname(fqn, file, modules)
        found: dict[int, tuple[types.FunctionType, type | None, list[Any]]] = {}
        for module in modules:  # one per name the file was imported under
            func, klass, caches = self._find(module, qualname, source)
            found.setdefault(id(func), (func, klass, caches))
        return [self._compile(source, func, klass, caches) for func, klass, caches in found.values()]

    # -- finding the function ---------------------------------------------------------------------
    def _modules_from(self, wanted: str) -> list[types.ModuleType]:
        found: list[types.ModuleType] = []
        for module in list(sys.modules.values()):
            if not isinstance(module, _ModuleType):
                continue
            filename = module.__dict__.get("__file__")
            if not isinstance(filename, str):
                continue
            real = self.real_files.get(filename)
            if real is None:
                real = self.real_files[filename] = real_file(filename)
            if real == wanted:
                found.append(module)
        return found

    @staticmethod
    def _module_prefixes(fqn: str, file: str) -> Iterator[tuple[int, str]]:
        """Prefixes of ``fqn`` that can name the module in ``file``, longest first."""
        dotted = (file[:-3] if file.endswith(".py") else file).replace("/", ".")
        if dotted.endswith(".__init__") or dotted == "__init__":
            dotted = dotted[: -len("__init__")].rstrip(".")
        parts = fqn.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            prefix = ".".join(parts[:cut])
            if dotted == prefix or dotted.endswith("." + prefix):
                yield cut, prefix

    def _import(self, fqn: str, file: str, wanted: str) -> types.ModuleType:
        import importlib

        for _cut, prefix in self._module_prefixes(fqn, file):
            try:
                module = importlib.import_module(prefix)
            except Exception as error:
                raise MutantUnswappable("importing %s failed: %s: %s" % (
                    prefix, type(error).__name__, _tail(str(error), 200))) from None
            if module in self._modules_from(wanted):
                return module
        raise MutantUnswappable("no module was imported from %s, and %s names none that is" % (file, fqn))

    def _qualname(self, fqn: str, file: str, modules: list[types.ModuleType]) -> str:
        names = set(module.__dict__.get("__name__") for module in modules)
        parts = fqn.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            if ".".join(parts[:cut]) in names:
                return ".".join(parts[cut:])
        for cut, _prefix in self._module_prefixes(fqn, file):
            return ".".join(parts[cut:])
        raise MutantUnswappable("%s does not start with the name of the module in %s" % (fqn, file))

    def _find(self, module: types.ModuleType, qualname: str,
              source: str) -> tuple[types.FunctionType, type | None, list[Any]]:
        """``(function, class it was found in or None, cache wrappers on the way)``; a shadowed
        definition (``name#k``) is found through the object its name binds (a property)."""
        parts = qualname.split("#", 1)[0].split(".")
        if "<locals>" in parts:
            raise MutantUnswappable(
                "%s is nested in a function: its function objects are made anew at each call of the "
                "enclosing function, so none lives to be swapped (mutate the enclosing function)" % qualname)
        owner: object = module
        klass: type | None = None
        for position, part in enumerate(parts):
            namespace: Mapping[str, Any] = owner.__dict__ if isinstance(owner, (_ModuleType, type)) else {}
            if part not in namespace and klass is not None and part.startswith("__") \
                    and not part.endswith("__"):
                part = "_" + klass.__name__.lstrip("_") + part  # a private name, mangled
            if part not in namespace:
                where = ".".join([module.__name__] + parts[:position])
                raise MutantUnswappable("%s has no attribute %s" % (where, parts[position]))
            owner = namespace[part]
            if position < len(parts) - 1:
                if not isinstance(owner, type):
                    raise MutantUnswappable("%s is not a class" % ".".join(parts[: position + 1]))
                klass = owner
        func, caches = self._unwrap(owner, parts[-1], source)
        return func, klass, caches

    @staticmethod
    def _unwrap(obj: object, name: str, source: str) -> tuple[types.FunctionType, list[Any]]:
        """The plain function named ``name`` behind ``obj``: through staticmethod, classmethod,
        property, ``__wrapped__`` (functools.wraps, lru_cache) and decorators' closures."""
        accessor = "fget"
        if "@%s.setter" % name in source:
            accessor = "fset"
        elif "@%s.deleter" % name in source:
            accessor = "fdel"
        caches: list[Any] = []
        seen: set[int] = set()
        current: object = obj
        for _ in range(MAX_UNWRAP):
            if current is None or id(current) in seen:
                break
            seen.add(id(current))
            if isinstance(current, (staticmethod, classmethod)):
                current = current.__func__
                continue
            if isinstance(current, property):
                current = getattr(current, accessor)
                continue
            if callable(getattr(type(current), "cache_clear", None)):
                caches.append(current)
            wrapped = _own_attribute(current, "__wrapped__")
            if wrapped is not None:
                current = wrapped
                continue
            if type(current) is _FunctionType:
                if current.__code__.co_name == name:
                    return current, caches
                current = next((cell_value for cell_value in _cell_values(current)
                                if type(cell_value) is _FunctionType
                                and cell_value.__code__.co_name == name), None)
                continue
            break
        raise MutantUnswappable(
            "%s (a %s) does not lead to a function named %s: a decorator without functools.wraps "
            "may hide it" % (name, type(obj).__name__, name))

    # -- compiling the mutant -----------------------------------------------------------------------
    def _compile(self, source: str, func: types.FunctionType, klass: type | None,
                 caches: list[Any]) -> _MutantSwap:
        """The mutant's code object, shaped like the original's, and its default values.

        The definition is compiled (never executed) where its closure matches the original's:
        inside a class of the same name for methods (so zero-argument ``super()`` and private
        names work), inside a function declaring the original's other free variables; free
        variables the mutant no longer uses are referenced in dead code so the closure still fits.
        """
        original = func.__code__
        node = _mutant_definition(source, original.co_name)
        # Decorators stay: they make co_firstlineno the first decorator's line, as the original's
        # is, and the definition is never executed, so they are never applied.
        first = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])
        _shift_lines(node, original.co_firstlineno - first)
        _reference_free_variables(node, original.co_freevars)
        module, path = _enclosed_definition(node, original.co_freevars, _class_name(func, klass))
        code = _compiled_mutant(module, path, original)
        defaults, kwdefaults = self._defaults(node, func, klass, original.co_filename)
        return _MutantSwap(func, code, defaults, kwdefaults, caches)

    @staticmethod
    def _defaults(node: ast.FunctionDef | ast.AsyncFunctionDef, func: types.FunctionType, klass: type | None,
                  filename: str) -> tuple[tuple[object, ...] | None, dict[str, object] | None]:
        """The mutant's default values; an original value is kept where the mutant's equals it."""
        import ast

        namespace = dict(klass.__dict__) if klass is not None else None

        def value(expression: ast.expr) -> object:
            try:
                code = compile(ast.Expression(expression), filename, "eval", 0, True)
                return eval(code, func.__globals__, namespace)
            except Exception as error:
                raise MutantUnswappable("a default value of the mutant cannot be computed: %s: %s" % (
                    type(error).__name__, _tail(str(error), 200))) from None

        args = node.args
        new = [value(default) for default in args.defaults]
        old = func.__defaults__ or ()
        if len(new) == len(old):
            new = [o if _same_value(o, n) else n for o, n in zip(old, new)]  # noqa: B905 (3.8)
        old_kw = func.__kwdefaults__ or {}
        kwdefaults: dict[str, object] = {}
        for arg, default in zip(args.kwonlyargs, args.kw_defaults):  # noqa: B905 (3.8: no strict)
            if default is not None:
                computed = value(default)
                kept = arg.arg in old_kw and _same_value(old_kw[arg.arg], computed)
                kwdefaults[arg.arg] = old_kw[arg.arg] if kept else computed
        return tuple(new) or None, kwdefaults or None


def _mutant_definition(source: str, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
    """The one function definition, named ``name``, that ``source`` must be."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        reason = "the mutant does not compile: %s (line %s)" % (error.msg, error.lineno)
        raise MutantUnswappable(reason) from None
    except ValueError as error:
        raise MutantUnswappable("the mutant does not compile: %s" % error) from None
    node = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise MutantUnswappable("the mutant's source must be one function definition")
    if node.name != name:
        raise MutantUnswappable("the mutant defines %s, not %s" % (node.name, name))
    return node


def _reference_free_variables(node: ast.FunctionDef | ast.AsyncFunctionDef,
                              freevars: tuple[str, ...]) -> None:
    """Append ``if 0: (v1, v2, ...)`` to the body so every free variable stays one, used or not."""
    import ast

    if not freevars:
        return
    last = node.body[-1]
    pad = ast.If(test=ast.Constant(0), orelse=[], body=[ast.Expr(ast.Tuple(
        [ast.Name(variable, ast.Load()) for variable in freevars], ast.Load()))])
    node.body.append(ast.fix_missing_locations(ast.copy_location(pad, last)))


def _class_name(func: types.FunctionType, klass: type | None) -> str | None:
    """The name of the class the mutant is compiled in: the method's class, or the one the
    original's ``__class__`` cell holds; None for a plain function."""
    if klass is not None:
        return klass.__name__
    freevars = func.__code__.co_freevars
    if "__class__" in freevars:
        cell = (func.__closure__ or ())[freevars.index("__class__")]
        return getattr(cell.cell_contents, "__name__", "__equisa_class__")
    return None


def _enclosed_definition(node: ast.FunctionDef | ast.AsyncFunctionDef, freevars: tuple[str, ...],
                         class_name: str | None) -> tuple[ast.Module, list[str]]:
    """A module holding ``node`` inside a function that declares the other free variables and a class
    named ``class_name`` (each when needed), and the names of those enclosing definitions."""
    import ast

    outer = [variable for variable in freevars if variable != "__class__"]
    lines: list[str] = []
    indent = ""
    if outer:
        lines += ["def __equisa_scope__():", "    %s = None" % " = ".join(outer)]
        indent = "    "
    if class_name:
        lines.append(indent + "class %s:" % class_name)
        indent += "    "
    lines.append(indent + "pass")
    module = ast.parse("\n".join(lines) + "\n")
    block, path = module.body, []
    if outer:
        block = _block(block[0])
        path.append("__equisa_scope__")
    if class_name:
        block = _block(block[-1])
        path.append(class_name)
    block[-1] = node
    return module, path


def _compiled_mutant(module: ast.Module, path: list[str], original: types.CodeType) -> types.CodeType:
    """The mutant's code object, found in the compiled ``module`` along ``path``; its closure must be
    the original's."""
    freevars = original.co_freevars
    try:
        code: types.CodeType = compile(module, original.co_filename, "exec", _future_flags(original), True)
    except (SyntaxError, ValueError) as error:
        raise MutantUnswappable("the mutant does not compile: %s" % error) from None
    for wanted in path + [original.co_name]:
        code = next(c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == wanted)
    if code.co_freevars != freevars:
        raise MutantUnswappable(
            "the mutant's free variables (%s) differ from the original's (%s): a function's closure "
            "cannot change (zero-argument super() or __class__ needs a method that has them)"
            % (", ".join(code.co_freevars) or "none", ", ".join(freevars) or "none"))
    if hasattr(code, "co_qualname"):
        code = code.replace(co_qualname=original.co_qualname)
    return code


def _spec_field(spec: Any, key: str) -> Any:
    """A field of a mutant spec; None when absent, or when the spec is no dict."""
    return spec.get(key) if isinstance(spec, dict) else None


def _mutant_id(spec: Any, index: int) -> str:
    """A mutant's id: its spec's, else ``#<index>``."""
    return str(_spec_field(spec, "id") or "#%d" % index)


def _block(statement: object) -> list[ast.stmt]:
    """The body of a definition ``_compile`` wrote (a function or a class)."""
    import ast

    if not isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
        raise TypeError("a %s, not a definition" % type(statement).__name__)
    return statement.body


def _cell_values(func: types.FunctionType) -> Iterator[object]:
    for cell in func.__closure__ or ():
        try:
            yield cell.cell_contents
        except ValueError:  # an empty cell
            continue


def _shift_lines(tree: ast.AST, delta: int) -> None:
    import ast

    for part in ast.walk(tree):
        for attribute in ("lineno", "end_lineno"):
            line = getattr(part, attribute, None)
            if isinstance(line, int):
                setattr(part, attribute, line + delta)


class _Watchdog:
    """Ends the process when a mutant's test outlives the timeout that should have stopped it
    (a mutant that swallows TestTimeout in a loop); ``on_expire`` never returns.

    ``arm`` gives each test WATCHDOG_FACTOR times the limit its alarm was set to, plus
    WATCHDOG_GRACE_S (``limit`` when the test has none of its own): a stuck mutant of a quick test
    costs seconds, not twice the slowest test's limit (measured: a Twisted test whose mutant kept
    its reactor waiting cost 21 s per mutant, and five such mutants made a 113 s run)."""

    def __init__(self, limit: float, on_expire: Callable[[str | None, str, float], object]) -> None:
        self.limit = limit
        self.on_expire = on_expire
        self.lock = threading.Lock()
        self.deadline: float | None = None
        self.label: tuple[str | None, str, float] | None = None  # (mutant, node id, seconds allowed)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="equisa-mutant-watchdog")
        self.thread.daemon = True
        self.thread.start()

    def arm(self, mutant: str | None, nodeid: str, alarm_s: float | None = None) -> None:
        """Watch ``nodeid``, whose alarm is set to ``alarm_s`` seconds (None: ``self.limit`` applies)."""
        allowed = self.limit if alarm_s is None else WATCHDOG_FACTOR * alarm_s + WATCHDOG_GRACE_S
        with self.lock:
            self.deadline, self.label = _time_perf() + allowed, (mutant, nodeid, allowed)

    def disarm(self) -> None:
        with self.lock:
            self.deadline = None

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(1.0)

    def _watch(self) -> None:
        while not self.stopped.wait(0.2):
            with self.lock:  # held until the process ends: the main thread cannot disarm meanwhile
                if self.deadline is not None and self.label is not None and _time_perf() > self.deadline:
                    self.on_expire(*self.label)


#: A mutant's test may run MUTANT_SLOWDOWN times its unmutated duration (for one that did not
#: pass, the longer of its own and the median passing test's), but never less than
#: MUTANT_MIN_LIMIT seconds, nor more than the per-test timeout. It may also use that many seconds
#: of CPU time, but never less than MUTANT_MIN_CPU_LIMIT: a looping mutant, common among the fix
#: space's edits of loops, is stopped after that much CPU time, where the wall-clock floor, kept
#: high because a loaded machine may hold a quick test back, would let it run three times as long
#: (measured on small programs: about a second less per repair with a few looping mutants).
MUTANT_SLOWDOWN = 10.0
MUTANT_MIN_LIMIT = 0.3
MUTANT_MIN_CPU_LIMIT = 0.1
#: The watchdog ends the process when a test runs WATCHDOG_FACTOR times its alarm's limit plus
#: WATCHDOG_GRACE_S (the alarm's TestTimeout did not stop it).
WATCHDOG_FACTOR = 2.0
WATCHDOG_GRACE_S = 1.0


class _MutantRunner:
    """Runs the rounds: the original, then one per mutant; registered for --equisa-mutants."""

    def __init__(self, probe: ProbePlugin, specs: list[Any], fail_fast: bool = False,
                 must_fix: Iterable[str] | None = None, confirm: dict[str, Baseline] | None = None,
                 budget: float | None = None) -> None:
        self.probe = probe
        self.specs = specs
        self.fail_fast = fail_fast
        self.budget = budget  # seconds for the mutant rounds; the mutants left then are not run
        # (an inspection patch's round, a "detailed" spec, always runs)
        self.must_fix = frozenset(must_fix or ())
        self.confirm = confirm or {}  # node id -> (outcome, duration) in the suite's own run
        self.confirmed: set[object] = set()  # functions whose first fixing mutant went on through ``confirm``
        self.typical: float | None = None  # median duration of the tests that passed unmutated
        self.swapper = _MutantSwapper(probe.root)
        self.lock = threading.Lock()
        self.round: str | None = None
        self.detailed = False  # the round keeps tracebacks and output (an inspection patch's round)
        self.round_started = 0.0
        self.timed_out: list[str] = []
        self.reports: dict[str, list[pytest.TestReport]] = {}
        self.excinfo: dict[str, pytest.ExceptionInfo[BaseException]] = {}

    def _emit(self, record: Record) -> None:
        with self.lock:
            self.probe._write(record)

    # -- pytest hooks ---------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        option = session.config.option
        if (session.testsfailed and not option.continue_on_collection_errors) or option.collectonly \
                or not session.items:
            return None  # pytest's own loop reports the collection errors, or has nothing to run
        items = list(session.items)
        apart = self._confirmation_only()
        unmutated = [i for i in items if i.nodeid not in apart]
        self._begin(ORIGINAL_ROUND, unmutated)
        for index, item in enumerate(unmutated):
            nextitem = unmutated[index + 1] if index + 1 < len(unmutated) else None
            item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        self._done(ORIGINAL_ROUND)
        for nodeid, (outcome, duration) in self.confirm.items():  # the suite's run is their baseline
            self.probe.baseline.setdefault(nodeid, (outcome, duration))
        self._mutant_rounds(items)
        return True

    def _confirmation_only(self) -> frozenset[str]:
        """Tests only a fix's confirmation runs: in no mutant's own tests, so not run unmutated."""
        if not self.confirm:
            return frozenset()
        own: set[str] = set()
        for spec in self.specs:
            tests = spec.get("tests") if isinstance(spec, dict) else None
            if tests is None:
                return frozenset()  # a mutant runs them all: the original round must too
            own.update(tests)
        return frozenset(self.confirm) - own

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[None]) -> pytest.TestReport | None:
        excinfo = call.excinfo
        if excinfo is not None and call.when in ("setup", "call", "teardown"):
            self.excinfo.setdefault(item.nodeid, excinfo)
        when = call.when
        if excinfo is None or when == "collect" or self.round in (None, ORIGINAL_ROUND) or self.detailed:
            return None  # ("collect": never, in a test's report; CallInfo serves collection too)
        from _pytest.outcomes import Skipped
        from _pytest.reports import TestReport

        if isinstance(excinfo.value, Skipped):
            return None  # pytest's own report (its longrepr names where it was skipped)
        # A failure in a mutant round keeps only its type and message (``_write_test``): pytest's
        # report without its long representation (the filtered, formatted traceback), which cost
        # as much as the rest of a typical failing round.
        return TestReport(
            nodeid=item.nodeid, location=item.location, keywords={k: 1 for k in item.keywords},
            outcome="failed", longrepr="%s (a mutant round's failure)" % excinfo.typename, when=when,
            sections=[("Captured %s %s" % (key, phase), text) for phase, key, text in item._report_sections],
            duration=call.duration, user_properties=item.user_properties,
            start=getattr(call, "start", 0), stop=getattr(call, "stop", 0),
        )

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:  # the original round only
        self.reports.setdefault(report.nodeid, []).append(report)
        if report.when == "teardown":
            self._record_test(report.nodeid, self.reports.pop(report.nodeid))

    def pytest_runtest_logfinish(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        if nodeid in self.reports:  # teardown never reported
            self._record_test(nodeid, self.reports.pop(nodeid))

    # -- rounds ---------------------------------------------------------------------------------
    def _begin(self, mutant: str, items: Sequence[pytest.Item]) -> None:
        self.round, self.round_started, self.timed_out = mutant, _time_perf(), []
        self._emit({"kind": "mutant-start", "mutant": mutant, "tests": len(items)})

    def _done(self, mutant: str) -> None:
        reason = None
        if self.timed_out:  # so there is a per-test timeout
            timeout = self.probe.longest_limit() or 0.0
            reason = "stopped by its time limit (%gx the unmutated duration, at least %gs of CPU time or " \
                "%gs in all, at most its per-test timeout, the longest %gs): %s" % (
                    MUTANT_SLOWDOWN, MUTANT_MIN_CPU_LIMIT, MUTANT_MIN_LIMIT, timeout,
                    ", ".join(self.timed_out[:5]))
        self._emit({"kind": "mutant-done", "mutant": mutant, "status": "timeout" if self.timed_out else "ran",
                    "reason": reason, "duration": round(_time_perf() - self.round_started, 6)})
        self.round = None

    def _unswappable(self, mutant: str, reason: str) -> None:
        self._emit({"kind": "mutant-done", "mutant": mutant, "status": "unswappable", "reason": reason,
                    "duration": 0.0})

    def _mutant_rounds(self, items: list[pytest.Item]) -> None:
        from _pytest.runner import runtestprotocol

        probe = self.probe
        traced = probe.backend, probe.call_recorder
        probe.backend, probe.call_recorder = _NoBackend(probe.recorder), None
        watchdog: _Watchdog | None = None
        longest = probe.longest_limit()
        if longest:
            watchdog = _Watchdog(WATCHDOG_FACTOR * longest + WATCHDOG_GRACE_S, self._on_stuck)
        started = _time_perf()
        try:
            for index, spec in enumerate(self.specs):
                detailed = bool(_spec_field(spec, "detailed"))
                if self.budget is not None and not detailed and _time_perf() - started > self.budget:
                    self._emit({"kind": "mutant-done", "mutant": _mutant_id(spec, index), "status": "not_run",
                                "reason": "the mutant rounds' budget of %gs was spent" % self.budget,
                                "duration": 0.0})
                    continue
                self._mutant_round(spec, index, items, runtestprotocol, watchdog)
        finally:
            probe.backend, probe.call_recorder = traced
            if watchdog is not None:
                watchdog.stop()

    def _mutant_round(self, spec: Any, index: int, items: list[pytest.Item], runtestprotocol: RunTestProtocol,
                      watchdog: _Watchdog | None) -> None:
        mutant = _mutant_id(spec, index)
        applied = self._swap_in(spec, mutant)
        if applied is None:
            return
        detailed = bool(_spec_field(spec, "detailed"))
        fail_fast = self.fail_fast and not detailed
        ordered, wanted = self._round_order(spec, items, detailed, fail_fast)
        try:
            self._begin(mutant, ordered)
            self.detailed = detailed
            fixes_all, stopped = self._run_round(ordered, wanted, fail_fast, runtestprotocol, watchdog)
            fqn = _spec_field(spec, "fqn")
            if fixes_all and not (stopped or detailed or self.timed_out) and fqn not in self.confirmed:
                self.confirmed.add(fqn)
                self._confirmation(ordered, items, runtestprotocol, watchdog)
        finally:
            self.detailed = False
            for swap in reversed(applied):
                swap.restore()
        self._done(mutant)

    def _swap_in(self, spec: Any, mutant: str) -> list[_MutantSwap] | None:
        """Put the mutant's swaps in place; None (every swap undone, the round reported unswappable)
        when one of them cannot be."""
        applied: list[_MutantSwap] = []
        try:
            for swap in self.swapper.prepare(spec):
                swap.apply()
                applied.append(swap)
        except Exception as error:
            for swap in reversed(applied):
                swap.restore()
            reason = str(error) if isinstance(error, MutantUnswappable) else (
                "the probe could not swap it in: %s: %s" % (type(error).__name__, _tail(str(error), 300)))
            self._unswappable(mutant, reason)
            return None
        return applied

    def _round_order(self, spec: Any, items: list[pytest.Item], detailed: bool,
                     fail_fast: bool) -> tuple[list[pytest.Item], list[pytest.Item]]:
        """The tests of a round in the order they run, and those of them the caller wants fixed.

        Fail fast: tests that passed unmutated go first, and the round stops at the first of
        them that fails: the mutant is then killed (for mutation scores) and neither fixes nor
        partly fixes anything (for localization and repair), so the rest (often the slow,
        failing tests) would tell nothing. Tests not run are absent from the round's records.
        Must fix: the tests the caller wants fixed go first, and a round in which none of them
        passes stops after them, since such a mutant is no fix (localization's fix evidence).
        A fail-fast round also stops at its first test stopped by its time limit, even one that
        did not pass unmutated: a mutant that hangs is killed and fixes nothing whole, and each
        further test it hangs in would cost the whole limit again.
        Detailed: an inspection patch, not a mutant: every test runs, in the selection's order,
        and each failure keeps its traceback and each test its output, as an ordinary run's would.
        """
        baseline = self.probe.baseline
        ordered = items
        only = _spec_field(spec, "tests")
        if only is not None:  # the mutant's own tests, out of a selection shared by several functions
            only = set(only)
            ordered = [i for i in items if i.nodeid in only]
        if fail_fast:
            ordered = sorted(ordered, key=lambda i: baseline.get(i.nodeid, ("",))[0] != "passed")
        wanted = [] if detailed else sorted((i for i in ordered if i.nodeid in self.must_fix),
                                            key=lambda i: _or_forever(baseline.get(i.nodeid, ("", None))[1]))
        if wanted:
            ordered = wanted + [i for i in ordered if i.nodeid not in self.must_fix]
        return ordered, wanted

    def _run_round(self, ordered: list[pytest.Item], wanted: list[pytest.Item], fail_fast: bool,
                   runtestprotocol: RunTestProtocol, watchdog: _Watchdog | None) -> tuple[bool, bool]:
        """Run a round's tests, stopping early as ``_round_order`` says: whether the round fixed every
        test it must fix and broke none, and whether it stopped early."""
        baseline = self.probe.baseline
        fixed_any, fixes_all = False, bool(wanted)
        for position, item in enumerate(ordered):
            nextitem = ordered[position + 1] if position + 1 < len(ordered) else None
            outcome = self._run_item(item, nextitem, runtestprotocol, watchdog)
            broke = outcome != "passed" and baseline.get(item.nodeid, ("",))[0] == "passed"
            fixed_any = fixed_any or (outcome == "passed" and item.nodeid in self.must_fix)
            fixes_all = fixes_all and not broke and (outcome == "passed" or item.nodeid not in self.must_fix)
            fixes_nothing = position + 1 == len(wanted) and not fixed_any
            if ((fail_fast and (broke or self.timed_out)) or fixes_nothing) and nextitem:
                self._tear_down(item, watchdog)
                return fixes_all, True
        return fixes_all, False

    def _confirmation(self, ran: list[pytest.Item], items: list[pytest.Item],
                      runtestprotocol: RunTestProtocol, watchdog: _Watchdog | None) -> None:
        """The rest of ``confirm`` (the suite) after a round that fixed every test it was asked to and
        broke none: the first such mutant of each function, whose confirmation would otherwise be a
        process of its own. Tests that passed in the suite's run go first; the first of them that
        fails, or any test stopped by its time limit, ends it (the fix is then not confirmed)."""
        done = {i.nodeid for i in ran}
        rest = sorted((i for i in items if i.nodeid in self.confirm and i.nodeid not in done),
                      key=lambda i: self.confirm[i.nodeid][0] != "passed")
        for position, item in enumerate(rest):
            nextitem = rest[position + 1] if position + 1 < len(rest) else None
            outcome = self._run_item(item, nextitem, runtestprotocol, watchdog)
            broke = outcome != "passed" and self.confirm[item.nodeid][0] == "passed"
            if (broke or self.timed_out) and nextitem:
                self._tear_down(item, watchdog)
                break

    def _tear_down(self, item: pytest.Item, watchdog: _Watchdog | None) -> None:
        """Tear every fixture down after a round stopped early, as the last test would have."""
        with self._time_limit(item, watchdog):
            try:
                item.session._setupstate.teardown_exact(None)
            except BaseException:
                pass

    def _run_item(self, item: pytest.Item, nextitem: pytest.Item | None, runtestprotocol: RunTestProtocol,
                  watchdog: _Watchdog | None) -> str:
        started = _time_perf()
        reports: list[pytest.TestReport] = []
        escaped: BaseException | None = None
        with self._time_limit(item, watchdog):
            try:
                reports = runtestprotocol(item, log=False, nextitem=nextitem)
            except BaseException as error:  # TestTimeout between phases, pytest.exit(), ...
                escaped = error
        self.probe.excinfo.pop(item.nodeid, None)  # the ProbePlugin keeps one per test it reports
        if escaped is None:
            return self._record_test(item.nodeid, reports)
        self._tear_down(item, watchdog)  # so the next test sets up from scratch
        if hasattr(item, "_request"):
            # Items with fixtures (Function, DoctestItem) have funcargs; pytest.Item does not declare it.
            item._request, item.funcargs = False, None  # type: ignore[attr-defined]  # pytest.Item does not declare them
        self.excinfo.pop(item.nodeid, None)
        from _pytest._code import ExceptionInfo

        assert escaped.__traceback__ is not None  # an exception caught by ``except`` has its traceback
        excinfo = ExceptionInfo.from_exc_info((type(escaped), escaped, escaped.__traceback__))
        self._write_test(item.nodeid, "error", _time_perf() - started, excinfo)
        return "error"

    def _mutant_limit(self, nodeid: str, floor: float = MUTANT_MIN_LIMIT) -> float | None:
        """A mutant round's time limit for one test, relative to the unmutated run (at least
        ``floor``): a mutant that makes a test this much slower has looped or stalled, whatever the
        per-test timeout says."""
        outcome, duration = self.probe.baseline.get(nodeid, (None, None))
        if outcome != "passed" or duration is None:
            # A test that failed may have stopped early, so a fix may take longer than it did: it
            # may take as long as a typical passing test (the median: one slow test of a large
            # selection would let every looping mutant run for its whole limit). A test that timed
            # out has no duration: its own limit would let every mutant that still hangs run as long.
            if self.typical is None:
                passed = sorted(d for o, d in self.probe.baseline.values() if o == "passed" and d is not None)
                self.typical = passed[len(passed) // 2] if passed else 0.0
            duration = max(duration or 0.0, self.typical) or None
        if duration is None:
            return None
        return max(floor, MUTANT_SLOWDOWN * duration)

    @contextlib.contextmanager
    def _time_limit(self, item: pytest.Item, watchdog: _Watchdog | None) -> Iterator[None]:
        mutated = self.round not in (None, "original")
        if mutated:
            armed = self.probe._start_alarm(item.nodeid, self._mutant_limit(item.nodeid),
                                            self._mutant_limit(item.nodeid, MUTANT_MIN_CPU_LIMIT))
        else:
            armed = self.probe._start_alarm(item.nodeid)
        if watchdog is not None:
            watchdog.arm(self.round, item.nodeid, armed)
        try:
            yield
        finally:
            self.probe._stop_alarm()
            if watchdog is not None:
                watchdog.disarm()

    def _record_test(self, nodeid: str, reports: list[pytest.TestReport]) -> str:
        outcome = _outcome(reports)
        self._write_test(nodeid, outcome, sum(r.duration for r in reports), self.excinfo.pop(nodeid, None),
                         reports[-1].capstdout if reports else "")
        return outcome

    def _write_test(self, nodeid: str, outcome: str, duration: float,
                    excinfo: pytest.ExceptionInfo[BaseException] | None, stdout: str = "") -> None:
        record: Record = {"kind": "mutant-test", "mutant": self.round, "test_id": nodeid, "outcome": outcome,
                  "duration": round(duration, 6)}
        if self.detailed:
            record["stdout"] = _tail(stdout, OUTPUT_TAIL_CHARS)
        if excinfo is not None and outcome in ("failed", "error"):
            failure = self.probe._describe_failure(excinfo, frames=self.detailed)
            record["exception_type"] = failure["exception_type"]
            record["message"] = failure["message"][:MESSAGE_CHARS if self.detailed else MUTANT_MESSAGE_CHARS]
            if self.detailed:
                record["traceback"] = failure["traceback"]
            if issubclass(excinfo.type, TestTimeout):
                self.timed_out.append(nodeid)
        self._emit(record)

    def _on_stuck(self, mutant: str | None, nodeid: str, waited: float) -> None:
        """Called by the watchdog thread while the main thread is stuck in ``nodeid``, ``waited``
        seconds after the test started."""
        timeout = self.probe.alarm_seconds or self.probe.limit_of(nodeid) or 0.0  # the one it outlived
        self.timed_out.append(nodeid)
        name = TestTimeout.__module__ + "." + TestTimeout.__name__
        self._emit({"kind": "mutant-test", "mutant": mutant, "test_id": nodeid, "outcome": "failed",
                    "duration": round(timeout, 6), "exception_type": name,
                    "message": "the test could not be stopped by its timeout"})
        self._emit({"kind": "mutant-done", "mutant": mutant, "status": "timeout",
                    "reason": "%s still ran %gs after it started, past its %gs timeout (TestTimeout "
                              "swallowed, or the interpreter blocked): the probe ended the process" % (
                                  nodeid, round(waited, 1), timeout),
                    "duration": round(_time_perf() - self.round_started, 6)})
        _os._exit(WATCHDOG_EXIT)


# <<< Mutant rounds <<<


# ---------------------------------------------------------------------------------------------
# >>> Serving a mutant run (``--equisa-serve FILE``) >>>
#
# A mutant run of the tests a traced run just ran would pay the interpreter, pytest, the project's
# imports and the collection again: most of its cost on a small suite. With this option, once
# collection is done and before any test runs, the probe forks a pristine child (as for the failing
# tests' re-run) that keeps every test collected, this run's selection and shard aside. When the
# run's own tests are done and its ``end`` record written, the parent waits for the child. The
# child waits until FILE exists (the host writes it whole, then renames it into place), a JSON
# object of what would otherwise be a mutant run's options:
#
#     {"select": [node ids] or null, "test_timeout": seconds or null, "test_limits": {node id: s},
#      "mutants": [specs, as --equisa-mutants], "fail_fast": bool, "must_fix": [node ids] or null,
#      "confirm": {node id: [outcome, duration]} or null, "budget": seconds or null}
#
# and runs it, untraced, as a process started with those options would, writing its records
# (``session``, ``collected``, the rounds, ``end``) to ``served.jsonl`` beside FILE. When FILE does
# not come within ``--equisa-serve-limit`` seconds, or the parent dies, the child leaves; it never
# writes the run's own output. Where the process cannot fork (threads alive, no ``os.fork``) it
# records ``{"kind": "serve-skipped", "reason": ...}`` and the host starts a mutant run of its own.

#: Seconds between two looks for the request file.
SERVE_POLL_S = 0.005
#: The file, beside the request, that the served mutant run is written to.
SERVED_OUTPUT = "served.jsonl"


class _MutantServer:
    """Forks the pristine child before the run's first test; waits for it after the run ends."""

    def __init__(self, probe: ProbePlugin, path: str, limit: float) -> None:
        self.probe = probe
        self.path = path
        self.limit = limit
        self.child: int | None = None

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, None]:
        # tryfirst: forked before the failing tests' re-run makes its pipes, so that this child
        # holds none of their ends
        option = session.config.option
        if not option.collectonly and self.probe.collected:
            self._fork(session)
        yield

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """The run's output is complete (``end``): stay while the child serves (or waits)."""
        if self.child is not None:
            try:
                _os.waitpid(self.child, 0)
            except OSError:
                pass

    def _fork(self, session: pytest.Session) -> None:
        reason = _fork_refusal()
        if reason is None:
            parent = _os.getpid()
            try:
                pid = _fork_quietly()
            except Exception as error:
                reason = "os.fork failed: %s" % error
            else:
                if pid == 0:  # the child: never returns
                    code = 0
                    try:
                        self._serve(session, parent)
                    except BaseException:
                        code = 1
                    _os._exit(code)
                self.child = pid
                return
        self.probe._write({"kind": "serve-skipped", "reason": reason})

    # -- the child ------------------------------------------------------------------------------
    def _serve(self, session: pytest.Session, parent: int) -> None:
        _die_with(parent)
        probe = self.probe
        probe.out = None  # never the run's own output file: the parent writes it
        _quiet(session)
        request = self._request(parent)
        if request is None:
            return
        probe.out = _open(_os_path.join(_os_path.dirname(self.path), SERVED_OUTPUT), "a", encoding="utf-8")
        probe.backend.uninstall()
        probe.backend, probe.call_recorder = _NoBackend(probe.recorder), None
        probe.reason = "tracing was not asked for (a served mutant run)"
        probe.baseline, probe.reports, probe.excinfo = {}, {}, {}
        probe._write_session()
        select = request.get("select")
        items = [item for item in probe.collected if select is None or item.nodeid in select]
        session.items = items
        probe._write({"kind": "collected", "tests": [item.nodeid for item in items]})
        if hasattr(signal, "setitimer"):
            probe.test_timeout = request.get("test_timeout") or None
            probe.test_limits = dict(request.get("test_limits") or {})
        confirm = request.get("confirm")
        runner = _MutantRunner(probe, request.get("mutants") or [], fail_fast=bool(request.get("fail_fast")),
                               must_fix=request.get("must_fix"),
                               confirm={t: (v[0], v[1]) for t, v in confirm.items()} if confirm else None,
                               budget=request.get("budget"))
        session.config.pluginmanager.register(runner, "equisa-probe-mutants")
        runner.pytest_runtestloop(session)
        failed = any(outcome in ("failed", "error") for outcome, _ in probe.baseline.values())
        probe._write({"kind": "end", "exitstatus": 1 if failed else 0})
        if probe.out is not None:
            probe.out.close()

    def _request(self, parent: int) -> dict[str, Any] | None:
        """The mutant run to serve, once its file exists; None when the limit passed or the
        parent died first."""
        deadline = _time_perf() + self.limit
        while not _os_path.exists(self.path):
            if _time_perf() > deadline or _os.getppid() != parent:
                return None
            _sleep(SERVE_POLL_S)
        with _open(self.path, encoding="utf-8") as handle:
            request = _json_loads(handle.read())
        return request if isinstance(request, dict) else None


# <<< Serving a mutant run <<<


# >>> Failing tests re-run apart (``--equisa-rerun-failures N``) >>>
#
# A test that fails only because of what the tests before it left behind, or by chance, passes
# when it runs again in a process of its own. Once collection (and this run's selection) is done
# and before any test runs, the probe forks a pristine child that waits on a pipe: no test has run
# in it, so it is what a new process is after collection, without paying for a new interpreter,
# the project's imports and the collection again. When the run's own tests are done, the parent
# sends the child the first N of its failing tests (by node id; not those stopped at their time
# limit: one that loops would only loop again); the child runs each untraced, with every fixture
# torn down after it and under its own time limit, sends back each outcome, and leaves with
# ``os._exit`` (it never writes the output file, and its stdout and stderr go to /dev/null). The
# parent writes the records, before ``end``:
#
#     {"kind": "rerun", "test": "tests/test_a.py::test_x", "outcome": "passed", "duration": 0.01}
#     {"kind": "rerun-done", "failing": [...every failing test the run judged...], "duration": 0.2}
#
# A test whose rerun passed is flaky. ``failing`` lists the failing tests this run judged (those
# over N too: they are not re-run anywhere). When the rerun cannot be done here the probe says
# why instead, and the host re-runs the failing tests in a new process:
#
#     {"kind": "rerun-skipped", "reason": "..."}
#
# Both sides read one line at a time and stop once they have what they wait for (the child: the
# line of node ids; the parent: an answer for each), never waiting for the pipe's end-of-file: a
# process a test forked and left running (a worker pool, as luigi's tests leave) holds the pipes'
# ends as well, and would keep it away until the time limit (on luigi 33, 61 s for 3 re-runs).
#
# The child never outlives the parent: it stops waiting for the node ids at the pipe's end-of-file
# (the parent closed it, or died), checks between tests that its parent is still the same, dies
# with it on Linux (``PR_SET_PDEATHSIG``), and is killed by the parent when a test outlives its
# limit and the grace after it (a test that swallows TestTimeout). The sandbox kills the whole
# process group at its own time limit too.

#: Seconds a rerun test may run past twice its time limit (setup, call and teardown under one
#: alarm, then the teardown of a test the alarm stopped) before the parent kills the child.
RERUN_GRACE_S = 1.0


class _FailureRerun:
    """Forks the child before the run's first test, sends it the failing tests after the last one."""

    def __init__(self, probe: ProbePlugin, most: int) -> None:
        self.probe = probe
        self.most = most
        self.child: int | None = None
        self.order: list[str] = []  # the run's tests in the order they run
        self.to_child: int | None = None  # write end: node ids
        self.from_child: int | None = None  # read end: outcomes

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, None]:
        option = session.config.option
        if not option.collectonly and session.items:
            self._fork(session)
        try:
            yield
            if self.child is not None:
                self._rerun()
        finally:
            self._reap(kill=True)

    # -- the parent -----------------------------------------------------------------------------
    def _fork(self, session: pytest.Session) -> None:
        reason = _fork_refusal()
        if reason is not None:
            self.probe._write({"kind": "rerun-skipped", "reason": reason})
            return
        down, up = _os.pipe(), _os.pipe()
        parent = _os.getpid()
        try:
            pid = _fork_quietly()
        except Exception as error:
            for fd in down + up:
                _os.close(fd)
            self.probe._write({"kind": "rerun-skipped", "reason": "os.fork failed: %s" % error})
            return
        if pid == 0:  # the child: never returns
            code = 0
            try:
                _os.close(down[1])
                _os.close(up[0])
                self._child(session, down[0], up[1], parent)
            except BaseException:
                code = 1
            _os._exit(code)
        _os.close(down[0])
        _os.close(up[1])
        self.child, self.to_child, self.from_child = pid, down[1], up[0]
        self.order = [item.nodeid for item in session.items]

    def _failing(self) -> list[str]:
        """The run's failing tests, not those stopped at their limit (their duration is None)."""
        return sorted(nodeid for nodeid, (outcome, duration) in self.probe.baseline.items()
                      if outcome in ("failed", "error") and duration is not None)

    def _rerun(self) -> None:
        started = _time_perf()
        failing = self._failing()
        chosen = set(failing[:self.most])  # the first ones by node id, run in the run's order
        wanted = [nodeid for nodeid in self.order if nodeid in chosen]
        message = (_json_dumps({"tests": wanted}) + "\n").encode("utf-8")
        assert self.to_child is not None
        try:
            while message:
                message = message[_os.write(self.to_child, message):]
        except OSError:  # the child is gone: its tests get no outcome below
            pass
        _os.close(self.to_child)
        self.to_child = None
        answers = self._answers(wanted)
        self._reap(kill=False)
        for nodeid in wanted:
            outcome, duration = answers.get(nodeid, ("crashed", 0.0))
            self.probe._write({"kind": "rerun", "test": nodeid, "outcome": outcome, "duration": duration})
        self.probe._write({"kind": "rerun-done", "failing": failing,
                           "duration": round(_time_perf() - started, 6)})

    def _answers(self, wanted: list[str]) -> dict[str, tuple[str, float]]:
        """node id -> (outcome, duration) as the child reports them, until it ends or, with time
        limits, a test outlives its limit and the grace after it (then the child is killed)."""
        import select

        answers: dict[str, tuple[str, float]] = {}
        pending = b""
        fd = self.from_child
        assert fd is not None
        deadline = self._deadline(wanted, 0)
        while True:
            wait = None if deadline is None else max(0.0, deadline - _time_perf())
            ready = select.select([fd], [], [], wait)[0]
            if not ready:
                self._reap(kill=True)
                break
            chunk = _os.read(fd, 65536)
            if not chunk:
                break
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                try:
                    answer = _json_loads(line.decode("utf-8"))
                    answers[answer["test"]] = (answer["outcome"], answer["duration"])
                except (ValueError, KeyError, TypeError):
                    continue
                deadline = self._deadline(wanted, len(answers))
            if all(nodeid in answers for nodeid in wanted):
                break  # not its end-of-file: a process a test forked may hold the pipe open
        return answers

    def _deadline(self, wanted: list[str], done: int) -> float | None:
        """When the child must have answered about ``wanted[done]`` (None: no time limit)."""
        if done >= len(wanted):
            return _time_perf() + RERUN_GRACE_S
        limit = self.probe.limit_of(wanted[done])
        return None if limit is None else _time_perf() + 2 * limit + RERUN_GRACE_S

    def _reap(self, kill: bool) -> None:
        for fd in (self.to_child, self.from_child):
            if fd is not None:
                try:
                    _os.close(fd)
                except OSError:
                    pass
        self.to_child = self.from_child = None
        if self.child is None:
            return
        pid, self.child = self.child, None
        if kill:  # end-of-file has told it to leave; only a child still running tests is killed
            try:
                done, _ = _os.waitpid(pid, _os.WNOHANG)
                if done:
                    return
                _os.kill(pid, signal.SIGKILL)
            except OSError:
                return
        try:
            _os.waitpid(pid, 0)
        except OSError:
            pass

    # -- the child ------------------------------------------------------------------------------
    def _child(self, session: pytest.Session, down: int, up: int, parent: int) -> None:
        _die_with(parent)
        probe = self.probe
        probe.out = None  # never the output file: the parent writes it
        _quiet(session)
        data = b""
        while not data.endswith(b"\n"):  # one line, not up to the end-of-file (see above)
            chunk = _os.read(down, 65536)
            if not chunk:
                break
            data += chunk
        _os.close(down)
        if not data.endswith(b"\n"):
            return  # the parent died, or sent nothing
        wanted = _json_loads(data.decode("utf-8")).get("tests", [])
        if not wanted:
            return
        from _pytest.runner import runtestprotocol

        probe.backend.uninstall()
        probe.backend, probe.call_recorder = _NoBackend(probe.recorder), None
        items = {item.nodeid: item for item in session.items}
        for nodeid in wanted:
            if _os.getppid() != parent:
                return
            item = items.get(nodeid)
            if item is None:
                continue
            started = _time_perf()
            outcome = "error"
            probe._start_alarm(nodeid)
            try:
                outcome = _outcome(runtestprotocol(item, log=False, nextitem=None))
            except BaseException:  # TestTimeout between phases, pytest.exit(), ...
                _teardown_all(item)
            finally:
                probe._stop_alarm()
            answer = _json_dumps({"test": nodeid, "outcome": outcome,
                                  "duration": round(_time_perf() - started, 6)}) + "\n"
            _os.write(up, answer.encode("utf-8"))
        _os.close(up)


def _fork_refusal() -> str | None:
    """Why this process must not fork a child that goes on running tests (None: it may)."""
    if not hasattr(_os, "fork"):
        return "this platform has no os.fork"
    if threading.active_count() > 1:
        current = threading.current_thread()
        names = ", ".join(sorted(t.name for t in threading.enumerate() if t is not current))
        return "%d threads were alive after collection (%s): forking them is unsafe" % (
            threading.active_count(), names[:200])
    return None


def _fork_quietly() -> int:
    """``os.fork()``; 3.12+ warns of threads it sees, and ``_fork_refusal`` saw none of Python's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return _os.fork()


def _die_with(parent: int) -> None:
    """On Linux, have the kernel kill this process when its parent dies (``PR_SET_PDEATHSIG``), so
    that a parent killed while the child runs a test leaves no orphan; leave at once if it died
    already."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1: PR_SET_PDEATHSIG
        except Exception:  # no ctypes, or no prctl: the pipe's end-of-file and getppid still tell
            pass
    if _os.getppid() != parent:
        _os._exit(0)


def _quiet(session: pytest.Session) -> None:
    """Send what the child writes to its stdout and stderr to /dev/null, pytest's own copies of
    them (kept to write to the terminal between captures) too: only the parent writes there."""
    null = _os.open(_os.devnull, _os.O_WRONLY)
    targets = [1, 2]
    capman = session.config.pluginmanager.getplugin("capturemanager")
    capturing = getattr(capman, "_global_capturing", None)
    for name in ("out", "err"):
        saved = getattr(getattr(capturing, name, None), "targetfd_save", None)
        if isinstance(saved, int):
            targets.append(saved)
    for fd in targets:
        try:
            _os.dup2(null, fd)
        except OSError:
            pass
    _os.close(null)


def _teardown_all(item: pytest.Item) -> None:
    """Tear every fixture down after a test that escaped pytest's protocol."""
    try:
        item.session._setupstate.teardown_exact(None)
    except BaseException:
        pass


# <<< Failing tests re-run apart <<<


# ---------------------------------------------------------------------------------------------
# pytest entry points: loaded with ``-p equisa_probe``.


#: The instrumenter made at ``pytest_load_initial_conftests``, before the ProbePlugin exists
#: (module state is what carries it across; it is this process's only probe).
_EARLY: dict[str, _ImportInstrumenter] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser,
                                  args: list[str]) -> None:
    """Install the import instrumenter before conftest files can import the project."""
    options = early_config.known_args_namespace
    out = getattr(options, "equisa_out", None)
    if not out or getattr(options, "equisa_trace", "1") == "0" or choose_backend()[0] != "instrument":
        return
    root = getattr(options, "equisa_root", None) or str(early_config.rootpath)
    instrumenter = _ImportInstrumenter(_os_path.realpath(root))
    sys.meta_path.insert(0, instrumenter)
    instrumenter.instrument_loaded(sys.modules)  # what plugins imported before this hook
    _EARLY["instrumenter"] = instrumenter


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("equisa", "EQUISA probe")
    group.addoption("--equisa-out", default=None, help="JSON-lines file the probe writes to.")
    group.addoption("--equisa-root", default=None, help="Repository root; code under it is traced.")
    group.addoption("--equisa-select", default=None, help="File of node ids, one a line, to run.")
    group.addoption("--equisa-order-seed", default=None, type=int,
                    help="Run the tests in an order shuffled with this seed.")
    group.addoption("--equisa-shard", default=None, help="K/N: run every N-th test from the K-th.")
    group.addoption("--equisa-trace", default="1", help="0 records outcomes only, without tracing.")
    group.addoption("--equisa-record", default=None,
                    help="File of FQNs, one a line, whose calls (arguments, results) are recorded.")
    group.addoption("--equisa-test-timeout", type=float, default=None,
                    help="Seconds a test may run before it fails with TestTimeout.")
    group.addoption("--equisa-test-limits", default=None,
                    help="JSON object: node id -> seconds that test may run (its own limit); the tests "
                         "not named get --equisa-test-timeout.")
    group.addoption("--equisa-mutants", default=None,
                    help="JSON list of mutants of a function: the tests run once per mutant.")
    group.addoption("--equisa-mutants-fail-fast", action="store_true", default=False,
                    help="In mutant rounds run the tests that passed first; stop a round at the "
                         "first of them that fails.")
    group.addoption("--equisa-mutants-must-fix", default=None,
                    help="File of node ids, one a line, a mutant is wanted to fix: they run first in "
                         "each mutant round, which stops when none of them passes.")
    group.addoption("--equisa-mutants-budget", type=float, default=None,
                    help="Seconds of wall time for the mutant rounds (after the unmutated one); the "
                         "mutants left when it is spent are reported not run (inspection patches, "
                         "detailed specs, still run).")
    group.addoption("--equisa-mutants-confirm", default=None,
                    help="JSON object: node id -> [outcome, duration] in the suite's own run. The first "
                         "mutant of each function that fixes every must-fix test of its round and breaks "
                         "none goes on through these tests; those in no mutant's tests do not run unmutated.")
    group.addoption("--equisa-serve", default=None,
                    help="After the run, serve the mutant run this JSON file will hold from a fork made "
                         "after collection, before any test ran (see 'Serving a mutant run').")
    group.addoption("--equisa-serve-limit", type=float, default=600.0,
                    help="Seconds the fork waits for --equisa-serve's file; then it leaves.")
    group.addoption("--equisa-rerun-failures", type=int, default=0,
                    help="Re-run the first N failing tests apart, in a fork of the process made after "
                         "collection, and record their outcomes there (0: no rerun).")


def pytest_configure(config: pytest.Config) -> None:
    out = config.getoption("--equisa-out")
    if not out:
        return
    root = config.getoption("--equisa-root") or str(config.rootpath)
    shard = config.getoption("--equisa-shard")
    limits = config.getoption("--equisa-test-limits")
    plugin = ProbePlugin(
        out, root,
        select_path=config.getoption("--equisa-select"),
        shard=_parse_shard(shard) if shard else None,
        test_timeout=config.getoption("--equisa-test-timeout"),
        trace=config.getoption("--equisa-trace") != "0",
        record_path=config.getoption("--equisa-record"),
        test_limits=_read_test_limits(limits) if limits else None,
        order_seed=config.getoption("--equisa-order-seed"),
    )
    config.pluginmanager.register(plugin, "equisa-probe-recorder")
    mutants = config.getoption("--equisa-mutants")
    if mutants:
        must_fix = config.getoption("--equisa-mutants-must-fix")
        confirm = config.getoption("--equisa-mutants-confirm")
        runner = _MutantRunner(plugin, _read_mutants(mutants),
                               fail_fast=config.getoption("--equisa-mutants-fail-fast"),
                               must_fix=_read_selection(must_fix) if must_fix else None,
                               confirm=_read_confirmation(confirm) if confirm else None,
                               budget=config.getoption("--equisa-mutants-budget"))
        config.pluginmanager.register(runner, "equisa-probe-mutants")
    serve = config.getoption("--equisa-serve")
    if serve and not mutants:
        config.pluginmanager.register(_MutantServer(plugin, serve, config.getoption("--equisa-serve-limit")),
                                      "equisa-probe-serve")
    rerun = config.getoption("--equisa-rerun-failures")
    if rerun and rerun > 0:
        reason = None
        if mutants:
            reason = "mutant rounds re-run no failing test (--equisa-mutants)"
        elif config.getoption("--equisa-trace") == "0":
            reason = "the run is not traced (--equisa-trace=0)"
        if reason is not None:
            plugin._write({"kind": "rerun-skipped", "reason": reason})
        else:
            config.pluginmanager.register(_FailureRerun(plugin, rerun), "equisa-probe-rerun")

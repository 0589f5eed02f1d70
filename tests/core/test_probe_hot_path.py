"""The probe's hot path does no work that only an import needs (issue 48).

The callbacks that run per call, or once per function and test, must not resolve real paths, walk
frames or ask whether a test module's own code is running (``_Recorder.from_module_code``): that
is import-time work, done by the callbacks the backends switch to while pytest imports a test
module (``importing``). The first test reads the hot callbacks' source; the second counts the
import-time helpers' calls in traced runs of a suite ten times the size of another.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from equisa_core.probe import equisa_probe as probe

PROBE_DIR = Path(probe.__file__).parent

#: Names a hot callback must not use: import-time helpers, path resolution, frame inspection for the
#: import rule, and the import state itself (the callbacks are switched instead of checking it).
FORBIDDEN = {"from_module_code", "real_file", "realpath", "_REAL_FOLDERS", "_is_project_file",
             "importing", "f_globals", "abspath", "getattr", "_index", "_tables"}


def _function_node(source: str, name: str) -> ast.FunctionDef:
    tree = ast.parse(textwrap.dedent(source))
    return next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name)


def hot_callbacks() -> dict[str, ast.FunctionDef]:
    """The per-call callbacks of every backend in tests, by name."""
    found = {
        "sys.monitoring PY_START": _function_node(inspect.getsource(probe._MonitoringBackend._on_start),
                                                  "_on_start"),
        "sys.monitoring CALL": _function_node(inspect.getsource(probe._MonitoringBackend._on_call),
                                              "_on_call"),
        "instrument marker": _function_node(inspect.getsource(probe._ImportInstrumenter.enter), "enter"),
        # the profile hook is a closure made by _make_hooks
        "setprofile hook": _function_node(inspect.getsource(probe._ProfileBackend._make_hooks), "hook"),
        "callee of a call": _function_node(inspect.getsource(probe._callee_code), "_callee_code"),
    }
    return found


def used_names(node: ast.AST) -> set[str]:
    names = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            names.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            names.add(sub.attr)
    return names


def test_hot_callbacks_call_no_import_time_helper_nor_walk_frames():
    for label, node in hot_callbacks().items():
        assert not used_names(node) & FORBIDDEN, f"{label} uses {sorted(used_names(node) & FORBIDDEN)}"
        if label == "callee of a call":  # walks a class's MRO, not frames
            continue
        loops = [n for n in ast.walk(node) if isinstance(n, (ast.While, ast.For, ast.comprehension))]
        assert not loops, f"{label} loops (a frame walk?) at line {loops[0].lineno}"
        backs = [n for n in ast.walk(node) if isinstance(n, ast.Attribute) and n.attr == "f_back"]
        assert len(backs) <= 1, f"{label} reads f_back {len(backs)} times: only its caller is needed"


def test_the_backends_use_the_hot_callbacks_in_tests_and_the_import_ones_while_importing(tmp_path):
    recorder = probe._Recorder(str(tmp_path))
    hook = probe._ProfileBackend(recorder)
    assert hook.hook.__code__.co_name == "hook"
    hook.importing(True)
    assert hook.hook.__code__.co_name == "import_hook"
    hook.importing(False)
    assert hook.hook.__code__.co_name == "hook"

    instrumenter = probe._ImportInstrumenter(str(tmp_path))
    namespace: dict[str, object] = {}
    instrumenter.bind(namespace)
    assert namespace["__equisa_enter__"] == instrumenter.enter
    instrumenter.importing(True)
    assert namespace["__equisa_enter__"] == instrumenter.enter_importing
    instrumenter.importing(False)
    assert namespace["__equisa_enter__"] == instrumenter.enter


COUNTING_RUNNER = '''
import collections, functools, json, sys
import equisa_probe as probe

counts = collections.Counter()


def counted(owner, name):
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        counts[name] += 1
        return original(*args, **kwargs)

    setattr(owner, name, wrapper)


for owner, name in [(probe._Recorder, "from_module_code"), (probe._Recorder, "_is_project_file"),
                    (probe, "real_file")]:
    counted(owner, name)

import pytest

code = pytest.main(sys.argv[2:])
with open(sys.argv[1], "w") as handle:
    json.dump(dict(counts), handle)
sys.exit(0 if code in (0, 1) else code)
'''

LIBRARY = '''
def square(x):
    return x * x


def total(values):
    return sum(square(v) for v in values) + helper(len(values))


def helper(n):
    return n + 1


class Box:
    def __init__(self, size):
        self.size = size

    def grow(self):
        return Box(square(self.size))


REGISTRY = [helper(1)]
'''


def _counts(tmp_path: Path, tests: int, backend: str | None) -> dict[str, int]:
    project = tmp_path / f"project{tests}"
    (project / "pkg").mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "lib.py").write_text(LIBRARY)
    (project / "tests" / "test_lib.py").write_text(
        "import pytest\nfrom pkg.lib import Box, helper, total\n\nBUILT = helper(2)\n\n\n"
        f"@pytest.mark.parametrize('n', range({tests}))\n"
        "def test_total(n):\n    assert total([n, 1]) == n * n + 4\n    assert Box(n).grow().size == n * n\n")
    runner = tmp_path / "runner.py"
    runner.write_text(COUNTING_RUNNER)
    out = tmp_path / f"counts{tests}.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "EQUISA_", "COVERAGE_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(PROBE_DIR), str(project)])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if backend:
        env[probe.BACKEND_ENV] = backend
    done = subprocess.run(
        [sys.executable, str(runner), str(out), "-q", "-p", "no:cacheprovider", "-p", "equisa_probe",
         f"--equisa-out={tmp_path / f'trace{tests}.jsonl'}", f"--equisa-root={project}"],
        cwd=project, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    records = [json.loads(line) for line in (tmp_path / f"trace{tests}.jsonl").read_text().splitlines()]
    tested = [r for r in records if r["kind"] == "test"]
    assert len(tested) == tests and all(any(f.endswith("square") for f in r["covered"]) for r in tested)
    return json.loads(out.read_text())


def test_import_time_helpers_are_not_called_more_for_more_tests(tmp_path):
    """The default backend of this interpreter (import-time instrumentation before 3.12,
    sys.monitoring after), then the profile hook: the helpers' calls do not grow with the tests."""
    for backend in (None, "setprofile"):
        few = _counts(tmp_path / f"few-{backend}", 2, backend)
        many = _counts(tmp_path / f"many-{backend}", 20, backend)
        if backend == "setprofile":
            # The profile hook hears every call, pytest's too, and asks of each foreign code object
            # whether it is the project's (a cached verdict): that is its design, not import work.
            few.pop("_is_project_file", None)
            many.pop("_is_project_file", None)
        assert few == many, f"backend {backend or 'default'}: {few} for 2 tests, {many} for 20"

"""The probe on real suites, under every supported Python that this machine has."""

from __future__ import annotations

import ast
import hashlib
import random
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from equisa_core.common.models import SuiteTrace, TestOutcome
from equisa_core.common.source_edit import function_source
from tasks.sandbox.contract import RunRequest, SandboxLimits
from tasks.sandbox.local_backend import LocalSandbox
from tasks.sandbox.run_tests import execute_request
from tests.conftest import FIXTURES, venv_with_pytest

PYTHONS = ["3.8", "3.11", "3.12", "3.13"]
SHAPES = FIXTURES / "shapes"
T = "tests/test_geometry.py::"
MOD = "shapes.geometry."


def run_traced_suite(repo: Path, python: Path, backend: str | None = None) -> SuiteTrace:
    """The suite of ``repo`` run once under the probe in the local sandbox."""
    env = {"EQUISA_PROBE_BACKEND": backend} if backend else {}
    request = RunRequest(workspace=repo, workspace_digest="test", interpreter=str(python), env=env)
    return execute_request(LocalSandbox(), request)


def traced_project(files: dict[str, str], case: tuple[str, str | None], tmp_path: Path,
                   ) -> tuple[SuiteTrace, dict[str, set[str]]]:
    """A small project (path -> text) written to ``tmp_path`` and run under the probe (``case``:
    Python, forced backend); its trace and, per test function name, the ``pkg.`` functions covered."""
    minor, backend = case
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    trace = run_traced_suite(tmp_path, venv_with_pytest(minor), backend)
    covered = {t.test_id.split("::")[-1]: {f for f in t.covered if f.startswith("pkg.")} for t in trace.tests}
    return trace, covered


def tree_digest(root: Path) -> str:
    """A digest of every path and byte under ``root``: proves a run left the tree unchanged."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


#: (Python, forced backend): every backend on the versions that choose it, and the profile hook,
#: the fallback everywhere, on 3.11 and 3.12.
CASES = [(minor, None) for minor in PYTHONS] + [("3.11", "setprofile"), ("3.12", "setprofile")]
EXPECTED_BACKEND = {"3.8": "instrument", "3.11": "instrument", "3.12": "sys.monitoring",
                    "3.13": "sys.monitoring"}


@pytest.fixture(scope="module", params=CASES, ids=lambda case: f"{case[0]}-{case[1] or 'default'}")
def shapes_trace(request) -> tuple[str, SuiteTrace]:
    minor, backend = request.param
    python = venv_with_pytest(minor)
    before = tree_digest(SHAPES)
    trace = run_traced_suite(SHAPES, python, backend)
    assert tree_digest(SHAPES) == before, "the run wrote into the repository"
    assert trace.backend == (backend or EXPECTED_BACKEND[minor]), trace.backend_reason
    return minor, trace


def outcomes(trace: SuiteTrace) -> dict[str, TestOutcome]:
    return {t.test_id: t.outcome for t in trace.tests}


def test_backend_says_why(shapes_trace):
    minor, trace = shapes_trace
    assert trace.python_version.startswith(minor + ".")
    assert trace.backend_reason


def test_outcomes_are_recorded(shapes_trace):
    _, trace = shapes_trace
    got = outcomes(trace)
    assert got[T + "test_square"] is TestOutcome.PASSED
    assert got[T + "test_triangle_area"] is TestOutcome.FAILED
    assert got[T + "TestUnittestStyle::test_triangle"] is TestOutcome.FAILED
    assert got[T + "TestUnittestStyle::test_area"] is TestOutcome.PASSED
    assert got[T + "test_setup_error"] is TestOutcome.ERROR
    assert got[T + "test_skipped"] is TestOutcome.SKIPPED
    assert got[T + "test_expected_failure"] is TestOutcome.SKIPPED
    assert got[T + "test_mocks_os_and_time"] is TestOutcome.PASSED
    assert got[T + "test_parametrized[5-12-13]"] is TestOutcome.PASSED
    assert len(got) == 16
    assert not trace.crashed


def test_outcomes_match_plain_pytest(shapes_trace, tmp_path):
    minor, trace = shapes_trace
    python = venv_with_pytest(minor)
    copy = tmp_path / "shapes"
    subprocess.run(["cp", "-r", str(SHAPES), str(copy)], check=True)
    junit = tmp_path / "junit.xml"
    subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}"],
        cwd=copy, capture_output=True,
    )
    plain = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name")
        kinds = {child.tag for child in case}
        outcome = ("failed" if "failure" in kinds else "error" if "error" in kinds
                   else "skipped" if "skipped" in kinds else "passed")
        plain[name] = outcome
    probed = {tid.split("::")[-1]: str(o) for tid, o in outcomes(trace).items()}
    assert probed == plain


def test_covered_functions_per_test(shapes_trace):
    _, trace = shapes_trace
    covered = {t.test_id: t.covered for t in trace.tests}
    assert covered[T + "test_hypotenuse"] >= {
        MOD + "hypotenuse", MOD + "square", MOD + "logged.<locals>.wrapper"}
    assert MOD + "triangle_area" not in covered[T + "test_hypotenuse"]
    assert covered[T + "test_rectangle_area_and_diagonal"] >= {
        MOD + "Rectangle.__init__", MOD + "Rectangle.area", MOD + "Rectangle.diagonal"}
    assert covered[T + "test_static_and_class_methods"] >= {
        MOD + "Rectangle.unit", MOD + "Rectangle.square", MOD + "Rectangle.Corner.count"}
    assert covered[T + "test_closure_and_generator"] >= {
        MOD + "scaled", MOD + "scaled.<locals>.apply", MOD + "countdown"}
    # The mocked os and time did not stop the probe from seeing the call.
    assert MOD + "square" in covered[T + "test_mocks_os_and_time"]


def test_edges_follow_calls(shapes_trace):
    _, trace = shapes_trace
    edges = {(e.caller, e.callee) for e in trace.edges}
    assert (MOD + "Rectangle.diagonal", MOD + "logged.<locals>.wrapper") in edges
    assert (MOD + "logged.<locals>.wrapper", MOD + "hypotenuse") in edges
    assert (MOD + "hypotenuse", MOD + "square") in edges


def test_nodes_carry_file_and_line_range(shapes_trace):
    _, trace = shapes_trace
    source = (SHAPES / "shapes" / "geometry.py").read_text()
    expected = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            expected[node.name] = (first, node.end_lineno)
    nodes = {n.fqn: n for n in trace.nodes}
    for name in ("triangle_area", "hypotenuse", "perimeter", "countdown"):
        node = nodes[MOD + name]
        assert node.file == "shapes/geometry.py"
        assert (node.start_line, node.end_line) == expected[name]


def test_failures_carry_traceback_and_output(shapes_trace):
    _, trace = shapes_trace
    by_id = {t.test_id: t for t in trace.tests}
    failed = by_id[T + "test_triangle_area"]
    assert failed.exception_type == "AssertionError"
    assert failed.traceback[-1].file == "tests/test_geometry.py"
    assert failed.traceback[-1].function == "test_triangle_area"
    assert "assert 4.0 == 6" in (failed.message or "")
    errored = by_id[T + "test_setup_error"]
    assert errored.exception_type == "RuntimeError"
    assert "fixture failed" in (errored.message or "")
    assert "visible on stdout" in by_id[T + "test_prints_output"].stdout_tail


@pytest.mark.parametrize("minor", ["3.8", "3.12"])
def test_a_crash_keeps_earlier_outcomes(minor):
    python = venv_with_pytest(minor)
    repo = FIXTURES / "crashing"
    trace = run_traced_suite(repo, python)
    # The crash is recorded against the test that caused it, and the run resumed after it.
    assert not trace.crashed
    got = outcomes(trace)
    assert got == {
        "tests/test_crash.py::test_first": TestOutcome.PASSED,
        "tests/test_crash.py::test_second_fails": TestOutcome.FAILED,
        "tests/test_crash.py::test_kills_interpreter": TestOutcome.ERROR,
        "tests/test_crash.py::test_never_runs": TestOutcome.PASSED,
    }
    killer = next(t for t in trace.tests if t.test_id.endswith("test_kills_interpreter"))
    assert killer.exception_type == "InterpreterCrash"
    assert "exit status 3" in (killer.message or "")
    assert [t.test_id for t in trace.tests] == list(trace.collected)
    assert "helpers.double" in {n.fqn for n in trace.nodes}


@pytest.mark.parametrize("minor", ["3.8", "3.11", "3.12"])
def test_recorded_calls_carry_arguments_results_and_exceptions(minor):
    python = venv_with_pytest(minor)
    overlay = {"tests/test_raises.py": (
        "import pytest\nfrom shapes.geometry import perimeter\n\n"
        "def test_perimeter_of_nothing():\n    with pytest.raises(TypeError):\n        perimeter(None)\n"
    )}
    request = RunRequest(
        workspace=SHAPES, workspace_digest="test", interpreter=str(python), overlay=overlay,
        record=(MOD + "triangle_area", MOD + "Rectangle.diagonal", MOD + "perimeter"),
    )
    trace = execute_request(LocalSandbox(), request)
    by_id = {t.test_id: t for t in trace.tests}
    [call] = by_id[T + "test_triangle_area"].calls
    assert call.fqn == MOD + "triangle_area"
    assert {k: v.literal for k, v in call.args.items()} == {"base": "4", "height": "3"}
    assert call.result.literal == repr(4 * 3 / 3) and call.raised is None
    [diagonal] = [c for c in by_id[T + "test_rectangle_area_and_diagonal"].calls]
    assert diagonal.args["self"].state == {"width": "3", "height": "4"}
    assert diagonal.result.literal == "5.0"
    [raising] = by_id["tests/test_raises.py::test_perimeter_of_nothing"].calls
    assert raising.raised == "builtins.TypeError" and raising.result is None
    assert raising.args["sides"].literal == "None"
    assert by_id[T + "test_square"].calls == ()


@pytest.mark.parametrize("minor", ["3.8", "3.11"])
def test_instrumentation_sees_modules_a_root_conftest_imports(minor):
    python = venv_with_pytest(minor)
    request = RunRequest(workspace=SHAPES, workspace_digest="test", interpreter=str(python),
                         overlay={"conftest.py": "import shapes.geometry  # noqa\n"},
                         tests=("tests/test_geometry.py::test_square",))
    trace = execute_request(LocalSandbox(), request)
    assert trace.backend == "instrument"
    [result] = trace.tests
    assert MOD + "square" in result.covered


#: Two tests that loop forever: one with a limit of its own, one without.
LOOPING = {
    "conftest.py": "",
    "tests/test_loops.py": ("import time\n\n\n"
                            "def test_own_limit():\n    while True:\n        time.sleep(0.01)\n\n\n"
                            "def test_common_limit():\n    while True:\n        time.sleep(0.01)\n\n\n"
                            "def test_quick():\n    assert True\n"),
}


@pytest.mark.parametrize("minor", ["3.8", "3.12"])
def test_a_test_with_its_own_limit_is_stopped_there_the_others_at_the_common_one(minor, tmp_path):
    for name, text in LOOPING.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    own = "tests/test_loops.py::test_own_limit"
    limits = SandboxLimits(wall_clock_s=120, test_timeout_s=3.0, per_test={own: 1.0})
    python = venv_with_pytest(minor)
    request = RunRequest(workspace=tmp_path, workspace_digest="test", interpreter=str(python), limits=limits,
                         trace=False)
    by_id = {t.test_id.split("::")[-1]: t for t in execute_request(LocalSandbox(), request).tests}
    for name in ("test_own_limit", "test_common_limit"):
        assert by_id[name].outcome is TestOutcome.FAILED
        assert by_id[name].exception_type == "equisa_probe.TestTimeout"
    assert "longer than 1s" in (by_id["test_own_limit"].message or "")
    assert "longer than 3s" in (by_id["test_common_limit"].message or "")
    assert by_id["test_common_limit"].duration > 2.5 > by_id["test_own_limit"].duration > 0.5
    assert by_id["test_quick"].outcome is TestOutcome.PASSED


#: A class body that runs during a test (a module imported inside the test, a class defined in a
#: function): the code object of the class body is not a function, and no backend may report it.
CLASS_BODIES = {
    "conftest.py": "",
    "pkg/__init__.py": "",
    "pkg/shells.py": "class Shell:\n    name = 'sh'\n\n    def run(self):\n        return self.name\n",
    "pkg/factory.py": ("def make():\n    class Local:\n        kind = 'local'\n\n"
                       "        def value(self):\n            return 1\n\n    return Local().value()\n"),
    "tests/test_classes.py": ("def test_lazy_import():\n    from pkg.shells import Shell\n"
                              "    assert Shell().run() == 'sh'\n\n\n"
                              "def test_local_class():\n    from pkg.factory import make\n"
                              "    assert make() == 1\n"),
}


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case[0]}-{case[1] or 'default'}")
def test_class_bodies_are_not_functions(case, tmp_path):
    trace, covered = traced_project(CLASS_BODIES, case, tmp_path)
    assert covered["test_lazy_import"] == {"pkg.shells.Shell.run"}
    assert covered["test_local_class"] == {"pkg.factory.make", "pkg.factory.make.<locals>.Local.value"}
    assert not {n.fqn for n in trace.nodes} & {"pkg.shells.Shell", "pkg.factory.make.<locals>.Local"}


#: A web app's shape: the test module adds its routes at import, through the project's decorators;
#: the bug is in the registration, which no test body runs. The project's own import-time calls
#: (``pkg/app.py`` registering a default route) belong to no test module, nor do those its import
#: statements make (a lazy module's ``__getattr__``, as six.moves resolves names).
MODULE_LEVEL = {
    "conftest.py": "",
    "pkg/__init__.py": "",
    "pkg/app.py": ("class App:\n    def __init__(self):\n        self.routes = {}\n\n"
                   "    def route(self, path):\n        def add(handler):\n"
                   "            self.register(path.rstrip('/'), handler)\n            return handler\n"
                   "        return add\n\n"
                   "    def register(self, path, handler):\n        self.routes[path] = handler\n\n"
                   "    def get(self, path):\n        return self.routes[path]()\n\n\n"
                   "def helper():\n    return 'help'\n\n\n"
                   "DEFAULT = App()\nDEFAULT.route('/help')(helper)\n"),
    "pkg/lazy.py": ("def resolve(name):\n    return len(name)\n\n\n"
                    "def __getattr__(name):\n    return resolve(name)\n"),
    "tests/test_routes.py": ("from pkg.app import App\nfrom pkg.lazy import size\n\napp = App()\n\n\n"
                             "@app.route('/')\ndef index():\n    return 'index'\n\n\n"
                             "def test_root():\n    assert app.get('/') == 'index'\n\n\n"
                             "def test_nothing():\n    assert True\n"),
}


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case[0]}-{case[1] or 'default'}")
def test_what_a_test_modules_top_level_code_calls_counts_for_each_of_its_tests(case, tmp_path):
    trace, covered = traced_project(MODULE_LEVEL, case, tmp_path)
    registration = {"pkg.app.App.__init__", "pkg.app.App.route", "pkg.app.App.route.<locals>.add",
                    "pkg.app.App.register"}
    assert covered["test_nothing"] == registration  # not pkg.app.helper: pkg/app.py's own import
    assert covered["test_root"] == registration | {"pkg.app.App.get"}
    assert "tests.test_routes.index" not in {f for t in trace.tests for f in t.covered}
    # the bug (``rstrip`` leaves the root route '') fails test_root, far from any frame it ran
    assert outcomes(trace) == {"tests/test_routes.py::test_root": TestOutcome.FAILED,
                               "tests/test_routes.py::test_nothing": TestOutcome.PASSED}


#: A property's getter and setter share a qualified name, as does a function defined twice; each
#: definition is its own node: the one Python binds keeps the name, the shadowed ones are ``name#k``.
SHADOWED = {
    "conftest.py": "",
    "pkg/__init__.py": "",
    "pkg/thermo.py": ("class Thermometer:\n    def __init__(self):\n        self.celsius = 0.0\n\n"
                      "    @property\n    def fahrenheit(self):\n        return self.celsius * 9 / 5 + 32\n\n"
                      "    @fahrenheit.setter\n    def fahrenheit(self, value):\n"
                      "        self.celsius = (value - 32) * 5 / 9\n\n\n"
                      "def scale():\n    return 'C'\n\n\ndef scale():\n    return 'F'\n"),
    "tests/test_thermo.py": ("from pkg.thermo import Thermometer, scale\n\n\n"
                             "def test_read():\n    assert Thermometer().fahrenheit == 32\n\n\n"
                             "def test_write():\n    t = Thermometer()\n    t.fahrenheit = 212\n"
                             "    assert t.celsius == 100\n\n\n"
                             "def test_scale():\n    assert scale() == 'F'\n"),
}


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case[0]}-{case[1] or 'default'}")
def test_definitions_sharing_a_name_are_distinct_nodes(case, tmp_path):
    trace, covered = traced_project(SHADOWED, case, tmp_path)
    getter, setter = "pkg.thermo.Thermometer.fahrenheit#1", "pkg.thermo.Thermometer.fahrenheit"
    assert covered["test_read"] == {"pkg.thermo.Thermometer.__init__", getter}
    assert covered["test_write"] == {"pkg.thermo.Thermometer.__init__", setter}
    assert covered["test_scale"] == {"pkg.thermo.scale"}
    nodes = {n.fqn: n for n in trace.nodes}
    assert (nodes[getter].start_line, nodes[setter].start_line) == (5, 9)
    source = SHADOWED["pkg/thermo.py"]
    assert "9 / 5" in function_source(source, "Thermometer.fahrenheit#1")
    assert "value - 32" in function_source(source, "Thermometer.fahrenheit")


#: A pytest plugin of the project (as pytest-sanic is for sanic) imports it before any conftest:
#: the instrument backend marks those modules in place, or nothing of the project would be seen.
EARLY_IMPORT = {
    "pytest.ini": "[pytest]\naddopts = -p pkg.plugin\n",
    "pkg/__init__.py": "",
    "pkg/plugin.py": "from pkg import shop  # noqa: F401  (a plugin that imports the project)\n",
    "pkg/shop.py": ("import functools\n\n\n"
                    "def logged(function):\n    @functools.wraps(function)\n"
                    "    def wrapper(*args):\n        return function(*args)\n    return wrapper\n\n\n"
                    "class Cart:\n    def __init__(self):\n        self.items = []\n\n"
                    "    def add(self, price):\n        self.items.append(price)\n\n"
                    "    @property\n    def total(self):\n        return sum(self.items)\n\n"
                    "    @staticmethod\n    def tax(amount):\n        return amount // 10\n\n\n"
                    "@logged\ndef discount(amount):\n    def half(x):\n        return x // 2\n"
                    "    return half(amount)\n"),
    "tests/test_shop.py": ("from pkg.shop import Cart, discount\n\n\n"
                           "def test_total():\n    cart = Cart()\n    cart.add(30)\n    assert cart.total == 30\n\n\n"
                           "def test_tax():\n    assert Cart.tax(50) == 5\n\n\n"
                           "def test_discount():\n    assert discount(10) == 5\n"),
}


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case[0]}-{case[1] or 'default'}")
def test_project_modules_a_plugin_imported_early_are_traced(case, tmp_path):
    trace, covered = traced_project(EARLY_IMPORT, case, tmp_path)
    assert covered["test_total"] == {"pkg.shop.Cart.__init__", "pkg.shop.Cart.add", "pkg.shop.Cart.total"}
    assert covered["test_tax"] == {"pkg.shop.Cart.tax"}
    assert covered["test_discount"] >= {"pkg.shop.discount", "pkg.shop.discount.<locals>.half"}


def test_a_suite_that_cannot_exit_is_ended_after_its_probe_finished(tmp_path):
    """A thread the suite leaves blocked keeps the interpreter from exiting: once the probe wrote
    its end record, the sandbox waits the request's ``exit_grace_s`` (``EXIT_GRACE_S``, 2 s) and ends
    the run with the recorded status, not at the wall clock."""
    import time
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_stuck.py").write_text(
        "import threading\n\n\n"
        "def test_leaves_a_thread_blocked():\n"
        "    threading.Thread(target=threading.Event().wait).start()  # not a daemon: exit waits\n\n\n"
        "def test_fails():\n    assert 1 == 2\n")
    started = time.monotonic()
    trace = run_traced_suite(tmp_path, venv_with_pytest("3.11"))
    assert time.monotonic() - started < 60
    outcomes = {t.test_id.split("::")[-1]: t.outcome.value for t in trace.tests}
    assert outcomes == {"test_leaves_a_thread_blocked": "passed", "test_fails": "failed"}


def test_tests_run_in_the_order_a_seed_shuffles_them_under_the_hash_seed_asked(tmp_path):
    """``order_seed`` and ``PYTHONHASHSEED``: what a user running the tests with pytest-randomly, in a
    process of their own, sees (the benchmark's check that generated suites do not hang on order)."""
    names = [f"test_{i}" for i in range(8)]
    module = "import os\n\n" + "".join(
        f"\ndef {name}():\n    assert os.environ['PYTHONHASHSEED'] == '7'\n" for name in names)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_order.py").write_text(module)
    python = venv_with_pytest("3.11")
    plain = RunRequest(workspace=tmp_path, workspace_digest="test", interpreter=str(python), trace=False)
    shuffled = plain.model_copy(update={"order_seed": 7, "env": {"PYTHONHASHSEED": "7"}})
    file_order = [f"tests/test_order.py::{name}" for name in names]
    assert [t.outcome for t in execute_request(LocalSandbox(), plain).tests] == [TestOutcome.FAILED] * 8
    trace = execute_request(LocalSandbox(), shuffled)
    expected = list(file_order)
    random.Random(7).shuffle(expected)
    assert [t.test_id for t in trace.tests] == expected != file_order
    assert all(t.outcome is TestOutcome.PASSED for t in trace.tests)
    assert plain.cache_key("local", "3.11") != shuffled.cache_key("local", "3.11")

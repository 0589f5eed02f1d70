"""Mutant rounds: many variants of one function against its tests, in one sandboxed pytest process.

The fixture project ``tests/fixtures/mutants`` has one function of each shape the probe swaps: a
plain function, methods (one using zero-argument ``super()``, a property, a private one), a
function decorated with ``functools.wraps``, one behind ``lru_cache``, and a nested function.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from prefect import flow
from prefect.settings import PREFECT_LOCAL_STORAGE_PATH, temporary_settings
from prefect.testing.utilities import prefect_test_harness

from equisa_core.common.models import TestOutcome
from equisa_core.errors import InvalidSelectionError
from tasks.run.mutants import MutantResult, MutantRunReport, execute_mutants, read_mutant_records, run_mutants
from tasks.sandbox.contract import MutantSpec, RunRequest, SandboxLimits, prepare_run_folder, probe_arguments
from tasks.sandbox.local_backend import LocalSandbox
from tasks.sandbox.run_tests import execute_request, run_tests
from tests.conftest import FIXTURES, venv_with_pytest

pytestmark = pytest.mark.integration

PROJECT = FIXTURES / "mutants"
T = "tests/test_core.py::"
PASSED, FAILED, ERROR = TestOutcome.PASSED, TestOutcome.FAILED, TestOutcome.ERROR


def mutant(mutant_id: str, name: str, source: str) -> MutantSpec:
    return MutantSpec(id=mutant_id, fqn="calc.core." + name, file="calc/core.py", source=source)


FIX_ADD = mutant("fix-add", "add", "def add(a, b):\n    return a + b\n")
LOOP = mutant("loop", "add", "def add(a, b):\n    while True:\n        pass\n")
SLEEP = mutant("sleep", "add", "def add(a, b):\n    import time\n    time.sleep(20)\n")
EXIT = mutant("exit", "add", "def add(a, b):\n    import os\n    os._exit(1)\n")
#: Mutants that run, with the tests whose outcome they change (test_add fails unmutated).
CHANGES = {
    "break-increment": (
        "Counter.increment", "def increment(self, by=1):\n    self.count -= by\n    return self.count\n",
        {"test_increment", "test_doubled_and_reset"},
    ),
    "super-describe": (
        "Counter.describe", 'def describe(self):\n    return "counter:" + super().describe()\n',
        {"test_describe"},
    ),
    "describe-without-super": (
        "Counter.describe", 'def describe(self):\n    return "counter/base"\n', set(),
    ),
    "doubled": (
        "Counter.doubled", "@property\ndef doubled(self):\n    return self.count * 3\n",
        {"test_doubled_and_reset"},
    ),
    "private-clear": (
        "Counter.__clear", "def __clear(self):\n    self.count = 1\n", {"test_doubled_and_reset"},
    ),
    "scale-default": (
        "scale", "@logged\ndef scale(x, factor=3):\n    return x * factor\n", {"test_scale"},
    ),
    "scale-body": (
        "scale", "@logged\ndef scale(x, factor=2):\n    return x + factor\n", {"test_scale"},
    ),
    "cube": (
        "cube", "@functools.lru_cache(maxsize=None)\ndef cube(x):\n    return x * x\n", {"test_cube"},
    ),
}
#: Mutants that cannot be swapped in, with a phrase of the reason.
UNSWAPPABLE = {
    "nested-adder": (
        "make_adder.<locals>.adder", "def adder(x):\n    return x - n\n", "nested in a function",
    ),
    "super-without-class-cell": (
        "Counter.increment", "def increment(self, by=1):\n    return super().increment(by)\n",
        "free variables (__class__)",
    ),
    "syntax-error": ("add", "def add(a, b)\n    return a\n", "does not compile"),
    "missing": ("subtract", "def subtract(a, b):\n    return a - b\n", "has no attribute subtract"),
    "renamed": ("add", "def plus(a, b):\n    return a + b\n", "defines plus, not add"),
}
MUTANTS = (
    *(mutant(i, name, source) for i, (name, source, _) in CHANGES.items()),
    *(mutant(i, name, source) for i, (name, source, _) in UNSWAPPABLE.items()),
    LOOP, FIX_ADD, EXIT, mutant("after-exit", "add", "def add(a, b):\n    return b + a\n"),
)
ALL_TESTS = {"test_add", "test_add_zero", "test_increment", "test_describe", "test_doubled_and_reset",
             "test_scale", "test_cube", "test_make_adder", "test_fixtures_are_fresh"}


def mutant_request(python: Path, mutants, **changes) -> RunRequest:
    values = {"workspace": PROJECT, "workspace_digest": "test", "interpreter": str(python), "trace": False,
              "limits": SandboxLimits(test_timeout_s=1.0, wall_clock_s=120.0), "mutants": tuple(mutants)}
    return RunRequest(**{**values, **changes})


def short(outcomes: dict[str, TestOutcome]) -> dict[str, TestOutcome]:
    return {test.split("::")[-1]: outcome for test, outcome in outcomes.items()}


def not_passed(result: MutantResult) -> set[str]:
    return {test for test, outcome in short(result.outcomes).items() if outcome is not PASSED}


@pytest.fixture(scope="module", params=["3.8", "3.11", "3.12", "3.13"])
def run(request) -> tuple[str, MutantRunReport]:
    """Every mutant above, in one run (resumed once, after EXIT), under each supported Python."""
    minor = request.param
    return minor, execute_mutants(LocalSandbox(), mutant_request(venv_with_pytest(minor), MUTANTS))


def test_the_original_round_is_recorded(run):
    minor, report = run
    assert report.python_version.startswith(minor + ".")
    assert {t.split("::")[-1] for t in report.tests} == ALL_TESTS
    assert short(report.original) == {name: FAILED if name == "test_add" else PASSED for name in ALL_TESTS}
    assert report.original_failures[T + "test_add"].startswith("AssertionError: assert -1 == 5")
    assert list(report.mutants) == [m.id for m in MUTANTS]


def test_the_original_round_equals_a_plain_run(run):
    minor, report = run
    plain = execute_request(LocalSandbox(), RunRequest(
        workspace=PROJECT, workspace_digest="test", interpreter=str(venv_with_pytest(minor)), trace=False))
    assert {t.test_id: t.outcome for t in plain.tests} == report.original


def test_a_fixing_mutant_turns_the_failing_test_green(run):
    _, report = run
    result = report.mutants["fix-add"]
    assert result.status == "ran" and not_passed(result) == set()
    assert report.changed("fix-add") == {T + "test_add": (FAILED, PASSED)}
    assert report.fixes("fix-add")
    assert [m for m in report.mutants if report.fixes(m)] == ["fix-add", "after-exit"]


@pytest.mark.parametrize("mutant_id", list(CHANGES))
def test_breaking_mutants_fail_their_tests(run, mutant_id):
    _, report = run
    result = report.mutants[mutant_id]
    assert result.status == "ran", result.reason
    assert set(result.outcomes) == set(report.tests)
    assert not_passed(result) == {"test_add"} | CHANGES[mutant_id][2]
    for test in CHANGES[mutant_id][2]:
        assert result.failures[T + test].startswith("AssertionError")


def test_a_cache_around_the_function_is_emptied_at_each_swap(run):
    _, report = run
    # ``cube(2)`` was cached as 8 by the original round; the mutant still saw its own 4 ...
    assert short(report.mutants["cube"].outcomes)["test_cube"] is FAILED
    # ... and the next round the original's 8 again, not the mutant's cached 4.
    assert short(report.mutants["nested-adder"].outcomes) == {}
    assert short(report.mutants["loop"].outcomes)["test_cube"] is PASSED


@pytest.mark.parametrize("mutant_id", list(UNSWAPPABLE))
def test_unswappable_mutants_say_why(run, mutant_id):
    _, report = run
    result = report.mutants[mutant_id]
    assert result.status == "unswappable"
    assert UNSWAPPABLE[mutant_id][2] in (result.reason or "")
    assert result.outcomes == {}


def test_an_infinite_loop_is_stopped_by_the_test_timeout_and_the_next_mutants_run(run):
    _, report = run
    result = report.mutants["loop"]
    assert result.status == "timeout"
    assert not_passed(result) == {"test_add", "test_add_zero"}
    assert result.failures[T + "test_add"].startswith("equisa_probe.TestTimeout")
    assert "per-test timeout" in (result.reason or "")
    assert report.mutants["fix-add"].status == "ran"


def test_a_mutant_that_kills_the_interpreter_is_recorded_and_the_rest_run(run):
    _, report = run
    result = report.mutants["exit"]
    assert result.status == "crashed"
    assert "exit status 1" in (result.reason or "") and "test_add" in (result.reason or "")
    assert result.outcomes == {T + "test_add": ERROR}
    assert result.failures[T + "test_add"].startswith("InterpreterCrash")
    assert report.mutants["after-exit"].status == "ran"
    assert set(report.mutants["after-exit"].outcomes) == set(report.tests)
    assert report.resumes == 1


def test_every_round_starts_with_fresh_fixtures(run):
    _, report = run
    for mutant_id, result in report.mutants.items():
        if result.status == "ran":
            assert short(result.outcomes)["test_fixtures_are_fresh"] is PASSED, mutant_id


# ---------------------------------------------------------------------------------------------
# Under the default Python only: what the interpreter matrix above does not change.


@pytest.fixture(scope="module")
def python() -> Path:
    return venv_with_pytest("3.11")


def test_the_ordinary_records_of_the_original_round_still_parse(python):
    request = mutant_request(python, (FIX_ADD, *MUTANTS[:3]), trace=True)
    trace = execute_request(LocalSandbox(), request)
    plain = execute_request(LocalSandbox(), request.model_copy(update={"mutants": ()}))
    assert {t.test_id: t.outcome for t in trace.tests} == {t.test_id: t.outcome for t in plain.tests}
    covered = {t.test_id: t.covered for t in trace.tests}
    assert covered == {t.test_id: t.covered for t in plain.tests}
    assert "calc.core.add" in covered[T + "test_add"]
    assert not trace.crashed


def test_a_swallowed_timeout_is_ended_by_the_watchdog_and_the_rest_run(python):
    swallow = mutant("swallow", "add", (
        "def add(a, b):\n    while True:\n        try:\n            while True:\n                pass\n"
        "        except BaseException:\n            pass\n"))
    request = mutant_request(python, (swallow, FIX_ADD), only=(T + "test_add",),
                             limits=SandboxLimits(test_timeout_s=0.5, wall_clock_s=60.0))
    report = execute_mutants(LocalSandbox(), request)
    result = report.mutants["swallow"]
    assert result.status == "timeout"
    assert "the probe ended the process" in (result.reason or "")
    assert result.outcomes == {T + "test_add": FAILED}
    assert report.mutants["fix-add"].status == "ran" and report.resumes == 1


def test_each_tests_own_limit_stops_it_unmutated_and_arms_the_watchdog(python):
    loops = "tests/test_loops.py::test_loops_unless_add_is_fixed"
    overlay = {"tests/test_loops.py": (
        "from calc.core import add\n\n\ndef test_loops_unless_add_is_fixed():\n"
        "    while add(2, 3) != 5:\n        pass\n")}
    swallow = mutant("swallow", "add", (
        "def add(a, b):\n    while True:\n        try:\n            while True:\n                pass\n"
        "        except BaseException:\n            pass\n"))
    limits = SandboxLimits(test_timeout_s=None, wall_clock_s=60.0, per_test={loops: 1.0})
    request = mutant_request(python, (FIX_ADD, swallow), overlay=overlay, tests=("tests/test_loops.py",),
                             limits=limits)
    report = execute_mutants(LocalSandbox(), request)
    # unmutated, the test loops: stopped at its own limit (no per-test timeout for the others)
    assert report.original[loops] is FAILED
    assert "ran longer than 1s" in report.original_failures[loops]
    assert report.mutants["fix-add"].outcomes == {loops: PASSED}
    # the watchdog follows the longest limit: a mutant swallowing TestTimeout is still ended
    assert "the probe ended the process" in (report.mutants["swallow"].reason or "")


def test_the_watchdog_gives_a_stuck_mutant_twice_its_own_tests_limit_not_the_slowest_tests(python):
    # One test of the run has a long limit (20 s): the watchdog once waited twice that for every
    # stuck mutant. A mutant's test gets MUTANT_SLOWDOWN times its duration, at least 0.3 s.
    slow = "tests/test_slow.py::test_has_a_long_limit"
    overlay = {"tests/test_slow.py": "def test_has_a_long_limit():\n    pass\n"}
    swallow = mutant("swallow", "add", (
        "def add(a, b):\n    while True:\n        try:\n            while True:\n                pass\n"
        "        except BaseException:\n            pass\n"))
    swallow = swallow.model_copy(update={"tests": (T + "test_add",)})
    limits = SandboxLimits(test_timeout_s=None, wall_clock_s=60.0, per_test={T + "test_add": 5.0, slow: 20.0})
    request = mutant_request(python, (swallow, FIX_ADD), overlay=overlay,
                             tests=("tests/test_core.py", "tests/test_slow.py"), limits=limits)
    report = execute_mutants(LocalSandbox(), request)
    reason = report.mutants["swallow"].reason or ""
    assert "the probe ended the process" in reason
    assert "past its 0.3s timeout" in reason and "still ran 1.6s" in reason  # 2 x 0.3 s + 1 s
    assert report.mutants["fix-add"].status == "ran"


def test_the_wall_clock_ends_a_mutant_and_the_rest_resume(python):
    request = mutant_request(python, (LOOP, FIX_ADD), only=(T + "test_add",),
                             limits=SandboxLimits(test_timeout_s=None, wall_clock_s=6.0))
    report = execute_mutants(LocalSandbox(), request)
    assert report.mutants["loop"].status == "crashed"
    assert "timed out after 6s" in (report.mutants["loop"].reason or "")
    assert report.mutants["fix-add"].status == "ran"
    assert report.mutants["fix-add"].outcomes == {T + "test_add": PASSED}


def test_a_test_that_kills_the_unmutated_interpreter_is_left_out_of_the_mutant_rounds(python):
    dies = "tests/test_dies.py::test_dies_unless_add_is_fixed"
    overlay = {"tests/test_dies.py": (
        "import os\nfrom calc.core import add\n\n\ndef test_dies_unless_add_is_fixed():\n"
        "    if add(1, 1) == 0:\n        os._exit(3)\n")}
    request = mutant_request(python, (FIX_ADD,), overlay=overlay, tests=("tests/test_dies.py", "tests"))
    report = execute_mutants(LocalSandbox(), request)
    assert report.original[dies] is ERROR
    assert "exit status 3" in report.original_failures[dies]
    assert report.original[T + "test_add"] is FAILED
    result = report.mutants["fix-add"]
    assert result.status == "ran" and dies not in result.outcomes
    assert set(result.outcomes) == set(report.tests) - {dies}
    assert not report.fixes("fix-add")  # the left-out test has no outcome to show it


def test_a_mutant_that_escapes_pytest_ends_only_its_own_test(python):
    # pytest.exit() is re-raised by pytest's runner (it would end the session): the probe records
    # the test as an error, tears every fixture down and goes on.
    leave = mutant("pytest-exit", "add", "def add(a, b):\n    import pytest\n    pytest.exit('bye')\n")
    request = mutant_request(python, (leave, FIX_ADD), only=(T + "test_add", T + "test_fixtures_are_fresh"))
    report = execute_mutants(LocalSandbox(), request)
    result = report.mutants["pytest-exit"]
    assert result.status == "ran" and result.outcomes[T + "test_add"] is ERROR
    assert "Exit" in result.failures[T + "test_add"] and "bye" in result.failures[T + "test_add"]
    assert result.outcomes[T + "test_fixtures_are_fresh"] is PASSED
    assert report.fixes("fix-add") and report.resumes == 0


def test_a_selection_limits_every_round(python):
    request = mutant_request(python, (FIX_ADD, EXIT), only=(T + "test_add", T + "test_cube"))
    report = execute_mutants(LocalSandbox(), request)
    assert set(report.original) == {T + "test_add", T + "test_cube"}
    assert report.mutants["fix-add"].outcomes == {T + "test_add": PASSED, T + "test_cube": PASSED}


# ---------------------------------------------------------------------------------------------
# The Prefect task: cached under its own key.


@pytest.fixture(scope="module")
def prefect_server() -> Iterator[None]:
    with prefect_test_harness(server_startup_timeout=180):
        yield


def test_run_mutants_is_cached_apart_from_run_tests(prefect_server, python, tmp_path):
    request = mutant_request(python, (FIX_ADD,), only=(T + "test_add",))

    @flow
    def twice():
        first = run_mutants(request, backend="local", interpreter_version="3.11", return_state=True)
        again = run_mutants(request, backend="local", interpreter_version="3.11", return_state=True)
        plain = run_tests(request, backend="local", interpreter_version="3.11", return_state=True)
        return first, again, plain

    with temporary_settings({PREFECT_LOCAL_STORAGE_PATH: tmp_path / "results"}):
        first, again, plain = twice()
    assert (first.name, again.name) == ("Completed", "Cached")
    assert again.result().mutants["fix-add"].outcomes == {T + "test_add": PASSED}
    assert plain.name == "Completed"  # the same request, but not the mutant run's result
    assert [t.test_id for t in plain.result().tests] == [T + "test_add"]


# ---------------------------------------------------------------------------------------------
# The request, its cache key and the run folder (no sandbox run).


def request_with(*mutants: MutantSpec) -> RunRequest:
    return RunRequest(workspace=PROJECT, workspace_digest="abc", interpreter="/usr/bin/python3",
                      mutants=mutants)


def test_the_cache_key_covers_the_mutants_and_their_order():
    other = mutant("other", "add", "def add(a, b):\n    return 0\n")
    key = request_with(FIX_ADD, other).cache_key("local", "3.11.7")
    assert key == request_with(FIX_ADD, other).cache_key("local", "3.11.7")
    variants = [
        request_with().cache_key("local", "3.11.7"),
        request_with(FIX_ADD).cache_key("local", "3.11.7"),
        request_with(other, FIX_ADD).cache_key("local", "3.11.7"),
        request_with(FIX_ADD, other.model_copy(update={"source": "def add(a, b):\n    return 1\n"})
                     ).cache_key("local", "3.11.7"),
        request_with(FIX_ADD, other.model_copy(update={"id": "renamed"})).cache_key("local", "3.11.7"),
        request_with(FIX_ADD, other).cache_key("local", "3.12.1"),
    ]
    assert len({key, *variants}) == len(variants) + 1


def test_the_run_folder_and_arguments_carry_the_mutants(tmp_path):
    request = request_with(FIX_ADD, LOOP)
    prepare_run_folder(request, tmp_path)
    written = json.loads((tmp_path / "out" / "mutants.json").read_text())
    assert [MutantSpec(**spec) for spec in written] == [FIX_ADD, LOOP]
    assert "--equisa-mutants=/o/mutants.json" in probe_arguments(request, "/r", "/o")
    assert not any(a.startswith("--equisa-mutants") for a in probe_arguments(request_with(), "/r", "/o"))


def test_bad_mutants_are_rejected():
    with pytest.raises(InvalidSelectionError, match="reserved"):
        mutant("original", "add", "def add(a, b):\n    pass\n")
    with pytest.raises(InvalidSelectionError, match="relative"):
        MutantSpec(id="m", fqn="calc.core.add", file="../core.py", source="def add(a, b):\n    pass\n")
    with pytest.raises(InvalidSelectionError, match="unique"):
        request_with(FIX_ADD, FIX_ADD)
    with pytest.raises(InvalidSelectionError, match="at least one mutant"):
        execute_mutants(LocalSandbox(), request_with())


def test_mutant_records_are_read_per_round():
    lines = [
        '{"kind": "session", "python": "3.11.7"}',
        '{"kind": "mutant-start", "mutant": "original", "tests": 1}',
        '{"kind": "mutant-test", "mutant": "original", "test_id": "t", "outcome": "failed", '
        '"exception_type": "AssertionError", "message": "no"}',
        '{"kind": "mutant-done", "mutant": "original", "status": "ran", "reason": null, "duration": 0.5}',
        '{"kind": "mutant-done", "mutant": "u", "status": "unswappable", "reason": "why"}',
        '{"kind": "mutant-start", "mutant": "m", "tests": 1}',
        '{"kind": "mutant-test", "mutant": "m", "test_id": "t", "outc',
    ]
    rounds = read_mutant_records(lines)
    assert list(rounds) == ["original", "u", "m"]
    assert rounds["original"].outcomes == {"t": FAILED}
    assert rounds["original"].failures == {"t": "AssertionError: no"}
    assert (rounds["original"].status, rounds["original"].duration) == ("ran", 0.5)
    assert (rounds["u"].status, rounds["u"].reason) == ("unswappable", "why")
    assert rounds["m"].status is None and rounds["m"].outcomes == {}


def test_must_fix_stops_the_rounds_of_mutants_that_fix_none_of_its_tests():
    """Localization asks only for fixes: the tests to fix run first, and a mutant that passes none
    of them is stopped right after them; a mutant may run against its own function's tests only;
    the original round, traced, doubles as an ordinary run."""
    python = venv_with_pytest(f"{sys.version_info[0]}.{sys.version_info[1]}")
    broken = mutant("break-increment", "Counter.increment", CHANGES["break-increment"][1])
    own_tests = broken.model_copy(update={"id": "own-tests",
                                          "tests": (T + "test_increment", T + "test_cube")})
    request = mutant_request(python, [broken, FIX_ADD, own_tests], mutants_fail_fast=True,
                             mutants_must_fix=(T + "test_add",), trace=True)
    report = execute_mutants(LocalSandbox(), request)
    assert list(report.mutants["break-increment"].outcomes) == [T + "test_add"]
    # A mutant with tests of its own runs only those (none of them is to fix: no early stop).
    assert short(report.mutants["own-tests"].outcomes) == {"test_increment": FAILED}
    fixing = report.mutants["fix-add"].outcomes
    assert list(fixing)[0] == T + "test_add" and short(fixing) == {test: PASSED for test in ALL_TESTS}
    traced = report.original_trace
    assert traced is not None and {t.test_id for t in traced.tests} == set(report.tests)
    add_test = next(t for t in traced.tests if t.test_id == T + "test_add")
    assert add_test.outcome is FAILED and "calc.core.add" in add_test.covered


def test_a_fail_fast_round_stops_at_its_first_test_stopped_by_its_time_limit():
    """A mutant that hangs in a test it is asked to fix (one that did not pass unmutated) is no
    fix: its round stops there rather than hang again in the next test. ``test_cube`` is asked for
    too and passes, so without the stop the round would go on to the rest (and hang in
    ``test_add_zero``)."""
    python = venv_with_pytest(f"{sys.version_info[0]}.{sys.version_info[1]}")
    request = mutant_request(python, [LOOP], mutants_fail_fast=True,
                             mutants_must_fix=(T + "test_add", T + "test_cube"),
                             limits=SandboxLimits(test_timeout_s=30.0, wall_clock_s=120.0))
    loop = execute_mutants(LocalSandbox(), request).mutants["loop"]
    assert loop.status == "timeout"
    ran = list(short(loop.outcomes))
    assert ran[-1] == "test_add" and set(ran) <= {"test_add", "test_cube"}
    assert "time limit" in (loop.reason or "") and "test_add" in (loop.reason or "")


def test_a_fix_is_confirmed_by_the_whole_suite_in_the_same_process():
    """With the suite's outcomes given (``mutants_confirm``), the first mutant of a function that
    fixes its own tests goes on through the rest of the suite: a fix that breaks another test
    stops at it, and the function's later fixes are not confirmed again; tests no mutant asks for
    do not run unmutated (the suite's run is their baseline)."""
    python = venv_with_pytest(f"{sys.version_info[0]}.{sys.version_info[1]}")
    suite = {T + name: (FAILED if name == "test_add" else PASSED, 0.001) for name in ALL_TESTS}
    overfit = mutant("overfit-add", "add", "def add(a, b):\n    return a + b + (1 if b == 0 else 0)\n")
    own = {"tests": (T + "test_add",)}
    request = mutant_request(
        python, [overfit.model_copy(update=own), FIX_ADD.model_copy(update=own)], only=tuple(sorted(suite)),
        mutants_fail_fast=True, mutants_must_fix=(T + "test_add",), mutants_confirm=suite)
    report = execute_mutants(LocalSandbox(), request)
    assert set(report.original) == {T + "test_add"}
    stopped = short(report.mutants["overfit-add"].outcomes)
    assert stopped["test_add"] is PASSED and list(stopped)[-1] == "test_add_zero"
    assert not_passed(report.mutants["overfit-add"]) == {"test_add_zero"}
    assert short(report.mutants["fix-add"].outcomes) == {"test_add": PASSED}  # add had its confirmation

    only_the_fix = request.model_copy(update={"mutants": (FIX_ADD.model_copy(update=own),)})
    alone = execute_mutants(LocalSandbox(), only_the_fix)
    assert short(alone.mutants["fix-add"].outcomes) == {test: PASSED for test in ALL_TESTS}


def test_a_detailed_round_runs_every_test_and_keeps_output_and_tracebacks():
    """An inspection patch runs as a detailed round: no fail-fast or must-fix stop, each test's
    output kept, each failure's traceback kept with the patch's lines numbered from the function's
    first line (6 in calc/core.py), so the frame of its assertion is inside the function."""
    python = venv_with_pytest(f"{sys.version_info[0]}.{sys.version_info[1]}")
    patch = MutantSpec(
        id="inspect", fqn="calc.core.add", file="calc/core.py", detailed=True,
        tests=(T + "test_add", T + "test_add_zero"),
        source="def add(a, b):\n    print('heartbeat add')\n    result = a - b\n"
               "    assert result >= a, 'result below a'\n    return result\n")
    request = mutant_request(python, [patch, FIX_ADD], mutants_fail_fast=True,
                             mutants_must_fix=(T + "test_add",))
    report = execute_mutants(LocalSandbox(), request)
    detailed = report.mutants["inspect"]
    assert detailed.status == "ran" and [t.test_id for t in detailed.tests] == list(detailed.outcomes)
    by_name = {t.test_id.rsplit("::", 1)[1]: t for t in detailed.tests}
    assert set(by_name) == {"test_add", "test_add_zero"}  # both ran: no must-fix stop after test_add
    failed = by_name["test_add"]
    assert failed.outcome is FAILED and failed.exception_type == "AssertionError"
    assert "result below a" in failed.message and "heartbeat add" in failed.stdout_tail
    innermost = failed.traceback[-1]
    assert (innermost.file, innermost.function, innermost.line) == ("calc/core.py", "add", 9)
    # A plain mutant's round keeps neither output nor tracebacks.
    assert report.mutants["fix-add"].tests == ()


def test_fail_fast_runs_passing_tests_first_and_stops_at_the_first_broken_one():
    """With fail-fast a breaking mutant's round stops at its first broken test (tests that passed
    unmutated run first); a fixing mutant still runs everything; a looping mutant is stopped by the
    CPU-time limit relative to the unmutated run (MUTANT_MIN_CPU_LIMIT, 0.1 s, here), not by the
    30 s timeout; a mutant that sleeps (no CPU time) by the wall-clock one (MUTANT_MIN_LIMIT, 0.3 s)."""
    python = venv_with_pytest(f"{sys.version_info[0]}.{sys.version_info[1]}")
    broken = mutant("break-increment", "Counter.increment", CHANGES["break-increment"][1])
    request = mutant_request(python, [broken, FIX_ADD, LOOP, SLEEP], mutants_fail_fast=True,
                             limits=SandboxLimits(test_timeout_s=30.0, wall_clock_s=120.0))
    report = execute_mutants(LocalSandbox(), request)
    stopped = report.mutants["break-increment"]
    assert stopped.status == "ran"
    assert list(stopped.outcomes)[-1] == T + "test_increment"
    assert not_passed(stopped) == {"test_increment"} and "test_add" not in short(stopped.outcomes)
    assert short(report.mutants["fix-add"].outcomes) == {test: PASSED for test in ALL_TESTS}
    assert report.fixes("fix-add")
    loop = report.mutants["loop"]
    assert loop.status == "timeout" and list(loop.outcomes) == [T + "test_add_zero"]
    assert "used more than 0.1s of CPU time" in loop.failures[T + "test_add_zero"]
    assert loop.duration_s < 10
    asleep = report.mutants["sleep"]
    assert asleep.status == "timeout" and list(asleep.outcomes) == [T + "test_add_zero"]
    assert "ran longer than 0.3s" in asleep.failures[T + "test_add_zero"]
    assert asleep.duration_s < 10


def test_mutants_left_when_the_budget_is_spent_are_not_run():
    """A budget for the mutant rounds: once it is spent, the mutants left are reported 'not_run'
    with the reason, and the run ends normally."""
    chosen = tuple(mutant(i, name, source) for i, (name, source, _) in list(CHANGES.items())[:3])
    request = mutant_request(venv_with_pytest("3.11"), chosen, mutants_budget_s=0.001)
    report = execute_mutants(LocalSandbox(), request)
    first, *rest = (report.mutants[m.id] for m in chosen)
    assert first.status == "ran" and [r.status for r in rest] == ["not_run", "not_run"]
    assert all("budget of 0.001s was spent" in (r.reason or "") for r in rest)


def test_inspection_patches_run_when_the_mutant_budget_is_spent():
    """The budget stops mutants, never an inspection patch (a detailed spec): a batch of inspections
    keeps every inspection however slow its mutants were."""
    chosen = [mutant(i, name, source) for i, (name, source, _) in list(CHANGES.items())[:2]]
    patch = MutantSpec(id="inspect", fqn="calc.core.add", file="calc/core.py", detailed=True,
                       tests=(T + "test_add",),
                       source="def add(a, b):\n    result = a + b\n    assert result >= a\n    return result\n")
    request = mutant_request(venv_with_pytest("3.11"), [*chosen, patch], mutants_budget_s=0.001)
    report = execute_mutants(LocalSandbox(), request)
    assert [report.mutants[m.id].status for m in chosen] == ["ran", "not_run"]
    assert report.mutants["inspect"].status == "ran" and report.mutants["inspect"].tests

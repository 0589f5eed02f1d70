"""Which failing tests fail for want of a third-party module."""

from __future__ import annotations

from equisa_core.common.models import TestOutcome, TestResult
from equisa_core.discovery.environment_failures import environment_failures, missing_module


def failed(test_id: str, kind: str | None, message: str | None) -> TestResult:
    return TestResult(test_id=test_id, outcome=TestOutcome.FAILED, duration=0.0, exception_type=kind,
                      message=message)


def test_a_missing_third_party_module_is_an_environment_failure():
    tests = [
        failed("t1", "ModuleNotFoundError", "No module named 'yaml'"),
        failed("t2", "builtins.ImportError", "No module named 'requests.adapters'"),
        failed("t3", "ModuleNotFoundError", "No module named 'mypkg.helpers'"),  # the repository's own
        failed("t4", "AssertionError", "assert 1 == 2"),
        failed("t5", "ImportError", "cannot import name 'x' from 'y'"),
    ]
    assert environment_failures(tests, {"mypkg", "tests"}) == {"t1": "yaml", "t2": "requests.adapters"}
    assert missing_module(tests[3]) is None and missing_module(tests[4]) is None


def test_a_module_the_code_itself_imports_at_run_time_is_not_an_environment_failure():
    """A repository function on the traceback before the failed import: the code asked for an
    optional module where it should not, which is the bug (BugsInPy luigi 17), not the machine."""
    from equisa_core.common.models import TracebackFrame

    def with_frames(test_id: str, *frames: tuple[str, str]) -> TestResult:
        return failed(test_id, "ModuleNotFoundError", "No module named 'sqlalchemy'").model_copy(
            update={"traceback": tuple(TracebackFrame(file=f, line=1, function=fn) for f, fn in frames)})

    test_frame = ("test/scheduler_test.py", "test_history")
    by_code = with_frames("t1", test_frame, ("luigi/scheduler.py", "__init__"),
                          ("luigi/db_task_history.py", "<module>"))
    by_test = with_frames("t2", test_frame, ("luigi/db_task_history.py", "<module>"))
    in_site_packages = with_frames("t3", test_frame, ("/venv/lib/site-packages/a.py", "load"))
    assert environment_failures([by_code, by_test, in_site_packages], {"luigi", "test"}) == {
        "t2": "sqlalchemy", "t3": "sqlalchemy"}

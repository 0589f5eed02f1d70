"""Which failing tests fail for want of a third-party module."""

from __future__ import annotations

from equisa_core.environment_failures import environment_failures, missing_module
from equisa_core.models import TestOutcome, TestResult


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

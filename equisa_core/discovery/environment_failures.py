"""Failing tests that fail for an environment reason, not a bug in the code.

A test that fails with ``ModuleNotFoundError`` for a module from outside the repository fails
because the interpreter lacks a package: no function of the repository is to blame, and a
localization would only rank whatever the test ran before the import. The flow asks this module
which failures are of that kind; when all are, it stops with ``EnvironmentFailureError``.

Not when the repository's own code asked for the module at run time: a traceback that passes
through a function of the repository (not test code, not a module body being imported) before the
import failed shows code that imports an optional dependency where it should not, which is a bug
to localize (seen in BugsInPy's luigi 17: the scheduler imports the SQLAlchemy task history
that only some configurations need).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Set

from equisa_core.common.models import TestResult
from equisa_core.common.testcode import is_test_file

__all__ = ["environment_failures", "imported_by_own_code", "missing_module"]

_NO_MODULE = re.compile(r"No module named '(?P<name>[^']+)'")
_IMPORT_ERRORS = frozenset({"ModuleNotFoundError", "ImportError"})


def missing_module(test: TestResult) -> str | None:
    """The module a failing test could not import, from its exception and message, or None."""
    kind = (test.exception_type or "").rsplit(".", 1)[-1]
    if kind not in _IMPORT_ERRORS or not test.message:
        return None
    found = _NO_MODULE.search(test.message)
    return found["name"] if found else None


def imported_by_own_code(test: TestResult) -> bool:
    """Whether a function of the repository (not test code) is on the failure's traceback: the
    failed import ran because the code under test asked for it."""
    return any(not frame.file.startswith("/") and not is_test_file(frame.file)
               and frame.function != "<module>" for frame in test.traceback)


def environment_failures(failing: Iterable[TestResult], own_packages: Set[str]) -> dict[str, str]:
    """Failing test id -> the missing third-party module, for the tests that fail only for that.

    ``own_packages`` are the repository's top-level module and package names: a missing module
    among them is the code's own fault (a renamed module, a typo) and is not listed.
    """
    found: dict[str, str] = {}
    for test in failing:
        name = missing_module(test)
        if name and name.split(".", 1)[0] not in own_packages and not imported_by_own_code(test):
            found[test.test_id] = name
    return found

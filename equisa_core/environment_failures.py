"""Failing tests that fail for an environment reason, not a bug in the code.

A test that fails with ``ModuleNotFoundError`` for a module from outside the repository fails
because the interpreter lacks a package: no function of the repository is to blame, and a
localization would only rank whatever the test ran before the import. The flow asks this module
which failures are of that kind; when all are, it stops with ``EnvironmentFailureError``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Set

from equisa_core.models import TestResult

__all__ = ["missing_module", "environment_failures"]

_NO_MODULE = re.compile(r"No module named '(?P<name>[^']+)'")
_IMPORT_ERRORS = frozenset({"ModuleNotFoundError", "ImportError"})


def missing_module(test: TestResult) -> str | None:
    """The module a failing test could not import, from its exception and message, or None."""
    kind = (test.exception_type or "").rsplit(".", 1)[-1]
    if kind not in _IMPORT_ERRORS or not test.message:
        return None
    found = _NO_MODULE.search(test.message)
    return found["name"] if found else None


def environment_failures(failing: Iterable[TestResult], own_packages: Set[str]) -> dict[str, str]:
    """Failing test id -> the missing third-party module, for the tests that fail only for that.

    ``own_packages`` are the repository's top-level module and package names: a missing module
    among them is the code's own fault (a renamed module, a typo) and is not listed.
    """
    found: dict[str, str] = {}
    for test in failing:
        name = missing_module(test)
        if name and name.split(".", 1)[0] not in own_packages:
            found[test.test_id] = name
    return found

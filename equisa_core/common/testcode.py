"""Which files and pytest ids are test code (seed 002, section 4.4). Pure string checks.

Shared by the trace types (``SuiteTrace.coverage`` leaves test code out) and by every loop that
must tell the code under test from its tests; ``equisa_core.localization.selection`` re-exports both.
"""

from __future__ import annotations

__all__ = ["GENERATED_TESTS_DIR", "is_generated_test", "is_test_file", "is_test_id", "is_test_support"]

#: Folder of a workspace copy that holds EQUISA's generated tests, relative to its root.
GENERATED_TESTS_DIR = "tests/equisa_generated"

_TEST_DIRS = frozenset({"tests", "test"})
#: Modules (and packages) that hold a project's test support: runners, case classes, wrappers.
_TEST_SUPPORT = frozenset({"testing", "testutils", "test_utils", "testlib", "testcase", "pytest_plugin"})


def is_test_file(path: str) -> bool:
    """Whether a relative path is test code.

    True for basenames ``test_*.py``, ``*_test.py`` and ``conftest.py``, and for any file under a
    directory named ``tests`` or ``test``. Backslashes count as separators.
    """
    *directories, basename = path.replace("\\", "/").split("/")
    if basename == "conftest.py" or (
        basename.endswith(".py") and (basename.startswith("test_") or basename.endswith("_test.py"))
    ):
        return True
    return any(part in _TEST_DIRS for part in directories)


def is_test_id(test_id: str) -> bool:
    """Whether a pytest node id looks like a test (4.4).

    Its file part (before the first ``::``) passes ``is_test_file``, or its function name (the
    last ``::`` part, parameters ``[...]`` removed) starts with ``test``.
    """
    file_part, _, rest = test_id.partition("::")
    function = rest.rsplit("::", 1)[-1].split("[", 1)[0]
    return is_test_file(file_part) or function.startswith("test")


def is_test_support(path: str) -> bool:
    """Whether a relative path is test code or a project's test support (``pkg/testing.py``,
    ``pkg/testing/...``, ``testutils.py``, ...): code a repair must not patch, since a change there
    can make a failing test pass by not running it."""
    if is_test_file(path):
        return True
    *directories, basename = path.replace("\\", "/").split("/")
    return basename.removesuffix(".py") in _TEST_SUPPORT or any(part in _TEST_SUPPORT for part in directories)


def is_generated_test(test_id: str) -> bool:
    """Whether a pytest id (or a path) is one of EQUISA's generated tests (``GENERATED_TESTS_DIR``):
    carved, testgen's or the model's, not the project's own."""
    return test_id.replace("\\", "/").startswith(f"{GENERATED_TESTS_DIR}/")

"""Which paths are test code or a project's test support (``equisa_core.common.testcode``)."""

from __future__ import annotations

from equisa_core.common.testcode import is_test_support


def test_test_support_is_test_code_and_a_projects_testing_modules():
    for path in ("tornado/testing.py", "pkg/testing/runner.py", "testutils.py", "src/pkg/test_utils.py",
                 "tests/helpers.py", "pkg/test_x.py"):
        assert is_test_support(path), path
    for path in ("pkg/web.py", "pkg/testing_mode.py", "attest/core.py", "pkg/contest.py"):
        assert not is_test_support(path), path

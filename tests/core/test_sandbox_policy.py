"""Which isolation may run unreviewed code, and what the user is told when files are not confined."""

from __future__ import annotations

import pytest

from equisa_core.common.sandbox_policy import (
    IsolationLevel,
    SandboxIsolation,
    require_confinement,
    weak_isolation_warning,
)
from equisa_core.errors import WeakSandboxError


def isolation(level: IsolationLevel, weak_allowed: bool = False) -> SandboxIsolation:
    return SandboxIsolation(backend="local", level=level, reason="found so", weak_allowed=weak_allowed)


@pytest.mark.parametrize("level", [IsolationLevel.BWRAP, IsolationLevel.UNSHARE, IsolationLevel.DOCKER])
def test_confining_levels_run_generated_code_without_a_warning(level):
    assert isolation(level).confines_files
    require_confinement(isolation(level), "generated tests")
    assert weak_isolation_warning(isolation(level)) is None


@pytest.mark.parametrize("level", [IsolationLevel.NETWORK_ONLY, IsolationLevel.NONE])
def test_weak_levels_refuse_generated_code_with_exit_14(level):
    with pytest.raises(WeakSandboxError) as refused:
        require_confinement(isolation(level), "generated tests")
    assert refused.value.exit_code == 14
    assert "generated tests" in refused.value.message and f"isolation {level.value}" in refused.value.message
    assert "--allow-weak-sandbox" in refused.value.message


@pytest.mark.parametrize("level", [IsolationLevel.NETWORK_ONLY, IsolationLevel.NONE])
def test_weak_levels_run_generated_code_once_the_user_accepts_it_and_still_warn(level):
    accepted = isolation(level, weak_allowed=True)
    require_confinement(accepted, "generated tests")
    warning = weak_isolation_warning(accepted)
    assert warning is not None and "does not confine file writes" in warning and "found so" in warning


def test_the_report_records_whether_files_were_confined():
    dumped = isolation(IsolationLevel.NETWORK_ONLY).model_dump(mode="json")
    assert dumped == {"backend": "local", "level": "network-only", "reason": "found so",
                      "weak_allowed": False, "confines_files": False}

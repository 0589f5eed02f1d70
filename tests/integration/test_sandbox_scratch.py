"""Run folders on a RAM-backed /dev/shm: the default where it is a tmpfs with room
(``tasks.sandbox.scratch``). The run happens there, sees nothing else of /dev/shm, and leaves nothing."""

from __future__ import annotations

import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from equisa_core.common.models import TestOutcome
from equisa_core.common.sandbox_policy import IsolationLevel
from tasks.sandbox.contract import RunRequest, SandboxLimits
from tasks.sandbox.local_backend import LocalSandbox
from tasks.sandbox.run_tests import execute_request
from tasks.sandbox.scratch import SCRATCH_ENV, scratch_root
from tests.sandbox_levels import local_isolation

SUITE = '''import os
from pathlib import Path


def test_runs_in_a_folder_on_dev_shm():
    assert Path.cwd().parts[:3] == ("/", "dev", "shm")


def test_sees_no_other_folder_of_dev_shm():
    assert not Path(os.environ["HOST_FILE"]).exists()


def test_writes_its_copy():
    Path("written.txt").write_text("the suite writes into its copy")
'''


@pytest.mark.parametrize("level", [IsolationLevel.BWRAP, IsolationLevel.UNSHARE])
def test_a_run_on_dev_shm_is_confined_and_leaves_nothing(level, tmp_path, monkeypatch):
    monkeypatch.delenv(SCRATCH_ENV, raising=False)
    if scratch_root() != Path("/dev/shm"):
        pytest.skip("/dev/shm is no writable tmpfs with 2 GiB free here: run folders go to the temp folder")
    workspace = tmp_path / "workspace"
    (workspace / "tests").mkdir(parents=True)
    (workspace / "tests" / "test_scratch.py").write_text(SUITE)
    host_file = Path("/dev/shm") / f"equisa-host-{uuid.uuid4().hex[:8]}"
    host_file.write_text("another process's file")
    # The run's own folder, whatever other EQUISA runs on this machine make and remove meanwhile.
    made: list[Path] = []
    real = tempfile.mkdtemp

    def recorded(*args, **kwargs):
        folder = real(*args, **kwargs)
        made.append(Path(folder))
        return folder

    monkeypatch.setattr(tempfile, "mkdtemp", recorded)
    try:
        with local_isolation(level, tmp_path):
            trace = execute_request(LocalSandbox(), RunRequest(
                workspace=workspace, workspace_digest="scratch", interpreter=sys.executable,
                limits=SandboxLimits(wall_clock_s=120), env={"HOST_FILE": str(host_file)}))
        assert host_file.read_text() == "another process's file"
    finally:
        host_file.unlink()
    outcomes = {t.test_id.rsplit("::", 1)[1]: t.outcome for t in trace.tests}
    assert outcomes == {"test_runs_in_a_folder_on_dev_shm": TestOutcome.PASSED,
                        "test_sees_no_other_folder_of_dev_shm": TestOutcome.PASSED,
                        "test_writes_its_copy": TestOutcome.PASSED}
    assert not (workspace / "written.txt").exists()
    runs = [folder for folder in made if folder.name.startswith("equisa-run-")]
    assert runs and all(folder.parent == Path("/dev/shm") for folder in runs)
    assert not any(folder.exists() for folder in runs)  # the run folder is gone

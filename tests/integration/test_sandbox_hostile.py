"""The hostile fixture suite in every sandbox: every attack contained, every test reported.

The suite is sent as generated code is (an overlay on a copy of the fixture), so the policy for
unreviewed code applies too. The local sandbox runs it twice: with bubblewrap, and with bubblewrap
hidden from PATH, so the util-linux fallback is what runs (CI installs bubblewrap; the second run
must not use it).
"""

from __future__ import annotations

import os
import shutil
import socketserver
import sys
import threading
import uuid
from pathlib import Path

import pytest

from equisa_core.common.models import SuiteTrace, TestOutcome
from equisa_core.common.sandbox_policy import IsolationLevel
from tasks.sandbox.contract import MIB, RecordCallback, RunRequest, Sandbox, SandboxLimits, SandboxRun
from tasks.sandbox.docker_backend import DockerSandbox
from tasks.sandbox.local_backend import LocalSandbox
from tasks.sandbox.run_tests import execute_request
from tests.conftest import FIXTURES
from tests.integration.test_probe import tree_digest
from tests.sandbox_levels import local_isolation

HOSTILE = FIXTURES / "hostile"
SUITE = "tests/test_hostile.py"
T = SUITE + "::"
LIMITS = SandboxLimits(
    wall_clock_s=180, test_timeout_s=3, memory_bytes=2048 * MIB, file_size_bytes=64 * MIB,
    max_processes=64,
)
SECRETS = {"OPENAI_API_KEY": "sk-test-secret", "AWS_ACCESS_KEY_ID": "AKIATEST",
           "AWS_SECRET_ACCESS_KEY": "aws-secret", "AWS_SESSION_TOKEN": "aws-token"}


class _Recording:
    """A sandbox that remembers how each of its runs was isolated."""

    def __init__(self, inner: Sandbox) -> None:
        self.inner, self.name, self.isolations = inner, inner.name, []

    def run(self, request: RunRequest, on_record: RecordCallback | None = None) -> SandboxRun:
        run = self.inner.run(request, on_record)
        self.isolations.append(run.isolation)
        return run


class _Recorder(socketserver.BaseRequestHandler):
    received: list[bytes] = []

    def handle(self) -> None:
        self.received.append(self.request.recv(100))


@pytest.fixture(scope="module")
def host_server():
    """A TCP server on the host's 127.0.0.1 that records whoever reaches it."""
    _Recorder.received = []
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module", params=["local-bwrap", "local-unshare", "docker"])
def hostile_run(request, host_server, tmp_path_factory) -> tuple[SuiteTrace, list[Path]]:
    """The hostile suite run once per sandbox; the tests below read the same run."""
    tmp_path = tmp_path_factory.mktemp(f"hostile-{request.param}")
    if request.param.startswith("local"):
        level = IsolationLevel(request.param.removeprefix("local-"))
        with local_isolation(level, tmp_path):
            sandbox = _Recording(LocalSandbox())
            yield _attack(sandbox, sys.executable, host_server, tmp_path)
        assert sandbox.isolations and all(i.startswith(level.value) for i in sandbox.isolations)
    else:
        sandbox = _Recording(DockerSandbox(client=request.getfixturevalue("docker_engine")))
        yield _attack(sandbox, "python3", host_server, tmp_path)
        assert sandbox.isolations and set(sandbox.isolations) == {"docker"}


def _attack(sandbox: Sandbox, interpreter: str, host_server, tmp_path: Path) -> tuple[SuiteTrace, list[Path]]:
    nonce = uuid.uuid4().hex[:8]
    workspace = tmp_path / "workspace"
    shutil.copytree(HOSTILE, workspace)
    suite = (workspace / SUITE).read_text()
    (workspace / SUITE).write_text("")  # the suite arrives as generated code does: an overlay
    secret = Path.home() / f".equisa-hostile-secret-{nonce}"
    secret.write_text("the user's own secret")
    targets = [tmp_path / f"outside-{nonce}", Path.home() / f"equisa-hostile-{nonce}",
               Path("/var/tmp") / f"equisa-hostile-{nonce}", workspace / f"escaped-{nonce}"]
    system_target = Path("/var/tmp") / f"equisa-hostile-{nonce}-after-remount"
    run_request = RunRequest(
        workspace=workspace, workspace_digest=f"hostile-{nonce}", interpreter=interpreter, limits=LIMITS,
        overlay={SUITE: suite},
        env={"EQUISA_HOSTILE_PORT": str(host_server.server_address[1]),
             "EQUISA_HOSTILE_TARGETS": os.pathsep.join(map(str, targets)),
             "EQUISA_HOSTILE_SYSTEM_TARGET": str(system_target),
             "EQUISA_HOSTILE_HOME_FILE": str(secret), **SECRETS},
    )
    before = tree_digest(workspace)
    try:
        with pytest.MonkeyPatch.context() as monkeypatch:  # the secrets are in EQUISA's own environment
            for name, value in SECRETS.items():
                monkeypatch.setenv(name, value)
            trace = execute_request(sandbox, run_request)
    finally:
        secret.unlink()
    assert tree_digest(workspace) == before
    return trace, [*targets, system_target]


def test_every_attack_is_contained_and_reported(hostile_run):
    trace, targets = hostile_run
    results = {t.test_id.removeprefix(T): t for t in trace.tests}
    assert set(results) == {
        "test_loops_forever", "test_allocates_10_gb", "test_forks_without_bound",
        "test_connects_to_the_host", "test_writes_home_and_outside_the_workspace",
        "test_reads_secrets", "test_prints_a_gigabyte", "test_reads_a_secret_file_in_the_real_home",
        "test_undoes_the_read_only_system",
    }
    assert not trace.crashed

    def status(name: str) -> tuple[TestOutcome, str | None]:
        return results[name].outcome, results[name].exception_type

    # (a) the endless loop fails at the per-test timeout
    assert status("test_loops_forever") == (TestOutcome.FAILED, "equisa_probe.TestTimeout")
    # (b) 10 GB cannot be had under the address-space limit
    assert status("test_allocates_10_gb") == (TestOutcome.FAILED, "MemoryError")
    # (c) the fork bomb stops at the process limit
    fork = results["test_forks_without_bound"]
    assert fork.outcome is TestOutcome.FAILED and fork.exception_type == "BlockingIOError"
    forked = int(fork.stdout_tail.split("forked")[-1].split()[0])
    assert forked < LIMITS.max_processes
    # (d) the host's loopback server is unreachable from the sandbox's network namespace
    assert status("test_connects_to_the_host")[0] is TestOutcome.FAILED
    assert results["test_connects_to_the_host"].exception_type in ("ConnectionRefusedError", "OSError")
    # (f) no secret reaches the sandbox: not in the environment, not in the user's home
    assert status("test_reads_secrets") == (TestOutcome.PASSED, None)
    home_file = results["test_reads_a_secret_file_in_the_real_home"]
    assert home_file.outcome is TestOutcome.FAILED
    assert home_file.exception_type in ("FileNotFoundError", "PermissionError")
    # (h) nothing inside can remount the system writable or unmount the private /tmp
    undo = results["test_undoes_the_read_only_system"]
    assert undo.outcome is TestOutcome.PASSED, undo.stdout_tail
    # (g) a gigabyte of output stops at the file-size limit; only a tail is kept
    printed = results["test_prints_a_gigabyte"]
    assert printed.outcome is TestOutcome.FAILED and printed.exception_type == "OSError"
    assert len(printed.stdout_tail) < 10_000


def test_nothing_outside_the_sandbox_changes(hostile_run, host_server):
    trace, targets = hostile_run
    writes = next(t for t in trace.tests if t.test_id.endswith("test_writes_home_and_outside_the_workspace"))
    # (e) the sandbox's own $HOME is writable, every path outside the workspace is refused or private
    assert writes.outcome is TestOutcome.PASSED
    assert "writes refused:" in writes.stdout_tail
    assert [p for p in targets if p.exists()] == []
    assert not (Path.home() / "equisa-hostile-marker").exists()
    assert _Recorder.received == []

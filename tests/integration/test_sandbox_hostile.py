"""The hostile fixture suite in both sandboxes: every attack contained, every test reported."""

from __future__ import annotations

import os
import socketserver
import sys
import threading
import uuid
from pathlib import Path

import pytest

from equisa_core.models import SuiteTrace, TestOutcome
from tasks.run_tests import execute_request
from tasks.sandbox import MIB, RunRequest, SandboxLimits
from tasks.sandbox_docker import DockerSandbox
from tasks.sandbox_local import LocalSandbox, detect_isolation
from tests.conftest import FIXTURES
from tests.integration.test_probe import tree_digest

HOSTILE = FIXTURES / "hostile"
T = "tests/test_hostile.py::"
LIMITS = SandboxLimits(
    wall_clock_s=180, test_timeout_s=3, memory_bytes=2048 * MIB, file_size_bytes=64 * MIB,
    max_processes=64,
)
SECRETS = {"OPENAI_API_KEY": "sk-test-secret", "AWS_ACCESS_KEY_ID": "AKIATEST",
           "AWS_SECRET_ACCESS_KEY": "aws-secret", "AWS_SESSION_TOKEN": "aws-token"}


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


@pytest.fixture(scope="module", params=["local", "docker"])
def hostile_run(request, host_server, tmp_path_factory) -> tuple[SuiteTrace, list[Path]]:
    """The hostile suite run once per backend; both tests below read the same run."""
    if request.param == "local":
        if detect_isolation().level != "bwrap":
            pytest.skip(f"needs bubblewrap for file-system isolation; here: {detect_isolation().reason}")
        sandbox, interpreter = LocalSandbox(), sys.executable
    else:
        sandbox, interpreter = DockerSandbox(client=request.getfixturevalue("docker_engine")), "python3"
    tmp_path = tmp_path_factory.mktemp(f"hostile-{request.param}")
    nonce = uuid.uuid4().hex[:8]
    targets = [tmp_path / f"outside-{nonce}", Path.home() / f"equisa-hostile-{nonce}",
               Path("/var/tmp") / f"equisa-hostile-{nonce}"]
    run_request = RunRequest(
        workspace=HOSTILE, workspace_digest="hostile", interpreter=interpreter, limits=LIMITS,
        env={"EQUISA_HOSTILE_PORT": str(host_server.server_address[1]),
             "EQUISA_HOSTILE_TARGETS": os.pathsep.join(map(str, targets)), **SECRETS},
    )
    before = tree_digest(HOSTILE)
    with pytest.MonkeyPatch.context() as monkeypatch:  # the secrets are in EQUISA's own environment
        for name, value in SECRETS.items():
            monkeypatch.setenv(name, value)
        trace = execute_request(sandbox, run_request)
    assert tree_digest(HOSTILE) == before
    return trace, targets


def test_every_attack_is_contained_and_reported(hostile_run):
    trace, targets = hostile_run
    results = {t.test_id.removeprefix(T): t for t in trace.tests}
    assert set(results) == {
        "test_loops_forever", "test_allocates_10_gb", "test_forks_without_bound",
        "test_connects_to_the_host", "test_writes_home_and_outside_the_workspace",
        "test_reads_secrets", "test_prints_a_gigabyte",
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
    # (f) no secret reaches the sandbox
    assert status("test_reads_secrets") == (TestOutcome.PASSED, None)
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

"""The Docker sandbox against a real engine: outcomes, isolation, limits, clean-up, errors."""

from __future__ import annotations

import hashlib
import shutil
import socket
import textwrap
import threading
import time
from pathlib import Path

import docker
import pytest

from equisa_core.common.models import SuiteTrace, TestOutcome
from equisa_core.common.probe_output import parse_probe_output
from tasks.sandbox.contract import (
    GIB,
    RunRequest,
    Sandbox,
    SandboxInfrastructureError,
    SandboxLimits,
    SandboxRun,
)
from tasks.sandbox.docker_backend import RUN_LABEL, DockerSandbox, Transfer
from tests.conftest import FIXTURES

pytestmark = pytest.mark.integration

SHAPES = FIXTURES / "shapes"
T = "tests/test_geometry.py::"


def tree_digest(root: Path) -> str:
    """A digest of every path, mode and byte under ``root``: proves a run left the tree unchanged."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(str(path.lstat().st_mode).encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A private snapshot of the shapes suite (a run must never change it)."""
    copy = tmp_path / "shapes"
    shutil.copytree(SHAPES, copy)
    return copy


def leftover_containers(client: docker.DockerClient) -> list[str]:
    return [c.name for c in client.containers.list(all=True, filters={"label": RUN_LABEL})]


def run_in_docker(client: docker.DockerClient, workspace: Path, overlay: dict[str, str] | None = None,
                  tests: tuple[str, ...] = (), limits: SandboxLimits | None = None,
                  env: dict[str, str] | None = None, transfer: Transfer = "auto",
                  ) -> tuple[SandboxRun, SuiteTrace]:
    request = RunRequest(
        workspace=workspace, workspace_digest="test", interpreter="python3",
        overlay=overlay or {}, tests=tests, env=env or {},
        limits=limits or SandboxLimits(wall_clock_s=120),
    )
    run = DockerSandbox(client=client, transfer=transfer).run(request)
    return run, parse_probe_output(run.probe_output.splitlines())


def outcomes(trace: SuiteTrace) -> dict[str, TestOutcome]:
    return {t.test_id: t.outcome for t in trace.tests}


@pytest.mark.parametrize("transfer", ["bind", "copy"])
def test_shapes_suite_runs_in_a_container(docker_engine, workspace, transfer):
    before = tree_digest(workspace)
    records: list[dict] = []
    request = RunRequest(workspace=workspace, workspace_digest="test", interpreter="python3")
    run = DockerSandbox(client=docker_engine, transfer=transfer).run(request, on_record=records.append)
    trace = parse_probe_output(run.probe_output.splitlines())

    assert run.isolation == "docker"
    assert run.exit_code == 1 and not run.timed_out
    assert "2 failed, 11 passed" in run.log_tail
    got = outcomes(trace)
    assert len(got) == 16
    assert sorted(o.value for o in got.values()).count("passed") == 11
    assert got[T + "test_square"] is TestOutcome.PASSED
    assert got[T + "test_triangle_area"] is TestOutcome.FAILED
    assert got[T + "TestUnittestStyle::test_triangle"] is TestOutcome.FAILED
    assert got[T + "test_setup_error"] is TestOutcome.ERROR
    assert got[T + "test_skipped"] is TestOutcome.SKIPPED
    assert got[T + "test_expected_failure"] is TestOutcome.SKIPPED
    assert not trace.crashed
    # The image's own Python (bookworm: 3.11) ran it, traced by import-time instrumentation.
    assert trace.python_version.startswith("3.11.") and trace.backend == "instrument"
    square = next(t for t in trace.tests if t.test_id == T + "test_square")
    assert "shapes.geometry.square" in square.covered
    assert {n.fqn for n in trace.nodes} >= {"shapes.geometry.square", "shapes.geometry.hypotenuse"}
    assert trace.edges, "caller -> callee edges were recorded"
    # Progress: every record was reported while (or right after) the container ran.
    assert [r["kind"] for r in records].count("test") == 16
    assert tree_digest(workspace) == before, "the run changed the workspace snapshot"
    assert leftover_containers(docker_engine) == []
    assert docker_engine.volumes.list(filters={"label": RUN_LABEL}) == []


def test_a_suite_that_vandalises_its_copy_leaves_the_snapshot_unchanged(docker_engine, workspace):
    before = tree_digest(workspace)
    vandal = textwrap.dedent("""
        import os, pathlib, shutil

        def test_vandal():
            root = pathlib.Path.cwd()
            (root / "shapes" / "geometry.py").write_text("broken = True\\n")
            shutil.rmtree(root / "tests" / "__pycache__", ignore_errors=True)
            (root / "new_file.txt").write_text("x")
            pathlib.Path(os.environ["HOME"], ".profile").write_text("echo hi")
    """)
    run, trace = run_in_docker(docker_engine, workspace, {"tests/test_vandal.py": vandal},
                               tests=("tests/test_vandal.py",))
    assert outcomes(trace) == {"tests/test_vandal.py::test_vandal": TestOutcome.PASSED}
    assert tree_digest(workspace) == before


def test_container_is_locked_down(docker_engine, workspace):
    limits = SandboxLimits(wall_clock_s=120, memory_bytes=2 * GIB, max_processes=100)
    probe = textwrap.dedent("""
        import os, pathlib, resource

        def read(*candidates):
            for path in candidates:
                if os.path.exists(path):
                    return pathlib.Path(path).read_text().strip()
            raise AssertionError("none of %s exists" % (candidates,))

        def test_not_root():
            assert os.geteuid() != 0

        def test_root_file_system_is_read_only():
            try:
                open("/usr/equisa-was-here", "w")
            except OSError:
                pass
            else:
                raise AssertionError("the root file system is writable")

        def test_tmp_and_home_are_writable():
            pathlib.Path("/tmp/x").write_text("ok")
            pathlib.Path(os.environ["HOME"], "x").write_text("ok")
            assert os.environ["TMPDIR"] == "/tmp" and os.environ["HOME"] == "/sandbox/home"

        def test_memory_cgroup_limit():
            limit = read("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
            assert int(limit) == 2 * 1024 ** 3

        def test_pids_cgroup_limit():
            assert read("/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max") == "100"

        def test_rlimits():
            assert resource.getrlimit(resource.RLIMIT_AS)[0] == 2 * 1024 ** 3
            assert resource.getrlimit(resource.RLIMIT_FSIZE)[0] == 512 * 1024 ** 2

        def test_no_network_interface_but_loopback():
            assert sorted(os.listdir("/sys/class/net")) == ["lo"]
    """)
    run, trace = run_in_docker(docker_engine, workspace, {"tests/test_locked.py": probe},
                               tests=("tests/test_locked.py",), limits=limits)
    got = outcomes(trace)
    failures = {t.test_id: t.message for t in trace.tests if t.outcome is not TestOutcome.PASSED}
    assert not failures, failures
    assert len(got) == 7


def test_no_network_to_a_server_on_the_host(docker_engine, workspace):
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    port = server.getsockname()[1]
    accepted: list[object] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, address = server.accept()
            except TimeoutError:
                continue
            accepted.append(address)
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    # The server does answer on the host: the sandbox is what stops the connection.
    socket.create_connection(("127.0.0.1", port), timeout=5).close()
    time.sleep(0.5)
    assert len(accepted) == 1
    client_test = textwrap.dedent(f"""
        import socket

        def test_connect_to_host_server():
            socket.create_connection(("127.0.0.1", {port}), timeout=3).close()
    """)
    try:
        run, trace = run_in_docker(docker_engine, workspace, {"tests/test_net.py": client_test},
                                   tests=("tests/test_net.py",))
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()
    [result] = trace.tests
    assert result.outcome is TestOutcome.FAILED
    assert result.exception_type == "ConnectionRefusedError", result.message
    assert len(accepted) == 1, "the sandbox reached the host's server"


def test_secrets_are_not_visible(docker_engine, workspace, monkeypatch):
    secrets = {"OPENAI_API_KEY": "sk-equisa-test-secret", "AWS_SECRET_ACCESS_KEY": "aws-equisa-secret"}
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    spy = textwrap.dedent("""
        import os, pathlib

        def test_no_secrets():
            assert "OPENAI_API_KEY" not in os.environ
            assert "AWS_SECRET_ACCESS_KEY" not in os.environ
            assert os.environ["EQUISA_MARKER"] == "passed through"
            assert os.environ["PYTHONHASHSEED"] == "0" and os.environ["TZ"] == "UTC"
            for environ in pathlib.Path("/proc").glob("[0-9]*/environ"):
                try:
                    data = environ.read_bytes()
                except OSError:
                    continue
                assert b"equisa-test-secret" not in data and b"aws-equisa-secret" not in data
    """)
    run, trace = run_in_docker(docker_engine, workspace, {"tests/test_spy.py": spy},
                               tests=("tests/test_spy.py",),
                               env={**secrets, "EQUISA_MARKER": "passed through"})
    [result] = trace.tests
    assert result.outcome is TestOutcome.PASSED, result.message
    assert "equisa-test-secret" not in run.probe_output + run.log_tail


def test_memory_limit_contains_a_10_gb_allocation(docker_engine, workspace):
    hog = textwrap.dedent("""
        def test_allocate_10_gb():
            block = bytearray(10 * 1024 ** 3)
            assert len(block)

        def test_after_the_hog():
            assert True
    """)
    started = time.monotonic()
    run, trace = run_in_docker(docker_engine, workspace, {"tests/test_hog.py": hog},
                               tests=("tests/test_hog.py",),
                               limits=SandboxLimits(wall_clock_s=120, memory_bytes=1 * GIB))
    assert not run.timed_out and time.monotonic() - started < 60
    got = outcomes(trace)
    hog_id = "tests/test_hog.py::test_allocate_10_gb"
    if trace.crashed:  # the OOM killer ended the interpreter: the hog is the test that was running
        assert run.exit_code is None and trace.crashed_in == hog_id
    else:
        assert got[hog_id] is TestOutcome.FAILED
        assert next(t for t in trace.tests if t.test_id == hog_id).exception_type == "MemoryError"
        assert got["tests/test_hog.py::test_after_the_hog"] is TestOutcome.PASSED


def test_wall_clock_timeout_kills_and_removes_the_container(docker_engine, workspace):
    hang = textwrap.dedent("""
        import time

        def test_sleeps_forever():
            while True:
                time.sleep(1000)
    """)
    started = time.monotonic()
    run, trace = run_in_docker(docker_engine, workspace, {"tests/test_hang.py": hang},
                               tests=("tests/test_hang.py",),
                               limits=SandboxLimits(wall_clock_s=10, test_timeout_s=None))
    elapsed = time.monotonic() - started
    assert run.timed_out is True and run.exit_code is None
    assert 10 <= elapsed < 40
    assert trace.crashed and trace.crashed_in == "tests/test_hang.py::test_sleeps_forever"
    assert leftover_containers(docker_engine) == []


def test_unreachable_engine_is_an_infrastructure_error(workspace):
    sandbox = DockerSandbox(base_url="unix:///nonexistent.sock")
    assert isinstance(sandbox, Sandbox) and sandbox.name == "docker"
    request = RunRequest(workspace=workspace, workspace_digest="test", interpreter="python3")
    with pytest.raises(SandboxInfrastructureError) as raised:
        sandbox.run(request)
    assert "unreachable" in raised.value.message and "\n" not in raised.value.message


def test_missing_image_says_how_to_build_it(docker_engine, workspace):
    request = RunRequest(workspace=workspace, workspace_digest="test", interpreter="python3")
    with pytest.raises(SandboxInfrastructureError) as raised:
        DockerSandbox(image="equisa-no-such-image:none", client=docker_engine).run(request)
    assert "python -m tasks.sandbox.docker_image" in raised.value.message


def test_connects_through_base_url(docker_engine_info, workspace):
    request = RunRequest(workspace=workspace, workspace_digest="test", interpreter="python3",
                         tests=(T + "test_square",))
    run = DockerSandbox(base_url=docker_engine_info.base_url).run(request)
    trace = parse_probe_output(run.probe_output.splitlines())
    assert outcomes(trace) == {T + "test_square": TestOutcome.PASSED}
    assert run.exit_code == 0

"""A real Docker engine for the integration tests: ``DOCKER_HOST``'s, or a private ``dockerd``.

Import the fixtures into a test module with
``tests/integration/conftest.py`` imports them, so one engine serves the whole session.

``docker_engine`` (session-scoped) yields a ``docker.DockerClient`` whose engine has the sandbox's
base image; ``docker_engine_info`` gives its ``DockerEngine`` (socket URL, start-up timings).
It uses the engine ``DOCKER_HOST`` names when that answers; otherwise it starts
``dockerd`` itself, bound only to a unix socket in a private temporary folder (no TCP, no
iptables, no bridge: sandbox containers have no network anyway), with its data, state and log in
that folder, and stops that one process (by its PID) at the end of the session. The base image
is built by ``ensure_base_image``, which caches its debootstrap tarball in
``~/.cache/equisa/docker`` so only the first build on a machine takes a minute. Where no engine
can be had, the tests skip with the exact reason.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import docker.errors
import pytest
import requests

from tasks.sandbox.contract import SandboxInfrastructureError
from tasks.sandbox.docker_image import DEFAULT_CACHE_DIR, DEFAULT_IMAGE, ensure_base_image

__all__ = ["docker_engine", "docker_engine_info", "DockerEngine"]

log = logging.getLogger(__name__)

_START_TIMEOUT_S = 60
_STOP_TIMEOUT_S = 30
_SHM_NEEDED = 2 * 1024**3
_STORE_PREFIX = "equisa-dockerd-"
_OWNER_FILE = "dockerd.pid"


class DockerEngine:
    """A started engine: its client, where it listens, and how long it took to be ready."""

    def __init__(self, client: docker.DockerClient, base_url: str, started_s: float, image_s: float,
                 process: subprocess.Popen[bytes] | None, folders: list[Path]) -> None:
        self.client = client
        self.base_url = base_url
        self.started_s = started_s
        self.image_s = image_s
        self.process = process
        self.folders = folders

    def stop(self) -> None:
        """Stop the dockerd this fixture started (only that PID) and remove its folders."""
        started = time.monotonic()
        self.client.close()
        if self.process is not None:
            _stop_process(self.process)
        stopped = time.monotonic()
        _remove_folders(*self.folders)
        if self.process is not None:
            print(f"\ndockerd stopped in {stopped - started:.2f}s, its folders removed in "
                  f"{time.monotonic() - stopped:.2f}s")


def _existing_engine() -> tuple[docker.DockerClient | None, str]:
    host = os.environ.get("DOCKER_HOST")
    if not host:
        return None, "DOCKER_HOST is not set"
    try:
        client = docker.from_env()
        client.ping()
        return client, ""
    except (docker.errors.DockerException, requests.RequestException) as error:
        return None, f"DOCKER_HOST={host} does not answer ({' '.join(str(error).split())[:200]})"


def _start_dockerd() -> tuple[docker.DockerClient, subprocess.Popen[bytes], list[Path], str]:
    """Start a private dockerd on a unix socket; ``pytest.skip`` with the reason if impossible."""
    # /usr/sbin is not on every PATH (e.g. a non-login root shell).
    dockerd = shutil.which("dockerd") or shutil.which("dockerd", path="/usr/sbin:/usr/local/sbin")
    if dockerd is None:
        pytest.skip("no Docker engine: dockerd not installed (apt-get install docker.io)")
    if os.geteuid() != 0:
        pytest.skip("no Docker engine: DOCKER_HOST is not set and starting dockerd needs root")
    # Unix socket paths must be shorter than 108 bytes: a short folder right under /tmp.
    _sweep_orphaned_stores()
    folder = Path(tempfile.mkdtemp(prefix="eqd-", dir="/tmp"))
    store = _store(folder)
    data_root = store / "data"
    socket = folder / "docker.sock"
    base_url = f"unix://{socket}"
    log_path = folder / "dockerd.log"
    command = [
        dockerd, "--iptables=false", "--bridge=none",
        "--data-root", str(data_root), "--exec-root", str(folder / "exec"),
        "--pidfile", str(folder / "d.pid"), "--host", base_url,
    ]
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    (store / _OWNER_FILE).write_text(str(process.pid))
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = _tail(log_path)
            _remove_folders(folder, store)
            pytest.skip(f"no Docker engine: dockerd exited with {process.returncode}: {tail}")
        if socket.exists():
            client = _connect(base_url)
            if client is not None:
                return client, process, [folder, store], base_url
        time.sleep(0.05)
    tail = _tail(log_path)
    _stop_process(process)
    _remove_folders(folder, store)
    pytest.skip(f"no Docker engine: dockerd did not answer within {_START_TIMEOUT_S}s: {tail}")


def _store(folder: Path) -> Path:
    """Where the engine keeps images: on tmpfs (``/dev/shm``) when it has room, else ``folder``.

    On disk, the engine fsyncs every imported layer, and deleting those synced files at the end
    took 27 s here (a discard-mounted ext4); on tmpfs the import is twice as fast and the
    clean-up instant. The store holds the base image (about 170 MB) and the test containers.
    """
    shm = Path("/dev/shm")
    try:
        stats = os.statvfs(shm)
        if os.access(shm, os.W_OK) and stats.f_bavail * stats.f_frsize >= _SHM_NEEDED:
            return Path(tempfile.mkdtemp(prefix=_STORE_PREFIX, dir=shm))
    except OSError:
        pass
    return folder


def _sweep_orphaned_stores() -> None:
    """Delete tmpfs stores of earlier sessions whose dockerd is gone (their memory is not freed
    otherwise); only folders this module made, marked with the owning dockerd's PID."""
    for store in Path("/dev/shm").glob(_STORE_PREFIX + "*"):
        try:
            pid = int((store / _OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue
        if not Path(f"/proc/{pid}").exists():
            _remove_folders(store)


def _connect(base_url: str) -> docker.DockerClient | None:
    """A client of the engine at ``base_url`` if it answers a ping, else None."""
    try:
        client = docker.DockerClient(base_url=base_url, timeout=120)
        client.ping()
        return client
    except (docker.errors.DockerException, requests.RequestException):
        return None


def _stop_process(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=_STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        log.warning("dockerd (pid %d) ignored SIGTERM for %ds: killing it", process.pid, _STOP_TIMEOUT_S)
        process.kill()
        process.wait()


def _remove_folders(*folders: Path) -> None:
    """Unmount whatever the engine left mounted under ``folders``, then delete them."""
    try:
        mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
    except OSError:
        mounts = []
    for folder in folders:
        prefix = str(folder.resolve()) + "/"
        for mount in sorted((m for m in mounts if m.startswith(prefix)), reverse=True):
            subprocess.run(["umount", "-l", mount], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def _tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return " | ".join(text.strip().splitlines()[-lines:])[-1000:] or "(empty log)"


_ENGINES: list[DockerEngine] = []


@pytest.fixture(scope="session")
def docker_engine_info(docker_engine: docker.DockerClient) -> DockerEngine:
    """The engine behind ``docker_engine``: where it listens and how long it took to be ready."""
    return _ENGINES[-1]


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[docker.DockerClient]:
    """A reachable engine with the base image; skips with the reason when there is none."""
    started = time.monotonic()
    client, why_not = _existing_engine()
    process, folders = None, []
    base_url = os.environ.get("DOCKER_HOST", "")
    if client is None:
        log.info("starting a private dockerd (%s)", why_not)
        client, process, folders, base_url = _start_dockerd()
    engine_s = time.monotonic() - started
    image_started = time.monotonic()
    try:
        ensure_base_image(client, DEFAULT_IMAGE, DEFAULT_CACHE_DIR)
    except SandboxInfrastructureError as error:
        DockerEngine(client, base_url, engine_s, 0.0, process, folders).stop()
        pytest.skip(f"no Docker base image: {error.message}")
    engine = DockerEngine(client, base_url, engine_s, time.monotonic() - image_started, process, folders)
    print(f"\ndocker engine ready in {engine.started_s:.2f}s at {base_url}; "
          f"base image ready in {engine.image_s:.2f}s")
    _ENGINES.append(engine)
    try:
        yield client
    finally:
        _ENGINES.remove(engine)
        engine.stop()

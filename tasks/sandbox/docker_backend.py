"""The Docker sandbox: each run in a fresh, locked-down container, through the docker SDK.

The container gets: no network (``network_mode="none"``), a memory cap without swap, a CPU quota,
a pids limit, rlimits for address space, CPU seconds and file size, a read-only root with a
size-capped tmpfs on ``/tmp``, no capabilities, ``no-new-privileges``, a non-root user, an init
process (``docker-init``) that reaps zombies and passes signals, and a scrubbed environment. Its
only writable folder is ``/sandbox``: the run folder of ``prepare_run_folder`` (``repo/``,
``probe/``, ``home/``, ``tmp/``, ``out/``), a throwaway copy of the workspace.

How the run folder reaches the container (``transfer``):

- ``bind`` (the default when the engine is on this machine, i.e. reached over a unix socket): the
  host's throwaway run folder is bind-mounted. Nothing is copied twice, and the probe's output
  file is read (and tailed, for progress) straight from the host. The snapshot itself is never
  mounted, so the container cannot reach it.
- ``copy`` (the default for a remote engine, ``tcp://`` or ``ssh://``, whose file system is not
  ours): the run folder is packed and copied with ``put_archive`` into a fresh volume mounted on
  ``/sandbox``; the probe's output is read back with ``get_archive``. The volume is removed with
  the container.

The wall-clock timeout kills the container. The container (and volume) is always removed, and
each run first reaps containers of earlier runs whose deadline has long passed (a host killed by
SIGKILL cannot clean up after itself). Docker's errors become ``SandboxInfrastructureError``:
they are worth a retry; what the tests do is never an error.
"""

from __future__ import annotations

import io
import logging
import os
import tarfile
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import docker
import docker.errors
import requests
from docker.models.containers import Container
from docker.models.volumes import Volume
from docker.types import LogConfig, Mount, Ulimit

from tasks.sandbox.contract import (
    MIB,
    RecordCallback,
    RunRequest,
    SandboxInfrastructureError,
    SandboxRun,
    cap_text,
    cut_by_deadline,
    deadline_wall_clock,
    import_roots,
    prepare_run_folder,
    probe_arguments,
    scrubbed_environment,
    tail_records,
)
from tasks.sandbox.docker_image import CONTAINER_PATH, DEFAULT_IMAGE, one_line

__all__ = ["DockerSandbox", "IMAGE_ENV", "RUN_LABEL"]

log = logging.getLogger(__name__)

IMAGE_ENV = "EQUISA_DOCKER_IMAGE"
#: Every container a run makes carries ``equisa.run=<run id>``.
RUN_LABEL = "equisa.run"
DEADLINE_LABEL = "equisa.deadline"
#: Where the run folder is in the container.
SANDBOX_DIR = "/sandbox"
#: The user tests run as when EQUISA runs as root: ``nobody``.
NOBODY = 65534
_POLL_S = 0.2
_COPY_POLL_S = 1.0  # copy mode fetches the whole probe file for progress: poll less often
#: A container left this long past its deadline belongs to a dead host: any run may remove it.
_REAP_GRACE_S = 300
_LOCAL_BASE_URLS = ("http+docker://localhost", "http+docker://localnpipe")
_HOST_LOCALE = ("LANG", "LC_ALL", "LC_CTYPE")

Transfer = Literal["auto", "bind", "copy"]

#: Sets RLIMIT_AS, then becomes pytest. Not a docker ``ulimits`` entry: the engine applies those
#: before runc's own (Go) set-up code inside the container, which then fails to start under a
#: small address-space cap ("unable to init seccomp: cannot allocate memory"). The cap (beside the
#: cgroup's memory limit) makes a test that allocates too much fail with MemoryError instead of
#: the OOM killer ending the whole run, as in the local sandbox. Python 3.3+ stdlib only.
_LIMIT_ADDRESS_SPACE = (
    "import os, resource, sys; limit = int(sys.argv[1]); "
    "resource.setrlimit(resource.RLIMIT_AS, (limit, limit)); os.execvp(sys.argv[2], sys.argv[2:])"
)


class DockerSandbox:
    """Runs requests in containers of ``image`` on the engine at ``base_url`` (default: ``DOCKER_HOST``)."""

    name = "docker"

    def __init__(
        self,
        image: str | None = None,
        base_url: str | None = None,
        *,
        client: docker.DockerClient | None = None,
        nano_cpus: int = 1_000_000_000,
        transfer: Transfer = "auto",
        init: bool = True,
        scratch_root: Path | None = None,
        api_timeout_s: int = 120,
    ) -> None:
        """``nano_cpus``: CPU quota in 1e-9 CPUs (default one CPU). ``client`` overrides ``base_url``."""
        self.image = image or os.environ.get(IMAGE_ENV) or DEFAULT_IMAGE
        self.base_url = base_url
        self.nano_cpus = nano_cpus
        self.transfer = transfer
        self.init = init
        self.scratch_root = scratch_root
        self.api_timeout_s = api_timeout_s
        self._client = client
        self._lock = threading.Lock()

    # -- engine ---------------------------------------------------------------------------------
    def client(self) -> docker.DockerClient:
        """The engine's client, connected (and pinged) on first use."""
        with self._lock:
            if self._client is None:
                where = self.base_url or os.environ.get("DOCKER_HOST") or "the default socket"
                try:
                    if self.base_url:
                        client = docker.DockerClient(base_url=self.base_url, timeout=self.api_timeout_s)
                    else:
                        client = docker.from_env(timeout=self.api_timeout_s)
                    client.ping()
                except (docker.errors.DockerException, requests.RequestException) as error:
                    raise SandboxInfrastructureError(
                        f"docker engine unreachable at {where}: {one_line(error)}"
                    ) from None
                self._client = client
            return self._client

    def _uses_bind(self, client: docker.DockerClient) -> bool:
        if self.transfer != "auto":
            return self.transfer == "bind"
        return client.api.base_url in _LOCAL_BASE_URLS

    def _check_image(self, client: docker.DockerClient) -> None:
        try:
            client.images.get(self.image)
        except docker.errors.ImageNotFound:
            raise SandboxInfrastructureError(
                f"docker image {self.image} is missing: build it with `python -m tasks.sandbox.docker_image "
                f"--name {self.image}` (debootstrap + docker import, no registry needed)"
            ) from None
        except (docker.errors.DockerException, requests.RequestException) as error:
            raise SandboxInfrastructureError(f"docker engine: {one_line(error)}") from None

    # -- a run ----------------------------------------------------------------------------------
    def run(self, request: RunRequest, on_record: RecordCallback | None = None) -> SandboxRun:
        """Copy, run in a container, collect; the container is removed whatever happens. Raises
        ``BudgetSpentError`` when the run's deadline (``tasks.sandbox.contract.run_deadline``) stopped it first."""
        wall_clock_s, by_deadline = deadline_wall_clock(request.limits.wall_clock_s)
        client = self.client()
        self._check_image(client)
        _reap_stale(client)
        started = time.monotonic()
        run_id = uuid.uuid4().hex[:16]
        with tempfile.TemporaryDirectory(prefix="equisa-docker-", dir=self.scratch_root) as scratch:
            folder = Path(scratch) / "run"
            folder.mkdir()
            prepare_run_folder(request, folder)
            bind = self._uses_bind(client)
            uid, gid = _sandbox_user()
            if bind and os.geteuid() == 0:
                _chown_tree(folder, uid, gid)  # so that ``nobody`` may write its copy
            container: Container | None = None
            volume: Volume | None = None
            try:
                with _translated("cannot start the container"):
                    if bind:
                        mount = Mount(target=SANDBOX_DIR, source=str(folder), type="bind")
                    else:
                        volume = client.volumes.create(name=f"equisa-{run_id}", labels={RUN_LABEL: run_id})
                        mount = Mount(target=SANDBOX_DIR, source=volume.name, type="volume")
                    container = client.containers.create(
                        **self._container_spec(request, run_id, f"{uid}:{gid}", mount))
                    if not bind:
                        tar_path = _pack(folder, Path(scratch) / "run.tar", uid, gid)
                        with open(tar_path, "rb") as data:
                            container.put_archive(SANDBOX_DIR, data)
                    container.start()
                probe_path = folder / "out" / "probe.jsonl"
                with _translated("lost the container"):
                    timed_out = self._wait(container, wall_clock_s, on_record, probe_path, bind)
                    container.reload()
                    state = container.attrs["State"]
                    if not bind:
                        _fetch(container, f"{SANDBOX_DIR}/out/probe.jsonl", probe_path)
                    logs = container.logs(stdout=True, stderr=True)
            finally:
                _remove(container, volume)
            output = probe_path.read_text(encoding="utf-8", errors="replace") if probe_path.exists() else ""
        if timed_out and by_deadline:
            raise cut_by_deadline(time.monotonic() - started)
        exit_code: int | None = None if timed_out else int(state.get("ExitCode", -1))
        # Killed by a signal (docker-init reports 128 + the signal), the OOM killer's SIGKILL
        # included. (``State.OOMKilled`` is not used: it is set when the OOM killer ended *any*
        # process of the container, such as a test's child, while pytest went on and finished.)
        if exit_code is not None and not 0 <= exit_code < 128:
            exit_code = None
        log_tail = cap_text(logs, request.limits.output_bytes)
        if exit_code not in (None, 0, 1, 2, 3, 4, 5) and not output:
            raise SandboxInfrastructureError(
                f"the docker sandbox failed to start pytest (exit {exit_code}): "
                f"{one_line(log_tail[-300:])}"
            )
        return SandboxRun(
            probe_output=output,
            exit_code=exit_code,
            timed_out=timed_out,
            log_tail=log_tail,
            duration_s=time.monotonic() - started,
            isolation="docker",
        )

    def _container_spec(self, request: RunRequest, run_id: str, user: str, mount: Mount) -> dict:
        limits = request.limits
        repo, out = f"{SANDBOX_DIR}/repo", f"{SANDBOX_DIR}/out"
        env = scrubbed_environment(request.env, home=f"{SANDBOX_DIR}/home", tmp="/tmp")
        # The host's PATH and locale name host folders and locales: use the image's own.
        if "PATH" not in request.env:
            env["PATH"] = CONTAINER_PATH
        for name in _HOST_LOCALE:
            if name not in request.env:
                env.pop(name, None)
        env.setdefault("LANG", "C.UTF-8")
        roots = [f"{repo}/{r}" for r in import_roots(request.workspace)]
        env["PYTHONPATH"] = ":".join([f"{SANDBOX_DIR}/probe", *roots])
        interpreter = request.interpreter or "python3"
        tmp_size = min(limits.file_size_bytes, limits.memory_bytes // 2)
        log_size = max(4 * limits.output_bytes, MIB)
        deadline = int(time.time() + limits.wall_clock_s)
        return {
            "image": self.image,
            "command": [interpreter, "-c", _LIMIT_ADDRESS_SPACE, str(limits.memory_bytes),
                        interpreter, "-m", "pytest", *probe_arguments(request, repo, out)],
            "name": f"equisa-{run_id}",
            "labels": {RUN_LABEL: run_id, DEADLINE_LABEL: str(deadline)},
            "working_dir": repo,
            "environment": env,
            "user": user,
            "network_mode": "none",
            "read_only": True,
            "tmpfs": {"/tmp": f"rw,nosuid,nodev,size={tmp_size},mode=1777"},
            "mounts": [mount],
            "mem_limit": limits.memory_bytes,
            "memswap_limit": limits.memory_bytes,
            "nano_cpus": self.nano_cpus,
            "pids_limit": limits.max_processes,
            "ulimits": [
                Ulimit(name="cpu", soft=limits.cpu_seconds, hard=limits.cpu_seconds),
                Ulimit(name="fsize", soft=limits.file_size_bytes, hard=limits.file_size_bytes),
            ],
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "init": self.init,
            "stdin_open": False,
            "tty": False,
            # json-file with rotation keeps the engine's copy of a noisy suite's output bounded.
            "log_config": LogConfig(type="json-file", config={"max-size": str(log_size), "max-file": "2"}),
        }

    @staticmethod
    def _wait(container: Container, wall_clock_s: float, on_record: RecordCallback | None,
              probe_path: Path, bind: bool) -> bool:
        """Wait for the container to exit or the deadline; kill it then. Returns ``timed_out``."""
        deadline = time.monotonic() + wall_clock_s
        poll = _POLL_S if bind else _COPY_POLL_S
        offset = 0
        timed_out = False
        while True:
            container.reload()
            if container.status in ("exited", "dead"):
                break
            if time.monotonic() > deadline:
                timed_out = True
                _kill(container)
                break
            if on_record is not None:
                if not bind:
                    _fetch(container, f"{SANDBOX_DIR}/out/probe.jsonl", probe_path)
                offset = tail_records(probe_path, offset, on_record)
            time.sleep(poll)
        if on_record is not None:
            if not bind:
                _fetch(container, f"{SANDBOX_DIR}/out/probe.jsonl", probe_path)
            tail_records(probe_path, offset, on_record)
        return timed_out


def _sandbox_user() -> tuple[int, int]:
    """``nobody`` when EQUISA runs as root; otherwise EQUISA's own (non-root) user."""
    if os.geteuid() == 0:
        return NOBODY, NOBODY
    return os.geteuid(), os.getegid()


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    os.lchown(root, uid, gid)
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            os.lchown(os.path.join(folder, name), uid, gid)


def _pack(folder: Path, tar_path: Path, uid: int, gid: int) -> Path:
    """The run folder's contents as a tar whose files the sandbox user owns (for ``put_archive``)."""

    def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid, info.gid, info.uname, info.gname = uid, gid, "", ""
        return info

    with tarfile.open(tar_path, "w") as tar:
        for child in sorted(folder.iterdir()):
            tar.add(child, arcname=child.name, filter=owned)
    return tar_path


def _fetch(container: Container, path: str, target: Path) -> None:
    """Copy one file out of the container to ``target`` (nothing if it does not exist yet)."""
    try:
        stream, _stat = container.get_archive(path)
    except docker.errors.NotFound:
        return
    data = b"".join(stream)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        member = next((m for m in tar.getmembers() if m.isfile()), None)
        extracted = tar.extractfile(member) if member is not None else None
        if extracted is not None:
            partial = target.with_suffix(".partial")
            partial.write_bytes(extracted.read())
            os.replace(partial, target)


def _kill(container: Container) -> None:
    try:
        container.kill()
    except docker.errors.APIError as error:  # it exited meanwhile
        log.debug("kill %s: %s", container.name, error)
    try:
        container.wait(timeout=30)
    except (docker.errors.DockerException, requests.RequestException) as error:
        log.warning("container %s did not stop after SIGKILL: %s", container.name, one_line(error))


def _remove(container: Container | None, volume: Volume | None) -> None:
    """Remove the container, then its volume; each tried twice before giving up with a warning."""
    for thing in (container, volume):
        if thing is None:
            continue
        for attempt in range(2):
            try:
                if isinstance(thing, Container):
                    thing.remove(force=True, v=True)
                else:
                    thing.remove(force=True)
                break
            except docker.errors.NotFound:
                break
            except (docker.errors.DockerException, requests.RequestException) as error:
                if attempt:
                    log.warning("could not remove sandbox %s %s: %s", type(thing).__name__.lower(),
                                thing.name, one_line(error))
                else:
                    time.sleep(0.5)


def _reap_stale(client: docker.DockerClient) -> None:
    """Remove EQUISA containers long past their deadline: their host died without cleaning up."""
    now = time.time()
    try:
        stale = client.containers.list(all=True, filters={"label": DEADLINE_LABEL})
    except (docker.errors.DockerException, requests.RequestException):
        return
    for container in stale:
        try:
            deadline = float(container.labels.get(DEADLINE_LABEL, "inf"))
        except ValueError:
            continue
        if now > deadline + _REAP_GRACE_S:
            log.warning("removing stale sandbox container %s (deadline passed)", container.name)
            _remove(container, None)


@contextmanager
def _translated(action: str) -> Iterator[None]:
    """Turn the docker SDK's and requests' errors into a one-line ``SandboxInfrastructureError``."""
    try:
        yield
    except docker.errors.ImageNotFound as error:
        raise SandboxInfrastructureError(f"{action}: image missing: {one_line(error)}") from None
    except docker.errors.APIError as error:
        reason = error.explanation or str(error)
        raise SandboxInfrastructureError(f"{action}: docker API error: {one_line(reason)}") from None
    except (docker.errors.DockerException, requests.RequestException) as error:
        raise SandboxInfrastructureError(f"{action}: docker engine: {one_line(error)}") from None

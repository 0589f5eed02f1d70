"""The local sandbox (the default backend): a throwaway copy run under the strongest isolation here.

Isolation is chosen in one place, ``detect_isolation``, which says what it chose and why:

- ``bwrap`` (bubblewrap): new user, network, PID, IPC and UTS namespaces; the whole system
  mounted read-only; only the run folder (workspace copy, home, tmp) writable; a private /tmp;
  ``--die-with-parent`` so a killed EQUISA leaves no sandbox behind.
- ``unshare``: new user, network and PID namespaces (``unshare -rn --pid --fork --kill-child``);
  the file system is not made read-only, so this level is logged as weaker.
- ``none``: a plain subprocess, with a warning.

Every level adds: rlimits through ``prlimit`` (address space, CPU seconds, file size, processes),
a pids cgroup (when one is writable) that caps processes even for root and lets every process of
the run be killed, a wall-clock timeout that kills the whole process group, a scrubbed
environment with pinned ``PYTHONHASHSEED`` and ``TZ``, and capped output. (``prlimit`` and a shell
launcher are used instead of ``preexec_fn`` because ``preexec_fn`` is unsafe in the threaded
processes Prefect runs tasks in.)
"""

from __future__ import annotations

import functools
import logging
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from tasks.sandbox import (
    RecordCallback,
    RunRequest,
    SandboxInfrastructureError,
    SandboxRun,
    cap_text,
    prepare_run_folder,
    probe_arguments,
    scrubbed_environment,
    tail_records,
)

__all__ = ["Isolation", "LocalSandbox", "detect_isolation"]

log = logging.getLogger(__name__)

_POLL_S = 0.1
_ISOLATION_ENV = "EQUISA_LOCAL_ISOLATION"
#: Candidate pids-controller roots: cgroup v1, then the v2 unified hierarchy.
_PIDS_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))


class Isolation(BaseModel):
    """The isolation level the local sandbox uses, and why."""

    model_config = ConfigDict(frozen=True)

    level: str  # "bwrap", "unshare" or "none"
    reason: str


@functools.cache
def detect_isolation() -> Isolation:
    """Pick the strongest isolation that works here; ``EQUISA_LOCAL_ISOLATION`` may lower it."""
    wanted = os.environ.get(_ISOLATION_ENV, "").strip()
    if wanted not in ("", "bwrap", "unshare", "none"):
        raise SandboxInfrastructureError(
            f"{_ISOLATION_ENV}={wanted!r} is not one of bwrap, unshare, none"
        )
    if wanted in ("", "bwrap"):
        if shutil.which("bwrap") and _works(["bwrap", "--ro-bind", "/", "/", "--unshare-all",
                                            "--die-with-parent", "true"]):
            return Isolation(level="bwrap", reason="bubblewrap runs: namespaces, read-only system")
        if wanted == "bwrap":
            raise SandboxInfrastructureError("bwrap was asked for but does not run here")
    if wanted in ("", "unshare"):
        if shutil.which("unshare") and _works(["unshare", "-rn", "--pid", "--fork", "--kill-child",
                                               "true"]):
            reason = "no working bubblewrap; unshare gives network and PID namespaces only"
            log.warning("local sandbox: %s (the file system is not read-only)", reason)
            return Isolation(level="unshare", reason=reason)
        if wanted == "unshare":
            raise SandboxInfrastructureError("unshare was asked for but does not run here")
    reason = "asked for" if wanted == "none" else "neither bubblewrap nor unshare runs here"
    log.warning("local sandbox: plain subprocess (%s): no network or file-system isolation", reason)
    return Isolation(level="none", reason=reason)


def _works(command: list[str]) -> bool:
    try:
        return subprocess.run(command, capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class _PidsCgroup:
    """A pids cgroup for one run, when the host lets us make one: caps and kills every process."""

    def __init__(self, max_processes: int) -> None:
        self.path: Path | None = None
        for root in _PIDS_ROOTS:
            if (root / "cgroup.procs").exists() and os.access(root, os.W_OK) and (
                root.name == "pids" or "pids" in _read(root / "cgroup.subtree_control")
            ):
                candidate = root / f"equisa-{uuid.uuid4().hex[:12]}"
                try:
                    candidate.mkdir()
                    (candidate / "pids.max").write_text(str(max_processes))
                except OSError:
                    continue
                self.path = candidate
                break

    def enter_command(self) -> str:
        """Shell words that move the launcher into the cgroup (nothing when there is none)."""
        if self.path is None:
            return ""
        return f"echo $$ > {shlex.quote(str(self.path / 'cgroup.procs'))} && "

    def kill_all(self) -> None:
        if self.path is None:
            return
        for _ in range(50):
            pids = [int(p) for p in _read(self.path / "cgroup.procs").split()]
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.02)

    def remove(self) -> None:
        if self.path is not None:
            self.kill_all()
            try:
                self.path.rmdir()
            except OSError as error:
                log.warning("could not remove cgroup %s: %s", self.path, error)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


class LocalSandbox:
    """Runs requests on this machine under ``detect_isolation()``'s level."""

    name = "local"

    def __init__(self, scratch_root: Path | None = None) -> None:
        self.scratch_root = scratch_root

    def run(self, request: RunRequest, on_record: RecordCallback | None = None) -> SandboxRun:
        """Copy, isolate, run, and always clean up: the folder, the processes, the cgroup."""
        isolation = detect_isolation()
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="equisa-run-", dir=self.scratch_root) as scratch:
            folder = Path(scratch)
            repo = prepare_run_folder(request, folder)
            out_dir = folder / "out"
            inner = [request.interpreter, "-m", "pytest",
                     *probe_arguments(request, str(repo), str(out_dir))]
            env = scrubbed_environment(request.env, home=str(folder / "home"), tmp=str(folder / "tmp"))
            env["PYTHONPATH"] = str(folder / "probe")
            cgroup = _PidsCgroup(request.limits.max_processes)
            log_path = folder / "pytest.log"
            try:
                command = self._command(isolation.level, inner, folder, repo, request, cgroup)
                with open(log_path, "wb") as log_file:
                    try:
                        process = subprocess.Popen(
                            command, cwd=repo, env=env, stdout=log_file, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True,
                        )
                    except OSError as error:
                        raise SandboxInfrastructureError(f"cannot start the sandbox: {error}") from None
                    exit_code, timed_out = self._wait(
                        process, out_dir / "probe.jsonl", request.limits.wall_clock_s, on_record, cgroup
                    )
            finally:
                cgroup.remove()
            probe_path = out_dir / "probe.jsonl"
            output = probe_path.read_text(encoding="utf-8", errors="replace") if probe_path.exists() else ""
            log_tail = cap_text(_tail_bytes(log_path, request.limits.output_bytes),
                                request.limits.output_bytes)
        if isolation.level != "none" and exit_code not in (None, 0, 1, 2, 3, 4, 5) and not output:
            raise SandboxInfrastructureError(
                f"the {isolation.level} sandbox failed to start (exit {exit_code}): {log_tail[-300:]}"
            )
        return SandboxRun(
            probe_output=output,
            exit_code=exit_code,
            timed_out=timed_out,
            log_tail=log_tail,
            duration_s=time.monotonic() - started,
            isolation=isolation.level + (" + pids cgroup" if cgroup.path else ""),
        )

    @staticmethod
    def _command(level: str, inner: list[str], folder: Path, repo: Path, request: RunRequest,
                 cgroup: _PidsCgroup) -> list[str]:
        limits = request.limits
        prlimit = [
            "prlimit", f"--as={limits.memory_bytes}", f"--cpu={limits.cpu_seconds}",
            f"--fsize={limits.file_size_bytes}", f"--nproc={limits.max_processes}", "--",
        ]
        if level == "bwrap":
            isolate = [
                "bwrap", "--die-with-parent", "--new-session", "--unshare-all",
                "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
                *_reexpose_under_tmp(request.interpreter),
                "--bind", str(folder), str(folder), "--chdir", str(repo), "--",
            ]
        elif level == "unshare":
            isolate = ["unshare", "-rn", "--pid", "--fork", "--kill-child", "--"]
        else:
            isolate = []
        words = [*prlimit, *isolate, *inner]
        # A shell launcher joins the cgroup before anything runs, then becomes the command.
        script = cgroup.enter_command() + "exec " + shlex.join(words)
        return ["/bin/sh", "-c", script]

    @staticmethod
    def _wait(process: subprocess.Popen[bytes], probe_path: Path, wall_clock_s: float,
              on_record: RecordCallback | None, cgroup: _PidsCgroup) -> tuple[int | None, bool]:
        deadline = time.monotonic() + wall_clock_s
        offset = 0
        timed_out = False
        while True:
            try:
                exit_code: int | None = process.wait(timeout=_POLL_S)
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() > deadline:
                    timed_out = True
                    _kill_group(process.pid)
                    cgroup.kill_all()
                    process.wait()
                    exit_code = None
                    break
            if on_record is not None:
                offset = tail_records(probe_path, offset, on_record)
        if on_record is not None:
            tail_records(probe_path, offset, on_record)
        _kill_group(process.pid)  # whatever the suite left running
        cgroup.kill_all()
        if exit_code is not None and exit_code < 0:
            exit_code = None  # killed by a signal
        return exit_code, timed_out


def _reexpose_under_tmp(interpreter: str) -> list[str]:
    """``--ro-bind`` arguments for the interpreter's environment when it lives under /tmp.

    The sandbox gets a private, empty /tmp; an interpreter installed there (a CI checkout's
    ``.venv``, say) must stay visible, read-only. Its environment is the nearest folder above it
    holding ``pyvenv.cfg``, else the folder above ``bin/``.
    """
    binds: list[str] = []
    for path in {Path(interpreter).absolute(), Path(interpreter).resolve()}:
        if not str(path).startswith("/tmp/"):
            continue
        root = next((p for p in path.parents if (p / "pyvenv.cfg").exists()), path.parent.parent)
        if str(root) not in ("/", "/tmp"):
            binds += ["--ro-bind", str(root), str(root)]
    return binds


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _tail_bytes(path: Path, limit: int) -> bytes:
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            handle.seek(max(0, size - limit - 1))
            return handle.read()
    except OSError:
        return b""

"""The local sandbox (the default backend): a throwaway copy run under the strongest isolation here.

The isolation level comes from ``tasks.isolation.detect_isolation`` (bubblewrap, else the same
confinement from util-linux, else network and PID namespaces only, else none), or is fixed by the
caller (``--sandbox none``). Code nobody reviewed (a request with an overlay or mutants) runs only
under a level that confines file writes, unless the request says weaker isolation was accepted
(``equisa_core.common.sandbox_policy``).

Every level adds: rlimits through ``prlimit`` (address space, CPU seconds, file size, processes),
a pids cgroup (when one is writable) that caps processes even for root and lets every process of
the run be killed, a wall-clock timeout that kills the whole process group, a scrubbed
environment with pinned ``PYTHONHASHSEED`` and ``TZ``, and capped output. (``prlimit`` and a shell
launcher are used instead of ``preexec_fn`` because ``preexec_fn`` is unsafe in the threaded
processes Prefect runs tasks in.)
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from equisa_core.common.sandbox_policy import IsolationLevel, SandboxIsolation, require_confinement
from tasks.isolation import detect_isolation, isolation_words
from tasks.sandbox import (
    RecordCallback,
    RunRequest,
    SandboxInfrastructureError,
    SandboxRun,
    cap_text,
    import_roots,
    prepare_run_folder,
    probe_arguments,
    scrubbed_environment,
    tail_records,
)
from tasks.scratch import scratch_root as default_scratch_root

__all__ = ["LocalSandbox"]

log = logging.getLogger(__name__)

_POLL_S = 0.1
#: Candidate pids-controller roots: cgroup v1, then the v2 unified hierarchy.
_PIDS_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))


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
    """Runs requests on this machine under ``level`` (default: ``detect_isolation()``'s), each in a
    run folder under ``scratch_root`` (default: ``tasks.scratch.scratch_root()``, asked per run)."""

    name = "local"

    def __init__(self, scratch_root: Path | None = None, level: IsolationLevel | None = None) -> None:
        self.scratch_root = scratch_root
        self.level = level

    def isolation(self, weak_allowed: bool = False) -> SandboxIsolation:
        """The isolation this sandbox gives here, as reports record it."""
        if self.level is not None:
            return SandboxIsolation(backend="none" if self.level is IsolationLevel.NONE else self.name,
                                    level=self.level, reason="asked for", weak_allowed=weak_allowed)
        detected = detect_isolation()
        return SandboxIsolation(backend=self.name, level=detected.level, reason=detected.reason,
                                weak_allowed=weak_allowed)

    def run(self, request: RunRequest, on_record: RecordCallback | None = None) -> SandboxRun:
        """Copy, isolate, run, and always clean up: the folder, the processes, the cgroup.

        Raises ``WeakSandboxError`` for unreviewed code where files are not confined (and the
        request did not accept that).
        """
        isolation = self.isolation(request.allow_weak_isolation)
        if request.untrusted:
            require_confinement(isolation, "generated code (tests, inspection patches or fixes)")
        started = time.monotonic()
        root = self.scratch_root or default_scratch_root()
        with tempfile.TemporaryDirectory(prefix="equisa-run-", dir=root) as scratch:
            folder = Path(scratch)
            repo = prepare_run_folder(request, folder)
            out_dir = folder / "out"
            inner = [request.interpreter, "-m", "pytest",
                     *probe_arguments(request, str(repo), str(out_dir))]
            env = scrubbed_environment(request.env, home=str(folder / "home"), tmp=str(folder / "tmp"))
            roots = [str(repo / r) for r in import_roots(repo)]
            env["PYTHONPATH"] = os.pathsep.join([str(folder / "probe"), *roots])
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
                        process, out_dir / "probe.jsonl", request.limits.wall_clock_s, on_record, cgroup,
                        request.exit_grace_s)
            finally:
                cgroup.remove()
            probe_path = out_dir / "probe.jsonl"
            output = probe_path.read_text(encoding="utf-8", errors="replace") if probe_path.exists() else ""
            log_tail = cap_text(_tail_bytes(log_path, request.limits.output_bytes),
                                request.limits.output_bytes)
        started_badly = exit_code not in (None, 0, 1, 2, 3, 4, 5) and not output
        if isolation.level is not IsolationLevel.NONE and started_badly:
            raise SandboxInfrastructureError(
                f"the {isolation.level.value} sandbox failed to start (exit {exit_code}): {log_tail[-300:]}"
            )
        return SandboxRun(
            probe_output=output,
            exit_code=exit_code,
            timed_out=timed_out,
            log_tail=log_tail,
            duration_s=time.monotonic() - started,
            isolation=isolation.level.value + (" + pids cgroup" if cgroup.path else ""),
        )

    @staticmethod
    def _command(level: IsolationLevel, inner: list[str], folder: Path, repo: Path, request: RunRequest,
                 cgroup: _PidsCgroup) -> list[str]:
        limits = request.limits
        prlimit = [
            "prlimit", f"--as={limits.memory_bytes}", f"--cpu={limits.cpu_seconds}",
            f"--fsize={limits.file_size_bytes}", f"--nproc={limits.max_processes}", "--",
        ]
        isolate = isolation_words(level, folder, repo, request.interpreter, request.lent)
        words = [*prlimit, *isolate, *inner]
        # A shell launcher joins the cgroup before anything runs, then becomes the command.
        script = cgroup.enter_command() + "exec " + shlex.join(words)
        return ["/bin/sh", "-c", script]

    @staticmethod
    def _wait(process: subprocess.Popen[bytes], probe_path: Path, wall_clock_s: float,
              on_record: RecordCallback | None, cgroup: _PidsCgroup, exit_grace_s: float,
              ) -> tuple[int | None, bool]:
        deadline = time.monotonic() + wall_clock_s
        offset = 0
        timed_out = False
        ended_at: float | None = None
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
                if ended_at is None and _probe_end_status(probe_path) is not None:
                    ended_at = time.monotonic()
                elif ended_at is not None and time.monotonic() - ended_at > exit_grace_s:
                    _kill_group(process.pid)  # the run is over; something keeps it from exiting
                    cgroup.kill_all()
                    process.wait()
                    exit_code = _probe_end_status(probe_path)
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


def _probe_end_status(probe_path: Path) -> int | None:
    """The exit status of the probe's "end" record, when it is the file's last line."""
    tail = _tail_bytes(probe_path, 512).decode("utf-8", errors="replace").rstrip().rsplit("\n", 1)[-1]
    if '"kind": "end"' not in tail:
        return None
    try:
        return int(json.loads(tail).get("exitstatus"))
    except (ValueError, TypeError, AttributeError):
        return None


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

"""The local sandbox (the default backend): a throwaway copy run under the strongest isolation here.

The isolation level comes from ``tasks.sandbox.isolation.detect_isolation`` (bubblewrap, else the same
confinement from util-linux, else network and PID namespaces only, else none), or is fixed by the
caller (``--sandbox none``). Code nobody reviewed (a request with an overlay or mutants) runs only
under a level that confines file writes, unless the request says weaker isolation was accepted
(``equisa_core.common.sandbox_policy``).

Every level adds: rlimits through ``prlimit`` (address space, CPU seconds, file size, processes),
a pids cgroup (when one is writable) that caps processes even for root and lets every process of
the run be killed, a wall-clock timeout that kills the whole process group (at the run's deadline if
that is sooner: ``tasks.sandbox.contract.run_deadline``; such a cut raises ``BudgetSpentError``), a scrubbed
environment with pinned ``PYTHONHASHSEED`` and ``TZ``, and capped output. (``prlimit`` and a shell
launcher are used instead of ``preexec_fn`` because ``preexec_fn`` is unsafe in the threaded
processes Prefect runs tasks in.)
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from equisa_core.common.sandbox_policy import IsolationLevel, SandboxIsolation, require_confinement
from equisa_core.common.time_limits import within_deadline
from tasks.sandbox.contract import (
    RecordCallback,
    RunRequest,
    SandboxInfrastructureError,
    SandboxRun,
    cap_text,
    confirmation_payload,
    cut_by_deadline,
    deadline_wall_clock,
    import_roots,
    own_interpreter_environment,
    prepare_run_folder,
    probe_arguments,
    scrubbed_environment,
    seconds_to_deadline,
    tail_records,
)
from tasks.sandbox.isolation import detect_isolation, isolation_words
from tasks.sandbox.probe_bytecode import probe_bytecode
from tasks.sandbox.scratch import scratch_root as default_scratch_root

__all__ = ["LocalSandbox", "LaunchedRun", "write_request", "end_status", "REQUEST_FILE", "SERVED_OUTPUT",
           "PROBE_OUTPUT"]

log = logging.getLogger(__name__)

#: How often a waiting run looks for its exit and its probe's ``end`` record: what a run's end costs
#: on average is half of it (a look reads the output's last 512 bytes and its new lines).
_POLL_S = 0.02
#: A traced shard that serves mutants afterwards (``RunRequest.serve_owner``): the file its probe's
#: pristine fork waits for (``write_request``), and the one that fork writes the mutant run to.
REQUEST_FILE = "request.json"
SERVED_OUTPUT = "served.jsonl"  # the probe's SERVED_OUTPUT: it writes it beside the request file
#: The output every run writes.
PROBE_OUTPUT = "probe.jsonl"
#: The record by which a probe says it could not fork a child to serve mutants.
SERVE_SKIPPED = '"kind": "serve-skipped"'
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


@dataclass(frozen=True)
class LaunchedRun:
    """A sandbox process started by ``LocalSandbox.launch``, not yet finished."""

    folder: Path
    process: subprocess.Popen[bytes]
    log_file: BinaryIO
    cgroup: _PidsCgroup
    isolation: SandboxIsolation
    started: float


def write_request(launched: LaunchedRun, request: RunRequest) -> None:
    """Give a shard kept to serve mutants the mutant run ``request``: its selection, time limits and
    mutants (the probe's ``--equisa-serve`` file, written whole, then renamed into place)."""
    payload = {
        "select": sorted(request.only) if request.only is not None else None,
        "test_timeout": request.limits.test_timeout_s,
        "test_limits": request.test_limits(),
        "mutants": [mutant.model_dump() for mutant in request.mutants],
        "fail_fast": request.mutants_fail_fast,
        "must_fix": sorted(request.mutants_must_fix) or None,
        "confirm": confirmation_payload(request.mutants_confirm) or None,
        "budget": request.mutants_budget_s,
    }
    target = launched.folder / "out" / REQUEST_FILE
    partial = target.with_suffix(".partial")
    partial.write_text(json.dumps(payload), encoding="utf-8")
    os.replace(partial, target)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


class LocalSandbox:
    """Runs requests on this machine under ``level`` (default: ``detect_isolation()``'s), each in a
    run folder under ``scratch_root`` (default: ``tasks.sandbox.scratch.scratch_root()``, asked per run)."""

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
        return self.finish(self.launch(request), request, on_record)

    def launch(self, request: RunRequest, serves: bool = False) -> LaunchedRun:
        """Start ``request``'s process and return at once; ``finish`` (or ``discard``) must follow.
        ``serves``: the probe keeps a pristine fork that serves a mutant run after the run's own
        (see "Serving a mutant run" in the probe)."""
        deadline_wall_clock(request.limits.wall_clock_s)  # past the run's deadline: none starts
        isolation = self.isolation(request.allow_weak_isolation)
        if request.untrusted:
            require_confinement(isolation, "generated code (tests, inspection patches or fixes)")
        started = time.monotonic()
        root = self.scratch_root or default_scratch_root()
        folder = Path(tempfile.mkdtemp(prefix="equisa-run-", dir=root))
        cgroup: _PidsCgroup | None = None
        try:
            repo = prepare_run_folder(request, folder, probe_bytecode(request.interpreter))
            out_dir = folder / "out"
            inner = [request.interpreter, "-m", "pytest",
                     *probe_arguments(request, str(repo), str(out_dir),
                                      serve_file=str(out_dir / REQUEST_FILE) if serves else None)]
            env = scrubbed_environment(request.env, home=str(folder / "home"), tmp=str(folder / "tmp"))
            env.update(own_interpreter_environment(request.interpreter))
            roots = [str(repo / r) for r in import_roots(repo)]
            env["PYTHONPATH"] = os.pathsep.join([str(folder / "probe"), *roots])
            cgroup = _PidsCgroup(request.limits.max_processes)
            command = self._command(isolation.level, inner, folder, repo, request, cgroup)
            log_file = open(folder / "pytest.log", "wb")
            try:
                process = subprocess.Popen(
                    command, cwd=repo, env=env, stdout=log_file, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, start_new_session=True,
                )
            except OSError as error:
                log_file.close()
                raise SandboxInfrastructureError(f"cannot start the sandbox: {error}") from None
        except BaseException:
            if cgroup is not None:
                cgroup.remove()
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return LaunchedRun(folder=folder, process=process, log_file=log_file, cgroup=cgroup,
                           isolation=isolation, started=started)

    def finish(self, launched: LaunchedRun, request: RunRequest, on_record: RecordCallback | None = None,
               output: str = PROBE_OUTPUT, keep: Callable[[LaunchedRun], object] | None = None,
               ) -> SandboxRun:
        """Wait for a launched run under ``request``'s limits (its ``output`` file: the probe's, or a
        served mutant run's), then clean up; what it gave. ``keep``: return once the output's ``end``
        is written and, when the process goes on (to serve mutants), hand it to ``keep`` whole.
        Raises ``BudgetSpentError`` when the run's deadline, sooner than its wall clock, stopped it."""
        wall_clock_s, by_deadline = within_deadline(request.limits.wall_clock_s, seconds_to_deadline())
        folder = launched.folder
        probe_path = folder / "out" / output
        isolation, cgroup = launched.isolation, launched.cgroup
        kept = False
        started = time.monotonic()
        try:
            try:
                exit_code, timed_out = self._wait(
                    launched.process, probe_path, wall_clock_s, on_record, cgroup,
                    request.exit_grace_s, until_end=keep is not None)
                text = probe_path.read_text(encoding="utf-8", errors="replace") if probe_path.exists() else ""
                # kept only while its fork waits to serve: not when the probe could not fork
                kept = keep is not None and launched.process.poll() is None and SERVE_SKIPPED not in text
            finally:
                if not kept:
                    if keep is not None:  # the process may be exiting: it has written what it had to
                        _kill_group(launched.process.pid)
                        cgroup.kill_all()
                        launched.process.wait()
                    launched.log_file.close()
                    cgroup.remove()
            log_tail = cap_text(_tail_bytes(folder / "pytest.log", request.limits.output_bytes),
                                request.limits.output_bytes)
        finally:
            if not kept:
                shutil.rmtree(folder, ignore_errors=True)
        if kept and keep is not None:
            keep(launched)
        if timed_out and by_deadline:
            raise cut_by_deadline(time.monotonic() - started)
        started_badly = exit_code not in (None, 0, 1, 2, 3, 4, 5) and not text
        if isolation.level is not IsolationLevel.NONE and started_badly:
            raise SandboxInfrastructureError(
                f"the {isolation.level.value} sandbox failed to start (exit {exit_code}): {log_tail[-300:]}"
            )
        return SandboxRun(
            probe_output=text,
            exit_code=exit_code,
            timed_out=timed_out,
            log_tail=log_tail,
            duration_s=time.monotonic() - (launched.started if output == PROBE_OUTPUT else started),
            isolation=isolation.level.value + (" + pids cgroup" if cgroup.path else ""),
        )

    @staticmethod
    def discard(launched: LaunchedRun) -> None:
        """End a launched run nobody will finish: its processes, its cgroup, its folder."""
        _kill_group(launched.process.pid)
        launched.cgroup.kill_all()
        try:
            launched.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            log.warning("a discarded sandbox process (pid %s) did not end", launched.process.pid)
        launched.log_file.close()
        launched.cgroup.remove()
        shutil.rmtree(launched.folder, ignore_errors=True)

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
              until_end: bool = False) -> tuple[int | None, bool]:
        """The run's exit status and whether it timed out, once it exited (or was ended: its wall
        clock, or ``exit_grace_s`` after its ``end`` record); ``until_end``: as soon as the ``end``
        record is written, the process left running."""
        deadline = time.monotonic() + wall_clock_s
        offset = 0
        timed_out = False
        ended_at: float | None = None
        while True:
            try:
                exit_code: int | None = process.wait(timeout=_POLL_S)
                break
            except subprocess.TimeoutExpired:
                status = end_status(probe_path) if ended_at is None else None
                if status is not None and until_end:  # done, in time (a run started early may be
                    if on_record is not None:  # found done after its wall clock: it ended in time)
                        tail_records(probe_path, offset, on_record)
                    return status, False
                if time.monotonic() > deadline:
                    timed_out = True
                    _kill_group(process.pid)
                    cgroup.kill_all()
                    process.wait()
                    exit_code = None
                    break
                if status is not None:
                    ended_at = time.monotonic()
                elif ended_at is not None and time.monotonic() - ended_at > exit_grace_s:
                    _kill_group(process.pid)  # the run is over; something keeps it from exiting
                    cgroup.kill_all()
                    process.wait()
                    exit_code = end_status(probe_path)
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


def end_status(probe_path: Path) -> int | None:
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

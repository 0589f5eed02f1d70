"""Sandboxed runs started before the flow that wants them, and adopted by its ``run-tests`` task.

A one-shot command's first wait is for the shared Prefect server (seconds on a fresh machine), and
the suite's trace does not need Prefect. So the command line starts the trace's shards itself while
the server starts (``tasks.run.early_trace``): ``start`` launches each request's process, exactly
the run the flow would start, and keeps it here. When the flow's ``run-tests`` task then comes to
the same request, ``adopt`` hands it the process under way (``tasks.sandbox.served_runs.run_serving``)
and the task waits for it as if it had launched it: one process for the run, not two, and the same
flow and task runs, cache key and result as before. A request matches a kept run when every field
but ``serve_owner`` (a fresh owner per Localization run, which decides what the process does after
its run, not what the run gives) is equal, in a local sandbox of the same isolation level.

``start`` must be called in a thread that lives as long as the run (the command's own): the local
sandbox's ``bwrap --die-with-parent`` kills a run when the thread that launched it ends.

``discard`` ends the runs no task adopted (the flow built another request, or found the result in
its cache): ``tasks.run.prepared_run.run_suite`` once the trace is in, and the command's exit.
"""

from __future__ import annotations

import atexit
import threading
import time
from dataclasses import dataclass

from tasks.sandbox.contract import RunRequest, Sandbox
from tasks.sandbox.local_backend import PROBE_OUTPUT, LaunchedRun, LocalSandbox, end_status

__all__ = ["EarlyRun", "start", "adopt", "take_head_start", "discard", "waiting"]

_lock = threading.Lock()


@dataclass(frozen=True)
class EarlyRun:
    """A run launched before its task: its sandbox, request and process, and whether its probe keeps
    a pristine fork to serve a mutant run afterwards (``LocalSandbox.launch``'s ``serves``)."""

    sandbox: LocalSandbox
    request: RunRequest
    launched: LaunchedRun
    serves: bool
    launched_at: float
    """``time.time()`` at its launch (the probe output's modification time says when it ended)."""

    def ran_before(self) -> float:
        """Seconds it ran before now: until its probe wrote its last line, or until now."""
        now = time.time()
        try:
            last = (self.launched.folder / "out" / PROBE_OUTPUT).stat().st_mtime
        except OSError:
            last = now
        ended = last if self.launched.process.poll() is not None or _ended(self) else now
        return max(0.0, min(ended, now) - self.launched_at)

    def remaining(self, request: RunRequest) -> RunRequest:
        """``request`` whose wall clock is what is left of it since the process started, for
        ``LocalSandbox.finish`` (the run gets no more time than if the task had launched it)."""
        spent = time.monotonic() - self.launched.started
        wall_clock_s = max(0.001, request.limits.wall_clock_s - spent)
        limits = request.limits.model_copy(update={"wall_clock_s": wall_clock_s})
        return request.model_copy(update={"limits": limits})


_early: list[EarlyRun] = []
_head_start: list[float] = [0.0, 0.0]  # seconds, and when the last run was adopted
_registered: list[bool] = []


def start(sandbox: LocalSandbox, request: RunRequest, serves: bool = False) -> EarlyRun:
    """Launch ``request`` in ``sandbox`` now and keep it for the task that will ask for it (ended at
    this process's exit if none does)."""
    launched_at = time.time()
    launched = sandbox.launch(request, serves=serves)
    early = EarlyRun(sandbox, request, launched, serves, launched_at)
    with _lock:
        _early.append(early)
        if not _registered:
            _registered.append(True)
            atexit.register(discard)
    return early


def adopt(sandbox: Sandbox, request: RunRequest) -> EarlyRun | None:
    """The kept run of ``request`` (but for ``serve_owner``) in a sandbox like ``sandbox``, taken out
    of the keeping; None when there is none."""
    if not isinstance(sandbox, LocalSandbox) or not _early:
        return None
    wanted = _identity(request)
    with _lock:
        for index, early in enumerate(_early):
            if early.sandbox.level == sandbox.level and _identity(early.request) == wanted:
                _head_start[:] = [max(_head_start[0], early.ran_before()), time.monotonic()]
                return _early.pop(index)
    return None


def take_head_start(since: float) -> float:
    """The seconds the runs adopted since the last call had run before they were adopted (the
    longest of them), when the last was adopted after ``since`` (a ``time.monotonic()``), else 0;
    then 0. What a flow's clock, started after them, adds for the time its work took
    (``tasks.localization.runners``: the seconds the trace took, which its screening is weighed
    against)."""
    with _lock:
        seconds, adopted_at = _head_start
        _head_start[:] = [0.0, 0.0]
    return seconds if adopted_at >= since else 0.0


def discard() -> int:
    """End the kept runs no task adopted; how many there were."""
    with _lock:
        left = list(_early)
        _early.clear()
    for early in left:
        early.sandbox.discard(early.launched)
    return len(left)


def waiting() -> int:
    """How many kept runs wait for their task."""
    with _lock:
        return len(_early)


def _ended(early: EarlyRun) -> bool:
    """Whether its probe wrote its ``end`` record (a serving run's process stays after it)."""
    return end_status(early.launched.folder / "out" / PROBE_OUTPUT) is not None


def _identity(request: RunRequest) -> RunRequest:
    return request.model_copy(update={"serve_owner": None})

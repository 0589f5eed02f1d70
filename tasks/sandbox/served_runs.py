"""Trace shards kept after their run, to serve the mutant screening without a new process.

On a small suite most of a mutant run is its start: the interpreter, pytest, the project's imports
and the collection (measured on a 6-test scrapy suite: 0.8 s of a 1.0 s screening process, the
mutant rounds 0.18 s). The Localization loop's screening runs right after the trace, on the same
tests. So a trace shard started with ``RunRequest.serve_owner`` forks, after collection and before
any test ran, a pristine copy of itself that waits for a mutant run (see "Serving a mutant run" in
the probe). ``run_serving`` returns the shard's trace once its ``end`` record is written and
``keep``s the process here; the screening's ``execute_mutants`` ``claim``s one whose tests and
environment fit its request and hands it the request; the fork runs it as a new process would,
and writes its own output. ``discard`` ends, for an owner (one Localization run), the shards no
run claimed. A run that finds none starts a process of its own, as before.

Tried first and measured no gain: processes started ahead that wait after their own collection.
With two cores both busy with the trace's shards, their start only took CPU time from the shards
(even at niceness 19), and after the trace it overlapped too little of the screening's set-up.
Reusing the shard's own interpreter and collection saves that CPU time instead.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

from tasks.sandbox import early_runs
from tasks.sandbox.contract import RecordCallback, RunRequest, Sandbox, SandboxRun
from tasks.sandbox.local_backend import LaunchedRun, LocalSandbox, write_request

__all__ = ["Claimed", "run_serving", "keep", "claim", "discard", "kept"]

log = logging.getLogger(__name__)

#: Fields a mutant run must share with the shard that serves it (its selection, time limits and
#: mutants are its own; the shard was traced, one of several, and re-ran its failing tests).
_SHARED = ("workspace", "workspace_digest", "interpreter", "env", "overlay", "lent", "record", "order_seed",
           "allow_weak_isolation")

_lock = threading.Lock()


@dataclass(frozen=True)
class _Kept:
    owner: str
    sandbox: LocalSandbox
    shard: RunRequest
    launched: LaunchedRun


@dataclass(frozen=True)
class Claimed:
    """A kept shard given a mutant run: ``sandbox.finish(launched, request, output=SERVED_OUTPUT)``."""

    sandbox: LocalSandbox
    launched: LaunchedRun


_kept: list[_Kept] = []


def run_serving(sandbox: Sandbox, request: RunRequest, on_record: RecordCallback | None = None) -> SandboxRun:
    """``sandbox.run(request)``; for a request with ``serve_owner`` in the local sandbox, where it
    confines the mutants the shard may run later, the run returns once its ``end`` record is written
    and its process, still there while its pristine fork waits to serve, is kept for its owner.
    A run of ``request`` started early (``tasks.sandbox.early_runs``) is adopted, not started again."""
    owner = request.serve_owner
    early = early_runs.adopt(sandbox, request)
    if early is not None:
        return _finish_early(early, request, on_record)
    if owner is None or not isinstance(sandbox, LocalSandbox):
        return sandbox.run(request, on_record)
    isolation = sandbox.isolation(request.allow_weak_isolation)
    if not (isolation.confines_files or isolation.weak_allowed):
        return sandbox.run(request, on_record)
    launched = sandbox.launch(request, serves=True)
    return sandbox.finish(launched, request, on_record, keep=lambda kept: keep(owner, sandbox, request, kept))


def _finish_early(early: early_runs.EarlyRun, request: RunRequest, on_record: RecordCallback | None,
                  ) -> SandboxRun:
    """Wait for an adopted early run as for one launched here: its process kept for ``request``'s
    owner when it serves and the request wants it to, ended once its run is done when it serves
    and the request does not."""
    sandbox, owner = early.sandbox, request.serve_owner
    kept: Callable[[LaunchedRun], object] | None = None
    if early.serves:
        kept = sandbox.discard if owner is None else (
            lambda launched: keep(owner, sandbox, request, launched))
    return sandbox.finish(early.launched, early.remaining(request), on_record, keep=kept)


def keep(owner: str, sandbox: LocalSandbox, shard: RunRequest, launched: LaunchedRun) -> None:
    """Keep a shard whose run is done and whose pristine fork waits to serve a mutant run."""
    with _lock:
        _kept.append(_Kept(owner, sandbox, shard, launched))


def claim(request: RunRequest) -> Claimed | None:
    """A kept shard that can serve ``request`` (a mutant run with a selection, of tests the shard
    collected), given the request; None when there is none."""
    if not request.mutants or request.only is None:
        return None
    with _lock:
        for index, kept_run in enumerate(_kept):
            if _fits(kept_run.shard, request) and kept_run.launched.process.poll() is None:
                del _kept[index]
                break
        else:
            return None
    try:
        write_request(kept_run.launched, request)
    except OSError as error:
        log.info("a kept trace shard could not be given its mutant run: %s", error)
        kept_run.sandbox.discard(kept_run.launched)
        return None
    return Claimed(kept_run.sandbox, kept_run.launched)


def discard(owner: str) -> int:
    """End ``owner``'s kept shards that no run claimed; how many there were."""
    with _lock:
        mine = [k for k in _kept if k.owner == owner]
        _kept[:] = [k for k in _kept if k.owner != owner]
    for kept_run in mine:
        kept_run.sandbox.discard(kept_run.launched)
    return len(mine)


def kept(owner: str) -> int:
    """How many of ``owner``'s shards wait to serve."""
    with _lock:
        return sum(1 for k in _kept if k.owner == owner)


def _fits(shard: RunRequest, request: RunRequest) -> bool:
    """Whether ``shard``'s process collected what ``request`` runs, the same way."""
    if any(getattr(shard, name) != getattr(request, name) for name in _SHARED):
        return False
    given = {"per_test", "test_timeout_s", "wall_clock_s"}  # written with the request, or the host's own
    if shard.limits.model_dump(exclude=given) != request.limits.model_dump(exclude=given):
        return False
    # The fork runs the request's selection among what the shard collected; a process of its own
    # would run it among what the request's paths collect. The same tests run when each selected
    # test is collected by both or by neither: a trace scoped to node ids (``--tests`` naming tests)
    # serves a screening whose paths are those tests' files.
    selected = request.only or ()
    return all(_within(test, shard.tests) == _within(test, request.tests) for test in selected)


def _within(path: str, scope: tuple[str, ...]) -> bool:
    """Whether ``path`` (a test file or node id) is collected by running ``scope`` (empty: the suite)."""
    if not scope:
        return True
    file = PurePosixPath(path.split("::", 1)[0])
    for entry in scope:
        if "::" in entry:
            if path == entry or path.startswith((entry + "::", entry + "[")):
                return True
            continue
        root = PurePosixPath(entry)
        if str(root) in (".", "") or file == root or root in file.parents:
            return True
    return False

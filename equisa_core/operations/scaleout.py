"""A batch spread over a work pool's workers: each repository a run of the repair deployment, watched
to its end, a run lost with its worker submitted again once, every repository accounted for.

A pure state machine (``equisa_core.common.loop``'s shape); ``flows/batch.py`` drives it with
``run_deployment`` and the Prefect client, passing the clock in:

- ``next_steps(state)``: ``Submit`` a repository (first, or again after its run crashed) and
  ``Cancel`` a run given up on (no outcome within ``run_timeout_s``);
- ``record(state, observation)``: a submission (``Submitted``), a cancellation (``Cancelled``), or a
  poll (``Polled``: every watched run's state, and the result of a finished one);
- ``verdict(state)``: once every repository has a result.

A run that ends ``Crashed`` (its worker or machine died; Prefect marks a silent run so, see the
unresponsive-run automation of ``equisa deploy``) or ``Cancelled`` by someone else is submitted
again while the repository has attempts left; after that, and for a run that gives no outcome in
time, the repository is reported as an ``error`` with the reason. A finished run without a readable
result is an ``error`` too. Nothing is lost silently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Literal

from pydantic import Field

from equisa_core.common.loop import Frozen, Verdict
from equisa_core.errors import EXIT_INTERNAL
from equisa_core.operations.batch import RepositoryEntry, RepositoryResult

__all__ = ["Attempt", "Cancel", "Cancelled", "Polled", "RunSeen", "ScaleoutObservation", "ScaleoutState",
           "ScaleoutStep", "Submit", "Submitted", "initial_state", "next_steps", "record", "results", "verdict",
           "watched"]

#: Prefect state types after which a flow run changes no more.
FINAL = frozenset({"COMPLETED", "FAILED", "CRASHED", "CANCELLED"})
#: Final state types that say nothing about the repository, only about where it ran: run it again.
LOST = frozenset({"CRASHED", "CANCELLED"})


class Attempt(Frozen):
    """One deployment run of a repository."""

    flow_run_id: str
    submitted_at: float = Field(description="The driver's clock (seconds) when the run was created.")
    outcome: str | None = Field(None, description="Why the run was left: its final state, or a timeout.")
    cancel: bool = Field(False, description="The run is given up on and must be cancelled.")
    cancelled: bool = False


class Repository(Frozen):
    """A repository of the batch: its entry, its runs so far, and its result once known."""

    entry: RepositoryEntry
    attempts: tuple[Attempt, ...] = ()
    result: RepositoryResult | None = None


class ScaleoutState(Frozen):
    """The batch's repositories in file order and its limits."""

    repositories: tuple[Repository, ...]
    max_attempts: int = Field(ge=1)
    run_timeout_s: float = Field(gt=0)


class Submit(Frozen):
    """Create a deployment run for repository ``index``."""

    kind: Literal["submit"] = "submit"
    index: int


class Cancel(Frozen):
    """Cancel the run ``flow_run_id`` (given up on)."""

    kind: Literal["cancel"] = "cancel"
    flow_run_id: str


class Submitted(Frozen):
    """The run ``flow_run_id`` was created for repository ``index`` at ``now``."""

    kind: Literal["submitted"] = "submitted"
    index: int
    flow_run_id: str
    now: float


class Cancelled(Frozen):
    """The run ``flow_run_id`` was asked to cancel."""

    kind: Literal["cancelled"] = "cancelled"
    flow_run_id: str


class RunSeen(Frozen):
    """A watched run as the server shows it; ``result`` once it finished and left one."""

    state_type: str
    state_name: str = ""
    message: str | None = None
    worker: str | None = None
    result: RepositoryResult | None = None


class Polled(Frozen):
    """Every watched run's state (a run the server no longer knows is missing) at ``now``."""

    kind: Literal["polled"] = "polled"
    runs: Mapping[str, RunSeen]
    now: float


ScaleoutStep = Annotated[Submit | Cancel, Field(discriminator="kind")]
ScaleoutObservation = Annotated[Submitted | Cancelled | Polled, Field(discriminator="kind")]


def initial_state(entries: Sequence[RepositoryEntry], crash_retries: int, run_timeout_s: float) -> ScaleoutState:
    """The batch before any run: ``crash_retries`` more runs for a repository whose run crashed."""
    return ScaleoutState(repositories=tuple(Repository(entry=e) for e in entries),
                         max_attempts=1 + crash_retries, run_timeout_s=run_timeout_s)


def next_steps(state: ScaleoutState) -> list[ScaleoutStep]:
    """Runs to create (repositories with no result and no live run) and runs to cancel."""
    steps: list[ScaleoutStep] = []
    for index, repo in enumerate(state.repositories):
        steps += [Cancel(flow_run_id=a.flow_run_id) for a in repo.attempts if a.cancel and not a.cancelled]
        if repo.result is None and (not repo.attempts or repo.attempts[-1].outcome is not None):
            steps.append(Submit(index=index))
    return steps


def watched(state: ScaleoutState) -> list[str]:
    """The runs whose outcome the batch waits for."""
    return [r.attempts[-1].flow_run_id for r in state.repositories
            if r.result is None and r.attempts and r.attempts[-1].outcome is None]


def record(state: ScaleoutState, observation: ScaleoutObservation) -> ScaleoutState:
    """The next state, given one observation."""
    repos = list(state.repositories)
    if isinstance(observation, Submitted):
        repo = repos[observation.index]
        attempt = Attempt(flow_run_id=observation.flow_run_id, submitted_at=observation.now)
        repos[observation.index] = repo.model_copy(update={"attempts": (*repo.attempts, attempt)})
    elif isinstance(observation, Cancelled):
        repos = [r.model_copy(update={"attempts": tuple(
            a.model_copy(update={"cancelled": True}) if a.flow_run_id == observation.flow_run_id else a
            for a in r.attempts)}) for r in repos]
    else:
        repos = [_polled(state, r, observation) for r in repos]
    return state.model_copy(update={"repositories": tuple(repos)})


def _polled(state: ScaleoutState, repo: Repository, poll: Polled) -> Repository:
    """``repo`` after a poll: its live run finished, was lost, or ran out of time, or goes on."""
    if repo.result is not None or not repo.attempts or repo.attempts[-1].outcome is not None:
        return repo
    attempt = repo.attempts[-1]
    seen = poll.runs.get(attempt.flow_run_id)
    if seen is None:
        seen = RunSeen(state_type="MISSING", state_name="Missing",
                       message="the server no longer knows the run")
    ended = _attempt_ended(state, repo, seen, poll.now)
    if ended is None:
        return repo
    left, result = ended
    if result is not None and len(repo.attempts) > 1:
        earlier = "; ".join(a.outcome or "" for a in repo.attempts[:-1])
        result = result.model_copy(update={"problems": (*result.problems, f"run again after: {earlier}")})
    return repo.model_copy(update={"attempts": (*repo.attempts[:-1], left), "result": result})


#: How one attempt ended: the attempt with its outcome, and the repository's result if it has one.
_Ended = tuple[Attempt, RepositoryResult | None]


def _attempt_ended(state: ScaleoutState, repo: Repository, seen: RunSeen, now: float) -> _Ended | None:
    """How ``repo``'s live run ended, as ``seen`` at ``now``; None while it goes on."""
    if seen.state_type in FINAL and seen.state_type not in LOST:
        return _finished(repo, seen)
    if seen.state_type in LOST or seen.state_type == "MISSING":
        return _lost(state, repo, seen)
    if now - repo.attempts[-1].submitted_at > state.run_timeout_s:
        return _timed_out(state, repo, seen)
    return None


def _finished(repo: Repository, seen: RunSeen) -> _Ended:
    """A run that finished: its result, or an error when it left none."""
    attempt = repo.attempts[-1]
    result = seen.result or _error(repo.entry, attempt.flow_run_id,
                                   f"its run ended {_state_label(seen)}{_where(seen)} without a "
                                   f"result: {seen.message or 'no message'}")
    return attempt.model_copy(update={"outcome": _state_label(seen)}), result


def _lost(state: ScaleoutState, repo: Repository, seen: RunSeen) -> _Ended:
    """A run lost with its worker (or unknown to the server): an error once no attempt is left."""
    attempt = repo.attempts[-1]
    outcome = f"{_state_label(seen)}{_where(seen)}: {seen.message or 'no message'}"
    result = None
    if len(repo.attempts) >= state.max_attempts:
        result = _error(repo.entry, attempt.flow_run_id, "its runs were lost: " + "; ".join(
            [a.outcome or "" for a in repo.attempts[:-1]] + [outcome]))
    return attempt.model_copy(update={"outcome": outcome}), result


def _timed_out(state: ScaleoutState, repo: Repository, seen: RunSeen) -> _Ended:
    """A run without an outcome in time: to cancel, and an error."""
    attempt = repo.attempts[-1]
    outcome = (f"no outcome within {state.run_timeout_s:g} s (still {_state_label(seen)}"
               f"{_where(seen)}); cancelled")
    left = attempt.model_copy(update={"outcome": outcome, "cancel": True})
    return left, _error(repo.entry, attempt.flow_run_id, outcome)


def _state_label(seen: RunSeen) -> str:
    """The run's state as the server names it (its type when unnamed)."""
    return seen.state_name or seen.state_type


def _where(seen: RunSeen) -> str:
    """`` on worker <name>`` when the worker is known, else nothing."""
    return f" on worker {seen.worker}" if seen.worker else ""


def _error(entry: RepositoryEntry, flow_run_id: str, reason: str) -> RepositoryResult:
    return RepositoryResult(name=entry.label, source=entry.source, ref=entry.ref, status="error",
                            error=reason, exit_code=EXIT_INTERNAL, flow_run_id=flow_run_id)


def verdict(state: ScaleoutState) -> Verdict | None:
    """Done once every repository has a result and every run given up on was cancelled."""
    if any(r.result is None for r in state.repositories) or next_steps(state):
        return None
    return Verdict(reason="every repository has a result", converged=True)


def results(state: ScaleoutState) -> list[RepositoryResult]:
    """The repositories' results in file order (only once ``verdict`` is given)."""
    return [r.result for r in state.repositories if r.result is not None]

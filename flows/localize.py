"""The ``localize`` flow: the driver of the Localization loop (``equisa_core.localization.machine``).

It builds the machine's first state from the parameters, asks it for steps, runs each one with its
runner (``tasks.localization.runners``, over ``tasks.localization.steps`` and ``tasks.localization.inspections``: the
steps given together side by side, the inspections batched into few sandbox processes), feeds
what they saw back with ``record``, and stops on ``verdict``; it publishes the progress and the
artifacts. Every decision (what to screen, which node to inspect, when to stop) is the machine's.

The time budget (``max_seconds``): the driver sends the clock (``Clocked``) before each round of
steps and the machine stops once it is spent; no sandboxed run of the loop may outlast the budget
(its wall clock is at most ``max_seconds``), and every run ends by the budget's deadline
(``tasks.sandbox.contract.run_deadline``, or the repair's if sooner). A run cut there raises
``BudgetSpentError``: once the suite is traced the driver sends the spent clock and the machine
stops with the ranking as it stands; before, there is nothing to rank and the error ends the run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast
from uuid import UUID

from prefect import flow
from prefect.artifacts import create_progress_artifact, create_table_artifact, update_progress_artifact

from equisa_core.common.time_limits import budget_reading
from equisa_core.errors import BudgetSpentError
from equisa_core.localization.machine import (
    Clocked,
    ConfirmFix,
    Discover,
    Inspect,
    LocalizationObservation,
    LocalizationState,
    LocalizationStep,
    MarkFlaky,
    RecordCalls,
    Screened,
    ScreenMutants,
    Traced,
    initial_state,
    leaders,
    next_steps,
    record,
    report,
)
from equisa_core.localization.steps import LocalizationReport
from flows.discovery import discover
from tasks.discovery.suite import DiscoveryResult
from tasks.localization.runners import Collect, LocalizationSteps
from tasks.localization.steps import RecordedTests, print_records
from tasks.operations.progress_events import Note, emit
from tasks.operations.task_runners import FanOutTaskRunner
from tasks.run.parameters import LocalizeParameters
from tasks.sandbox.contract import deadline_passed, run_deadline
from tasks.storage.record import failures_recorded, record_finished_run

__all__ = ["LocalizationRun", "localize", "run_localization", "drive_localization"]

#: Functions the first answer names (``_Driver._announce_prior``).
FIRST_ANSWER_TOP = 3


@flow(name="localize", flow_run_name="localize {params.path}", log_prints=True,
      task_runner=FanOutTaskRunner())
def localize(params: LocalizeParameters) -> LocalizationReport:
    """Find the buggy function of a repository whose tests fail (an error that stops it is recorded too)."""
    with failures_recorded("localize", params.path, params.artifacts, params.db):
        found, report = run_localization(params)
    return record_finished_run("localize", report, str(found.prepared.repo), params.artifacts, params.db,
                               found.trace, calls=report.ledger.paid_calls)


def run_localization(params: LocalizeParameters) -> tuple[DiscoveryResult, LocalizationReport]:
    """Discovery, then the Localization loop; also returns the amplified suite (for Validation).
    Called inside a flow run (``localize``, ``repair``), whose task runner runs its tasks. The
    report's ``ledger`` holds the run's model calls (Discovery's, then the loop's)."""
    run = drive_localization(params)
    return run.found, run.report


@dataclass(frozen=True)
class LocalizationRun:
    """A finished run: its suite and report, and what the machine was fed (``initial`` then
    ``observations``, in order), from which ``machine.replay`` gives the same report."""

    found: DiscoveryResult
    report: LocalizationReport
    initial: LocalizationState
    observations: tuple[LocalizationObservation, ...]
    recorded: RecordedTests | None = None
    """The last recording's results (the candidates' calls in their tests), for Validation to reuse."""


def drive_localization(params: LocalizeParameters) -> LocalizationRun:
    """Run the Localization loop on ``params.path`` until the machine gives its verdict."""
    return _Driver(params).drive()


@dataclass
class _Driver:
    """One run: the machine's state, and its step runners (``tasks.localization.runners``)."""

    params: LocalizeParameters
    observations: list[LocalizationObservation] = field(default_factory=list)
    progress: UUID | None = None

    def __post_init__(self) -> None:
        if self.params.shard_timeout_s > self.params.max_seconds:  # no run outlasts the time budget
            self.params = self.params.model_copy(update={"shard_timeout_s": self.params.max_seconds})
        self.steps = LocalizationSteps(self.params, lambda: self.state, discover)
        self.state = initial_state(self.steps.settings())

    def drive(self) -> LocalizationRun:
        """Steps out, observations in, until the verdict."""
        initial = self.state
        try:
            with run_deadline(self.params.max_seconds - self.steps.elapsed()):
                while steps := next_steps(self.state):
                    self._record(self._clock())  # the time budget's reading
                    if not (steps := next_steps(self.state)):
                        break
                    try:
                        for collect in [self._start(step) for step in steps]:
                            self._record(collect())
                    except BudgetSpentError:
                        self.steps.wait_for_runs()
                        if self.state.suite is None:  # nothing traced: nothing to rank
                            raise
                        self._record(self._clock(spent=True))  # the machine stops on its ranking
                    except BaseException:
                        self.steps.wait_for_runs()  # none is left running when the run fails
                        raise
        finally:
            self.steps.discard_kept()  # trace shards kept for a screening that did not come
        if self.progress is not None:
            update_progress_artifact(self.progress, 100.0)
        final = report(self.state)
        _publish_ranking(final)
        assert self.steps.found is not None
        found = self.steps.found
        if self.state.stage == "screened":  # settled before Discovery, whose report says so
            found = found.model_copy(update={"report": final.discovery})
        recording = self.steps.recording
        return LocalizationRun(found=found, report=final, initial=initial,
                               observations=tuple(self.observations),
                               recorded=None if recording is None else recording.finished())

    def _clock(self, spent: bool = False) -> Clocked:
        """The budget's reading: the seconds elapsed, past the budget once the deadline passed
        (``spent``: a run was cut there)."""
        elapsed = round(self.steps.elapsed(), 3)
        return Clocked(elapsed_s=budget_reading(elapsed, self.params.max_seconds, spent or deadline_passed()))

    def _start(self, step: LocalizationStep) -> Collect:
        """Start ``step``'s runs; the function returned waits for them and says what they saw."""
        run = self.steps
        starts: dict[type, Callable[..., Collect]] = {
            Discover: run.start_discover, MarkFlaky: run.start_mark_flaky, ScreenMutants: run.start_screen,
            ConfirmFix: run.start_confirm, RecordCalls: run.start_record_calls, Inspect: run.start_inspect,
        }
        return starts[type(step)](step)

    def _record(self, observation: LocalizationObservation) -> None:
        before = self.state
        self.observations.append(observation)
        self.state = record(self.state, observation)
        rebased = isinstance(observation, Traced)
        print_records(self.state.history[0 if rebased else len(before.history):], before.iterations)
        if rebased and before.stage == "screening":
            self._announce_prior()
        if isinstance(observation, Screened) and self.state.screening_cost is not None:
            cut = self.state.screening_cost.note()  # what a partial screening left out
            if cut:
                emit(Note(text=cut[0].upper() + cut[1:]))
        if self.state.stage == "discovered" and self.progress is None:
            created = create_progress_artifact(0.0, key="localization-progress",
                                               description="Inspections done / iteration budget")
            self.progress = cast(UUID, created)  # called from a flow run's thread: not a coroutine
        if self.progress is not None and self.state.iterations > before.iterations:
            update_progress_artifact(self.progress,
                                     100.0 * self.state.iterations / self.params.max_inspections)  # percent

    def _announce_prior(self) -> None:
        """The first answer, as soon as the trace and its flaky tests are in (``MarkFlaky``: normally its
        shards found them, and nothing is left to wait for): the prior's best
        functions, a line above the command's spinner, while the screening and the loop go on: the
        answer spectrum-based localization would give (measured: 4-5.5 s into a 6-10 s run).
        Only the screening path (screening before Discovery) announces it."""
        best = leaders(self.state, FIRST_ANSWER_TOP)
        if best:
            listed = ", ".join(f"{fqn} ({self.state.confidences[fqn]:.2f})" for fqn in best)
            cost = self.state.screening_cost
            budget = cost.budget_s if cost is not None else None
            within = f" (the screening's budget: {budget:.1f}s)" if budget else ""
            emit(Note(text=f"First answer, from the trace and the prior alone: {listed}; "
                           f"now checking it{within}"))


def _publish_ranking(report: LocalizationReport) -> None:
    """The Prefect table artifact of the top 10."""
    create_table_artifact(
        table=[r.model_dump() for r in report.ranking[:10]], key="localization-ranking",
        description=f"{report.mode} localization: {'converged' if report.converged else 'not converged'}"
                    f" ({report.stopped_because})",
    )

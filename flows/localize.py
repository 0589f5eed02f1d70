"""The ``localize`` flow: the driver of the Localization loop (``equisa_core.localization.machine``).

It builds the machine's first state from the parameters, asks it for steps, runs each one
(``tasks.localization_steps``, ``tasks.inspections``: the steps given together side by side, the
inspections batched into few sandbox processes), feeds what they saw back with ``record``, and
stops on ``verdict``; it publishes the progress and the artifacts. Every decision (what to screen,
which node to inspect, when to stop) is the machine's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast
from uuid import UUID

from prefect import flow
from prefect.artifacts import create_progress_artifact, create_table_artifact, update_progress_artifact

from equisa_core.common.models import RecordedCall
from equisa_core.localization.machine import (
    ConfirmFix,
    Discover,
    Inspect,
    LocalizationObservation,
    LocalizationState,
    LocalizationStep,
    MarkFlaky,
    RecordCalls,
    ScreenMutants,
    Traced,
    ValuesCompared,
    initial_state,
    leaders,
    next_steps,
    record,
    report,
)
from equisa_core.localization.steps import LocalizationReport
from flows.discovery import discovery
from tasks.discovery_suite import DiscoveryResult, as_traced, trace_only
from tasks.git_changes import changed_lines
from tasks.inspections import inspect_step
from tasks.llm import choose_llm_mode
from tasks.localization_steps import (
    Recording,
    Screening,
    confirm_step,
    print_records,
    screening_evidence,
    submit_recording,
    submit_screening,
    suite_of,
    suite_problems,
    value_findings,
)
from tasks.parameters import DiscoveryParameters, LocalizeParameters, settings_for
from tasks.prepared_run import submit_flaky_rerun, with_flaky
from tasks.record import record_finished_run
from tasks.run_tests import report_progress
from tasks.task_runners import FanOutTaskRunner

__all__ = ["LocalizationRun", "localize", "run_localization", "drive_localization"]

#: Functions the first answer names (``_Driver._announce_prior``).
FIRST_ANSWER_TOP = 3


@flow(name="localize", flow_run_name="localize {params.path}", log_prints=True,
      task_runner=FanOutTaskRunner())
def localize(params: LocalizeParameters) -> LocalizationReport:
    """Find the buggy function of a repository whose tests fail."""
    found, report = run_localization(params)
    return record_finished_run("localize", report, str(found.prepared.repo), params.artifacts, params.db,
                               found.trace)


def run_localization(params: LocalizeParameters) -> tuple[DiscoveryResult, LocalizationReport]:
    """Discovery, then the Localization loop; also returns the amplified suite (for Validation).
    Called inside a flow run (``localize``, ``repair``), whose task runner runs its tasks."""
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


def drive_localization(params: LocalizeParameters) -> LocalizationRun:
    """Run the Localization loop on ``params.path`` until the machine gives its verdict."""
    return _Driver(params).drive()


@dataclass
class _Driver:
    """One run: the machine's state, and the runs under way its steps started."""

    params: LocalizeParameters
    started: float = field(default_factory=time.monotonic)
    observations: list[LocalizationObservation] = field(default_factory=list)
    found: DiscoveryResult | None = None
    screening: Screening | None = None
    recording: Recording | None = None
    calls: dict[str, list[RecordedCall]] = field(default_factory=dict)
    progress: UUID | None = None

    def __post_init__(self) -> None:
        params = self.params
        shared = set(DiscoveryParameters.model_fields)
        self.discovery_params = DiscoveryParameters(**params.model_dump(include=shared))
        self.plain_params = self.discovery_params.model_copy(update={"discovery": False})
        self.use_llm, self.config, self.llm_problems = choose_llm_mode(params.llm)
        self.changed = changed_lines(params.path, params.since) if params.since else None
        batching = not (self.use_llm and self.config is not None) and params.inspection_batch > 1
        self.state = initial_state(settings_for(params, self.use_llm, batching))

    def drive(self) -> LocalizationRun:
        """Steps out, observations in, until the verdict."""
        initial = self.state
        while steps := next_steps(self.state):
            try:
                for collect in [self._start(step) for step in steps]:
                    self._record(collect())
            except BaseException:
                self._wait_for_runs()  # none is left running when the run fails
                raise
        if self.progress is not None:
            update_progress_artifact(self.progress, 100.0)
        final = report(self.state)
        _publish_ranking(final)
        assert self.found is not None
        found = self.found
        if self.state.stage == "screened":  # settled before Discovery, whose report says so
            found = found.model_copy(update={"report": final.discovery})
        return LocalizationRun(found=found, report=final, initial=initial,
                               observations=tuple(self.observations))

    def _start(self, step: LocalizationStep) -> Callable[[], LocalizationObservation]:
        """Start ``step``'s runs; the function returned waits for them and says what they saw."""
        starts: dict[type, Callable[..., Callable[[], LocalizationObservation]]] = {
            Discover: self._discover, MarkFlaky: self._mark_flaky, ScreenMutants: self._screen,
            ConfirmFix: self._confirm, RecordCalls: self._record_calls, Inspect: self._inspect,
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
        if self.state.stage == "discovered" and self.progress is None:
            created = create_progress_artifact(0.0, key="localization-progress",
                                               description="Inspections done / iteration budget")
            self.progress = cast(UUID, created)  # called from a flow run's thread: not a coroutine
        if self.progress is not None and self.state.iterations > before.iterations:
            update_progress_artifact(self.progress,
                                     100.0 * self.state.iterations / self.params.max_iterations)  # percent

    def _wait_for_runs(self) -> None:
        for running in (self.screening, self.recording):
            if running is not None:
                running.wait()

    def _elapsed(self) -> float:
        return time.monotonic() - self.started

    def _discover(self, step: Discover) -> Callable[[], LocalizationObservation]:
        def traced() -> LocalizationObservation:
            if step.trace_only:  # the flaky re-run comes apart (``MarkFlaky``)
                self.found = trace_only(self.plain_params.model_copy(update={"rerun_failures": False}))
                return Traced(suite=suite_of(self.found, self.changed, self.found.problems))
            if step.not_needed is not None and self.found is not None:
                self.found = self.found.model_copy(update={"report": self.found.report.model_copy(
                    update={"enabled": True, "stopped_because": step.not_needed})})
            else:
                self.found = discovery(self.discovery_params)
            problems = suite_problems(self.found, self.llm_problems)
            return Traced(suite=suite_of(self.found, self.changed, problems))
        return traced

    def _mark_flaky(self, step: MarkFlaky) -> Callable[[], LocalizationObservation]:
        assert self.found is not None
        rerun = submit_flaky_rerun(self.found.prepared, self.plain_params, self.found.trace) \
            if self.plain_params.rerun_failures else None

        def marked() -> LocalizationObservation:
            assert self.found is not None and self.state.suite is not None
            trace = with_flaky(self.found.trace, rerun)
            if trace.flaky == self.found.trace.flaky:  # the suite and its priors are as they were
                return Traced(suite=self.state.suite)
            self.found = as_traced(self.found, trace, self.plain_params)
            return Traced(suite=suite_of(self.found, self.changed, self.found.problems))
        return marked

    def _screen(self, step: ScreenMutants) -> Callable[[], LocalizationObservation]:
        assert self.found is not None and self.state.suite is not None
        screening = submit_screening(self.found, self.params, step.functions, self.state.suite.nodes)
        self.screening = screening

        def screened() -> LocalizationObservation:
            assert self.found is not None
            return screening_evidence(self.found, screening)
        return screened

    def _confirm(self, step: ConfirmFix) -> Callable[[], LocalizationObservation]:
        started = time.monotonic()

        def confirmed() -> LocalizationObservation:
            assert self.found is not None and self.state.suite is not None
            return confirm_step(step, self.state.suite, self.found, self.params, self.screening, started,
                                self._elapsed)
        return confirmed

    def _record_calls(self, step: RecordCalls) -> Callable[[], LocalizationObservation]:
        assert self.found is not None
        recording = submit_recording(self.found, self.params, step.functions)
        self.recording = recording

        def compared() -> LocalizationObservation:
            assert self.found is not None
            self.calls = recording.calls()
            return ValuesCompared(findings=value_findings(self.found, recording))
        return compared

    def _inspect(self, step: Inspect) -> Callable[[], LocalizationObservation]:
        def inspected() -> LocalizationObservation:
            assert self.found is not None
            return inspect_step(step, self.state, self.found, self.params, self.calls, self.use_llm,
                                self.config, self._elapsed)
        return inspected

    def _announce_prior(self) -> None:
        """The first answer, as soon as the trace (and the flaky re-run) are in: the prior's best
        functions, a line above the command's spinner, while the screening and the loop go on: the
        answer spectrum-based localization would give (measured: 4-5.5 s into a 6-10 s run).
        Only the screening path (screening before Discovery) announces it."""
        best = leaders(self.state, FIRST_ANSWER_TOP)
        if best:
            listed = ", ".join(f"{fqn} ({self.state.confidences[fqn]:.2f})" for fqn in best)
            report_progress(self.params.progress_key, {
                "kind": "note",
                "text": f"First answer, from the trace and the prior alone: {listed}; now checking it"})


def _publish_ranking(report: LocalizationReport) -> None:
    """The Prefect table artifact of the top 10."""
    create_table_artifact(
        table=[r.model_dump() for r in report.ranking[:10]], key="localization-ranking",
        description=f"{report.mode} localization: {'converged' if report.converged else 'not converged'}"
                    f" ({report.stopped_because})",
    )

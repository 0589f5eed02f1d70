"""The step runners of one Localization run (``flows/localize.py`` drives it): what a run's steps
share (its parameters, the suite Discovery made, the screening and recording under way, the
recorded calls) and, for each kind of step the machine gives, how to start it.

Each ``start_*`` method starts a step's runs (``tasks.localization.steps``, ``tasks.localization.inspections``)
and returns a function that waits for them and says what they saw, as the machine's observation;
the driver calls it when it records that step. No decision of the loop is made here.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from equisa_core.common.models import RecordedCall
from equisa_core.localization.machine import (
    ConfirmFix,
    Discover,
    Inspect,
    LocalizationObservation,
    LocalizationSettings,
    LocalizationState,
    MarkFlaky,
    RecordCalls,
    ScreenMutants,
    Traced,
    ValuesCompared,
)
from tasks.discovery.suite import DiscoveryResult, as_traced, stopped_at_once, trace_only
from tasks.llm import choose_llm_mode
from tasks.localization.inspections import inspect_step
from tasks.localization.steps import (
    Recording,
    Screening,
    confirm_step,
    screening_evidence,
    submit_recording,
    submit_screening,
    suite_of,
    suite_problems,
    value_findings,
)
from tasks.operations.task_runners import runner_choice
from tasks.run.git_changes import changed_lines
from tasks.run.parameters import DiscoveryParameters, LocalizeParameters, settings_for
from tasks.run.prepared_run import submit_flaky_rerun, with_flaky
from tasks.sandbox.early_runs import take_head_start
from tasks.sandbox.served_runs import discard

__all__ = ["Collect", "LocalizationSteps"]

#: What a started step gives back: wait for its runs, and say what they saw.
Collect = Callable[[], LocalizationObservation]


@dataclass
class LocalizationSteps:
    """One run's step runners and what they share.

    ``current`` gives the machine's state as the driver holds it when a step is collected (steps
    given together are all started, then collected and recorded one after the other);
    ``discover_suite`` runs Discovery (``flows.discovery.discover``, which tasks cannot import) on
    the suite as traced so far, or traces it first when given None.
    """

    params: LocalizeParameters
    current: Callable[[], LocalizationState]
    discover_suite: Callable[[DiscoveryParameters, DiscoveryResult | None], DiscoveryResult]
    started: float = field(default_factory=time.monotonic)
    found: DiscoveryResult | None = None
    screening: Screening | None = None
    recording: Recording | None = None
    calls: dict[str, list[RecordedCall]] = field(default_factory=dict)
    owner: str = field(default_factory=lambda: uuid.uuid4().hex)  # of the trace shards kept to serve mutants

    def __post_init__(self) -> None:
        params = self.params
        shared = set(DiscoveryParameters.model_fields)
        self.discovery_params = DiscoveryParameters(**params.model_dump(include=shared))
        self.plain_params = self.discovery_params.model_copy(update={"discovery": False})
        self.use_llm, self.config, self.llm_problems = choose_llm_mode(params)
        self.changed = changed_lines(params.path, params.since) if params.since else None

    def settings(self) -> LocalizationSettings:
        """The machine's settings for this run (inspections are batched unless the model inspects)."""
        batching = not (self.use_llm and self.config is not None) and self.params.inspection_batch > 1
        return settings_for(self.params, self.use_llm, batching)

    def wait_for_runs(self) -> None:
        """Wait for the screening and recording under way (none is left running when a run fails)."""
        for running in (self.screening, self.recording):
            if running is not None:
                running.wait()

    def elapsed(self) -> float:
        """Seconds since the run started."""
        return time.monotonic() - self.started

    def start_discover(self, step: Discover) -> Collect:
        """Trace the suite (``trace_only``), or run Discovery, or say why it was not needed."""
        def traced() -> LocalizationObservation:
            if step.trace_only:  # the shards re-run their failing tests; the rest comes apart (``MarkFlaky``)
                self.found = trace_only(self.plain_params, rerun_later=True, serve_owner=self.serving_owner())
                return Traced(suite=suite_of(self.found, self.changed, self.found.problems),
                              elapsed_s=self.elapsed())
            if step.not_needed is not None and self.found is not None:
                self.found = self.found.model_copy(update={"report": self.found.report.model_copy(
                    update={"enabled": True, "stopped_because": step.not_needed})})
            else:  # when nothing is left to split, Discovery is not set up
                stopped = stopped_at_once(self.discovery_params, self.found) if self.found else None
                self.found = stopped or self.discover_suite(self.discovery_params, self.found)
            problems = suite_problems(self.found, self.llm_problems)
            return Traced(suite=suite_of(self.found, self.changed, problems), elapsed_s=self.elapsed())

        def counted() -> LocalizationObservation:
            observed = traced()
            head_start = take_head_start(self.started)  # the trace's runs the command line started early
            if head_start:  # the run's clock counts the time they ran before it started
                self.started -= head_start
                observed = observed.model_copy(update={"elapsed_s": self.elapsed()})
            return observed
        return counted

    def start_mark_flaky(self, step: MarkFlaky) -> Collect:
        """Re-run the failing tests the trace's shards could not re-run apart themselves (normally
        none: nothing runs); a changed set of flaky tests re-scores the suite."""
        assert self.found is not None
        rerun = submit_flaky_rerun(self.found.prepared, self.plain_params, self.found.trace) \
            if self.plain_params.rerun_failures else None

        def marked() -> LocalizationObservation:
            state = self.current()
            assert self.found is not None and state.suite is not None
            trace = with_flaky(self.found.trace, rerun)
            if trace.flaky == self.found.trace.flaky:  # the suite and its priors are as they were
                return Traced(suite=state.suite, elapsed_s=self.elapsed())
            self.found = as_traced(self.found, trace, self.plain_params)
            return Traced(suite=suite_of(self.found, self.changed, self.found.problems),
                          elapsed_s=self.elapsed())
        return marked

    def start_screen(self, step: ScreenMutants) -> Collect:
        """Screen the mutants of ``step.functions``."""
        suite = self.current().suite
        assert self.found is not None and suite is not None
        screening = submit_screening(self.found, self.params, step.functions, suite.nodes, step.budget_s)
        self.screening = screening

        def screened() -> LocalizationObservation:
            assert self.found is not None
            try:
                return screening_evidence(self.found, screening)
            finally:
                self.discard_kept()  # the shards the screening did not claim (fewer functions, a cached run)
        return screened

    def serving_owner(self) -> str | None:
        """The owner the trace's shards are kept for, to serve the screening that follows the trace
        (``tasks.sandbox.served_runs``); None when none will, or its tasks do not run in this process."""
        if not self.settings().screen_top or runner_choice().kind != "threads":
            return None
        return self.owner

    def discard_kept(self) -> None:
        """End the trace shards kept to serve mutants that no run claimed."""
        discard(self.owner)

    def start_confirm(self, step: ConfirmFix) -> Collect:
        """Confirm a screened fix on the whole suite."""
        started = time.monotonic()

        def confirmed() -> LocalizationObservation:
            suite = self.current().suite
            assert self.found is not None and suite is not None
            return confirm_step(step, suite, self.found, self.params, self.screening, started, self.elapsed)
        return confirmed

    def start_record_calls(self, step: RecordCalls) -> Collect:
        """Record the calls of ``step.functions`` and compare their values."""
        assert self.found is not None
        recording = submit_recording(self.found, self.params, step.functions)
        self.recording = recording

        def compared() -> LocalizationObservation:
            assert self.found is not None
            self.calls = recording.calls()
            return ValuesCompared(findings=value_findings(self.found, recording))
        return compared

    def start_inspect(self, step: Inspect) -> Collect:
        """Inspect the step's nodes (``tasks.localization.inspections.inspect_step``)."""
        def inspected() -> LocalizationObservation:
            assert self.found is not None
            return inspect_step(step, self.current(), self.found, self.params, self.calls, self.use_llm,
                                self.config, self.elapsed)
        return inspected

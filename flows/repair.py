"""The ``repair`` flow: Discovery, Localization, then Validation of patch candidates (seed 000 §7).

A driver: the decisions (what to localize, which generator to ask, when to stop) are the state
machine's in ``equisa_core.repair.machine``. The graph of seed 000 Appendix A with its
placeholders made real:
``need_more_tests`` is ``equisa_core.discovery.rules.groups_to_split``; ``has_no_regressions`` is the
Validation verdict. Candidates come from the generators in this order:

- LLM mode: the model's minimal fix of the localized function (seed prompt), re-asked with each
  rejection's reason (``max_llm_fixes``); then the multi-retrieval patcher (seed 004,
  ``tasks/repair/patcher.py``: it greps and reads code, proposes ``<patches>``, hears each verdict);
  then the deterministic search;
- deterministic search: the one-edit mutants (``equisa_core.mutation.mutants``) of the top
  ``repair_top`` functions, by confidence; each function's mutants are screened together against
  its tests in one sandboxed process (the screens of all functions run in parallel), and those
  that fix its failing tests without breaking its passing ones are validated in full, smallest
  edit first. A fix the Localization loop already confirmed is tried first.

The first ``SOUND`` candidate is accepted. When none is and some were rejected for regressions,
the run goes back to Discovery (seed 000 §7, bounded by ``max_relocalizations``): a bigger test
budget, a fresh localization, and the functions whose fixes regressed are not patched again.

The model calls of every step and the problems met travel on the machine's observations; the
machine's ledger gives the report's cost and the history's rows of the run's calls.

The time budget (``max_seconds``): the driver sends the machine its clock (``Clocked``) before each
step, and the machine stops when it is spent. The driver only bounds the step in flight by the time
left: the localization gets it as its own budget and as every sandboxed run's wall clock, the fix
search screens for at most that long, and a validation's runs are cut at the deadline. One deadline
(``tasks.sandbox.contract.run_deadline``, ``max_seconds`` from the start) holds for every sandboxed run of the
repair, however many a step makes in a row: a run cut there raises ``BudgetSpentError``, not
cached, and the driver sends the spent clock; the machine stops with what it has (the ranking, the
verdicts made so far; the candidate whose validation was cut is dropped). Only when the budget
ran out before the first localization had traced the suite does the error end the run (exit 26).
"""

from __future__ import annotations

import math
import time

from prefect import flow
from prefect.artifacts import create_markdown_artifact, update_progress_artifact

from equisa_core.common.time_limits import budget_reading
from equisa_core.errors import BudgetSpentError
from equisa_core.repair import machine
from equisa_core.repair.report import RepairReport
from equisa_core.validation.candidates import PatchCandidate
from flows.localize import drive_localization
from flows.validation import check_candidate, settle
from tasks.llm import LLMConfig, choose_llm_mode
from tasks.operations.progress_events import Stage, emit
from tasks.operations.task_runners import FanOutTaskRunner
from tasks.repair.generators import RepairRound, find_targets
from tasks.repair.report import repair_report
from tasks.run.parameters import LocalizeParameters, RepairParameters
from tasks.sandbox.contract import deadline_passed, run_deadline
from tasks.storage.record import failures_recorded, record_finished_run
from tasks.validation.checks import ValidationContext, validation_context

__all__ = ["repair"]


@flow(name="repair", flow_run_name="repair {params.path}", log_prints=True,
      task_runner=FanOutTaskRunner())
def repair(params: RepairParameters) -> RepairReport:
    """Find the bug of a repository whose tests fail and a verified patch for it.

    A driver: ``equisa_core.repair.machine`` decides what to localize, generate and validate. An
    error that stops it is recorded as a failed run.
    """
    with failures_recorded("repair", params.path, params.artifacts, params.db):
        report, round_, state = _drive(params)
    return record_finished_run("repair", report, str(round_.found.prepared.repo), params.artifacts, params.db,
                               round_.found.trace, calls=state.ledger.paid_calls)


def _drive(params: RepairParameters) -> tuple[RepairReport, RepairRound, machine.RepairState]:
    """The repair loop, from the first localization to the report (not recorded yet), every
    sandboxed run ending by the time budget's deadline."""
    with run_deadline(params.max_seconds):
        return _drive_within(params, time.monotonic())


def _drive_within(params: RepairParameters, started: float,
                  ) -> tuple[RepairReport, RepairRound, machine.RepairState]:
    """``_drive`` under the deadline, ``started`` its start."""

    def clock(spent: bool = False) -> machine.Clocked:
        """The budget's reading: past the budget once the deadline passed (``spent``: a run was cut)."""
        return machine.Clocked(elapsed_s=budget_reading(time.monotonic() - started, params.max_seconds,
                                                        spent or deadline_passed()))

    use_llm, config, problems = choose_llm_mode(params)
    llm = config if use_llm else None
    state = machine.initial_state(machine.RepairBudget(
        repair_top=params.repair_top, max_validations=params.max_validations,
        max_relocalizations=params.max_relocalizations,
        llm_fixes=bool(llm is not None and params.max_llm_fixes),
        patcher=bool(llm is not None and params.patcher_evaluations), max_seconds=params.max_seconds))
    state = record(state, machine.Noted(problems=tuple(problems)))
    round_: RepairRound | None = None
    while steps := machine.next_steps(state):
        if round_ is not None:  # the clock: the machine stops once the budget is spent
            state = record(state, clock())
            if not (steps := machine.next_steps(state)):
                break
        step = steps[0]
        left = machine.seconds_left(state) if round_ is not None else params.max_seconds
        if isinstance(step, machine.Localize):
            if round_ is not None:
                settle(round_.ctx)
            try:
                round_ = _localized(_bounded(params, left), step, llm)
            except BudgetSpentError:
                if round_ is None:  # the suite was not traced: nothing to report
                    raise
                state = record(state, clock(spent=True))  # the last round's verdicts stand
                continue
            state = record(state, _localized_observation(round_))
            continue
        assert round_ is not None, "a step came before the first localization"
        _cut_at(round_, left)
        rounds_done, relocalizations = state.rounds_done, state.relocalizations
        try:
            observations = _observe(step, state, round_, _bounded(params, left), llm)
        except BudgetSpentError:  # a run of the step was cut at the deadline: what it saw is dropped
            observations = [clock(spent=True)]
        for observation in observations:
            state = record(state, observation)
        if state.rounds_done > rounds_done:  # the round is over
            update_progress_artifact(round_.progress, 100.0)
        if state.relocalizations > relocalizations:
            print(f"regressions: back to Discovery (round {state.relocalizations}); "
                  f"not patching {', '.join(state.excluded)} again")
    assert round_ is not None, "the repair loop stopped before localizing"
    settle(round_.ctx)
    report = repair_report(round_.found, round_.localization, state, use_llm)
    _publish(report)
    return report, round_, state


def _bounded(params: RepairParameters, left: float) -> RepairParameters:
    """``params`` for a step that may take ``left`` seconds: the localization's own budget, each
    sandboxed run's wall clock and the fix search's screening (whole seconds, at least one)."""
    seconds = float(max(1, math.ceil(left)))
    return params.model_copy(update={
        "max_seconds": min(params.max_seconds, seconds),
        "shard_timeout_s": min(params.shard_timeout_s, seconds),
        "search_seconds": min(params.search_seconds, seconds)})


def _cut_at(round_: RepairRound, left: float) -> None:
    """The round's sandboxed runs (validations, the search's screens) cut ``left`` seconds from now."""
    seconds = float(max(1, math.ceil(left)))
    prepared = round_.found.prepared
    if prepared.base.limits.wall_clock_s <= seconds:
        return
    limits = prepared.base.limits.model_copy(update={"wall_clock_s": seconds})
    prepared = prepared.model_copy(update={"base": prepared.base.model_copy(update={"limits": limits})})
    round_.found = round_.found.model_copy(update={"prepared": prepared})
    round_.ctx.found = round_.found


def record(state: machine.RepairState, observation: machine.RepairObservation) -> machine.RepairState:
    """``machine.record``: the one place the driver feeds the repair machine (tests watch it here)."""
    return machine.record(state, observation)


def _localized_observation(round_: RepairRound) -> machine.Localized:
    """What the round's localization observed: the patchable ranking and the model calls made."""
    localization = round_.localization
    return machine.Localized(
        patchable=machine.patchable_functions([r.fqn for r in localization.ranking], round_.ctx.nodes,
                                              round_.found.trace.edges),
        calls=localization.ledger.calls)


def _localized(params: RepairParameters, step: machine.Localize, config: LLMConfig | None) -> RepairRound:
    """Discovery and Localization with the step's extra test budget."""
    current: LocalizeParameters = params
    if step.extra_rounds or step.extra_tests:
        current = params.model_copy(update={
            "discovery_rounds": params.discovery_rounds + step.extra_rounds,
            "max_generated_tests": params.max_generated_tests + step.extra_tests,
        })
    run = drive_localization(current)
    ctx = validation_context(run.found, run.report, params, config, recorded=run.recorded)
    return RepairRound(run.found, run.report, ctx)


def _observe(step: machine.RepairStep, state: machine.RepairState, round_: RepairRound,
             params: RepairParameters, config: LLMConfig | None) -> list[machine.RepairObservation]:
    """Run one step (find the targets, ask a generator, validate a candidate): what it observed."""
    match step:
        case machine.FindTargets():
            return [find_targets(step, round_.found)]
        case machine.Generate():
            generated = round_.generators.get(step.generator)
            heard = None if generated is None else machine.last_verdict(state, step.generator)
            if generated is None:
                generated = round_.generator(step, params, config, _validating)
                round_.generators[step.generator] = generated
            try:
                return [generated.send(heard)]  # sent: the verdict on its previous candidate, if any
            except StopIteration:
                return [machine.Exhausted(generator=step.generator)]
        case machine.Validate():
            candidate = step.candidate
            # A verdict its generator made is only recorded: its calls and problems came with the candidate.
            validated = (machine.Validated(evaluation=step.evaluation) if step.evaluation is not None
                         else _validating(candidate, round_.ctx))
            round_.validated += 1
            update_progress_artifact(round_.progress, 100.0 * round_.validated / params.max_validations)
            print(f"{candidate.id}: {validated.evaluation.status.value} ({candidate.description})")
            return [validated]
    raise AssertionError(f"unexpected repair step {step!r}")


def _validating(candidate: PatchCandidate, ctx: ValidationContext) -> machine.Validated:
    """``check_candidate``, first saying which candidate it validates (the spinner's stage line)."""
    emit(Stage(text=f"validating {candidate.id} ({candidate.description})"))
    return check_candidate(candidate, ctx)


def _publish(report: RepairReport) -> None:
    """The Prefect markdown artifact of the patch."""
    status, target, diff = report.status, report.target, report.diff
    create_markdown_artifact(
        key="repair-patch",
        markdown=f"**{status}** — {target or 'no target'}\n\n```diff\n{diff or '(no patch)'}\n```\n",
        description=f"repair: {status}",
    )

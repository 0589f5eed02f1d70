"""The Localization loop as a pure state machine (the shape of ``equisa_core.common.loop``).

Every decision of a localization run lives here; ``flows/localize.py`` only runs the steps:

1. ``Discover``: the suite's trace (only the trace first when mutants are screened before
   Discovery, ``screen_first``), then its priors (a ``Traced`` observation). ``MarkFlaky``: the
   failing tests re-run apart (each shard of the trace re-runs its own; this re-runs those it could
   not), whose flaky ones change the priors (``Traced`` again).
2. ``ScreenMutants``: the mutants of the most likely functions worth it (calibrated rule), tried
   together, most likely first, within a budget of ``settings.screen_cost_ratio`` times the trace's
   seconds (``equisa_core.localization.screening_cost``: the functions it leaves no time for are
   left out, a partial screening); what they showed is fix evidence (``Screened``), counted again on every new suite.
   Once it is in (and a fix it found confirmed or not), an answer decisive by the calibrated margin
   (``settings.stop_margin``, ``equisa_core.localization.stop_margin``) ends the run there.
3. ``ConfirmFix``: a fix a function's mutants found, run on the whole suite (``Inspected``). Before
   Discovery, a confirmation that settles the run ends it; one that makes its function lead skips
   Discovery (``Discover.not_needed``).
4. ``RecordCalls``: the passing executions of the leading functions, recorded for the inspections'
   invariants and compared with the failing ones (``ValuesCompared``).
5. ``Inspect``: the most confident node still worth an inspection (and, in batches, the next ones
   the loop would select, run ahead and counted when their turn comes), until one node reaches
   ``CONFIDENCE_THRESHOLD``, inspections stop bringing news, or a budget is spent.

``verdict`` says why the run stopped (the report's ``stopped_because``) and ``report`` builds the
``LocalizationReport`` from a state. No I/O, no clock: the driver passes elapsed seconds in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Literal

from pydantic import Field

from equisa_core.common.cost import CostLedger, LLMCall
from equisa_core.common.loop import Frozen, Verdict
from equisa_core.common.models import Node
from equisa_core.common.options import EndpointOptions, LocalizationOptions, cost_cap, default_of
from equisa_core.common.sandbox_policy import SandboxIsolation
from equisa_core.discovery.interface import DiscoveryReport
from equisa_core.environment import SuiteEnvironment
from equisa_core.errors import BUDGET_SPENT
from equisa_core.localization.bayes import (
    CONFIDENCE_THRESHOLD,
    Outcome,
    initial_confidence,
    is_converged,
    update_with_likelihoods,
)
from equisa_core.localization.calibrated_likelihoods import (
    LikelihoodTable,
    TableName,
    table_named,
    worth_inspecting,
    worth_screening,
)
from equisa_core.localization.fix_evidence import FixEvidence
from equisa_core.localization.prior import (
    DEFAULT_WEIGHTS,
    NodeSignals,
    prior_scores,
    value_likelihoods,
    with_values,
)
from equisa_core.localization.screening_cost import ScreeningCost, screening_estimate
from equisa_core.localization.selection import is_test_file, is_valid_node, select_node
from equisa_core.localization.signals import Signals
from equisa_core.localization.steps import (
    FIRST_ANSWER_KEPT,
    InspectionRecord,
    LocalizationReport,
    PriorEvidence,
    RankedNode,
    TestCounts,
    apply_observation,
    rank,
)
from equisa_core.localization.stop_margin import is_decisive, leader_margin
from equisa_core.localization.value_evidence import ValueFinding

__all__ = [
    "SCREENING", "VALUE_COMPARISON", "FIX_CONFIRMATION", "MAX_INSPECTIONS_PER_NODE",
    "Evidence", "InspectionResult", "Suite", "LocalizationSettings", "LocalizationState",
    "Discover", "MarkFlaky", "ScreenMutants", "ConfirmFix", "RecordCalls", "Inspect", "LocalizationStep",
    "Traced", "Screened", "Inspected", "ValuesCompared", "Clocked", "LocalizationObservation",
    "initial_state", "next_steps", "record", "verdict", "report", "leaders", "run_ledger",
]

#: The strategy of the history records that mutant screening adds.
SCREENING = "mutant-screening"
#: The strategy of the history records that the value comparison adds.
VALUE_COMPARISON = "value-comparison"
#: The strategy of an inspection that ran a fix through the whole suite.
FIX_CONFIRMATION = "fix-confirmation"

#: Seed 002 §5.2 keeps picking the most confident node, so a node whose own assertion failed is
#: inspected again and the evidence counted again, which is how the seed reaches 0.9; any other
#: outcome would only repeat itself (runs and answers are cached), so the node is then done.
MAX_INSPECTIONS_PER_NODE = 3

#: Evidence that counts as news for the stall rule (``max_stalled_inspections``).
_NEWS = (FixEvidence.FIX_FOUND, FixEvidence.PARTIAL_FIX_FOUND, FixEvidence.FIX_CONFIRMED)



# --- what the driver brings in ------------------------------------------------------------------


class InspectionResult(Frozen):
    """What one inspection (or fix confirmation) saw, before the Bayesian update."""

    strategy: str
    invariants: int
    tests_run: tuple[str, ...]
    signals: Signals
    decision: str | None
    decision_by: str
    reasoning: str
    calls: tuple[LLMCall, ...] = Field((), description="The model calls it made, cached ones included.")
    mutants_tried: int = 0
    fix_evidence: FixEvidence | None = None
    fix: str | None = None
    fix_source: str | None = None
    batch: int = 1


class Evidence(Frozen):
    """Fix evidence gathered outside the loop's inspections (mutant screening, a confirmation
    before Discovery), counted again on whichever priors the loop starts from."""

    target: str
    strategy: str
    tests_run: tuple[str, ...]
    reflection_by: str
    reasoning: str
    seconds: float
    mutants_tried: int = 0
    fix_evidence: FixEvidence
    fix: str | None = None
    fix_source: str | None = None


class Suite(Frozen):
    """A traced suite as the loop needs it: its functions, their scores and prior signals, and what
    the report says about it."""

    nodes: dict[str, Node]
    suspiciousness: dict[str, float] = Field(description="Tarantula scores.")
    signals: dict[str, NodeSignals] = Field(description="The prior's signals (localization.prior).")
    ambiguity_groups: tuple[tuple[str, ...], ...] = ()
    tests: TestCounts
    discovery: DiscoveryReport | None = None
    sandbox: SandboxIsolation | None = None
    environment: SuiteEnvironment | None = None
    problems: tuple[str, ...] = Field((), description="What went wrong while it was traced.")
    ledger: CostLedger = Field(default_factory=CostLedger, description="Discovery's model calls.")
    failing_durations: dict[str, tuple[float, ...]] = Field(
        default_factory=dict, description="Per function, the traced durations of the failing tests that "
        "run it (what its mutants are tried on): the screening's estimated cost.")


class LocalizationSettings(Frozen):
    """The decision parameters of one run."""

    mode: Literal["llm", "deterministic"] = "deterministic"
    likelihoods: TableName = "fitted"
    min_expected_shift: float = Field(0.0, ge=0, description="The calibrated stopping rule; 0: off.")
    mutants: bool = Field(True, description="Whether inspections (or screening) run mutants.")
    screen_top: int = Field(0, ge=0, description="Functions whose mutants are screened; 0: no screening.")
    screen_first: bool = Field(False, description="Screen on the suite as traced, before Discovery.")
    stop_margin: float | None = Field(
        None, ge=1, description="With ``screen_first``: stop once the screening's evidence is in when the "
        "leader's confidence is at least this many times the runner-up's; None: never.")
    screen_cost_ratio: float | None = Field(
        None, gt=0, description="With ``screen_first``: screen only when its estimated seconds are at most "
        "this many times the seconds the trace took, else stop with the trace's answer "
        "(``equisa_core.localization.screening_cost``); None: always screen.")
    screen_processes: int = Field(1, ge=1, description="The processes the screening runs in (its estimate).")
    mutants_per_function: int = Field(default_of(LocalizationOptions, "mutants_per_inspection"), ge=1,
                                      description="A screened function's mutants, at most (the estimate).")
    # The budgets default to the options' defaults (one home: ``equisa_core.common.options``); the
    # switches above default to off, so a machine made by hand does only what it is told to.
    max_iterations: int = Field(default_of(LocalizationOptions, "max_inspections"), ge=0)
    max_cost_usd: float | None = Field(cost_cap(default_of(EndpointOptions, "max_cost_usd")), ge=0,
                                       description="LLM spend before the loop stops; None: no cap.")
    max_seconds: float = Field(default_of(LocalizationOptions, "max_seconds"), gt=0)
    max_stalled_inspections: int = Field(default_of(LocalizationOptions, "max_stalled_inspections"), ge=1)
    record_top: int = Field(default_of(LocalizationOptions, "record_top"), ge=1)
    inspection_batch: int = Field(1, ge=1, description="Inspections run ahead together; 1: none.")

    @property
    def table(self) -> LikelihoodTable:
        """The likelihood table the evidence is counted with."""
        return table_named(self.likelihoods)


Stage = Literal["start", "screening", "screened", "discovered"]


class LocalizationState(Frozen):
    """Everything the loop's decisions depend on; JSON-serializable."""

    settings: LocalizationSettings
    stage: Stage = Field("start", description="start: no trace yet; screening: traced, screening before "
                         "Discovery under way; screened: its evidence is in; discovered: the loop's suite.")
    suite: Suite | None = None
    confidences: dict[str, float] = Field(default_factory=dict)
    screened: frozenset[str] | None = Field(None, description="Functions screened; None: not yet.")
    evidence: tuple[Evidence, ...] = Field((), description="Fix evidence from outside the loop.")
    calls_asked: bool = False
    values: dict[str, ValueFinding] | None = Field(None, description="The value comparison's findings.")
    history: tuple[InspectionRecord, ...] = ()
    prefetched: dict[str, InspectionResult] = Field(
        default_factory=dict, description="Inspections run ahead of their turn (in a batch).")
    skipped: frozenset[str] = Field(frozenset(), description="Nodes whose inspection could not be built.")
    iterations: int = Field(0, description="Inspections counted by the loop.")
    stalled: int = Field(0, description="Inspections in a row without news.")
    ledger: CostLedger = Field(default_factory=CostLedger,
                               description="The loop's own model calls (its counted inspections').")
    elapsed_s: float = Field(0.0, description="Seconds since the run started, as last observed.")
    problems: tuple[str, ...] = Field((), description="What went wrong but did not stop the run.")
    first_answer: tuple[RankedNode, ...] = Field(
        (), description="The ranking of the first suite traced, before any other evidence (its top).")
    screening_cost: ScreeningCost | None = Field(
        None, description="With ``screen_first``: the screening's estimated cost, once the suite is traced.")


# --- steps: what to run next ----------------------------------------------------------------------


class Discover(Frozen):
    """Trace the suite (``trace_only``: as it is, the flaky re-run apart; else Discovery amplifies it),
    or, with ``not_needed``, keep the suite as traced with that reason in its Discovery report."""

    kind: Literal["discover"] = "discover"
    trace_only: bool = False
    not_needed: str | None = None


class MarkFlaky(Frozen):
    """Re-run the failing tests apart and mark the flaky ones (answered by ``Traced``)."""

    kind: Literal["mark-flaky"] = "mark-flaky"


class ScreenMutants(Frozen):
    """Try the mutants of ``functions`` (most likely first; the driver keeps those its time budget
    fits) in one go on the suite as traced (answered by ``Screened``); ``budget_s``: the seconds its
    mutant rounds may take, after which the mutants left are not run (None: no budget)."""

    kind: Literal["screen-mutants"] = "screen-mutants"
    functions: tuple[str, ...]
    budget_s: float | None = None


class ConfirmFix(Frozen):
    """Run ``target`` with its fix through the whole suite (answered by ``Inspected``)."""

    kind: Literal["confirm-fix"] = "confirm-fix"
    target: str
    fix: str | None
    fix_source: str | None
    screened: bool = Field(False, description="The fix was found by the screening, whose process may "
                           "have run the suite with it already.")


class RecordCalls(Frozen):
    """Record the passing executions of ``functions`` (answered by ``ValuesCompared``)."""

    kind: Literal["record-calls"] = "record-calls"
    functions: tuple[str, ...]


class Inspect(Frozen):
    """Inspect ``target``; with ``batch``, run those inspections ahead in one process first
    (answered by ``Inspected``)."""

    kind: Literal["inspect"] = "inspect"
    target: str
    batch: tuple[str, ...] = ()


LocalizationStep = Annotated[Discover | MarkFlaky | ScreenMutants | ConfirmFix | RecordCalls | Inspect,
                             Field(discriminator="kind")]


# --- observations: what the steps saw --------------------------------------------------------------


class Traced(Frozen):
    """A suite (re)traced: the loop starts again from its priors."""

    kind: Literal["traced"] = "traced"
    suite: Suite
    elapsed_s: float = Field(0.0, description="Seconds since the run started, once it was traced.")


class Screened(Frozen):
    """What mutant screening showed."""

    kind: Literal["screened"] = "screened"
    functions: frozenset[str] = Field(description="The functions whose mutants ran.")
    evidence: tuple[Evidence, ...] = ()
    problems: tuple[str, ...] = ()
    left_out: tuple[str, ...] = Field((), description="Functions asked for whose mutants the budget "
                                      "did not leave time for (their evidence is not counted).")


class ValuesCompared(Frozen):
    """The value comparison's findings on the recorded calls."""

    kind: Literal["values-compared"] = "values-compared"
    findings: dict[str, ValueFinding] = Field(default_factory=dict)


class Inspected(Frozen):
    """What inspecting (or confirming the fix of) ``target`` saw: ``seen``, or ``error`` when the
    inspection could not be made; ``ahead``: inspections run in the same batch."""

    kind: Literal["inspected"] = "inspected"
    target: str
    seen: InspectionResult | None = None
    error: str | None = None
    ahead: dict[str, InspectionResult] = Field(default_factory=dict)
    problems: tuple[str, ...] = ()
    seconds: float = 0.0
    elapsed_s: float = 0.0


class Clocked(Frozen):
    """The driver's clock between steps: seconds since the run started (the time budget's reading)."""

    kind: Literal["clocked"] = "clocked"
    elapsed_s: float = Field(ge=0)


LocalizationObservation = Annotated[Traced | Screened | ValuesCompared | Inspected | Clocked,
                                    Field(discriminator="kind")]


# --- the machine ---------------------------------------------------------------------------------


def initial_state(settings: LocalizationSettings) -> LocalizationState:
    """The state before anything ran."""
    return LocalizationState(settings=settings)


def next_steps(state: LocalizationState) -> list[LocalizationStep]:
    """What to run next; steps given together may run side by side, and their observations are
    recorded in the order of the steps. Empty once ``verdict`` is given."""
    if verdict(state) is not None:
        return []
    settings = state.settings
    if state.suite is None:
        return [Discover(trace_only=settings.screen_first)]
    if state.stage == "screening":  # a screening that costs too much is not run (``verdict`` says why)
        cost = state.screening_cost
        return [MarkFlaky(), ScreenMutants(functions=_to_screen(state),
                                           budget_s=cost.budget_s if cost is not None else None)]
    if state.stage == "screened":
        return _after_screening(state)
    if settings.screen_top and state.screened is None:
        return [ScreenMutants(functions=_to_screen(state))]
    if settings.max_iterations and state.values is None:
        return [RecordCalls(functions=tuple(leaders(state, settings.record_top)))]
    target = _select(state)
    if target is None:  # verdict says why
        return []
    pending = _awaiting_confirmation(state.history, target)
    if pending is not None:
        return [ConfirmFix(target=target, fix=pending.fix, fix_source=pending.fix_source)]
    batch = _next_targets(state, target) if settings.inspection_batch > 1 else ()
    return [Inspect(target=target, batch=batch)]


def record(state: LocalizationState, observation: LocalizationObservation) -> LocalizationState:
    """The state after ``observation``; a state with a verdict stays as it is."""
    if verdict(state) is not None:
        return state
    if isinstance(observation, Clocked):
        return state.model_copy(update={"elapsed_s": max(state.elapsed_s, observation.elapsed_s)})
    if isinstance(observation, Traced):
        return _traced(state, observation)
    if isinstance(observation, Screened):
        cost = state.screening_cost
        if cost is not None and observation.left_out:
            cost = cost.model_copy(update={"left_out": observation.left_out})
        return _rebased(state.model_copy(update={
            "screening_cost": cost, "screened": observation.functions, "evidence": (*state.evidence, *observation.evidence),
            "problems": (*state.problems, *observation.problems),
            "stage": "screened" if state.stage == "screening" else state.stage,
        }))
    if isinstance(observation, ValuesCompared):
        return _values_compared(state, observation.findings)
    return _advance(_inspected(state, observation))


def verdict(state: LocalizationState) -> Verdict | None:
    """Why the run stopped (the report's ``stopped_because``), or None while it goes on."""
    settings = state.settings
    if state.suite is not None and state.elapsed_s > settings.max_seconds:  # once traced
        converged = is_converged(state.confidences)
        return _reached(converged) if converged else _budget_spent(settings.max_seconds)
    if state.stage == "screened":
        return _verdict_after_screening(state)
    if not _inspecting(state):
        return None
    return _verdict_while_inspecting(state)


def _verdict_after_screening(state: LocalizationState) -> Verdict | None:
    """Whether a run settled before Discovery stops: a confirmed fix converged, or (no confirmation
    pending) an answer decisive by the margin."""
    confirmed = any(e.strategy == FIX_CONFIRMATION for e in state.evidence)
    converged = is_converged(state.confidences)
    if confirmed and converged:
        return _reached(converged)
    return None if _confirmation_pending(state) else _decisive_after_screening(state)


def _inspecting(state: LocalizationState) -> bool:
    """Whether the run is at its inspections: discovered, screened when asked, values recorded
    when inspections are asked for."""
    settings = state.settings
    return not (state.stage != "discovered" or (settings.screen_top and state.screened is None)
                or (settings.max_iterations and state.values is None))


def _verdict_while_inspecting(state: LocalizationState) -> Verdict | None:
    """Whether the inspections stop: a node converged, a budget is spent, or none is left."""
    converged = is_converged(state.confidences)
    if converged:
        return _reached(converged)
    spent = _inspection_budget_spent(state)
    if spent is not None:
        return spent
    if _select(state) is None:
        return _nothing_left_to_inspect(state)
    return None


def _inspection_budget_spent(state: LocalizationState) -> Verdict | None:
    """The budget of the inspections that is spent, if any: stalled inspections, the LLM cost, the
    iterations (in that order)."""
    settings = state.settings
    if state.iterations:
        if state.stalled >= settings.max_stalled_inspections:
            return Verdict(reason=f"{state.stalled} inspections in a row brought no new evidence")
        if settings.max_cost_usd is not None and run_ledger(state).usd > settings.max_cost_usd:
            return Verdict(reason=f"LLM cost budget (${settings.max_cost_usd:g}) spent")
    if state.iterations >= settings.max_iterations:
        spent = "iteration budget spent" if settings.max_iterations else "no inspections asked for"
        return Verdict(reason=spent)
    return None


def _nothing_left_to_inspect(state: LocalizationState) -> Verdict:
    """Why no node is selected: those left are not worth an inspection, or all were inspected."""
    settings = state.settings
    unworthy = _not_worth(state) - _done(state.history) - state.skipped
    if unworthy:
        return Verdict(reason=f"no inspection left is expected to move a confidence by "
                              f"{settings.min_expected_shift:g} or more "
                              f"({settings.likelihoods} likelihoods)")
    return Verdict(reason="every inspectable candidate was inspected")


def report(state: LocalizationState) -> LocalizationReport:
    """The run's report, from its state (final or not)."""
    suite = state.suite
    if suite is None:
        raise ValueError("no suite was traced: there is nothing to report")
    stopped = verdict(state)
    early = state.stage == "screened" and stopped is not None  # settled before Discovery
    decisive = stopped is not None and early and not stopped.converged  # by the margin, not a confirmed fix
    signals = with_values(suite.signals, state.values or {})
    ranking = _ranking(state, signals)
    discovery = suite.discovery
    ledger = run_ledger(state)
    if early and discovery is not None:
        discovery = discovery.model_copy(update={
            "enabled": True,
            "stopped_because": "not needed: the answer after the screening was decisive" if decisive
            else "not needed: mutant screening found a fix the whole suite confirms"})
    return LocalizationReport(
        mode=state.settings.mode,
        converged=bool(ranking) and ranking[0].confidence >= CONFIDENCE_THRESHOLD,
        stopped_because=stopped.reason if stopped is not None else "",
        ranking=tuple(ranking),
        first_answer=state.first_answer,
        decisive_after_screening=decisive,
        screening_cost=state.screening_cost,
        ambiguity_groups=suite.ambiguity_groups,
        inspections=state.history,
        tests=suite.tests,
        discovery=discovery,
        cost={"usd": ledger.usd},
        problems=(*suite.problems, *state.problems),
        sandbox=suite.sandbox,
        environment=suite.environment,
        prior=PriorEvidence(weights=DEFAULT_WEIGHTS, signals=signals),
        likelihoods=state.settings.likelihoods,
        ledger=ledger,
    )


def leaders(state: LocalizationState, count: int) -> list[str]:
    """The ``count`` most confident functions an inspection can patch (not in test files), in the
    ranking's order: ties by the prior, suspiciousness and name, not by the trace's order (its shards'
    finishing order), as the screening that takes them may stop at its budget."""
    if state.suite is None:
        return []
    nodes = state.suite.nodes
    return [r.fqn for r in _ranking(state, state.suite.signals)
            if is_valid_node(nodes[r.fqn]) and not is_test_file(nodes[r.fqn].file or "")][:count]


def run_ledger(state: LocalizationState) -> CostLedger:
    """The run's model calls so far: Discovery's (on the suite), then the loop's."""
    discovered = state.suite.ledger if state.suite is not None else CostLedger()
    return discovered.plus(state.ledger.calls)


# --- how observations move the state --------------------------------------------------------------


def _budget_spent(max_seconds: float) -> Verdict:
    """The time budget ran out: the ranking as it stands is the answer (``errors.BUDGET_SPENT``)."""
    return Verdict(reason=f"{BUDGET_SPENT} ({max_seconds:g}s) spent")


def _reached(fqn: str) -> Verdict:
    return Verdict(reason=f"{fqn} reached {CONFIDENCE_THRESHOLD}", converged=True)


def _traced(state: LocalizationState, observation: Traced) -> LocalizationState:
    """A new suite: before screening, screening (screen first) or Discovery's suite for the loop. The
    first one sets the first answer and, before a screening, what that screening would cost."""
    suite = observation.suite
    if state.stage == "start":
        stage: Stage = "screening" if state.settings.screen_first else "discovered"
    elif state.stage == "screened":
        stage = "discovered"
    else:
        stage = state.stage
    elapsed = max(state.elapsed_s, observation.elapsed_s)
    rebased = _rebased(state.model_copy(update={"suite": suite, "stage": stage, "elapsed_s": elapsed}))
    if state.stage != "start":
        return rebased
    first = _ranking(rebased, suite.signals)[:FIRST_ANSWER_KEPT]  # no value finding yet
    cost = _screening_cost(rebased) if stage == "screening" else None
    return rebased.model_copy(update={"first_answer": tuple(first), "screening_cost": cost})


def _ranking(state: LocalizationState, signals: Mapping[str, NodeSignals]) -> list[RankedNode]:
    """The state's functions best first (``steps.rank``; ``signals``' prior scores break ties)."""
    assert state.suite is not None
    suite = state.suite
    locations = {f: (n.file, n.start_line, n.end_line) for f, n in suite.nodes.items()}
    return rank(state.confidences, suite.suspiciousness, locations, prior_scores(signals))


def _rebased(state: LocalizationState) -> LocalizationState:
    """The suite's priors with the evidence from outside the loop counted on them, in order."""
    assert state.suite is not None
    confidences = initial_confidence(prior_scores(state.suite.signals))
    history: list[InspectionRecord] = []
    table = state.settings.table
    for item in state.evidence:
        if item.target not in confidences:
            continue
        prior = confidences[item.target]
        confidences = update_with_likelihoods(confidences, item.target, table.fix[item.fix_evidence])
        history.append(InspectionRecord(
            iteration=len(history) + 1, signals=None, reflection=None, outcome=None, prior=prior,
            posterior=confidences[item.target], **item.model_dump(),
        ))
    return state.model_copy(update={"confidences": confidences, "history": tuple(history)})


def _values_compared(state: LocalizationState, findings: Mapping[str, ValueFinding]) -> LocalizationState:
    """Each finding moves its function's odds and joins the history as a ``value-comparison`` record."""
    confidences = dict(state.confidences)
    history = list(state.history)
    for fqn, finding in sorted(findings.items()):
        if fqn not in confidences:
            continue
        prior = confidences[fqn]
        confidences = update_with_likelihoods(confidences, fqn, value_likelihoods(finding))
        where = ", ".join(finding.seen_in)
        reasoning = (f"in {finding.origin:.0%} of the failing tests a new kind of value starts here "
                     f"(its callees and callers' arguments as in passing tests)" if finding.origin else
                     f"it returned a new kind of value in {finding.passed_on:.0%} of the failing tests, "
                     f"brought by a callee or an argument") + (f": {where}" if where else "")
        history.append(InspectionRecord(
            iteration=len(history) + 1, target=fqn, strategy=VALUE_COMPARISON, tests_run=finding.seen_in,
            signals=None, reflection=None, reflection_by="values", reasoning=reasoning, outcome=None,
            prior=prior, posterior=confidences[fqn],
        ))
    return state.model_copy(update={"values": dict(findings), "confidences": confidences,
                                    "history": tuple(history)})


def _inspected(state: LocalizationState, observation: Inspected) -> LocalizationState:
    """An inspection (or a fix confirmation) of the loop, or the confirmation before Discovery."""
    problems = (*state.problems, *observation.problems)
    prefetched = {**state.prefetched, **observation.ahead}
    if observation.seen is None:  # one node that cannot be inspected never ends the run
        return state.model_copy(update={
            "skipped": state.skipped | {observation.target},
            "prefetched": {t: o for t, o in prefetched.items() if t != observation.target},
            "problems": (*problems, f"{observation.target} was not inspected: {observation.error}"),
        })
    elapsed = max(state.elapsed_s, observation.elapsed_s)
    if state.stage == "screened":  # the screening's fix, run through the whole suite
        seen = observation.seen
        confirmation = Evidence(
            target=observation.target, strategy=seen.strategy, tests_run=seen.tests_run,
            reflection_by=seen.decision_by, reasoning=seen.reasoning, seconds=observation.seconds,
            fix_evidence=seen.fix_evidence or FixEvidence.NO_FIX_FOUND, fix=seen.fix,
            fix_source=seen.fix_source)
        return _rebased(state.model_copy(update={"evidence": (*state.evidence, confirmation),
                                                 "problems": problems, "elapsed_s": elapsed}))
    counted = state.model_copy(update={"problems": problems, "prefetched": prefetched, "elapsed_s": elapsed})
    return _count(counted, observation.target, observation.seen, observation.seconds)


def _count(state: LocalizationState, target: str, seen: InspectionResult, seconds: float,
           ) -> LocalizationState:
    """One iteration of the loop: the Bayesian update on what inspecting ``target`` saw."""
    table = state.settings.table
    confidences = state.confidences
    prior = confidences[target]
    leader = max(confidences, key=confidences.__getitem__)
    outcome = None
    if _awaiting_confirmation(state.history, target) is None:
        outcome, confidences, _ = apply_observation(confidences, target, seen.signals, seen.decision,
                                                    table.outcomes)
    if seen.fix_evidence is not None:
        confidences = update_with_likelihoods(confidences, target, table.fix[seen.fix_evidence])
    record = InspectionRecord(
        iteration=len(state.history) + 1, target=target, strategy=seen.strategy, tests_run=seen.tests_run,
        signals=seen.signals, reflection=seen.decision, reflection_by=seen.decision_by,
        reasoning=seen.reasoning, outcome=outcome, prior=prior, posterior=confidences[target],
        invariants=seen.invariants, mutants_tried=seen.mutants_tried, fix_evidence=seen.fix_evidence,
        fix=seen.fix, fix_source=seen.fix_source, seconds=round(seconds, 3), batch=seen.batch,
    )
    news = (outcome is Outcome.TARGET_ASSERTION_FAILED or seen.fix_evidence in _NEWS
            or max(confidences, key=confidences.__getitem__) != leader)
    return state.model_copy(update={
        "confidences": confidences, "history": (*state.history, record), "iterations": state.iterations + 1,
        "stalled": 0 if news else state.stalled + 1, "ledger": state.ledger.plus(seen.calls),
    })


def _advance(state: LocalizationState) -> LocalizationState:
    """Count the inspections already run ahead, while the loop would select them next."""
    while verdict(state) is None and state.stage == "discovered":
        target = _select(state)
        if target is None or target not in state.prefetched or \
                _awaiting_confirmation(state.history, target) is not None:
            break
        state = _count(state, target, state.prefetched[target], 0.0)
    return state


# --- the loop's decisions ---------------------------------------------------------------------------


def _to_screen(state: LocalizationState) -> tuple[str, ...]:
    """The ``screen_top`` most likely functions whose mutants are expected to move their confidence
    by the calibrated threshold."""
    settings = state.settings
    return tuple(f for f in leaders(state, settings.screen_top)
                 if worth_screening(settings.table, state.confidences[f], settings.min_expected_shift))


def _screening_cost(state: LocalizationState) -> ScreeningCost:
    """What screening ``_to_screen``'s functions would cost, against the seconds the trace took."""
    settings = state.settings
    assert state.suite is not None
    functions = _to_screen(state)
    estimate = screening_estimate(functions, state.suite.nodes, state.suite.failing_durations,
                                  settings.mutants_per_function, settings.screen_processes)
    return ScreeningCost(functions=functions, estimate_s=round(estimate, 3),
                         traced_s=round(state.elapsed_s, 3), ratio=settings.screen_cost_ratio)


def _fix_to_confirm(state: LocalizationState) -> Evidence | None:
    """The screening's most likely fix, while none was confirmed (or tried: one that could not run
    is not retried)."""
    if any(e.strategy == FIX_CONFIRMATION for e in state.evidence):
        return None
    fixes = [e for e in state.evidence
             if e.fix_evidence is FixEvidence.FIX_FOUND and e.target not in state.skipped]
    return max(fixes, key=lambda e: state.confidences[e.target]) if fixes else None


def _confirmation_pending(state: LocalizationState) -> bool:
    """Whether a fix the screening found is still to be confirmed on the whole suite."""
    return _fix_to_confirm(state) is not None


def _decisive_after_screening(state: LocalizationState) -> Verdict | None:
    """Once the screening's evidence (and its fix's confirmation) is in: the answer, when its leader's
    confidence is at least ``stop_margin`` times the runner-up's; else None (Discovery goes on)."""
    margin = state.settings.stop_margin
    assert state.suite is not None
    top = [n.confidence for n in _ranking(state, state.suite.signals)[:2]]
    if not is_decisive(top, margin):
        return None
    shown = leader_margin(top)
    times = "no runner-up" if math.isinf(shown) else f"{shown:.2f} times the runner-up's confidence"
    return Verdict(reason=f"the answer after the screening is decisive: its leader has {times} "
                          f"(the calibrated margin is {margin:g})")


def _after_screening(state: LocalizationState) -> list[LocalizationStep]:
    """Before Discovery, once the screening's evidence is in: confirm its most likely fix on the whole
    suite; then Discovery (not needed when that fix passes the suite and its function leads), with
    the calls recorded on the suite as traced at the same time."""
    confirmations = [e for e in state.evidence if e.strategy == FIX_CONFIRMATION]
    best = _fix_to_confirm(state)
    if best is not None:
        return [ConfirmFix(target=best.target, fix=best.fix, fix_source=best.fix_source, screened=True)]
    not_needed = None
    if confirmations:
        confirmation = confirmations[-1]
        leads = max(state.confidences, key=state.confidences.__getitem__) == confirmation.target
        if confirmation.fix_evidence is FixEvidence.FIX_CONFIRMED and leads:
            not_needed = f"not needed: the fix of {confirmation.target}, which leads, passes the whole suite"
    steps: list[LocalizationStep] = [Discover(not_needed=not_needed)]
    if state.settings.max_iterations:
        steps.append(RecordCalls(functions=tuple(leaders(state, state.settings.record_top))))
    return steps


def _not_worth(state: LocalizationState) -> set[str]:
    """Nodes whose inspection is expected to teach too little (the calibrated stopping rule)."""
    settings = state.settings
    assert state.suite is not None
    screened = state.screened or frozenset()
    return {f for f in state.suite.nodes if _awaiting_confirmation(state.history, f) is None and not
            worth_inspecting(settings.table, state.confidences.get(f, 0.0), settings.min_expected_shift,
                             settings.mutants and f not in screened)}


def _select(state: LocalizationState) -> str | None:
    """The most confident node neither done, nor skipped, nor not worth an inspection."""
    assert state.suite is not None
    exclude = _done(state.history) | state.skipped | _not_worth(state)
    return select_node(state.confidences, state.suite.nodes, exclude=exclude)


def _done(history: Sequence[InspectionRecord]) -> set[str]:
    """Nodes not to inspect again (see ``MAX_INSPECTIONS_PER_NODE``).

    A node whose mutants found a fix is not done either: its next inspection runs the fix against
    the whole suite, which is new evidence, not the same counted twice.
    """
    last: dict[str, InspectionRecord] = {}
    count: dict[str, int] = {}
    for item in history:
        if item.strategy in (SCREENING, VALUE_COMPARISON):  # evidence, not an inspection of the node
            continue
        last[item.target] = item
        count[item.target] = count.get(item.target, 0) + 1
    return {
        t for t, r in last.items()
        if count[t] >= MAX_INSPECTIONS_PER_NODE
        or (r.outcome is not Outcome.TARGET_ASSERTION_FAILED and r.fix_evidence is not FixEvidence.FIX_FOUND)
    }


def _next_targets(state: LocalizationState, target: str) -> tuple[str, ...]:
    """``target`` and the nodes the loop would select after it if nothing moved, up to the batch size:
    neither done, nor awaiting a fix's confirmation, nor inspected ahead already, nor not worth an
    inspection."""
    assert state.suite is not None
    chosen = [target]
    exclude: set[str] = _done(state.history) | set(state.prefetched) | {target} | _not_worth(state)
    while len(chosen) < state.settings.inspection_batch:
        following = select_node(state.confidences, state.suite.nodes, exclude=exclude)
        if following is None:
            break
        exclude.add(following)
        if _awaiting_confirmation(state.history, following) is None:
            chosen.append(following)
    return tuple(chosen)


def _awaiting_confirmation(history: Sequence[InspectionRecord], target: str) -> InspectionRecord | None:
    """The target's last inspection when it found a fix that was not yet run on the whole suite."""
    mine = [r for r in history if r.target == target]
    if mine and mine[-1].fix_evidence is FixEvidence.FIX_FOUND and mine[-1].fix_source:
        return mine[-1]
    return None


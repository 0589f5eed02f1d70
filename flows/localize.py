"""The ``localize`` flow: Discovery's trace, then the Localization loop until one node reaches 0.9.

Control flow only. When mutants give evidence (deterministic mode), the most suspicious functions'
mutants are screened first, on the suite as traced (``_fix_before_discovery``): a fix the whole
suite confirms may settle the run before Discovery; otherwise Discovery amplifies the suite and
the screening's evidence is counted on its priors. Each iteration of the loop then selects the
most confident valid node (seed 002 §5), writes an inspection patch (LLM, or heartbeat plus
invariants mined from recorded passing executions), runs the node's tests with the patch as an
overlay in a sandbox (a cached task; in the same process as the node's mutants when they run),
reads the signals, reflects (the Golden Rule on the tracebacks first; the model only when that is
undecided), and updates every confidence. It stops at convergence, after inspections that bring no
news, or when the iteration, cost or time budget runs out, which is reported as not converged with
the ranking so far.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from prefect import flow
from prefect.artifacts import create_progress_artifact, create_table_artifact, update_progress_artifact
from pydantic import BaseModel, Field

from equisa_core.bayes import (
    CONFIDENCE_THRESHOLD,
    LLM_BUGGY,
    LLM_NOT_BUGGY,
    Outcome,
    initial_confidence,
    is_converged,
    update_with_likelihoods,
)
from equisa_core.errors import EquisaError, NothingToLocalizeError
from equisa_core.fix_evidence import FixEvidence, classify_mutants, confirm_fix
from equisa_core.generated_tests import without_testgen
from equisa_core.localization import InspectionRecord, LocalizationReport, TestCounts, apply_observation, rank
from equisa_core.models import Node, RecordedCall, SuiteTrace, TestOutcome
from equisa_core.mutation import Mutant, mutate_function
from equisa_core.reflection import reflect
from equisa_core.selection import is_test_file, is_valid_node, select_node, tests_for_node
from equisa_core.signals import Signals
from equisa_core.trace_report import TraceReport, build_trace_report
from flows.discovery import DiscoveryParameters, DiscoveryResult, discovery, focused_request
from tasks.inspection import deterministic_inspection, observe, overlay_for, read_function
from tasks.llm import choose_llm_mode
from tasks.mutants import MutantRunReport, MutantSpec, run_mutants
from tasks.record import record_finished_run
from tasks.run_tests import run_tests
from tasks.task_runners import FanOutTaskRunner

__all__ = ["LocalizeParameters", "localize", "run_localization"]


class LocalizeParameters(DiscoveryParameters):
    """Parameters of one localization run (those of ``discovery`` plus the loop's budgets)."""

    max_iterations: int = Field(12, ge=0, description="Inspections before giving up; 0: Discovery only.")
    max_cost_usd: float = Field(2.0, ge=0, description="LLM spend before giving up.")
    max_seconds: float = Field(1800.0, gt=0, description="Wall time before giving up.")
    record_top: int = Field(15, ge=1, description="Candidates whose passing executions are recorded.")
    max_tests_per_inspection: int = Field(40, ge=1, description="Tests run per inspection.")
    mutation_evidence: bool | None = Field(
        None, description="Run mutants of each inspected node (see equisa_core.fix_evidence); "
        "None: in deterministic mode only, where no model reflects.")
    max_mutants: int = Field(40, ge=1, description="Mutants tried per inspected node.")
    screen_top: int = Field(
        20, ge=0, description="Candidates (by prior) whose mutants are tried together in one sandbox "
        "process before the loop, when mutants run: a fix found there is evidence at once, so a "
        "function far down the ranking can still be confirmed; 0: off.")
    screen_budget_s: float = Field(
        15.0, gt=0, description="Mutant screening's estimated cost: the failing tests' durations times "
        "the mutants, summed over the screened functions (a mutant that fixes none stops after them).")
    max_stalled_inspections: int = Field(
        5, ge=1, description="Stop after this many inspections in a row that found neither a fix, nor a "
        "failing assertion in the target, nor changed the leading node: the evidence is exhausted.")


@flow(name="localize", flow_run_name="localize {params.path}", log_prints=True,
      task_runner=FanOutTaskRunner())
def localize(params: LocalizeParameters) -> LocalizationReport:
    """Find the buggy function of a repository whose tests fail."""
    found, report = run_localization(params)
    return record_finished_run("localize", report, str(found.prepared.repo), params.artifacts, params.db,
                               found.trace)


def run_localization(params: LocalizeParameters) -> tuple[DiscoveryResult, LocalizationReport]:
    """Discovery, then the Localization loop; also returns the amplified suite (for Validation).

    With mutant screening, the screening runs first on the suite as it is: when it finds a fix
    that the whole suite confirms, the run has converged and Discovery is not needed; otherwise
    Discovery amplifies the suite and the loop starts from its priors, with the screening's
    evidence counted again on them (``_Carried``).
    """
    started = time.monotonic()
    discovery_params = DiscoveryParameters(**params.model_dump(include=set(DiscoveryParameters.model_fields)))
    use_llm, config, llm_problems = choose_llm_mode(params.llm)
    use_mutants = (not use_llm) if params.mutation_evidence is None else params.mutation_evidence
    screening = bool(use_mutants and params.screen_top and params.max_iterations)
    carried: _Carried | None = None
    if screening and params.discovery:
        early = _fix_before_discovery(params, discovery_params, use_llm)
        if isinstance(early, tuple):
            return early
        carried = early
    found = discovery(discovery_params)
    trace = found.trace
    scored, nodes, suspiciousness, confidences = _priors(found)
    problems = [*found.problems, *(p for p in llm_problems if p not in found.problems)]
    problems += [f"{e.location} does not collect, its tests were left out: {_last_line(e.message)}"
                 for e in trace.collect_errors]
    history: list[InspectionRecord] = []
    screened: dict[str, dict[str, object]] = {}
    if carried is not None:
        screened, problems = carried.screened, [*problems, *carried.problems]
        confidences = _replay(carried.evidence, confidences, history)
    elif screening:
        screened, evidence = _screen_mutants(found, params, confidences, nodes, problems)
        confidences = _replay(evidence, confidences, history)
    calls = _record_candidates(found, params, confidences, nodes)
    candidates = frozenset(f for f, n in nodes.items() if not is_test_file(n.file or ""))
    progress = create_progress_artifact(0.0, key="localization-progress",
                                        description="Inspections done / iteration budget")
    stopped = "iteration budget spent" if params.max_iterations else "no inspections asked for"
    stalled = 0
    cost_usd = found.cost_usd
    for iteration in range(1, params.max_iterations + 1):
        target = select_node(confidences, nodes, exclude=_done(history))
        if target is None:
            stopped = "every inspectable candidate was inspected"
            break
        inspection_started = time.monotonic()
        pending = _awaiting_confirmation(history, target)
        if pending is not None:
            seen = _confirm_fix(target, nodes[target], found, params, pending)
        else:
            seen = _inspect(target, nodes[target], found, params, calls.get(target, []),
                            use_llm, config, problems, use_mutants, candidates, screened.get(target))
        cost_usd += seen.cost_usd
        prior = confidences[target]
        leader = max(confidences, key=confidences.__getitem__)
        outcome = None
        converged = None
        if pending is None:
            outcome, confidences, converged = apply_observation(confidences, target, seen.signals,
                                                                seen.decision)
        if seen.fix_evidence is not None:
            confidences = update_with_likelihoods(confidences, target, seen.fix_evidence.likelihoods)
            converged = is_converged(confidences)
        history.append(InspectionRecord(
            iteration=len(history) + 1, target=target, strategy=seen.strategy, tests_run=seen.tests_run,
            signals=seen.signals, reflection=seen.decision, reflection_by=seen.decision_by,
            reasoning=seen.reasoning, outcome=outcome, prior=prior, posterior=confidences[target],
            invariants=seen.invariants, mutants_tried=seen.mutants_tried, fix_evidence=seen.fix_evidence,
            fix=seen.fix, fix_source=seen.fix_source, seconds=round(time.monotonic() - inspection_started, 3),
        ))
        update_progress_artifact(progress, 100.0 * iteration / params.max_iterations)  # percent
        said = " + ".join(str(e.value) for e in (outcome, seen.fix_evidence) if e is not None)
        print(f"[{iteration}] {target}: {said} -> {confidences[target]:.3f}")
        if converged:
            stopped = f"{converged} reached {CONFIDENCE_THRESHOLD}"
            break
        news = (outcome is Outcome.TARGET_ASSERTION_FAILED or seen.fix_evidence in _NEWS
                or max(confidences, key=confidences.__getitem__) != leader)
        stalled = 0 if news else stalled + 1
        if stalled >= params.max_stalled_inspections:
            stopped = f"{stalled} inspections in a row brought no new evidence"
            break
        if cost_usd > params.max_cost_usd:
            stopped = f"LLM cost budget (${params.max_cost_usd:g}) spent"
            break
        if time.monotonic() - started > params.max_seconds:
            stopped = f"time budget ({params.max_seconds:g}s) spent"
            break
    update_progress_artifact(progress, 100.0)
    locations = {f: (n.file, n.start_line, n.end_line) for f, n in nodes.items()}
    ranking = rank(confidences, suspiciousness, locations)
    report = LocalizationReport(
        mode="llm" if use_llm else "deterministic",
        converged=bool(ranking) and ranking[0].confidence >= CONFIDENCE_THRESHOLD,
        stopped_because=stopped,
        ranking=tuple(ranking),
        ambiguity_groups=scored.ambiguity_groups,
        inspections=tuple(history),
        tests=_counts(trace, found),
        discovery=found.report,
        cost={"usd": round(cost_usd, 6)},
        problems=tuple(problems),
    )
    _publish_ranking(report)
    return found, report


def _publish_ranking(report: LocalizationReport) -> None:
    """The Prefect table artifact of the top 10."""
    create_table_artifact(
        table=[r.model_dump() for r in report.ranking[:10]], key="localization-ranking",
        description=f"{report.mode} localization: {'converged' if report.converged else 'not converged'}"
                    f" ({report.stopped_because})",
    )


#: Tarantula ties are broken by Ochiai in the priors (scaled so that it never reorders distinct
#: Tarantula scores): Tarantula gives 1.0 to every function no passing test runs, however few of
#: the failing tests run it, while Ochiai prefers the function that more failing tests run.
OCHIAI_TIE_BREAK = 1e-4

#: The strategy of the history records that mutant screening adds (``_screen_mutants``).
SCREENING = "mutant-screening"
#: A test's least cost in a mutant round (swapping the code in, fixtures, the report).
MIN_TEST_SECONDS = 0.005

#: Evidence that counts as news for the stall rule (``max_stalled_inspections``).
_NEWS = (FixEvidence.FIX_FOUND, FixEvidence.PARTIAL_FIX_FOUND, FixEvidence.FIX_CONFIRMED)

#: Seed 002 §5.2 keeps picking the most confident node, so a node whose own assertion failed is
#: inspected again and the evidence counted again, which is how the seed reaches 0.9; any other
#: outcome would only repeat itself (runs and answers are cached), so the node is then done.
MAX_INSPECTIONS_PER_NODE = 3


def _done(history: Sequence[InspectionRecord]) -> set[str]:
    """Nodes not to inspect again (see ``MAX_INSPECTIONS_PER_NODE``).

    A node whose mutants found a fix is not done either: its next inspection runs the fix against
    the whole suite (``_confirm_fix``), which is new evidence, not the same counted twice.
    """
    last: dict[str, InspectionRecord] = {}
    count: dict[str, int] = {}
    for record in history:
        if record.strategy == SCREENING:  # evidence, not an inspection of the node
            continue
        last[record.target] = record
        count[record.target] = count.get(record.target, 0) + 1
    return {
        t for t, r in last.items()
        if count[t] >= MAX_INSPECTIONS_PER_NODE
        or (r.outcome is not Outcome.TARGET_ASSERTION_FAILED and r.fix_evidence is not FixEvidence.FIX_FOUND)
    }


def _awaiting_confirmation(history: Sequence[InspectionRecord], target: str) -> InspectionRecord | None:
    """The target's last inspection when it found a fix that was not yet run on the whole suite."""
    mine = [r for r in history if r.target == target]
    if mine and mine[-1].fix_evidence is FixEvidence.FIX_FOUND and mine[-1].fix_source:
        return mine[-1]
    return None


def _record_candidates(
    found: DiscoveryResult, params: LocalizeParameters, confidences: dict[str, float], nodes: dict[str, Node],
) -> dict[str, list[RecordedCall]]:
    """Record arguments and results of the top candidates over the passing tests that run them."""
    trace = found.trace
    candidates = [f for f in sorted(confidences, key=lambda f: -confidences[f])
                  if is_valid_node(nodes[f]) and not is_test_file(nodes[f].file or "")][:params.record_top]
    # The passing tests each candidate's inspection will run: the invariants then hold on every
    # passing test of its inspection, and the (slow) recording run is no larger than needed.
    outcomes = {t.test_id: t.outcome for t in trace.tests if t.test_id not in trace.flaky}
    passing = sorted({
        test for fqn in candidates
        for test in tests_for_node(fqn, trace, max_tests=params.max_tests_per_inspection).test_ids
        if outcomes.get(test) is TestOutcome.PASSED
    })
    if not candidates or not passing:
        return {}
    request = focused_request(found.prepared, passing, found.overlay, record=tuple(candidates), trace=False)
    recorded: SuiteTrace = run_tests(request, backend=params.sandbox,
                                     interpreter_version=found.prepared.interpreter_version,
                                     docker_image=params.docker_image)
    calls: dict[str, list[RecordedCall]] = {}
    for test in recorded.tests:
        if test.outcome is TestOutcome.PASSED:
            for call in test.calls:
                calls.setdefault(call.fqn, []).append(call)
    return calls


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


def _counts(trace: SuiteTrace, found: DiscoveryResult) -> TestCounts:
    """The suite's own tests by outcome (flaky ones apart), and the generated tests kept."""
    generated = set(found.report.tests)
    own = [t for t in trace.tests if t.test_id not in generated and t.test_id not in trace.flaky]
    return TestCounts(
        passed=sum(t.outcome is TestOutcome.PASSED for t in own),
        failed=sum(t.outcome in (TestOutcome.FAILED, TestOutcome.ERROR) for t in own),
        flaky=len(trace.flaky), generated=len(generated),
    )


class _Observation(BaseModel):
    """What one inspection saw, before the Bayesian update."""

    strategy: str
    invariants: int
    tests_run: tuple[str, ...]
    signals: Signals
    decision: str | None
    decision_by: str
    reasoning: str
    cost_usd: float
    mutants_tried: int = 0
    fix_evidence: FixEvidence | None = None
    fix: str | None = None
    fix_source: str | None = None


def _inspect(target: str, node: Node, found: DiscoveryResult, params: LocalizeParameters,
             calls: Sequence[RecordedCall], use_llm: bool, config: object | None,
             problems: list[str], use_mutants: bool, candidates: frozenset[str],
             screened: dict[str, object] | None = None) -> _Observation:
    """One inspection: patch, run in a sandbox, signals, reflection; then the node's mutants
    (``screened``: their evidence, when ``_screen_mutants`` ran them already)."""
    prepared, trace = found.prepared, found.trace
    root = prepared.workspace.root
    _, source = read_function(root, node)
    spent = 0.0
    strategy, invariants = "deterministic", 0
    patch = None
    if use_llm and config is not None:
        patch, spent = _llm_inspection_patch(config, target, source, problems)
        strategy = "llm" if patch else "deterministic"
    if patch is None:
        patch, invariants = deterministic_inspection(source, node, calls)
    overlay, moved = overlay_for(root, node, patch)
    selection = tests_for_node(target, trace, max_tests=params.max_tests_per_inspection)
    mutants = _mutants(target, node, source, params) if use_mutants and screened is None else ()
    specs = _specs(node.file or "", mutants)
    run, mutant_run = _inspection_run(found, params, overlay, selection.test_ids, specs)
    signals = observe(moved, run)
    callees = {e.callee for e in run.edges if e.caller == target and e.callee != target}
    reflection = reflect(moved, run.tests, callees, project=candidates)
    decision, by, reasoning = reflection.decision, "traceback", reflection.reasoning
    if decision is None and use_llm and config is not None and signals.is_failure:
        label, text, cost = _llm_reflection(config, target, source, patch, run, problems)
        spent += cost
        if label is not None:
            decision, by, reasoning = label, "llm", text
    observation = _Observation(
        strategy=strategy, invariants=invariants, tests_run=tuple(t.test_id for t in run.tests),
        signals=signals, decision=decision, decision_by=by, reasoning=reasoning, cost_usd=spent,
    )
    # A failing assertion of the target's own is the seed's strongest evidence; the mutants only
    # run when it is absent or the reflection put it down to a callee.
    if signals.has_target_assertion and signals.is_failure and decision != LLM_NOT_BUGGY:
        return observation
    if screened is not None:
        return observation.model_copy(update=screened)
    if not mutants:
        return observation
    return observation.model_copy(update=_mutant_evidence(mutants, specs, found, params, selection.test_ids,
                                                          mutant_run))


def _mutants(target: str, node: Node, source: str, params: LocalizeParameters) -> tuple[Mutant, ...]:
    """The node's mutants (none when its file is unknown: the probe could not swap them in)."""
    if not node.file:
        return ()
    return tuple(mutate_function(source, target, start_line=node.start_line or 1,
                                 max_mutants=params.max_mutants))


def _specs(target_file: str, mutants: Sequence[Mutant]) -> tuple[MutantSpec, ...]:
    """The probe's specs of ``mutants`` (ids ``m0``, ``m1``, ... in order)."""
    return tuple(MutantSpec(id=f"m{index}", fqn=mutant.fqn, file=target_file, source=mutant.source)
                 for index, mutant in enumerate(mutants))


def _inspection_run(found: DiscoveryResult, params: LocalizeParameters, overlay: dict[str, str],
                    test_ids: Sequence[str], specs: tuple[MutantSpec, ...],
                    ) -> tuple[SuiteTrace, MutantRunReport | None]:
    """The traced run of the inspection patch and, in the same sandbox process, the node's mutants.

    A sandbox start (interpreter, pytest, the project's imports) is most of an inspection's cost,
    so the patched tests run as the mutant run's first round and the mutants are swapped in after
    it (each replaces the whole function, so the patch's assertions are gone while they run).
    When that first round does not come back whole (a crash, tests that cannot be collected),
    the inspection runs alone, as an ordinary run does.
    """
    prepared = found.prepared
    request = focused_request(prepared, test_ids, {**found.overlay, **overlay}, trace=True)
    must_fix = _must_fix(found.trace, test_ids)
    options = {"backend": params.sandbox, "interpreter_version": prepared.interpreter_version,
               "docker_image": params.docker_image}
    if specs:
        try:
            report: MutantRunReport | None = run_mutants(
                request.model_copy(update={"mutants": specs, "mutants_fail_fast": True,
                                           "mutants_must_fix": must_fix}), **options)
        except EquisaError:
            report = None
        if report is not None and report.original_trace is not None:
            return report.original_trace, report
    return run_tests(request, **options), None


def _must_fix(trace: SuiteTrace, test_ids: Sequence[str]) -> tuple[str, ...]:
    """The selected tests that fail (all failing tests when the selection is the whole suite): a
    mutant that passes none of them is no fix, so its round can stop after them."""
    failing = trace.failed_tests()
    return tuple(sorted(t for t in (test_ids or failing) if t in failing))


def _mutant_evidence(mutants: Sequence[Mutant], specs: tuple[MutantSpec, ...], found: DiscoveryResult,
                     params: LocalizeParameters, test_ids: Sequence[str], report: MutantRunReport | None,
                     ) -> dict[str, object]:
    """Classify what the node's mutants did to its tests (fix evidence); run them first if the
    inspection run did not.

    The mutants are judged against the tests' outcomes without any patch: the suite's traced run
    when they ran after the inspection patch (whose assertions may fail tests that pass), the
    mutant run's own unmutated round otherwise.
    """
    trace = found.trace
    if report is None:
        request = focused_request(found.prepared, test_ids, found.overlay, trace=False, mutants=specs,
                                  mutants_fail_fast=True, mutants_must_fix=_must_fix(trace, test_ids))
        report = run_mutants(request, backend=params.sandbox,
                             interpreter_version=found.prepared.interpreter_version,
                             docker_image=params.docker_image)
        original = {t: o for t, o in report.original.items() if t not in report.flaky}
    else:
        judged = set(report.tests) - trace.flaky - report.flaky
        original = {t.test_id: t.outcome for t in trace.tests if t.test_id in judged}
    return _evidence(mutants, original, report, prefix="m")


def _evidence(mutants: Sequence[Mutant], original: dict[str, TestOutcome], report: MutantRunReport,
              prefix: str) -> dict[str, object]:
    """The observation's fix-evidence fields from the rounds of ``mutants`` (ids ``<prefix><index>``)."""
    ran = {i: r.outcomes for i, r in report.mutants.items()
           if i.startswith(prefix) and i[len(prefix):].isdigit() and r.status in ("ran", "timeout")}
    # Testgen tests assert the buggy behaviour: they may not veto a fixing mutant.
    verdict = classify_mutants(without_testgen(original), {i: without_testgen(o) for i, o in ran.items()})
    if verdict.evidence is None:
        return {}
    update: dict[str, object] = {"mutants_tried": verdict.ran, "fix_evidence": verdict.evidence}
    chosen = verdict.fixing or verdict.partial
    if chosen:
        mutant = mutants[int(chosen[0][len(prefix):])]
        update.update(fix=mutant.description, fix_source=mutant.source)
    return update


def _screen_mutants(
    found: DiscoveryResult, params: LocalizeParameters, confidences: dict[str, float], nodes: dict[str, Node],
    problems: list[str],
) -> tuple[dict[str, dict[str, object]], list[_Evidence]]:
    """Try the mutants of the ``screen_top`` most likely candidates in one sandbox process (those
    whose estimated cost fits ``screen_budget_s``).

    Each mutant runs against its own function's tests (those its inspection would run), failing
    tests first, and stops as soon as it fixes none of them, so most cost a test or two. A fix (or
    a partial one) is evidence about its function at once, returned for ``_replay`` (its odds move by
    the fix likelihoods and a ``mutant-screening`` record joins the history; a fix is then confirmed
    on the whole suite when the function is selected). "No fix" is kept for the function's
    inspection, where the loop would have counted it anyway. Returns the evidence kept per screened
    function (``{}`` where it is returned to be counted now) and the evidence to count now.
    """
    started = time.monotonic()
    trace, root = found.trace, found.prepared.workspace.root
    ranked = [f for f in sorted(confidences, key=lambda f: -confidences[f])
              if is_valid_node(nodes[f]) and not is_test_file(nodes[f].file or "")][:params.screen_top]
    plans: dict[str, tuple[str, tuple[Mutant, ...], tuple[str, ...]]] = {}
    specs: list[MutantSpec] = []
    failing = trace.failed_tests()
    durations = {t.test_id: max(t.duration, MIN_TEST_SECONDS) for t in trace.tests if t.test_id in failing}
    estimate = 0.0
    for fqn in ranked:
        node = nodes[fqn]
        try:
            _, source = read_function(root, node)
        except EquisaError:
            continue
        tests = tests_for_node(fqn, trace, max_tests=params.max_tests_per_inspection).test_ids
        mutants = _mutants(fqn, node, source, params)
        cost = len(mutants) * sum(durations.get(t, 0.0) for t in tests)
        if not cost or estimate + cost > params.screen_budget_s:
            continue  # no mutants, or no failing test to fix (no fix to find), or over the budget
        estimate += cost
        prefix = f"s{len(plans)}m"
        plans[fqn] = (prefix, mutants, tests)
        specs += [spec.model_copy(update={"id": prefix + spec.id[1:], "tests": tests})
                  for spec in _specs(node.file or "", mutants)]
    if not specs:
        return {}, []
    selection = sorted({t for _, _, tests in plans.values() for t in tests})
    request = focused_request(found.prepared, selection, found.overlay, trace=False, mutants=tuple(specs),
                              mutants_fail_fast=True, mutants_must_fix=_must_fix(trace, selection))
    try:
        report: MutantRunReport = run_mutants(request, backend=params.sandbox,
                                              interpreter_version=found.prepared.interpreter_version,
                                              docker_image=params.docker_image)
    except EquisaError as error:
        problems.append(f"mutant screening did not run, the inspections run their own: {error.message}")
        return {}, []
    screened: dict[str, dict[str, object]] = {}
    found_evidence: list[_Evidence] = []
    for fqn, (prefix, mutants, tests) in plans.items():
        judged = set(tests) - trace.flaky - report.flaky
        original = {t.test_id: t.outcome for t in trace.tests if t.test_id in judged}
        update = _evidence(mutants, original, report, prefix)
        if update.get("fix_evidence") not in (FixEvidence.FIX_FOUND, FixEvidence.PARTIAL_FIX_FOUND):
            screened[fqn] = update
            continue
        screened[fqn] = {}
        found_evidence.append(_Evidence(
            target=fqn, strategy=SCREENING, tests_run=tests, reflection_by="mutants",
            reasoning=f"screening the mutants of the top {len(plans)} candidates: {update.get('fix')}",
            seconds=round(time.monotonic() - started, 3), **update,
        ))
    return screened, found_evidence


class _Evidence(BaseModel):
    """Fix evidence gathered outside the loop's inspections (mutant screening, a confirmation),
    to be counted by ``_replay`` on whichever priors the loop starts from."""

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


class _Carried(BaseModel):
    """What mutant screening before Discovery found, when it did not settle the run."""

    screened: dict[str, dict[str, object]]
    evidence: list[_Evidence]
    problems: list[str]


def _priors(found: DiscoveryResult,
            ) -> tuple[TraceReport, dict[str, Node], dict[str, float], dict[str, float]]:
    """The scored suite, its nodes, their suspiciousness and the prior confidences; raises
    ``NothingToLocalizeError`` when no test fails."""
    trace = found.trace
    if not trace.failed_tests():
        raise NothingToLocalizeError(
            "nothing to localize: no test fails"
            + (f" ({len(trace.flaky)} flaky tests left out)" if trace.flaky else "")
        )
    scored = build_trace_report(trace, str(found.prepared.repo))
    nodes = {n.fqn: Node(fqn=n.fqn, file=n.file, start_line=n.start_line, end_line=n.end_line)
             for n in scored.nodes}
    suspiciousness = {n.fqn: n.tarantula for n in scored.nodes}
    confidences = initial_confidence({n.fqn: n.tarantula + OCHIAI_TIE_BREAK * n.ochiai for n in scored.nodes})
    return scored, nodes, suspiciousness, confidences


def _replay(evidence: Sequence[_Evidence], confidences: dict[str, float],
            history: list[InspectionRecord]) -> dict[str, float]:
    """Count ``evidence`` in order: each moves its target's odds by its fix likelihoods and joins
    ``history`` as a record with the prior and posterior it had here."""
    for item in evidence:
        if item.target not in confidences:
            continue
        prior = confidences[item.target]
        confidences = update_with_likelihoods(confidences, item.target, item.fix_evidence.likelihoods)
        history.append(InspectionRecord(
            iteration=len(history) + 1, signals=None, reflection=None, outcome=None, prior=prior,
            posterior=confidences[item.target], **item.model_dump(),
        ))
        print(f"[{item.strategy}] {item.target}: {item.fix_evidence.value} -> {confidences[item.target]:.3f}")
    return confidences


def _fix_before_discovery(
    params: LocalizeParameters, discovery_params: DiscoveryParameters, use_llm: bool,
) -> tuple[DiscoveryResult, LocalizationReport] | _Carried:
    """Mutant screening on the suite as it is, and the whole suite on the most likely fix it found.

    When that fix is confirmed and its function reaches the threshold, the run is done without
    Discovery (whose generated tests would only have split groups the fix already settled): the
    result and its report. Otherwise what the screening and the confirmation showed, for the loop.
    """
    plain = discovery(discovery_params.model_copy(update={"discovery": False}))
    scored, nodes, suspiciousness, confidences = _priors(plain)
    problems: list[str] = []
    screened, evidence = _screen_mutants(plain, params, confidences, nodes, problems)
    history: list[InspectionRecord] = []
    confidences = _replay(evidence, confidences, history)
    fixes = [e for e in evidence if e.fix_evidence is FixEvidence.FIX_FOUND]
    if not fixes:
        return _Carried(screened=screened, evidence=evidence, problems=problems)
    best = max(fixes, key=lambda e: confidences[e.target])
    checked = time.monotonic()
    seen = _confirm_fix(best.target, nodes[best.target], plain, params, best)
    confirmation = _Evidence(
        target=best.target, strategy=seen.strategy, tests_run=seen.tests_run, reflection_by=seen.decision_by,
        reasoning=seen.reasoning, seconds=round(time.monotonic() - checked, 3),
        fix_evidence=seen.fix_evidence, fix=seen.fix, fix_source=seen.fix_source,  # type: ignore[arg-type]
    )
    confidences = _replay([confirmation], confidences, history)
    converged = is_converged(confidences)
    if not converged:
        return _Carried(screened=screened, evidence=[*evidence, confirmation], problems=problems)
    locations = {f: (n.file, n.start_line, n.end_line) for f, n in nodes.items()}
    ranking = rank(confidences, suspiciousness, locations)
    discovery_report = plain.report.model_copy(update={
        "enabled": True,
        "stopped_because": "not needed: mutant screening found a fix the whole suite confirms"})
    report = LocalizationReport(
        mode="llm" if use_llm else "deterministic", converged=True,
        stopped_because=f"{converged} reached {CONFIDENCE_THRESHOLD}", ranking=tuple(ranking),
        ambiguity_groups=scored.ambiguity_groups, inspections=tuple(history),
        tests=_counts(plain.trace, plain), discovery=discovery_report, cost={"usd": 0.0},
        problems=tuple(plain.problems) + tuple(problems),
    )
    _publish_ranking(report)
    return plain.model_copy(update={"report": discovery_report}), report


def _confirm_fix(target: str, node: Node, found: DiscoveryResult, params: LocalizeParameters,
                 pending: InspectionRecord | _Evidence) -> _Observation:
    """Run the fix found by the target's mutants against the whole amplified suite."""
    prepared, trace = found.prepared, found.trace
    overlay, moved = overlay_for(prepared.workspace.root, node, pending.fix_source or "")
    everything = [t.test_id for t in trace.tests if t.test_id not in trace.flaky]
    request = focused_request(prepared, everything, {**found.overlay, **overlay}, trace=False)
    run: SuiteTrace = run_tests(request, backend=params.sandbox, docker_image=params.docker_image,
                                interpreter_version=prepared.interpreter_version)
    outcomes = {t.test_id: t.outcome for t in run.tests}
    passed = set(without_testgen(dict.fromkeys(trace.passed_tests())))  # testgen tests: evidence only
    evidence = confirm_fix(trace.failed_tests(), passed, outcomes)
    broken = sorted(t for t in passed if outcomes.get(t) is not TestOutcome.PASSED)
    still = sorted(t for t in trace.failed_tests() if outcomes.get(t) is not TestOutcome.PASSED)
    reasoning = (f"the fix ({pending.fix}) passes all {len(outcomes)} tests of the suite"
                 if evidence is FixEvidence.FIX_CONFIRMED else
                 f"the fix ({pending.fix}) leaves {len(still)} failing and breaks {len(broken)}: "
                 + ", ".join([*still, *broken][:3]))
    return _Observation(
        strategy="fix-confirmation", invariants=0, tests_run=tuple(outcomes), signals=observe(moved, run),
        decision=None, decision_by="mutants", reasoning=reasoning, cost_usd=0.0, fix_evidence=evidence,
        fix=pending.fix, fix_source=pending.fix_source,
    )


def _llm_inspection_patch(
    config: object, target: str, source: str, problems: list[str]
) -> tuple[str | None, float]:
    from equisa_core.prompts.localization import render_inspection_patch
    from tasks.llm import LLMError, ask_for_function

    qualname = target.rsplit(".", 1)[-1]
    try:
        answer = ask_for_function(config, render_inspection_patch(target, source), source,  # type: ignore[arg-type]
                                  _source_qualname(source, qualname), "inspection-patch")
    except LLMError as error:
        problems.append(f"inspection patch for {target}: {error.message}; used the deterministic one")
        return None, sum(c.cost_usd or 0.0 for c in getattr(error, "calls", ()))
    return answer.source, sum(c.cost_usd or 0.0 for c in answer.calls)


def _source_qualname(source: str, fallback: str) -> str:
    import ast

    first = ast.parse(source).body[0]
    return getattr(first, "name", fallback)


def _llm_reflection(config: object, target: str, source: str, patch: str, run: SuiteTrace,
                    problems: list[str]) -> tuple[str | None, str, float]:
    from equisa_core.llm_text import parse_reflection_label
    from equisa_core.prompts.localization import render_reflection
    from tasks.llm import LLMError, call_llm

    failing = [t for t in run.tests if t.outcome in (TestOutcome.FAILED, TestOutcome.ERROR)]
    result = "\n\n".join(
        f"Test: {t.test_id}\nException: {t.exception_type}: {t.message}\nTraceback:\n"
        + "\n".join(f'  File "{f.file}", line {f.line}, in {f.function}' for f in t.traceback)
        + f"\nstdout:\n{t.stdout_tail}"
        for t in failing[:3]
    )
    execution = f"Exit Code: {1 if failing else 0}\n{result}"
    try:
        answer = call_llm(config, render_reflection(target, source, patch, execution), "reflection")  # type: ignore[arg-type]
    except LLMError as error:
        problems.append(f"reflection on {target}: {error.message}; left neutral")
        return None, "", 0.0
    label = parse_reflection_label(answer.text)
    if label not in (LLM_BUGGY, LLM_NOT_BUGGY):
        problems.append(f"reflection on {target}: the model gave no label; left neutral")
        return None, answer.text, answer.call.cost_usd or 0.0
    return label, answer.text, answer.call.cost_usd or 0.0

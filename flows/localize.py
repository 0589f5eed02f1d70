"""The ``localize`` flow: Discovery's trace, then the Localization loop until one node reaches 0.9.

Control flow only. When mutants give evidence (deterministic mode), the most suspicious functions'
mutants are screened first, on the suite as traced (``_fix_before_discovery``): a fix the whole
suite confirms may settle the run before Discovery; otherwise Discovery amplifies the suite and
the screening's evidence is counted on its priors. Each iteration of the loop then selects the
most confident valid node (seed 002 §5), inspects it (``flows.inspections``: patch, sandboxed run,
signals, reflection; in deterministic mode the next few nodes are inspected in the same sandbox
process, ahead of their turn) and updates every confidence. It stops at convergence, after
inspections that bring no news, or when the iteration, cost or time budget runs out, which is
reported as not converged with the ranking so far.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path

from prefect import flow
from prefect.artifacts import create_progress_artifact, create_table_artifact, update_progress_artifact
from prefect.futures import PrefectFuture
from pydantic import BaseModel, Field

from equisa_core.common.models import Node, RecordedCall, SuiteTrace, TestOutcome, TestResult
from equisa_core.discovery.environment_failures import environment_failures
from equisa_core.discovery.trace_report import TraceReport, build_trace_report
from equisa_core.errors import EnvironmentFailureError, EquisaError, NothingToLocalizeError, WeakSandboxError
from equisa_core.localization.bayes import (
    CONFIDENCE_THRESHOLD,
    Outcome,
    initial_confidence,
    is_converged,
    update_with_likelihoods,
)
from equisa_core.localization.calibrated_likelihoods import (
    DEFAULT_MIN_EXPECTED_SHIFT,
    DEFAULT_TABLE,
    LikelihoodTable,
    TableName,
    table_named,
    worth_inspecting,
    worth_screening,
)
from equisa_core.localization.fix_evidence import FixEvidence, confirm_fix
from equisa_core.localization.prior import (
    DEFAULT_WEIGHTS,
    NodeSignals,
    node_signals,
    prior_scores,
    value_likelihoods,
    with_values,
)
from equisa_core.localization.selection import is_test_file, is_valid_node, select_node, tests_for_node
from equisa_core.localization.steps import (
    InspectionRecord,
    LocalizationReport,
    PriorEvidence,
    TestCounts,
    apply_observation,
    rank,
)
from equisa_core.localization.value_evidence import compare_values
from equisa_core.validation.generated_tests import without_testgen
from equisa_core.validation.mutation import Mutant
from flows.discovery import (
    DiscoveryParameters,
    DiscoveryResult,
    as_traced,
    discovery,
    focused_request,
    trace_only,
)
from flows.inspections import (
    Observation,
    fix_evidence_of,
    inspect_batch,
    inspect_node,
    mutant_specs,
    node_mutants,
    submit_rounds,
    suite_run_of,
    unpatched_outcomes,
)
from flows.trace import submit_flaky_rerun, with_flaky
from tasks.git_changes import changed_lines
from tasks.inspection import observe, overlay_for, read_function
from tasks.llm import choose_llm_mode
from tasks.mutants import MutantRunReport
from tasks.record import record_finished_run
from tasks.run_tests import report_progress, run_tests
from tasks.task_runners import FanOutTaskRunner

__all__ = ["LocalizeParameters", "localize", "run_localization"]


class LocalizeParameters(DiscoveryParameters):
    """Parameters of one localization run (those of ``discovery`` plus the loop's budgets)."""

    max_iterations: int = Field(12, ge=0, description="Inspections before giving up; 0: Discovery only.")
    max_cost_usd: float = Field(2.0, ge=0, description="LLM spend before giving up.")
    max_seconds: float = Field(1800.0, gt=0, description="Wall time before giving up.")
    record_top: int = Field(15, ge=1, description="Candidates whose passing executions are recorded.")
    max_tests_per_inspection: int = Field(
        12, ge=1, description="Tests run per inspection: every failing test of the function, then its "
        "fastest passing ones (their calls are recorded for its invariants, in a slowed-down run).")
    mutation_evidence: bool | None = Field(
        None, description="Run mutants of each inspected node (see equisa_core.localization.fix_evidence); "
        "None: in deterministic mode only, where no model reflects.")
    max_mutants: int = Field(40, ge=1, description="Mutants tried per inspected node.")
    screen_top: int = Field(
        20, ge=0, description="Candidates (by prior) whose mutants are tried together in one sandbox "
        "process before the loop, when mutants run: a fix found there is evidence at once, so a "
        "function far down the ranking can still be confirmed; 0: off.")
    screen_budget_s: float = Field(
        15.0, gt=0, description="Mutant screening's estimated cost: the failing tests' durations times "
        "the mutants, summed over the screened functions (a mutant that fixes none stops after them); "
        "also each screening process's wall-clock limit for its mutant rounds (the rest are not run).")
    inspection_budget_s: float = Field(
        20.0, gt=0, description="Wall-clock seconds for the mutant rounds of one batch of inspections "
        "(``inspection_batch``); the mutants left then are not run, the inspection patches still are.")
    max_stalled_inspections: int = Field(
        5, ge=1, description="Stop after this many inspections in a row that found neither a fix, nor a "
        "failing assertion in the target, nor changed the leading node: the evidence is exhausted.")
    since: str | None = Field(
        None, description="A git ref: functions whose lines changed since it (committed or not) are more "
        "suspicious in the prior (``equisa_core.localization.prior``); None: no such signal.")
    inspection_batch: int = Field(
        5, ge=1, description="Deterministic inspections run together in one sandbox process: the selected "
        "node and the next most confident ones (the loop counts each when it selects that node); "
        "1: one process per inspection.")
    likelihoods: TableName = Field(
        DEFAULT_TABLE, description="The deterministic mode's likelihood table "
        "(equisa_core.localization.calibrated_likelihoods): 'fitted' on the real-bug benchmark, "
        "or 'seed' (hand-set; "
        "the LLM mode always counts with it).")
    min_expected_shift: float = Field(
        DEFAULT_MIN_EXPECTED_SHIFT, ge=0, description="Deterministic mode: a screening or inspection is "
        "run only when it is expected to move its function's confidence by this much (by the fitted "
        "frequencies of what inspections show); the loop stops when none is; 0: off.")


@flow(name="localize", flow_run_name="localize {params.path}", log_prints=True,
      task_runner=FanOutTaskRunner())
def localize(params: LocalizeParameters) -> LocalizationReport:
    """Find the buggy function of a repository whose tests fail."""
    found, report = run_localization(params)
    return record_finished_run("localize", report, str(found.prepared.repo), params.artifacts, params.db,
                               found.trace)


def run_localization(params: LocalizeParameters) -> tuple[DiscoveryResult, LocalizationReport]:
    """Discovery, then the Localization loop; also returns the amplified suite (for Validation).
    Called inside a flow run (``localize``, ``repair``), whose task runner runs its tasks.

    With mutant screening, the screening runs first on the suite as it is: when it finds a fix
    that the whole suite confirms, the run has converged and Discovery is not needed; when that fix
    is confirmed and its function leads without reaching the threshold, the loop goes on without
    Discovery; otherwise Discovery amplifies the suite and the loop starts from its priors, with the
    screening's evidence counted again on them (``_Carried``).
    """
    started = time.monotonic()
    discovery_params = DiscoveryParameters(**params.model_dump(include=set(DiscoveryParameters.model_fields)))
    use_llm, config, llm_problems = choose_llm_mode(params.llm)
    use_mutants = (not use_llm) if params.mutation_evidence is None else params.mutation_evidence
    screening = bool(use_mutants and params.screen_top and params.max_iterations)
    changed = changed_lines(params.path, params.since) if params.since else None
    table = table_named("seed" if use_llm else params.likelihoods)
    threshold = 0.0 if use_llm else params.min_expected_shift
    carried: _Carried | None = None
    if screening and params.discovery:
        early = _fix_before_discovery(params, discovery_params, use_llm, changed, table, threshold)
        if isinstance(early, tuple):
            return early
        carried = early
    # The calls the inspections' invariants are mined from are recorded while Discovery runs: on the
    # suite as traced, for the functions most likely after the screening.
    recording = _submit_recording(carried.suite, params, carried.leaders) \
        if carried is not None and params.max_iterations else None
    try:
        # A leading function whose fix passes the whole suite is what Discovery's tests would help
        # the loop find: the loop goes on from the suite as it is (its inspections may settle it).
        found = carried.suite if carried is not None and carried.confirmed else discovery(discovery_params)
    except BaseException:
        if recording is not None:
            recording.wait()  # not left running when Discovery fails
        raise
    trace = found.trace
    scored, nodes, suspiciousness, confidences, signals = _priors(found, changed)
    problems = [*found.problems, *(p for p in llm_problems if p not in found.problems)]
    problems += [f"{e.location} does not collect, its tests were left out: {_last_line(e.message)}"
                 for e in trace.collect_errors]
    history: list[InspectionRecord] = []
    screened: frozenset[str] = frozenset()
    if carried is not None:
        screened, problems = carried.screened, [*problems, *carried.problems]
        confidences = _replay(carried.evidence, confidences, history, table)
    elif screening:
        screened, evidence = _screen_mutants(found, params, confidences, nodes, problems, table, threshold)
        confidences = _replay(evidence, confidences, history, table)
    candidates = frozenset(f for f, n in nodes.items() if not is_test_file(n.file or ""))
    progress = create_progress_artifact(0.0, key="localization-progress",
                                        description="Inspections done / iteration budget")
    stopped = "iteration budget spent" if params.max_iterations else "no inspections asked for"
    batching = not (use_llm and config is not None) and params.inspection_batch > 1
    calls: dict[str, list[RecordedCall]] = {}
    if recording is None and params.max_iterations:
        recording = _submit_recording(found, params, _top_candidates(confidences, nodes, params.record_top))
    if recording is not None:
        calls = recording.calls()
        signals, confidences = _value_evidence(found, recording, signals, confidences, history)
    prefetched: dict[str, Observation] = {}  # inspections run ahead of their turn (``inspect_batch``)
    stalled = 0
    cost_usd = found.cost_usd
    skipped: set[str] = set()  # nodes whose inspection could not be built (the reason is in problems)
    not_worth: set[str] = set()  # nodes whose inspection is expected to teach too little (calibrated)
    already = is_converged(confidences)  # the screening's and the values' evidence settled it
    if already:
        stopped = f"{already} reached {CONFIDENCE_THRESHOLD}"
    for iteration in range(1, 0 if already else params.max_iterations + 1):
        seen: Observation | None = None
        while seen is None:
            not_worth = {f for f in nodes if _awaiting_confirmation(history, f) is None and not
                         worth_inspecting(table, confidences.get(f, 0.0), threshold,
                                          use_mutants and f not in screened)}
            target = select_node(confidences, nodes, exclude=_done(history) | skipped | not_worth)
            if target is None:
                break
            inspection_started = time.monotonic()
            pending = _awaiting_confirmation(history, target)
            try:
                if pending is not None:
                    seen = _confirm_fix(target, nodes[target], found, params, pending)
                else:
                    if batching and target not in prefetched:
                        batch = _next_targets(target, confidences, nodes, history, prefetched,
                                              params.inspection_batch, not_worth)
                        prefetched.update(inspect_batch(batch, nodes, found, params, calls, use_mutants,
                                                        candidates, screened))
                    # A node inspected again (its own assertion failed) sees what it saw: runs are cached.
                    seen = prefetched.get(target) or inspect_node(
                        target, nodes[target], found, params, calls.get(target, []), use_llm, config,
                        problems, use_mutants, candidates, target in screened)
            except WeakSandboxError:
                raise  # a policy, not a failure of this node
            except EquisaError as error:  # one node that cannot be inspected never ends the run
                skipped.add(target)
                prefetched = {t: o for t, o in prefetched.items() if t != target}
                problems.append(f"{target} was not inspected: {error.message}")
        if target is None or seen is None:
            stopped = "every inspectable candidate was inspected"
            if not_worth - _done(history) - skipped:
                stopped = (f"no inspection left is expected to move a confidence by {threshold:g} or more "
                           f"({table.name} likelihoods)")
            break
        cost_usd += seen.cost_usd
        prior = confidences[target]
        leader = max(confidences, key=confidences.__getitem__)
        outcome = None
        converged = None
        if pending is None:
            outcome, confidences, converged = apply_observation(confidences, target, seen.signals,
                                                                seen.decision, table.outcomes)
        if seen.fix_evidence is not None:
            confidences = update_with_likelihoods(confidences, target, table.fix[seen.fix_evidence])
            converged = is_converged(confidences)
        history.append(InspectionRecord(
            iteration=len(history) + 1, target=target, strategy=seen.strategy, tests_run=seen.tests_run,
            signals=seen.signals, reflection=seen.decision, reflection_by=seen.decision_by,
            reasoning=seen.reasoning, outcome=outcome, prior=prior, posterior=confidences[target],
            invariants=seen.invariants, mutants_tried=seen.mutants_tried, fix_evidence=seen.fix_evidence,
            fix=seen.fix, fix_source=seen.fix_source, seconds=round(time.monotonic() - inspection_started, 3),
            batch=seen.batch,
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
    ranking = rank(confidences, suspiciousness, locations, prior_scores(signals))
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
        sandbox=found.prepared.sandbox,
        prior=PriorEvidence(weights=DEFAULT_WEIGHTS, signals=signals), likelihoods=table.name,
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


#: The strategy of the history records that mutant screening adds (``_screen_mutants``).
SCREENING = "mutant-screening"
#: The strategy of the history records that the value comparison adds (``_value_evidence``).
VALUE_COMPARISON = "value-comparison"
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
        if record.strategy in (SCREENING, VALUE_COMPARISON):  # evidence, not an inspection of the node
            continue
        last[record.target] = record
        count[record.target] = count.get(record.target, 0) + 1
    return {
        t for t, r in last.items()
        if count[t] >= MAX_INSPECTIONS_PER_NODE
        or (r.outcome is not Outcome.TARGET_ASSERTION_FAILED and r.fix_evidence is not FixEvidence.FIX_FOUND)
    }


def _next_targets(target: str, confidences: dict[str, float], nodes: dict[str, Node],
                  history: Sequence[InspectionRecord], prefetched: dict[str, Observation], size: int,
                  not_worth: AbstractSet[str] = frozenset()) -> list[str]:
    """``target`` and the nodes the loop would select after it if nothing moved, up to ``size``:
    neither done, nor awaiting a fix's confirmation, nor inspected ahead already, nor ``not_worth``
    an inspection."""
    chosen = [target]
    exclude = _done(history) | set(prefetched) | {target} | set(not_worth)
    while len(chosen) < size:
        following = select_node(confidences, nodes, exclude=exclude)
        if following is None:
            break
        exclude.add(following)
        if _awaiting_confirmation(history, following) is None:
            chosen.append(following)
    return chosen


def _awaiting_confirmation(history: Sequence[InspectionRecord], target: str) -> InspectionRecord | None:
    """The target's last inspection when it found a fix that was not yet run on the whole suite."""
    mine = [r for r in history if r.target == target]
    if mine and mine[-1].fix_evidence is FixEvidence.FIX_FOUND and mine[-1].fix_source:
        return mine[-1]
    return None


def _top_candidates(confidences: dict[str, float], nodes: dict[str, Node], count: int) -> list[str]:
    """The ``count`` most confident functions an inspection can patch (not in test files)."""
    return [f for f in sorted(confidences, key=lambda f: -confidences[f])
            if is_valid_node(nodes[f]) and not is_test_file(nodes[f].file or "")][:count]


@dataclass(frozen=True)
class _Recording:
    """A recording run under way (``_submit_recording``): the tests each function's calls count from."""

    runs: list[PrefectFuture[SuiteTrace]]
    own: dict[str, frozenset[str]]

    def wait(self) -> None:
        """Until the runs are over."""
        for run in self.runs:
            run.wait()

    def _tests(self) -> list[TestResult]:
        return [test for run in self.runs for test in run.result().tests]

    def calls(self) -> dict[str, list[RecordedCall]]:
        """Each function's recorded calls (arguments, results), from its own passing tests only."""
        calls: dict[str, list[RecordedCall]] = {}
        for test in self._tests():
            if test.outcome is TestOutcome.PASSED:
                for call in test.calls:
                    if test.test_id in self.own.get(call.fqn, ()):
                        calls.setdefault(call.fqn, []).append(call)
        return calls

    def by_test(self) -> dict[str, tuple[RecordedCall, ...]]:
        """Every recorded test's calls (failing tests too), for the value comparison."""
        return {test.test_id: test.calls for test in self._tests()}


def _submit_recording(found: DiscoveryResult, params: LocalizeParameters, candidates: Sequence[str],
                      ) -> _Recording:
    """Start one recording run of the passing tests the ``candidates``' inspections will run, and
    of the failing tests, for the value comparison (``_value_evidence``); the candidates' direct
    callees that a failing test ran are recorded too (up to as many again), so that a wrong value
    can be followed down. Each function keeps the calls of its own passing tests only for its
    invariants: they then hold on every passing test of its inspection, whichever functions were
    recorded with it."""
    trace = found.trace
    outcomes = {t.test_id: t.outcome for t in trace.tests if t.test_id not in trace.flaky}
    failing = trace.failed_tests()
    ran_failing = set().union(*(t.covered for t in trace.tests if t.test_id in failing)) if failing else set()
    node_of = {n.fqn: n for n in trace.nodes}
    callees = [e.callee for e in trace.edges if e.caller in set(candidates) and e.callee in ran_failing
               and e.callee not in candidates and e.callee in node_of and is_valid_node(node_of[e.callee])
               and not is_test_file(node_of[e.callee].file or "")]
    candidates = [*candidates, *list(dict.fromkeys(sorted(callees)))[:len(candidates)]]
    limit = params.max_tests_per_inspection
    own = {fqn: frozenset(test for test in tests_for_node(fqn, trace, max_tests=limit).test_ids
                          if outcomes.get(test) is TestOutcome.PASSED)
           for fqn in candidates}
    passing = sorted(set().union(*own.values())) if own else []
    if not passing:
        return _Recording(runs=[], own=own)
    # Recording slows every call of a test down: the tests are shared out over the cores, as the
    # trace's shards are, by their traced durations.
    duration = {t.test_id: t.duration for t in trace.tests}
    tests = [*passing, *sorted(failing)]
    count = max(1, min(params.shards or os.cpu_count() or 1, len(tests)))
    share = even_shares({t: duration.get(t, 0.0) + MIN_TEST_SECONDS for t in tests}, count)
    runs = []
    for index in range(count):
        mine = [t for t in tests if share[t] == index]
        if not mine:
            continue
        request = focused_request(found.prepared, mine, found.overlay, record=tuple(candidates), trace=False)
        runs.append(run_tests.submit(request, backend=params.sandbox, docker_image=params.docker_image,
                                     interpreter_version=found.prepared.interpreter_version))
    return _Recording(runs=runs, own=own)


def _record_calls(found: DiscoveryResult, params: LocalizeParameters, candidates: Sequence[str],
                  ) -> dict[str, list[RecordedCall]]:
    """``_submit_recording``'s calls, waited for."""
    return _submit_recording(found, params, candidates).calls()


def _value_evidence(found: DiscoveryResult, recording: _Recording, signals: dict[str, NodeSignals],
                    confidences: dict[str, float], history: list[InspectionRecord],
                    ) -> tuple[dict[str, NodeSignals], dict[str, float]]:
    """Compare the recorded functions' values in failing and passing tests
    (``equisa_core.localization.value_evidence``): each finding moves its function's odds and joins
    ``history``
    as a ``value-comparison`` record. Returns the signals with the findings and the confidences."""
    trace = found.trace
    callees: dict[str, set[str]] = {}
    for edge in trace.edges:
        callees.setdefault(edge.caller, set()).add(edge.callee)
    tests = {n.fqn for n in trace.nodes if n.file and is_test_file(n.file)}
    called_by_tests = {callee for caller in tests for callee in callees.get(caller, ())}
    findings = compare_values(recording.by_test(), trace.failed_tests(), trace.passed_tests(), callees,
                              called_by_tests)
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
        print(f"[{VALUE_COMPARISON}] {fqn}: origin {finding.origin:.2f}, passed on {finding.passed_on:.2f}"
              f" -> {confidences[fqn]:.3f}")
    return with_values(signals, findings), confidences


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


def _screen_mutants(
    found: DiscoveryResult, params: LocalizeParameters, confidences: dict[str, float], nodes: dict[str, Node],
    problems: list[str], table: LikelihoodTable, threshold: float,
) -> tuple[frozenset[str], list[_Evidence]]:
    """Try the mutants of the ``screen_top`` most likely candidates (those whose estimated cost fits
    ``screen_budget_s``) in sandbox processes running side by side, one per shard (``shards``, by
    default the cores), each with a share of the functions of about equal estimated cost.

    Each mutant runs against its own function's tests (those its inspection would run), failing
    tests first, and stops as soon as it fixes none of them, so most cost a test or two. What the
    mutants showed (a fix, a partial one, or none) is evidence about each function at once, returned
    for ``_replay``: its odds move by the fix likelihoods and a ``mutant-screening`` record joins the
    history; a fix is then confirmed on the whole suite when the function is selected. "No fix" on
    the other candidates counts as much as the fix does: it is what lets a confirmed fix settle the
    run before any inspection. Returns the functions screened (their inspections run no mutants)
    and the evidence to count.
    """
    return _screening_evidence(found, _submit_screening(found, params, confidences, nodes, table, threshold),
                               problems)


@dataclass(frozen=True)
class _Screening:
    """A screening under way: per function, its mutant id prefix, mutants and tests, and the index
    of the run (of ``runs``, one per shard) its mutants are in."""

    plans: dict[str, tuple[str, tuple[Mutant, ...], tuple[str, ...]]]
    shard_of: dict[str, int]
    runs: tuple[PrefectFuture[MutantRunReport], ...]
    started: float

    def wait(self) -> None:
        """Until every run is over (none is left running when the caller goes on without them)."""
        for run in self.runs:
            run.wait()


def _submit_screening(found: DiscoveryResult, params: LocalizeParameters, confidences: dict[str, float],
                      nodes: dict[str, Node], table: LikelihoodTable, threshold: float) -> _Screening:
    """Choose the functions to screen (of the ``screen_top`` most likely, those whose mutants are
    expected to move their confidence by ``threshold``) and start their run (``_screen_mutants``)."""
    started = time.monotonic()
    trace, root = found.trace, found.prepared.workspace.root
    ranked = [f for f in _top_candidates(confidences, nodes, params.screen_top)
              if worth_screening(table, confidences[f], threshold)]
    plans: dict[str, tuple[str, tuple[Mutant, ...], tuple[str, ...]]] = {}
    costs: dict[str, float] = {}
    failing = trace.failed_tests()
    durations = {t.test_id: max(t.duration, MIN_TEST_SECONDS) for t in trace.tests if t.test_id in failing}
    estimate = 0.0
    for fqn in ranked:
        node = nodes[fqn]
        try:
            _, source = read_function(root, node)
        except EquisaError:
            continue
        tests = tuple(tests_for_node(fqn, trace, max_tests=params.max_tests_per_inspection).test_ids)
        mutants = node_mutants(fqn, node, source, params)
        cost = len(mutants) * sum(durations.get(t, 0.0) for t in tests)
        if not cost or estimate + cost > params.screen_budget_s:
            continue  # no mutants, or no failing test to fix (no fix to find), or over the budget
        estimate += cost
        plans[fqn] = (f"s{len(plans)}m", mutants, tests)
        costs[fqn] = cost
    shard_of = even_shares(costs, min(params.shards or os.cpu_count() or 1, len(plans)))
    runs = []
    for shard in sorted(set(shard_of.values())):
        specs = [spec for fqn, (prefix, mutants, tests) in plans.items() if shard_of[fqn] == shard
                 for spec in mutant_specs(nodes[fqn].file or "", mutants, prefix=prefix, tests=tests)]
        # The estimate leaves out each round's own cost (swapping the code in, pytest's protocol,
        # a test's fixtures), which is most of a round on a slow project: the budget is enforced.
        runs.append(submit_rounds(found, params, specs, confirm=True, budget_s=params.screen_budget_s))
    return _Screening(plans=plans, shard_of=shard_of, runs=tuple(runs), started=started)


def even_shares(costs: dict[str, float], count: int) -> dict[str, int]:
    """Each key's share (0 .. count-1), the costliest first to the least loaded share, so the
    shares' summed costs come out about even (the longest-processing-time rule)."""
    loads = [0.0] * max(count, 1)
    share: dict[str, int] = {}
    for key in sorted(costs, key=lambda k: -costs[k]):
        least = loads.index(min(loads))
        share[key] = least
        loads[least] += costs[key]
    return share


def _count(shard_of: dict[str, int], shard: int) -> int:
    """How many functions ``shard`` screens."""
    return sum(1 for s in shard_of.values() if s == shard)


def _screened_suite_run(screening: _Screening, fix: _Evidence) -> dict[str, TestOutcome]:
    """The screening process's own run of the suite with ``fix``'s mutant (see ``submit_rounds``)."""
    if fix.target not in screening.plans:
        return {}
    prefix, mutants, _ = screening.plans[fix.target]
    return suite_run_of(screening.runs[screening.shard_of[fix.target]].result(), prefix, mutants,
                        fix.fix_source)


def _screening_evidence(found: DiscoveryResult, screening: _Screening, problems: list[str],
                        ) -> tuple[frozenset[str], list[_Evidence]]:
    """What the screening's runs showed, judged against ``found``'s trace (its flaky tests left out)."""
    reports: dict[int, MutantRunReport] = {}
    for shard, run in enumerate(screening.runs):
        try:
            reports[shard] = run.result()
        except EquisaError as error:
            problems.append(f"mutant screening did not run for {_count(screening.shard_of, shard)} "
                            f"functions, their inspections run their own mutants: {error.message}")
    plans = {fqn: plan for fqn, plan in screening.plans.items() if screening.shard_of[fqn] in reports}
    found_evidence: list[_Evidence] = []
    for fqn, (prefix, mutants, tests) in plans.items():
        report = reports[screening.shard_of[fqn]]
        update = fix_evidence_of(mutants, unpatched_outcomes(found.trace, tests, report), report, prefix)
        if "fix_evidence" not in update:
            continue
        fix = update.get("fix") or (f"none of its {update['mutants_tried']} mutants fixes a failing test "
                                    "without breaking a passing one")
        if update["fix_evidence"] is FixEvidence.FAILURE_CHANGED:
            fix += ", but some change how a failing test fails"
        found_evidence.append(_Evidence(
            target=fqn, strategy=SCREENING, tests_run=tests, reflection_by="mutants",
            reasoning=f"screening the mutants of the top {len(plans)} candidates: {fix}",
            seconds=round(time.monotonic() - screening.started, 3), **update,
        ))
    return frozenset(plans), found_evidence


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

    screened: frozenset[str]
    evidence: list[_Evidence]
    problems: list[str]
    suite: DiscoveryResult = Field(description="The suite as traced (flaky tests marked).")
    leaders: list[str] = Field(description="The functions most likely after the screening (``record_top``).")
    confirmed: bool = Field(
        False, description="The leading function's fix passed the whole suite: Discovery is then skipped "
        "(see ``run_localization``) and ``suite``'s report says why.")


def _priors(found: DiscoveryResult, changed: Mapping[str, AbstractSet[int]] | None,
            ) -> tuple[TraceReport, dict[str, Node], dict[str, float], dict[str, float],
                       dict[str, NodeSignals]]:
    """The scored suite, its nodes, their Tarantula scores, the prior confidences (several signals,
    see ``equisa_core.localization.prior``) and those signals; raises ``NothingToLocalizeError`` when no
    test fails.
    ``changed``: lines changed since ``--since``, by file."""
    trace = found.trace
    if not trace.failed_tests():
        raise NothingToLocalizeError(
            "nothing to localize: no test fails"
            + (f" ({len(trace.flaky)} flaky tests left out)" if trace.flaky else "")
        )
    failing = [t for t in trace.tests if t.test_id in trace.failed_tests()]
    missing = environment_failures(failing, own_packages(found.prepared.workspace.root))
    if len(missing) == len(failing):
        modules = sorted(set(missing.values()))
        raise EnvironmentFailureError(
            f"the {len(failing)} failing test(s) fail because the suite's interpreter lacks "
            f"{', '.join(repr(m) for m in modules[:5])} (ModuleNotFoundError), not because of the code: "
            "install it there, or give an interpreter that has it (--python)")
    scored = build_trace_report(trace, str(found.prepared.repo))
    nodes = {n.fqn: Node(fqn=n.fqn, file=n.file, start_line=n.start_line, end_line=n.end_line)
             for n in scored.nodes}
    suspiciousness = {n.fqn: n.tarantula for n in scored.nodes}
    signals = node_signals(trace, changed)
    confidences = initial_confidence(prior_scores(signals))
    return scored, nodes, suspiciousness, confidences, signals


def own_packages(root: Path) -> set[str]:
    """The repository's top-level module and package names (``src/`` layouts included)."""
    names: set[str] = set()
    for folder in (root, root / "src"):
        if not folder.is_dir():
            continue
        for entry in folder.iterdir():
            if entry.suffix == ".py":
                names.add(entry.stem)
            elif entry.is_dir() and not entry.name.startswith("."):
                names.add(entry.name)
    return names


def _replay(evidence: Sequence[_Evidence], confidences: dict[str, float],
            history: list[InspectionRecord], table: LikelihoodTable) -> dict[str, float]:
    """Count ``evidence`` in order: each moves its target's odds by its fix likelihoods (``table``'s)
    and joins ``history`` as a record with the prior and posterior it had here."""
    for item in evidence:
        if item.target not in confidences:
            continue
        prior = confidences[item.target]
        confidences = update_with_likelihoods(confidences, item.target, table.fix[item.fix_evidence])
        history.append(InspectionRecord(
            iteration=len(history) + 1, signals=None, reflection=None, outcome=None, prior=prior,
            posterior=confidences[item.target], **item.model_dump(),
        ))
        print(f"[{item.strategy}] {item.target}: {item.fix_evidence.value} -> {confidences[item.target]:.3f}")
    return confidences


def _fix_before_discovery(
    params: LocalizeParameters, discovery_params: DiscoveryParameters, use_llm: bool,
    changed: Mapping[str, AbstractSet[int]] | None, table: LikelihoodTable, threshold: float,
) -> tuple[DiscoveryResult, LocalizationReport] | _Carried:
    """Mutant screening on the suite as it is, and the whole suite on the most likely fix it found.

    When that fix is confirmed and its function reaches the threshold, the run is done without
    Discovery (whose generated tests would only have split groups the fix already settled): the
    result and its report. Otherwise what the screening and the confirmation showed, for the loop.
    """
    # The failing tests' rerun apart (flakiness) and the screening run at the same time: each is
    # one sandbox process, and the screening is judged once the flaky tests are known.
    plain_params = discovery_params.model_copy(update={"discovery": False})
    plain = trace_only(plain_params.model_copy(update={"rerun_failures": False}))
    scored, nodes, suspiciousness, confidences, signals = _priors(plain, changed)
    rerun = submit_flaky_rerun(plain.prepared, plain_params, plain.trace) if plain_params.rerun_failures \
        else None
    screening = _submit_screening(plain, params, confidences, nodes, table, threshold)
    try:
        marked = with_flaky(plain.trace, rerun)
        if marked.flaky != plain.trace.flaky:  # else the suite and its priors are as they were
            plain = as_traced(plain, marked, plain_params)
            scored, nodes, suspiciousness, confidences, signals = _priors(plain, changed)
        _announce_prior(params.progress_key, confidences, nodes)
    finally:
        screening.wait()  # not left running when every failure turned out flaky
    problems: list[str] = []
    screened, evidence = _screening_evidence(plain, screening, problems)
    history: list[InspectionRecord] = []
    confidences = _replay(evidence, confidences, history, table)
    fixes = [e for e in evidence if e.fix_evidence is FixEvidence.FIX_FOUND]
    leaders = _top_candidates(confidences, nodes, params.record_top)
    if not fixes:
        return _Carried(screened=screened, evidence=evidence, problems=problems, suite=plain, leaders=leaders)
    best = max(fixes, key=lambda e: confidences[e.target])
    checked = time.monotonic()
    seen = _confirm_fix(best.target, nodes[best.target], plain, params, best,
                        ran=_screened_suite_run(screening, best))
    confirmation = _Evidence(
        target=best.target, strategy=seen.strategy, tests_run=seen.tests_run, reflection_by=seen.decision_by,
        reasoning=seen.reasoning, seconds=round(time.monotonic() - checked, 3),
        fix_evidence=seen.fix_evidence, fix=seen.fix, fix_source=seen.fix_source,  # type: ignore[arg-type]
    )
    confidences = _replay([confirmation], confidences, history, table)
    converged = is_converged(confidences)
    if not converged:
        leads = max(confidences, key=confidences.__getitem__) == best.target
        confirmed = confirmation.fix_evidence is FixEvidence.FIX_CONFIRMED and leads
        suite = plain.model_copy(update={"report": plain.report.model_copy(update={
            "enabled": True, "stopped_because": f"not needed: the fix of {best.target}, which leads, "
                                                "passes the whole suite"})})
        return _Carried(screened=screened, evidence=[*evidence, confirmation], problems=problems,
                        suite=suite if confirmed else plain, confirmed=confirmed,
                        leaders=_top_candidates(confidences, nodes, params.record_top))
    locations = {f: (n.file, n.start_line, n.end_line) for f, n in nodes.items()}
    ranking = rank(confidences, suspiciousness, locations, prior_scores(signals))
    discovery_report = plain.report.model_copy(update={
        "enabled": True,
        "stopped_because": "not needed: mutant screening found a fix the whole suite confirms"})
    report = LocalizationReport(
        mode="llm" if use_llm else "deterministic", converged=True,
        stopped_because=f"{converged} reached {CONFIDENCE_THRESHOLD}", ranking=tuple(ranking),
        ambiguity_groups=scored.ambiguity_groups, inspections=tuple(history),
        tests=_counts(plain.trace, plain), discovery=discovery_report, cost={"usd": 0.0},
        problems=tuple(plain.problems) + tuple(problems), sandbox=plain.prepared.sandbox,
        prior=PriorEvidence(weights=DEFAULT_WEIGHTS, signals=signals), likelihoods=table.name,
    )
    _publish_ranking(report)
    return plain.model_copy(update={"report": discovery_report}), report


#: Functions the first answer names (``_announce_prior``).
FIRST_ANSWER_TOP = 3


def _announce_prior(progress_key: str | None, confidences: Mapping[str, float], nodes: Mapping[str, Node],
                    ) -> None:
    """The first answer, as soon as the trace (and the flaky re-run) are in: the prior's best
    functions, a line above the command's spinner, while the screening and the loop go on: the
    answer spectrum-based localization would give (measured: 4-5.5 s into a 6-10 s run).
    Only the screening path (``_fix_before_discovery``) announces it."""
    best = _top_candidates(dict(confidences), dict(nodes), FIRST_ANSWER_TOP)
    if best:
        listed = ", ".join(f"{fqn} ({confidences[fqn]:.2f})" for fqn in best)
        report_progress(progress_key, {"kind": "note", "text": f"First answer, from the trace and the "
                                                               f"prior alone: {listed}; now checking it"})


def _confirm_fix(target: str, node: Node, found: DiscoveryResult, params: LocalizeParameters,
                 pending: InspectionRecord | _Evidence, ran: dict[str, TestOutcome] | None = None,
                 ) -> Observation:
    """Run the fix found by the target's mutants against the whole amplified suite.

    ``ran``: outcomes of a mutant process that already ran the fix through the suite (see
    ``flows.inspections.submit_rounds``). When it covers the suite and confirms the fix, no run is
    made; otherwise the fix runs in a process of its own, as a fresh run would see it (tests broken
    there may owe it to the mutants that ran before in that process).
    """
    prepared, trace = found.prepared, found.trace
    overlay, moved = overlay_for(prepared.workspace.root, node, pending.fix_source or "")
    everything = [t.test_id for t in trace.tests if t.test_id not in trace.flaky]
    passed = set(without_testgen(dict.fromkeys(trace.passed_tests())))  # testgen tests: evidence only
    outcomes = {t: ran[t] for t in everything if t in ran} if ran else {}
    tests: Sequence[TestResult] = ()
    if len(outcomes) < len(everything) or \
            confirm_fix(trace.failed_tests(), passed, outcomes) is not FixEvidence.FIX_CONFIRMED:
        request = focused_request(prepared, everything, {**found.overlay, **overlay}, trace=False)
        run: SuiteTrace = run_tests(request, backend=params.sandbox, docker_image=params.docker_image,
                                    interpreter_version=prepared.interpreter_version)
        outcomes, tests = {t.test_id: t.outcome for t in run.tests}, run.tests
    evidence = confirm_fix(trace.failed_tests(), passed, outcomes)
    broken = sorted(t for t in passed if outcomes.get(t) is not TestOutcome.PASSED)
    still = sorted(t for t in trace.failed_tests() if outcomes.get(t) is not TestOutcome.PASSED)
    where = "" if tests else " (run in the mutants' own process)"
    reasoning = (f"the fix ({pending.fix}) passes all {len(outcomes)} tests of the suite{where}"
                 if evidence is FixEvidence.FIX_CONFIRMED else
                 f"the fix ({pending.fix}) leaves {len(still)} failing and breaks {len(broken)}: "
                 + ", ".join([*still, *broken][:3]))
    return Observation(
        strategy="fix-confirmation", invariants=0, tests_run=tuple(outcomes),
        signals=observe(moved, tests), decision=None, decision_by="mutants", reasoning=reasoning,
        cost_usd=0.0, fix_evidence=evidence,
        fix=pending.fix, fix_source=pending.fix_source,
    )

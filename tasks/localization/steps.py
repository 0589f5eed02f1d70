"""How the Localization loop's steps run (``equisa_core.localization.machine``), apart from the
inspections themselves (``tasks.localization.inspections``): the suite's priors, mutant screening, recording
calls and comparing their values, confirming a fix on the whole suite; and the log lines of the
loop's records.

Each function here does I/O (sandbox runs, reading the repository) and returns what it saw as the
machine's observation data; no decision of the loop is made here.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path

from prefect.futures import PrefectFuture

from equisa_core.common.models import Node, RecordedCall, SuiteTrace, TestOutcome, TestResult
from equisa_core.discovery.environment_failures import environment_failures
from equisa_core.discovery.trace_report import build_trace_report
from equisa_core.errors import (
    BudgetSpentError,
    EnvironmentFailureError,
    EquisaError,
    NoProjectCodeError,
    NothingToLocalizeError,
    WeakSandboxError,
)
from equisa_core.localization.fix_evidence import FixEvidence, confirm_fix
from equisa_core.localization.machine import (
    FIX_CONFIRMATION,
    SCREENING,
    ConfirmFix,
    Evidence,
    Inspected,
    InspectionResult,
    Screened,
    Suite,
)
from equisa_core.localization.prior import node_signals
from equisa_core.localization.selection import is_test_file, is_valid_node, tests_for_node
from equisa_core.localization.steps import InspectionRecord, TestCounts
from equisa_core.localization.value_evidence import ValueFinding, compare_values
from equisa_core.mutation.mutants import Mutant
from equisa_core.validation.generated_tests import without_testgen
from tasks.discovery.suite import DiscoveryResult
from tasks.localization.inspections import (
    fix_evidence_of,
    mutant_specs,
    node_mutants,
    submit_rounds,
    suite_run_of,
    unpatched_outcomes,
)
from tasks.run.mutants import MutantRunReport
from tasks.run.parameters import LocalizeParameters
from tasks.run.patched_function import observe, overlay_for, read_function
from tasks.run.prepared_run import elsewhere_note, focused_request
from tasks.sandbox.run_tests import run_tests

__all__ = ["MIN_TEST_SECONDS", "Recording", "RecordedTests", "Screening", "suite_of", "own_packages",
           "submit_recording", "record_calls", "value_findings", "submit_screening", "screening_evidence",
           "screened_suite_run", "confirm_fix_on_suite", "confirm_step", "even_shares", "suite_problems",
           "print_records"]

#: A test's least cost in a mutant round (swapping the code in, fixtures, the report).
MIN_TEST_SECONDS = 0.005


# --- the suite's priors ------------------------------------------------------------------------------


def suite_of(found: DiscoveryResult, changed: Mapping[str, AbstractSet[int]] | None,
             problems: Sequence[str] = ()) -> Suite:
    """The traced suite as the loop needs it: its nodes, their Tarantula scores, the prior's signals
    (``equisa_core.localization.prior``); raises ``NothingToLocalizeError`` when no test fails,
    ``EnvironmentFailureError`` when every failure is a missing module and ``NoProjectCodeError``
    when the suite ran no function of the repository.
    ``changed``: lines changed since ``--since``, by file; ``problems``: the report's so far."""
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
    if not scored.nodes and trace.imported_elsewhere:
        raise NoProjectCodeError(f"the {len(failing)} failing test(s) ran no function of the repository's "
                                 f"copy: {elsewhere_note(trace.imported_elsewhere)}")
    if not scored.nodes:
        raise NoProjectCodeError(
            f"the {len(failing)} failing test(s) ran no function of the repository: the code they import is "
            "not the repository's (is a copy of the project installed in the suite's interpreter, "
            f"{found.prepared.base.interpreter}?), or the failures lie in the tests alone")
    return Suite(
        nodes={n.fqn: Node(fqn=n.fqn, file=n.file, start_line=n.start_line, end_line=n.end_line)
               for n in scored.nodes},
        suspiciousness={n.fqn: n.tarantula for n in scored.nodes},
        signals=node_signals(trace, changed),
        ambiguity_groups=scored.ambiguity_groups, tests=_counts(trace, found), discovery=found.report,
        sandbox=found.prepared.sandbox, environment=found.prepared.environment, problems=tuple(problems),
        ledger=found.ledger, failing_durations=_failing_durations(failing, {n.fqn for n in scored.nodes}),
    )


def _failing_durations(failing: Sequence[TestResult], functions: AbstractSet[str],
                       ) -> dict[str, tuple[float, ...]]:
    """Per function of ``functions``, the traced durations of the ``failing`` tests that run it (at
    least ``MIN_TEST_SECONDS`` each): what the screening's estimated cost is made of."""
    durations: dict[str, list[float]] = {}
    for test in failing:
        for fqn in test.covered & functions:
            durations.setdefault(fqn, []).append(max(test.duration, MIN_TEST_SECONDS))
    return {fqn: tuple(found) for fqn, found in durations.items()}


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


def _counts(trace: SuiteTrace, found: DiscoveryResult) -> TestCounts:
    """The suite's own tests by outcome (flaky ones apart), and the generated tests kept."""
    generated = set(found.report.tests)
    own = [t for t in trace.tests if t.test_id not in generated and t.test_id not in trace.flaky]
    return TestCounts(
        passed=sum(t.outcome is TestOutcome.PASSED for t in own),
        failed=sum(t.outcome in (TestOutcome.FAILED, TestOutcome.ERROR) for t in own),
        flaky=len(trace.flaky), generated=len(generated),
    )


# --- recording calls, comparing values -----------------------------------------------------------------


@dataclass(frozen=True)
class RecordedTests:
    """A finished recording: the functions whose calls it recorded, and its tests' results."""

    functions: frozenset[str]
    tests: tuple[TestResult, ...]


@dataclass(frozen=True)
class Recording:
    """A recording run under way (``submit_recording``): the tests each function's calls count from."""

    runs: list[PrefectFuture[SuiteTrace]]
    own: dict[str, frozenset[str]]

    def wait(self) -> None:
        """Until the runs are over."""
        for run in self.runs:
            run.wait()

    def _tests(self) -> list[TestResult]:
        return [test for run in self.runs for test in run.result().tests]

    def finished(self) -> RecordedTests:
        """The runs' results, waited for: what Validation reuses instead of recording again."""
        return RecordedTests(functions=frozenset(self.own) if self.runs else frozenset(),
                             tests=tuple(self._tests()))

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


def _with_callees(trace: SuiteTrace, candidates: Sequence[str]) -> list[str]:
    """``candidates`` and their direct callees that a failing test ran (up to as many again), so that
    a wrong value can be followed down."""
    failing = trace.failed_tests()
    ran_failing = set().union(*(t.covered for t in trace.tests if t.test_id in failing)) if failing else set()
    node_of = {n.fqn: n for n in trace.nodes}
    callees = [e.callee for e in trace.edges if e.caller in set(candidates) and e.callee in ran_failing
               and e.callee not in candidates and e.callee in node_of and is_valid_node(node_of[e.callee])
               and not is_test_file(node_of[e.callee].file or "")]
    return [*candidates, *list(dict.fromkeys(sorted(callees)))[:len(candidates)]]


def submit_recording(found: DiscoveryResult, params: LocalizeParameters, candidates: Sequence[str],
                     ) -> Recording:
    """Start one recording run of the passing tests the ``candidates``' inspections will run, and
    of the failing tests, for the value comparison (``value_findings``); their callees are recorded
    too (``_with_callees``). Each function keeps the calls of its own passing tests only for its
    invariants: they then hold on every passing test of its inspection, whichever functions were
    recorded with it."""
    trace = found.trace
    outcomes = {t.test_id: t.outcome for t in trace.tests if t.test_id not in trace.flaky}
    candidates = _with_callees(trace, candidates)
    limit = params.max_tests_per_inspection
    own = {fqn: frozenset(test for test in tests_for_node(fqn, trace, max_tests=limit).test_ids
                          if outcomes.get(test) is TestOutcome.PASSED)
           for fqn in candidates}
    passing = sorted(set().union(*own.values())) if own else []
    if not passing:
        return Recording(runs=[], own=own)
    # Recording slows every call of a test down: the tests are shared out over the cores, as the
    # trace's shards are, by their traced durations.
    duration = {t.test_id: t.duration for t in trace.tests}
    tests = [*passing, *sorted(trace.failed_tests())]
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
    return Recording(runs=runs, own=own)


def record_calls(found: DiscoveryResult, params: LocalizeParameters, candidates: Sequence[str],
                 ) -> dict[str, list[RecordedCall]]:
    """``submit_recording``'s calls, waited for."""
    return submit_recording(found, params, candidates).calls()


def value_findings(found: DiscoveryResult, recording: Recording) -> dict[str, ValueFinding]:
    """The recorded functions' values in failing and passing tests compared
    (``equisa_core.localization.value_evidence``)."""
    trace = found.trace
    callees: dict[str, set[str]] = {}
    for edge in trace.edges:
        callees.setdefault(edge.caller, set()).add(edge.callee)
    tests = {n.fqn for n in trace.nodes if n.file and is_test_file(n.file)}
    called_by_tests = {callee for caller in tests for callee in callees.get(caller, ())}
    return compare_values(recording.by_test(), trace.failed_tests(), trace.passed_tests(), callees,
                          called_by_tests)


# --- mutant screening ----------------------------------------------------------------------------------


#: The share of a partial screening's budget that making the mutants may take (the rest is for the
#: rounds, which the probe cuts by the clock).
PLANNING_SHARE = 0.5
#: A screened function's plan: its mutants' id prefix, its mutants, the tests they run against.
Plan = tuple[str, tuple[Mutant, ...], tuple[str, ...]]


@dataclass(frozen=True)
class Screening:
    """A screening under way: per function, its mutant id prefix, mutants and tests, and the index
    of the run (of ``runs``, one per shard) its mutants are in."""

    plans: dict[str, Plan]
    shard_of: dict[str, int]
    runs: tuple[PrefectFuture[MutantRunReport], ...]
    started: float
    skipped: dict[str, str] = field(default_factory=dict)  # function -> why it could not be screened
    unplanned: tuple[str, ...] = ()  # functions the budget left no time to make the mutants of

    def wait(self) -> None:
        """Until every run is over (none is left running when the caller goes on without them)."""
        for run in self.runs:
            run.wait()


def _screening_plans(found: DiscoveryResult, params: LocalizeParameters, functions: Sequence[str],
                     nodes: Mapping[str, Node], budget_s: float | None,
                     ) -> tuple[dict[str, Plan], dict[str, float], dict[str, str], tuple[str, ...]]:
    """Of ``functions`` (most likely first), those to screen: their plans and estimated costs (the
    failing tests' durations times the mutants); why those whose source cannot be read were
    skipped; and those a budget left unplanned.

    ``budget_s`` (the machine's budget for a partial screening): functions are planned in order
    until making their mutants (up to a second for a long function) has taken
    ``PLANNING_SHARE`` of it; the rounds' budget then cuts the rest short, by the clock (the
    estimate, from the traced durations, was up to ten times the rounds' real cost on small tests).
    Without it, only the functions whose estimated cost fits ``screen_budget_s`` are planned."""
    trace, root = found.trace, found.prepared.workspace.root
    failing = trace.failed_tests()
    durations = {t.test_id: max(t.duration, MIN_TEST_SECONDS) for t in trace.tests if t.test_id in failing}
    timeboxed = budget_s is not None
    capacity = math.inf if timeboxed else params.screen_budget_s
    deadline = time.monotonic() + PLANNING_SHARE * (budget_s or 0.0)
    plans: dict[str, Plan] = {}
    costs: dict[str, float] = {}
    skipped: dict[str, str] = {}
    estimate = 0.0
    for position, fqn in enumerate(functions):
        if timeboxed and time.monotonic() > deadline:
            return plans, costs, skipped, tuple(functions[position:])
        node = nodes[fqn]
        try:
            _, source = read_function(root, node)
        except EquisaError as error:
            skipped[fqn] = error.message
            continue
        tests = tuple(tests_for_node(fqn, trace, max_tests=params.max_tests_per_inspection).test_ids)
        per_mutant = sum(durations.get(t, 0.0) for t in tests)
        if not per_mutant or estimate + per_mutant > capacity:
            continue  # no failing test to fix (no fix to find), or over the budget with one mutant
        mutants = node_mutants(fqn, node, source, params)  # made only now: most of the screening's set-up
        cost = len(mutants) * per_mutant
        if not cost or estimate + cost > capacity:
            continue  # no mutants, or over the budget
        estimate += cost
        plans[fqn] = (f"s{len(plans)}m", mutants, tests)
        costs[fqn] = cost
    return plans, costs, skipped, ()


def submit_screening(found: DiscoveryResult, params: LocalizeParameters, functions: Sequence[str],
                     nodes: Mapping[str, Node], budget_s: float | None = None) -> Screening:
    """Start trying the mutants of ``functions`` in sandbox processes running side by side, one per
    shard (``shards``, by default the cores), each with a share of the functions of about equal
    estimated cost, most likely first within each. Each mutant runs against its own function's
    tests, failing tests first, and stops as soon as it fixes none of them. ``budget_s``: the
    machine's budget for the rounds (a partial screening: the functions it leaves no time for are
    left out); without it, only the functions whose estimated cost fits ``screen_budget_s`` run."""
    started = time.monotonic()
    plans, costs, skipped, unplanned = _screening_plans(found, params, functions, nodes, budget_s)
    shards = min(params.shards or os.cpu_count() or 1, len(plans))
    shard_of = even_shares(costs, shards, in_order=budget_s is not None)
    rounds_budget = params.screen_budget_s if budget_s is None else min(budget_s, params.screen_budget_s)
    runs = []
    for shard in sorted(set(shard_of.values())):
        specs = [spec for fqn, (prefix, mutants, tests) in plans.items() if shard_of[fqn] == shard
                 for spec in mutant_specs(nodes[fqn].file or "", mutants, prefix=prefix, tests=tests)]
        # The estimate leaves out each round's own cost (swapping the code in, pytest's protocol,
        # a test's fixtures), which is most of a round on a slow project: the budget is enforced.
        runs.append(submit_rounds(found, params, specs, confirm=True, budget_s=rounds_budget))
    return Screening(plans=plans, shard_of=shard_of, runs=tuple(runs), started=started, skipped=skipped,
                     unplanned=unplanned)


def even_shares(costs: dict[str, float], count: int, in_order: bool = False) -> dict[str, int]:
    """Each key's share (0 .. count-1), each to the least loaded share so far, so the shares'
    summed costs come out about even: the costliest first (the longest-processing-time rule), or,
    ``in_order``, in ``costs``' own order (most likely first: a screening the clock cuts short
    has then started its leaders in every share)."""
    loads = [0.0] * max(count, 1)
    share: dict[str, int] = {}
    for key in (costs if in_order else sorted(costs, key=lambda k: -costs[k])):
        least = loads.index(min(loads))
        share[key] = least
        loads[least] += costs[key]
    return share


def _count(shard_of: dict[str, int], shard: int) -> int:
    """How many functions ``shard`` screens."""
    return sum(1 for s in shard_of.values() if s == shard)


def screened_suite_run(screening: Screening | None, target: str, fix_source: str | None,
                       ) -> dict[str, TestOutcome]:
    """The screening process's own run of the suite with ``target``'s fix (see ``submit_rounds``)."""
    if screening is None or target not in screening.plans:
        return {}
    prefix, mutants, _ = screening.plans[target]
    return suite_run_of(screening.runs[screening.shard_of[target]].result(), prefix, mutants, fix_source)


def screening_evidence(found: DiscoveryResult, screening: Screening) -> Screened:
    """What the screening's runs showed, judged against ``found``'s trace (its flaky tests left out):
    per function, a fix, a partial one, or none; a function some of whose mutants the budget left
    unrun, and none of whose mutants ran fixed a test, is left out (its evidence is not counted)."""
    reports: dict[int, MutantRunReport] = {}
    problems = [f"{fqn} was not screened: {reason}" for fqn, reason in screening.skipped.items()]
    for shard, run in enumerate(screening.runs):
        try:
            reports[shard] = run.result()
        except BudgetSpentError:
            raise  # cut at the run's deadline: the driver stops its loop
        except EquisaError as error:
            problems.append(f"mutant screening did not run for {_count(screening.shard_of, shard)} "
                            f"functions, their inspections run their own mutants: {error.message}")
    plans = {fqn: plan for fqn, plan in screening.plans.items() if screening.shard_of[fqn] in reports}
    found_evidence: list[Evidence] = []
    left_out: list[str] = []
    for fqn, (prefix, mutants, tests) in plans.items():
        report = reports[screening.shard_of[fqn]]
        update = fix_evidence_of(mutants, unpatched_outcomes(found.trace, tests, report), report, prefix)
        if _cut_short(report, prefix, len(mutants)) and update.get("fix") is None:
            left_out.append(fqn)
            continue
        if "fix_evidence" not in update:
            continue
        fix = str(update.get("fix") or (f"none of its {update['mutants_tried']} mutants fixes a failing "
                                        "test without breaking a passing one"))
        if update["fix_evidence"] is FixEvidence.FAILURE_CHANGED:
            fix += ", but some change how a failing test fails"
        found_evidence.append(Evidence(
            target=fqn, strategy=SCREENING, tests_run=tests, reflection_by="mutants",
            reasoning=f"screening the mutants of the top {len(plans)} candidates: {fix}",
            seconds=round(time.monotonic() - screening.started, 3), **update,
        ))
    screened = frozenset(plans) - set(left_out)
    return Screened(functions=screened, evidence=tuple(found_evidence), problems=tuple(problems),
                    left_out=(*left_out, *screening.unplanned))


def _cut_short(report: MutantRunReport, prefix: str, count: int) -> bool:
    """Whether the rounds' budget left some of the mutants ``<prefix>0 .. <prefix><count-1>`` unrun."""
    return any(report.mutants.get(f"{prefix}{index}") is not None
               and report.mutants[f"{prefix}{index}"].status == "not_run" for index in range(count))


# --- confirming a fix ----------------------------------------------------------------------------------


def confirm_fix_on_suite(target: str, node: Node, found: DiscoveryResult, params: LocalizeParameters,
                         fix: str | None, fix_source: str | None,
                         ran: Mapping[str, TestOutcome] | None = None) -> InspectionResult:
    """Run the fix found by the target's mutants against the whole amplified suite.

    ``ran``: outcomes of a mutant process that already ran the fix through the suite (see
    ``tasks.localization.inspections.submit_rounds``). When it covers the suite and confirms the fix, no run is
    made; otherwise the fix runs in a process of its own, as a fresh run would see it (tests broken
    there may owe it to the mutants that ran before in that process).
    """
    prepared, trace = found.prepared, found.trace
    overlay, moved = overlay_for(prepared.workspace.root, node, fix_source or "")
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
    reasoning = (f"the fix ({fix}) passes all {len(outcomes)} tests of the suite{where}"
                 if evidence is FixEvidence.FIX_CONFIRMED else
                 f"the fix ({fix}) leaves {len(still)} failing and breaks {len(broken)}: "
                 + ", ".join([*still, *broken][:3]))
    return InspectionResult(
        strategy=FIX_CONFIRMATION, invariants=0, tests_run=tuple(outcomes),
        signals=observe(moved, tests), decision=None, decision_by="mutants", reasoning=reasoning,
        fix_evidence=evidence, fix=fix, fix_source=fix_source,
    )


def confirm_step(step: ConfirmFix, suite: Suite, found: DiscoveryResult, params: LocalizeParameters,
                 screening: Screening | None, started: float, elapsed: Callable[[], float]) -> Inspected:
    """The ``ConfirmFix`` step's observation: the fix run on the whole suite (the screening's run when
    it covered the suite); a node whose fix cannot be run is an error of that node, unless screened."""
    ran = screened_suite_run(screening, step.target, step.fix_source) if step.screened else None
    try:
        seen = confirm_fix_on_suite(step.target, suite.nodes[step.target], found, params, step.fix,
                                    step.fix_source, ran=ran)
    except WeakSandboxError:
        raise  # a policy, not a failure of this node
    except BudgetSpentError:
        raise  # cut at the run's deadline: the driver stops its loop
    except EquisaError as error:
        if step.screened:
            raise
        return Inspected(target=step.target, error=error.message)
    return Inspected(target=step.target, seen=seen, seconds=round(time.monotonic() - started, 3),
                     elapsed_s=elapsed())


def suite_problems(found: DiscoveryResult, llm_problems: Sequence[str]) -> tuple[str, ...]:
    """The suite's problems, the model's, and the test modules that do not collect."""
    return (*found.problems, *(p for p in llm_problems if p not in found.problems),
            *(f"{e.location} does not collect, its tests were left out: {_last_line(e.message)}"
              for e in found.trace.collect_errors))


def print_records(records: tuple[InspectionRecord, ...], iterations: int) -> None:
    """One log line per record: evidence from outside the loop by its strategy, inspections by number."""
    for item in records:
        if item.signals is None:
            said = item.fix_evidence.value if item.fix_evidence is not None else "value comparison"
            print(f"[{item.strategy}] {item.target}: {said} -> {item.posterior:.3f}")
            continue
        iterations += 1
        said = " + ".join(str(e.value) for e in (item.outcome, item.fix_evidence) if e is not None)
        print(f"[{iterations}] {item.target}: {said} -> {item.posterior:.3f}")


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no message"

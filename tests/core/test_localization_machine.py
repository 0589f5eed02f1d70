"""The Localization loop's state machine (``equisa_core.localization.machine``), property-based.

Runs are simulated the way the driver runs them: the machine's steps are answered with generated
observations (what a sandbox might have seen), recorded in order. The properties: replaying the
observations gives the same states and report; the state survives JSON; confidences stay a
distribution; the budgets stop the loop; a verdict is final.
"""

from __future__ import annotations

import math
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from equisa_core.common.cost import CostLedger, LLMCall
from equisa_core.common.loop import replay
from equisa_core.common.models import Node
from equisa_core.localization.bayes import LLM_BUGGY, LLM_NOT_BUGGY, initial_confidence
from equisa_core.localization.fix_evidence import FixEvidence
from equisa_core.localization.machine import (
    FIX_CONFIRMATION,
    SCREENING,
    ConfirmFix,
    Discover,
    Evidence,
    Inspect,
    Inspected,
    InspectionResult,
    LocalizationObservation,
    LocalizationSettings,
    LocalizationState,
    MarkFlaky,
    RecordCalls,
    Screened,
    ScreenMutants,
    Suite,
    Traced,
    ValuesCompared,
    initial_state,
    next_steps,
    record,
    report,
    verdict,
)
from equisa_core.localization.prior import NodeSignals, prior_scores
from equisa_core.localization.screening_cost import SCREEN_FLOOR_S, ScreeningCost, screening_estimate
from equisa_core.localization.signals import Signals
from equisa_core.localization.steps import FIRST_ANSWER_KEPT, TestCounts, rank
from equisa_core.localization.value_evidence import ValueFinding

#: More steps than any simulated run takes (its budgets stop it well before).
MAX_STEPS = 200

#: Every reason a run may stop for (the reports' ``stopped_because``).
REASONS = (
    r"\S+ reached 0\.9", r"\d+ inspections in a row brought no new evidence",
    r"LLM cost budget \(\$[\d.]+\) spent", r"time budget \([\d.]+s\) spent", "iteration budget spent",
    "no inspections asked for", "every inspectable candidate was inspected",
    r"no inspection left is expected to move a confidence by [\d.]+ or more \((fitted|seed) likelihoods\)",
    r"the answer after the screening is decisive: its leader has "
    r"(no runner-up|[\d.]+ times the runner-up's confidence) \(the calibrated margin is [\d.]+\)",
)

unit = st.floats(0.0, 1.0, allow_nan=False)


#: A model call that spent 0.3 USD, and the same answer from the cache (it spends nothing).
PAID = LLMCall(purpose="reflection", model="m", prompt_hash="h", cost_usd=0.3)
CACHED = PAID.model_copy(update={"cached": True})


@st.composite
def suites(draw: st.DrawFn, names: tuple[str, ...] | None = None) -> Suite:
    """A traced suite of a few functions (one of them, sometimes, in a test file)."""
    if names is None:
        count = draw(st.integers(2, 6))
        names = tuple(f"pkg.mod.f{i}" for i in range(count))
    nodes = {n: Node(fqn=n, file="tests/test_mod.py" if n.endswith("9") else "pkg/mod.py",
                     start_line=10 * i + 1, end_line=10 * i + 5) for i, n in enumerate(names)}
    signals = {n: NodeSignals(ochiai=draw(unit), dstar=draw(unit), tarantula=draw(unit), on_stack=draw(unit),
                              deepest=draw(unit), near_deepest=draw(unit), test_calls=draw(unit),
                              near_test=draw(unit), failure_machinery=0.0)
               for n in names}
    return Suite(nodes=nodes, suspiciousness={n: draw(unit) for n in names}, signals=signals,
                 tests=TestCounts(passed=draw(st.integers(0, 9)), failed=1, flaky=0, generated=0),
                 problems=tuple(draw(st.lists(st.sampled_from(["a problem"]), max_size=1))),
                 ledger=CostLedger(calls=draw(st.sampled_from([(), (PAID,), (CACHED,)]))),
                 failing_durations={n: tuple(draw(st.lists(st.floats(0.005, 3.0), max_size=2)))
                                    for n in names})


fix_evidence = st.sampled_from(list(FixEvidence))


@st.composite
def inspection_results(draw: st.DrawFn, strategy: str = "deterministic") -> InspectionResult:
    evidence = draw(st.one_of(st.none(), fix_evidence))
    found = evidence is FixEvidence.FIX_FOUND
    return InspectionResult(
        strategy=strategy, invariants=draw(st.integers(0, 3)), tests_run=("tests/test_mod.py::test_a",),
        signals=Signals(is_covered=draw(st.booleans()), has_target_assertion=draw(st.booleans()),
                        is_failure=draw(st.booleans())),
        decision=draw(st.sampled_from([None, LLM_BUGGY, LLM_NOT_BUGGY])), decision_by="traceback",
        reasoning="generated", calls=draw(st.sampled_from([(), (), (PAID,), (CACHED,)])),
        mutants_tried=draw(st.integers(0, 5)), fix_evidence=evidence,
        fix="line 1: `>` -> `>=`" if found else None, fix_source="def f(): pass" if found else None,
    )


@st.composite
def answer(draw: st.DrawFn, state: LocalizationState, step: object) -> LocalizationObservation:
    """What running ``step`` might have seen."""
    names = tuple(state.suite.nodes) if state.suite is not None else None
    elapsed = state.elapsed_s + draw(st.floats(0.0, 50.0))
    if isinstance(step, (Discover, MarkFlaky)):
        return Traced(suite=draw(suites(names)), elapsed_s=elapsed)
    if isinstance(step, ScreenMutants):
        ran = draw(st.lists(st.sampled_from(step.functions), unique=True)) if step.functions else []
        evidence = []
        for fqn in ran:
            kind = draw(st.sampled_from([e for e in FixEvidence if e is not FixEvidence.FIX_CONFIRMED]))
            found = kind is FixEvidence.FIX_FOUND
            evidence.append(Evidence(target=fqn, strategy=SCREENING, tests_run=(), reflection_by="mutants",
                                     reasoning="screened", seconds=1.0, mutants_tried=3, fix_evidence=kind,
                                     fix="a fix" if found else None, fix_source="src" if found else None))
        return Screened(functions=frozenset(ran), evidence=tuple(evidence),
                        problems=tuple(draw(st.lists(st.just("screening problem"), max_size=1))))
    if isinstance(step, RecordCalls):
        chosen = draw(st.lists(st.sampled_from(step.functions), unique=True)) if step.functions else []
        findings = {f: ValueFinding(origin=draw(unit), passed_on=draw(unit)) for f in chosen}
        return ValuesCompared(findings=findings)
    if isinstance(step, ConfirmFix):
        kind = draw(st.sampled_from([FixEvidence.FIX_CONFIRMED, FixEvidence.FIX_REGRESSES]))
        seen = draw(inspection_results(FIX_CONFIRMATION)).model_copy(update={"fix_evidence": kind})
        if draw(st.integers(0, 9)) == 0:
            return Inspected(target=step.target, error="cannot be built")
        return Inspected(target=step.target, seen=seen, seconds=1.0, elapsed_s=elapsed)
    assert isinstance(step, Inspect)
    ahead = {t: draw(inspection_results()) for t in step.batch if draw(st.booleans())}
    if draw(st.integers(0, 9)) == 0:
        return Inspected(target=step.target, error="cannot be built", ahead=ahead)
    seen = ahead.get(step.target) or draw(inspection_results())
    return Inspected(target=step.target, seen=seen, ahead=ahead, seconds=1.0, elapsed_s=elapsed,
                     problems=tuple(draw(st.lists(st.just("model failed"), max_size=1))))


settings_strategy = st.builds(
    LocalizationSettings,
    mode=st.sampled_from(["deterministic", "llm"]), likelihoods=st.sampled_from(["fitted", "seed"]),
    min_expected_shift=st.sampled_from([0.0, 0.005, 0.05]), mutants=st.booleans(),
    screen_top=st.integers(0, 4), screen_first=st.booleans(), max_iterations=st.integers(0, 8),
    max_cost_usd=st.sampled_from([0.5, 2.0]), max_seconds=st.sampled_from([20.0, 1800.0]),
    max_stalled_inspections=st.integers(1, 4), record_top=st.integers(1, 4),
    inspection_batch=st.integers(1, 3), stop_margin=st.sampled_from([None, 1.0, 1.033, 2.0]),
    screen_cost_ratio=st.sampled_from([None, 0.05, 5.0]), screen_processes=st.integers(1, 2),
    mutants_per_function=st.sampled_from([5, 40]),
)


@st.composite
def runs(draw: st.DrawFn) -> tuple[LocalizationState, list[LocalizationObservation], list[LocalizationState]]:
    """A simulated run: its initial state, the observations fed to it, the state after each."""
    start = initial_state(draw(settings_strategy))
    state, observations, states = start, [], []
    for _ in range(MAX_STEPS):
        steps = next_steps(state)
        if not steps:
            break
        for step in steps:
            observation = draw(answer(state, step))
            observations.append(observation)
            state = record(state, observation)
            states.append(state)
    return start, observations, states


PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(runs())
def test_replayed_observations_give_the_same_states_and_report(run):
    start, observations, states = run
    again = [start]
    for observation in observations:
        again.append(record(again[-1], observation))
    assert again[1:] == states
    final = replay(start, observations, record)
    assert final == (states[-1] if states else start)
    if final.suite is not None:
        assert report(final) == report(replay(start, observations, record))


@PROPERTY
@given(runs())
def test_the_state_and_the_observations_round_trip_through_json(run):
    start, observations, states = run
    for state in [start, *states]:
        assert LocalizationState.model_validate_json(state.model_dump_json()) == state
    # The observations too: a run saved as JSON replays to the same state.
    from pydantic import TypeAdapter

    adapter = TypeAdapter(list[LocalizationObservation])
    loaded = adapter.validate_json(adapter.dump_json(observations))
    assert replay(start, loaded, record) == replay(start, observations, record)


@PROPERTY
@given(runs())
def test_confidences_are_a_distribution_after_every_record(run):
    _, _, states = run
    for state in states:
        if state.suite is not None:
            assert math.isclose(sum(state.confidences.values()), 1.0, abs_tol=1e-9)
            assert set(state.confidences) == set(state.suite.nodes)


@PROPERTY
@given(runs())
def test_the_first_answer_is_the_first_traced_suites_prior_ranking_and_stays_so(run):
    start, observations, states = run
    traced = [i for i, o in enumerate(observations) if isinstance(o, Traced)]
    if not traced:
        return
    first = traced[0]
    suite = observations[first].suite
    prior = initial_confidence(prior_scores(suite.signals))
    locations = {f: (n.file, n.start_line, n.end_line) for f, n in suite.nodes.items()}
    expected = rank(prior, suite.suspiciousness, locations, prior_scores(suite.signals))[:FIRST_ANSWER_KEPT]
    assert states[first].first_answer == tuple(expected)
    assert all(state.first_answer == tuple(expected) for state in states[first:])
    assert report(states[-1]).first_answer == tuple(expected)


@PROPERTY
@given(runs())
def test_every_run_ends_with_a_verdict_within_its_budgets(run):
    start, _, states = run
    final = states[-1] if states else start
    stopped = verdict(final)
    assert stopped is not None and next_steps(final) == []
    assert final.iterations <= start.settings.max_iterations
    assert any(re.fullmatch(reason, stopped.reason) for reason in REASONS), stopped.reason
    if stopped.reason == "iteration budget spent":
        assert final.iterations == start.settings.max_iterations
    assert stopped.converged == stopped.reason.endswith(" reached 0.9")
    decisive = stopped.reason.startswith("the answer after the screening is decisive")
    assert report(final).decisive_after_screening == decisive
    if decisive:  # no Discovery, no inspection: the screening (and its fix's confirmation) only
        assert start.settings.screen_first and final.stage == "screened" and final.iterations == 0
    cost = final.screening_cost
    if cost is not None:  # a budget of the ratio times the trace (at least the floor), or none
        assert start.settings.screen_first and cost.ratio == start.settings.screen_cost_ratio
        assert cost.budget_s is None or cost.budget_s >= cost.floor_s
        assert not set(cost.left_out) & (final.screened or frozenset())
    assert report(final).stopped_because == stopped.reason
    if final.suite is not None:  # one ledger: Discovery's calls, then the counted inspections'
        ledger = report(final).ledger
        assert ledger.calls == (*final.suite.ledger.calls, *final.ledger.calls)
        assert report(final).cost == {"usd": ledger.usd}
        if stopped.reason.startswith("LLM cost budget"):
            assert ledger.usd > start.settings.max_cost_usd


@PROPERTY
@given(runs(), st.data())
def test_a_verdict_is_final(run, data):
    start, observations, states = run
    given_at = next((i for i, s in enumerate(states) if verdict(s) is not None), None)
    assert given_at is not None
    first = verdict(states[given_at])
    # Every later state (the rest of the run) gives the same verdict, and no more steps.
    for state in states[given_at:]:
        assert verdict(state) == first and next_steps(state) == []
    # Whatever is recorded after it changes nothing.
    final = states[-1]
    later: list[LocalizationObservation] = [ValuesCompared(), Screened(functions=frozenset())]
    if final.suite is not None:
        later += [Traced(suite=final.suite), Inspected(target=next(iter(final.suite.nodes)), error="late")]
    assert record(final, data.draw(st.sampled_from(later))) == final


def test_the_iteration_budget_stops_a_loop_that_learns_nothing():
    """Inspections that show nothing (uncovered) never converge: the budget ends the loop."""
    suite = Suite(nodes={f"m.f{i}": Node(fqn=f"m.f{i}", file="m.py", start_line=i + 1, end_line=i + 1)
                         for i in range(20)},
                  suspiciousness={f"m.f{i}": 0.5 for i in range(20)},
                  signals={f"m.f{i}": NodeSignals(ochiai=0.5, dstar=0.5, tarantula=0.5, on_stack=0.0,
                                                  deepest=0.0, near_deepest=0.0, test_calls=0.0,
                                                  near_test=0.0, failure_machinery=0.0) for i in range(20)},
                  tests=TestCounts(passed=1, failed=1, flaky=0, generated=0))
    state = initial_state(LocalizationSettings(max_iterations=4, max_stalled_inspections=10, mutants=False))
    nothing = InspectionResult(strategy="deterministic", invariants=0, tests_run=(), decision=None,
                               signals=Signals(is_covered=True, has_target_assertion=False, is_failure=False),
                               decision_by="traceback", reasoning="passed")
    inspected = []
    while steps := next_steps(state):
        step = steps[0]
        if isinstance(step, Discover):
            state = record(state, Traced(suite=suite))
        elif isinstance(step, RecordCalls):
            state = record(state, ValuesCompared())
        else:
            assert isinstance(step, Inspect)
            inspected.append(step.target)
            state = record(state, Inspected(target=step.target, seen=nothing))
    assert verdict(state).reason == "iteration budget spent" and len(inspected) == state.iterations == 4
    assert len(set(inspected)) == 4  # each inspected once: what it showed would only repeat


def test_the_ranking_does_not_depend_on_the_order_the_evidence_was_counted_in():
    """Two nodes with the same evidence, multiplied in another order, differ in the last bits of
    their confidence; the ranking treats them as tied and orders them by the prior, then by name."""
    from equisa_core.localization.steps import rank

    low = 0.1 * 0.7 * 0.3
    high = 0.3 * 0.7 * 0.1
    assert low < high  # the float noise this guards against
    locations = {f: (None, None, None) for f in ("pkg.zeta", "pkg.alpha", "pkg.mid")}
    ranking = rank({"pkg.zeta": high, "pkg.alpha": low, "pkg.mid": 0.5}, {}, locations)
    assert [n.fqn for n in ranking] == ["pkg.mid", "pkg.alpha", "pkg.zeta"]
    by_prior = rank({"pkg.zeta": low, "pkg.alpha": high}, {}, locations, prior={"pkg.zeta": 0.2})
    assert [n.fqn for n in by_prior] == ["pkg.zeta", "pkg.alpha"]


def _uninformative_suite(size: int, ledger: CostLedger | None = None) -> Suite:
    """``size`` functions of equal priors (``ledger``: Discovery's model calls)."""
    return Suite(nodes={f"m.f{i}": Node(fqn=f"m.f{i}", file="m.py", start_line=i + 1, end_line=i + 1)
                        for i in range(size)},
                 suspiciousness={f"m.f{i}": 0.5 for i in range(size)},
                 signals={f"m.f{i}": NodeSignals(ochiai=0.5, dstar=0.5, tarantula=0.5, on_stack=0.0,
                                                 deepest=0.0, near_deepest=0.0, test_calls=0.0,
                                                 near_test=0.0, failure_machinery=0.0) for i in range(size)},
                 tests=TestCounts(passed=1, failed=1, flaky=0, generated=0), ledger=ledger or CostLedger())


def _inspect_until_verdict(state: LocalizationState, suite: Suite, calls: list[LLMCall]) -> LocalizationState:
    """Answer the machine's steps: each inspection shows nothing and made the next of ``calls``."""
    while steps := next_steps(state):
        step = steps[0]
        if isinstance(step, Discover):
            state = record(state, Traced(suite=suite))
        elif isinstance(step, RecordCalls):
            state = record(state, ValuesCompared())
        else:
            assert isinstance(step, Inspect)
            nothing = Signals(is_covered=True, has_target_assertion=False, is_failure=False)
            seen = InspectionResult(strategy="llm", invariants=0, tests_run=(), decision=None,
                                    signals=nothing, decision_by="traceback", reasoning="passed",
                                    calls=(calls.pop(0),))
            state = record(state, Inspected(target=step.target, seen=seen))
    return state


def test_the_ledger_stops_the_loop_at_the_cost_budget_and_a_cached_call_spends_nothing():
    """Cached answers (worth 0.3 USD when first paid) spend nothing: the loop goes on through them and
    stops once the paid calls pass the budget; the report's cost is the ledger's."""
    settings = LocalizationSettings(max_iterations=10, max_stalled_inspections=10, mutants=False,
                                    max_cost_usd=0.5)
    calls = [CACHED, CACHED, CACHED, PAID, PAID, PAID, PAID]
    state = _inspect_until_verdict(initial_state(settings), _uninformative_suite(20), calls)
    assert verdict(state).reason == "LLM cost budget ($0.5) spent"
    assert state.iterations == 5 and state.ledger.calls == (CACHED, CACHED, CACHED, PAID, PAID)
    assert state.ledger.usd == 0.6 and len(state.ledger.paid_calls) == 2
    final = report(state)
    assert final.cost == {"usd": 0.6} and final.ledger == state.ledger
    assert "ledger" not in final.model_dump() and "ledger" not in final.model_dump_json()


def test_discoverys_calls_count_against_the_localization_budget():
    """Discovery's ledger rides on the suite: one paid call there and one in the loop pass $0.5."""
    settings = LocalizationSettings(max_iterations=10, max_stalled_inspections=10, mutants=False,
                                    max_cost_usd=0.5)
    suite = _uninformative_suite(20, CostLedger(calls=(PAID,)))
    state = _inspect_until_verdict(initial_state(settings), suite, [CACHED, PAID, PAID])
    assert verdict(state).reason == "LLM cost budget ($0.5) spent" and state.iterations == 2
    assert report(state).ledger.calls == (PAID, CACHED, PAID) and report(state).cost == {"usd": 0.6}


# --- the answer after the screening (equisa_core.localization.stop_margin) -------------------------


def _suite_led_by(leader: float, runner_up: float) -> Suite:
    """Three functions whose Ochiai scores are ``leader``, ``runner_up`` and 0.1 (the prior's only
    signal): the leader's margin grows with ``leader / runner_up``."""
    scores = {"m.lead": leader, "m.second": runner_up, "m.third": 0.1}
    return Suite(nodes={f: Node(fqn=f, file="m.py", start_line=i + 1, end_line=i + 1)
                        for i, f in enumerate(scores)},
                 suspiciousness=dict(scores),
                 signals={f: NodeSignals(ochiai=v, dstar=v, tarantula=v, on_stack=0.0, deepest=0.0,
                                         near_deepest=0.0, test_calls=0.0, near_test=0.0,
                                         failure_machinery=0.0) for f, v in scores.items()},
                 tests=TestCounts(passed=3, failed=1, flaky=0, generated=0))


def _screened(suite: Suite, stop_margin: float | None, *evidence: Evidence) -> LocalizationState:
    """A run that screens first, traced (and re-run) as ``suite``, once its screening showed ``evidence``."""
    state = initial_state(LocalizationSettings(screen_top=3, screen_first=True, max_iterations=5,
                                               stop_margin=stop_margin))
    state = record(state, Traced(suite=suite))
    assert [type(step) for step in next_steps(state)] == [MarkFlaky, ScreenMutants]
    state = record(state, Traced(suite=suite))
    return record(state, Screened(functions=frozenset(suite.nodes), evidence=evidence))


def _screening_evidence(target: str, kind: FixEvidence) -> Evidence:
    found = kind is FixEvidence.FIX_FOUND
    return Evidence(target=target, strategy=SCREENING, tests_run=(), reflection_by="mutants",
                    reasoning="screened", seconds=1.0, mutants_tried=3, fix_evidence=kind,
                    fix="a fix" if found else None, fix_source="src" if found else None)


def _tied_suite(order: tuple[str, ...]) -> Suite:
    """Functions of equal scores but their suspiciousness, listed in ``order`` (the trace lists
    them in the order its shards finished)."""
    suspiciousness = {"m.a": 0.2, "m.b": 0.5, "m.c": 0.5, "m.d": 0.1}
    nodes = {f: Node(fqn=f, file="m.py", start_line=i + 1, end_line=i + 1) for i, f in enumerate(order)}
    return Suite(nodes=nodes,
                 suspiciousness={f: suspiciousness[f] for f in order},
                 signals={f: NodeSignals(ochiai=0.5, dstar=0.5, tarantula=0.5, on_stack=0.0, deepest=0.0,
                                         near_deepest=0.0, test_calls=0.0, near_test=0.0,
                                         failure_machinery=0.0) for f in order},
                 tests=TestCounts(passed=3, failed=1, flaky=0, generated=0))


def test_functions_of_equal_confidence_are_screened_in_the_rankings_order_whatever_the_traces_order():
    """The screening may stop at its budget, so its order decides which tied function gets evidence:
    it must not follow the order the trace listed them in (a first answer that flipped between runs)."""
    settings = LocalizationSettings(screen_top=3, screen_first=True, max_iterations=5)
    screened = []
    for order in (("m.a", "m.b", "m.c", "m.d"), ("m.d", "m.c", "m.b", "m.a")):
        state = record(initial_state(settings), Traced(suite=_tied_suite(order)))
        assert len(set(state.confidences.values())) == 1  # the prior ties them all
        [_, screening] = next_steps(state)
        screened.append(screening.functions)
    assert screened[0] == screened[1] == ("m.b", "m.c", "m.a")  # suspiciousness, then the name


def test_a_decisive_answer_after_the_screening_ends_the_run_before_discovery():
    no_fix = _screening_evidence("m.second", FixEvidence.NO_FIX_FOUND)
    state = _screened(_suite_led_by(0.9, 0.3), 1.033, no_fix)
    stopped = verdict(state)
    assert stopped is not None and stopped.reason.startswith("the answer after the screening is decisive")
    assert not stopped.converged and next_steps(state) == []
    final = report(state)
    assert final.decisive_after_screening and final.ranking[0].fqn == "m.lead"
    assert [i.strategy for i in final.inspections] == [SCREENING]


def test_an_undecided_answer_after_the_screening_goes_on_to_discovery():
    state = _screened(_uninformative_suite(3), 1.033)
    assert verdict(state) is None and not report(state).decisive_after_screening
    assert [type(step) for step in next_steps(state)] == [Discover, RecordCalls]


def test_a_fix_the_screening_found_is_confirmed_before_the_answer_counts_as_decisive():
    state = _screened(_suite_led_by(0.9, 0.3), 1.033, _screening_evidence("m.second", FixEvidence.FIX_FOUND))
    assert verdict(state) is None
    [step] = next_steps(state)
    assert isinstance(step, ConfirmFix) and step.target == "m.second"
    seen = InspectionResult(strategy=FIX_CONFIRMATION, invariants=0, tests_run=(),
                            signals=Signals(is_covered=True, has_target_assertion=False, is_failure=True),
                            decision=None, decision_by="mutants", reasoning="the fix fails another test",
                            fix_evidence=FixEvidence.FIX_REGRESSES)
    state = record(state, Inspected(target="m.second", seen=seen, seconds=1.0, elapsed_s=2.0))
    stopped = verdict(state)
    assert stopped is not None and stopped.reason.startswith("the answer after the screening is decisive")


def test_without_a_margin_a_run_never_stops_after_the_screening():
    state = _screened(_suite_led_by(0.9, 0.01), None)
    assert verdict(state) is None
    assert [type(step) for step in next_steps(state)] == [Discover, RecordCalls]


# --- the screening's cost against the trace's (equisa_core.localization.screening_cost) -----------


def _traced_with_cost(ratio: float | None, failing_s: float, traced_s: float) -> LocalizationState:
    """A run that screens first, traced in ``traced_s`` seconds, whose three functions (one line
    each: 2 mutants) are run by one failing test of ``failing_s`` seconds."""
    suite = _suite_led_by(0.9, 0.3).model_copy(update={
        "failing_durations": {f: (failing_s,) for f in ("m.lead", "m.second", "m.third")}})
    state = initial_state(LocalizationSettings(screen_top=3, screen_first=True, max_iterations=5,
                                               stop_margin=None, screen_cost_ratio=ratio))
    return record(state, Traced(suite=suite, elapsed_s=traced_s))


def test_a_screening_gets_its_ratio_of_the_trace_as_a_budget_and_never_less_than_the_floor():
    state = _traced_with_cost(ratio=0.5, failing_s=2.0, traced_s=3.0)  # 0.2 + 3 x 2 x 2.01 = 12.26 s
    assert state.screening_cost == ScreeningCost(functions=("m.lead", "m.second", "m.third"),
                                                 estimate_s=12.26, traced_s=3.0, ratio=0.5)
    steps = next_steps(state)
    assert [type(step) for step in steps] == [MarkFlaky, ScreenMutants]
    assert steps[1] == ScreenMutants(functions=("m.lead", "m.second", "m.third"), budget_s=1.5)
    quick = _traced_with_cost(ratio=0.5, failing_s=2.0, traced_s=0.2)  # 0.1 s: the floor
    assert next_steps(quick)[1].budget_s == SCREEN_FLOOR_S
    unbounded = _traced_with_cost(ratio=None, failing_s=2.0, traced_s=3.0)
    assert next_steps(unbounded)[1].budget_s is None


def test_the_functions_a_budget_left_out_are_reported_and_the_screened_ones_answer():
    """A partial screening: the leader was screened (a fix that its failing test confirms), the
    others were cut by the budget; the run goes on from the screened evidence, and the report
    names what was left out."""
    state = _traced_with_cost(ratio=0.25, failing_s=2.0, traced_s=3.0)
    state = record(state, Traced(suite=state.suite, elapsed_s=3.1))
    state = record(state, Screened(functions=frozenset({"m.lead"}), left_out=("m.second", "m.third")))
    assert state.screened == frozenset({"m.lead"})
    assert state.screening_cost is not None and state.screening_cost.left_out == ("m.second", "m.third")
    note = state.screening_cost.note()
    assert note is not None and note.startswith("the mutant screening's budget of 0.8s (0.25 times the 3.0s")
    assert note.endswith("screened 1 of the 3 functions worth it; left out: m.second, m.third")
    assert report(state).screening_cost == state.screening_cost


def test_a_screening_without_a_budget_that_was_cut_short_says_so():
    """No budget (``ratio`` None), but the run's deadline or an unfinished round left a function out:
    the note says it was cut short (it once formatted the missing ratio and crashed the command)."""
    state = _traced_with_cost(ratio=None, failing_s=2.0, traced_s=3.0)
    state = record(state, Screened(functions=frozenset({"m.lead"}), left_out=("m.third",)))
    note = state.screening_cost.note()
    assert note == ("the mutant screening, with no budget of its own, was cut short: it screened 2 of the "
                    "3 functions worth it; left out: m.third")


def test_without_a_budget_every_function_worth_it_is_screened_and_nothing_is_left_out():
    state = _traced_with_cost(ratio=None, failing_s=0.1, traced_s=3.0)
    steps = next_steps(state)
    assert steps[1] == ScreenMutants(functions=("m.lead", "m.second", "m.third"), budget_s=None)
    state = record(record(state, Traced(suite=state.suite, elapsed_s=3.1)),
                   Screened(functions=frozenset(steps[1].functions)))
    assert state.screening_cost is not None and state.screening_cost.note() is None
    assert verdict(state) is None
    assert [type(step) for step in next_steps(state)] == [Discover, RecordCalls]


def test_the_screenings_estimate_counts_mutants_by_length_failing_tests_and_processes():
    nodes = {"m.short": Node(fqn="m.short", file="m.py", start_line=1, end_line=2),  # 4 mutants
             "m.long": Node(fqn="m.long", file="m.py", start_line=10, end_line=109)}  # capped at 40
    durations = {"m.short": (0.49, 0.99), "m.long": (0.09,)}
    one = screening_estimate(["m.short", "m.long"], nodes, durations, mutants_cap=40, processes=1)
    assert math.isclose(one, 0.2 + 4 * (0.5 + 1.0) + 40 * 0.1)
    two = screening_estimate(["m.short", "m.long"], nodes, durations, mutants_cap=40, processes=2)
    assert math.isclose(two, 0.2 + (4 * 1.5 + 40 * 0.1) / 2)
    assert screening_estimate(["m.short"], nodes, {}, mutants_cap=40, processes=1) == 0.2  # no failing test


def test_the_time_budget_stops_the_loop_at_any_stage_once_traced():
    """The driver's clock (``Clocked``) past ``max_seconds`` ends the run right after the trace, before
    Discovery, a screening or an inspection: the ranking as it stands is the answer (exit 0; 26 under
    ``--fail-unless-converged``)."""
    from equisa_core.errors import EXIT_BUDGET_SPENT, EXIT_OK
    from equisa_core.localization.machine import Clocked

    suite = Suite(nodes={f"m.f{i}": Node(fqn=f"m.f{i}", file="m.py", start_line=i + 1, end_line=i + 1)
                         for i in range(3)},
                  suspiciousness={f"m.f{i}": 0.5 for i in range(3)},
                  signals={f"m.f{i}": NodeSignals(ochiai=0.5, dstar=0.5, tarantula=0.5, on_stack=0.0,
                                                  deepest=0.0, near_deepest=0.0, test_calls=0.0,
                                                  near_test=0.0, failure_machinery=0.0) for i in range(3)},
                  tests=TestCounts(passed=1, failed=1, flaky=0, generated=0))
    state = initial_state(LocalizationSettings(max_seconds=20.0, mutants=True, screen_top=5,
                                               screen_first=True))
    state = record(state, Clocked(elapsed_s=1.0))
    assert verdict(state) is None  # no suite yet: nothing to answer with
    state = record(state, Traced(suite=suite, elapsed_s=12.0))
    assert verdict(state) is None and next_steps(state)
    state = record(state, Clocked(elapsed_s=20.5))
    stopped = verdict(state)
    assert stopped is not None and stopped.reason == "time budget (20s) spent" and not stopped.converged
    assert next_steps(state) == [] and state.iterations == 0
    final = report(state)
    assert final.stopped_because == stopped.reason and final.ranking
    assert final.exit_code() == EXIT_OK
    assert final.exit_code(fail_unless_converged=True) == EXIT_BUDGET_SPENT

"""The Discovery loop's state machine (Hypothesis): replay determinism, a final verdict, the budgets
stop the loop, and only tests that behave and split their group are kept."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from equisa_core.common.cost import LLMCall
from equisa_core.common.loop import replay
from equisa_core.common.models import CollectError, TestOutcome, TestResult
from equisa_core.discovery import machine
from equisa_core.discovery.rules import DiscoveryBudget, module_test_names

FUNCTIONS = [f"pkg.mod.f{i}" for i in range(6)]
GENERATED = "tests/equisa_generated"

#: Each property is checked on this many generated runs (a run is cheap: no I/O).
SETTINGS = settings(max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def groups(draw: st.DrawFn) -> tuple[machine.Group, ...]:
    """Disjoint groups of the functions (some of them)."""
    labels = draw(st.lists(st.integers(0, 3), min_size=len(FUNCTIONS), max_size=len(FUNCTIONS)))
    found = {}
    for function, label in zip(FUNCTIONS, labels, strict=True):
        found.setdefault(label, []).append(function)
    return tuple(tuple(sorted(g)) for g in found.values() if len(g) > 1)


@st.composite
def starts(draw: st.DrawFn) -> machine.DiscoveryState:
    budget = DiscoveryBudget(max_rounds=draw(st.integers(0, 3)), max_tests=draw(st.integers(0, 8)),
                             max_groups_per_round=draw(st.integers(1, 3)))
    return machine.initial_state(budget, draw(st.integers(0, 3)), draw(groups()),
                                   enabled=draw(st.integers(0, 5)) > 0, failing=draw(st.integers(0, 5)) > 0,
                                   problems=draw(st.sampled_from([(), ("p",)])),
                                   retry_groups=draw(st.booleans()))


#: A model call that spent 0.25 USD, and the same answer served from the cache (it spends nothing).
PAID = LLMCall(purpose="disambiguating-tests", model="m", prompt_hash="h", cost_usd=0.25)
CACHED = PAID.model_copy(update={"cached": True})


def module(names: list[str]) -> str:
    return "".join(f"def {name}():\n    pass\n\n\n" for name in names)


def observation_for(draw: st.DrawFn, step: machine.DiscoveryStep) -> machine.DiscoveryObservation:
    match step:
        case machine.ScoreSuite():
            prior = {f: draw(st.sampled_from([0.0, 0.1, 0.5, 0.9])) for f in FUNCTIONS}
            return machine.Scored(groups=draw(groups()), prior=prior)
        case machine.ProposeTests():
            proposals = {}
            for offset, group in enumerate(step.groups):
                index = step.first_index + offset
                for kind in draw(st.lists(st.sampled_from(["carved", "llm", "testgen"]), unique=True)):
                    names = [f"test_{kind}_{i}" for i in range(draw(st.integers(0, 3)))]
                    path = f"{GENERATED}/test_{kind}_group_{index}.py"
                    proposals[path] = machine.Proposal(group=group, source=module(names))
            calls = draw(st.sampled_from([(), (PAID,), (CACHED,)]))
            return machine.Proposed(proposals=proposals, calls=calls,
                                    problems=draw(st.sampled_from([(), ("model down",)])))
        case machine.CheckTests():
            if draw(st.integers(0, 5)) == 0:
                return machine.Checked(collection_error="no module named contrib")
            tests = []
            for path, proposal in sorted(step.proposals.items()):
                for name in module_test_names(proposal.source):
                    tests.append(TestResult(
                        test_id=f"{path}::{name}",
                        outcome=draw(st.sampled_from([TestOutcome.PASSED] * 3 + list(TestOutcome))),
                        duration=0.0,
                        exception_type=draw(st.sampled_from([None, "AssertionError", "KeyError"])),
                        covered=frozenset(draw(st.lists(st.sampled_from(FUNCTIONS), unique=True)))))
            broken = CollectError(location=f"{GENERATED}/x.py", message="E boom")
            errors = (broken,) if draw(st.booleans()) else ()
            return machine.Checked(tests=tuple(tests), collect_errors=errors)
    raise AssertionError(step)


@st.composite
def runs(draw: st.DrawFn) -> tuple[machine.DiscoveryState, list[machine.DiscoveryObservation]]:
    """An initial state and the observations a driver fed it, step by step."""
    state = draw(starts())
    start, observations = state, []
    while steps := machine.next_steps(state):
        observation = observation_for(draw, steps[0])
        observations.append(observation)
        state = machine.record(state, observation)
    return start, observations


@SETTINGS
@given(runs())
def test_discovery_replays_to_the_same_state_and_round_trips_through_json(run):
    start, observations = run
    once = replay(start, observations, machine.record)
    assert once == replay(start, observations, machine.record)
    assert machine.DiscoveryState.model_validate_json(once.model_dump_json()) == once
    assert machine.verdict(once) is not None
    proposed = [c for o in observations if isinstance(o, machine.Proposed) for c in o.calls]
    assert once.ledger.calls == tuple(proposed)  # every proposal's calls, cached ones included
    assert once.ledger.usd == round(0.25 * sum(not c.cached for c in once.ledger.calls), 6)


@SETTINGS
@given(runs(), st.data())
def test_discoverys_verdict_is_final(run, data):
    start, observations = run
    state, final = start, machine.verdict(start)
    for observation in observations:
        state = machine.record(state, observation)
        if final is not None:
            assert machine.verdict(state) == final and machine.next_steps(state) == []
        final = machine.verdict(state)
    assert final is not None
    extra = observation_for(data.draw, machine.ScoreSuite())
    assert machine.verdict(machine.record(state, extra)) == final


@SETTINGS
@given(runs())
def test_the_budgets_stop_discovery(run):
    start, observations = run
    state = replay(start, observations, machine.record)
    assert len(state.rounds) <= start.budget.max_rounds
    assert len(state.kept) <= start.budget.max_tests
    assert all(len(r.groups) <= start.budget.max_groups_per_round for r in state.rounds)
    assert machine.verdict(state).reason in (
        "turned off", "no failing test", "no generated test could be kept",
        f"round budget ({start.budget.max_rounds}) spent", f"test budget ({start.budget.max_tests}) spent",
        "no ambiguity group of two or more left",
        "no ambiguity group of two or more left near the top of the prior", machine.UNSPLIT_TRIED)


@SETTINGS
@given(runs())
def test_carving_alone_never_targets_a_group_twice(run):
    start, observations = run
    state = replay(start, observations, machine.record)
    targeted = [g for r in state.rounds for g in r.groups]
    if not start.retry_groups:
        assert len(targeted) == len(set(targeted))


def _round_keeping_one_test(retry_groups: bool) -> machine.DiscoveryState:
    """Round 1 targets groups A and B; its one kept test splits A and leaves B as it was."""
    group_a, group_b = tuple(FUNCTIONS[:2]), tuple(FUNCTIONS[2:4])
    prior = {f: 0.5 for f in FUNCTIONS}
    state = machine.initial_state(DiscoveryBudget(max_rounds=3, max_tests=8), 0, [group_a, group_b],
                                    enabled=True, failing=True, retry_groups=retry_groups)
    state = machine.record(state, machine.Scored(groups=(group_a, group_b), prior=prior))
    assert machine.next_steps(state)[0].groups == (group_a, group_b)
    path = f"{GENERATED}/test_carved_group_0.py"
    state = machine.record(state, machine.Proposed(proposals={
        path: machine.Proposal(group=group_a, source=module(["test_one"]))}))
    split = TestResult(test_id=f"{path}::test_one", outcome=TestOutcome.PASSED, duration=0.0,
                       covered=frozenset({FUNCTIONS[0]}))
    state = machine.record(state, machine.Checked(tests=(split,)))
    assert state.kept == (f"{path}::test_one",)
    return machine.record(state, machine.Scored(groups=(group_b,), prior=prior))


def test_carving_alone_stops_when_only_tried_groups_are_left():
    state = _round_keeping_one_test(retry_groups=False)
    assert machine.next_steps(state) == []
    assert machine.verdict(state).reason == machine.UNSPLIT_TRIED


def test_the_model_or_testgen_may_try_a_group_again():
    state = _round_keeping_one_test(retry_groups=True)
    assert machine.next_steps(state)[0].groups == (tuple(FUNCTIONS[2:4]),)


@SETTINGS
@given(runs())
def test_only_tests_that_behave_and_split_their_group_are_kept(run):
    start, observations = run
    state, results = start, {}
    for observation in observations:
        if isinstance(observation, machine.Checked):
            results.update({t.test_id: (t, state.proposals) for t in observation.tests})
        state = machine.record(state, observation)
    for test_id in state.kept:
        test, proposals = results[test_id]
        proposal = proposals[test_id.split("::")[0]]
        assert not set(proposal.group) <= test.covered, "a kept test must not execute its whole group"
        carved = "/test_carved_" in test_id or "/test_testgen_" in test_id
        assert machine.unfit(test, carved, observed="/test_testgen_" in test_id) is None
        assert test_id.split("::")[0] in state.overlay
    assert sum(r.kept for r in state.rounds) == len(state.kept)


def test_a_carved_test_must_pass_and_a_models_may_fail_on_an_assertion():
    failed = TestResult(test_id="t.py::test_a", outcome=TestOutcome.FAILED, duration=0.0,
                        exception_type="AssertionError")
    assert machine.unfit(failed, carved=False) is None
    assert machine.unfit(failed, carved=True).startswith("fails on the code it was carved from")


@SETTINGS
@given(starts(), groups(), st.lists(st.sampled_from([0.0, 0.1, 0.5, 0.9]), min_size=len(FUNCTIONS),
                                    max_size=len(FUNCTIONS)))
def test_stops_at_once_says_whether_the_first_scoring_ends_the_loop(start, found, scores):
    # the localization skips Discovery exactly when its first scoring would stop it
    prior = dict(zip(FUNCTIONS, scores, strict=True))
    reason = machine.stops_at_once(start, [frozenset(g) for g in found], prior)
    state = start
    if machine.next_steps(state):
        assert machine.next_steps(state) == [machine.ScoreSuite()]
        state = machine.record(state, machine.Scored(groups=found, prior=prior))
    assert reason == state.stopped_because
    assert (reason is None) == bool(machine.next_steps(state))


def test_a_suite_without_a_group_near_the_top_stops_discovery_at_once():
    start = machine.initial_state(DiscoveryBudget(max_rounds=2, max_tests=4), 3, [], enabled=True,
                                    failing=True)
    prior = {f: 0.5 for f in FUNCTIONS}
    reason = machine.stops_at_once(start, [], prior)
    assert reason == "no ambiguity group of two or more left near the top of the prior"
    assert machine.stops_at_once(start, [frozenset(FUNCTIONS[:2])], prior) is None

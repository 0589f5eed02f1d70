"""The test-generation loop's state machine (``equisa_core.testgen.machine``): replay determinism, the
budgets stop it, a verdict is final; and the decisions it took over from the flow, on examples."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from equisa_core.common.cost import CostLedger, LLMCall
from equisa_core.common.loop import replay
from equisa_core.testgen.machine import (
    OBSERVATIONS,
    Analysed,
    Deduped,
    Generated,
    Measured,
    Measurement,
    MutantsScored,
    SmellsFixed,
    Stored,
    TestgenBudget,
    TestgenSetup,
    TestgenState,
    TestRun,
    combined_coverage,
    initial_state,
    next_steps,
    record,
    verdict,
)
from equisa_core.testgen.modules import keep_tests, list_tests
from equisa_core.testgen.mutation_plan import MutantVerdict
from equisa_core.testgen.report import CoverageFigures, PipelineNotes
from equisa_core.testgen.static import StaticReport

MODULE_PATH = "tests/equisa_generated/test_testgen_shop.py"
NAMES = ("test_a", "test_b", "test_c", "test_d")
#: Steps of one attempt at most: generate, dedupe, fix_smells, analyse, measure twice, mutants, store.
STEPS_PER_ATTEMPT = 8


def module(names: tuple[str, ...], salt: int = 0) -> str:
    """A test module with one test per name (``salt`` changes their text)."""
    tests = [f"def {name}():\n    assert total([{i + salt}]) == {i + salt}\n" for i, name in enumerate(names)]
    return "from shop import total\n\n\n" + "\n\n".join(tests)


def figures(percent: float, missing: tuple[int, ...] = ()) -> CoverageFigures:
    return CoverageFigures(
        percent=percent,
        branch_percent=percent,
        covered_lines=10,
        statements=12,
        covered_branches=2,
        branches=4,
        missing_lines=missing,
    )


def setup(**changes: object) -> TestgenSetup:
    values: dict[str, object] = {
        "target": "shop.py",
        "module_path": MODULE_PATH,
        "out": "/out",
        "use_llm": False,
        "coverage_target": 80.0,
        "mutation_target": 60.0,
        "improvement_budget": 2,
        "budget": TestgenBudget(max_iterations=3),
    }
    return TestgenSetup(**(values | changes))


# --- strategies -----------------------------------------------------------------------------------

percents = st.floats(0, 100, allow_nan=False).map(lambda x: round(x, 2))
seconds = st.floats(0, 50, allow_nan=False).map(lambda x: round(x, 3))
calls = st.lists(
    st.builds(
        LLMCall,
        model=st.just("gpt-4o-mini"),
        prompt_hash=st.just("h"),
        purpose=st.sampled_from(["testgen-generator", "testgen-enhancer", "testgen-smell-fix"]),
        cost_usd=st.none() | st.floats(0, 0.05, allow_nan=False),
        cached=st.booleans(),
        mean_entropy=st.none() | st.floats(0, 3, allow_nan=False),
    ),
    max_size=3,
).map(tuple)
problems = st.lists(st.sampled_from(["testgen-generator: timeout", "embedding endpoint down"]), max_size=1)


@st.composite
def setups(draw: st.DrawFn) -> TestgenSetup:
    baseline = draw(
        st.none()
        | st.builds(
            Measurement,
            figures=st.builds(figures, percents, st.just((3, 4))),
            executed_lines=st.just((1, 2)),
            executed_branches=st.just(((1, 2),)),
        )
    )
    budget = TestgenBudget(
        max_iterations=draw(st.integers(1, 5)),
        max_cost_usd=draw(st.none() | st.floats(0, 0.1, allow_nan=False)),
        max_seconds=draw(st.none() | st.floats(0, 120, allow_nan=False)),
    )
    return setup(
        use_llm=draw(st.booleans()),
        coverage_target=draw(percents),
        mutation_target=draw(percents),
        improvement_budget=draw(st.integers(0, 2)),
        with_specification=draw(st.booleans()),
        baseline=baseline,
        budget=budget,
    )


def observation_for(draw: st.DrawFn, state: TestgenState) -> object:
    """An observation that answers the machine's next step, drawn at random."""
    [step] = next_steps(state)
    common = {"seconds": draw(seconds), "calls": draw(calls), "problems": tuple(draw(problems))}
    match step.kind:
        case "generate" | "enhance":
            names = tuple(draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=4)))
            source = module(names, salt=draw(st.integers(0, 2))) if names else ""
            origin = draw(st.sampled_from(["generator", "enhancer", "deterministic: carved"]))
            return Generated(origin=origin, source=source, deterministic=("did something",), **common)
        case "dedupe" | "fix_smells":
            tests = list(list_tests(step.source))
            kept = draw(st.lists(st.sampled_from(tests), unique=True, min_size=1)) if tests else []
            source = keep_tests(step.source, kept) if kept else step.source
            notes = PipelineNotes(redundant=[f"{t}: similar" for t in tests if t not in kept])
            kind = Deduped if step.kind == "dedupe" else SmellsFixed
            return kind(source=source, notes=notes, **common)
        case "analyse":
            count = len(list_tests(step.source))
            static = StaticReport(syntax_ok=draw(st.booleans()), tools=("compile",), test_count=count)
            return Analysed(static=static, **common)
        case "measure":
            if draw(st.integers(0, 5)) == 0:
                return Measured(runner_error="no tests collected", **common)
            tests = tuple(
                TestRun(
                    test_id=f"{MODULE_PATH}::{name}", passed=passed, outcome="passed" if passed else "failed"
                )
                for name in list_tests(step.source)
                for passed in [draw(st.booleans())]
            )
            measurement = Measurement(
                figures=figures(draw(percents), (5, 6)),
                executed_lines=(1, 7),
                tests=tests,
                error=draw(st.none() | st.just("target never imported")),
            )
            return Measured(measurement=measurement, **common)
        case "run_mutants":
            verdicts = tuple(
                MutantVerdict(id=f"m{i}", fqn="shop.total", line=2, description="+ -> -", status=status)
                for i, status in enumerate(
                    draw(st.lists(st.sampled_from(["killed", "survived"]), max_size=3))
                )
            )
            return MutantsScored(score=draw(st.none() | percents), verdicts=verdicts, **common)
        case "store":
            return Stored(count=len(step.tests), **common)
    raise AssertionError(step)


@st.composite
def runs(draw: st.DrawFn) -> tuple[TestgenState, list, list[TestgenState]]:
    """An initial state, the observations of a whole run, and every state it went through."""
    state = initial_state(draw(setups()), ["set-up problem"])
    start, observations, states = state, [], [state]
    limit = STEPS_PER_ATTEMPT * state.setup.budget.max_iterations
    while next_steps(state):
        assert len(observations) < limit, "the loop must end within its iteration budget"
        observation = observation_for(draw, state)
        observations.append(observation)
        state = record(state, observation)
        states.append(state)
    return start, observations, states


RUNS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- properties -----------------------------------------------------------------------------------


@RUNS
@given(runs())
def test_replaying_a_run_gives_the_same_states_and_the_state_round_trips_through_json(run):
    start, observations, states = run
    first = replay(start, observations, record)
    second = replay(start, observations, record)
    assert first == second == states[-1]
    assert verdict(first) is not None
    assert TestgenState.model_validate_json(first.model_dump_json()) == first
    reread = OBSERVATIONS.validate_json(OBSERVATIONS.dump_json(observations))
    assert replay(start, reread, record) == first


@RUNS
@given(runs())
def test_the_budgets_stop_the_loop(run):
    start, _, states = run
    budget = start.setup.budget
    final = states[-1]
    assert 1 <= len(final.attempts) <= budget.max_iterations
    # Where each attempt ended: the cost and time spent by then.
    ends = [
        s for before, s in zip(states, states[1:], strict=False) if len(s.attempts) > len(before.attempts)
    ]
    for end in ends[:-1]:  # every attempt but the last had budget left
        assert budget.max_cost_usd is None or end.cost_usd < budget.max_cost_usd
        assert budget.max_seconds is None or end.seconds < budget.max_seconds
    assert final.attempts[-1].decision == "FINISH"
    assert final.stopped_because == final.attempts[-1].decision_reason == verdict(final).reason


@RUNS
@given(runs())
def test_the_ledger_holds_every_call_and_the_attempts_account_for_them(run):
    _, observations, states = run
    final = states[-1]
    every_call = tuple(c for o in observations for c in o.calls)
    assert final.ledger == CostLedger(calls=every_call) and final.cost_usd == final.ledger.usd
    assert final.cost_usd == round(sum(c.cost_usd or 0.0 for c in every_call if not c.cached), 6)
    # An attempt's report counts the calls up to its end (the store step after it asks no model).
    counted = tuple(c for o in observations if o.kind != "stored" for c in o.calls)
    assert sum(a.llm_calls for a in final.attempts) == len(counted)
    assert sum(a.cached_llm_calls for a in final.attempts) == sum(1 for c in counted if c.cached)
    paid = round(sum(c.cost_usd or 0.0 for c in counted if not c.cached), 6)
    assert abs(paid - sum(a.cost_usd for a in final.attempts)) <= 1e-6 * len(final.attempts)
    assert final.problems == ("set-up problem", *(p for o in observations for p in o.problems))


@RUNS
@given(runs(), st.data())
def test_a_verdict_is_final(run, data):
    _, observations, states = run
    given_at = next(i for i, s in enumerate(states) if verdict(s) is not None)
    assert given_at == len(states) - 1, "no step is asked for once there is a verdict"
    final = states[-1]
    assert next_steps(final) == []
    late = data.draw(st.sampled_from(observations))
    assert record(final, late) == final and verdict(record(final, late)) == verdict(final)


@RUNS
@given(runs())
def test_the_best_attempt_is_the_highest_coverage_then_mutation_score_then_the_earliest(run):
    *_, states = run
    final = states[-1]
    eligible = [
        a
        for a in final.attempts
        if a.coverage is not None and (a.tests_passed or (final.setup.with_specification and a.tests))
    ]
    if not eligible:
        assert final.best_attempt is None
        return
    best = max(eligible, key=lambda a: (a.critique.coverage, a.mutation_score or 0.0, -a.attempt))
    assert final.best_attempt == best.attempt
    assert final.problems[0] == "set-up problem"


# --- examples -------------------------------------------------------------------------------------


def measured(source: str, failing: tuple[str, ...] = (), percent: float = 90.0) -> Measured:
    tests = tuple(
        TestRun(
            test_id=f"{MODULE_PATH}::{n}",
            passed=n not in failing,
            outcome="failed" if n in failing else "passed",
        )
        for n in list_tests(source)
    )
    return Measured(measurement=Measurement(figures=figures(percent), tests=tests))


def test_deterministic_mode_drops_the_failing_tests_and_measures_the_rest_again():
    source = module(("test_a", "test_b"))
    state = replay(
        initial_state(setup()),
        [
            Generated(origin="deterministic: carved", source=source),
            Deduped(source=source, notes=PipelineNotes()),
            SmellsFixed(source=source, notes=PipelineNotes()),
            Analysed(static=StaticReport(syntax_ok=True, tools=("compile",), test_count=2)),
            measured(source, failing=("test_b",)),
        ],
        record,
    )
    [step] = next_steps(state)
    assert step.kind == "measure" and step.after_drop and list(list_tests(step.source)) == ["test_a"]
    assert state.notes.dropped == ["test_b: failed on the code it was observed on"]
    state = replay(state, [measured(step.source), MutantsScored(score=70.0)], record)
    [entry] = state.attempts
    assert entry.tests == ["test_a"] and entry.mutation_score == 70.0 and entry.decision == "FINISH"
    assert next_steps(state)[0].kind == "store" and state.best_source == step.source
    state = record(state, Stored(count=1))
    assert state.attempts[0].pipeline.added_to_store == 1 and verdict(state).reason == "targets met"
    assert verdict(state).converged


def test_nothing_to_generate_in_deterministic_mode_is_a_critical_error():
    state = record(
        initial_state(setup()), Generated(origin="deterministic", source="", deterministic=("no function",))
    )
    assert (
        verdict(state).reason
        == "critical error: the deterministic generator found nothing to generate: no function"
    )
    assert state.attempts[0].critique.critical_error and state.best_attempt is None


def one_attempt(origin: str) -> tuple[str, list]:
    """A module of one test and the observations of one attempt at 50 % coverage, 10 % mutation."""
    source = module(("test_a",))
    return source, [
        Generated(origin=origin, source=source),
        Deduped(source=source, notes=PipelineNotes()),
        SmellsFixed(source=source, notes=PipelineNotes()),
        Analysed(static=StaticReport(syntax_ok=True, tools=("compile",), test_count=1)),
        measured(source, percent=50.0),
        MutantsScored(score=10.0),
        Stored(count=1),
    ]


def test_below_target_enhances_with_the_critique_then_stops_at_the_iteration_budget():
    source, attempt = one_attempt("generator")
    state = replay(
        initial_state(setup(use_llm=True, budget=TestgenBudget(max_iterations=2))), attempt, record
    )
    [step] = next_steps(state)
    assert step.kind == "enhance" and step.strategy == "model" and step.source == source
    assert step.instructions == state.attempts[0].critique.instructions and state.decision == "ENHANCE"
    # The enhancer's module holds the same test: nothing new to check for redundancy or smells.
    state = replay(
        state,
        [Generated(origin="enhancer", source=source), attempt[3], attempt[4], attempt[5], attempt[6]],
        record,
    )
    assert verdict(state).reason == "max iterations (2) reached" and not verdict(state).converged


def test_a_spent_cost_budget_finishes_the_loop():
    limited = setup(use_llm=True, budget=TestgenBudget(max_iterations=5, max_cost_usd=0.01))
    expensive = (LLMCall(purpose="testgen-generator", model="gpt-4o", prompt_hash="h", cost_usd=0.02),)
    state = record(initial_state(limited), Generated(origin="generator", source="", calls=expensive))
    assert verdict(state).reason == "cost budget ($0.0100) spent" and state.cost_usd == 0.02


def test_a_cached_call_is_counted_but_costs_nothing_and_spends_no_budget():
    limited = setup(use_llm=True, budget=TestgenBudget(max_iterations=2, max_cost_usd=0.01))
    cached = LLMCall(purpose="testgen-generator", model="gpt-4o", prompt_hash="h", cost_usd=0.02, cached=True)
    paid = LLMCall(purpose="testgen-smell-fix", model="gpt-4o", prompt_hash="h2", cost_usd=0.004)
    state = record(initial_state(limited), Generated(origin="generator", source="", calls=(cached, paid)))
    [entry] = state.attempts
    assert (entry.llm_calls, entry.cached_llm_calls, entry.cost_usd) == (2, 1, 0.004)
    assert state.cost_usd == 0.004 and state.ledger.calls == (cached, paid)
    assert next_steps(state)[0].kind == "enhance", "the cached call spent none of the budget"


def test_an_observation_must_answer_the_step():
    with pytest.raises(ValueError, match="does not answer a 'generate' step"):
        record(initial_state(setup()), Stored(count=0))


def test_combined_coverage_is_the_union_of_lines_and_branches():
    baseline = Measurement(figures=figures(50.0, (3, 4)), executed_lines=(1, 2), executed_branches=((1, 2),))
    new = Measurement(figures=figures(50.0, (1, 4)), executed_lines=(2, 3), executed_branches=((2, 3),))
    combined = combined_coverage(baseline, new)
    assert (combined.covered_lines, combined.covered_branches, combined.missing_lines) == (3, 2, (4,))
    assert combined.percent == round(100.0 * 5 / 16, 2) and combined_coverage(None, new) == new.figures


def test_a_deterministic_round_that_adds_nothing_stops_the_loop_and_says_why():
    """Issue 49: the second round wrote the same tests and measured the same figures, so a third
    would too; the loop stops there, not at the iteration budget."""
    source, attempt = one_attempt("deterministic: carved")
    state = replay(initial_state(setup(budget=TestgenBudget(max_iterations=5))), attempt, record)
    assert state.decision == "ENHANCE"
    # The same module: nothing new to check for redundancy or smells.
    again = Generated(origin="deterministic: wider boundary search", source=source)
    state = replay(state, [again, *attempt[3:]], record)
    assert len(state.attempts) == 2 and not verdict(state).converged
    assert verdict(state).reason == (
        "the round added nothing: the same 1 tests as attempt 0, coverage 50.0% and mutation score 10.0% "
        "unchanged"
    )
    # A round that adds a test goes on.
    grown = module(("test_a", "test_b"))
    state = replay(initial_state(setup(budget=TestgenBudget(max_iterations=5))), attempt, record)
    state = replay(state, [Generated(origin="deterministic: wider boundary search", source=grown),
                           Deduped(source=grown, notes=PipelineNotes()),
                           SmellsFixed(source=grown, notes=PipelineNotes()),
                           Analysed(static=StaticReport(syntax_ok=True, tools=("compile",), test_count=2)),
                           measured(grown, percent=50.0), MutantsScored(score=10.0), Stored(count=1)], record)
    assert state.decision == "ENHANCE" and len(state.attempts) == 2


def scored(*statuses: str) -> MutantsScored:
    """A mutation run of one mutant per status, scored by the share killed."""
    verdicts = tuple(MutantVerdict(id=f"m{i}", fqn="shop.total", line=2, description="+ -> -", status=status)
                     for i, status in enumerate(statuses))
    return MutantsScored(score=100.0 * statuses.count("killed") / len(statuses), verdicts=verdicts)


def attempt_of(names: tuple[str, ...], mutants: MutantsScored) -> list:
    """One deterministic attempt writing ``names`` at 90 % coverage, ending in ``mutants``."""
    source = module(names)
    return [Generated(origin="deterministic: carved", source=source),
            Deduped(source=source, notes=PipelineNotes()),
            SmellsFixed(source=source, notes=PipelineNotes()),
            Analysed(static=StaticReport(syntax_ok=True, tools=("compile",), test_count=len(names))),
            measured(source, percent=90.0), mutants, Stored(count=len(names))]


def test_past_the_targets_mutation_guided_rounds_go_on_while_they_kill_survivors():
    """Issue 49: both targets met (90 % coverage, 3 of 5 mutants killed) with two survivors left: the
    deterministic loop hunts them, one more round per kill, and stops, still converged, at the round
    that kills none; with ``hunt_survivors`` off or in LLM mode it stops at the targets."""
    first = attempt_of(("test_a",), scored("killed", "killed", "killed", "survived", "not_covered"))
    state = replay(initial_state(setup(budget=TestgenBudget(max_iterations=5))), first, record)
    assert state.decision == "ENHANCE"
    hunt = "targets met; 2 mutants survive: a mutation-guided round for them"
    assert state.attempts[0].decision_reason == hunt
    [step] = next_steps(state)
    assert step.kind == "enhance" and len(step.surviving_mutants) == 2
    state = replay(state, attempt_of(("test_a", "test_b"),
                                     scored("killed", "killed", "killed", "killed", "survived")), record)
    assert state.decision == "ENHANCE"
    assert state.attempts[1].decision_reason.startswith("targets met; 1 mutants survive")
    state = replay(state, attempt_of(("test_a", "test_b", "test_c"),
                                     scored("killed", "killed", "killed", "killed", "survived")), record)
    assert verdict(state).reason == "targets met; a mutation-guided round killed none of the 1 survivors"
    assert verdict(state).converged and len(state.attempts) == 3 and state.best_attempt == 1
    for quiet in (setup(hunt_survivors=False), setup(use_llm=True)):
        state = replay(initial_state(quiet), first, record)
        assert verdict(state).reason == "targets met" and verdict(state).converged

"""The Validation loop's state machines: a candidate's checks and the repair loop (Hypothesis).

Each machine is driven by generated observations (what a sandbox could have answered to each step);
the properties: replay determinism (the same observations give the same state, and the state
round-trips through JSON), a verdict is final, the budgets stop the loop, and a candidate is
accepted only after every check passed.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from equisa_core.common.cost import LLMCall
from equisa_core.common.loop import replay
from equisa_core.common.models import TestOutcome, TestResult
from equisa_core.repair import machine
from equisa_core.validation import checks
from equisa_core.validation.candidates import PatchCandidate, PatchEvaluation, PatchStatus
from equisa_core.validation.differential import DifferentialVerdict, FarChange, Observed
from equisa_core.validation.divergence import (
    MIN_CHECKED_CALLS,
    CallComparison,
    DivergenceReport,
    divergence_of,
)

TESTGEN_TEST = "tests/equisa_generated/test_testgen_a.py::test_t"
TESTS = [f"tests/test_m.py::test_{i}" for i in range(6)] + [TESTGEN_TEST]
FUNCTIONS = [f"pkg.mod.f{i}" for i in range(6)]
ORIGINAL = "def f(x):\n    return x + 1\n"
PATCHED = ["def f(x):\n    return x + 2\n",
           "def f(x):\n    if x == 41:\n        return 42\n    return x + 1\n"]
FAILING_SOURCE = "def test_0():\n    assert f(41) == 42\n"

#: Each property is checked on this many generated runs (a run is cheap: no I/O).
SETTINGS = settings(max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def model_calls(draw: st.DrawFn, purpose: str) -> tuple[LLMCall, ...]:
    """Generated records of model calls: priced, unpriced, cached or failed."""
    return tuple(LLMCall(purpose=f"{purpose} {i}", model="m", prompt_hash="h",
                         cost_usd=draw(st.sampled_from([None, 0.25, 0.5, 1.0])), cached=draw(st.booleans()),
                         error=draw(st.sampled_from([None, "LLMRequestError: down"])))
                 for i in range(draw(st.integers(0, 2))))


def results(draw: st.DrawFn, ids: list[str]) -> tuple[TestResult, ...]:
    """Generated results of (some of) ``ids``."""
    chosen = draw(st.lists(st.sampled_from(ids), unique=True)) if ids else []
    outcomes = st.sampled_from([TestOutcome.PASSED] * 3 + list(TestOutcome))  # mostly passing
    kinds = st.sampled_from([None, "AssertionError", "ValueError"])
    return tuple(TestResult(test_id=t, outcome=draw(outcomes), duration=0.0, exception_type=draw(kinds),
                            message=draw(st.sampled_from([None, "boom"]))) for t in chosen)


@st.composite
def candidates(draw: st.DrawFn, index: int = 0, targets: tuple[str, ...] = ("pkg.mod.f0",)) -> PatchCandidate:
    text = draw(st.sampled_from([*PATCHED, "def f(:\n"]))
    target = draw(st.sampled_from([*targets, None]))
    return PatchCandidate(id=f"c{index}", generator="mutation", target=target,
                          description="a change", files={"pkg/mod.py": text},
                          operator=draw(st.sampled_from([None, "constant_off_by_one"])))


@st.composite
def check_runs(draw: st.DrawFn) -> tuple[checks.CheckState, list[checks.CheckObservation]]:
    """An initial check state and the observations a driver fed it, step by step."""
    candidate = draw(candidates())
    failing = draw(st.lists(st.sampled_from(TESTS[:3]), unique=True, min_size=1))
    passing = [t for t in TESTS if t not in failing and draw(st.booleans())]
    state = checks.initial_state(candidate, failing, passing, TESTS, {failing[0]: FAILING_SOURCE},
                                llm=draw(st.booleans()))
    start, observations = state, []
    while steps := checks.next_steps(state):
        # as the driver does: steps given together are all run, their observations recorded in order
        for step in steps:
            observation = draw(check_observation(step, failing + passing))
            observations.append(observation)
            state = checks.record(state, observation)
    return start, observations


def check_observation(step: checks.CheckStep, ids: list[str]) -> st.SearchStrategy[checks.CheckObservation]:
    @st.composite
    def build(draw: st.DrawFn) -> checks.CheckObservation:
        optional = draw(st.booleans())
        module = ["tests/equisa_generated/test_x.py::test_a", "tests/equisa_generated/test_x.py::test_b"]
        match step:
            case checks.RunSuite():
                if optional:  # a candidate that passes the whole suite
                    return checks.SuiteRan(tests=tuple(TestResult(test_id=t, outcome=TestOutcome.PASSED,
                                                                  duration=0.0) for t in ids))
                return checks.SuiteRan(tests=results(draw, ids))
            case checks.ReadFunctions():
                return checks.FunctionsRead(original=ORIGINAL, patched=draw(st.sampled_from(PATCHED))) \
                    if optional else checks.FunctionsRead()
            case checks.RunCarvedTests():
                return checks.CarvedTestsRan(tests=results(draw, module) if optional else None)
            case checks.RunDifferential():
                if not optional:
                    return checks.DifferentialRan(verdict=None)
                far = tuple(FarChange(call=f"f({i})", original=Observed(result="1"),
                                      patched=Observed(result="2")) for i in range(draw(st.integers(0, 2))))
                return checks.DifferentialRan(verdict=DifferentialVerdict(compared=5, far_changes=far))
            case checks.RunDivergence():
                if not optional:
                    return checks.DivergenceRan(report=None, reason="no test covers the function")
                return checks.DivergenceRan(report=draw(divergence_reports()))
            case checks.RunNovelTests():
                return checks.NovelTestsRan(tests=results(draw, module) if optional else None,
                                            calls=model_calls(draw, "novel"),
                                            problems=tuple(draw(st.lists(st.sampled_from(["p", "q"])))))
        raise AssertionError(step)
    return build()


@st.composite
def divergence_reports(draw: st.DrawFn) -> DivergenceReport:
    """A divergence check's report: calls from passing tests (some changed), generated and failing calls,
    and the lines of ``ORIGINAL`` they ran."""
    comparisons = [CallComparison(test_id=f"t::{i}", origin=origin, kind=kind, changed=draw(st.booleans())
                                  if origin == "passing" and draw(st.integers(0, 3)) == 0 else False)
                   for i, (origin, kind) in enumerate(draw(st.lists(st.sampled_from(
                       [("passing", "recorded"), ("passing", "generated"), ("failing", "recorded")]), max_size=6)))]
    executed = draw(st.sampled_from([(), (2,)]))
    return divergence_of(comparisons, executable=(2,), executed=executed, arcs=())


def passed_suite(ids: list[str]) -> checks.SuiteRan:
    return checks.SuiteRan(tests=tuple(TestResult(test_id=t, outcome=TestOutcome.PASSED, duration=0.0) for t in ids))


def report_of(changed_recorded: int = 0, changed_generated: int = 0, recorded: int = 5,
              executed: tuple[int, ...] = (2,)) -> DivergenceReport:
    comparisons = [CallComparison(test_id=f"t::r{i}", origin="passing", kind="recorded", changed=i < changed_recorded)
                   for i in range(recorded)]
    comparisons += [CallComparison(test_id=f"t::g{i}", origin="passing", kind="generated",
                                   changed=i < changed_generated) for i in range(10)]
    comparisons += [CallComparison(test_id="t::fail", origin="failing", kind="recorded", changed=True)]
    return divergence_of(comparisons, executable=(2,), executed=executed, arcs=((1, 2),))


def judged_with(report: DivergenceReport | None, patched: str = PATCHED[0]) -> PatchEvaluation:
    """The verdict on a candidate that passes the suite, the carved and differential checks, with ``report``."""
    candidate = PatchCandidate(id="c", generator="mutation", target="pkg.f", description="d",
                               files={"pkg.py": patched})
    state = checks.initial_state(candidate, TESTS[:1], TESTS[1:], TESTS, {}, llm=False)
    for observation in (passed_suite(TESTS), checks.FunctionsRead(original=ORIGINAL, patched=patched),
                        checks.CarvedTestsRan(tests=None), checks.DifferentialRan(verdict=None),
                        checks.DivergenceRan(report=report, reason="" if report else "no test covers it")):
        state = checks.record(state, observation)
    judged = checks.verdict(state)
    assert judged is not None
    return judged.evaluation


def test_a_fix_is_said_only_where_the_divergence_evidence_reaches():
    sound = judged_with(report_of())
    assert sound.status is PatchStatus.SOUND, sound.detail
    assert "no behaviour changed outside the failing tests" in sound.evidence and sound.divergence == 0.0
    unmeasured = judged_with(None)
    assert unmeasured.status is PatchStatus.UNCONFIRMED and "could not be measured" in unmeasured.detail
    no_calls = judged_with(report_of(recorded=0))
    assert no_calls.status is PatchStatus.UNCONFIRMED, "no call from a passing test: the evidence does not reach"
    uncovered = judged_with(report_of(executed=()))
    assert uncovered.status is PatchStatus.UNCONFIRMED, "the calls ran too little of the function"


def test_with_no_passing_call_a_fix_is_said_only_when_the_failing_tests_check_enough_calls():
    """Every test that calls the function fails on the original: their assertions, which the
    candidate passes, are the only oracle, and they must check enough different calls."""
    def failing_only(inputs: int) -> DivergenceReport:
        calls = [CallComparison(test_id=f"t::fail{i}", origin="failing", kind="recorded", changed=True,
                                inputs=f"f({i})") for i in range(inputs)]
        return divergence_of(calls, executable=(2,), executed=(), arcs=(), failing_executed=(2,))
    checked = judged_with(failing_only(MIN_CHECKED_CALLS))
    assert checked.status is PatchStatus.SOUND, checked.detail
    assert "the failing tests' assertions check 3 different call(s)" in checked.evidence
    too_few = judged_with(failing_only(MIN_CHECKED_CALLS - 1))
    assert too_few.status is PatchStatus.UNCONFIRMED and "check only 2 different call(s)" in too_few.detail


def test_a_changed_call_outside_the_failing_tests_is_never_tolerated():
    against = judged_with(report_of(changed_recorded=1))
    assert against.status is PatchStatus.OVERFITTING, "a passing test's call changed: evidence against"
    assert against.divergence is not None and against.divergence > 0
    near = judged_with(report_of(changed_generated=1))
    assert near.status is PatchStatus.UNCONFIRMED, "one generated call of ten changed: not a fix"


def test_a_broad_except_the_patch_adds_weighs_against_it():
    swallowed = "def f(x):\n    try:\n        return x + 1\n    except Exception:\n        return None\n"
    judged = judged_with(report_of(), patched=swallowed)
    assert judged.status is PatchStatus.OVERFITTING
    assert "broad_except_added" in judged.checks["wrong-patch patterns"]


@SETTINGS
@given(check_runs())
def test_candidate_checks_replay_to_the_same_state_and_round_trip_through_json(run):
    start, observations = run
    once = replay(start, observations, checks.record)
    twice = replay(start, observations, checks.record)
    assert once == twice
    assert checks.CheckState.model_validate_json(once.model_dump_json()) == once
    assert checks.verdict(once) is not None, "every check sequence ends with a verdict"
    made = [c for o in observations if isinstance(o, checks.NovelTestsRan) for c in o.calls]
    assert once.ledger.calls == tuple(made), "the ledger holds every call the checks made, in order"


@SETTINGS
@given(check_runs(), st.data())
def test_a_candidates_verdict_is_final(run, data):
    start, observations = run
    state = replay(start, observations, checks.record)
    final = checks.verdict(state)
    assert checks.next_steps(state) == []
    extra = data.draw(check_observation(checks.RunSuite(tests=()), TESTS))
    after = checks.record(state, extra)
    assert checks.verdict(after) == final and checks.next_steps(after) == []


@SETTINGS
@given(check_runs())
def test_a_candidate_is_accepted_only_after_every_check_passed(run):
    start, observations = run
    judged = checks.verdict(replay(start, observations, checks.record))
    assert judged is not None
    if not judged.converged:
        return
    assert judged.evaluation.status is PatchStatus.SOUND
    assert any(isinstance(o, checks.SuiteRan) for o in observations), "the suite ran"
    got = judged.evaluation.checks
    assert got["compiles"] == got["failing tests pass"] == got["no regressions"] == "passed"
    assert got["overfitting detectors"] in ("passed", "not applicable: the patch names no single function")
    assert got["carved tests"].startswith(("passed", "not applicable"))
    assert got["differential inputs"].startswith(("passed", "not applicable"))
    assert got["novel-input tests"].startswith(("passed", "not run", "not applicable"))
    assert got["wrong-patch patterns"].startswith("passed")
    assert got["behavioural divergence"].startswith("checked on"), "a fix is said only with its evidence"
    assert "no behaviour changed outside the failing tests" in judged.evaluation.evidence


def test_the_carved_tests_and_the_differential_inputs_are_given_together():
    candidate = PatchCandidate(id="c", generator="mutation", target="pkg.f", description="d",
                               files={"pkg.py": "def f(x):\n    return x + 1\n"})
    passed = tuple(TestResult(test_id=t, outcome=TestOutcome.PASSED, duration=0.0) for t in TESTS)
    state = checks.initial_state(candidate, TESTS[:1], TESTS[1:], TESTS, {}, llm=False)
    state = checks.record(state, checks.SuiteRan(tests=passed))
    state = checks.record(state, checks.FunctionsRead(original=ORIGINAL, patched=PATCHED[0]))
    together = checks.next_steps(state)
    assert together == [checks.RunCarvedTests(target="pkg.f"), checks.RunDifferential(target="pkg.f")]
    failed = TestResult(test_id="tests/equisa_generated/test_x.py::test_a", outcome=TestOutcome.FAILED,
                        duration=0.0, exception_type="AssertionError", message="1 != 2")
    carved = checks.record(state, checks.CarvedTestsRan(tests=(failed,)))
    assert checks.next_steps(carved) == [checks.RunDifferential(target="pkg.f")], "the rest is given again"
    differential = checks.record(carved, checks.DifferentialRan(verdict=None))
    assert checks.next_steps(differential) == [checks.RunDivergence(target="pkg.f")], \
        "a rejected candidate's divergence is measured too: the least divergent plausible patch is reported"
    judged = checks.verdict(checks.record(differential, checks.DivergenceRan(report=report_of())))
    assert judged is not None and judged.evaluation.status is PatchStatus.OVERFITTING
    assert judged.evaluation.checks["carved tests"].startswith("changes the result on inputs the suite")


def test_a_regression_names_the_test_and_why():
    candidate = PatchCandidate(id="c", generator="mutation", target="pkg.f", description="d",
                               files={"pkg.py": "x = 1\n"})
    state = checks.initial_state(candidate, ["t::fail"], ["t::ok"], ["t::fail", "t::ok"], {}, llm=False)
    state = checks.record(state, checks.SuiteRan(tests=(
        TestResult(test_id="t::fail", outcome=TestOutcome.PASSED, duration=0.0),
        TestResult(test_id="t::ok", outcome=TestOutcome.FAILED, duration=0.0, exception_type="KeyError",
                   message="'k'"))))
    judged = checks.verdict(state)
    assert judged is not None and judged.evaluation.status is PatchStatus.REGRESSIONS
    assert judged.evaluation.detail == "1 now fail: ok (KeyError: 'k')"
    assert judged.evaluation.regressions == ("t::ok",)


def test_a_candidate_that_does_not_compile_is_judged_before_any_step():
    candidate = PatchCandidate(id="c", generator="mutation", description="d", files={"m.py": "def f(:\n"})
    state = checks.initial_state(candidate, ["t::a"], [], ["t::a"], {}, llm=True)
    assert checks.next_steps(state) == []
    judged = checks.verdict(state)
    assert judged is not None and judged.reason == "does_not_compile" and not judged.converged


# The repair loop.

@st.composite
def budgets(draw: st.DrawFn) -> machine.RepairBudget:
    return machine.RepairBudget(repair_top=draw(st.integers(1, 3)), max_validations=draw(st.integers(1, 4)),
                                max_relocalizations=draw(st.integers(0, 2)), llm_fixes=draw(st.booleans()),
                                patcher=draw(st.booleans()))


#: Candidates a generated generator proposes at most in one round (the real ones are finite too).
MAX_PER_GENERATOR = 4


@st.composite
def repair_runs(draw: st.DrawFn) -> tuple[machine.RepairState, list[machine.RepairObservation]]:
    """An initial repair state and the observations a driver fed it."""
    state = machine.initial_state(draw(budgets()))
    start, observations = state, []
    asked: dict[tuple[int, str], int] = {}
    made = 0
    while steps := machine.next_steps(state):
        step = steps[0]
        new: list[machine.RepairObservation] = []
        if draw(st.booleans()):
            new.append(machine.Noted(problems=(draw(st.sampled_from(["p", "q"])),), once=draw(st.booleans())))
        match step:
            case machine.Localize():
                ranking = draw(st.lists(st.sampled_from(FUNCTIONS), unique=True))
                new.append(machine.Localized(patchable=tuple(ranking), calls=model_calls(draw, "localize")))
            case machine.FindTargets():
                readable = [f for f in step.ranked if draw(st.integers(0, 4))]
                targets = tuple(readable[:step.top])
                unreadable = tuple((f, "made at run time") for f in step.ranked
                                   if f not in readable and step.ranked.index(f) < len(targets) + 1)
                new.append(machine.TargetsFound(targets=targets, unreadable=unreadable))
            case machine.Generate():
                key = (state.rounds_done, step.generator)
                asked[key] = asked.get(key, 0) + 1
                if asked[key] > MAX_PER_GENERATOR or draw(st.integers(0, 3)) == 0:
                    new.append(machine.Exhausted(generator=step.generator))
                else:
                    made += 1
                    candidate = draw(candidates(made, step.targets)) if draw(st.integers(0, 3)) else None
                    new.append(machine.Generated(candidate=candidate, screened=draw(st.integers(0, 5)),
                                                 calls=model_calls(draw, "generate"),
                                                 problems=tuple(draw(st.lists(st.sampled_from(["p", "r"]))))))
            case machine.Validate():
                status = draw(st.sampled_from([PatchStatus.REGRESSIONS] * 3 + list(PatchStatus)))
                new.append(machine.Validated(evaluation=PatchEvaluation(candidate=step.candidate.id,
                                                                        status=status),
                                             calls=model_calls(draw, "validate")))
        for observation in new:
            observations.append(observation)
            state = machine.record(state, observation)
    return start, observations


@SETTINGS
@given(repair_runs())
def test_the_repair_loop_replays_to_the_same_state_and_round_trips_through_json(run):
    start, observations = run
    once = replay(start, observations, machine.record)
    assert once == replay(start, observations, machine.record)
    assert machine.RepairState.model_validate_json(once.model_dump_json()) == once
    assert machine.verdict(once) is not None


@SETTINGS
@given(repair_runs())
def test_the_repair_ledger_holds_every_call_observed_and_only_paid_calls_cost(run):
    start, observations = run
    state = replay(start, observations, machine.record)
    spending = (machine.Localized, machine.Generated, machine.Validated)
    made = [c for o in observations if isinstance(o, spending) for c in o.calls]
    assert state.ledger.calls == tuple(made), "every observation comes before the verdict (the driver stops)"
    assert machine.spent_usd(state) == round(sum(c.cost_usd or 0.0 for c in made if not c.cached), 6)
    assert set(state.ledger.paid_calls) == {c for c in made if not c.cached}
    assert {p for o in observations if hasattr(o, "problems") for p in o.problems} <= set(state.problems)


@SETTINGS
@given(repair_runs(), st.data())
def test_the_repair_loops_verdict_is_final(run, data):
    start, observations = run
    state = start
    final = None
    for observation in observations:
        state = machine.record(state, observation)
        if final is None:
            final = machine.verdict(state)
        else:
            assert machine.verdict(state) == final and machine.next_steps(state) == []
    assert final is not None
    extra = data.draw(st.sampled_from([
        machine.Localized(patchable=("pkg.mod.f0",)), machine.TargetsFound(targets=("pkg.mod.f0",)),
        machine.Exhausted(generator="mutation"),
        machine.Validated(evaluation=PatchEvaluation(candidate="c1", status=PatchStatus.SOUND))]))
    assert machine.verdict(machine.record(state, extra)) == final


@SETTINGS
@given(repair_runs())
def test_the_budgets_stop_the_repair_loop(run):
    start, observations = run
    state = start
    budget = start.budget
    localizations = 0
    per_round: dict[int, int] = {}
    for observation in observations:
        localizations += isinstance(observation, machine.Localized)
        if isinstance(observation, machine.Validated) and state.pending is not None:
            per_round[state.rounds_done] = per_round.get(state.rounds_done, 0) + 1
        state = machine.record(state, observation)
    assert localizations == state.relocalizations + 1 <= budget.max_relocalizations + 1
    assert all(count <= budget.max_validations for count in per_round.values())
    assert len(state.evaluations) <= budget.max_validations * (budget.max_relocalizations + 1)


@SETTINGS
@given(repair_runs())
def test_the_repair_loop_accepts_only_a_validated_sound_candidate(run):
    start, observations = run
    state = replay(start, observations, machine.record)
    judged = machine.verdict(state)
    assert judged is not None
    assert judged.converged == any(e.status is PatchStatus.SOUND for e in state.evaluations)
    assert all(e.candidate in state.candidates for e in state.evaluations)
    if judged.converged:
        assert state.evaluations[-1].status is PatchStatus.SOUND, "it stops at the first sound candidate"


def test_a_regression_sends_the_loop_back_to_discovery_without_the_function():
    state = machine.initial_state(machine.RepairBudget(repair_top=1, max_validations=5, max_relocalizations=1))
    candidate = PatchCandidate(id="m1", generator="mutation", target="pkg.f", description="d", files={})
    regressed = PatchEvaluation(candidate="m1", status=PatchStatus.REGRESSIONS)
    for observation in [machine.Localized(patchable=("pkg.f", "pkg.g")),
                        machine.TargetsFound(targets=("pkg.f",)), machine.Exhausted(generator="confirmed"),
                        machine.Generated(candidate=candidate, screened=7),
                        machine.Validated(evaluation=regressed), machine.Exhausted(generator="mutation")]:
        state = machine.record(state, observation)
    assert state.relocalizations == 1 and state.excluded == ("pkg.f",) and state.tried == 8
    assert machine.next_steps(state) == [machine.Localize(extra_rounds=1, extra_tests=15)]
    state = machine.record(state, machine.Localized(patchable=("pkg.f", "pkg.g")))
    assert machine.next_steps(state) == [machine.FindTargets(ranked=("pkg.g",), top=1)]


def test_a_generator_hears_its_last_verdict_and_a_verdict_it_made_itself_is_only_recorded():
    budget = machine.RepairBudget(repair_top=1, max_validations=5, max_relocalizations=0, llm_fixes=True,
                                  patcher=True)
    state = machine.initial_state(budget)
    fix = PatchCandidate(id="llm-fix-1", generator="llm-fix", target="pkg.f", description="d", files={})
    rejected = PatchEvaluation(candidate="llm-fix-1", status=PatchStatus.REGRESSIONS, detail="breaks t2")
    for observation in [machine.Localized(patchable=("pkg.f",)), machine.TargetsFound(targets=("pkg.f",))]:
        state = machine.record(state, observation)
    assert machine.last_verdict(state, "llm-fix") is None
    state = machine.record(state, machine.Generated(candidate=fix))
    assert machine.next_steps(state) == [machine.Validate(candidate=fix)]
    state = machine.record(state, machine.Validated(evaluation=rejected))
    assert machine.last_verdict(state, "llm-fix") == rejected
    assert machine.last_verdict(state, "patcher") is None

    state = machine.record(state, machine.Exhausted(generator="llm-fix"))
    proposed = PatchCandidate(id="patcher-1", generator="patcher", target="pkg.f", description="d", files={})
    judged = PatchEvaluation(candidate="patcher-1", status=PatchStatus.SOUND)
    state = machine.record(state, machine.Generated(candidate=proposed, evaluation=judged))
    assert machine.next_steps(state) == [machine.Validate(candidate=proposed, evaluation=judged)]
    state = machine.record(state, machine.Validated(evaluation=judged))
    assert state.pending_evaluation is None and machine.verdict(state).converged


def test_the_repair_ledger_sums_the_calls_of_every_observation_and_a_cached_call_costs_nothing():
    def call(purpose: str, usd: float | None, cached: bool = False) -> LLMCall:
        return LLMCall(purpose=purpose, model="m", prompt_hash="h", input_tokens=10, output_tokens=5,
                       cost_usd=usd, cached=cached)

    budget = machine.RepairBudget(repair_top=1, max_validations=5, llm_fixes=True, patcher=True)
    inspect, fix, novel = call("inspection", 0.125), call("llm-fix", 0.25), call("novel tests", 0.5)
    again = call("llm-fix", 0.25, cached=True)
    failed = call("llm-fix", None).model_copy(update={"error": "LLMRequestError: E"})
    fixed = PatchCandidate(id="llm-fix-1", generator="llm-fix", target="pkg.f", description="d", files={})
    state = machine.initial_state(budget)
    broken = "novel-input tests for pkg.f: 1 broken test(s) ignored"
    sound = PatchEvaluation(candidate="llm-fix-1", status=PatchStatus.SOUND)
    for observation in [
            machine.Localized(patchable=("pkg.f",), calls=(inspect,)),
            machine.TargetsFound(targets=("pkg.f",)),
            machine.Generated(candidate=None, calls=(failed,), problems=("LLM fix of pkg.f: E",)),
            machine.Generated(candidate=fixed, calls=(fix, again)),
            machine.Validated(evaluation=sound, calls=(novel,), problems=(broken,))]:
        state = machine.record(state, observation)
    assert machine.verdict(state).converged
    assert state.ledger.calls == (inspect, failed, fix, again, novel)
    assert state.ledger.paid_calls == (inspect, failed, fix, novel), "a cached answer was not asked for"
    assert machine.spent_usd(state) == state.ledger.usd == 0.875, "the cached answer costs nothing"
    assert state.problems == ("LLM fix of pkg.f: E", broken)
    assert machine.spent_usd(machine.record(state, machine.Localized(patchable=(), calls=(inspect,)))) \
        == 0.875, "a stopped loop records nothing more"


def test_the_report_shows_the_first_sound_patch_else_the_first_plausible_one():
    def evaluation(name: str, status: PatchStatus) -> PatchEvaluation:
        return PatchEvaluation(candidate=name, status=status)

    plausible = [evaluation("a", PatchStatus.REGRESSIONS), evaluation("b", PatchStatus.OVERFITTING),
                 evaluation("c", PatchStatus.OVERFITTING)]
    assert machine.reported_evaluation(plausible).candidate == "b"
    assert machine.reported_evaluation([*plausible, evaluation("d", PatchStatus.SOUND)]).candidate == "d"
    assert machine.reported_evaluation(plausible[:1]) is None
    unconfirmed = evaluation("e", PatchStatus.UNCONFIRMED)
    assert machine.reported_evaluation([*plausible, unconfirmed]).candidate == "e", \
        "nothing found against it comes before a check that weighs against"


def test_the_least_divergent_plausible_patch_is_reported():
    def evaluation(name: str, divergence: float | None) -> PatchEvaluation:
        return PatchEvaluation(candidate=name, status=PatchStatus.OVERFITTING, divergence=divergence)

    found = [evaluation("a", None), evaluation("b", 0.3), evaluation("c", 0.05), evaluation("d", 0.05)]
    assert machine.reported_evaluation(found).candidate == "c", "least change first, the earliest among equals"
    assert machine.reported_evaluation(found[:1]).candidate == "a"


def test_the_test_harness_is_never_patched():
    """A function outside the test files that calls test code (a runner's wrapper) is not patchable:
    a patch there could make a failing test pass by not running it."""
    from equisa_core.common.models import Edge, Node

    def node(fqn: str, file: str) -> Node:
        return Node(fqn=fqn, file=file, start_line=1, end_line=2)

    nodes = {n.fqn: n for n in (node("pkg.web.serve", "pkg/web.py"),
                                node("pkg.testing.Wrapper.__call__", "pkg/testing.py"),
                                node("pkg.test.web_test.test_serve", "pkg/test/web_test.py"))}
    edges = [Edge(caller="pkg.testing.Wrapper.__call__", callee="pkg.test.web_test.test_serve"),
             Edge(caller="pkg.test.web_test.test_serve", callee="pkg.web.serve")]
    ranking = ["pkg.testing.Wrapper.__call__", "pkg.web.serve", "pkg.test.web_test.test_serve"]
    assert machine.test_harness(nodes, edges) == {"pkg.testing.Wrapper.__call__"}
    assert machine.patchable_functions(ranking, nodes, edges) == ("pkg.web.serve",)
    # without the edges, the module's name says it: pkg/testing.py is test support
    assert machine.patchable_functions(ranking, nodes) == ("pkg.web.serve",)
    runner = {"pkg.run.Runner.__call__": node("pkg.run.Runner.__call__", "pkg/run.py"), **nodes}
    edges.append(Edge(caller="pkg.run.Runner.__call__", callee="pkg.test.web_test.test_serve"))
    ranked = ["pkg.run.Runner.__call__", *ranking]
    assert machine.patchable_functions(ranked, runner, edges) == ("pkg.web.serve",)

"""The test-generation loop (seed 001, with the seed 000 §8 pipeline) as a pure state machine.

The shape of ``equisa_core.common.loop``: ``next_steps(state)`` says what to run, the driver
(``flows/testgen.py``) runs it and feeds what it observed to ``record(state, observation)``, and
``verdict(state)`` says when and why the loop stopped. Each attempt goes through these steps:

    generate (attempt 0) | enhance (attempt 1+)   -> Generated
    dedupe     (the tests not kept from the last attempt: similar stored tests)  -> Deduped
    fix_smells (within the improvement budget)    -> SmellsFixed
    analyse    (static analysis)                  -> Analysed
    measure    (branch coverage in the sandbox; in deterministic mode the failing tests are
                dropped and the rest measured again)  -> Measured
    run_mutants (the mutation score)              -> MutantsScored
    store      (the passing tests join the store) -> Stored

Steps whose input is empty are skipped (no module: nothing to analyse; no new test: no §8 pass;
a syntax error: no run). Once an attempt is measured the supervisor writes the critique
(``supervisor.supervise``), the router decides ENHANCE or FINISH (``router.decide``; also FINISH
when the cost or time budget recorded in the observations is spent), and the attempt's report
joins the state. The verdict is the last FINISH's reason.

Each observation carries the model calls its step made (``equisa_core.common.cost.LLMCall``) and
the problems it met; the state keeps the attempt's calls and the run's ``CostLedger``, which is the
one place their cost is summed (a cached call costs nothing).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePath
from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

from equisa_core.common.cost import CostLedger, LLMCall
from equisa_core.common.loop import Frozen, Verdict
from equisa_core.common.options import EndpointOptions, TestgenOptions, cost_cap, default_of
from equisa_core.testgen.critique import Critique, RunnerMetrics
from equisa_core.testgen.modules import keep_tests, list_tests, node_id_name
from equisa_core.testgen.mutation_plan import MutantVerdict
from equisa_core.testgen.reliability import post_execution_level, pre_execution_level
from equisa_core.testgen.report import AttemptReport, CoverageFigures, PipelineNotes
from equisa_core.testgen.router import TARGETS_MET, Decision, decide
from equisa_core.testgen.static import StaticReport
from equisa_core.testgen.supervisor import supervise

__all__ = [
    "Measurement",
    "TestRun",
    "TestgenBudget",
    "TestgenSetup",
    "TestgenState",
    "TestgenStep",
    "TestgenObservation",
    "OBSERVATIONS",
    "Generated",
    "Deduped",
    "SmellsFixed",
    "Analysed",
    "Measured",
    "MutantsScored",
    "Stored",
    "combined_coverage",
    "initial_state",
    "next_steps",
    "record",
    "verdict",
]

#: Calls whose mean token entropy sets the pre-execution level.
ENTROPY_PURPOSES = ("testgen-generator", "testgen-enhancer")
#: Surviving mutants listed in an attempt's report.
MAX_SURVIVORS = 20


# --- what the machine reads ------------------------------------------------------------------------


class TestRun(Frozen):
    """One test of a measured run."""

    __test__ = False

    test_id: str
    passed: bool
    outcome: str


class Measurement(Frozen):
    """Branch coverage of the target by one run of some tests, and how each test ended."""

    figures: CoverageFigures
    executed_lines: tuple[int, ...] = ()
    executed_branches: tuple[tuple[int, int], ...] = ()
    tests: tuple[TestRun, ...] = ()
    error: str | None = Field(
        default=None, description="The coverage run's error (no record, target not imported)."
    )
    collect_error: str | None = Field(
        default=None, description="The last line of the first collection error."
    )

    @property
    def passed(self) -> list[str]:
        """The names of the tests that passed."""
        return [node_id_name(t.test_id) for t in self.tests if t.passed]


class TestgenBudget(Frozen):
    """What stops the loop besides the router: attempts, and the cost and time the steps report."""

    __test__ = False

    max_iterations: int = Field(ge=1, description="Attempts in all (attempt 0 included).")
    max_cost_usd: float | None = Field(default=cost_cap(default_of(EndpointOptions, "max_cost_usd")), ge=0,
                                       description="Model spending; None: no limit.")
    max_seconds: float | None = Field(
        default=None, ge=0, description="Step time as observed; None: no limit."
    )


class TestgenSetup(Frozen):
    """What stays fixed during a run: the target, the mode, the targets, the baseline."""

    __test__ = False

    target: str
    module_path: str = Field(description="The generated module's path in the workspace copy.")
    out: str = Field(description="The output folder (each attempt's module goes to attempt_N/).")
    use_llm: bool
    coverage_target: float
    mutation_target: float
    improvement_budget: int = Field(ge=0)
    with_specification: bool = Field(default=False, description="The tests assert intended behaviour.")
    hunt_survivors: bool = Field(
        default=default_of(TestgenOptions, "hunt_survivors"),
        description="Deterministic mode: past the targets, mutation-guided rounds while mutants survive.")
    baseline: Measurement | None = None
    budget: TestgenBudget


Phase = Literal["generate", "dedupe", "fix_smells", "analyse", "measure", "run_mutants", "store", "done"]


class TestgenState(Frozen):
    """Everything the loop's decisions read: the attempt under way and every finished one."""

    __test__ = False

    setup: TestgenSetup
    attempt: int = 0
    phase: Phase = "generate"
    source: str = Field(
        default="", description="The attempt's module (the last attempt's, while generating)."
    )
    known: tuple[str, ...] = Field(
        default=(), description="Tests' text kept from the last attempt (not checked again)."
    )
    origin: str = ""
    deterministic: tuple[str, ...] = ()
    notes: PipelineNotes = Field(default_factory=PipelineNotes)
    calls: tuple[LLMCall, ...] = Field(default=(), description="The attempt's model calls.")
    ledger: CostLedger = Field(default_factory=CostLedger, description="The run's model calls.")
    static: StaticReport | None = None
    measurement: Measurement | None = None
    remeasured: bool = Field(
        default=False, description="The failing tests were dropped and the rest measured again."
    )
    runner_error: str | None = None
    mutation_score: float | None = None
    mutants: tuple[MutantVerdict, ...] = ()
    attempts: tuple[AttemptReport, ...] = ()
    best_attempt: int | None = None
    best_key: tuple[float, float, int] | None = None
    best_source: str = ""
    problems: tuple[str, ...] = ()
    seconds: float = Field(default=0.0, description="Time the steps took, as they reported it.")
    stopped_because: str = ""

    @property
    def decision(self) -> Decision | None:
        """The router's last decision; None before the first attempt is measured."""
        return self.attempts[-1].decision if self.attempts else None

    @property
    def cost_usd(self) -> float:
        """What the run's model calls cost so far (the ledger's sum: a cached call costs nothing)."""
        return self.ledger.usd


def initial_state(setup: TestgenSetup, problems: Sequence[str] = ()) -> TestgenState:
    """The state before attempt 0, with the problems the set-up met."""
    return TestgenState(setup=setup, problems=tuple(problems))


# --- steps ----------------------------------------------------------------------------------------


class _Step(Frozen):
    attempt: int


class Generate(_Step):
    """Attempt 0: the generator (``strategy`` model) or carved, boundary and scratch tests."""

    kind: Literal["generate"] = "generate"
    strategy: Literal["model", "deterministic"]


class Enhance(_Step):
    """Attempt 1+: the enhancer on ``source`` with the critique, or a wider boundary search
    focused on ``missing_lines`` (its result merged into ``source``)."""

    kind: Literal["enhance"] = "enhance"
    strategy: Literal["model", "deterministic"]
    source: str
    instructions: tuple[str, ...]
    missing_lines: tuple[int, ...]
    surviving_mutants: tuple[str, ...]


class Dedupe(_Step):
    """The new ``tests`` (name -> code) checked against the store; redundant ones dropped or rewritten."""

    kind: Literal["dedupe"] = "dedupe"
    source: str
    tests: dict[str, str]
    notes: PipelineNotes


class FixSmells(_Step):
    """Test smells found and fixed, at most ``budget`` rounds."""

    kind: Literal["fix_smells"] = "fix_smells"
    source: str
    budget: int
    notes: PipelineNotes


class Analyse(_Step):
    """Static analysis of ``source``."""

    kind: Literal["analyse"] = "analyse"
    source: str


class Measure(_Step):
    """Branch coverage of ``source``'s tests in the sandbox; ``after_drop``: a second run without the
    tests that failed (a runner error then is not caught)."""

    kind: Literal["measure"] = "measure"
    source: str
    after_drop: bool = False


class RunMutants(_Step):
    """The mutation score of ``source``'s tests (each mutant against the tests covering it)."""

    kind: Literal["run_mutants"] = "run_mutants"
    source: str


class Store(_Step):
    """The passing tests (id -> code) join the similarity store."""

    kind: Literal["store"] = "store"
    tests: tuple[tuple[str, str], ...]


TestgenStep = Annotated[Generate | Enhance | Dedupe | FixSmells | Analyse | Measure | RunMutants | Store,
                      Field(discriminator="kind")]


# --- observations ---------------------------------------------------------------------------------


class _Observation(Frozen):
    seconds: float = Field(default=0.0, ge=0, description="How long the step took.")
    calls: tuple[LLMCall, ...] = Field(default=(), description="The model calls the step made.")
    problems: tuple[str, ...] = ()


class Generated(_Observation):
    """What generate or enhance produced: the module, where it came from, what was done."""

    kind: Literal["generated"] = "generated"
    origin: str
    source: str
    deterministic: tuple[str, ...] = ()


class Deduped(_Observation):
    """The module after the redundancy check, and the notes."""

    kind: Literal["deduped"] = "deduped"
    source: str
    notes: PipelineNotes


class SmellsFixed(_Observation):
    """The module after the smell rounds, and the notes."""

    kind: Literal["smells_fixed"] = "smells_fixed"
    source: str
    notes: PipelineNotes


class Analysed(_Observation):
    """The static report."""

    kind: Literal["analysed"] = "analysed"
    static: StaticReport


class Measured(_Observation):
    """The coverage run, or the runner's error when it could not run."""

    kind: Literal["measured"] = "measured"
    measurement: Measurement | None = None
    runner_error: str | None = None


class MutantsScored(_Observation):
    """The mutation score and each mutant's verdict."""

    kind: Literal["mutants_scored"] = "mutants_scored"
    score: float | None
    verdicts: tuple[MutantVerdict, ...] = ()


class Stored(_Observation):
    """How many tests joined the store."""

    kind: Literal["stored"] = "stored"
    count: int = Field(ge=0)


TestgenObservation = Annotated[
    Generated | Deduped | SmellsFixed | Analysed | Measured | MutantsScored | Stored,
    Field(discriminator="kind"),
]
#: Reads and writes lists of observations as JSON (``OBSERVATIONS.dump_json`` / ``validate_json``).
OBSERVATIONS: TypeAdapter[list[TestgenObservation]] = TypeAdapter(list[TestgenObservation])

_ANSWERS: dict[str, str] = {
    "generate": "generated",
    "dedupe": "deduped",
    "fix_smells": "smells_fixed",
    "analyse": "analysed",
    "measure": "measured",
    "run_mutants": "mutants_scored",
    "store": "stored",
}


# --- the machine ----------------------------------------------------------------------------------


def verdict(state: TestgenState) -> Verdict | None:
    """None while the loop goes on; else why it stopped (``converged``: the targets were met)."""
    if state.phase != "done":
        return None
    return Verdict(reason=state.stopped_because, converged=state.stopped_because.startswith(TARGETS_MET))


def next_steps(state: TestgenState) -> list[TestgenStep]:
    """What to run next: one step (the loop is sequential), none once there is a verdict."""
    setup, attempt, source = state.setup, state.attempt, state.source
    match state.phase:
        case "done":
            return []
        case "generate" if attempt == 0:
            return [Generate(attempt=0, strategy="model" if setup.use_llm else "deterministic")]
        case "generate":
            last = state.attempts[-1]
            return [
                Enhance(
                    attempt=attempt,
                    strategy="model" if setup.use_llm and source else "deterministic",
                    source=source,
                    instructions=last.critique.instructions,
                    missing_lines=last.critique.missing_lines,
                    surviving_mutants=tuple(last.surviving_mutants),
                )
            ]
        case "dedupe":
            return [
                Dedupe(
                    attempt=attempt, source=source, tests=_new_tests(source, state.known), notes=state.notes
                )
            ]
        case "fix_smells":
            return [
                FixSmells(attempt=attempt, source=source, budget=setup.improvement_budget, notes=state.notes)
            ]
        case "analyse":
            return [Analyse(attempt=attempt, source=source)]
        case "measure":
            return [Measure(attempt=attempt, source=source, after_drop=state.remeasured)]
        case "run_mutants":
            return [RunMutants(attempt=attempt, source=source)]
        case "store":
            return [Store(attempt=attempt, tests=_storable(state))]
    raise AssertionError(f"unknown phase {state.phase}")  # pragma: no cover


def record(state: TestgenState, observation: TestgenObservation) -> TestgenState:
    """The state after ``observation``, which must answer ``next_steps(state)``; a finished state is
    final (recording into it changes nothing)."""
    if state.phase == "done":
        return state
    if _ANSWERS[state.phase] != observation.kind:
        raise ValueError(f"a {observation.kind!r} observation does not answer a {state.phase!r} step")
    state = state.model_copy(
        update={
            "seconds": state.seconds + observation.seconds,
            "calls": state.calls + observation.calls,
            "ledger": state.ledger.plus(observation.calls),
            "problems": state.problems + observation.problems,
        }
    )
    match observation:
        case Generated():
            return _generated(state, observation)
        case Deduped() | SmellsFixed():
            next_phase: Phase = "fix_smells" if observation.kind == "deduped" else "analyse"
            state = state.model_copy(update={"source": observation.source, "notes": observation.notes})
            return state.model_copy(update={"phase": next_phase}) if state.source else _finish_attempt(state)
        case Analysed():
            state = state.model_copy(update={"static": observation.static})
            runs = observation.static.syntax_ok and observation.static.test_count > 0
            return state.model_copy(update={"phase": "measure"}) if runs else _finish_attempt(state)
        case Measured():
            return _measured(state, observation)
        case MutantsScored():
            update = {"mutation_score": observation.score, "mutants": observation.verdicts}
            return _finish_attempt(state.model_copy(update=update))
        case Stored():
            attempts = list(state.attempts)
            notes = attempts[-1].pipeline.model_copy(update={"added_to_store": observation.count})
            attempts[-1] = attempts[-1].model_copy(update={"pipeline": notes})
            return _after_attempt(state.model_copy(update={"attempts": tuple(attempts)}))
    raise AssertionError(f"unknown observation {observation!r}")  # pragma: no cover


def _new_tests(source: str, known: Sequence[str]) -> dict[str, str]:
    """The tests of ``source`` whose text was not kept from the last attempt."""
    return {name: code for name, code in list_tests(source).items() if code not in known}


def _storable(state: TestgenState) -> tuple[tuple[str, str], ...]:
    """(id, code) of the passing tests of the attempt's module."""
    passed = set(state.measurement.passed) if state.measurement else set()
    return tuple(
        (f"{state.setup.module_path}::{name}", code)
        for name, code in list_tests(state.source).items()
        if name in passed
    )


def _generated(state: TestgenState, observation: Generated) -> TestgenState:
    known = tuple(list_tests(state.source).values())
    state = state.model_copy(
        update={
            "source": observation.source,
            "origin": observation.origin,
            "deterministic": observation.deterministic,
            "known": known,
        }
    )
    if not observation.source:
        return _finish_attempt(state)
    phase: Phase = "dedupe" if _new_tests(observation.source, known) else "analyse"
    return state.model_copy(update={"phase": phase})


def _measured(state: TestgenState, observation: Measured) -> TestgenState:
    """After a coverage run: in deterministic mode the failing tests go (carved tests assert observed
    behaviour: one that fails is not deterministic) and the rest run again; then the mutants."""
    measurement = observation.measurement
    if measurement is None:
        return _finish_attempt(
            state.model_copy(update={"measurement": None, "runner_error": observation.runner_error})
        )
    failing = [t for t in measurement.tests if not t.passed]
    if failing and not state.setup.use_llm and not state.remeasured:
        dropped = [f"{node_id_name(t.test_id)}: {t.outcome} on the code it was observed on" for t in failing]
        notes = state.notes.model_copy(update={"dropped": [*state.notes.dropped, *dropped]})
        keep = measurement.passed
        update = {"source": keep_tests(state.source, keep), "notes": notes, "remeasured": True}
        state = state.model_copy(update=update)
        return state.model_copy(update={"phase": "measure"}) if keep else _finish_attempt(state)
    state = state.model_copy(update={"measurement": measurement})
    if measurement.error:
        return _finish_attempt(state.model_copy(update={"runner_error": measurement.error}))
    if measurement.collect_error is not None:
        error = f"collection error: {measurement.collect_error}"
        return _finish_attempt(state.model_copy(update={"runner_error": error}))
    return state.model_copy(update={"phase": "run_mutants"})


def combined_coverage(baseline: Measurement | None, new: Measurement) -> CoverageFigures:
    """The union of what the existing tests and the new ones executed (lines and branches)."""
    if baseline is None:
        return new.figures
    lines = set(baseline.executed_lines) | set(new.executed_lines)
    statements = max(baseline.figures.statements, new.figures.statements)
    all_lines = lines | set(baseline.figures.missing_lines) | set(new.figures.missing_lines)
    branches = set(baseline.executed_branches) | set(new.executed_branches)
    total_branches = max(baseline.figures.branches, new.figures.branches)
    denominator = statements + total_branches
    return CoverageFigures(
        percent=round(100.0 * (len(lines) + len(branches)) / denominator, 2) if denominator else 100.0,
        branch_percent=round(100.0 * len(branches) / total_branches, 2) if total_branches else 100.0,
        covered_lines=len(lines),
        statements=statements,
        covered_branches=len(branches),
        branches=total_branches,
        missing_lines=tuple(sorted(all_lines - lines)),
    )


def _entropy(calls: Sequence[LLMCall]) -> float | None:
    """The last generator or enhancer call's mean token entropy."""
    found = [c.mean_entropy for c in calls if c.mean_entropy is not None and c.purpose in ENTROPY_PURPOSES]
    return found[-1] if found else None


def _metrics(state: TestgenState) -> RunnerMetrics:
    measurement, baseline = state.measurement, state.setup.baseline
    tests = measurement.tests if measurement else ()
    missing = (
        measurement.figures.missing_lines
        if measurement
        else (baseline.figures.missing_lines if baseline else ())
    )
    return RunnerMetrics(
        success=measurement is not None and state.runner_error is None,
        tests_collected=len(tests),
        tests_passed=sum(1 for t in tests if t.passed),
        coverage=measurement.figures.percent if measurement else 0.0,
        mutation_score=state.mutation_score,
        missing_lines=missing,
        test_error=state.runner_error,
    )


def _route(state: TestgenState, critique: Critique) -> tuple[Decision, str]:
    """The router's decision; FINISH too when the recorded cost (the run's ledger) or time budget
    is spent."""
    budget = state.setup.budget
    decision, reason = decide(critique, state.attempt + 1, budget.max_iterations)
    if decision == "FINISH" and reason == TARGETS_MET:
        decision, reason = _hunt_survivors(state)
    if decision == "FINISH":
        return decision, reason
    repeated = _repeats_the_last_attempt(state, critique)
    if repeated:
        return "FINISH", repeated
    if budget.max_cost_usd is not None and state.cost_usd >= budget.max_cost_usd:
        return "FINISH", f"cost budget (${budget.max_cost_usd:.4f}) spent"
    if budget.max_seconds is not None and state.seconds >= budget.max_seconds:
        return "FINISH", f"time budget ({budget.max_seconds:.0f} s) spent"
    return decision, reason


_ALIVE = ("survived", "not_covered")


def _surviving(verdicts: Sequence[MutantVerdict]) -> int:
    return sum(v.status in _ALIVE for v in verdicts)


def _hunt_survivors(state: TestgenState) -> tuple[Decision, str]:
    """With both targets met: ENHANCE for a mutation-guided round while mutants survive (deterministic
    mode, ``hunt_survivors``), until a round kills none of them; else FINISH, saying why (issue 49:
    the survivors a 60 % target leaves are often the careless edits a user fears most)."""
    left = _surviving(state.mutants)
    if state.setup.use_llm or not state.setup.hunt_survivors or not left:
        return "FINISH", TARGETS_MET
    last = state.attempts[-1] if state.attempts else None
    if last is not None and last.decision_reason.startswith(TARGETS_MET):  # this was a hunting round
        before = sum(n for status, n in last.mutants.items() if status in _ALIVE)
        if left >= before:
            return "FINISH", f"{TARGETS_MET}; a mutation-guided round killed none of the {before} survivors"
    return "ENHANCE", f"{TARGETS_MET}; {left} mutants survive: a mutation-guided round for them"


def _repeats_the_last_attempt(state: TestgenState, critique: Critique) -> str:
    """Why another round would add nothing, or "": this deterministic round wrote the same tests as
    the last one and measured the same coverage and mutation score (the next one, drawing from the
    same observations, would write them again; issue 49)."""
    if state.setup.use_llm or not state.attempts:
        return ""
    last = state.attempts[-1]
    same_tests = set(list_tests(state.source)) == set(last.tests)
    same_figures = not critique.coverage_delta and not critique.mutation_delta
    if not (same_tests and same_figures):
        return ""
    return (f"the round added nothing: the same {len(last.tests)} tests as attempt {last.attempt}, "
            f"coverage {critique.coverage:.1f}% and mutation score "
            f"{(critique.mutation_score or 0.0):.1f}% unchanged")


def _attempt_report(state: TestgenState) -> AttemptReport:
    """The finished attempt: critique, decision and figures (the supervisor and the router)."""
    setup = state.setup
    static = state.static or StaticReport(syntax_ok=True, tools=(), test_count=0)
    entropy = _entropy(state.calls)
    observed_oracle = not setup.use_llm or state.origin.startswith("deterministic")
    pre = pre_execution_level(static, entropy, observed_oracle=observed_oracle)
    metrics = _metrics(state)
    critical = None
    if not state.source and state.attempt == 0 and not setup.use_llm:
        critical = "the deterministic generator found nothing to generate: " + "; ".join(
            state.deterministic[-1:]
        )
    post = post_execution_level(
        syntax_ok=static.syntax_ok,
        runner_error=state.runner_error,
        tests_run=metrics.tests_collected,
        tests_passed=metrics.tests_passed,
        coverage=metrics.coverage,
        coverage_target=setup.coverage_target,
        mutation_score=metrics.mutation_score,
        mutation_target=setup.mutation_target,
    )
    critique = supervise(
        metrics,
        static,
        pre,
        post,
        coverage_target=setup.coverage_target,
        mutation_target=setup.mutation_target,
        previous=state.attempts[-1].critique if state.attempts else None,
        critical_error=critical,
    )
    decision, reason = _route(state, critique)
    attempt_calls = CostLedger(calls=state.calls)
    counted = attempt_calls.totals()
    verdicts = state.mutants
    statuses: dict[str, int] = {}
    for mutant in verdicts:
        statuses[mutant.status] = statuses.get(mutant.status, 0) + 1
    survivors = [f"{v.fqn} {v.description}" for v in verdicts if v.status in _ALIVE]
    measurement = state.measurement
    return AttemptReport(
        attempt=state.attempt,
        origin=state.origin,
        module=str(PurePath(setup.out, f"attempt_{state.attempt}", PurePath(setup.module_path).name)),
        tests=list(list_tests(state.source)),
        tests_passed=metrics.tests_passed,
        static=static,
        pre_reliability=pre,
        coverage=measurement.figures if measurement else None,
        combined_coverage=combined_coverage(setup.baseline, measurement) if measurement else None,
        mutation_score=metrics.mutation_score,
        mutants=statuses,
        surviving_mutants=survivors[:MAX_SURVIVORS],
        post_reliability=post,
        critique=critique,
        decision=decision,
        decision_reason=reason,
        pipeline=state.notes,
        deterministic=list(state.deterministic),
        cost_usd=attempt_calls.usd,
        llm_calls=counted.calls,
        cached_llm_calls=counted.cached_calls,
        mean_entropy=entropy,
    )


def _finish_attempt(state: TestgenState) -> TestgenState:
    """The attempt's report joins the state; the best module so far is kept (highest coverage, then
    mutation score, then the earliest); the passing tests go to the store."""
    entry = _attempt_report(state)
    update: dict[str, object] = {"attempts": (*state.attempts, entry)}
    # With a specification the tests assert intended behaviour: on a buggy program some fail, and
    # the module is still the answer (the caller runs it against a patched program).
    measured = state.measurement is not None
    if measured and (entry.tests_passed or (state.setup.with_specification and entry.tests)):
        key = (entry.critique.coverage, entry.mutation_score or 0.0, -state.attempt)
        if state.best_key is None or key > state.best_key:
            update |= {"best_key": key, "best_attempt": state.attempt, "best_source": state.source}
    state = state.model_copy(update=update)
    if measured and entry.tests_passed:
        return state.model_copy(update={"phase": "store"})
    return _after_attempt(state)


def _after_attempt(state: TestgenState) -> TestgenState:
    """Done on FINISH, else the next attempt starts from this one's module."""
    last = state.attempts[-1]
    if last.decision == "FINISH":
        return state.model_copy(update={"phase": "done", "stopped_because": last.decision_reason})
    return state.model_copy(
        update={
            "attempt": state.attempt + 1,
            "phase": "generate",
            "known": (),
            "origin": "",
            "deterministic": (),
            "notes": PipelineNotes(),
            "calls": (),
            "static": None,
            "measurement": None,
            "remeasured": False,
            "runner_error": None,
            "mutation_score": None,
            "mutants": (),
        }
    )

"""The checks one patch candidate goes through, as a pure state machine (the shape of ``common.loop``).

A candidate is accepted (``SOUND``) only when, in this order:

1. its files compile (``DOES_NOT_COMPILE`` otherwise; decided when the state is made);
2. on the whole amplified suite (step ``run-suite``) every failing test passes (``STILL_FAILING``)
   and every passing test still passes (``REGRESSIONS``), Discovery's testgen tests aside: they
   assert the buggy behaviour, so they are only counted (``generated_tests.pinned_note``);
3. the anti-overfitting checks pass (``OVERFITTING`` otherwise), one step each: the detectors on the
   target's original and patched source (``read-functions``), the tests carved from passing
   executions of the target (``run-carved-tests``), the differential test on inputs near the
   suite's own calls (``run-differential``: no change of behaviour near a passing test's call,
   ``equisa_core.validation.differential``) and, in LLM mode, the model's novel-input tests
   (``run-novel-tests``). The carved and differential steps are given together: both call the
   target on recorded inputs, and the driver runs them in one sandboxed run;
4. the behavioural divergence (``run-divergence``, ``equisa_core.validation.divergence``): the
   target's covering tests run on the original with the candidate's function called beside it on
   every call (and on generated calls near the passing tests' calls): a call made outside the
   failing tests whose outcome changes is evidence against the candidate;
5. the wrong-patch patterns (``equisa_core.validation.patch_patterns``: a broad ``except`` added, a
   silencing return, a guard deleted, a condition inverted where the suite never took both ways,
   one of parallel expressions changed alone), weighed by their fitted model.

A candidate that passes all of these is ``SOUND`` only when the evidence reaches: the divergence
check compared calls of the function from passing tests or, with none, the failing tests (which the
candidate passes) checked enough different calls, and these calls covered enough of it
(``divergence.evidence_reaches``). Otherwise it is ``UNCONFIRMED``, with the reason: the report
then says ``plausible_only``, never ``fixed``. A verdict is a promise; where the evidence does not
reach, the promise is not made.

The driver (``flows.validation``) runs each step in a sandbox and records what it observed. The
model calls a step made (the novel-input tests') and the problems it met ride on its observation;
``record`` adds them to the state's ``ledger`` and ``problems``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import Field

from equisa_core.common.cost import CostLedger, LLMCall
from equisa_core.common.loop import Frozen, Verdict
from equisa_core.common.models import TestOutcome, TestResult
from equisa_core.validation.candidates import PatchCandidate, PatchEvaluation, PatchStatus
from equisa_core.validation.differential import DifferentialVerdict
from equisa_core.validation.divergence import DivergenceReport, evidence_reaches
from equisa_core.validation.generated_tests import is_testgen_test, pinned_note, split_testgen_tests
from equisa_core.validation.overfitting import overfitting_findings
from equisa_core.validation.patch_patterns import patch_patterns
from equisa_core.validation.pattern_model import load_pattern_model

__all__ = [
    "CheckState", "CheckStep", "CheckObservation", "CheckVerdict", "RunSuite", "ReadFunctions",
    "RunCarvedTests", "RunDifferential", "RunDivergence", "RunNovelTests", "SuiteRan", "FunctionsRead",
    "CarvedTestsRan", "DifferentialRan", "DivergenceRan", "NovelTestsRan",
    "initial_state", "next_steps", "record", "verdict",
]



class RunSuite(Frozen):
    """Run ``tests`` (the whole suite, flaky tests left out) with the candidate's files."""

    kind: Literal["run-suite"] = "run-suite"
    tests: tuple[str, ...]


class ReadFunctions(Frozen):
    """Read the target's original and patched source (for the overfitting detectors)."""

    kind: Literal["read-functions"] = "read-functions"
    target: str | None


class RunCarvedTests(Frozen):
    """Run the tests carved from passing executions of ``target`` on the patched program."""

    kind: Literal["run-carved-tests"] = "run-carved-tests"
    target: str


class RunDifferential(Frozen):
    """Run the target's differential inputs on the patched program, against the original's results."""

    kind: Literal["run-differential"] = "run-differential"
    target: str


class RunDivergence(Frozen):
    """Run the target's covering tests on the original with the candidate's function called beside
    it (``equisa_core.validation.divergence``)."""

    kind: Literal["run-divergence"] = "run-divergence"
    target: str


class RunNovelTests(Frozen):
    """Run the model's novel-input tests of ``target`` on the patched program."""

    kind: Literal["run-novel-tests"] = "run-novel-tests"
    target: str


CheckStep = Annotated[RunSuite | ReadFunctions | RunCarvedTests | RunDifferential | RunDivergence
                      | RunNovelTests, Field(discriminator="kind")]


class SuiteRan(Frozen):
    """The suite's results with the candidate applied."""

    kind: Literal["suite-ran"] = "suite-ran"
    tests: tuple[TestResult, ...]


class FunctionsRead(Frozen):
    """The target's original and patched source; None when the patch names no single function."""

    kind: Literal["functions-read"] = "functions-read"
    original: str | None = None
    patched: str | None = None
    first_line: int = Field(1, ge=1, description="The file line of the original's first line.")


class CarvedTestsRan(Frozen):
    """The carved tests' results; None when no passing execution could be carved."""

    kind: Literal["carved-tests-ran"] = "carved-tests-ran"
    tests: tuple[TestResult, ...] | None


class NovelTestsRan(Frozen):
    """The novel-input tests' results (None when the model gave no usable tests), the model calls
    made to write them and the problems met doing so (nothing when they were written already)."""

    kind: Literal["novel-tests-ran"] = "novel-tests-ran"
    tests: tuple[TestResult, ...] | None
    calls: tuple[LLMCall, ...] = ()
    problems: tuple[str, ...] = ()


class DifferentialRan(Frozen):
    """The differential test's verdict; None when the target has no inputs for it."""

    kind: Literal["differential-ran"] = "differential-ran"
    verdict: DifferentialVerdict | None = None


class DivergenceRan(Frozen):
    """The divergence check's report; None when it could not run, with the reason."""

    kind: Literal["divergence-ran"] = "divergence-ran"
    report: DivergenceReport | None = None
    reason: str = ""


CheckObservation = Annotated[SuiteRan | FunctionsRead | CarvedTestsRan | DifferentialRan | DivergenceRan
                             | NovelTestsRan, Field(discriminator="kind")]


class CheckVerdict(Verdict):
    """The judgement of one candidate: ``reason`` is its status, ``converged`` means accepted."""

    evaluation: PatchEvaluation


class CheckState(Frozen):
    """Where one candidate's validation stands."""

    candidate: str = Field(description="The candidate's id.")
    target: str | None = None
    operator: str | None = None
    failing: tuple[str, ...] = Field(default=(), description="Tests that fail on the original code.")
    passing: tuple[str, ...] = Field(default=(), description="Tests that pass on it, flaky ones left out.")
    suite: tuple[str, ...] = Field(default=(), description="Every test the suite check runs.")
    failing_sources: dict[str, str] = Field(default_factory=dict)
    llm: bool = Field(default=False, description="Whether the model's novel-input tests are asked for.")
    checks: dict[str, str] = Field(default_factory=dict, description="Check name -> 'passed' or why not.")
    reasons: tuple[str, ...] = Field(default=(), description="Why the anti-overfitting checks failed so far.")
    doubts: tuple[str, ...] = Field(default=(), description="Why the evidence does not reach a fix, so far.")
    original_source: str | None = Field(default=None, description="The target's source before the patch.")
    patched_source: str | None = Field(default=None, description="The target's source after the patch.")
    first_line: int = Field(default=1, description="The file line of the original source's first line.")
    divergence: DivergenceReport | None = None
    divergence_done: bool = False
    functions_read: bool = False
    single_function: bool = False
    carved_done: bool = False
    differential_done: bool = False
    novel_done: bool = False
    problems: tuple[str, ...] = ()
    ledger: CostLedger = Field(default_factory=CostLedger, description="The model calls the checks made.")
    evaluation: PatchEvaluation | None = None


def initial_state(candidate: PatchCandidate, failing: Sequence[str], passing: Sequence[str],
                 suite: Sequence[str], failing_sources: dict[str, str], llm: bool) -> CheckState:
    """The state before any check ran; a candidate whose files do not compile is judged at once."""
    state = CheckState(candidate=candidate.id, target=candidate.target, operator=candidate.operator,
                       failing=tuple(sorted(failing)), passing=tuple(sorted(passing)), suite=tuple(suite),
                       failing_sources=dict(failing_sources), llm=llm)
    for path, text in sorted(candidate.files.items()):
        try:
            compile(text, path, "exec")
        except (SyntaxError, ValueError) as error:
            return state.model_copy(update={"evaluation": PatchEvaluation(
                candidate=candidate.id, status=PatchStatus.DOES_NOT_COMPILE, detail=f"{path}: {error}",
                checks={"compiles": str(error)})})
    return state.model_copy(update={"checks": {"compiles": "passed"}})


def next_steps(state: CheckState) -> list[CheckStep]:
    """The next checks to run, in the order of the module docstring, or none: one at a time, except
    the carved tests and the differential inputs, which are given together (both call the target
    on recorded inputs: the driver may run them at once, and records their observations in order)."""
    if state.evaluation is not None:
        return []
    if "failing tests pass" not in state.checks:
        return [RunSuite(tests=state.suite)]
    if not state.functions_read:
        return [ReadFunctions(target=state.target)]
    together: list[CheckStep] = []
    if not state.carved_done and state.target:
        together.append(RunCarvedTests(target=state.target))
    if not state.differential_done and state.single_function and state.target:
        together.append(RunDifferential(target=state.target))
    if together:
        return together
    if not state.divergence_done and state.single_function and state.target:
        return [RunDivergence(target=state.target)]
    if not state.novel_done and state.llm and state.single_function and state.target:
        return [RunNovelTests(target=state.target)]
    return []


def record(state: CheckState, observation: CheckObservation) -> CheckState:
    """The state after ``observation``; the evaluation is set once the last check is in."""
    if state.evaluation is not None:
        return state
    match observation:
        case SuiteRan():
            state = _suite_ran(state, observation.tests)
        case FunctionsRead():
            state = _functions_read(state, observation)
        case CarvedTestsRan():
            state = _carved_ran(state, observation.tests)
        case DifferentialRan():
            state = _differential_ran(state, observation.verdict)
        case DivergenceRan():
            state = _divergence_ran(state, observation)
        case NovelTestsRan():
            state = _novel_ran(_spent(state, observation), observation.tests)
    return _judged(state)


def verdict(state: CheckState) -> CheckVerdict | None:
    """None while checks remain, else the candidate's evaluation (``converged``: it is sound)."""
    if state.evaluation is None:
        return None
    return CheckVerdict(reason=state.evaluation.status.value,
                        converged=state.evaluation.status is PatchStatus.SOUND, evaluation=state.evaluation)


def _spent(state: CheckState, ran: NovelTestsRan) -> CheckState:
    """``state`` with the calls made to write the novel-input tests and the problems met doing so."""
    return state.model_copy(update={"ledger": state.ledger.plus(ran.calls),
                                    "problems": (*state.problems, *ran.problems)})


def _suite_ran(state: CheckState, tests: Sequence[TestResult]) -> CheckState:
    outcomes = {t.test_id: t for t in tests}

    def passed(test_id: str) -> bool:
        return test_id in outcomes and outcomes[test_id].outcome is TestOutcome.PASSED

    still = [t for t in state.failing if not passed(t)]
    broken, pinned = split_testgen_tests([t for t in state.passing if not passed(t)])
    checks = dict(state.checks)
    checks["failing tests pass"] = "passed" if not still else f"{len(still)} still fail: {_names(still)}"
    checks["no regressions"] = "passed" if not broken else f"{len(broken)} now fail: {_names(broken)}"
    testgen = [t for t in state.passing if is_testgen_test(t)]
    if testgen:
        checks["testgen tests"] = pinned_note(len(pinned), len(testgen))
    if not (still or broken):
        return state.model_copy(update={"checks": checks})
    first = outcomes.get((still or broken)[0])
    why = f" ({first.exception_type}: {first.message})" if first and first.exception_type else ""
    return state.model_copy(update={"checks": checks, "evaluation": PatchEvaluation(
        candidate=state.candidate, status=PatchStatus.STILL_FAILING if still else PatchStatus.REGRESSIONS,
        still_failing=tuple(still), regressions=tuple(broken), checks=checks,
        detail=checks["failing tests pass" if still else "no regressions"] + why)})


def _functions_read(state: CheckState, read: FunctionsRead) -> CheckState:
    update: dict[str, object] = {"functions_read": True}
    checks = dict(state.checks)
    reasons = state.reasons
    if read.original is None or read.patched is None:
        checks["overfitting detectors"] = "not applicable: the patch names no single function"
    else:
        update.update(single_function=True, original_source=read.original, patched_source=read.patched,
                      first_line=read.first_line)
        findings = overfitting_findings(read.original, read.patched, state.failing_sources)
        if state.operator == "constant_off_by_one":
            # A corrected constant equals what the tests expect by nature: not a copied output. The
            # carved and novel-input tests still judge whether it generalizes.
            findings = [f for f in findings if f.check != "copied_literal"]
        text = "; ".join(f"{f.check} at line {f.line}: {f.detail}" for f in findings[:3])
        checks["overfitting detectors"] = text or "passed"
        reasons = (*reasons, text) if text else reasons
    return state.model_copy(update={**update, "checks": checks, "reasons": reasons})


def _carved_ran(state: CheckState, tests: Sequence[TestResult] | None) -> CheckState:
    checks = dict(state.checks)
    reasons = state.reasons
    failed = [t for t in tests or () if t.outcome is not TestOutcome.PASSED]
    if tests is None:
        checks["carved tests"] = "not applicable: no recorded passing execution could be carved"
    elif not failed:
        checks["carved tests"] = f"passed ({len(tests)} tests)"
    else:
        text = (f"changes the result on inputs the suite passed with: {failed[0].test_id.split('::')[-1]} "
                f"({failed[0].exception_type}: {failed[0].message})")
        checks["carved tests"] = text
        reasons = (*reasons, text)
    return state.model_copy(update={"carved_done": True, "checks": checks, "reasons": reasons})


def _differential_ran(state: CheckState, verdict: DifferentialVerdict | None) -> CheckState:
    checks = dict(state.checks)
    reasons = state.reasons
    if verdict is None:
        checks["differential inputs"] = ("not applicable: no call of the function with literal arguments "
                                         "was recorded, or it is a method")
    elif verdict.passed:
        checks["differential inputs"] = f"passed ({verdict.reason()})"
        # Tolerated as a boundary fix might make them, but changes all the same, where the original
        # answered (where it gave None or crashed it is no oracle: ``divergence.no_oracle``).
        changed = [c for c in verdict.far_changes if c.original.answered]
        if changed:
            doubts = (*state.doubts, f"changes the result on {len(changed)} input(s) near passing calls, "
                                     f"e.g. {changed[0].call}")
            return state.model_copy(update={"differential_done": True, "checks": checks, "doubts": doubts})
    else:
        checks["differential inputs"] = verdict.reason()
        reasons = (*reasons, verdict.reason())
    return state.model_copy(update={"differential_done": True, "checks": checks, "reasons": reasons})


def _divergence_ran(state: CheckState, ran: DivergenceRan) -> CheckState:
    """A call from a passing test whose outcome changed is evidence against the candidate; a
    generated call that changed, or evidence that does not reach, leaves it unconfirmed."""
    checks = dict(state.checks)
    reasons, doubts, report = state.reasons, state.doubts, ran.report
    if report is None:
        checks["behavioural divergence"] = f"not run: {ran.reason or 'no test covers the function'}"
        why = ran.reason or "no test covers it"
        doubts = (*doubts, f"the behavioural divergence could not be measured ({why})")
    else:
        checks["behavioural divergence"] = report.summary()
        if report.changed_recorded:
            reasons = (*reasons, report.summary())
        elif report.changed_generated:
            doubts = (*doubts, report.summary())
        reached, why = evidence_reaches(report)
        if not reached:
            doubts = (*doubts, why)
    return state.model_copy(update={"divergence_done": True, "divergence": report, "checks": checks,
                                    "reasons": reasons, "doubts": doubts})


def _patterns_weighed(state: CheckState) -> CheckState:
    """The wrong-patch patterns of the patch, weighed by the fitted model (a reason against it when
    they weigh enough); the suite's arcs, when the divergence run recorded them, tell whether an
    inverted condition was taken both ways."""
    if state.original_source is None or state.patched_source is None:
        return state
    arcs = state.divergence.arcs if state.divergence is not None else None
    findings = patch_patterns(state.original_source, state.patched_source, first_line=state.first_line,
                              arcs=arcs)
    against, why = load_pattern_model().weighs_against(findings)
    checks = dict(state.checks)
    if against:
        checks["wrong-patch patterns"] = why
        return state.model_copy(update={"checks": checks, "reasons": (*state.reasons, why)})
    shown = ", ".join(f"{f.pattern} at line {f.line}" for f in findings)
    checks["wrong-patch patterns"] = (f"passed ({shown}, not enough to weigh against it)" if findings
                                      else "passed")
    return state.model_copy(update={"checks": checks})


def _novel_ran(state: CheckState, tests: Sequence[TestResult] | None) -> CheckState:
    checks = dict(state.checks)
    reasons, problems = state.reasons, state.problems
    if tests is None:
        checks["novel-input tests"] = "not run: the model gave no usable tests"
    else:
        wrong = [t for t in tests if t.outcome is TestOutcome.FAILED
                 and (t.exception_type or "").endswith("AssertionError")]
        broken = [t for t in tests if t.outcome is TestOutcome.ERROR or (
            t.outcome is TestOutcome.FAILED and t not in wrong)]
        if broken:
            problems = (*problems,
                        f"novel-input tests for {state.target}: {len(broken)} broken test(s) ignored")
        if wrong:
            name = wrong[0].test_id.split("::")[-1]
            text = f"fails the model's novel-input test {name}: {wrong[0].message}"
            checks["novel-input tests"] = text
            reasons = (*reasons, text)
        else:
            checks["novel-input tests"] = f"passed ({len(tests) - len(broken)} tests)"
    return state.model_copy(update={"novel_done": True, "checks": checks, "reasons": reasons,
                                    "problems": problems})


def _judged(state: CheckState) -> CheckState:
    """``state`` with its evaluation once the suite passed and no anti-overfitting step is left."""
    if state.evaluation is not None or "failing tests pass" not in state.checks or next_steps(state):
        return state
    state = _patterns_weighed(state)
    checks = dict(state.checks)
    checks.setdefault("carved tests", "not applicable: no recorded passing execution could be carved")
    checks.setdefault("differential inputs", "not applicable: the patch names no single function")
    checks.setdefault("behavioural divergence", "not applicable: the patch names no single function")
    checks.setdefault("wrong-patch patterns", "not applicable: the patch names no single function")
    if not state.llm:
        checks.setdefault("novel-input tests", "not run: deterministic mode")
    checks.setdefault("novel-input tests", "not applicable: the patch names no single function")
    doubts = state.doubts
    if not state.single_function:
        doubts = (*doubts, "the patch changes no single function, so its behaviour could not be compared")
    elif not state.divergence_done:
        doubts = (*doubts, "the patch names no target function, so its behaviour could not be compared")
    state = state.model_copy(update={"checks": checks, "doubts": doubts})
    if state.reasons:
        status, detail = PatchStatus.OVERFITTING, "; ".join(state.reasons)
    elif state.doubts:
        status = PatchStatus.UNCONFIRMED
        detail = ("passes the suite and every check that could run, but the evidence does not reach a fix: "
                  + "; ".join(state.doubts))
    else:
        status, detail = PatchStatus.SOUND, "passes the suite and every anti-overfitting check"
    report = state.divergence
    evaluation = PatchEvaluation(candidate=state.candidate, status=status, detail=detail, checks=state.checks,
                                 evidence=report.summary() if report is not None else "",
                                 divergence=report.changed_share if report is not None else None,
                                 calls=report.counts() if report is not None else {})
    return state.model_copy(update={"evaluation": evaluation})


def _names(test_ids: Sequence[str]) -> str:
    shown = ", ".join(t.split("::")[-1] for t in test_ids[:3])
    return shown + (f" and {len(test_ids) - 3} more" if len(test_ids) > 3 else "")

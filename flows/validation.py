"""Validation (Loop 3, seed 000 §6): is a patch candidate a fix, a regression, or an overfit?

A driver around ``equisa_core.validation.checks`` (which check runs next, and the verdict); every
test run is a cached ``run-tests`` task in a sandbox, with the candidate's files as an overlay on
the workspace copy (never the user's tree). A candidate is accepted (``SOUND``) when, in this order:

1. its files compile (``DOES_NOT_COMPILE`` otherwise);
2. on the whole amplified suite (generated tests included, flaky tests left out) every test that
   failed now passes (``STILL_FAILING``) and every test that passed still passes (``REGRESSIONS``),
   except Discovery's testgen tests: they assert the buggy program's behaviour, so a correct fix
   may change them; they are not counted, and ``checks["testgen tests"]`` says how many changed
   (``equisa_core.validation.generated_tests``);
3. it passes the anti-overfitting checks (``OVERFITTING`` otherwise):
   - ``overfitting detectors``: no literal copied from a failing test's expected values and no
     special-case branch on a failing test's inputs (``equisa_core.validation.overfitting``);
   - ``carved tests``: tests carved from passing executions of the target (recorded on the original
     code, so they hold the behaviour the suite already accepted; testgen tests' executions are not
     carved) still pass with the patch;
   - ``differential inputs``: the target's calls recorded in the visible tests and their neighbours
     (a number one step off, a list with an element dropped, ...) give the same results with the
     patch as without it wherever they came from a passing test's call: the original passes those
     tests, so near their calls it is the oracle (``equisa_core.validation.differential``);
   - ``novel-input tests`` (LLM mode): tests of the failing tests' behaviour with different inputs,
     made by the test-generation agent (``flows.testgen.generate_tests``, LLM mode, focused on the
     target, the failing tests' sources given as the specification: the model is the oracle), pass
     on the patched program; a test that errors is ignored and said so;
   - ``behavioural divergence``: the target's covering tests run on the original program with the
     candidate's function called beside the original on every call, and on generated calls near
     the passing tests' calls (``tasks.validation.divergence``, ``equisa_core.validation.divergence``):
     a changed outcome on a passing test's call weighs against the candidate;
   - ``wrong-patch patterns``: the fitted model of wrong patches' shapes (a broad ``except`` added, a
     silencing return, a deleted guard, an inverted condition the suite never took both ways, one
     of parallel expressions changed alone: ``equisa_core.validation.patch_patterns``);
4. the evidence reaches: the divergence check compared calls from passing tests that ran enough
   of the function (``UNCONFIRMED`` otherwise: the report says ``plausible_only`` with the reason).

``check_candidate`` returns the verdict with the model calls the checks made and the problems they
met (the repair machine's ``Validated`` observation); ``validate_candidate`` the verdict alone.

The runs on the original code that the checks of a target need (its covering tests with its calls
recorded, unless the localization recorded them already; its carved tests and differential inputs,
in one run) do not depend on the candidate: they start in the background while the first candidate
of that target runs the suite, and the carved and differential checks wait for them
(``_prepare_target``). Those two checks run together, in one run per candidate
(``tasks.validation.target_checks``), which also starts with the candidate's suite run, once the target's
modules are made (``_check_ahead``): it runs every carved test, and the checks count those that
hold on the original code. The verdict is the same as one check at a time, after its own run.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from equisa_core.common.models import TestResult
from equisa_core.repair import machine
from equisa_core.validation import checks
from equisa_core.validation.candidates import PatchCandidate, PatchEvaluation
from tasks.operations.progress_events import not_listening
from tasks.run.parameters import TestgenParameters
from tasks.run.prepared_run import PreparedRun, focused_request
from tasks.testgen.publish import GeneratedTests
from tasks.validation.checks import (
    NOVEL_CHECK_PATH,
    ValidationContext,
    functions_of,
    novel_module,
    run_module,
    run_request,
)
from tasks.validation.divergence import measure_divergence
from tasks.validation.target_checks import (
    TargetPlan,
    checks_ahead,
    plan_target,
    prepare_target,
    run_target_checks,
)

__all__ = ["check_candidate", "validate_candidate", "settle"]

T = TypeVar("T")


def validate_candidate(candidate: PatchCandidate, ctx: ValidationContext) -> PatchEvaluation:
    """The verdict of ``check_candidate``, without the calls and problems (for callers outside a
    repair run, which has no ledger to add them to); no background run is left going."""
    try:
        return check_candidate(candidate, ctx).evaluation
    finally:
        settle(ctx)


def check_candidate(candidate: PatchCandidate, ctx: ValidationContext) -> machine.Validated:
    """Judge one candidate (see the module docstring); never raises for what the candidate does.
    Returns the verdict, the model calls the checks made and the problems they met.

    A driver: ``equisa_core.validation.checks`` says which check runs next and judges what it saw.
    """
    trace = ctx.found.trace
    state = checks.initial_state(
        candidate, sorted(ctx.failing), sorted(ctx.passing),
        [t.test_id for t in trace.tests if t.test_id not in trace.flaky], ctx.failing_sources,
        llm=ctx.llm_config is not None)
    ahead: list[Future[tuple[TestResult, ...]]] = []  # the candidate's check run, once started
    while (steps := checks.next_steps(state)):
        for observation in _observe(steps, candidate, ctx, ahead):
            state = checks.record(state, observation)
    judged = checks.verdict(state)
    assert judged is not None, "the checks ended without a verdict"
    return machine.Validated(evaluation=judged.evaluation, calls=state.ledger.calls, problems=state.problems)


#: Runs while a candidate's suite runs: the making of a target's check modules, then their run on
#: the original code and the candidate's run of them (each run a sandboxed ``run-tests`` task like
#: the others). A job waits only for jobs submitted before it, and the queue is first in, first out,
#: so the oldest unfinished job is always running: no job waits forever.
_BACKGROUND = ThreadPoolExecutor(max_workers=3, thread_name_prefix="equisa-validation-prepare")


def _in_context(function: Callable[..., T], *args: Any) -> Future[T]:
    """``function(*args)`` in the background, in the flow run's context (its runs are its task runs)."""
    return _BACKGROUND.submit(contextvars.copy_context().run, function, *args)


def _prepare_target(target: str | None, ctx: ValidationContext) -> None:
    """Start making the target's check modules, then their run on the original code (which carved
    tests hold, the differential baseline), in the background, once per target."""
    if target is None or target in ctx.preparing:
        return
    planned = ctx.planned[target] = _in_context(plan_target, target, ctx)

    def prepared() -> None:
        planned.result()
        prepare_target(target, ctx)

    ctx.preparing[target] = _in_context(prepared)


def _check_ahead(candidate: PatchCandidate, ctx: ValidationContext) -> Future[tuple[TestResult, ...]] | None:
    """Start the candidate's run of its target's check modules, in the background, once they are
    made (None: it has no target)."""
    target = candidate.target
    if target is None or target not in ctx.planned:
        return None
    planned = ctx.planned[target]

    def ahead() -> tuple[TestResult, ...]:
        plan = planned.result()
        assert isinstance(plan, TargetPlan)
        return checks_ahead(candidate, plan, ctx)

    running = _in_context(ahead)
    ctx.ahead.append(running)
    return running


def settle(ctx: ValidationContext) -> None:
    """Wait for every background run (a round's last candidates may not have needed them): none is
    left running when the flow run ends. Their errors were the checks' to see."""
    background: list[Future[Any]] = [*ctx.planned.values(), *ctx.preparing.values(), *ctx.ahead]
    for running in background:
        running.exception()


def _prepared(target: str, ctx: ValidationContext) -> None:
    """Wait for the target's runs on the original code, if they were started (their errors raise here)."""
    running = ctx.preparing.get(target)
    if running is not None:
        running.result()


def _observe(steps: list[checks.CheckStep], candidate: PatchCandidate, ctx: ValidationContext,
             ahead: list[Future[tuple[TestResult, ...]]]) -> list[checks.CheckObservation]:
    """Run the next check step for ``candidate`` (the carved and differential steps together, in one
    run, started in ``ahead`` with the suite's) and say what it observed."""
    found = ctx.found
    match steps[0]:
        case checks.RunSuite(tests=tests):
            _prepare_target(candidate.target, ctx)
            running = _check_ahead(candidate, ctx)
            ahead.extend([running] if running is not None else [])
            overlay = {**found.overlay, **candidate.files}
            run = run_request(ctx, focused_request(found.prepared, tests, overlay, trace=False))
            return [checks.SuiteRan(tests=run.tests)]
        case checks.ReadFunctions():
            read_pair = functions_of(candidate, ctx)
            return [checks.FunctionsRead(original=read_pair[0], patched=read_pair[1], first_line=read_pair[2])
                    if read_pair else checks.FunctionsRead()]
        case checks.RunDivergence(target=target):
            measured = measure_divergence(candidate, target, ctx)
            return [checks.DivergenceRan(report=measured.report, reason=measured.reason)]
        case checks.RunCarvedTests(target=target) | checks.RunDifferential(target=target):
            _prepared(target, ctx)
            together = [s for s in steps if isinstance(s, (checks.RunCarvedTests, checks.RunDifferential))]
            # A run made ahead that failed (it ran carved tests the candidate's own run would not
            # have) is made again as the candidate's own run.
            made = ahead[0].result() if ahead and ahead[0].exception() is None else None
            return run_target_checks(candidate, together, ctx, made)
        case checks.RunNovelTests(target=target):
            novel = novel_module(target, ctx, _generate_tests)
            module = novel.module
            tests_run = None if module is None else run_module(ctx, candidate, NOVEL_CHECK_PATH, module)
            return [checks.NovelTestsRan(tests=tests_run, calls=novel.calls, problems=novel.problems)]
    raise AssertionError(f"unknown check step {steps[0]!r}")


def _generate_tests(prepared: PreparedRun, params: TestgenParameters) -> GeneratedTests:
    """``flows.testgen.generate_tests``, imported when Validation first calls it; its progress is
    not shown (the repair's spinner stays as it is)."""
    from flows.testgen import generate_tests

    with not_listening():
        return generate_tests(prepared, params)

"""A target's carved tests and differential inputs, run together in one sandboxed run: once on the
original code (``prepare_target``: which carved tests hold there, and the differential baseline),
then once for each candidate (``run_target_checks``: the ``run-carved-tests`` and
``run-differential`` steps of ``equisa_core.validation.checks``).

Both modules call the target on recorded inputs, so one run of both costs one interpreter and one
pytest start instead of two. Each run is a cached ``run-tests`` task in the sandbox, the modules an
overlay on the workspace copy (with the candidate's files, on its side).

The candidate's run does not need the original's: it may run every carved test (``checks_ahead``,
started with the candidate's suite run) and keep afterwards the results of those that hold on the
original code. ``plan_target`` makes the modules both runs share, once per target.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from equisa_core.common.models import TestOutcome, TestResult
from equisa_core.common.time_limits import limit_for, slowest_finished
from equisa_core.testgen.carving import CarvedTest, carved_module
from equisa_core.validation.candidates import PatchCandidate
from equisa_core.validation.checks import (
    CarvedTestsRan,
    CheckObservation,
    DifferentialRan,
    RunCarvedTests,
    RunDifferential,
)
from equisa_core.validation.differential import DifferentialBaseline, judge
from tasks.sandbox.contract import RunRequest
from tasks.validation.checks import (
    CARVED_CHECK_PATH,
    ValidationContext,
    carved_from_recording,
    recorded_calls,
    run_request,
)
from tasks.validation.differential import (
    DIFFERENTIAL_CHECK_PATH,
    DifferentialPlan,
    differential_plan,
    observed_in,
)

__all__ = ["TARGET_CHECKS_WALL_CLOCK_S", "TargetPlan", "checks_ahead", "plan_target", "prepare_target",
           "run_target_checks"]

#: A run of the target's check modules stops after this long; the differential inputs left
#: without a record are not compared, and the carved tests left unrun do not count.
TARGET_CHECKS_WALL_CLOCK_S = 60.0


@dataclass(frozen=True)
class TargetPlan:
    """A target's check modules, before any run: its carved tests (not yet run), its differential
    inputs, each check test's time limit, and the modules' texts (path -> text: all the carved
    tests', the differential's), written once. The original's run and a candidate's start together
    from one plan; they must not both write the modules: CPython 3.11's ``ast.parse`` is not safe in
    two threads at once ("AST constructor recursion depth mismatch")."""

    carved: tuple[CarvedTest, ...]
    differential: DifferentialPlan | None
    per_test_s: float
    modules: dict[str, str]


def plan_target(target: str, ctx: ValidationContext) -> TargetPlan:
    """Once per target: its tests carved from the recorded calls, its differential inputs, and the
    check tests' limit (``ctx.plans``)."""
    plan = ctx.plans.get(target)
    if not isinstance(plan, TargetPlan):
        carved = tuple(carved_from_recording(target, ctx))
        differential = differential_plan(target, ctx)
        modules = {CARVED_CHECK_PATH: carved_module(carved)} if carved else {}
        if differential is not None:
            modules[DIFFERENTIAL_CHECK_PATH] = differential.module
        plan = TargetPlan(carved=carved, differential=differential, per_test_s=_per_test_limit(target, ctx),
                          modules=modules)
        ctx.plans[target] = plan
    return plan


def prepare_target(target: str, ctx: ValidationContext) -> None:
    """Once per target: run its plan (``plan_target``) on the original code, and keep the carved
    tests that pass there (``ctx.carved[target]``, None when none does; their names in
    ``ctx.carved_names``) and the original's behaviour on the inputs (``ctx.differential[target]``,
    None when it has none)."""
    if target in ctx.carved:
        return
    plan = plan_target(target, ctx)
    modules = plan.modules
    tests: Sequence[TestResult] = ()
    if modules:
        tests = run_request(ctx, _request(ctx, {}, modules, target, plan.per_test_s)).tests
    passed = {t.test_id.split("::")[-1] for t in tests
              if t.test_id.startswith(CARVED_CHECK_PATH) and t.outcome is TestOutcome.PASSED}
    good = [t for t in plan.carved if t.name in passed]
    differential = plan.differential
    ctx.differential[target] = None if differential is None else DifferentialBaseline(
        target=target, inputs=differential.inputs, module=differential.module, per_test_s=plan.per_test_s,
        original=observed_in(tests), refusals=differential.refusals, falls_through=differential.falls_through)
    ctx.carved_names[target] = frozenset(t.name for t in good)
    ctx.carved[target] = carved_module(good) if good else None


def checks_ahead(candidate: PatchCandidate, plan: TargetPlan, ctx: ValidationContext,
                 ) -> tuple[TestResult, ...]:
    """The candidate's run of every module of its target's ``plan`` (all the carved tests: which of
    them count is known once the original's run is in), for ``run_target_checks`` to judge."""
    modules = plan.modules
    if not modules or candidate.target is None:
        return ()
    return run_request(ctx, _request(ctx, candidate.files, modules, candidate.target, plan.per_test_s)).tests


def run_target_checks(candidate: PatchCandidate, steps: Sequence[RunCarvedTests | RunDifferential],
                      ctx: ValidationContext, ahead: Sequence[TestResult] | None = None,
                      ) -> list[CheckObservation]:
    """What ``steps`` (one target's carved and differential steps, given together) observed on the
    candidate, from one sandboxed run of their modules (or from ``ahead``, the candidate's
    ``checks_ahead`` run, whose carved tests that fail on the original are left out); a step with no
    module observes nothing."""
    target = steps[0].target
    prepare_target(target, ctx)
    carved = ctx.carved[target] if any(isinstance(s, RunCarvedTests) for s in steps) else None
    baseline = ctx.differential[target] if any(isinstance(s, RunDifferential) for s in steps) else None
    modules = {CARVED_CHECK_PATH: carved} if carved else {}
    if baseline is not None:
        modules[DIFFERENTIAL_CHECK_PATH] = baseline.module
    tests: Sequence[TestResult] = ()
    if ahead is not None:
        kept = ctx.carved_names.get(target, frozenset())
        tests = [t for t in ahead if not t.test_id.startswith(CARVED_CHECK_PATH)
                 or t.test_id.split("::")[-1] in kept]
    elif modules:
        per_test_s = baseline.per_test_s if baseline is not None else _per_test_limit(target, ctx)
        tests = run_request(ctx, _request(ctx, candidate.files, modules, target, per_test_s)).tests
    observations: list[CheckObservation] = []
    for step in steps:
        if isinstance(step, RunCarvedTests):
            ran = tuple(t for t in tests if t.test_id.startswith(CARVED_CHECK_PATH))
            observations.append(CarvedTestsRan(tests=ran if carved else None))
        else:
            observations.append(DifferentialRan(verdict=None if baseline is None else judge(
                baseline.inputs, baseline.original, observed_in(tests), baseline.refusals,
                baseline.falls_through)))
    return observations


def _per_test_limit(target: str, ctx: ValidationContext) -> float:
    """Each check test's limit: from the slowest of the target's covering tests that finished (a
    check test makes one of their calls; a looping test's limit says nothing of a call's time)."""
    ran = {t.test_id for t in recorded_calls(target, ctx) or ()}
    return limit_for(slowest_finished(t for t in ctx.found.trace.tests if t.test_id in ran))


def _request(ctx: ValidationContext, files: dict[str, str], modules: dict[str, str], target: str,
             per_test_s: float) -> RunRequest:
    """One run of ``modules`` with ``files`` (a candidate's, or none for the original) on the
    workspace copy, the target's calls recorded when the differential inputs run (their answers)."""
    base = ctx.found.prepared.base
    limits = base.limits.model_copy(update={
        "test_timeout_s": per_test_s, "per_test": {},
        "wall_clock_s": min(base.limits.wall_clock_s, TARGET_CHECKS_WALL_CLOCK_S)})
    overlay = {**ctx.found.overlay, **files, **modules}
    return base.model_copy(update={"overlay": overlay, "tests": tuple(modules), "only": None, "trace": False,
                                   "limits": limits,
                                   "record": (target,) if DIFFERENTIAL_CHECK_PATH in modules else ()})

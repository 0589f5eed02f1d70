"""A target's carved tests and differential inputs, run together in one sandboxed run: once on the
original code (``prepare_target``: which carved tests hold there, and the differential baseline),
then once for each candidate (``run_target_checks``: the ``run-carved-tests`` and
``run-differential`` steps of ``equisa_core.validation.checks``).

Both modules call the target on recorded inputs, so one run of both costs one interpreter and one
pytest start instead of two. Each run is a cached ``run-tests`` task in the sandbox, the modules an
overlay on the workspace copy (with the candidate's files, on its side).
"""

from __future__ import annotations

from collections.abc import Sequence

from equisa_core.common.models import TestOutcome, TestResult
from equisa_core.common.time_limits import limit_for, slowest_finished
from equisa_core.testgen.carving import carved_module
from equisa_core.validation.candidates import PatchCandidate
from equisa_core.validation.checks import (
    CarvedTestsRan,
    CheckObservation,
    DifferentialRan,
    RunCarvedTests,
    RunDifferential,
)
from equisa_core.validation.differential import DifferentialBaseline, judge
from tasks.differential_check import DIFFERENTIAL_CHECK_PATH, differential_plan, observed_in
from tasks.sandbox import RunRequest
from tasks.validation_checks import (
    CARVED_CHECK_PATH,
    ValidationContext,
    carved_from_recording,
    recorded_calls,
    run_request,
)

__all__ = ["TARGET_CHECKS_WALL_CLOCK_S", "prepare_target", "run_target_checks"]

#: A run of the target's check modules stops after this long; the differential inputs left
#: without a record are not compared, and the carved tests left unrun do not count.
TARGET_CHECKS_WALL_CLOCK_S = 60.0


def prepare_target(target: str, ctx: ValidationContext) -> None:
    """Once per target: carve its tests and make its differential inputs from the recorded calls,
    run both on the original code, and keep the carved tests that pass there
    (``ctx.carved[target]``, None when none does) and the original's behaviour on the inputs
    (``ctx.differential[target]``, None when it has none)."""
    if target in ctx.carved:
        return
    carved = carved_from_recording(target, ctx)
    plan = differential_plan(target, ctx)
    modules = {CARVED_CHECK_PATH: carved_module(carved)} if carved else {}
    if plan is not None:
        modules[DIFFERENTIAL_CHECK_PATH] = plan.module
    per_test_s = _per_test_limit(target, ctx)
    tests: Sequence[TestResult] = ()
    if modules:
        tests = run_request(ctx, _request(ctx, {}, modules, target, per_test_s)).tests
    passed = {t.test_id.split("::")[-1] for t in tests
              if t.test_id.startswith(CARVED_CHECK_PATH) and t.outcome is TestOutcome.PASSED}
    good = [t for t in carved if t.name in passed]
    ctx.differential[target] = None if plan is None else DifferentialBaseline(
        target=target, inputs=plan.inputs, module=plan.module, per_test_s=per_test_s,
        original=observed_in(tests), refusals=plan.refusals)
    ctx.carved[target] = carved_module(good) if good else None


def run_target_checks(candidate: PatchCandidate, steps: Sequence[RunCarvedTests | RunDifferential],
                      ctx: ValidationContext) -> list[CheckObservation]:
    """What ``steps`` (one target's carved and differential steps, given together) observed on the
    candidate, from one sandboxed run of their modules; a step with no module observes nothing."""
    target = steps[0].target
    prepare_target(target, ctx)
    carved = ctx.carved[target] if any(isinstance(s, RunCarvedTests) for s in steps) else None
    baseline = ctx.differential[target] if any(isinstance(s, RunDifferential) for s in steps) else None
    modules = {CARVED_CHECK_PATH: carved} if carved else {}
    if baseline is not None:
        modules[DIFFERENTIAL_CHECK_PATH] = baseline.module
    tests: Sequence[TestResult] = ()
    if modules:
        per_test_s = baseline.per_test_s if baseline is not None else _per_test_limit(target, ctx)
        tests = run_request(ctx, _request(ctx, candidate.files, modules, target, per_test_s)).tests
    observations: list[CheckObservation] = []
    for step in steps:
        if isinstance(step, RunCarvedTests):
            ran = tuple(t for t in tests if t.test_id.startswith(CARVED_CHECK_PATH))
            observations.append(CarvedTestsRan(tests=ran if carved else None))
        else:
            observations.append(DifferentialRan(verdict=None if baseline is None else judge(
                baseline.inputs, baseline.original, observed_in(tests), baseline.refusals)))
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

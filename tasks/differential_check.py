"""The overfitting guard's runs (``equisa_core.validation.differential``): the target's calls
recorded in the visible tests, their neighbours run on the original once per target (the
baseline), then on each candidate. Every run is a cached ``run-tests`` task in the sandbox, the
driver module an overlay on the workspace copy.
"""

from __future__ import annotations

import ast

from equisa_core.common.models import RecordedCall, TestOutcome
from equisa_core.common.time_limits import limit_for, slowest_finished
from equisa_core.testgen.carving import GENERATED_TESTS_DIR
from equisa_core.validation.candidates import PatchCandidate
from equisa_core.validation.differential import (
    DifferentialBaseline,
    DifferentialVerdict,
    Observed,
    Origin,
    differential_inputs,
    driver_module,
    judge,
    observed_of,
    raised_by_name,
)
from tasks.inspection import qualname_of, read_function
from tasks.sandbox import RunRequest
from tasks.validation_checks import ValidationContext, recorded_calls, run_request

__all__ = ["DIFFERENTIAL_CHECK_PATH", "differential_baseline", "differential_verdict"]

DIFFERENTIAL_CHECK_PATH = f"{GENERATED_TESTS_DIR}/test_validation_differential.py"
#: The driver module's runs stop after this long; the inputs left without a record are not compared.
DIFFERENTIAL_WALL_CLOCK_S = 60.0


def _positional_parameters(source: str) -> list[str] | None:
    """The function's parameters when it takes positional ones only (no ``*``, ``**`` or keyword-only)."""
    function = ast.parse(source).body[0]
    if not isinstance(function, ast.FunctionDef):
        return None
    args = function.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        return None
    return [a.arg for a in args.args]


def _recorded(ctx: ValidationContext, target: str) -> tuple[list[tuple[Origin, RecordedCall]], float]:
    """The target's calls in the visible tests that run it, each with its test's origin, and the
    slowest of those tests' durations."""
    recorded = recorded_calls(target, ctx)
    if recorded is None:
        return [], 0.0
    calls: list[tuple[Origin, RecordedCall]] = []
    for test in recorded.tests:
        origin: Origin = "passing" if test.test_id in ctx.passing else "failing"
        calls += [(origin, call) for call in test.calls if call.fqn == target]
    ran = {t.test_id for t in recorded.tests}
    slowest = slowest_finished(t for t in ctx.found.trace.tests if t.test_id in ran)
    return calls, slowest


def _driver_request(ctx: ValidationContext, candidate: PatchCandidate | None, baseline_module: str,
                    target: str, per_test_s: float) -> RunRequest:
    base = ctx.found.prepared.base
    patched = candidate.files if candidate else {}
    overlay = {**ctx.found.overlay, **patched, DIFFERENTIAL_CHECK_PATH: baseline_module}
    limits = base.limits.model_copy(update={
        "test_timeout_s": per_test_s, "per_test": {},
        "wall_clock_s": min(base.limits.wall_clock_s, DIFFERENTIAL_WALL_CLOCK_S)})
    return base.model_copy(update={"overlay": overlay, "tests": (DIFFERENTIAL_CHECK_PATH,), "only": None,
                                   "trace": False, "record": (target,), "limits": limits})


def _observed(ctx: ValidationContext, request: RunRequest) -> dict[str, Observed]:
    run = run_request(ctx, request)
    return observed_of({t.test_id.split("::")[-1]: t.calls for t in run.tests
                        if t.outcome is TestOutcome.PASSED})


def differential_baseline(target: str, ctx: ValidationContext) -> DifferentialBaseline | None:
    """The target's differential inputs and the original's behaviour on them (once per target);
    None when it has none: a method or a function with ``*args``/keywords, no recorded call with
    literal arguments."""
    if target in ctx.differential:
        return ctx.differential[target]
    baseline = None
    node = ctx.nodes[target]
    qualname = qualname_of(node)
    module = node.fqn[: -len(qualname) - 1] if node.fqn.endswith("." + qualname) else ""
    if "." not in qualname and module:
        _, source = read_function(ctx.found.prepared.workspace.root, node)
        parameters = _positional_parameters(source)
        if parameters is not None:
            calls, slowest = _recorded(ctx, target)
            inputs = differential_inputs(qualname, parameters, calls)
            if inputs:
                text = driver_module(module, qualname, inputs)
                per_test = limit_for(slowest)
                original = _observed(ctx, _driver_request(ctx, None, text, target, per_test))
                baseline = DifferentialBaseline(target=target, inputs=tuple(inputs), module=text,
                                                per_test_s=per_test, original=original,
                                                refusals=raised_by_name(source))
    ctx.differential[target] = baseline
    return baseline


def differential_verdict(candidate: PatchCandidate, baseline: DifferentialBaseline,
                         ctx: ValidationContext) -> DifferentialVerdict:
    """The candidate's behaviour on the baseline's inputs, judged against the original's."""
    request = _driver_request(ctx, candidate, baseline.module, baseline.target, baseline.per_test_s)
    return judge(baseline.inputs, baseline.original, _observed(ctx, request), baseline.refusals)

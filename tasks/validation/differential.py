"""The overfitting guard's differential test (``equisa_core.validation.differential``): the target's
calls recorded in the visible tests, their neighbours as inputs of a driver module, and what the
target did on each, read from a run's results. ``tasks.validation.target_checks`` runs the module, with the
carved tests, on the original once per target (the baseline), then on each candidate.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from equisa_core.common.models import RecordedCall, TestOutcome, TestResult
from equisa_core.testgen.carving import GENERATED_TESTS_DIR
from equisa_core.validation.differential import (
    DifferentialInput,
    Observed,
    Origin,
    compared_with_items,
    differential_inputs,
    driver_module,
    falls_through_to_none,
    observed_of,
    raised_by_name,
)
from tasks.run.patched_function import qualname_of, read_function
from tasks.validation.checks import ValidationContext, recorded_calls

__all__ = ["DIFFERENTIAL_CHECK_PATH", "DifferentialPlan", "differential_plan", "observed_in", "recorded_of"]

DIFFERENTIAL_CHECK_PATH = f"{GENERATED_TESTS_DIR}/test_validation_differential.py"


@dataclass(frozen=True)
class DifferentialPlan:
    """A target's differential inputs, their driver module and the exceptions its source raises by
    name, before any run (``tasks.validation.target_checks`` runs the module)."""

    target: str
    inputs: tuple[DifferentialInput, ...]
    module: str
    refusals: frozenset[str]
    falls_through: bool = False


def _positional_parameters(source: str) -> list[str] | None:
    """The function's parameters when it takes positional ones only (no ``*``, ``**`` or keyword-only)."""
    function = ast.parse(source).body[0]
    if not isinstance(function, ast.FunctionDef):
        return None
    args = function.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        return None
    return [a.arg for a in args.args]


def recorded_of(target: str, ctx: ValidationContext) -> list[tuple[Origin, RecordedCall]]:
    """The target's calls in the visible tests that run it, each with its test's origin."""
    calls: list[tuple[Origin, RecordedCall]] = []
    for test in recorded_calls(target, ctx) or ():
        origin: Origin = "passing" if test.test_id in ctx.passing else "failing"
        calls += [(origin, call) for call in test.calls if call.fqn == target]
    return calls


def differential_plan(target: str, ctx: ValidationContext) -> DifferentialPlan | None:
    """The target's differential inputs and their driver module (no run); None when it has none: a
    method or a function with ``*args``/keywords, no recorded call with literal arguments."""
    node = ctx.nodes[target]
    qualname = qualname_of(node)
    module = node.fqn[: -len(qualname) - 1] if node.fqn.endswith("." + qualname) else ""
    if "." in qualname or not module:
        return None
    _, source = read_function(ctx.found.prepared.workspace.root, node)
    parameters = _positional_parameters(source)
    if parameters is None:
        return None
    inputs = differential_inputs(qualname, parameters, recorded_of(target, ctx), compared_with_items(source))
    if not inputs:
        return None
    return DifferentialPlan(target=target, inputs=tuple(inputs),
                            module=driver_module(module, qualname, inputs), refusals=raised_by_name(source),
                            falls_through=falls_through_to_none(source))


def observed_in(tests: Sequence[TestResult]) -> dict[str, Observed]:
    """What the target did on each input of the driver module, from its tests' results (those that
    did not pass recorded no call to compare)."""
    return observed_of({t.test_id.split("::")[-1]: t.calls for t in tests
                        if t.test_id.startswith(DIFFERENTIAL_CHECK_PATH) and t.outcome is TestOutcome.PASSED})

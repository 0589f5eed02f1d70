"""How a testgen run measures test modules: branch coverage of the target in the sandbox
(``measure``, the cached ``measure-coverage`` task), the mutation score (``mutation``: the target's
mutants run against the passing tests that cover them; ``scored_mutants`` also names the survivors,
which the ``run_mutants`` step keeps for the next round's search), and what the report and the state machine
read of a coverage run (``figures``, ``measurement``).
"""

from __future__ import annotations

from collections.abc import Sequence

from equisa_core.common.models import TestOutcome
from equisa_core.testgen.machine import Measurement, TestRun
from equisa_core.testgen.mutation_plan import select_mutants
from equisa_core.testgen.report import CoverageFigures
from tasks.testgen.analysis import (
    CoverageResult,
    MutationResult,
    coverage_request,
    measure_coverage,
    score_mutants,
)
from tasks.testgen.context import TestgenContext

__all__ = ["GENERATED_TESTS_HASH_SEEDS", "figures", "measure", "measurement", "mutation",
           "hash_seed_failures", "order_failures", "scored_mutants"]


def figures(result: CoverageResult) -> CoverageFigures:
    """The report's figures of a coverage run."""
    return CoverageFigures(
        percent=result.percent,
        branch_percent=result.branch_percent,
        covered_lines=result.covered_lines,
        statements=result.statements,
        covered_branches=result.covered_branches,
        branches=result.branches,
        missing_lines=result.missing_lines,
    )


def measurement(result: CoverageResult) -> Measurement:
    """What the state machine reads of a coverage run."""
    errors = result.trace.collect_errors
    return Measurement(
        figures=figures(result),
        executed_lines=result.executed_lines,
        executed_branches=result.executed_branches,
        tests=tuple(
            TestRun(test_id=t.test_id, passed=t.outcome is TestOutcome.PASSED, outcome=t.outcome.value)
            for t in result.trace.tests
        ),
        error=result.error,
        collect_error=errors[0].message.splitlines()[-1][:200] if errors else None,
    )


#: ``PYTHONHASHSEED`` of the runs that measure generated tests, and of the second run that checks
#: the tests passing there (``hash_seed_failures``). Their expected values were recorded in sandboxed
#: runs under the pinned seed 0 (``tasks.sandbox.contract.scrubbed_environment``), so a test whose
#: value came from hashing (``hash("a")``, the order of a set of texts) fails in one of them and is
#: dropped, instead of failing in the user's runs, where the seed differs each time. Two seeds, since
#: one may agree with 0 by chance (``hash("ada") % 7`` is 5 under both 0 and 1).
GENERATED_TESTS_HASH_SEEDS = ("1", "2")


def measure(ctx: TestgenContext, overlay: dict[str, str], tests: Sequence[str],
            hash_seed: str | None = None) -> CoverageResult:
    """Branch coverage of the target by ``tests`` (with ``overlay`` written into the run's copy),
    under ``PYTHONHASHSEED`` ``hash_seed`` (None: the sandbox's pinned seed)."""
    base = ctx.prepared.base
    if hash_seed is not None:
        base = base.model_copy(update={"env": {**base.env, "PYTHONHASHSEED": hash_seed}})
    request = coverage_request(base, overlay, tests, ctx.target)
    return measure_coverage.with_options(refresh_cache=ctx.params.no_cache or None)(
        request,
        backend=ctx.params.sandbox,
        interpreter_version=ctx.prepared.interpreter_version,
        docker_image=ctx.params.docker_image,
    )


def mutation(ctx: TestgenContext, overlay: dict[str, str], coverage: CoverageResult) -> MutationResult:
    """The mutation score of the tests of ``coverage`` (only its passing tests kill mutants)."""
    return scored_mutants(ctx, overlay, coverage)[0]


def scored_mutants(ctx: TestgenContext, overlay: dict[str, str], coverage: CoverageResult
                   ) -> tuple[MutationResult, tuple[tuple[str, str, str], ...]]:
    """``mutation``'s score, and the mutants that survived or were not covered, each as (function,
    "id description", mutated source): what the next round's input search tries to kill."""
    passing = {t.test_id for t in coverage.trace.tests if t.outcome is TestOutcome.PASSED}
    line_tests = {line: [t for t in tests if t in passing] for line, tests in coverage.line_tests.items()}
    mutants = select_mutants(ctx.target_source, ctx.target, line_tests, ctx.params.mutants_per_measurement)
    if ctx.params.focus:
        mutants = [m for m in mutants if m.fqn in ctx.params.focus]
    durations = {**ctx.durations, **{t.test_id: t.duration for t in coverage.trace.tests}}
    scored = score_mutants(
        ctx.prepared.base,
        overlay,
        mutants,
        durations,
        backend=ctx.params.sandbox,
        docker_image=ctx.params.docker_image,
        interpreter_version=ctx.prepared.interpreter_version,
    )
    alive = {v.id for v in scored.verdicts if v.status in ("survived", "not_covered")}
    return scored, tuple((m.fqn, f"{m.id} {m.description}", m.source) for m in mutants if m.id in alive)


def hash_seed_failures(ctx: TestgenContext, overlay: dict[str, str], tests: Sequence[str],
                       passed: Sequence[str], seed: str) -> list[str]:
    """The tests of ``passed`` that did not pass when ``tests`` ran again in the sandbox, in their
    order, under ``PYTHONHASHSEED`` ``seed``."""
    outcomes = _rerun(ctx, overlay, tests, seed, order_seed=None)
    return [t for t in passed if outcomes.get(t) is not TestOutcome.PASSED]


def order_failures(ctx: TestgenContext, overlay: dict[str, str], tests: Sequence[str], passed: Sequence[str],
                   seeds: Sequence[int]) -> dict[int, list[str]]:
    """Seed -> the tests of ``passed`` that did not pass when ``tests`` ran again in the sandbox in an
    order shuffled with that seed and under ``PYTHONHASHSEED`` set to it (each run its own process,
    as a user running them with pytest-randomly would): tests that hang on their order, on another
    test's leftovers, or on the order of a set of texts."""
    failures: dict[int, list[str]] = {}
    for seed in seeds:
        outcomes = _rerun(ctx, overlay, tests, str(seed), order_seed=seed)
        failures[seed] = [t for t in passed if outcomes.get(t) is not TestOutcome.PASSED]
    return failures


def _rerun(ctx: TestgenContext, overlay: dict[str, str], tests: Sequence[str], hash_seed: str,
           order_seed: int | None) -> dict[str, TestOutcome]:
    """Test id -> outcome of ``tests`` run again in the sandbox (untraced), under ``hash_seed``,
    in an order shuffled with ``order_seed`` (None: their own order)."""
    from tasks.sandbox.run_tests import run_tests

    base = ctx.prepared.base
    request = base.model_copy(update={
        "overlay": dict(overlay), "tests": tuple(tests), "only": None, "trace": False, "shard": None,
        "record": (), "mutants": (), "order_seed": order_seed,
        "env": {**base.env, "PYTHONHASHSEED": hash_seed},
    })
    trace = run_tests.with_options(refresh_cache=ctx.params.no_cache or None)(
        request,
        backend=ctx.params.sandbox,
        interpreter_version=ctx.prepared.interpreter_version,
        docker_image=ctx.params.docker_image,
    )
    return {t.test_id: t.outcome for t in trace.tests}

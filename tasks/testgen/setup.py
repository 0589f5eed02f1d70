"""How a testgen run is set up: the checked target (``check_target``), the mode and the framework
(``build_context``, or ``measuring_context`` for measuring a given module), the baseline coverage
of the repository's own tests (``baseline``), the store of those tests (``seed_store``), the start
of the report (``start_report``) and what the state machine reads of it all (``machine_setup``);
and ``measure_tests``, the loop's measurement of any test module, for benchmarks and other callers.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from equisa_core.common.options import cost_cap
from equisa_core.errors import NoTestsCollectedError, TestgenTargetError
from equisa_core.testgen.framework import FrameworkChoice, detect_framework
from equisa_core.testgen.machine import TestgenBudget, TestgenSetup
from equisa_core.testgen.modules import list_tests
from equisa_core.testgen.report import TestgenReport
from equisa_core.validation.generated_tests import testgen_module_path
from tasks.run.parameters import TestgenParameters
from tasks.run.prepared_run import PreparedRun
from tasks.testgen.analysis import CoverageResult, MutationResult
from tasks.testgen.context import (
    TestgenContext,
    embedding_config,
    stage,
)
from tasks.testgen.measure import figures, measure, measurement, mutation, order_failures
from tasks.testgen.test_store import TestStore, embed_texts

__all__ = [
    "baseline",
    "build_context",
    "check_target",
    "framework_files",
    "machine_setup",
    "measure_tests",
    "shuffled_failures",
    "measuring_context",
    "seed_store",
    "start_report",
]

#: The repository's own tests embedded into the store, at most.
_EXISTING_IN_STORE = 400

#: Files whose names tell the test framework (besides test modules).
_FRAMEWORK_FILES = (
    "manage.py",
    "conftest.py",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "pytest.ini",
    "requirements.txt",
    "requirements-dev.txt",
    "Pipfile",
)


def build_context(prepared: PreparedRun, params: TestgenParameters) -> tuple[TestgenContext, tuple[str, ...]]:
    """The run's context (the checked target, the mode, the framework, the output folder) and the
    problems met choosing the mode."""
    from tasks.llm import choose_llm_mode

    target, target_source = check_target(prepared, params.target)
    use_llm, config, problems = choose_llm_mode(params)
    out = (
        Path(params.out)
        if params.out
        else prepared.workspace.root.parent / f"testgen-{prepared.workspace.digest[:12]}"
    )
    out.mkdir(parents=True, exist_ok=True)
    framework = detect_framework(framework_files(prepared.workspace.root))
    if not use_llm:  # carved and boundary tests are pytest functions whatever the repository uses
        framework = FrameworkChoice(
            framework="pytest", reason=f"deterministic tests are pytest functions ({framework.reason})"
        )
    ctx = TestgenContext(
        prepared=prepared,
        params=params,
        target=target,
        target_source=target_source,
        module_path=testgen_module_path(params.module_stem or target),
        framework=framework,
        baseline=None,
        use_llm=use_llm,
        config=config,
        out=out,
    )
    return ctx, tuple(problems)


def measuring_context(
    prepared: PreparedRun, params: TestgenParameters, module_path: str | None
) -> TestgenContext:
    """The context of measuring one test module (``module_path``) on the checked target."""
    target, target_source = check_target(prepared, params.target)
    return TestgenContext(
        prepared=prepared,
        params=params,
        target=target,
        target_source=target_source,
        module_path=module_path or "",
        framework=detect_framework({}),
        baseline=None,
        out=Path(params.out or "."),
    )


def machine_setup(ctx: TestgenContext) -> TestgenSetup:
    """What the state machine reads of the run's parameters and baseline."""
    params = ctx.params
    return TestgenSetup(
        target=ctx.target,
        module_path=ctx.module_path,
        out=str(ctx.out),
        use_llm=ctx.use_llm,
        coverage_target=params.coverage_target,
        mutation_target=params.mutation_target,
        improvement_budget=params.improvement_budget,
        with_specification=bool(params.specification),
        hunt_survivors=params.hunt_survivors,
        baseline=measurement(ctx.baseline) if ctx.baseline else None,
        budget=TestgenBudget(max_iterations=params.max_attempts,
                             max_cost_usd=cost_cap(params.max_cost_usd)),
    )


def start_report(ctx: TestgenContext, problems: Sequence[str] = ()) -> TestgenReport:
    """The report before the loop: the mode, the target, the framework, the targets, the baseline,
    the problems the set-up met."""
    params = ctx.params
    return TestgenReport(
        mode="llm" if ctx.use_llm else "deterministic",
        path=str(ctx.prepared.repo),
        target=ctx.target,
        framework=ctx.framework.framework,
        framework_reason=ctx.framework.reason,
        coverage_target=params.coverage_target,
        mutation_target=params.mutation_target,
        baseline=figures(ctx.baseline) if ctx.baseline else None,
        problems=list(problems),
        sandbox=ctx.prepared.sandbox,
        environment=ctx.prepared.environment,
    )


def check_target(prepared: PreparedRun, target: str) -> tuple[str, str]:
    """The target's repository-relative path and text; TestgenTargetError when unusable."""
    candidate = Path(target)
    if candidate.is_absolute():
        try:
            candidate = candidate.resolve().relative_to(prepared.repo.resolve())
        except ValueError:
            raise TestgenTargetError(f"--target {target} is not inside {prepared.repo}") from None
    relative = candidate.as_posix()
    if relative.startswith("../") or not relative.endswith(".py"):
        raise TestgenTargetError(f"--target {target} must be a .py file inside the repository")
    path = prepared.workspace.root / relative
    if not path.is_file():
        raise TestgenTargetError(
            f"--target {target}: no such file in the repository (as git would commit it)"
        )
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        compile(text, relative, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as error:
        raise TestgenTargetError(f"--target {target} does not parse: {error}") from None
    return relative, text


def framework_files(root: Path) -> dict[str, str]:
    """The files that tell the test framework (configuration, conftest, test modules), by path."""
    files: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        name = path.name
        if not path.is_file() or any(
            p.startswith(".") or p in ("node_modules",) for p in relative.split("/")[:-1]
        ):
            continue
        wanted = name in _FRAMEWORK_FILES
        wanted |= name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))
        if wanted and len(files) < 500:
            files[relative] = path.read_text(encoding="utf-8", errors="replace")
    return files


def baseline(ctx: TestgenContext) -> tuple[CoverageResult | None, tuple[str, ...]]:
    """Coverage of the target by the repository's own tests (None when it has none), and the
    problems met measuring it."""
    stage(ctx, f"measuring the existing tests' coverage of {ctx.target}")
    try:
        result = measure(ctx, {}, ctx.prepared.base.tests)
    except NoTestsCollectedError:
        return None, ("the repository has no tests: no baseline, nothing to carve",)
    if not result.trace.tests:
        return None, ("the repository's tests collected nothing: no baseline, nothing to carve",)
    ctx.durations.update({t.test_id: t.duration for t in result.trace.tests})
    print(f"baseline: the repository's tests cover {result.percent:.2f}% of {ctx.target}")
    return result, ((f"baseline coverage: {result.error}",) if result.error else ())


def seed_store(store: TestStore, ctx: TestgenContext) -> tuple[str, ...]:
    """The repository's own tests, embedded (§8: examples and redundancy checks read them); the
    problem met embedding them, if any."""
    items: list[tuple[str, str]] = []
    for path, text in framework_files(ctx.prepared.workspace.root).items():
        if path.rsplit("/", 1)[-1].startswith("test") or path.endswith("_test.py"):
            items += [(f"{path}::{name}", code) for name, code in list_tests(text).items()]
    items = items[:_EXISTING_IN_STORE]
    vectors, _, problem = embed_texts([code for _, code in items], embedding_config(ctx))
    store.add("existing", items, vectors)
    return (problem,) if problem else ()


def measure_tests(
    prepared: PreparedRun,
    params: TestgenParameters,
    module_path: str | None = None,
    source: str | None = None,
) -> tuple[CoverageResult, MutationResult]:
    """Branch coverage and mutation score on ``params.target`` of one test module (written at
    ``module_path`` in the workspace copy), or of the repository's own tests when none is given.

    The same measurement the loop makes, for benchmarks and for callers that bring their own tests.
    """
    ctx = measuring_context(prepared, params, module_path)
    overlay = {module_path: source} if module_path and source is not None else {}
    tests = [module_path] if module_path else list(prepared.base.tests)
    coverage = measure(ctx, overlay, tests)
    return coverage, mutation(ctx, overlay, coverage)


def shuffled_failures(prepared: PreparedRun, params: TestgenParameters, module_path: str, source: str,
                      passed: Sequence[str], seeds: Sequence[int] = (1, 2, 3)) -> dict[int, list[str]]:
    """Seed -> the tests of ``passed`` (those that passed when measured) that failed when the module
    at ``module_path`` ran again in an order shuffled with that seed and under that hash seed
    (``testgen_measure.order_failures``); for benchmarks, as ``measure_tests`` is."""
    ctx = measuring_context(prepared, params, module_path)
    return order_failures(ctx, {module_path: source}, [module_path], passed, seeds)

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
   - ``novel-input tests`` (LLM mode): tests of the failing tests' behaviour with different inputs,
     made by the test-generation agent (``flows.testgen.generate_tests``, LLM mode, focused on the
     target, the failing tests' sources given as the specification: the model is the oracle), pass
     on the patched program; a test that errors is ignored and said so.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.models import Node, SuiteTrace, TestOutcome, TestResult
from equisa_core.common.source_edit import function_source
from equisa_core.errors import EquisaError
from equisa_core.testgen.carving import GENERATED_TESTS_DIR, carve_tests, carved_module
from equisa_core.validation import checks
from equisa_core.validation.candidates import PatchCandidate, PatchEvaluation
from equisa_core.validation.generated_tests import is_testgen_test
from flows.discovery import DiscoveryResult, focused_request, narrowed
from tasks.inspection import qualname_of
from tasks.run_tests import run_tests

__all__ = ["ValidationContext", "validate_candidate", "test_sources"]

CARVED_CHECK_PATH = f"{GENERATED_TESTS_DIR}/test_validation_carved.py"
NOVEL_CHECK_PATH = f"{GENERATED_TESTS_DIR}/test_validation_novel.py"


class ValidationContext(BaseModel):
    """What every candidate of one repair run is judged against."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    found: DiscoveryResult
    sandbox: Literal["local", "docker", "none"] = "local"
    docker_image: str | None = None
    no_cache: bool = False
    nodes: dict[str, Node]
    failing_sources: dict[str, str] = Field(default_factory=dict, description="Failing test id -> source.")
    llm_config: object | None = None
    carved: dict[str, str | None] = Field(default_factory=dict, description="Target -> carved module.")
    novel: dict[str, str | None] = Field(default_factory=dict, description="Target -> model's test module.")
    problems: list[str] = Field(default_factory=list)
    cost_usd: float = 0.0
    verdicts: dict[str, PatchEvaluation] = Field(default_factory=dict, description="Candidate id -> verdict.")

    @property
    def failing(self) -> set[str]:
        return self.found.trace.failed_tests()

    @property
    def passing(self) -> set[str]:
        trace = self.found.trace
        return trace.passed_tests() - trace.flaky


def test_sources(found: DiscoveryResult, test_ids: Sequence[str]) -> dict[str, str]:
    """Test id -> the test function's source, for the tests whose source can be found."""
    root = found.prepared.workspace.root
    sources: dict[str, str] = {}
    for test_id in test_ids:
        path, _, rest = test_id.partition("::")
        qualname = ".".join(part.split("[", 1)[0] for part in rest.split("::") if part)
        text = found.overlay.get(path)
        try:
            text = text if text is not None else (root / path).read_text(encoding="utf-8")
            sources[test_id] = function_source(text, qualname)
        except (OSError, UnicodeDecodeError, EquisaError, SyntaxError):
            continue
    return sources


test_sources.__dict__["__test__"] = False  # not a pytest test (pytest reads the attribute)


def _run(ctx: ValidationContext, request) -> SuiteTrace:
    prepared = ctx.found.prepared
    return run_tests.with_options(refresh_cache=ctx.no_cache or None)(
        request, backend=ctx.sandbox, interpreter_version=prepared.interpreter_version,
        docker_image=ctx.docker_image)


def validate_candidate(candidate: PatchCandidate, ctx: ValidationContext) -> PatchEvaluation:
    """Judge one candidate (see the module docstring); never raises for what the candidate does.

    A driver: ``equisa_core.validation.checks`` says which check runs next and judges what it saw.
    """
    trace = ctx.found.trace
    state = checks.start_checks(
        candidate, sorted(ctx.failing), sorted(ctx.passing),
        [t.test_id for t in trace.tests if t.test_id not in trace.flaky], ctx.failing_sources,
        llm=ctx.llm_config is not None)
    while (steps := checks.next_steps(state)):
        state = checks.record(state, _observe(steps[0], candidate, ctx))
        ctx.problems.extend([p for p in state.problems if p not in ctx.problems])
    judged = checks.verdict(state)
    assert judged is not None, "the checks ended without a verdict"
    return judged.evaluation


def _observe(step: checks.CheckStep, candidate: PatchCandidate, ctx: ValidationContext,
             ) -> checks.CheckObservation:
    """Run one check step for ``candidate`` and say what it observed."""
    found = ctx.found
    match step:
        case checks.RunSuite():
            overlay = {**found.overlay, **candidate.files}
            run = _run(ctx, focused_request(found.prepared, step.tests, overlay, trace=False))
            return checks.SuiteRan(tests=run.tests)
        case checks.ReadFunctions():
            pair = _functions(candidate, ctx)
            return checks.FunctionsRead(original=pair[0], patched=pair[1]) if pair else checks.FunctionsRead()
        case checks.RunCarvedTests():
            module = _carved_module(step.target, ctx)
            tests = None if module is None else _run_module(ctx, candidate, CARVED_CHECK_PATH, module)
            return checks.CarvedTestsRan(tests=tests)
        case checks.RunNovelTests():
            module = _novel_module(step.target, ctx)
            tests = None if module is None else _run_module(ctx, candidate, NOVEL_CHECK_PATH, module)
            return checks.NovelTestsRan(tests=tests)
    raise AssertionError(f"unknown check step {step!r}")


def _run_module(ctx: ValidationContext, candidate: PatchCandidate, path: str, module: str,
                ) -> tuple[TestResult, ...]:
    """The results of the test module ``module``, placed at ``path``, on the patched program."""
    overlay = {**ctx.found.overlay, **candidate.files, path: module}
    return _run(ctx, ctx.found.prepared.base.model_copy(update={
        "overlay": overlay, "tests": (path,), "only": None, "trace": False})).tests


def _functions(candidate: PatchCandidate, ctx: ValidationContext) -> tuple[str, str] | None:
    """The target's original and patched source, when the candidate names one target."""
    node = ctx.nodes.get(candidate.target or "")
    if node is None or not node.file or node.file not in candidate.files:
        return None
    root = ctx.found.prepared.workspace.root
    try:
        original = function_source((root / node.file).read_text(encoding="utf-8"), qualname_of(node))
        patched = function_source(candidate.files[node.file], qualname_of(node))
    except (OSError, EquisaError, SyntaxError):
        return None
    return original, patched


def _carved_module(target: str, ctx: ValidationContext) -> str | None:
    """Tests carved from passing executions of ``target`` on the original code, that pass there."""
    if target in ctx.carved:
        return ctx.carved[target]
    trace = ctx.found.trace
    coverage = trace.coverage()
    passing = sorted(t for t in coverage.get(target, set()) & ctx.passing if not is_testgen_test(t))
    module = None
    if passing:
        recorded = _run(ctx, focused_request(ctx.found.prepared, passing, ctx.found.overlay,
                                             record=(target,), trace=False))
        carved = carve_tests(recorded, [target], ctx.nodes, max_per_member=6)
        if carved:
            source = carved_module(carved)
            overlay = {**ctx.found.overlay, CARVED_CHECK_PATH: source}
            check = _run(ctx, ctx.found.prepared.base.model_copy(update={
                "overlay": overlay, "tests": (CARVED_CHECK_PATH,), "only": None, "trace": False}))
            passed = {r.test_id.split("::")[-1] for r in check.tests if r.outcome is TestOutcome.PASSED}
            good = [t for t in carved if t.name in passed]
            module = carved_module(good) if good else None
    ctx.carved[target] = module
    return module


def _novel_module(target: str, ctx: ValidationContext) -> str | None:
    """Novel-input tests of ``target`` (made once per target and cached) by the test-generation agent:
    LLM mode, one attempt, no mutants, focused on ``target``, with the failing tests' sources as the
    specification of the intended behaviour (the model is the oracle, not the buggy code)."""
    if target in ctx.novel:
        return ctx.novel[target]
    from flows.testgen import TestgenParameters, generate_tests

    node = ctx.nodes[target]
    prepared = ctx.found.prepared
    covering = sorted(ctx.found.trace.coverage().get(target, set()))
    module = None
    with tempfile.TemporaryDirectory(prefix="equisa-novel-input-tests-") as out:
        params = TestgenParameters(
            path=str(prepared.repo), target=node.file or "", focus=[target], llm=True, max_iterations=1,
            max_mutants=0, improvement_budget=0, specification=ctx.failing_sources, out=out,
            sandbox=ctx.sandbox, docker_image=ctx.docker_image, no_cache=ctx.no_cache,
            module_stem="novel_input")
        try:
            made = generate_tests(narrowed(prepared, covering), params)
        except EquisaError as error:
            ctx.problems.append(f"novel-input tests for {target}: {error.message}")
        else:
            ctx.cost_usd += made.report.cost_usd
            ctx.problems.extend(f"novel-input tests for {target}: {p}" for p in made.report.problems
                                if f"novel-input tests for {target}: {p}" not in ctx.problems)
            module = made.source if made.report.mode == "llm" else None
    ctx.novel[target] = module
    return module

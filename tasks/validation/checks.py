"""The checks of Validation (``equisa_core.validation.checks``) that run in a sandbox or read code:
the context every candidate of a repair round is judged against, the patched suite and test
modules run on the patched program, the target's original and patched source, and the tests
carved from passing executions of the target (made once per target), and the novel-input tests
the test-generation agent makes of it (``novel_module``, LLM mode: what the agent spent and the
problems it met come back with the module, as values).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.cost import LLMCall
from equisa_core.common.models import Node, SuiteTrace, TestResult
from equisa_core.common.options import EndpointOptions
from equisa_core.common.source_edit import find_function, function_source
from equisa_core.errors import BudgetSpentError, EquisaError
from equisa_core.localization.steps import LocalizationReport
from equisa_core.testgen.carving import GENERATED_TESTS_DIR, CarvedTest, carve_tests
from equisa_core.validation.candidates import PatchCandidate
from equisa_core.validation.differential import DifferentialBaseline
from equisa_core.validation.generated_tests import is_testgen_test
from tasks.discovery.suite import DiscoveryResult
from tasks.llm import LLMConfig
from tasks.localization.steps import RecordedTests
from tasks.run.parameters import RepairParameters, TestgenParameters
from tasks.run.patched_function import qualname_of
from tasks.run.prepared_run import focused_request, narrowed, source_texts
from tasks.sandbox.run_tests import run_tests
from tasks.testgen.publish import GenerateTests

__all__ = ["ValidationContext", "NovelModule", "validation_context", "test_sources", "run_request",
           "run_module", "functions_of", "recorded_calls", "novel_module", "carved_from_recording",
           "CARVED_CHECK_PATH", "NOVEL_CHECK_PATH"]

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
    endpoint: EndpointOptions = Field(default_factory=EndpointOptions,
                                      description="The run's model options: its cost cap and prices.")
    carved: dict[str, str | None] = Field(default_factory=dict, description="Target -> carved module.")
    novel: dict[str, str | None] = Field(default_factory=dict, description="Target -> model's test module.")
    localization_recorded: RecordedTests | None = Field(
        default=None, description="The localization's recording (its tests' results, calls included).")
    recorded: dict[str, tuple[TestResult, ...] | None] = Field(
        default_factory=dict, description="Target -> its covering tests' results with its calls recorded.")
    sources: dict[str, str] | None = Field(
        default=None, description="File -> text of the suite's functions' files, read once (for carving).")
    differential: dict[str, DifferentialBaseline | None] = Field(
        default_factory=dict, description="Target -> its differential baseline, or None when it has none.")
    preparing: dict[str, Future[None]] = Field(
        default_factory=dict, description="Target -> the future of its runs on the original code "
        "(``flows.validation``: they start while its first candidate runs the suite).")
    plans: dict[str, object] = Field(
        default_factory=dict, description="Target -> its check modules (``tasks.validation.target_checks.TargetPlan``).")
    planned: dict[str, Future[object]] = Field(
        default_factory=dict, description="Target -> the future of its plan (``flows.validation``).")
    carved_names: dict[str, frozenset[str]] = Field(
        default_factory=dict, description="Target -> the names of its carved tests holding on the original.")
    ahead: list[Future[tuple[TestResult, ...]]] = Field(
        default_factory=list, description="The futures of candidates' runs of their target's check "
        "modules, started with their suite runs (``flows.validation``).")

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


def run_request(ctx: ValidationContext, request) -> SuiteTrace:
    """The cached ``run-tests`` task on ``request``, in the context's sandbox."""
    prepared = ctx.found.prepared
    return run_tests.with_options(refresh_cache=ctx.no_cache or None)(
        request, backend=ctx.sandbox, interpreter_version=prepared.interpreter_version,
        docker_image=ctx.docker_image)


def validation_context(found: DiscoveryResult, localization: LocalizationReport, params: RepairParameters,
                       config: LLMConfig | None, recorded: RecordedTests | None = None) -> ValidationContext:
    """What every candidate of one repair round is judged against: the round's suite, the sandbox,
    the failing tests' sources, the model (None: deterministic mode), and the calls the
    localization recorded (``recorded``, reused by ``recorded_calls``)."""
    trace = found.trace
    nodes = {n.fqn: n for n in trace.nodes}
    return ValidationContext(
        found=found, sandbox=params.sandbox, docker_image=params.docker_image, no_cache=params.no_cache,
        nodes=nodes, failing_sources=test_sources(found, sorted(trace.failed_tests())), llm_config=config,
        localization_recorded=recorded,
        endpoint=EndpointOptions(**{name: getattr(params, name) for name in EndpointOptions.model_fields}),
    )


def run_module(ctx: ValidationContext, candidate: PatchCandidate, path: str, module: str,
               ) -> tuple[TestResult, ...]:
    """The results of the test module ``module``, placed at ``path``, on the patched program."""
    overlay = {**ctx.found.overlay, **candidate.files, path: module}
    return run_request(ctx, ctx.found.prepared.base.model_copy(update={
        "overlay": overlay, "tests": (path,), "only": None, "trace": False})).tests


def functions_of(candidate: PatchCandidate, ctx: ValidationContext) -> tuple[str, str, int] | None:
    """The target's original and patched source and the original's first line in its file, when the
    candidate names one target."""
    node = ctx.nodes.get(candidate.target or "")
    if node is None or not node.file or node.file not in candidate.files:
        return None
    root = ctx.found.prepared.workspace.root
    try:
        text = (root / node.file).read_text(encoding="utf-8")
        original = function_source(text, qualname_of(node))
        first_line = find_function(text, qualname_of(node)).start_line
        patched = function_source(candidate.files[node.file], qualname_of(node))
    except (OSError, EquisaError, SyntaxError):
        return None
    return original, patched, first_line


def recorded_calls(target: str, ctx: ValidationContext) -> tuple[TestResult, ...] | None:
    """The results of the visible tests that run ``target`` (testgen tests and flaky ones left out)
    on the original code, with its calls recorded, in the suite's order, for the carved tests and
    the differential test; None when no such test exists. Made once per target.

    The localization's recording is reused for the tests it ran with ``target`` recorded (a test's
    recorded calls of one function do not depend on what else is recorded with it); only the
    others run here, in one sandboxed run."""
    if target not in ctx.recorded:
        trace = ctx.found.trace
        covering = {t for t in trace.coverage().get(target, set()) - trace.flaky
                    if not is_testgen_test(t) and (t in ctx.passing or t in ctx.failing)}
        reused = ctx.localization_recorded
        results = {t.test_id: t for t in reused.tests if t.test_id in covering} if (
            reused is not None and target in reused.functions) else {}
        missing = sorted(covering - set(results))
        if missing:
            run = run_request(ctx, focused_request(ctx.found.prepared, missing, ctx.found.overlay,
                                                   record=(target,), trace=False))
            results.update((t.test_id, t) for t in run.tests)
        order = {t.test_id: index for index, t in enumerate(trace.tests)}
        ctx.recorded[target] = tuple(sorted(results.values(), key=lambda t: order.get(t.test_id, len(order)))
                                     ) if covering else None
    return ctx.recorded[target]


def carved_from_recording(target: str, ctx: ValidationContext) -> list[CarvedTest]:
    """Tests carved from the passing executions of ``target`` that ``recorded_calls`` holds (not yet
    run: ``tasks.validation.target_checks`` keeps those that pass on the original code)."""
    recorded = recorded_calls(target, ctx)
    if recorded is None:
        return []
    passed = tuple(t for t in recorded if t.test_id in ctx.passing)
    passing = ctx.found.trace.model_copy(update={"tests": passed})
    if ctx.sources is None:  # once per repair round, whatever the number of targets
        ctx.sources = source_texts(ctx.found.prepared, ctx.found.overlay, ctx.nodes.values())
    return carve_tests(passing, [target], ctx.nodes, max_per_member=6, sources=ctx.sources)


class NovelModule(BaseModel):
    """The novel-input tests of a target, what writing them spent and the problems met doing so
    (nothing, when the module was written for an earlier candidate)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    module: str | None = Field(description="The test module; None when the model gave no usable tests.")
    calls: tuple[LLMCall, ...] = ()
    problems: tuple[str, ...] = ()


def novel_module(target: str, ctx: ValidationContext, generate_tests: GenerateTests) -> NovelModule:
    """Novel-input tests of ``target`` (made once per target and cached) by the test-generation agent:
    LLM mode, one attempt, no mutants, focused on ``target``, with the failing tests' sources as the
    specification of the intended behaviour (the model is the oracle, not the buggy code);
    ``generate_tests`` is ``flows.testgen.generate_tests``."""
    if target in ctx.novel:
        return NovelModule(module=ctx.novel[target])
    node = ctx.nodes[target]
    prepared = ctx.found.prepared
    covering = sorted(ctx.found.trace.coverage().get(target, set()))
    with tempfile.TemporaryDirectory(prefix="equisa-novel-input-tests-") as out:
        params = TestgenParameters(
            path=str(prepared.repo), target=node.file or "", focus=[target], llm=True, max_attempts=1,
            mutants_per_measurement=0, improvement_budget=0, specification=ctx.failing_sources, out=out,
            sandbox=ctx.sandbox, docker_image=ctx.docker_image, no_cache=ctx.no_cache,
            module_stem="novel_input", max_cost_usd=ctx.endpoint.max_cost_usd,
            price_input=ctx.endpoint.price_input, price_output=ctx.endpoint.price_output)
        try:
            made = generate_tests(narrowed(prepared, covering), params)
        except BudgetSpentError:
            raise  # cut at the run's deadline: the driver stops its loop
        except EquisaError as error:  # an LLMError carries the calls made before it
            ctx.novel[target] = None
            return NovelModule(module=None, calls=tuple(getattr(error, "calls", ())),
                               problems=(f"novel-input tests for {target}: {error.message}",))
    module = made.source if made.report.mode == "llm" else None
    ctx.novel[target] = module
    problems = dict.fromkeys(f"novel-input tests for {target}: {p}" for p in made.report.problems)
    return NovelModule(module=module, calls=made.ledger.calls, problems=tuple(problems))

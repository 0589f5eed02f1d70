"""The ``testgen`` flow: the driver of the test-generation loop (seed 001 with the seed 000 §8
pipeline) for one target file.

The decisions are in the core's state machine (``equisa_core.testgen.machine``): which step comes
next (generate or enhance, the §8 redundancy check and smell fixes, static analysis, coverage,
mutants, the store), the supervisor's critique and the router's ENHANCE or FINISH, the best
module. This flow sets the run up (the target, the framework, the baseline coverage, the store of
the repository's own tests), runs each step the machine asks for as tasks (the sandboxed runner,
the model, the DuckDB store), feeds what it observed back, and publishes each attempt (its module,
``attempt.json``, a progress line) and the report.

``generate_tests`` is the interface other flows can call: it takes a prepared run (the snapshot and
interpreter Discovery and Validation already have), a target file and optionally the functions to
focus on, and returns the report and the generated module (an overlay path and its text);
``measure_tests`` measures any test module the same way. Discovery calls it (deterministic, one
attempt, no mutants) for tests that split ambiguity groups; since those tests assert the code's
current behaviour, they are splitting evidence only (``equisa_core.validation.generated_tests``: Validation
never counts them as regressions). Validation calls it in LLM mode with ``specification`` (the
failing tests' sources: the intended behaviour) for novel-input tests, the model being the oracle.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from prefect import flow
from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.models import TestOutcome
from equisa_core.common.options import EndpointOptions, TestgenOptions
from equisa_core.errors import EquisaError, NoTestsCollectedError, TestgenTargetError
from equisa_core.testgen.assembly import merge_modules
from equisa_core.testgen.curation import drop_redundant, find_redundant, improve_smells, rewrite_redundant
from equisa_core.testgen.framework import FrameworkChoice, detect_framework
from equisa_core.testgen.machine import (
    Analyse,
    Analysed,
    CallRecord,
    Dedupe,
    Deduped,
    Enhance,
    FixSmells,
    Generate,
    Generated,
    Measure,
    Measured,
    Measurement,
    MutantsScored,
    RunMutants,
    SmellsFixed,
    Store,
    Stored,
    TestgenBudget,
    TestgenSetup,
    TestgenState,
    TestgenStep,
    TestRun,
    initial_state,
    next_steps,
    record,
)
from equisa_core.testgen.modules import clean_generated_module, list_tests
from equisa_core.testgen.mutation_plan import select_mutants
from equisa_core.testgen.prompts import render_enhancer, render_generator
from equisa_core.testgen.report import CoverageFigures, TestgenReport
from equisa_core.validation.generated_tests import testgen_module_path
from tasks.parameters import TraceParameters
from tasks.prepared_run import PreparedRun, prepare_run
from tasks.record import record_finished_run
from tasks.run_tests import report_progress
from tasks.test_store import TestStore, embed_texts
from tasks.testgen import (
    CoverageResult,
    MutationResult,
    analyse_test_module,
    coverage_request,
    measure_coverage,
    score_mutants,
)
from tasks.testgen_generation import DeterministicPlan, Recorder, deterministic_tests

__all__ = ["TestgenParameters", "GeneratedTests", "generate_tests", "measure_tests", "testgen"]

#: Cosine similarity above which a new test counts as redundant with a stored one. The local
#: embedding is lexical (two tests differing in one literal score about 0.96), so it flags only
#: near-identical text; an endpoint's semantic embedding uses the usual 0.95.
REDUNDANCY_THRESHOLD = {"local": 0.995, "endpoint": 0.95}
_EXISTING_IN_STORE = 400


class TestgenParameters(TraceParameters, EndpointOptions, TestgenOptions):
    """Parameters of one testgen run (those of ``trace-suite``, the model switch and the loop's budget)."""

    __test__ = False
    generated_code: ClassVar[str | None] = "generated tests"
    target: str = Field(
        description="The file under test, relative to the repository (or absolute inside it)."
    )
    out: str | None = Field(None, description="Folder for the generated modules, the store and the reports.")
    focus: list[str] = Field(
        default_factory=list, description="FQNs to generate tests for; empty: the whole file."
    )
    specification: dict[str, str] = Field(
        default_factory=dict,
        description="Test id -> source of tests that show the intended behaviour (LLM mode: given to "
        "the generator as the specification; its tests then assert that behaviour, so they may fail "
        "on the current code and are kept all the same).",
    )
    module_stem: str | None = Field(
        None, description="Name of the generated module (test_testgen_<stem>.py); default: the target's."
    )


class GeneratedTests(BaseModel):
    """What ``generate_tests`` returns: the report and the best module (workspace path and text)."""

    model_config = ConfigDict(frozen=True)

    report: TestgenReport
    path: str | None = None
    source: str | None = None


class _Context(BaseModel):
    """What the steps of one run share: the prepared run, the target, the mode, the model's
    configuration, the output folder, and the last coverage run (the mutants read its per-line tests)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    prepared: PreparedRun
    params: TestgenParameters
    target: str
    target_source: str
    module_path: str
    framework: FrameworkChoice
    baseline: CoverageResult | None
    durations: dict[str, float] = Field(default_factory=dict)
    use_llm: bool = False
    config: Any = Field(None, description="The model endpoint's LLMConfig (LLM mode).")
    out: Path
    problems: list[str] = Field(default_factory=list)
    coverage: CoverageResult | None = None


@flow(name="testgen", flow_run_name="testgen {params.target}", log_prints=True)
def testgen(params: TestgenParameters) -> TestgenReport:
    """Generate tests for one file of a repository (seed 001 loop, seed 000 §8 pipeline)."""
    prepared = prepare_run(params)
    report = generate_tests(prepared, params).report
    return record_finished_run("testgen", report, str(prepared.repo), params.artifacts, params.db)


def generate_tests(prepared: PreparedRun, params: TestgenParameters) -> GeneratedTests:
    """Run the loop on a prepared run: the interface the CLI uses and other flows can call (with
    ``params.focus`` naming the functions to test, e.g. an ambiguity group or a patched function)."""
    ctx = _context(prepared, params)
    ctx.baseline = _baseline(ctx)
    report = TestgenReport(
        mode="llm" if ctx.use_llm else "deterministic",
        path=str(prepared.repo),
        target=ctx.target,
        framework=ctx.framework.framework,
        framework_reason=ctx.framework.reason,
        coverage_target=params.coverage_target,
        mutation_target=params.mutation_target,
        baseline=_figures(ctx.baseline) if ctx.baseline else None,
        problems=ctx.problems,
        sandbox=prepared.sandbox,
    )
    if ctx.baseline is not None and params.measure_baseline_mutation:
        report.baseline_mutation_score = _mutation(ctx, {}, ctx.baseline).score
    (ctx.out / "tests.duckdb").unlink(missing_ok=True)  # the store belongs to this run
    store = TestStore(ctx.out / "tests.duckdb")
    try:
        _seed_store(store, ctx)
        state = _drive(ctx, store, initial_state(_setup(ctx), ctx.problems))
    finally:
        store.close()
    report.attempts = list(state.attempts)
    report.stopped_because = state.stopped_because
    report.problems = list(state.problems)
    report.cost_usd = state.cost_usd
    path = source = None
    if state.best_attempt is not None:
        report.best_attempt = state.best_attempt
        final = ctx.out / Path(ctx.module_path).name
        final.write_text(state.best_source, encoding="utf-8")
        report.output = str(final)
        path, source = ctx.module_path, state.best_source
    (ctx.out / "report.json").write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return GeneratedTests(report=report, path=path, source=source)


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
    target, target_source = _check_target(prepared, params.target)
    ctx = _Context(
        prepared=prepared,
        params=params,
        target=target,
        target_source=target_source,
        module_path=module_path or "",
        framework=detect_framework({}),
        baseline=None,
        out=Path(params.out or "."),
    )
    overlay = {module_path: source} if module_path and source is not None else {}
    tests = [module_path] if module_path else list(prepared.base.tests)
    coverage = _measure(ctx, overlay, tests)
    return coverage, _mutation(ctx, overlay, coverage)


# --- set-up ---------------------------------------------------------------------------------------


def _context(prepared: PreparedRun, params: TestgenParameters) -> _Context:
    """The run's context: the checked target, the mode, the framework, the output folder."""
    from tasks.llm import choose_llm_mode

    target, target_source = _check_target(prepared, params.target)
    use_llm, config, problems = choose_llm_mode(params.llm)
    out = (
        Path(params.out)
        if params.out
        else prepared.workspace.root.parent / f"testgen-{prepared.workspace.digest[:12]}"
    )
    out.mkdir(parents=True, exist_ok=True)
    framework = detect_framework(_framework_files(prepared.workspace.root))
    if not use_llm:  # carved and boundary tests are pytest functions whatever the repository uses
        framework = FrameworkChoice(
            framework="pytest", reason=f"deterministic tests are pytest functions ({framework.reason})"
        )
    return _Context(
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
        problems=problems,
    )


def _setup(ctx: _Context) -> TestgenSetup:
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
        baseline=_measurement(ctx.baseline) if ctx.baseline else None,
        budget=TestgenBudget(max_iterations=params.max_iterations),
    )


def _check_target(prepared: PreparedRun, target: str) -> tuple[str, str]:
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


def _framework_files(root: Path) -> dict[str, str]:
    files: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        name = path.name
        if not path.is_file() or any(
            p.startswith(".") or p in ("node_modules",) for p in relative.split("/")[:-1]
        ):
            continue
        wanted = name in (
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
        wanted |= name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))
        if wanted and len(files) < 500:
            files[relative] = path.read_text(encoding="utf-8", errors="replace")
    return files


def _figures(result: CoverageResult) -> CoverageFigures:
    return CoverageFigures(
        percent=result.percent,
        branch_percent=result.branch_percent,
        covered_lines=result.covered_lines,
        statements=result.statements,
        covered_branches=result.covered_branches,
        branches=result.branches,
        missing_lines=result.missing_lines,
    )


def _measurement(result: CoverageResult) -> Measurement:
    """What the state machine reads of a coverage run."""
    errors = result.trace.collect_errors
    return Measurement(
        figures=_figures(result),
        executed_lines=result.executed_lines,
        executed_branches=result.executed_branches,
        tests=tuple(
            TestRun(test_id=t.test_id, passed=t.outcome is TestOutcome.PASSED, outcome=t.outcome.value)
            for t in result.trace.tests
        ),
        error=result.error,
        collect_error=errors[0].message.splitlines()[-1][:200] if errors else None,
    )


def _measure(ctx: _Context, overlay: dict[str, str], tests: Sequence[str]) -> CoverageResult:
    request = coverage_request(ctx.prepared.base, overlay, tests, ctx.target)
    return measure_coverage.with_options(refresh_cache=ctx.params.no_cache or None)(
        request,
        backend=ctx.params.sandbox,
        interpreter_version=ctx.prepared.interpreter_version,
        docker_image=ctx.params.docker_image,
    )


def _baseline(ctx: _Context) -> CoverageResult | None:
    """Coverage of the target by the repository's own tests; None when it has none."""
    _stage(ctx, f"measuring the existing tests' coverage of {ctx.target}")
    try:
        result = _measure(ctx, {}, ctx.prepared.base.tests)
    except NoTestsCollectedError:
        ctx.problems.append("the repository has no tests: no baseline, nothing to carve")
        return None
    if not result.trace.tests:
        ctx.problems.append("the repository's tests collected nothing: no baseline, nothing to carve")
        return None
    if result.error:
        ctx.problems.append(f"baseline coverage: {result.error}")
    ctx.durations.update({t.test_id: t.duration for t in result.trace.tests})
    print(f"baseline: the repository's tests cover {result.percent:.2f}% of {ctx.target}")
    return result


def _seed_store(store: TestStore, ctx: _Context) -> None:
    """The repository's own tests, embedded (§8: examples and redundancy checks read them)."""
    items: list[tuple[str, str]] = []
    for path, text in _framework_files(ctx.prepared.workspace.root).items():
        if path.rsplit("/", 1)[-1].startswith("test") or path.endswith("_test.py"):
            items += [(f"{path}::{name}", code) for name, code in list_tests(text).items()]
    items = items[:_EXISTING_IN_STORE]
    vectors, _, problem = embed_texts([code for _, code in items], _embedding_config(ctx))
    if problem:
        ctx.problems.append(problem)
    store.add("existing", items, vectors)


def _embedding_config(ctx: _Context) -> Any:
    """The model configuration embeddings use: the endpoint's in LLM mode, else None (local)."""
    return ctx.config if ctx.use_llm else None


# --- the driver -----------------------------------------------------------------------------------


def _drive(ctx: _Context, store: TestStore, state: TestgenState) -> TestgenState:
    """Run the steps the machine asks for, one after the other, until it gives a verdict."""
    while steps := next_steps(state):
        for step in steps:
            done = len(state.attempts)
            state = record(state, _run_step(ctx, store, step))
            if len(state.attempts) > done:
                _publish_attempt(ctx, state)
    return state


def _run_step(ctx: _Context, store: TestStore, step: TestgenStep) -> Any:
    """The observation of one step, with the time it took, its model calls and its problems."""
    started, known_problems, calls = time.monotonic(), len(ctx.problems), []
    observation = _EXECUTORS[step.kind](ctx, store, step, calls)
    return observation.model_copy(
        update={
            "seconds": round(time.monotonic() - started, 3),
            "calls": tuple(_call_record(c) for c in calls),
            "problems": tuple(ctx.problems[known_problems:]),
        }
    )


def _call_record(call: Any) -> CallRecord:
    return CallRecord(
        purpose=getattr(call, "purpose", ""),
        cost_usd=getattr(call, "cost_usd", None),
        cached=bool(getattr(call, "cached", False)),
        mean_entropy=getattr(call, "mean_entropy", None),
    )


def _publish_attempt(ctx: _Context, state: TestgenState) -> None:
    """The finished attempt's module and ``attempt.json`` in ``--out``, and its progress line."""
    entry = state.attempts[-1]
    module_file = Path(entry.module)
    module_file.parent.mkdir(parents=True, exist_ok=True)
    module_file.write_text(state.source, encoding="utf-8")
    (module_file.parent / "attempt.json").write_text(
        json.dumps(entry.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8"
    )
    mutation = entry.mutation_score if entry.mutation_score is not None else "-"
    line = (
        f"attempt {entry.attempt}: {len(entry.tests)} tests, coverage {entry.critique.coverage:.2f}%, "
        f"mutation {mutation}, {entry.decision} ({entry.decision_reason})"
    )
    print(line)
    report_progress(ctx.params.progress_key, {"kind": "note", "text": line})


def _stage(ctx: _Context, text: str) -> None:
    """What the run is doing now, for the spinner of the command that runs it."""
    report_progress(ctx.params.progress_key, {"kind": "stage", "text": text})


def _ask(ctx: _Context, messages: list[dict[str, str]], purpose: str, calls: list) -> str | None:
    """One model call (Prefect task with the config's retries); None, with the problem noted, on failure.

    Logprobs are asked for the generator and the enhancer (their entropy sets the pre-execution
    level) unless ``LLM_COLLECT_LOGPROBS`` (the seed's switch) is ``false``.
    """
    import os

    from tasks.llm import LLMError, ask

    wanted = os.environ.get("LLM_COLLECT_LOGPROBS", "true").strip().lower() not in ("0", "false", "no")
    logprobs = wanted and purpose in ("testgen-generator", "testgen-enhancer")
    config = ctx.config.model_copy(update={"logprobs": logprobs})
    try:
        answer = ask(config, messages, purpose)
    except LLMError as error:
        ctx.problems.append(f"{purpose}: {error.message}")
        calls.extend(getattr(error, "calls", ()) or ())
        return None
    calls.append(answer.call)
    return answer.text


def _asker(ctx: _Context, calls: list) -> Callable[[list[dict[str, str]], str], str | None] | None:
    """The model as the core's §8 helpers call it; None in deterministic mode."""
    if not ctx.use_llm:
        return None
    return lambda messages, purpose: _ask(ctx, messages, purpose, calls)


# --- the steps ------------------------------------------------------------------------------------


def _generate(ctx: _Context, store: TestStore, step: Generate, calls: list) -> Generated:
    """Attempt 0: the generator (LLM), or carved, boundary and scratch tests (deterministic); the
    deterministic tests too when the model gives no usable module."""
    how = "the model" if step.strategy == "model" else "carved, boundary-value and scratch-driver tests"
    _stage(ctx, f"attempt 0 (at most {ctx.params.max_iterations} in all): generating ({how})")
    if step.strategy == "model":
        text = _ask(ctx, _generator_prompt(ctx, store), "testgen-generator", calls)
        module = _usable(ctx, text, "generator")
        if module is not None:
            return _generated(ctx, 0, "generator", module, [])
        ctx.problems.append(
            "the generator gave no usable module; attempt 0 falls back to deterministic tests"
        )
    source, did = _deterministic(ctx, round_number=0, focus_lines=())
    return _generated(ctx, 0, "deterministic: carved, boundary-value and scratch-driver tests", source, did)


def _generator_prompt(ctx: _Context, store: TestStore) -> list[dict[str, str]]:
    """The seed's generator prompt, with the stored tests most similar to the uncovered lines."""
    uncovered = list(ctx.baseline.missing_lines) if ctx.baseline else []
    lines = ctx.target_source.splitlines()
    query = (
        "\n".join(lines[line - 1] for line in uncovered[:40] if line <= len(lines))
        if uncovered
        else ctx.target_source
    )
    vectors, _, _ = embed_texts([query], ctx.config)
    examples = [code for _, code, _ in store.most_similar(vectors[0], 3)] if vectors else []
    return render_generator(
        ctx.prepared.repo.name,
        "HEAD",
        ctx.target,
        ctx.target_source,
        ctx.framework.framework,
        uncovered,
        examples,
        specification=ctx.params.specification,
        focus=ctx.params.focus,
    )


def _usable(ctx: _Context, text: str | None, role: str) -> str | None:
    """The test module in the model's answer; None (the problem noted) when there is none."""
    if text is None:
        return None
    try:
        return clean_generated_module(text)
    except EquisaError as error:
        ctx.problems.append(f"{role} answer unusable: {error.args[0] if error.args else error}")
        return None


def _generated(ctx: _Context, attempt: int, origin: str, source: str, did: list[str]) -> Generated:
    """The generate or enhance step's observation (the spinner moves on to the next steps)."""
    _stage(ctx, f"attempt {attempt}: similarity, smells, then coverage and mutants in the sandbox")
    return Generated(origin=origin, source=source, deterministic=tuple(did))


def _enhance(ctx: _Context, store: TestStore, step: Enhance, calls: list) -> Generated:
    """Attempt 1+: the enhancer (LLM), or a wider deterministic boundary search."""
    del store
    _stage(ctx, f"attempt {step.attempt} (at most {ctx.params.max_iterations} in all): enhancing")
    if step.strategy == "model":
        messages = render_enhancer(
            ctx.prepared.repo.name,
            "HEAD",
            ctx.target,
            ctx.framework.framework,
            step.source,
            step.instructions,
            step.missing_lines,
            list(step.surviving_mutants),
        )
        module = _usable(ctx, _ask(ctx, messages, "testgen-enhancer", calls), "enhancer")
        if module is not None:
            return _generated(ctx, step.attempt, "enhancer", module, [])
        return _generated(
            ctx, step.attempt, "enhancer (no usable answer: previous module kept)", step.source, []
        )
    extra, did = _deterministic(ctx, round_number=step.attempt, focus_lines=step.missing_lines)
    merged = merge_modules(step.source, extra)
    return _generated(ctx, step.attempt, "deterministic: wider boundary search", merged, did)


def _deterministic(ctx: _Context, round_number: int, focus_lines: Sequence[int]) -> tuple[str, list[str]]:
    """The deterministic generator's module and what it did (``tasks.testgen_generation``)."""
    params = ctx.params
    recorder = Recorder(
        base=ctx.prepared.base,
        backend=params.sandbox,
        docker_image=params.docker_image,
        interpreter_version=ctx.prepared.interpreter_version,
        no_cache=params.no_cache,
    )
    plan = DeterministicPlan(
        target=ctx.target,
        target_source=ctx.target_source,
        line_tests=ctx.baseline.line_tests if ctx.baseline else {},
        focus=tuple(params.focus),
        carved_per_function=params.carved_per_function,
        boundary_per_function=params.boundary_per_function,
    )
    return deterministic_tests(recorder, plan, round_number, focus_lines)


def _dedupe(ctx: _Context, store: TestStore, step: Dedupe, calls: list) -> Deduped:
    """§8 redundancy: each new test against its nearest stored test; the redundant ones rewritten by
    the model (LLM) or dropped."""
    vectors, embeddings, problem = embed_texts(list(step.tests.values()), _embedding_config(ctx))
    notes = step.notes.model_copy(
        update={
            "embeddings": embeddings,
            "redundant": [*step.notes.redundant, *([problem] if problem else [])],
        }
    )
    nearest = [(found[0][1], found[0][2]) if (found := store.most_similar(v, 1)) else None for v in vectors]
    threshold = REDUNDANCY_THRESHOLD["local" if embeddings == "local" else "endpoint"]
    redundant = find_redundant(list(step.tests), nearest, threshold)
    source = step.source
    if redundant and ctx.use_llm:
        uncovered = ctx.baseline.missing_lines if ctx.baseline else ()
        source, notes = rewrite_redundant(
            source,
            step.tests,
            redundant,
            notes,
            lambda messages, purpose: _ask(ctx, messages, purpose, calls),
            target=ctx.target,
            target_source=ctx.target_source,
            uncovered=uncovered,
        )
    elif redundant:
        source, notes = drop_redundant(source, redundant, notes)
    return Deduped(source=source, notes=notes)


def _fix_smells(ctx: _Context, store: TestStore, step: FixSmells, calls: list) -> SmellsFixed:
    """§8 smells: detected (and the model's critic), fixed within the improvement budget."""
    del store
    source, notes = improve_smells(step.source, step.notes, step.budget, _asker(ctx, calls))
    return SmellsFixed(source=source, notes=notes)


def _analyse(ctx: _Context, store: TestStore, step: Analyse, calls: list) -> Analysed:
    """Static analysis of the module (syntax, ruff, mypy where configured, complexity)."""
    del store, calls
    return Analysed(static=analyse_test_module(step.source, str(ctx.prepared.workspace.root)))


def _measure_step(ctx: _Context, store: TestStore, step: Measure, calls: list) -> Measured:
    """Branch coverage of the module's tests in the sandbox; a runner error (first run only) observed."""
    del store, calls
    overlay = {ctx.module_path: step.source}
    try:
        ctx.coverage = _measure(ctx, overlay, [ctx.module_path])
    except EquisaError as error:
        if step.after_drop:
            raise
        ctx.coverage = None
        return Measured(runner_error=error.args[0] if error.args else type(error).__name__)
    return Measured(measurement=_measurement(ctx.coverage))


def _run_mutants(ctx: _Context, store: TestStore, step: RunMutants, calls: list) -> MutantsScored:
    """The mutation score of the module's tests (the last coverage run says which test covers what)."""
    del store, calls
    assert ctx.coverage is not None, "the mutants run after a coverage run"
    mutation = _mutation(ctx, {ctx.module_path: step.source}, ctx.coverage)
    return MutantsScored(score=mutation.score, verdicts=mutation.verdicts)


def _store(ctx: _Context, store: TestStore, step: Store, calls: list) -> Stored:
    """The passing tests join the similarity store."""
    del calls
    vectors, _, _ = embed_texts([code for _, code in step.tests], _embedding_config(ctx))
    store.add("generated", list(step.tests), vectors)
    return Stored(count=len(step.tests))


_EXECUTORS: dict[str, Callable[..., Any]] = {
    "generate": _generate,
    "enhance": _enhance,
    "dedupe": _dedupe,
    "fix_smells": _fix_smells,
    "analyse": _analyse,
    "measure": _measure_step,
    "run_mutants": _run_mutants,
    "store": _store,
}


def _mutation(ctx: _Context, overlay: dict[str, str], coverage: CoverageResult) -> MutationResult:
    passing = {t.test_id for t in coverage.trace.tests if t.outcome is TestOutcome.PASSED}
    line_tests = {line: [t for t in tests if t in passing] for line, tests in coverage.line_tests.items()}
    mutants = select_mutants(ctx.target_source, ctx.target, line_tests, ctx.params.max_mutants)
    if ctx.params.focus:
        mutants = [m for m in mutants if m.fqn in ctx.params.focus]
    durations = {**ctx.durations, **{t.test_id: t.duration for t in coverage.trace.tests}}
    return score_mutants(
        ctx.prepared.base,
        overlay,
        mutants,
        durations,
        backend=ctx.params.sandbox,
        docker_image=ctx.params.docker_image,
        interpreter_version=ctx.prepared.interpreter_version,
    )

"""The ``testgen`` flow: the seed 001 loop with the seed 000 §8 pipeline, for one target file.

Control flow only. Attempt 0 generates a test module (the model's generator prompt in LLM mode;
carved and boundary-value tests in deterministic mode); every attempt then goes through static
analysis, pre-execution reliability, the sandboxed runner (branch coverage, mutation score with
each mutant against only the tests covering it), post-execution reliability and the supervisor;
the router decides ENHANCE or FINISH; ENHANCE asks the enhancer (the model with the seed's prompt,
or a wider deterministic boundary search). Before it runs, each module goes through §8: redundant
tests (cosine similarity in the DuckDB store) are rewritten (LLM) or dropped, test smells are
detected and fixed within an improvement budget, and the tests that pass join the store.

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
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from prefect import flow
from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.models import Node, SuiteTrace, TestOutcome
from equisa_core.common.source_edit import list_functions
from equisa_core.errors import EquisaError, NoTestsCollectedError, TestgenTargetError
from equisa_core.testgen.boundary import driver_tests, file_constants, scratch_driver_module, scratch_test
from equisa_core.testgen.carving import GENERATED_TESTS_DIR, carve_tests, carved_module
from equisa_core.testgen.framework import FrameworkChoice, detect_framework
from equisa_core.testgen.modules import clean_generated_module, keep_tests, list_tests, node_id_name
from equisa_core.testgen.mutation_plan import module_name, select_mutants
from equisa_core.testgen.prompts import (
    render_enhancer,
    render_generator,
    render_redundant_rewrite,
    render_smell_critic,
    render_smell_fix,
)
from equisa_core.testgen.reliability import post_execution_level, pre_execution_level
from equisa_core.testgen.report import AttemptReport, CoverageFigures, PipelineNotes, TestgenReport
from equisa_core.testgen.router import decide
from equisa_core.testgen.smells import detect_smells, fix_smells
from equisa_core.testgen.static import StaticReport
from equisa_core.testgen.supervisor import Critique, RunnerMetrics, supervise
from equisa_core.validation.generated_tests import testgen_module_path
from flows.trace import PreparedRun, TraceParameters, prepare_run
from tasks.record import record_finished_run
from tasks.run_tests import report_progress, run_tests
from tasks.test_store import TestStore, embed_texts
from tasks.testgen import (
    CoverageResult,
    MutationResult,
    analyse_test_module,
    coverage_request,
    measure_coverage,
    score_mutants,
)

__all__ = ["TestgenParameters", "GeneratedTests", "generate_tests", "measure_tests", "testgen"]

#: Cosine similarity above which a new test counts as redundant with a stored one. The local
#: embedding is lexical (two tests differing in one literal score about 0.96), so it flags only
#: near-identical text; an endpoint's semantic embedding uses the usual 0.95.
REDUNDANCY_THRESHOLD = {"local": 0.995, "endpoint": 0.95}
_EXISTING_IN_STORE = 400


class TestgenParameters(TraceParameters):
    """Parameters of one testgen run."""

    __test__ = False
    generated_code: ClassVar[str | None] = "generated tests"
    target: str = Field(
        description="The file under test, relative to the repository (or absolute inside it)."
    )
    llm: bool | None = Field(None, description="Use the model; None: when an endpoint is configured.")
    out: str | None = Field(None, description="Folder for the generated modules, the store and the reports.")
    max_iterations: int = Field(3, ge=1, le=20, description="Attempts in all (attempt 0 included).")
    coverage_target: float = Field(80.0, ge=0, le=100)
    mutation_target: float = Field(60.0, ge=0, le=100)
    max_mutants: int = Field(150, ge=0, description="Mutants of the target file per measurement.")
    improvement_budget: int = Field(2, ge=0, description="Smell-fixing rounds per attempt (seed 000 §8).")
    carved_per_function: int = Field(3, ge=0, description="Carved tests per function (deterministic mode).")
    boundary_per_function: int = Field(4, ge=0, description="Boundary tests per function per attempt.")
    focus: list[str] = Field(
        default_factory=list, description="FQNs to generate tests for; empty: the whole file."
    )
    measure_baseline_mutation: bool = Field(
        False, description="Also score the repository's own tests' mutants."
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
    """What every attempt of one run shares (control-flow state, no I/O)."""

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
    config: object | None = None
    out: Path
    problems: list[str] = Field(default_factory=list)


@flow(name="testgen", flow_run_name="testgen {params.target}", log_prints=True)
def testgen(params: TestgenParameters) -> TestgenReport:
    """Generate tests for one file of a repository (seed 001 loop, seed 000 §8 pipeline)."""
    prepared = prepare_run(params)
    report = generate_tests(prepared, params).report
    return record_finished_run("testgen", report, str(prepared.repo), params.artifacts, params.db)


def generate_tests(prepared: PreparedRun, params: TestgenParameters) -> GeneratedTests:
    """Run the loop on a prepared run: the interface the CLI uses and other flows can call (with
    ``params.focus`` naming the functions to test, e.g. an ambiguity group or a patched function)."""
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
    if use_llm:
        framework_for_output = framework
    else:  # carved and boundary tests are pytest functions whatever the repository uses
        framework_for_output = FrameworkChoice(
            framework="pytest", reason=f"deterministic tests are pytest functions ({framework.reason})"
        )
    stem = params.module_stem or target
    ctx = _Context(
        prepared=prepared,
        params=params,
        target=target,
        target_source=target_source,
        module_path=testgen_module_path(stem),
        framework=framework_for_output,
        baseline=None,
        use_llm=use_llm,
        config=config,
        out=out,
        problems=problems,
    )
    baseline = _baseline(ctx)
    ctx.baseline = baseline
    report = TestgenReport(
        mode="llm" if use_llm else "deterministic",
        path=str(prepared.repo),
        target=target,
        framework=framework_for_output.framework,
        framework_reason=framework_for_output.reason,
        coverage_target=params.coverage_target,
        mutation_target=params.mutation_target,
        baseline=_figures(baseline) if baseline else None,
        problems=problems,
        sandbox=prepared.sandbox,
    )
    if baseline is not None and params.measure_baseline_mutation:
        report.baseline_mutation_score = _mutation(ctx, {}, baseline).score
    (out / "tests.duckdb").unlink(missing_ok=True)  # the store belongs to this run
    store = TestStore(out / "tests.duckdb")
    try:
        _seed_store(store, ctx)
        best, best_source = _loop(ctx, store, report)
    finally:
        store.close()
    report.problems = list(ctx.problems)
    report.cost_usd = round(sum(a.cost_usd for a in report.attempts), 6)
    path = source = None
    if best is not None:
        report.best_attempt = best
        final = out / Path(ctx.module_path).name
        final.write_text(best_source, encoding="utf-8")
        report.output = str(final)
        path, source = ctx.module_path, best_source
    (out / "report.json").write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
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


def _combined(baseline: CoverageResult | None, new: CoverageResult) -> CoverageFigures:
    """The union of what the existing tests and the new ones executed (lines and branches)."""
    if baseline is None:
        return _figures(new)
    lines = set(baseline.executed_lines) | set(new.executed_lines)
    statements = max(baseline.statements, new.statements)
    all_lines = (
        set(baseline.executed_lines)
        | set(baseline.missing_lines)
        | set(new.executed_lines)
        | set(new.missing_lines)
    )
    branches = set(baseline.executed_branches) | set(new.executed_branches)
    total_branches = max(baseline.branches, new.branches)
    covered = len(lines) + len(branches)
    denominator = statements + total_branches
    return CoverageFigures(
        percent=round(100.0 * covered / denominator, 2) if denominator else 100.0,
        branch_percent=round(100.0 * len(branches) / total_branches, 2) if total_branches else 100.0,
        covered_lines=len(lines),
        statements=statements,
        covered_branches=len(branches),
        branches=total_branches,
        missing_lines=tuple(sorted(all_lines - lines)),
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
    vectors, source, problem = embed_texts([code for _, code in items], ctx.config if ctx.use_llm else None)  # type: ignore[arg-type]
    if problem:
        ctx.problems.append(problem)
    store.add("existing", items, vectors)


# --- the loop -------------------------------------------------------------------------------------


def _loop(ctx: _Context, store: TestStore, report: TestgenReport) -> tuple[int | None, str]:
    previous: Critique | None = None
    source = ""
    best: tuple[float, float, int] | None = None
    best_source = ""
    best_index: int | None = None
    for attempt in range(ctx.params.max_iterations):
        notes = PipelineNotes()
        calls: list = []
        known = set(list_tests(source).values())  # the previous attempt's tests: not checked again
        if attempt == 0:
            how = "the model" if ctx.use_llm else "carved, boundary-value and scratch-driver tests"
            _stage(ctx, f"attempt 0 (at most {ctx.params.max_iterations} in all): generating ({how})")
            origin, source, deterministic = _generate(ctx, store, calls)
        else:
            _stage(ctx, f"attempt {attempt} (at most {ctx.params.max_iterations} in all): enhancing")
            origin, source, deterministic = _enhance(ctx, source, previous, report.attempts[-1], calls)
        _stage(ctx, f"attempt {attempt}: similarity, smells, then coverage and mutants in the sandbox")
        if source:
            source = _pipeline(ctx, store, source, notes, calls, known)
        entry, kept_source, coverage = _evaluate(
            ctx, attempt, origin, source, notes, calls, deterministic, previous
        )
        source = kept_source
        report.attempts.append(entry)
        previous = entry.critique
        line = (
            f"attempt {attempt}: {len(entry.tests)} tests, coverage {entry.critique.coverage:.2f}%, "
            f"mutation {entry.mutation_score if entry.mutation_score is not None else '-'}, {entry.decision} "
            f"({entry.decision_reason})"
        )
        print(line)
        report_progress(ctx.params.progress_key, {"kind": "note", "text": line})
        # With a specification the tests assert intended behaviour: on a buggy program some fail, and
        # the module is still the answer (the caller runs it against a patched program).
        if coverage is not None and (entry.tests_passed or (ctx.params.specification and entry.tests)):
            if entry.tests_passed:
                _add_to_store(ctx, store, source, coverage, notes)
            key = (entry.critique.coverage, entry.mutation_score or 0.0, -attempt)
            if best is None or key > best:
                best, best_source, best_index = key, source, attempt
        if entry.decision == "FINISH":
            report.stopped_because = entry.decision_reason
            break
    return best_index, best_source


def _spent(calls: list) -> float:
    """What the calls cost: a cached answer (Prefect's cache of ``call-llm``) spent nothing."""
    fresh = [c for c in calls if not getattr(c, "cached", False)]
    return round(sum((getattr(c, "cost_usd", 0.0) or 0.0) for c in fresh), 6)


def _stage(ctx: _Context, text: str) -> None:
    """What the run is doing now, for the spinner of the command that runs it."""
    report_progress(ctx.params.progress_key, {"kind": "stage", "text": text})


def _record(ctx: _Context, calls: list, answer) -> str:
    calls.append(answer.call)
    return answer.text


def _ask(ctx: _Context, messages: list[dict[str, str]], purpose: str, calls: list) -> str | None:
    """One model call (Prefect task with the config's retries); None, with the problem noted, on failure.

    Logprobs are asked for the generator and the enhancer (their entropy sets the pre-execution
    level) unless ``LLM_COLLECT_LOGPROBS`` (the seed's switch) is ``false``.
    """
    import os

    from tasks.llm import LLMError, ask

    wanted = os.environ.get("LLM_COLLECT_LOGPROBS", "true").strip().lower() not in ("0", "false", "no")
    logprobs = wanted and purpose in ("testgen-generator", "testgen-enhancer")
    config = ctx.config.model_copy(update={"logprobs": logprobs})  # type: ignore[union-attr]
    try:
        answer = ask(config, messages, purpose)
    except LLMError as error:
        ctx.problems.append(f"{purpose}: {error.message}")
        calls.extend(getattr(error, "calls", ()) or ())
        return None
    return _record(ctx, calls, answer)


def _generate(ctx: _Context, store: TestStore, calls: list) -> tuple[str, str, list[str]]:
    """Attempt 0: the generator (LLM) or carved + boundary tests (deterministic)."""
    if ctx.use_llm:
        uncovered = list(ctx.baseline.missing_lines) if ctx.baseline else []
        query = (
            ctx.target_source
            if not uncovered
            else "\n".join(
                ctx.target_source.splitlines()[line - 1]
                for line in uncovered[:40]
                if line <= len(ctx.target_source.splitlines())
            )
        )
        vectors, _, _ = embed_texts([query], ctx.config)  # type: ignore[arg-type]
        examples = [code for _, code, _ in store.most_similar(vectors[0], 3)] if vectors else []
        messages = render_generator(
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
        text = _ask(ctx, messages, "testgen-generator", calls)
        if text is not None:
            try:
                return "generator", clean_generated_module(text), []
            except EquisaError as error:
                ctx.problems.append(f"generator answer unusable: {error.args[0] if error.args else error}")
        ctx.problems.append(
            "the generator gave no usable module; attempt 0 falls back to deterministic tests"
        )
    source, did = _deterministic(ctx, round_number=0, focus_lines=())
    return "deterministic: carved, boundary-value and scratch-driver tests", source, did


def _enhance(
    ctx: _Context, source: str, critique: Critique | None, last: AttemptReport, calls: list
) -> tuple[str, str, list[str]]:
    """Attempt 1+: the enhancer (LLM), or a wider deterministic boundary search."""
    assert critique is not None
    if ctx.use_llm and source:
        messages = render_enhancer(
            ctx.prepared.repo.name,
            "HEAD",
            ctx.target,
            ctx.framework.framework,
            source,
            critique.instructions,
            critique.missing_lines,
            last.surviving_mutants,
        )
        text = _ask(ctx, messages, "testgen-enhancer", calls)
        if text is not None:
            try:
                return "enhancer", clean_generated_module(text), []
            except EquisaError as error:
                ctx.problems.append(f"enhancer answer unusable: {error.args[0] if error.args else error}")
        return "enhancer (no usable answer: previous module kept)", source, []
    extra, did = _deterministic(ctx, round_number=last.attempt + 1, focus_lines=critique.missing_lines)
    merged = _merge_modules(source, extra)
    return "deterministic: wider boundary search", merged, did


# --- deterministic generation ---------------------------------------------------------------------


def _target_nodes(ctx: _Context) -> dict[str, Node]:
    module = module_name(ctx.target)
    nodes = {}
    for location in list_functions(ctx.target_source, module=module):
        if "<locals>" in location.qualname:
            continue
        if ctx.params.focus and location.fqn not in ctx.params.focus:
            continue
        nodes[location.fqn] = Node(
            fqn=location.fqn, file=ctx.target, start_line=location.start_line, end_line=location.end_line
        )
    return nodes


def _run_recording(
    ctx: _Context, overlay: dict[str, str], tests: Sequence[str], fqns: Sequence[str]
) -> SuiteTrace:
    request = ctx.prepared.base.model_copy(
        update={
            "overlay": overlay,
            "tests": tuple(sorted({t.split("::", 1)[0] for t in tests})),
            "only": tuple(tests),
            "record": tuple(fqns),
            "trace": False,
            "shard": None,
        }
    )
    return run_tests.with_options(refresh_cache=ctx.params.no_cache or None)(
        request,
        backend=ctx.params.sandbox,
        interpreter_version=ctx.prepared.interpreter_version,
        docker_image=ctx.params.docker_image,
    )


def _deterministic(ctx: _Context, round_number: int, focus_lines: Sequence[int]) -> tuple[str, list[str]]:
    """Carved tests (round 0), boundary tests moved from them, and tests observed from scratch
    drivers for the functions no existing test calls; the module text and what was done."""
    nodes = _target_nodes(ctx)
    did: list[str] = []
    if focus_lines and round_number > 0:
        wanted = {
            f for f, n in nodes.items() if any(n.start_line <= line <= n.end_line for line in focus_lines)
        }
        if wanted:
            nodes = {f: n for f, n in nodes.items() if f in wanted}
            did.append(f"focused on {len(nodes)} functions holding missing lines")
    if not nodes:
        return "", [*did, "no function of the target to test"]
    baseline = ctx.baseline
    covering = sorted(
        {
            t
            for line, tests in (baseline.line_tests.items() if baseline else ())
            for t in tests
            if any(n.start_line <= line <= n.end_line for n in nodes.values())
        }
    )
    per = ctx.params.boundary_per_function * (round_number + 1)
    tests: list = []
    carved: list = []
    if covering:
        recorded = _run_recording(ctx, {}, covering, sorted(nodes))
        per_function = ctx.params.carved_per_function
        carved = carve_tests(
            recorded, set(nodes), nodes, max_per_member=max(per_function, 1) * (round_number + 1)
        )
        did.append(f"carved {len(carved)} tests from {len(covering)} existing tests' recorded calls")
        if round_number == 0:
            tests += carved
        constants = file_constants(ctx.target_source)
        drivers = driver_tests(carved, constants)
        if drivers:
            path = f"{GENERATED_TESTS_DIR}/test_testgen_drive_{round_number}.py"
            observed = _run_recording(
                ctx, {path: carved_module(drivers)}, [f"{path}::{d.name}" for d in drivers], sorted(nodes)
            )
            boundary = _observed_tests(observed, nodes, per, f"test_boundary_{round_number}_")
            tests += boundary
            did.append(
                f"ran {len(drivers)} boundary-value drivers over {len(constants)} constants of the file; "
                f"kept {len(boundary)} observed calls as tests"
            )
    else:
        did.append("no existing test calls the target's functions: nothing to carve")
    uncalled = sorted(set(nodes) - {t.target_fqn for t in carved})
    module = module_name(ctx.target)
    scratch_text, kept = _scratch(
        ctx, module, [fqn[len(module) + 1 :] for fqn in uncalled], round_number, per
    )
    if kept is not None:
        did.append(kept)
    carved_text = carved_module(_unique(tests)) if tests else ""
    return _merge_modules(carved_text, scratch_text), did


def _scratch(
    ctx: _Context, module: str, qualnames: list[str], round_number: int, per: int
) -> tuple[str, str | None]:
    """Tests from scratch drivers (``boundary.scratch_driver_module``) for functions no existing test
    calls: each driver call runs alone with the function's calls recorded, and what it returned or
    raised becomes the assertion. At most ``per`` per function, distinct outcomes first."""
    driver, calls = scratch_driver_module(ctx.target_source, module, qualnames)
    if driver is None:
        return "", None
    path = f"{GENERATED_TESTS_DIR}/test_testgen_scratch_{round_number}.py"
    fqns = sorted({f"{module}.{c.qualname}" for c in calls})
    observed = _run_recording(ctx, {path: driver}, [f"{path}::{c.test}" for c in calls], fqns)
    by_test = {node_id_name(t.test_id): t for t in observed.tests}
    chosen: dict[str, list[tuple[str, set[str]]]] = {}
    seen: dict[str, set[str]] = {}
    spare: dict[str, list[tuple[str, set[str]]]] = {}
    imports: set[str] = set()
    for call in calls:
        result = by_test.get(call.test)
        mine = [c for c in (result.calls if result else ()) if c.fqn == f"{module}.{call.qualname}"]
        if result is None or result.outcome is not TestOutcome.PASSED or not mine:
            continue
        first = mine[0]
        literal = first.result.literal if first.result is not None else None
        name = f"test_scratch_{round_number}_" + call.test.removeprefix("test_scratch_")
        made = scratch_test(call, module, literal, first.raised, name)
        if made is None:
            continue
        code, needed = made
        outcome = f"{first.raised}|{literal}"
        target = chosen if outcome not in seen.setdefault(call.qualname, set()) else spare
        seen[call.qualname].add(outcome)
        target.setdefault(call.qualname, []).append((code, needed))
    tests: list[str] = []
    for qualname in dict.fromkeys(c.qualname for c in calls):
        picked = (chosen.get(qualname, []) + spare.get(qualname, []))[:per]
        for code, needed in picked:
            tests.append(code)
            imports.update(needed)
    summary = (
        f"called {len(fqns)} functions no test calls with literal boundary and typical arguments "
        f"({len(calls)} calls); kept {len(tests)} observed calls as tests"
    )
    if not tests:
        return "", summary
    header = '"""Tests of observed calls, generated by EQUISA testgen. Generated: do not edit."""\n\n'
    text = header + "\n".join(sorted(imports, key=lambda s: (s.startswith("from"), s))) + "\n\n\n"
    return text + "\n\n".join(tests), summary


def _observed_tests(observed: SuiteTrace, nodes: dict[str, Node], per: int, prefix: str) -> list:
    """Tests carved from driver runs: what each call returned or raised (a TypeError only says the
    driver guessed the argument types wrong, so those are left out)."""
    found = carve_tests(observed, set(nodes), nodes, max_per_member=per)
    return [
        _renamed(t, t.name.replace("test_carved_", prefix))
        for t in found
        if "pytest.raises(TypeError)" not in t.code
    ]


def _renamed(test, name: str):
    """A carved test under another name (its code's ``def`` line included)."""
    code = test.code.replace(f"def {test.name}(", f"def {name}(", 1)
    return test.model_copy(update={"name": name, "code": code})


def _unique(tests: list) -> list:
    seen_code: set[str] = set()
    names: set[str] = set()
    kept = []
    for test in tests:
        body = test.code.split("\n", 1)[1] if "\n" in test.code else test.code
        if body in seen_code or test.name in names:
            continue
        seen_code.add(body)
        names.add(test.name)
        kept.append(test)
    return kept


def _merge_modules(first: str, second: str) -> str:
    """Two carved modules as one (imports merged, later duplicates of a test name dropped)."""
    if not first:
        return second
    if not second:
        return first
    import ast

    def parts(source: str) -> tuple[list[str], list[str], dict[str, str]]:
        tree = ast.parse(source)
        imports = [ast.unparse(n) for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
        helpers = [
            ast.get_source_segment(source, n) or ""
            for n in tree.body
            if isinstance(n, ast.FunctionDef) and not n.name.startswith("test")
        ]
        tests = {
            n.name: ast.get_source_segment(source, n) or ""
            for n in tree.body
            if isinstance(n, ast.FunctionDef) and n.name.startswith("test")
        }
        return imports, helpers, tests

    imports_a, helpers_a, tests_a = parts(first)
    imports_b, _, tests_b = parts(second)
    imports = list(dict.fromkeys(imports_a + imports_b))
    bodies = set(tests_a.values())
    tests = dict(tests_a)
    for name, code in tests_b.items():
        if name not in tests and code.split("\n", 1)[-1] not in {b.split("\n", 1)[-1] for b in bodies}:
            tests[name] = code
    header = (
        '"""Tests generated by EQUISA testgen (carved and boundary-value tests). Generated: do not edit."""\n'
    )
    merged = (
        "\n\n\n".join(
            [
                header + "\n".join(sorted(imports, key=lambda s: (s.startswith("from"), s))),
                *helpers_a,
                *tests.values(),
            ]
        )
        + "\n"
    )
    ast.parse(merged)
    return merged


# --- §8 pipeline ----------------------------------------------------------------------------------


def _pipeline(
    ctx: _Context, store: TestStore, source: str, notes: PipelineNotes, calls: list, known: set[str]
) -> str:
    """Similarity, then smells with a bounded fix loop (seed 000 §8). Tests whose text is in
    ``known`` (kept from the previous attempt, already in the store) are not checked for redundancy."""
    tests = {name: code for name, code in list_tests(source).items() if code not in known}
    if not tests:
        return source
    config = ctx.config if ctx.use_llm else None
    vectors, notes.embeddings, problem = embed_texts(list(tests.values()), config)  # type: ignore[arg-type]
    if problem:
        notes.redundant.append(problem)
    redundant: list[tuple[str, str, float]] = []
    for name, vector in zip(tests, vectors, strict=True):
        similar = store.most_similar(vector, 1)
        threshold = REDUNDANCY_THRESHOLD["local" if notes.embeddings == "local" else "endpoint"]
        if similar and similar[0][2] >= threshold:
            redundant.append((name, similar[0][1], similar[0][2]))
    if redundant:
        if ctx.use_llm:
            for name, similar_code, score in redundant[:3]:
                uncovered = ctx.baseline.missing_lines if ctx.baseline else ()
                text = _ask(
                    ctx,
                    render_redundant_rewrite(
                        ctx.target, ctx.target_source, uncovered, similar_code, tests[name], score
                    ),
                    "testgen-redundant",
                    calls,
                )
                notes.redundant.append(
                    f"{name}: similarity {score:.3f}; "
                    + ("rewritten by the model" if text else "kept (no answer)")
                )
                if text:
                    try:
                        rewritten = clean_generated_module(text)
                        source = keep_tests(source, [t for t in list_tests(source) if t != name])
                        source = _append_tests(source, rewritten, suffix=f"_r{len(notes.redundant)}")
                    except EquisaError as error:
                        notes.redundant[-1] += (
                            f" (unusable rewrite: {error.args[0] if error.args else error})"
                        )
        else:
            drop = {name for name, _, _ in redundant}
            notes.redundant += [
                f"{n}: similarity {s:.3f} to an existing test; dropped" for n, _, s in redundant
            ]
            remaining = [t for t in list_tests(source) if t not in drop]
            source = keep_tests(source, remaining) if remaining else source
    for _ in range(ctx.params.improvement_budget + 1):
        smells = detect_smells(source)
        critic: list[str] = []
        if ctx.use_llm:
            answer = _ask(ctx, render_smell_critic(source), "testgen-smell-critic", calls)
            if answer and answer.strip().upper() != "NO SMELLS":
                critic = [line.strip() for line in answer.strip().splitlines() if line.strip()][:10]
                notes.critic += critic
        found = [f"{s.test}: {s.kind}" for s in smells] + critic
        if not found:
            break
        if notes.smell_rounds == 0:
            notes.smells_found = found
        if notes.smell_rounds >= ctx.params.improvement_budget:
            break
        notes.smell_rounds += 1
        before = source
        if ctx.use_llm:
            text = _ask(ctx, render_smell_fix(source, found), "testgen-smell-fix", calls)
            if text:
                try:
                    source = clean_generated_module(text)
                    notes.smells_fixed.append(f"round {notes.smell_rounds}: the model rewrote the module")
                except EquisaError:
                    pass
        if source == before:
            source, done = fix_smells(source, smells)
            notes.smells_fixed += done
        if source == before:
            break
    return source


def _append_tests(source: str, extra: str, suffix: str) -> str:
    """``source`` plus ``extra``'s imports and tests (renamed with ``suffix`` on a clash)."""
    existing = list_tests(source)
    import ast

    tree = ast.parse(extra)
    lines = []
    imports = [ast.unparse(n) for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in existing:
            node.name += suffix
        lines.append(ast.unparse(node))
    head = "\n".join(i for i in imports if i not in source)
    return (head + "\n" if head else "") + source.rstrip() + "\n\n\n" + "\n\n\n".join(lines) + "\n"


def _add_to_store(
    ctx: _Context, store: TestStore, source: str, coverage: CoverageResult, notes: PipelineNotes
) -> None:
    passed = {node_id_name(t.test_id) for t in coverage.trace.tests if t.outcome is TestOutcome.PASSED}
    items = [
        (f"{ctx.module_path}::{name}", code) for name, code in list_tests(source).items() if name in passed
    ]
    vectors, _, _ = embed_texts([c for _, c in items], ctx.config if ctx.use_llm else None)  # type: ignore[arg-type]
    store.add("generated", items, vectors)
    notes.added_to_store = len(items)


# --- measuring one attempt ------------------------------------------------------------------------


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


def _evaluate(
    ctx: _Context,
    attempt: int,
    origin: str,
    source: str,
    notes: PipelineNotes,
    calls: list,
    deterministic: list[str],
    previous: Critique | None,
) -> tuple[AttemptReport, str, CoverageResult | None]:
    """Static analysis -> pre-reliability -> runner -> post-reliability -> supervisor -> router."""
    params = ctx.params
    attempt_dir = ctx.out / f"attempt_{attempt}"
    attempt_dir.mkdir(parents=True, exist_ok=True)
    module_file = attempt_dir / Path(ctx.module_path).name
    entropies = [
        c.mean_entropy
        for c in calls
        if getattr(c, "mean_entropy", None) is not None
        and getattr(c, "purpose", "") in ("testgen-generator", "testgen-enhancer")
    ]
    entropy = entropies[-1] if entropies else None
    static = (
        analyse_test_module(source, str(ctx.prepared.workspace.root))
        if source
        else StaticReport(syntax_ok=True, tools=(), test_count=0)
    )
    pre = pre_execution_level(
        static, entropy, observed_oracle=not ctx.use_llm or origin.startswith("deterministic")
    )
    coverage: CoverageResult | None = None
    mutation: MutationResult | None = None
    runner_error: str | None = None
    critical: str | None = None
    if source and static.syntax_ok and static.test_count:
        overlay = {ctx.module_path: source}
        try:
            coverage = _measure(ctx, overlay, [ctx.module_path])
        except NoTestsCollectedError as error:
            runner_error = error.args[0]
        except EquisaError as error:
            runner_error = error.args[0] if error.args else type(error).__name__
        if coverage is not None and not ctx.use_llm:
            failing = [t for t in coverage.trace.tests if t.outcome is not TestOutcome.PASSED]
            if failing:  # carved tests assert observed behaviour: one that fails is not deterministic
                keep = [
                    node_id_name(t.test_id) for t in coverage.trace.tests if t.outcome is TestOutcome.PASSED
                ]
                notes.dropped += [
                    f"{node_id_name(t.test_id)}: {t.outcome.value} on the code it was observed on"
                    for t in failing
                ]
                source = keep_tests(source, keep)
                overlay = {ctx.module_path: source}
                coverage = _measure(ctx, overlay, [ctx.module_path]) if keep else None
        if coverage is not None:
            if coverage.error:
                runner_error = coverage.error
            elif coverage.trace.collect_errors:
                runner_error = (
                    f"collection error: {coverage.trace.collect_errors[0].message.splitlines()[-1][:200]}"
                )
            else:
                mutation = _mutation(ctx, overlay, coverage)
    module_file.write_text(source, encoding="utf-8")
    trace_tests = coverage.trace.tests if coverage else ()
    passed = sum(1 for t in trace_tests if t.outcome is TestOutcome.PASSED)
    metrics = RunnerMetrics(
        success=bool(coverage) and runner_error is None,
        tests_collected=len(trace_tests),
        tests_passed=passed,
        coverage=coverage.percent if coverage else 0.0,
        mutation_score=mutation.score if mutation else None,
        missing_lines=coverage.missing_lines
        if coverage
        else (ctx.baseline.missing_lines if ctx.baseline else ()),
        test_error=runner_error,
    )
    if not source and attempt == 0 and not ctx.use_llm:
        critical = "the deterministic generator found nothing to generate: " + "; ".join(deterministic[-1:])
    post = post_execution_level(
        syntax_ok=static.syntax_ok,
        runner_error=runner_error,
        tests_run=len(trace_tests),
        tests_passed=passed,
        coverage=metrics.coverage,
        coverage_target=params.coverage_target,
        mutation_score=metrics.mutation_score,
        mutation_target=params.mutation_target,
    )
    critique = supervise(
        metrics,
        static,
        pre,
        post,
        coverage_target=params.coverage_target,
        mutation_target=params.mutation_target,
        previous=previous,
        critical_error=critical,
    )
    decision, reason = decide(critique, attempt + 1, params.max_iterations)
    statuses: dict[str, int] = {}
    for verdict in mutation.verdicts if mutation else ():
        statuses[verdict.status] = statuses.get(verdict.status, 0) + 1
    survivors = [
        f"{v.fqn} {v.description}"
        for v in (mutation.verdicts if mutation else ())
        if v.status in ("survived", "not_covered")
    ]
    entry = AttemptReport(
        attempt=attempt,
        origin=origin,
        module=str(module_file),
        tests=list(list_tests(source)),
        tests_passed=passed,
        static=static,
        pre_reliability=pre,
        coverage=_figures(coverage) if coverage else None,
        combined_coverage=_combined(ctx.baseline, coverage) if coverage else None,
        mutation_score=metrics.mutation_score,
        mutants=statuses,
        surviving_mutants=survivors[:20],
        post_reliability=post,
        critique=critique,
        decision=decision,
        decision_reason=reason,
        pipeline=notes,
        deterministic=deterministic,
        cost_usd=_spent(calls),
        llm_calls=len(calls),
        cached_llm_calls=sum(1 for c in calls if getattr(c, "cached", False)),
        mean_entropy=entropy,
    )
    (attempt_dir / "attempt.json").write_text(
        json.dumps(entry.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8"
    )
    return entry, source, coverage

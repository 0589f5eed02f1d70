"""The step runners of the testgen loop: one function per kind of step the state machine
(``equisa_core.testgen.machine``) asks for, each taking the run's context, the similarity store and
the step, and returning the step's observation with the model calls it made and the problems it met.

- ``generate`` (attempt 0) and ``enhance`` (attempt 1+): the model's module (LLM mode), or the
  deterministic generator's carved, boundary-value and scratch-driver tests;
- ``dedupe`` and ``fix_smells``: the seed 000 §8 redundancy check and smell fixes;
- ``analyse``: static analysis; ``measure_step``: branch coverage in the sandbox;
  ``run_mutants``: the mutation score; ``store_tests``: the passing tests join the store.

``run_step`` runs a step with its runner and adds the time it took.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from equisa_core.errors import BudgetSpentError, EquisaError
from equisa_core.testgen.assembly import merge_modules
from equisa_core.testgen.curation import (
    REDUNDANCY_THRESHOLD,
    ModelUse,
    drop_redundant,
    find_redundant,
    improve_smells,
    rewrite_redundant,
)
from equisa_core.testgen.machine import (
    Analyse,
    Analysed,
    Dedupe,
    Deduped,
    Enhance,
    FixSmells,
    Generate,
    Generated,
    Measure,
    Measured,
    MutantsScored,
    RunMutants,
    SmellsFixed,
    Store,
    Stored,
    TestgenStep,
    TestRun,
)
from equisa_core.testgen.prompts import render_enhancer
from tasks.testgen.analysis import analyse_test_module
from tasks.testgen.context import TestgenContext, embedding_config, stage
from tasks.testgen.generation import DeterministicPlan, Recorder, deterministic_tests
from tasks.testgen.measure import (
    GENERATED_TESTS_HASH_SEEDS,
    hash_seed_failures,
    measure,
    measurement,
    scored_mutants,
)
from tasks.testgen.model import ask, asker, generator_prompt, usable
from tasks.testgen.test_store import TestStore, embed_texts

__all__ = [
    "analyse",
    "dedupe",
    "enhance",
    "fix_smells",
    "generate",
    "measure_step",
    "run_mutants",
    "run_step",
    "store_tests",
]


def generate(ctx: TestgenContext, store: TestStore, step: Generate) -> Generated:
    """Attempt 0: the generator (LLM), or carved, boundary and scratch tests (deterministic); the
    deterministic tests too when the model gives no usable module."""
    how = "the model" if step.strategy == "model" else "carved, boundary-value and scratch-driver tests"
    stage(ctx, f"attempt 0 (at most {ctx.params.max_attempts} in all): generating ({how})")
    use = ModelUse()
    if step.strategy == "model":
        reply = usable(ask(ctx, generator_prompt(ctx, store), "testgen-generator"), "generator")
        if reply.text is not None:
            return _generated(ctx, 0, "generator", reply.text, [], reply)
        fallback = "the generator gave no usable module; attempt 0 falls back to deterministic tests"
        use = use.plus(reply).plus(ModelUse(problems=(fallback,)))
    source, did = _deterministic(ctx, round_number=0, focus_lines=())
    origin = "deterministic: carved, boundary-value and scratch-driver tests"
    return _generated(ctx, 0, origin, source, did, use)


def _generated(
    ctx: TestgenContext, attempt: int, origin: str, source: str, did: list[str], use: ModelUse
) -> Generated:
    """The generate or enhance step's observation (the spinner moves on to the next steps)."""
    stage(ctx, f"attempt {attempt}: similarity, smells, then coverage and mutants in the sandbox")
    return Generated(
        origin=origin, source=source, deterministic=tuple(did), calls=use.calls, problems=use.problems
    )


def enhance(ctx: TestgenContext, store: TestStore, step: Enhance) -> Generated:
    """Attempt 1+: the enhancer (LLM), or a wider deterministic boundary search that also looks for
    inputs telling the surviving mutants from the original."""
    del store
    stage(ctx, f"attempt {step.attempt} (at most {ctx.params.max_attempts} in all): enhancing")
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
        reply = usable(ask(ctx, messages, "testgen-enhancer"), "enhancer")
        if reply.text is not None:
            return _generated(ctx, step.attempt, "enhancer", reply.text, [], reply)
        kept = "enhancer (no usable answer: previous module kept)"
        return _generated(ctx, step.attempt, kept, step.source, [], reply)
    extra, did = _deterministic(ctx, round_number=step.attempt, focus_lines=step.missing_lines)
    merged = merge_modules(step.source, extra)
    return _generated(ctx, step.attempt, "deterministic: wider boundary search", merged, did, ModelUse())


def _deterministic(
    ctx: TestgenContext, round_number: int, focus_lines: Sequence[int]
) -> tuple[str, list[str]]:
    """The deterministic generator's module and what it did (``tasks.testgen.generation``)."""
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
        search_examples=params.input_search_examples,
        search_seconds=params.input_search_seconds,
        crosshair=params.crosshair,
        crosshair_seconds=params.crosshair_seconds,
        survivors=ctx.survivors if round_number > 0 else (),
    )
    return deterministic_tests(recorder, plan, round_number, focus_lines)


def dedupe(ctx: TestgenContext, store: TestStore, step: Dedupe) -> Deduped:
    """§8 redundancy: each new test against its nearest stored test; the redundant ones rewritten by
    the model (LLM) or dropped."""
    vectors, embeddings, problem = embed_texts(list(step.tests.values()), embedding_config(ctx))
    notes = step.notes.model_copy(
        update={
            "embeddings": embeddings,
            "redundant": [*step.notes.redundant, *([problem] if problem else [])],
        }
    )
    nearest = [(found[0][1], found[0][2]) if (found := store.most_similar(v, 1)) else None for v in vectors]
    threshold = REDUNDANCY_THRESHOLD["local" if embeddings == "local" else "endpoint"]
    redundant = find_redundant(list(step.tests), nearest, threshold)
    source, use = step.source, ModelUse()
    if redundant and ctx.use_llm:
        uncovered = ctx.baseline.missing_lines if ctx.baseline else ()
        source, notes, use = rewrite_redundant(
            source,
            step.tests,
            redundant,
            notes,
            lambda messages, purpose: ask(ctx, messages, purpose),
            target=ctx.target,
            target_source=ctx.target_source,
            uncovered=uncovered,
        )
    elif redundant:
        source, notes = drop_redundant(source, redundant, notes)
    return Deduped(source=source, notes=notes, calls=use.calls, problems=use.problems)


def fix_smells(ctx: TestgenContext, store: TestStore, step: FixSmells) -> SmellsFixed:
    """§8 smells: detected (and the model's critic), fixed within the improvement budget."""
    del store
    source, notes, use = improve_smells(step.source, step.notes, step.budget, asker(ctx))
    return SmellsFixed(source=source, notes=notes, calls=use.calls, problems=use.problems)


def analyse(ctx: TestgenContext, store: TestStore, step: Analyse) -> Analysed:
    """Static analysis of the module (syntax, ruff, mypy where configured, complexity)."""
    del store
    return Analysed(static=analyse_test_module(step.source, str(ctx.prepared.workspace.root)))


def measure_step(ctx: TestgenContext, store: TestStore, step: Measure) -> Measured:
    """Branch coverage of the module's tests in the sandbox, under other hash seeds than the one
    their values were recorded under (``GENERATED_TESTS_HASH_SEEDS``: the coverage run under the
    first; the first run of a round also runs the passing tests under the second): a test that
    depends on the seed fails, and is dropped. A runner error (first run only) observed."""
    del store
    overlay = {ctx.module_path: step.source}
    first, second = GENERATED_TESTS_HASH_SEEDS
    try:
        ctx.coverage = measure(ctx, overlay, [ctx.module_path], hash_seed=first)
        found = measurement(ctx.coverage)
        if not step.after_drop and found.passed:
            passed = [t.test_id for t in found.tests if t.passed]
            failed = set(hash_seed_failures(ctx, overlay, [ctx.module_path], passed, second))
            found = found.model_copy(update={"tests": tuple(
                TestRun(test_id=t.test_id, passed=False, outcome=f"failed under PYTHONHASHSEED={second}")
                if t.test_id in failed else t for t in found.tests)})
    except BudgetSpentError:
        raise  # cut at the run's deadline: the driver stops its loop
    except EquisaError as error:
        if step.after_drop:
            raise
        ctx.coverage = None
        return Measured(runner_error=error.args[0] if error.args else type(error).__name__)
    return Measured(measurement=found)


def run_mutants(ctx: TestgenContext, store: TestStore, step: RunMutants) -> MutantsScored:
    """The mutation score of the module's tests (the last coverage run says which test covers what);
    the survivors are kept in the context for the next round's input search."""
    del store
    assert ctx.coverage is not None, "the mutants run after a coverage run"
    scored, ctx.survivors = scored_mutants(ctx, {ctx.module_path: step.source}, ctx.coverage)
    return MutantsScored(score=scored.score, verdicts=scored.verdicts)


def store_tests(ctx: TestgenContext, store: TestStore, step: Store) -> Stored:
    """The passing tests join the similarity store."""
    vectors, _, _ = embed_texts([code for _, code in step.tests], embedding_config(ctx))
    store.add("generated", list(step.tests), vectors)
    return Stored(count=len(step.tests))


#: The runner of each kind of step.
_RUNNERS: dict[str, Callable[..., Any]] = {
    "generate": generate,
    "enhance": enhance,
    "dedupe": dedupe,
    "fix_smells": fix_smells,
    "analyse": analyse,
    "measure": measure_step,
    "run_mutants": run_mutants,
    "store": store_tests,
}


def run_step(ctx: TestgenContext, store: TestStore, step: TestgenStep) -> Any:
    """The observation of one step (its runner's, with its model calls and problems), with the time
    it took."""
    started = time.monotonic()
    observation = _RUNNERS[step.kind](ctx, store, step)
    return observation.model_copy(update={"seconds": round(time.monotonic() - started, 3)})

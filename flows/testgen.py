"""The ``testgen`` flow: the driver of the test-generation loop (seed 001 with the seed 000 §8
pipeline) for one target file.

The decisions are in the core's state machine (``equisa_core.testgen.machine``): which step comes
next (generate or enhance, the §8 redundancy check and smell fixes, static analysis, coverage,
mutants, the store), the supervisor's critique and the router's ENHANCE or FINISH, the best
module. This flow sets the run up (``tasks.testgen.setup``: the target, the framework, the baseline
coverage, the store of the repository's own tests), runs each step the machine asks for with its
runner (``tasks.testgen.steps``: the sandboxed runner, the model, the DuckDB store), feeds what it
observed back, and publishes each attempt (its module, ``attempt.json``, a progress line) and the
report (``tasks.testgen.publish``). The problems the set-up and the steps meet and the model calls
the steps make come back as values (the steps' observations); the state's ``CostLedger`` sums the
calls' cost, and the run's history gets its calls from it.

``generate_tests`` is the interface other flows can call: it takes a prepared run (the snapshot and
interpreter Discovery and Validation already have), a target file and optionally the functions to
focus on, and returns the report and the generated module (an overlay path and its text);
``tasks.testgen.setup.measure_tests`` measures any test module the same way. Discovery calls it
(deterministic, one attempt, no mutants) for tests that split ambiguity groups; since those tests
assert the code's current behaviour, they are splitting evidence only
(``equisa_core.validation.generated_tests``: Validation never counts them as regressions).
Validation calls it in LLM mode with ``specification`` (the failing tests' sources: the intended
behaviour) for novel-input tests, the model being the oracle.
"""

from __future__ import annotations

from prefect import flow

from equisa_core.testgen.machine import TestgenState, initial_state, next_steps, record
from equisa_core.testgen.report import TestgenReport
from tasks.run.parameters import TestgenParameters
from tasks.run.prepared_run import PreparedRun, prepare_run
from tasks.storage.record import failures_recorded, record_finished_run
from tasks.testgen.context import TestgenContext
from tasks.testgen.measure import mutation
from tasks.testgen.publish import GeneratedTests, publish_attempt, publish_outputs
from tasks.testgen.setup import baseline, build_context, machine_setup, seed_store, start_report
from tasks.testgen.steps import run_step
from tasks.testgen.test_store import TestStore

__all__ = ["generate_tests", "testgen"]


@flow(name="testgen", flow_run_name="testgen {params.target}", log_prints=True)
def testgen(params: TestgenParameters) -> TestgenReport:
    """Generate tests for one file of a repository (seed 001 loop, seed 000 §8 pipeline)."""
    with failures_recorded("testgen", params.path, params.artifacts, params.db):
        prepared = prepare_run(params)
        made = generate_tests(prepared, params)
    return record_finished_run("testgen", made.report, str(prepared.repo), params.artifacts, params.db,
                               calls=made.ledger.paid_calls)


def generate_tests(prepared: PreparedRun, params: TestgenParameters) -> GeneratedTests:
    """Run the loop on a prepared run: the interface the CLI uses and other flows can call (with
    ``params.focus`` naming the functions to test, e.g. an ambiguity group or a patched function)."""
    ctx, problems = build_context(prepared, params)
    ctx.baseline, found = baseline(ctx)
    problems += found
    report = start_report(ctx, problems)
    if ctx.baseline is not None and params.measure_baseline_mutation:
        report.baseline_mutation_score = mutation(ctx, {}, ctx.baseline).score
    (ctx.out / "tests.duckdb").unlink(missing_ok=True)  # the store belongs to this run
    store = TestStore(ctx.out / "tests.duckdb")
    try:
        problems += seed_store(store, ctx)
        state = _drive(ctx, store, initial_state(machine_setup(ctx), problems))
    finally:
        store.close()
    report.attempts = list(state.attempts)
    report.stopped_because = state.stopped_because
    report.problems = list(state.problems)
    report.cost_usd = state.cost_usd
    path = source = None
    if state.best_attempt is not None:
        report.best_attempt = state.best_attempt
        path, source = ctx.module_path, state.best_source
    publish_outputs(ctx, state, report)
    return GeneratedTests(report=report, path=path, source=source, ledger=state.ledger)


# --- the driver -----------------------------------------------------------------------------------


def _drive(ctx: TestgenContext, store: TestStore, state: TestgenState) -> TestgenState:
    """Run the steps the machine asks for, one after the other, until it gives a verdict."""
    while steps := next_steps(state):
        for step in steps:
            done = len(state.attempts)
            state = record(state, run_step(ctx, store, step))
            if len(state.attempts) > done:
                publish_attempt(ctx, state)
    return state

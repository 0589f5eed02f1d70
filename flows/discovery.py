"""The ``discovery`` flow (Loop 1, seed 000 §4): trace the suite, then split ambiguity groups.

A driver: the decisions (which groups, which tests to keep, when to stop) are the state machine's
in ``equisa_core.discovery.machine``; this flow runs its steps and feeds it what they observed. The
suite is traced (``run_suite``); while ``groups_to_split`` names groups and the budget lasts, one
round:

1. records the calls of the groups' members over the fastest few tests that run each of them
   (a ``run-tests`` task with ``record``; ``tasks.discovery.proposals``);
2. generates disambiguating tests per group: carved from those recordings (always), written by
   the model (LLM mode), and made by the test-generation agent (``flows.testgen.generate_tests``,
   deterministic, one attempt, no mutants; one call per source file holding group members, focused
   on those members; ``testgen=False`` turns it off);
3. checks them in a sandbox (they must import and run; carved and testgen ones must pass, since
   they assert what the code did; a model's test may fail on an assertion, which is evidence, but
   not error);
4. keeps the good ones as modules under ``tests/equisa_generated`` of the workspace copy (an
   overlay: the user's tree is never written) and merges their traced results into the suite's
   trace, which is the same as re-tracing the amplified suite, since the old tests did not change.

The result carries the amplified trace and the overlay that holds the generated tests, so every
later run (inspections, validation) sees them. Testgen's tests assert the program's current
behaviour, so they may pin the bug: they are splitting evidence only, and Validation does not count
their failures (``equisa_core.validation.generated_tests``).
"""

from __future__ import annotations

from prefect import flow
from prefect.artifacts import create_progress_artifact, update_progress_artifact

from equisa_core.discovery import machine
from equisa_core.discovery.rules import DiscoveryRound, group_sizes
from equisa_core.localization.prior import node_signals, prior_scores
from tasks.discovery.proposals import check_tests, propose_tests, testgen_call
from tasks.discovery.suite import DiscoveryResult, as_traced, groups_of, merged, start_state, traced
from tasks.llm import choose_llm_mode
from tasks.operations.progress_events import not_listening
from tasks.operations.task_runners import FanOutTaskRunner
from tasks.run.parameters import DiscoveryParameters, TestgenParameters
from tasks.run.prepared_run import PreparedRun
from tasks.testgen.publish import GeneratedTests

__all__ = ["discovery", "discover"]


@flow(name="discovery", flow_run_name="discover {params.path}", log_prints=True,
      task_runner=FanOutTaskRunner())
def discovery(params: DiscoveryParameters) -> DiscoveryResult:
    """Trace a repository's suite and add tests that split its ambiguity groups.

    A driver: ``equisa_core.discovery.machine`` decides which groups to split, which tests to keep
    and when to stop.
    """
    return discover(params)


def discover(params: DiscoveryParameters, suite: DiscoveryResult | None = None) -> DiscoveryResult:
    """The body of ``discovery``, inside whichever flow run calls it. ``suite``: the suite as the
    caller traced it already (the localize flow, after its screening; its flaky tests marked), so
    neither the snapshot, the interpreter check nor the trace's cache lookups are made again, and
    no child flow run is created (as a child flow, 0.2-0.45 s passed between Discovery's start and
    its first sandboxed run on three real bugs); None: trace it."""
    if suite is None:
        traced_suite, before = traced(params)
    else:
        traced_suite = as_traced(suite, suite.trace, params)
        before = groups_of(suite.trace, suite.prepared)
    prepared, trace, report = traced_suite.prepared, traced_suite.trace, traced_suite.report
    use_llm, config, problems = choose_llm_mode(params) if params.discovery else (False, None, [])
    state = start_state(params, trace, before, problems, use_llm)
    if (stopped := machine.verdict(state)) is not None:
        return traced_suite.model_copy(update={"report": report.model_copy(
            update={"stopped_because": stopped.reason})})
    progress = create_progress_artifact(0.0, key="discovery-progress",
                                        description="Discovery: rounds done / round budget (%)")
    groups, checked = before, None
    while steps := machine.next_steps(state):
        step, rounds = steps[0], len(state.rounds)
        match step:
            case machine.ScoreSuite():
                if step.add and checked is not None:
                    trace = merged(trace, checked, step.add)
                    groups = groups_of(trace, prepared)
                observation: machine.DiscoveryObservation = machine.Scored(
                    groups=tuple(tuple(sorted(g)) for g in groups), prior=prior_scores(node_signals(trace)))
            case machine.ProposeTests():
                observation = propose_tests(prepared, params, trace, step, use_llm, config,
                                            testgen_call(params, _generate_tests))
            case machine.CheckTests():
                observation, checked = check_tests(prepared, params, step)
        state = machine.record(state, observation)
        if len(state.rounds) > rounds:
            _announce(state.rounds[-1], params.testgen)
            update_progress_artifact(progress, 100.0 * len(state.rounds) / max(1, params.discovery_rounds))
    update_progress_artifact(progress, 100.0)
    stopped = machine.verdict(state)
    assert stopped is not None, "the Discovery loop ended without a verdict"
    report = report.model_copy(update={
        "rounds": state.rounds, "generated": len(state.kept), "files": tuple(sorted(state.overlay)),
        "tests": state.kept, "group_sizes_after": tuple(group_sizes([frozenset(g) for g in state.groups])),
        "stopped_because": stopped.reason,
    })
    return DiscoveryResult(prepared=prepared, trace=trace, overlay=dict(state.overlay), report=report,
                           ledger=state.ledger, problems=(*traced_suite.problems, *state.problems))


def _announce(done: DiscoveryRound, testgen: bool) -> None:
    print(f"discovery round {done.round}: {len(done.groups)} group(s), kept {done.kept} test(s)"
          + (f" (testgen: {done.testgen_kept} of {done.testgen_proposed} kept)" if testgen else ""))


def _generate_tests(prepared: PreparedRun, params: TestgenParameters) -> GeneratedTests:
    """``flows.testgen.generate_tests``, imported when Discovery first calls it; its progress is not
    shown (Discovery's own spinner stays as it is)."""
    from flows.testgen import generate_tests

    with not_listening():
        return generate_tests(prepared, params)

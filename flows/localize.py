"""The ``localize`` flow: Discovery's trace, then the Localization loop until one node reaches 0.9.

Control flow only. Each iteration selects the most confident valid node (seed 002 §5), writes an
inspection patch (LLM, or heartbeat plus invariants mined from recorded passing executions), runs
the node's tests with the patch as an overlay in a sandbox (a cached ``run-tests`` task), reads the
signals, reflects (the Golden Rule on the tracebacks first; the model only when that is
undecided), and updates every confidence. It stops at convergence or when the iteration, cost or
time budget runs out, which is reported as not converged with the ranking so far.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from prefect import flow
from prefect.artifacts import create_progress_artifact, create_table_artifact, update_progress_artifact
from pydantic import BaseModel, Field

from equisa_core.bayes import (
    CONFIDENCE_THRESHOLD,
    LLM_BUGGY,
    LLM_NOT_BUGGY,
    Outcome,
    initial_confidence,
)
from equisa_core.errors import NothingToLocalizeError
from equisa_core.localization import InspectionRecord, LocalizationReport, TestCounts, apply_observation, rank
from equisa_core.models import Node, RecordedCall, SuiteTrace, TestOutcome
from equisa_core.reflection import reflect
from equisa_core.selection import is_test_file, is_valid_node, select_node, tests_for_node
from equisa_core.signals import Signals
from equisa_core.trace_report import build_trace_report
from flows.trace import PreparedRun, TraceParameters, prepare_run, run_suite
from tasks.inspection import deterministic_inspection, observe, overlay_for, read_function
from tasks.run_tests import run_tests

__all__ = ["LocalizeParameters", "localize"]


class LocalizeParameters(TraceParameters):
    """Parameters of one localization run (those of ``trace-suite`` plus the loop's budgets)."""

    llm: bool | None = Field(None, description="Use the model; None: when an endpoint is configured.")
    max_iterations: int = Field(12, ge=1, description="Inspections before giving up.")
    max_cost_usd: float = Field(2.0, ge=0, description="LLM spend before giving up.")
    max_seconds: float = Field(1800.0, gt=0, description="Wall time before giving up.")
    record_top: int = Field(15, ge=1, description="Candidates whose passing executions are recorded.")
    max_tests_per_inspection: int = Field(40, ge=1, description="Tests run per inspection.")


@flow(name="localize", flow_run_name="localize {params.path}", log_prints=True)
def localize(params: LocalizeParameters) -> LocalizationReport:
    """Find the buggy function of a repository whose tests fail."""
    started = time.monotonic()
    prepared = prepare_run(params)
    trace = run_suite(prepared, params)
    scored = build_trace_report(trace, str(prepared.repo))
    if not trace.failed_tests():
        raise NothingToLocalizeError(
            "nothing to localize: no test fails"
            + (f" ({len(trace.flaky)} flaky tests left out)" if trace.flaky else "")
        )
    nodes = {n.fqn: Node(fqn=n.fqn, file=n.file, start_line=n.start_line, end_line=n.end_line)
             for n in scored.nodes}
    suspiciousness = {n.fqn: n.tarantula for n in scored.nodes}
    confidences = initial_confidence(suspiciousness)
    use_llm, config, problems = _llm_mode(params)
    calls = _record_candidates(prepared, params, trace, confidences, nodes)
    progress = create_progress_artifact(0.0, key="localization-progress",
                                        description="Inspections done / iteration budget")
    history: list[InspectionRecord] = []
    stopped = "iteration budget spent"
    cost_usd = 0.0
    for iteration in range(1, params.max_iterations + 1):
        target = select_node(confidences, nodes, exclude=_done(history))
        if target is None:
            stopped = "every inspectable candidate was inspected"
            break
        seen = _inspect(target, nodes[target], prepared, params, trace, calls.get(target, []),
                        use_llm, config, problems)
        cost_usd += seen.cost_usd
        prior = confidences[target]
        outcome, confidences, converged = apply_observation(confidences, target, seen.signals, seen.decision)
        history.append(InspectionRecord(
            iteration=iteration, target=target, strategy=seen.strategy, tests_run=seen.tests_run,
            signals=seen.signals, reflection=seen.decision, reflection_by=seen.decision_by,
            reasoning=seen.reasoning, outcome=outcome, prior=prior, posterior=confidences[target],
            invariants=seen.invariants,
        ))
        update_progress_artifact(progress, iteration / params.max_iterations)
        print(f"[{iteration}] {target}: {outcome.value} -> {confidences[target]:.3f}")
        if converged:
            stopped = f"{converged} reached {CONFIDENCE_THRESHOLD}"
            break
        if cost_usd > params.max_cost_usd:
            stopped = f"LLM cost budget (${params.max_cost_usd:g}) spent"
            break
        if time.monotonic() - started > params.max_seconds:
            stopped = f"time budget ({params.max_seconds:g}s) spent"
            break
    update_progress_artifact(progress, 1.0)
    locations = {f: (n.file, n.start_line, n.end_line) for f, n in nodes.items()}
    ranking = rank(confidences, suspiciousness, locations)
    report = LocalizationReport(
        mode="llm" if use_llm else "deterministic",
        converged=bool(ranking) and ranking[0].confidence >= CONFIDENCE_THRESHOLD,
        stopped_because=stopped,
        ranking=tuple(ranking),
        ambiguity_groups=scored.ambiguity_groups,
        inspections=tuple(history),
        tests=TestCounts(passed=scored.summary.passed, failed=scored.summary.failed + scored.summary.error,
                         flaky=len(trace.flaky), generated=0),
        cost={"usd": round(cost_usd, 6)},
        problems=tuple(problems),
    )
    create_table_artifact(
        table=[r.model_dump() for r in ranking[:10]], key="localization-ranking",
        description=f"{report.mode} localization: {'converged' if report.converged else 'not converged'}"
                    f" ({stopped})",
    )
    return report


#: Seed 002 §5.2 keeps picking the most confident node, so a node whose own assertion failed is
#: inspected again and the evidence counted again, which is how the seed reaches 0.9; any other
#: outcome would only repeat itself (runs and answers are cached), so the node is then done.
MAX_INSPECTIONS_PER_NODE = 3


def _done(history: Sequence[InspectionRecord]) -> set[str]:
    """Nodes not to inspect again (see ``MAX_INSPECTIONS_PER_NODE``)."""
    last: dict[str, InspectionRecord] = {}
    count: dict[str, int] = {}
    for record in history:
        last[record.target] = record
        count[record.target] = count.get(record.target, 0) + 1
    return {
        t for t, r in last.items()
        if r.outcome is not Outcome.TARGET_ASSERTION_FAILED or count[t] >= MAX_INSPECTIONS_PER_NODE
    }


def _llm_mode(params: LocalizeParameters) -> tuple[bool, object | None, list[str]]:
    from tasks.llm import LLMConfig, llm_available

    use = llm_available() if params.llm is None else params.llm
    if not use:
        return False, None, []
    try:
        return True, LLMConfig.from_env(), []
    except Exception as error:  # an endpoint that is not usable: say so, run deterministically
        return False, None, [f"LLM mode unavailable ({error}); ran deterministically"]


def _record_candidates(
    prepared: PreparedRun, params: LocalizeParameters, trace: SuiteTrace,
    confidences: dict[str, float], nodes: dict[str, Node],
) -> dict[str, list[RecordedCall]]:
    """Record arguments and results of the top candidates over the passing tests that run them."""
    candidates = [f for f in sorted(confidences, key=lambda f: -confidences[f])
                  if is_valid_node(nodes[f]) and not is_test_file(nodes[f].file or "")][:params.record_top]
    passing = sorted({t.test_id for t in trace.tests if t.outcome is TestOutcome.PASSED
                      and t.test_id not in trace.flaky and t.covered & set(candidates)})
    if not candidates or not passing:
        return {}
    request = prepared.base.model_copy(update={"record": tuple(candidates), "only": tuple(passing),
                                               "trace": False})
    recorded: SuiteTrace = run_tests(request, backend=params.sandbox,
                                     interpreter_version=prepared.interpreter_version,
                                     docker_image=params.docker_image)
    calls: dict[str, list[RecordedCall]] = {}
    for test in recorded.tests:
        if test.outcome is TestOutcome.PASSED:
            for call in test.calls:
                calls.setdefault(call.fqn, []).append(call)
    return calls


class _Observation(BaseModel):
    """What one inspection saw, before the Bayesian update."""

    strategy: str
    invariants: int
    tests_run: tuple[str, ...]
    signals: Signals
    decision: str | None
    decision_by: str
    reasoning: str
    cost_usd: float


def _inspect(target: str, node: Node, prepared: PreparedRun, params: LocalizeParameters, trace: SuiteTrace,
             calls: Sequence[RecordedCall], use_llm: bool, config: object | None,
             problems: list[str]) -> _Observation:
    """One inspection: patch, run in a sandbox, signals, reflection."""
    root = prepared.workspace.root
    _, source = read_function(root, node)
    spent = 0.0
    strategy, invariants = "deterministic", 0
    patch = None
    if use_llm and config is not None:
        patch, spent = _llm_inspection_patch(config, target, source, problems)
        strategy = "llm" if patch else "deterministic"
    if patch is None:
        patch, invariants = deterministic_inspection(source, node, calls)
    overlay, moved = overlay_for(root, node, patch)
    selection = tests_for_node(target, trace, max_tests=params.max_tests_per_inspection)
    request = prepared.base.model_copy(update={
        "overlay": overlay, "only": selection.test_ids or None, "trace": True})
    run: SuiteTrace = run_tests(request, backend=params.sandbox,
                                interpreter_version=prepared.interpreter_version,
                                docker_image=params.docker_image)
    signals = observe(moved, run)
    reflection = reflect(moved, run.tests)
    decision, by, reasoning = reflection.decision, "traceback", reflection.reasoning
    if decision is None and use_llm and config is not None and signals.is_failure:
        label, text, cost = _llm_reflection(config, target, source, patch, run, problems)
        spent += cost
        if label is not None:
            decision, by, reasoning = label, "llm", text
    return _Observation(
        strategy=strategy, invariants=invariants, tests_run=tuple(t.test_id for t in run.tests),
        signals=signals, decision=decision, decision_by=by, reasoning=reasoning, cost_usd=spent,
    )


def _llm_inspection_patch(
    config: object, target: str, source: str, problems: list[str]
) -> tuple[str | None, float]:
    from equisa_core.prompts.localization import render_inspection_patch
    from tasks.llm import LLMError, ask_for_function

    qualname = target.rsplit(".", 1)[-1]
    try:
        answer = ask_for_function(config, render_inspection_patch(target, source), source,  # type: ignore[arg-type]
                                  _source_qualname(source, qualname), "inspection-patch")
    except LLMError as error:
        problems.append(f"inspection patch for {target}: {error.message}; used the deterministic one")
        return None, sum(c.cost_usd or 0.0 for c in getattr(error, "calls", ()))
    return answer.source, sum(c.cost_usd or 0.0 for c in answer.calls)


def _source_qualname(source: str, fallback: str) -> str:
    import ast

    first = ast.parse(source).body[0]
    return getattr(first, "name", fallback)


def _llm_reflection(config: object, target: str, source: str, patch: str, run: SuiteTrace,
                    problems: list[str]) -> tuple[str | None, str, float]:
    from equisa_core.llm_text import parse_reflection_label
    from equisa_core.prompts.localization import render_reflection
    from tasks.llm import LLMError, call_llm

    failing = [t for t in run.tests if t.outcome in (TestOutcome.FAILED, TestOutcome.ERROR)]
    result = "\n\n".join(
        f"Test: {t.test_id}\nException: {t.exception_type}: {t.message}\nTraceback:\n"
        + "\n".join(f'  File "{f.file}", line {f.line}, in {f.function}' for f in t.traceback)
        + f"\nstdout:\n{t.stdout_tail}"
        for t in failing[:3]
    )
    execution = f"Exit Code: {1 if failing else 0}\n{result}"
    try:
        answer = call_llm(config, render_reflection(target, source, patch, execution), "reflection")  # type: ignore[arg-type]
    except LLMError as error:
        problems.append(f"reflection on {target}: {error.message}; left neutral")
        return None, "", 0.0
    label = parse_reflection_label(answer.text)
    if label not in (LLM_BUGGY, LLM_NOT_BUGGY):
        problems.append(f"reflection on {target}: the model gave no label; left neutral")
        return None, answer.text, answer.call.cost_usd or 0.0
    return label, answer.text, answer.call.cost_usd or 0.0

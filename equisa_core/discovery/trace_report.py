"""The result of ``equisa trace``: a suite's trace with spectrum scores and ambiguity groups.

Pure: it takes a ``SuiteTrace`` and returns a pydantic model whose JSON is the command's output.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.models import (
    REPORT_SCHEMA_VERSION,
    CollectError,
    Edge,
    SuiteTrace,
    TestOutcome,
    TestResult,
)
from equisa_core.common.sandbox_policy import SandboxIsolation
from equisa_core.discovery.ambiguity import ambiguity_groups
from equisa_core.discovery.spectrum import score_nodes
from equisa_core.environment import SuiteEnvironment

__all__ = ["ScoredNode", "TraceSummary", "TraceReport", "build_trace_report"]

SCORED_FORMULAS = ("tarantula", "ochiai", "dstar")


class ScoredNode(BaseModel):
    """A node with its spectrum counts and scores."""

    model_config = ConfigDict(frozen=True)

    fqn: str
    file: str | None
    start_line: int | None
    end_line: int | None
    failed_s: int = Field(description="Failed tests that executed the node.")
    passed_s: int = Field(description="Passed tests that executed the node.")
    tarantula: float
    ochiai: float
    dstar: float


class TraceSummary(BaseModel):
    """Counts of tests by outcome."""

    model_config = ConfigDict(frozen=True)

    total: int
    passed: int
    failed: int
    error: int
    skipped: int


class TraceReport(BaseModel):
    """Everything ``equisa trace`` writes: per-test outcomes and coverage, edges, scores, groups."""

    model_config = ConfigDict(frozen=True)

    schema_version: str = Field(REPORT_SCHEMA_VERSION, description="The schema's version (docs/schema/).")
    repository: str
    python_version: str
    backend: str
    backend_reason: str
    summary: TraceSummary
    tests: tuple[TestResult, ...]
    nodes: tuple[ScoredNode, ...] = Field(description="Project nodes outside test code, best first.")
    edges: tuple[Edge, ...]
    ambiguity_groups: tuple[tuple[str, ...], ...]
    collect_errors: tuple[CollectError, ...] = ()
    crashed: bool = False
    crashed_in: str | None = None
    crash_reason: str | None = None
    flaky: tuple[str, ...] = Field((), description="Failed, then passed alone; left out of spectra.")
    problems: tuple[str, ...] = Field((), description="What went wrong but did not stop the run (storage).")
    run_id: str | None = Field(None, description="Flow run id the run was recorded under.")
    sandbox: SandboxIsolation | None = Field(None, description="The isolation the run's sandboxes gave.")
    environment: SuiteEnvironment | None = Field(
        None, description="The interpreter that ran the suite, and how it was chosen or built.")
    artifacts: str | None = Field(None, description="The run's folder in the artifact store.")


def build_trace_report(trace: SuiteTrace, repository: str) -> TraceReport:
    """Score every non-test node with each formula and find the ambiguity groups."""
    coverage = trace.coverage()
    failed, passed = trace.failed_tests(), trace.passed_tests()
    scores = {f: score_nodes(coverage, failed, passed, formula=f) for f in SCORED_FORMULAS}
    scored = [
        ScoredNode(
            fqn=node.fqn,
            file=node.file,
            start_line=node.start_line,
            end_line=node.end_line,
            failed_s=len(coverage[node.fqn] & failed),
            passed_s=len(coverage[node.fqn] & passed),
            **{f: scores[f][node.fqn] for f in SCORED_FORMULAS},
        )
        for node in trace.nodes
        if node.fqn in coverage
    ]
    scored.sort(key=lambda n: (-n.tarantula, -n.ochiai, n.fqn))
    outcomes = [t.outcome for t in trace.tests]
    return TraceReport(
        repository=repository,
        python_version=trace.python_version,
        backend=trace.backend,
        backend_reason=trace.backend_reason,
        summary=TraceSummary(
            total=len(outcomes),
            passed=outcomes.count(TestOutcome.PASSED),
            failed=outcomes.count(TestOutcome.FAILED),
            error=outcomes.count(TestOutcome.ERROR),
            skipped=outcomes.count(TestOutcome.SKIPPED),
        ),
        tests=trace.tests,
        nodes=tuple(scored),
        edges=trace.edges,
        ambiguity_groups=tuple(tuple(sorted(g)) for g in ambiguity_groups(coverage)),
        collect_errors=trace.collect_errors,
        crashed=trace.crashed,
        crashed_in=trace.crashed_in,
        crash_reason=trace.crash_reason,
        flaky=tuple(sorted(trace.flaky)),
    )

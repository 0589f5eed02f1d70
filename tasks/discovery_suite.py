"""The suite Discovery amplifies: its trace, the overlay of generated tests, the report of its groups.

``trace_only`` traces the suite as it is (the start of the ``discovery`` flow, and all of it
without Discovery); ``merged`` adds the checked generated tests' results to its trace.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from equisa_core.common.cost import CostLedger
from equisa_core.common.models import SuiteTrace
from equisa_core.common.trace_merge import combine
from equisa_core.discovery.rules import DiscoveryReport, group_sizes
from equisa_core.discovery.trace_report import build_trace_report
from tasks.parameters import DiscoveryParameters
from tasks.prepared_run import PreparedRun, prepare_run, run_suite

__all__ = ["DiscoveryResult", "trace_only", "traced", "as_traced", "groups_of", "merged"]


class DiscoveryResult(BaseModel):
    """The amplified suite: its trace, the overlay holding the generated tests, the report, the
    model calls Discovery made and the problems it met."""

    prepared: PreparedRun
    trace: SuiteTrace
    overlay: dict[str, str] = Field(default_factory=dict)
    report: DiscoveryReport
    ledger: CostLedger = Field(default_factory=CostLedger)
    problems: tuple[str, ...] = ()


def trace_only(params: DiscoveryParameters) -> DiscoveryResult:
    """The suite traced as it is, with its groups in the report (``stopped_because`` "turned off"
    when ``params.discovery`` is off): the start of ``discovery``, and all of it without Discovery.

    A plain function: the localize flow also calls it directly when mutant screening comes before
    Discovery, sparing a child flow run per localization (creating it and joining its heartbeat
    thread took about 0.8 s under cProfile).
    """
    return traced(params)[0]


def traced(params: DiscoveryParameters) -> tuple[DiscoveryResult, list[frozenset[str]]]:
    """``trace_only`` and the suite's ambiguity groups."""
    prepared, trace, problems = run_suite(prepare_run(params), params)
    result, groups = _described(prepared, trace, params)
    return result.model_copy(update={"problems": tuple(problems)}), groups


def as_traced(result: DiscoveryResult, trace: SuiteTrace, params: DiscoveryParameters) -> DiscoveryResult:
    """``result`` (a ``trace_only`` result) with another trace of the same run, e.g. with its flaky
    tests marked, and the report of its groups."""
    return _described(result.prepared, trace, params)[0].model_copy(update={"problems": result.problems})


def _described(prepared: PreparedRun, trace: SuiteTrace, params: DiscoveryParameters,
               ) -> tuple[DiscoveryResult, list[frozenset[str]]]:
    groups = groups_of(trace, prepared)
    sizes = tuple(group_sizes(groups))
    report = DiscoveryReport(enabled=params.discovery, testgen=params.discovery and params.testgen,
                             group_sizes_before=sizes, group_sizes_after=sizes)
    if not params.discovery:
        report = report.model_copy(update={"stopped_because": "turned off"})
    return DiscoveryResult(prepared=prepared, trace=trace, report=report), groups


def groups_of(trace: SuiteTrace, prepared: PreparedRun) -> list[frozenset[str]]:
    return [frozenset(g) for g in build_trace_report(trace, str(prepared.repo)).ambiguity_groups]


def merged(trace: SuiteTrace, checked: SuiteTrace, add: Sequence[str]) -> SuiteTrace:
    """``trace`` with the results of the checked tests ``add``: the same as re-tracing the suite with
    them, since the old tests did not change."""
    wanted = set(add)
    new_results = tuple(t for t in checked.tests if t.test_id in wanted)
    return combine([trace, checked.model_copy(update={"tests": new_results, "crashed": False})],
                   [*trace.collected, *add])

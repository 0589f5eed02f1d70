"""The suite Discovery amplifies: its trace, the overlay of generated tests, the report of its groups.

``trace_only`` traces the suite as it is (the start of the ``discovery`` flow, and all of it
without Discovery); ``merged`` adds the checked generated tests' results to its trace;
``start_state`` is the Discovery machine's state on a traced suite, and ``stopped_at_once`` the
suite as traced when Discovery would stop before it proposes a test.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from equisa_core.common.cost import CostLedger
from equisa_core.common.models import SuiteTrace
from equisa_core.common.trace_merge import combine
from equisa_core.discovery import machine
from equisa_core.discovery.rules import DiscoveryBudget, DiscoveryReport, group_sizes
from equisa_core.discovery.trace_report import build_trace_report
from equisa_core.localization.prior import node_signals, prior_scores
from tasks.llm import choose_llm_mode
from tasks.run.parameters import DiscoveryParameters
from tasks.run.prepared_run import PreparedRun, prepare_run, run_suite

__all__ = ["DiscoveryResult", "trace_only", "traced", "as_traced", "groups_of", "merged", "start_state",
           "stopped_at_once"]


class DiscoveryResult(BaseModel):
    """The amplified suite: its trace, the overlay holding the generated tests, the report, the
    model calls Discovery made and the problems it met."""

    prepared: PreparedRun
    trace: SuiteTrace
    overlay: dict[str, str] = Field(default_factory=dict)
    report: DiscoveryReport
    ledger: CostLedger = Field(default_factory=CostLedger)
    problems: tuple[str, ...] = ()


def trace_only(params: DiscoveryParameters, rerun_later: bool = False,
               serve_owner: str | None = None) -> DiscoveryResult:
    """The suite traced as it is, with its groups in the report (``stopped_because`` "turned off"
    when ``params.discovery`` is off): the start of ``discovery``, and all of it without Discovery.

    A plain function: the localize flow also calls it directly when mutant screening comes before
    Discovery, sparing a child flow run per localization (creating it and joining its heartbeat
    thread took about 0.8 s under cProfile).

    With ``rerun_later`` the failing tests the shards could not re-run apart themselves are left to
    the caller's ``submit_flaky_rerun`` (``tasks.run.prepared_run.run_suite``). ``serve_owner``: as
    ``run_suite``'s.
    """
    return traced(params, rerun_later, serve_owner)[0]


def traced(params: DiscoveryParameters, rerun_later: bool = False, serve_owner: str | None = None,
           ) -> tuple[DiscoveryResult, list[frozenset[str]]]:
    """``trace_only`` and the suite's ambiguity groups."""
    prepared, trace, problems = run_suite(prepare_run(params), params, rerun_later, serve_owner)
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


def start_state(params: DiscoveryParameters, trace: SuiteTrace, groups: Sequence[frozenset[str]],
                problems: Sequence[str] = (), use_llm: bool = False) -> machine.DiscoveryState:
    """The Discovery machine's state on the suite as traced (``trace`` and its ``groups``). A group
    is tried again in a later round only when the model or testgen proposes too (``use_llm``,
    ``params.testgen``): carving alone would propose the same tests."""
    budget = DiscoveryBudget(max_rounds=params.discovery_rounds, max_tests=params.max_generated_tests)
    return machine.initial_state(budget, params.discovery_top, [tuple(sorted(g)) for g in groups],
                                   enabled=params.discovery, failing=bool(trace.failed_tests()),
                                   problems=problems, retry_groups=use_llm or params.testgen)


def stopped_at_once(params: DiscoveryParameters, result: DiscoveryResult) -> DiscoveryResult | None:
    """``result`` (the suite as traced) with Discovery's report when Discovery would stop before it
    proposes a test (``machine.stops_at_once``), as the ``discovery`` flow reports it; None when
    Discovery has groups to split."""
    groups = groups_of(result.trace, result.prepared)
    problems = choose_llm_mode(params)[2] if params.discovery else []
    state = start_state(params, result.trace, groups, problems)
    reason = machine.stops_at_once(state, groups, prior_scores(node_signals(result.trace)))
    if reason is None:
        return None
    sizes = tuple(group_sizes(groups))
    report = result.report.model_copy(update={
        "enabled": params.discovery, "testgen": params.discovery and params.testgen,
        "group_sizes_before": sizes, "group_sizes_after": sizes, "stopped_because": reason})
    return result.model_copy(update={"report": report, "problems": (*result.problems, *problems)})

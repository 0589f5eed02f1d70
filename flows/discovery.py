"""The ``discovery`` flow (Loop 1, seed 000 §4): trace the suite, then split ambiguity groups.

A driver: the decisions (which groups, which tests to keep, when to stop) are the state machine's
in ``equisa_core.discovery.machine``; this flow runs its steps and feeds it what they observed. The
suite is traced (``run_suite``); while ``groups_to_split`` names groups and the budget lasts, one
round:

1. records the calls of the groups' members over the fastest few tests that run each of them
   (a ``run-tests`` task with ``record``);
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

import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import ClassVar

from prefect import flow
from prefect.artifacts import create_progress_artifact, update_progress_artifact
from pydantic import BaseModel, Field

from equisa_core.common.models import Node, SuiteTrace
from equisa_core.common.options import DiscoveryOptions, EndpointOptions
from equisa_core.common.source_edit import function_source
from equisa_core.common.trace_merge import combine
from equisa_core.discovery import machine
from equisa_core.discovery.rules import (
    DiscoveryBudget,
    DiscoveryReport,
    DiscoveryRound,
    group_sizes,
)
from equisa_core.discovery.trace_report import build_trace_report
from equisa_core.errors import CollectionError, EquisaError
from equisa_core.localization.prior import node_signals, prior_scores
from equisa_core.localization.selection import recording_sample
from equisa_core.testgen.carving import GENERATED_TESTS_DIR, carve_tests, carved_module, carved_module_path
from equisa_core.testgen.modules import keep_tests, list_tests
from flows.trace import PreparedRun, TraceParameters, prepare_run, run_suite
from tasks.inspection import read_function
from tasks.llm import choose_llm_mode
from tasks.run_tests import run_tests
from tasks.task_runners import FanOutTaskRunner

__all__ = ["DiscoveryParameters", "DiscoveryResult", "discovery", "focused_request", "narrowed", "trace_only",
           "as_traced"]


class DiscoveryParameters(TraceParameters, EndpointOptions, DiscoveryOptions):
    """Parameters of the Discovery loop (those of ``trace-suite``, the model switch and its budget)."""

    generated_code: ClassVar[str | None] = "generated tests, inspection patches and fixes"


class DiscoveryResult(BaseModel):
    """The amplified suite: its trace, the overlay holding the generated tests, and the report."""

    prepared: PreparedRun
    trace: SuiteTrace
    overlay: dict[str, str] = Field(default_factory=dict)
    report: DiscoveryReport
    cost_usd: float = 0.0
    problems: list[str] = Field(default_factory=list)


@flow(name="discovery", flow_run_name="discover {params.path}", log_prints=True,
      task_runner=FanOutTaskRunner())
def discovery(params: DiscoveryParameters) -> DiscoveryResult:
    """Trace a repository's suite and add tests that split its ambiguity groups.

    A driver: ``equisa_core.discovery.machine`` decides which groups to split, which tests to keep
    and when to stop.
    """
    traced, before = _traced(params)
    prepared, trace, report = traced.prepared, traced.trace, traced.report
    use_llm, config, problems = choose_llm_mode(params.llm) if params.discovery else (False, None, [])
    state = machine.start_discovery(
        DiscoveryBudget(max_rounds=params.discovery_rounds, max_tests=params.discovery_max_tests),
        params.discovery_top, [tuple(sorted(g)) for g in before], enabled=params.discovery,
        failing=bool(trace.failed_tests()), problems=problems)
    if (stopped := machine.verdict(state)) is not None:
        return traced.model_copy(update={"report": report.model_copy(
            update={"stopped_because": stopped.reason})})
    progress = create_progress_artifact(0.0, key="discovery-progress",
                                        description="Discovery: rounds done / round budget (%)")
    groups, checked = before, None
    while steps := machine.next_steps(state):
        step, rounds = steps[0], len(state.rounds)
        match step:
            case machine.ScoreSuite():
                if step.add and checked is not None:
                    trace = _merged(trace, checked, step.add)
                    groups = _groups(trace, prepared)
                observation: machine.DiscoveryObservation = machine.Scored(
                    groups=tuple(tuple(sorted(g)) for g in groups), prior=prior_scores(node_signals(trace)))
            case machine.ProposeTests():
                observation = _propose(prepared, params, trace, step, use_llm, config)
            case machine.CheckTests():
                observation, checked = _check(prepared, params, step)
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
                           cost_usd=round(state.cost_usd, 6), problems=list(state.problems))


def _merged(trace: SuiteTrace, checked: SuiteTrace, add: Sequence[str]) -> SuiteTrace:
    """``trace`` with the results of the checked tests ``add``: the same as re-tracing the suite with
    them, since the old tests did not change."""
    wanted = set(add)
    new_results = tuple(t for t in checked.tests if t.test_id in wanted)
    return combine([trace, checked.model_copy(update={"tests": new_results, "crashed": False})],
                   [*trace.collected, *add])


def _announce(done: DiscoveryRound, testgen: bool) -> None:
    print(f"discovery round {done.round}: {len(done.groups)} group(s), kept {done.kept} test(s)"
          + (f" (testgen: {done.testgen_kept} of {done.testgen_proposed} kept)" if testgen else ""))


def trace_only(params: DiscoveryParameters) -> DiscoveryResult:
    """The suite traced as it is, with its groups in the report (``stopped_because`` "turned off"
    when ``params.discovery`` is off): the start of ``discovery``, and all of it without Discovery.

    A plain function: the localize flow also calls it directly when mutant screening comes before
    Discovery, sparing a child flow run per localization (creating it and joining its heartbeat
    thread took about 0.8 s under cProfile).
    """
    return _traced(params)[0]


def _traced(params: DiscoveryParameters) -> tuple[DiscoveryResult, list[frozenset[str]]]:
    """``trace_only`` and the suite's ambiguity groups."""
    prepared = prepare_run(params)
    return _described(prepared, run_suite(prepared, params), params)


def as_traced(result: DiscoveryResult, trace: SuiteTrace, params: DiscoveryParameters) -> DiscoveryResult:
    """``result`` (a ``trace_only`` result) with another trace of the same run, e.g. with its flaky
    tests marked, and the report of its groups."""
    return _described(result.prepared, trace, params)[0]


def _described(prepared: PreparedRun, trace: SuiteTrace, params: DiscoveryParameters,
               ) -> tuple[DiscoveryResult, list[frozenset[str]]]:
    groups = _groups(trace, prepared)
    sizes = tuple(group_sizes(groups))
    report = DiscoveryReport(enabled=params.discovery, testgen=params.discovery and params.testgen,
                             group_sizes_before=sizes, group_sizes_after=sizes)
    if not params.discovery:
        report = report.model_copy(update={"stopped_because": "turned off"})
    return DiscoveryResult(prepared=prepared, trace=trace, report=report), groups


def focused_request(prepared: PreparedRun, only: Sequence[str], overlay: Mapping[str, str], **update: object):
    """The base request narrowed to the tests ``only`` names: pytest collects just their files.

    Collecting only the files involved is faster, and it is how generated tests (which live in the
    overlay, maybe outside the project's configured test paths) are found. When a test's file is
    not a path of the workspace or the overlay (a rootdir elsewhere), the base selection stays.
    """
    files = sorted({test_id.split("::", 1)[0] for test_id in only})
    root = prepared.workspace.root
    located = all((root / f).is_file() or f in overlay for f in files)
    tests = tuple(files) if files and located else prepared.base.tests
    return prepared.base.model_copy(update={
        "overlay": dict(overlay), "only": tuple(only) or None, "tests": tests, **update})


def narrowed(prepared: PreparedRun, test_ids: Sequence[str]) -> PreparedRun:
    """``prepared`` whose base request runs only the suite's own tests among ``test_ids`` (what the
    test-generation agent's baseline needs: the tests that execute its focus), or ``prepared`` as
    it is when none is left or a test's file is not a path of the workspace (a rootdir elsewhere)."""
    root = prepared.workspace.root
    own = sorted(t for t in test_ids if not t.startswith(GENERATED_TESTS_DIR + "/"))
    if not own or not all((root / t.split("::", 1)[0]).is_file() for t in own):
        return prepared
    return prepared.model_copy(update={"base": prepared.base.model_copy(update={"tests": tuple(own)})})


def _groups(trace: SuiteTrace, prepared: PreparedRun) -> list[frozenset[str]]:
    return [frozenset(g) for g in build_trace_report(trace, str(prepared.repo)).ambiguity_groups]


def _run(prepared: PreparedRun, params: DiscoveryParameters, request) -> SuiteTrace:
    return run_tests.with_options(refresh_cache=params.no_cache or None)(
        request, backend=params.sandbox, interpreter_version=prepared.interpreter_version,
        docker_image=params.docker_image)


#: Tests recorded per group member (the fastest that run it): carving keeps a few calls per member,
#: and a recording run is several times slower than a traced one (see ``recording_sample``).
RECORDED_PASSING_PER_MEMBER = 8
RECORDED_FAILING_PER_MEMBER = 4


def _propose(prepared: PreparedRun, params: DiscoveryParameters, trace: SuiteTrace,
             step: machine.ProposeTests, use_llm: bool, config: object | None) -> machine.Proposed:
    """Generated test modules (path -> proposal) for the step's groups, what the model cost, and the
    problems met."""
    targets = [frozenset(g) for g in step.groups]
    members = sorted(set().union(*targets))
    covering = recording_sample(members, trace, RECORDED_PASSING_PER_MEMBER, RECORDED_FAILING_PER_MEMBER)
    nodes = {n.fqn: n for n in trace.nodes}
    recorded = _run(prepared, params, focused_request(prepared, covering, step.overlay, record=tuple(members),
                                                      trace=False))
    proposals: dict[str, machine.Proposal] = {}
    problems: list[str] = []
    cost = 0.0
    for offset, (key, group) in enumerate(zip(step.groups, targets, strict=True)):
        index = step.first_index + offset
        carved = carve_tests(recorded, group, nodes, max_per_member=params.carved_per_member)
        if carved:
            proposals[carved_module_path(index)] = machine.Proposal(group=key, source=carved_module(carved))
        if use_llm and config is not None:
            module, spent = _llm_tests(prepared, config, group, nodes, trace, problems)
            cost += spent
            if module is not None:
                proposals[f"{GENERATED_TESTS_DIR}/test_llm_group_{index}.py"] = machine.Proposal(
                    group=key, source=module)
        if params.testgen:
            known = list_tests(carved_module(carved)).values() if carved else ()
            for path, module in _testgen_tests(prepared, params, trace, group, nodes, index, known,
                                               problems).items():
                proposals[path] = machine.Proposal(group=key, source=module)
    return machine.Proposed(proposals=proposals, cost_usd=cost, problems=tuple(problems))


def _testgen_tests(
    prepared: PreparedRun, params: DiscoveryParameters, trace: SuiteTrace, group: frozenset[str],
    nodes: Mapping[str, Node], index: int, known: Iterable[str], problems: list[str],
) -> dict[str, str]:
    """The test-generation agent's modules for ``group`` (path -> source), one per source file.

    Each call is focused on the group's members in one file and kept cheap: deterministic mode,
    one attempt, no mutants, its baseline run limited to the suite's tests that execute a member.
    Tests whose body a carved test of this round already has (``known``) are left out.
    """
    from flows.testgen import TestgenParameters, generate_tests

    by_file: dict[str, list[str]] = {}
    for fqn in sorted(group):
        node = nodes.get(fqn)
        if node is not None and node.file and "<locals>" not in fqn:
            by_file.setdefault(node.file, []).append(fqn)
    coverage = trace.coverage()
    seen = {_body(code) for code in known}
    modules: dict[str, str] = {}
    for file, members in sorted(by_file.items()):
        focused = narrowed(prepared, sorted({t for m in members for t in coverage.get(m, ())}))
        stem = f"group_{index}_{file.removesuffix('.py').replace('/', '_')}"
        with tempfile.TemporaryDirectory(prefix="equisa-discovery-testgen-") as out:
            shared = params.model_dump(include=set(TraceParameters.model_fields) - {"progress_key"})
            settings = TestgenParameters(  # no progress key: Discovery's own spinner stays as it is
                **shared, target=file, focus=members, llm=False, max_iterations=1, max_mutants=0, out=out,
                module_stem=stem)
            try:
                made = generate_tests(focused, settings)
            except EquisaError as error:
                problems.append(f"testgen for {', '.join(members)}: {error.message}")
                continue
        if made.path is None or made.source is None:
            continue
        fresh = [name for name, code in list_tests(made.source).items() if _body(code) not in seen]
        if fresh:
            modules[made.path] = keep_tests(made.source, fresh)
    return modules


def _body(code: str) -> str:
    """A test's code without its ``def`` line: two tests that differ only in name are the same."""
    return code.split(":\n", 1)[-1].strip()


def _llm_tests(prepared: PreparedRun, config: object, group: frozenset[str], nodes: Mapping[str, Node],
               trace: SuiteTrace, problems: list[str]) -> tuple[str | None, float]:
    from equisa_core.common.llm_text import clean_test_module
    from equisa_core.discovery.prompts import render_disambiguating_tests
    from tasks.llm import LLMError, call_llm

    root = prepared.workspace.root
    sources = {fqn: read_function(root, nodes[fqn])[1] for fqn in sorted(group) if fqn in nodes}
    coverage = trace.coverage()
    runs_group = set().union(*(coverage.get(m, set()) for m in group))
    failing_first = sorted(runs_group, key=lambda t: (t not in trace.failed_tests(), t))
    samples = [s for t in failing_first[:6] if (s := _test_source(root, t))][:2]
    try:
        answer = call_llm(config, render_disambiguating_tests(sources, samples, max_tests=6),  # type: ignore[arg-type]
                          "disambiguating-tests")
    except LLMError as error:
        problems.append(f"disambiguating tests for {', '.join(sorted(group))}: {error.message}")
        return None, sum(c.cost_usd or 0.0 for c in getattr(error, "calls", ()))
    spent = answer.call.cost_usd or 0.0
    try:
        return clean_test_module(answer.text), spent
    except LLMError as error:
        problems.append(f"disambiguating tests for {', '.join(sorted(group))}: {error.message}")
        return None, spent


def _test_source(root: Path, test_id: str) -> str | None:
    """The source of the test function ``test_id`` names, or None when it cannot be found."""
    path, _, rest = test_id.partition("::")
    qualname = ".".join(part.split("[", 1)[0] for part in rest.split("::") if part)
    try:
        return function_source((root / path).read_text(encoding="utf-8"), qualname)
    except (OSError, UnicodeDecodeError, EquisaError, SyntaxError):
        return None


def _check(prepared: PreparedRun, params: DiscoveryParameters, step: machine.CheckTests,
           ) -> tuple[machine.Checked, SuiteTrace | None]:
    """Run the proposed modules, traced: what the machine needs to keep or drop each test, and the
    check run (whose kept tests join the suite's trace)."""
    request = prepared.base.model_copy(update={
        "overlay": {**step.overlay, **{path: p.source for path, p in step.proposals.items()}},
        "tests": tuple(sorted(step.proposals)), "only": None, "trace": True})
    try:
        checked = _run(prepared, params, request)
    except CollectionError as error:
        return machine.Checked(collection_error=error.message), None
    return machine.Checked(tests=checked.tests, collect_errors=checked.collect_errors), checked

"""The ``discovery`` flow (Loop 1, seed 000 §4): trace the suite, then split ambiguity groups.

Control flow only. The suite is traced (``run_suite``); while ``groups_to_split`` names groups and
the budget lasts, one round:

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

from equisa_core.common.models import Node, SuiteTrace, TestOutcome, TestResult
from equisa_core.common.source_edit import function_source
from equisa_core.common.trace_merge import combine
from equisa_core.discovery.rules import (
    DiscoveryBudget,
    DiscoveryReport,
    DiscoveryRound,
    group_sizes,
    groups_to_split,
    keep_test_functions,
    module_test_names,
    near_the_top,
)
from equisa_core.discovery.trace_report import build_trace_report
from equisa_core.errors import CollectionError, EquisaError
from equisa_core.localization.prior import node_signals, prior_scores
from equisa_core.localization.selection import recording_sample
from equisa_core.testgen.carving import GENERATED_TESTS_DIR, carve_tests, carved_module, carved_module_path
from equisa_core.testgen.modules import keep_tests, list_tests
from equisa_core.validation.generated_tests import is_testgen_test
from flows.trace import PreparedRun, TraceParameters, prepare_run, run_suite
from tasks.inspection import read_function
from tasks.llm import choose_llm_mode
from tasks.run_tests import run_tests
from tasks.task_runners import FanOutTaskRunner

__all__ = ["DiscoveryParameters", "DiscoveryResult", "discovery", "focused_request", "narrowed", "trace_only",
           "as_traced"]


class DiscoveryParameters(TraceParameters):
    """Parameters of the Discovery loop (those of ``trace-suite`` plus its budget)."""

    generated_code: ClassVar[str | None] = "generated tests, inspection patches and fixes"

    llm: bool | None = Field(None, description="Use the model; None: when an endpoint is configured.")
    discovery: bool = Field(True, description="Generate disambiguating tests; False: trace only.")
    discovery_rounds: int = Field(2, ge=0, description="Generate-and-retrace rounds.")
    discovery_max_tests: int = Field(30, ge=0, description="Generated tests kept in all.")
    carved_per_member: int = Field(3, ge=0, description="Carved tests per group member and round.")
    discovery_top: int = Field(
        10, ge=0, description="Split only the ambiguity groups holding one of the prior's this many "
        "best functions (``near_the_top``); 0: every group.")
    testgen: bool = Field(
        False, description="Also ask the test-generation agent (deterministic, one attempt) for "
        "tests of each group's members; they split groups but never judge a patch. Off by default: "
        "on examples/invoicing it made Discovery 5x slower and split no group carving left whole "
        "(bench/README.md).")


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
    """Trace a repository's suite and add tests that split its ambiguity groups."""
    traced, before = _traced(params)
    if not params.discovery:
        return traced
    prepared, trace, report = traced.prepared, traced.trace, traced.report
    if not trace.failed_tests():
        return DiscoveryResult(prepared=prepared, trace=trace,
                               report=report.model_copy(update={"stopped_because": "no failing test"}))
    use_llm, config, problems = choose_llm_mode(params.llm)
    budget = DiscoveryBudget(max_rounds=params.discovery_rounds, max_tests=params.discovery_max_tests)
    progress = create_progress_artifact(0.0, key="discovery-progress",
                                        description="Discovery: rounds done / round budget (%)")
    overlay: dict[str, str] = {}
    rounds: list[DiscoveryRound] = []
    kept_ids: list[str] = []
    cost = 0.0
    groups = before
    while True:
        # The groups worth tests: those near the top of the prior (``near_the_top``).
        prior = prior_scores(node_signals(trace))
        worth = near_the_top(groups, prior, params.discovery_top) if params.discovery_top else groups
        targets = groups_to_split(worth, prior, budget, len(rounds), len(kept_ids))
        if not targets:
            stopped = _why_stopped(budget, len(rounds), len(kept_ids), bool(params.discovery_top))
            break
        proposals, proposal_cost = _propose(prepared, params, trace, targets, overlay, use_llm, config,
                                            problems, first_index=sum(len(r.groups) for r in rounds))
        cost += proposal_cost
        room = budget.max_tests - len(kept_ids)
        kept, new_ids, checked, dropped = _check(prepared, params, overlay, proposals, room)
        overlay.update(kept)
        kept_ids.extend(new_ids)
        testgen_proposed = sum(len(module_test_names(source)) for path, (_, source) in proposals.items()
                               if is_testgen_test(path))
        testgen_kept = sum(1 for t in new_ids if is_testgen_test(t))
        rounds.append(DiscoveryRound(
            round=len(rounds) + 1, groups=tuple(tuple(sorted(g)) for g in targets),
            proposed=sum(len(module_test_names(s)) for _, s in proposals.values()),
            kept=len(new_ids), dropped=tuple(dropped),
            testgen_proposed=testgen_proposed, testgen_kept=testgen_kept,
        ))
        print(f"discovery round {len(rounds)}: {len(targets)} group(s), kept {len(new_ids)} test(s)"
              + (f" (testgen: {testgen_kept} of {testgen_proposed} kept)" if params.testgen else ""))
        update_progress_artifact(progress, 100.0 * len(rounds) / max(1, budget.max_rounds))
        if not new_ids:
            stopped = "no generated test could be kept"
            break
        wanted = set(new_ids)
        new_results = tuple(t for t in checked.tests if t.test_id in wanted)
        trace = combine([trace, checked.model_copy(update={"tests": new_results, "crashed": False})],
                        [*trace.collected, *new_ids])
        groups = _groups(trace, prepared)
    update_progress_artifact(progress, 100.0)
    report = report.model_copy(update={
        "rounds": tuple(rounds), "generated": len(kept_ids), "files": tuple(sorted(overlay)),
        "tests": tuple(kept_ids), "group_sizes_after": tuple(group_sizes(_groups(trace, prepared))),
        "stopped_because": stopped,
    })
    return DiscoveryResult(prepared=prepared, trace=trace, overlay=overlay, report=report,
                           cost_usd=round(cost, 6), problems=problems)


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


def _why_stopped(budget: DiscoveryBudget, rounds: int, kept: int, near_top_only: bool) -> str:
    if rounds >= budget.max_rounds:
        return f"round budget ({budget.max_rounds}) spent"
    if kept >= budget.max_tests:
        return f"test budget ({budget.max_tests}) spent"
    return "no ambiguity group of two or more left" + (" near the top of the prior" if near_top_only else "")


def _run(prepared: PreparedRun, params: DiscoveryParameters, request) -> SuiteTrace:
    return run_tests.with_options(refresh_cache=params.no_cache or None)(
        request, backend=params.sandbox, interpreter_version=prepared.interpreter_version,
        docker_image=params.docker_image)


#: Tests recorded per group member (the fastest that run it): carving keeps a few calls per member,
#: and a recording run is several times slower than a traced one (see ``recording_sample``).
RECORDED_PASSING_PER_MEMBER = 8
RECORDED_FAILING_PER_MEMBER = 4


def _propose(
    prepared: PreparedRun, params: DiscoveryParameters, trace: SuiteTrace, targets: Sequence[frozenset[str]],
    overlay: Mapping[str, str], use_llm: bool, config: object | None, problems: list[str], first_index: int,
) -> tuple[dict[str, tuple[frozenset[str], str]], float]:
    """Generated test modules (path -> (group, source)) for ``targets``, and what the model cost."""
    members = sorted(set().union(*targets))
    covering = recording_sample(members, trace, RECORDED_PASSING_PER_MEMBER, RECORDED_FAILING_PER_MEMBER)
    nodes = {n.fqn: n for n in trace.nodes}
    recorded = _run(prepared, params, focused_request(prepared, covering, overlay, record=tuple(members),
                                                      trace=False))
    proposals: dict[str, tuple[frozenset[str], str]] = {}
    cost = 0.0
    for offset, group in enumerate(targets):
        index = first_index + offset
        carved = carve_tests(recorded, group, nodes, max_per_member=params.carved_per_member)
        if carved:
            proposals[carved_module_path(index)] = (group, carved_module(carved))
        if use_llm and config is not None:
            module, spent = _llm_tests(prepared, config, group, nodes, trace, problems)
            cost += spent
            if module is not None:
                proposals[f"{GENERATED_TESTS_DIR}/test_llm_group_{index}.py"] = (group, module)
        if params.testgen:
            known = list_tests(carved_module(carved)).values() if carved else ()
            for path, module in _testgen_tests(prepared, params, trace, group, nodes, index, known,
                                               problems).items():
                proposals[path] = (group, module)
    return proposals, cost


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


def _check(
    prepared: PreparedRun, params: DiscoveryParameters, overlay: Mapping[str, str],
    proposals: Mapping[str, tuple[frozenset[str], str]], room: int,
) -> tuple[dict[str, str], list[str], SuiteTrace, list[str]]:
    """Run the proposed modules (traced); keep the tests that behave and split their group.

    A test that executes every member of its group splits nothing (a carved test of a caller
    that calls the others), so it is dropped too. At most ``room`` tests are kept. Returns the
    kept modules (path -> source), the kept tests' ids, the check run and why others were dropped.
    """
    if not proposals or room <= 0:
        empty = SuiteTrace(python_version="", backend="off", backend_reason="nothing to check")
        return {}, [], empty, []
    request = prepared.base.model_copy(update={
        "overlay": {**overlay, **{path: source for path, (_, source) in proposals.items()}},
        "tests": tuple(sorted(proposals)), "only": None, "trace": True})
    try:
        checked = _run(prepared, params, request)
    except CollectionError as error:
        # Not one proposed module imports (a carved import that works only beside the project's own
        # test files, for one): none is kept, and Discovery goes on without them.
        empty = SuiteTrace(python_version="", backend="off", backend_reason="no proposed module imports")
        return {}, [], empty, [f"{path}: does not collect ({error.message})" for path in sorted(proposals)]
    by_file: dict[str, list[TestResult]] = {}
    for test in checked.tests:
        by_file.setdefault(test.test_id.split("::", 1)[0], []).append(test)
    dropped = [f"{e.location}: does not collect ({e.message.splitlines()[-1] if e.message else 'error'})"
               for e in checked.collect_errors]
    kept: dict[str, str] = {}
    kept_ids: list[str] = []
    splits: dict[frozenset[str], set[frozenset[str]]] = {}  # group -> the member sets kept tests run
    for path, (group, source) in sorted(proposals.items()):  # carved, then the model's, then testgen's
        testgen = is_testgen_test(path)
        carved = "/test_carved_" in path or testgen
        good: list[str] = []
        seen = splits.setdefault(group, set())
        for test in by_file.get(path, []):
            name = test.test_id.split("::")[-1].split("[", 1)[0]
            split = frozenset(group & test.covered)
            reason = _unfit(test, carved, observed=testgen) or (
                "executes the whole group, so it does not split it" if group <= test.covered else None)
            if reason is None and testgen and split in seen:
                # Testgen proposes many tests: one per way of splitting the group is enough evidence,
                # and the rest would spend the test budget that later rounds need.
                reason = "splits the group as a kept test already does"
            if reason is None:
                seen.add(split)
            if reason:
                dropped.append(f"{test.test_id}: {reason}")
            elif len(good) < room:
                good.append(name)
                kept_ids.append(test.test_id)
        room -= len(good)
        if good:
            kept[path] = keep_test_functions(source, good)
    return kept, kept_ids, checked, dropped


def _unfit(test: TestResult, carved: bool, observed: bool = False) -> str | None:
    """Why a generated test must not join the suite, or None when it may (``carved``: it asserts
    observed behaviour, so it must pass; ``observed``: a testgen test, which asserts it too)."""
    if test.outcome is TestOutcome.PASSED:
        return None
    if test.outcome is TestOutcome.SKIPPED:
        return "skipped"
    if observed:
        return f"fails on the code it was observed on ({test.exception_type})"
    if carved:
        return (f"fails on the code it was carved from ({test.exception_type}): the function depends on "
                "more than its arguments")
    if test.outcome is TestOutcome.FAILED and (test.exception_type or "").endswith("AssertionError"):
        return None  # the model's oracle disagrees with the code: a failing test is evidence
    return f"broken test ({test.outcome.value}: {test.exception_type})"

"""Discovery's proposals and their check (``equisa_core.discovery.machine``'s ``ProposeTests`` and
``CheckTests`` steps): tests carved from recorded calls, written by the model (LLM mode), or made
by the test-generation agent (``testgen_call`` over ``generate_tests``, which the flow passes in:
the agent is a flow), and the sandboxed run that says which of them import, run and pass.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from equisa_core.common.cost import LLMCall
from equisa_core.common.models import Node, SuiteTrace
from equisa_core.common.source_edit import function_source
from equisa_core.discovery import machine
from equisa_core.errors import BudgetSpentError, CollectionError, EquisaError
from equisa_core.localization.selection import recording_sample
from equisa_core.testgen.carving import GENERATED_TESTS_DIR, carve_tests, carved_module, carved_module_path
from equisa_core.testgen.modules import keep_tests, list_tests
from tasks.llm import LLMConfig
from tasks.run.parameters import DiscoveryParameters, TestgenParameters, TraceParameters
from tasks.run.patched_function import read_function
from tasks.run.prepared_run import PreparedRun, focused_request, narrowed, source_texts
from tasks.sandbox.run_tests import run_tests
from tasks.testgen.publish import GenerateTests

__all__ = ["TestgenCall", "testgen_call", "propose_tests", "check_tests", "RECORDED_PASSING_PER_MEMBER",
           "RECORDED_FAILING_PER_MEMBER"]

#: The test-generation agent as Discovery calls it: (the run narrowed to the suite's tests that
#: execute the members, their source file, the members, the module's stem, the output folder) ->
#: the module's path and source (None, None when it made none). Raises ``EquisaError``.
TestgenCall = Callable[[PreparedRun, str, list[str], str, str], tuple[str | None, str | None]]


def testgen_call(params: DiscoveryParameters, generate_tests: GenerateTests) -> TestgenCall:
    """The test-generation agent (``generate_tests``: ``flows.testgen.generate_tests``) as Discovery
    calls it: focused on a group's members in one file, deterministic, one attempt, no mutants."""

    def generate(focused: PreparedRun, file: str, members: list[str], stem: str, out: str,
                 ) -> tuple[str | None, str | None]:
        shared = params.model_dump(include=set(TraceParameters.model_fields))
        settings = TestgenParameters(
            **shared, target=file, focus=members, llm=False, max_attempts=1, mutants_per_measurement=0,
            out=out, module_stem=stem)
        made = generate_tests(focused, settings)
        return made.path, made.source
    return generate


def _run(prepared: PreparedRun, params: DiscoveryParameters, request) -> SuiteTrace:
    return run_tests.with_options(refresh_cache=params.no_cache or None)(
        request, backend=params.sandbox, interpreter_version=prepared.interpreter_version,
        docker_image=params.docker_image)


#: Tests recorded per group member (the fastest that run it): carving keeps a few calls per member,
#: and a recording run is several times slower than a traced one (see ``recording_sample``).
RECORDED_PASSING_PER_MEMBER = 8
RECORDED_FAILING_PER_MEMBER = 4


def propose_tests(prepared: PreparedRun, params: DiscoveryParameters, trace: SuiteTrace,
                  step: machine.ProposeTests, use_llm: bool, config: LLMConfig | None, testgen: TestgenCall,
                  ) -> machine.Proposed:
    """Generated test modules (path -> proposal) for the step's groups, the model calls made for
    them, and the problems met (``testgen`` runs the test-generation agent, when ``params.testgen``)."""
    targets = [frozenset(g) for g in step.groups]
    members = sorted(set().union(*targets))
    covering = recording_sample(members, trace, RECORDED_PASSING_PER_MEMBER, RECORDED_FAILING_PER_MEMBER)
    nodes = {n.fqn: n for n in trace.nodes}
    recorded = _run(prepared, params, focused_request(prepared, covering, step.overlay, record=tuple(members),
                                                      trace=False))
    sources = source_texts(prepared, step.overlay, nodes.values())  # constructors of their arguments too
    proposals: dict[str, machine.Proposal] = {}
    problems: list[str] = []
    calls: list[LLMCall] = []
    for offset, (key, group) in enumerate(zip(step.groups, targets, strict=True)):
        index = step.first_index + offset
        carved = carve_tests(recorded, group, nodes, max_per_member=params.carved_per_member,
                             sources=sources)
        if carved:
            proposals[carved_module_path(index)] = machine.Proposal(group=key, source=carved_module(carved))
        if use_llm and config is not None:
            written = _llm_tests(prepared, config, group, nodes, trace)
            calls.extend(written.calls)
            problems.extend(written.problems)
            if written.module is not None:
                proposals[f"{GENERATED_TESTS_DIR}/test_llm_group_{index}.py"] = machine.Proposal(
                    group=key, source=written.module)
        if params.testgen:
            known = list_tests(carved_module(carved)).values() if carved else ()
            made = _testgen_tests(prepared, testgen, trace, group, nodes, index, known)
            problems.extend(made.problems)
            for path, module in made.modules.items():
                proposals[path] = machine.Proposal(group=key, source=module)
    return machine.Proposed(proposals=proposals, calls=tuple(calls), problems=tuple(problems))


@dataclass(frozen=True)
class _TestgenModules:
    """The test-generation agent's modules for a group (path -> source), and the problems met."""

    modules: dict[str, str]
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class _ModelTests:
    """The model's test module for a group (None when it gave none), its calls, the problems met."""

    module: str | None
    calls: tuple[LLMCall, ...] = ()
    problems: tuple[str, ...] = ()


def _testgen_tests(
    prepared: PreparedRun, testgen: TestgenCall, trace: SuiteTrace, group: frozenset[str],
    nodes: Mapping[str, Node], index: int, known: Iterable[str],
) -> _TestgenModules:
    """The test-generation agent's modules for ``group`` (path -> source), one per source file, and
    the problems met.

    Each call is focused on the group's members in one file and kept cheap: deterministic mode,
    one attempt, no mutants, its baseline run limited to the suite's tests that execute a member.
    Tests whose body a carved test of this round already has (``known``) are left out.
    """
    by_file: dict[str, list[str]] = {}
    for fqn in sorted(group):
        node = nodes.get(fqn)
        if node is not None and node.file and "<locals>" not in fqn:
            by_file.setdefault(node.file, []).append(fqn)
    coverage = trace.coverage()
    seen = {_body(code) for code in known}
    modules: dict[str, str] = {}
    problems: list[str] = []
    for file, members in sorted(by_file.items()):
        focused = narrowed(prepared, sorted({t for m in members for t in coverage.get(m, ())}))
        stem = f"group_{index}_{file.removesuffix('.py').replace('/', '_')}"
        with tempfile.TemporaryDirectory(prefix="equisa-discovery-testgen-") as out:
            try:
                path, source = testgen(focused, file, members, stem, out)
            except BudgetSpentError:
                raise  # cut at the run's deadline: the driver stops its loop
            except EquisaError as error:
                problems.append(f"testgen for {', '.join(members)}: {error.message}")
                continue
        if path is None or source is None:
            continue
        fresh = [name for name, code in list_tests(source).items() if _body(code) not in seen]
        if fresh:
            modules[path] = keep_tests(source, fresh)
    return _TestgenModules(modules=modules, problems=tuple(problems))


def _body(code: str) -> str:
    """A test's code without its ``def`` line: two tests that differ only in name are the same."""
    return code.split(":\n", 1)[-1].strip()


def _llm_tests(prepared: PreparedRun, config: LLMConfig, group: frozenset[str], nodes: Mapping[str, Node],
               trace: SuiteTrace) -> _ModelTests:
    """The model's disambiguating tests for ``group`` (a cache hit spends nothing)."""
    from equisa_core.common.llm_text import clean_test_module
    from equisa_core.discovery.prompts import render_disambiguating_tests
    from tasks.llm import LLMError, ask, failed_call

    root = prepared.workspace.root
    sources = {fqn: read_function(root, nodes[fqn])[1] for fqn in sorted(group) if fqn in nodes}
    coverage = trace.coverage()
    runs_group = set().union(*(coverage.get(m, set()) for m in group))
    failing_first = sorted(runs_group, key=lambda t: (t not in trace.failed_tests(), t))
    samples = [s for t in failing_first[:6] if (s := _test_source(root, t))][:2]
    messages = render_disambiguating_tests(sources, samples, max_tests=6)
    purpose, members = "disambiguating-tests", ", ".join(sorted(group))
    try:
        answer = ask(config, messages, purpose)
    except LLMError as error:
        failed = error.calls or (failed_call(error, config, messages, purpose),)
        return _ModelTests(module=None, calls=tuple(failed),
                           problems=(f"disambiguating tests for {members}: {error.message}",))
    try:
        return _ModelTests(module=clean_test_module(answer.text), calls=(answer.call,))
    except LLMError as error:
        return _ModelTests(module=None, calls=(answer.call,),
                           problems=(f"disambiguating tests for {members}: {error.message}",))


def _test_source(root: Path, test_id: str) -> str | None:
    """The source of the test function ``test_id`` names, or None when it cannot be found."""
    path, _, rest = test_id.partition("::")
    qualname = ".".join(part.split("[", 1)[0] for part in rest.split("::") if part)
    try:
        return function_source((root / path).read_text(encoding="utf-8"), qualname)
    except (OSError, UnicodeDecodeError, EquisaError, SyntaxError):
        return None


def check_tests(prepared: PreparedRun, params: DiscoveryParameters, step: machine.CheckTests,
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

"""One node's inspection in the Localization loop (seed 002 §5), alone or several in one process.

``inspect_node`` writes the node's inspection patch (LLM, or heartbeat plus invariants mined from
recorded passing executions), runs the node's tests with the patch in a sandbox (in the same
process as the node's mutants when they run), reads the signals and reflects (the Golden Rule on
the tracebacks first; the model only when that is undecided). ``inspect_batch`` does the same for
several deterministic inspections in one sandbox process: each patch is swapped into the live
function as a detailed mutant round (``MutantSpec.detailed``), followed by the node's mutants, so
the loop pays one interpreter start and one import of the project for all of them. The loop
(``equisa_core.localization.machine``) counts the observations one at a time, in the order it
selects the nodes. ``inspect_node`` stays for what a batch cannot do: the LLM mode (the model
writes the patch and reflects), nested functions (each call makes them anew), and a node a batch
could not serve.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from prefect.futures import PrefectFuture

from equisa_core.common.cost import LLMCall
from equisa_core.common.models import Node, RecordedCall, SuiteTrace, TestOutcome
from equisa_core.errors import BudgetSpentError, EquisaError, WeakSandboxError
from equisa_core.localization.bayes import LLM_BUGGY, LLM_NOT_BUGGY
from equisa_core.localization.fix_evidence import classify_mutants
from equisa_core.localization.machine import Inspect, Inspected, InspectionResult, LocalizationState
from equisa_core.localization.reflection import reflect
from equisa_core.localization.selection import is_test_file, tests_for_node
from equisa_core.localization.signals import Signals
from equisa_core.mutation.mutants import Mutant, mutate_function
from equisa_core.validation.generated_tests import without_testgen
from tasks.discovery.suite import DiscoveryResult
from tasks.llm import LLMConfig
from tasks.run.mutants import MutantRunReport, MutantSpec, run_mutants
from tasks.run.parameters import LocalizeParameters
from tasks.run.patched_function import deterministic_inspection, observe, overlay_for, read_function
from tasks.run.prepared_run import focused_request
from tasks.sandbox.run_tests import run_tests

__all__ = ["NodeInspection", "ModelPatch", "inspect_step", "inspect_batch", "inspect_node", "fix_evidence_of",
           "llm_inspection_patch",
           "must_fix", "mutant_specs",
           "node_mutants", "run_rounds", "submit_rounds", "suite_run_of", "unpatched_outcomes"]


@dataclass(frozen=True)
class NodeInspection:
    """What ``inspect_node`` made: the inspection (``seen``), or why it could not be made (``error``),
    and the problems met on the way (the model's failures, which do not stop it)."""

    seen: InspectionResult | None = None
    error: str | None = None
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class ModelPatch:
    """The model's inspection patch (None when it gave none), the calls it took, the problems met."""

    source: str | None = None
    calls: tuple[LLMCall, ...] = ()
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class _ModelReflection:
    """The model's label of a failing inspection run (None: left neutral), its reasoning, its call and
    the problems met."""

    label: str | None = None
    text: str = ""
    calls: tuple[LLMCall, ...] = ()
    problems: tuple[str, ...] = ()


def inspect_step(step: Inspect, state: LocalizationState, found: DiscoveryResult, params: LocalizeParameters,
                 calls: Mapping[str, Sequence[RecordedCall]], use_llm: bool, config: LLMConfig | None,
                 elapsed: Callable[[], float]) -> Inspected:
    """The ``Inspect`` step's observation: ``step.target`` inspected, after its batch, run ahead
    together in one sandbox process; a node that cannot be inspected is an error of that node."""
    started = time.monotonic()
    assert state.suite is not None
    nodes, target = state.suite.nodes, step.target
    screened = state.screened or frozenset()
    mutants = state.settings.mutants
    candidates = frozenset(f for f, n in nodes.items() if not is_test_file(n.file or ""))
    ahead: dict[str, InspectionResult] = {}
    try:
        if step.batch:
            ahead = inspect_batch(step.batch, nodes, found, params, calls, mutants, candidates, screened)
        # A node inspected again (its own assertion failed) sees what it saw: runs are cached.
        made = NodeInspection(seen=ahead[target]) if target in ahead else inspect_node(
            target, nodes[target], found, params, calls.get(target, []), use_llm, config, mutants,
            candidates, target in screened)
    except WeakSandboxError:
        raise  # a policy, not a failure of this node
    except BudgetSpentError:
        raise  # cut at the run's deadline: the driver stops its loop
    except EquisaError as error:  # one node that cannot be inspected never ends the run
        return Inspected(target=target, error=error.message, ahead=ahead)
    if made.seen is None:
        return Inspected(target=target, error=made.error, ahead=ahead, problems=made.problems)
    return Inspected(target=target, seen=made.seen, ahead=ahead, problems=made.problems,
                     seconds=round(time.monotonic() - started, 3), elapsed_s=elapsed())


def inspect_node(target: str, node: Node, found: DiscoveryResult, params: LocalizeParameters,
                 calls: Sequence[RecordedCall], use_llm: bool, config: LLMConfig | None,
                 use_mutants: bool, candidates: frozenset[str], screened: bool = False) -> NodeInspection:
    """One inspection: patch, run in a sandbox, signals, reflection; then the node's mutants
    (unless ``screened``: the mutant screening ran them already and their evidence was counted).
    An ``EquisaError`` (``WeakSandboxError`` apart) makes it an error of the node."""
    model = config if use_llm else None
    written, asked = ModelPatch(), _ModelReflection()
    try:
        _, source = read_function(found.prepared.workspace.root, node)
        if model is not None:
            written = llm_inspection_patch(model, target, source)
        selection = tests_for_node(target, found.trace, max_tests=params.max_tests_per_inspection).test_ids
        mutants = node_mutants(target, node, source, params) if use_mutants and not screened else ()
        specs = mutant_specs(node.file or "", mutants)
        seen, asked, mutant_run = _patched_run(target, node, source, written, found, params, calls, model,
                                               candidates, selection, specs)
        if mutants and not _own_assertion_failed(seen.signals, seen.decision):
            evidence = _mutant_evidence(mutants, specs, found, params, selection, mutant_run)
            seen = seen.model_copy(update=evidence)
    except WeakSandboxError:
        raise  # a policy, not a failure of this node
    except BudgetSpentError:
        raise  # cut at the run's deadline: the driver stops its loop
    except EquisaError as error:
        return NodeInspection(error=error.message, problems=(*written.problems, *asked.problems))
    return NodeInspection(seen=seen, problems=(*written.problems, *asked.problems))


def _patched_run(target: str, node: Node, source: str, written: ModelPatch, found: DiscoveryResult,
                 params: LocalizeParameters, calls: Sequence[RecordedCall], model: LLMConfig | None,
                 candidates: frozenset[str], selection: Sequence[str], specs: tuple[MutantSpec, ...],
                 ) -> tuple[InspectionResult, _ModelReflection, MutantRunReport | None]:
    """The inspection patch (the model's ``written`` one, else the deterministic one) run on the
    ``selection`` (with the mutants ``specs`` after it, in the same process), its signals and the
    reflection on them (the model's, with ``model``, when the tracebacks leave it undecided)."""
    if written.source:
        patch, invariants = written.source, 0
    else:
        patch, invariants = deterministic_inspection(source, node, calls)
    overlay, moved = overlay_for(found.prepared.workspace.root, node, patch)
    run, mutant_run = _inspection_run(found, params, overlay, selection, specs)
    signals = observe(moved, run.tests)
    callees = {e.callee for e in run.edges if e.caller == target and e.callee != target}
    reflection = reflect(moved, run.tests, callees, project=candidates)
    decision, by, reasoning = reflection.decision, "traceback", reflection.reasoning
    asked = _ModelReflection()
    if decision is None and model is not None and signals.is_failure:
        asked = _llm_reflection(model, target, source, patch, run)
        if asked.label is not None:
            decision, by, reasoning = asked.label, "llm", asked.text
    seen = InspectionResult(
        strategy="llm" if written.source else "deterministic", invariants=invariants,
        tests_run=tuple(t.test_id for t in run.tests), signals=signals, decision=decision, decision_by=by,
        reasoning=reasoning, calls=(*written.calls, *asked.calls),
    )
    return seen, asked, mutant_run


def _own_assertion_failed(signals: Signals, decision: str | None) -> bool:
    """A failing assertion of the target's own, not put down to a callee by the reflection: the
    seed's strongest evidence, which the mutants' fix evidence is then not added to."""
    return signals.has_target_assertion and signals.is_failure and decision != LLM_NOT_BUGGY


def inspect_batch(targets: Sequence[str], nodes: Mapping[str, Node], found: DiscoveryResult,
                  params: LocalizeParameters, calls: Mapping[str, Sequence[RecordedCall]], use_mutants: bool,
                  candidates: frozenset[str], screened: frozenset[str]) -> dict[str, InspectionResult]:
    """Deterministic inspections of ``targets`` in one sandbox process, as ``inspect_node`` would make
    them one by one (for the nodes its rounds could serve; the others are left out of the result).

    Each node's inspection patch is swapped into the live function (a detailed round: its own tests,
    with their output and tracebacks), then its mutants unless ``screened``; the unmutated round that
    every mutant run starts with is their common baseline. Differences from a run of the patched
    file, and why they do not matter here: the patch's lines are numbered from the function's first
    line (the node's range is moved accordingly); nothing is traced, so each test's coverage is what
    it covered in the suite's trace (the patch changes nothing before the function's first call; a
    test the patch stops early covered less, so the reflection may see more functions that could
    have produced a rejected value: it errs towards "not the target's own failure") and callees are
    those the suite's trace saw the function call. Nested functions cannot be swapped (each call
    makes them anew).
    """
    plans = _batch_plans(targets, nodes, found, params, calls, use_mutants, screened)
    if not plans:
        return {}
    specs = [spec for key, plan in enumerate(plans.values()) for spec in plan.specs(f"b{key}")]
    try:
        report = run_rounds(found, params, specs, budget_s=params.inspection_budget_s)
    except BudgetSpentError:
        raise  # cut at the run's deadline: the driver stops its loop
    except EquisaError:
        return {}  # each inspection then runs on its own, and says what went wrong there
    observations: dict[str, InspectionResult] = {}
    for index, (target, plan) in enumerate(plans.items()):
        observation = _batch_observation(target, plan, f"b{index}", report, found.trace, candidates,
                                         len(plans))
        if observation is not None:
            observations[target] = observation
    return observations


@dataclass(frozen=True)
class _BatchPlan:
    """One inspection of a batch: its node, patch (and the invariants in it), tests and mutants."""

    node: Node
    patch: str
    invariants: int
    tests: tuple[str, ...]
    mutants: tuple[Mutant, ...]

    def specs(self, key: str) -> list[MutantSpec]:
        """The patch's detailed round (id ``key``), then the mutants' (``<key>m<index>``)."""
        file = self.node.file or ""
        return [MutantSpec(id=key, fqn=self.node.fqn, file=file, source=self.patch, tests=self.tests,
                           detailed=True),
                *mutant_specs(file, self.mutants, prefix=key + "m", tests=self.tests)]


def _batch_plans(targets: Sequence[str], nodes: Mapping[str, Node], found: DiscoveryResult,
                 params: LocalizeParameters, calls: Mapping[str, Sequence[RecordedCall]], use_mutants: bool,
                 screened: frozenset[str]) -> dict[str, _BatchPlan]:
    """The plans of the ``targets`` a batch can serve: a known file, no nesting, a readable source,
    tests to run."""
    trace, root = found.trace, found.prepared.workspace.root
    plans: dict[str, _BatchPlan] = {}
    for target in targets:
        node = nodes[target]
        if not node.file or "<locals>" in target:
            continue
        try:
            _, source = read_function(root, node)
        except EquisaError:
            continue
        tests = tests_for_node(target, trace, max_tests=params.max_tests_per_inspection).test_ids
        if not tests:
            continue
        patch, invariants = deterministic_inspection(source, node, calls.get(target, ()))
        mutants = node_mutants(target, node, source, params) if use_mutants and target not in screened else ()
        plans[target] = _BatchPlan(node=node, patch=patch, invariants=invariants, tests=tuple(tests),
                                   mutants=mutants)
    return plans


def _batch_observation(target: str, plan: _BatchPlan, key: str, report: MutantRunReport, trace: SuiteTrace,
                       candidates: frozenset[str], size: int) -> InspectionResult | None:
    """What ``target``'s rounds (ids ``key``, ``<key>m<index>``) of a batch of ``size`` showed;
    None when its patch's round did not run."""
    result = report.mutants.get(key)
    if result is None or result.status not in ("ran", "timeout") or not result.tests:
        return None
    suite = {t.test_id: t.covered for t in trace.tests}
    ran = tuple(t.model_copy(update={"covered": suite.get(t.test_id, frozenset())}) for t in result.tests)
    node = plan.node
    moved = node.model_copy(update={"end_line": (node.start_line or 1) + len(plan.patch.splitlines()) - 1})
    signals = observe(moved, ran)
    callees = {e.callee for e in trace.edges if e.caller == target and e.callee != target}
    reflection = reflect(moved, ran, callees, project=candidates)
    observation = InspectionResult(
        strategy="deterministic", invariants=plan.invariants, tests_run=tuple(t.test_id for t in ran),
        signals=signals, decision=reflection.decision, decision_by="traceback",
        reasoning=reflection.reasoning, batch=size,
    )
    if plan.mutants and not _own_assertion_failed(signals, reflection.decision):
        observation = observation.model_copy(update=fix_evidence_of(
            plan.mutants, unpatched_outcomes(trace, plan.tests, report), report, prefix=key + "m"))
    return observation


def run_rounds(found: DiscoveryResult, params: LocalizeParameters, specs: Sequence[MutantSpec],
               budget_s: float | None = None) -> MutantRunReport:
    """One sandbox process for the rounds of several functions (each spec names its own tests): the
    union of their tests unmutated, then each round, failing tests first, fail-fast; raises
    ``EquisaError`` when the run cannot be made. ``budget_s``: as in ``submit_rounds``."""
    return submit_rounds(found, params, specs, budget_s=budget_s).result()


def submit_rounds(found: DiscoveryResult, params: LocalizeParameters, specs: Sequence[MutantSpec],
                  confirm: bool = False, budget_s: float | None = None) -> PrefectFuture[MutantRunReport]:
    """``run_rounds`` as a future: the run goes on while the caller does something else.

    ``confirm``: the first mutant of each function that fixes its tests goes on through the whole
    suite (flaky tests left out) in the same process (``suite_run_of`` reads it back), which saves
    the confirmation a sandbox start of its own; the rest of the suite is collected, not run.
    ``budget_s``: wall-clock seconds for the mutant rounds; the mutants left then are not run (the
    inspection patches' rounds, ``detailed`` specs, still are).
    """
    selection = sorted({t for spec in specs for t in spec.tests or ()})
    suite = {t.test_id: (t.outcome, t.duration) for t in found.trace.tests
             if t.test_id not in found.trace.flaky} if confirm else {}
    request = focused_request(found.prepared, sorted({*selection, *suite}), found.overlay, trace=False,
                              mutants=tuple(specs), mutants_fail_fast=True,
                              mutants_must_fix=must_fix(found.trace, selection), mutants_confirm=suite,
                              mutants_budget_s=budget_s)
    return run_mutants.submit(request, backend=params.sandbox, docker_image=params.docker_image,
                              interpreter_version=found.prepared.interpreter_version)


def suite_run_of(report: MutantRunReport, prefix: str, mutants: Sequence[Mutant], fix_source: str | None,
                 ) -> dict[str, TestOutcome]:
    """What the round of the mutant of ``mutants`` (ids ``<prefix><index>``) whose source is
    ``fix_source`` ran: the whole suite when it was its function's first fix (``submit_rounds``'
    ``confirm``), only its own tests otherwise; empty when there is no such mutant."""
    for index, mutant in enumerate(mutants):
        if fix_source is not None and mutant.source == fix_source:
            result = report.mutants.get(f"{prefix}{index}")
            return dict(result.outcomes) if result is not None and result.status == "ran" else {}
    return {}


def node_mutants(target: str, node: Node, source: str, params: LocalizeParameters) -> tuple[Mutant, ...]:
    """The node's mutants (none when its file is unknown: the probe could not swap them in)."""
    if not node.file:
        return ()
    return tuple(mutate_function(source, target, start_line=node.start_line or 1,
                                 max_mutants=params.mutants_per_inspection))


def mutant_specs(target_file: str, mutants: Sequence[Mutant], prefix: str = "m",
                 tests: tuple[str, ...] | None = None) -> tuple[MutantSpec, ...]:
    """The probe's specs of ``mutants`` (ids ``<prefix>0``, ``<prefix>1``, ... in order), each run
    against ``tests`` (None: the whole selection)."""
    return tuple(MutantSpec(id=f"{prefix}{index}", fqn=mutant.fqn, file=target_file, source=mutant.source,
                            tests=tests)
                 for index, mutant in enumerate(mutants))


def _inspection_run(found: DiscoveryResult, params: LocalizeParameters, overlay: dict[str, str],
                    test_ids: Sequence[str], specs: tuple[MutantSpec, ...],
                    ) -> tuple[SuiteTrace, MutantRunReport | None]:
    """The traced run of the inspection patch and, in the same sandbox process, the node's mutants.

    A sandbox start (interpreter, pytest, the project's imports) is most of an inspection's cost,
    so the patched tests run as the mutant run's first round and the mutants are swapped in after
    it (each replaces the whole function, so the patch's assertions are gone while they run).
    When that first round does not come back whole (a crash, tests that cannot be collected),
    the inspection runs alone, as an ordinary run does.
    """
    prepared = found.prepared
    request = focused_request(prepared, test_ids, {**found.overlay, **overlay}, trace=True)
    fix_first = must_fix(found.trace, test_ids)
    options = {"backend": params.sandbox, "interpreter_version": prepared.interpreter_version,
               "docker_image": params.docker_image}
    if specs:
        try:
            report: MutantRunReport | None = run_mutants(
                request.model_copy(update={"mutants": specs, "mutants_fail_fast": True,
                                           "mutants_must_fix": fix_first}), **options)
        except BudgetSpentError:
            raise  # cut at the run's deadline: the driver stops its loop
        except EquisaError:
            report = None
        if report is not None and report.original_trace is not None:
            return report.original_trace, report
    return run_tests(request, **options), None


def must_fix(trace: SuiteTrace, test_ids: Sequence[str]) -> tuple[str, ...]:
    """The selected tests that fail (all failing tests when the selection is the whole suite): a
    mutant that passes none of them is no fix, so its round can stop after them."""
    failing = trace.failed_tests()
    return tuple(sorted(t for t in (test_ids or failing) if t in failing))


def _mutant_evidence(mutants: Sequence[Mutant], specs: tuple[MutantSpec, ...], found: DiscoveryResult,
                     params: LocalizeParameters, test_ids: Sequence[str], report: MutantRunReport | None,
                     ) -> dict[str, object]:
    """Classify what the node's mutants did to its tests (fix evidence); run them first if the
    inspection run did not.

    The mutants are judged against the tests' outcomes without any patch: the suite's traced run
    when they ran after the inspection patch (whose assertions may fail tests that pass), the
    mutant run's own unmutated round otherwise.
    """
    trace = found.trace
    if report is None:
        request = focused_request(found.prepared, test_ids, found.overlay, trace=False, mutants=specs,
                                  mutants_fail_fast=True, mutants_must_fix=must_fix(trace, test_ids))
        report = run_mutants(request, backend=params.sandbox,
                             interpreter_version=found.prepared.interpreter_version,
                             docker_image=params.docker_image)
        original = {t: o for t, o in report.original.items() if t not in report.flaky}
    else:
        original = unpatched_outcomes(trace, report.tests, report)
    return fix_evidence_of(mutants, original, report, prefix="m")


def fix_evidence_of(mutants: Sequence[Mutant], original: dict[str, TestOutcome], report: MutantRunReport,
              prefix: str) -> dict[str, object]:
    """The observation's fix-evidence fields from the rounds of ``mutants`` (ids ``<prefix><index>``)."""
    ran = {i: r.outcomes for i, r in report.mutants.items()
           if i.startswith(prefix) and i[len(prefix):].isdigit() and r.status in ("ran", "timeout")}
    # Testgen tests assert the buggy behaviour: they may not veto a fixing mutant.
    verdict = classify_mutants(without_testgen(original), {i: without_testgen(o) for i, o in ran.items()},
                               report.original_failures,
                               {i: report.mutants[i].failures for i in ran
                                if report.mutants[i].status == "ran"})
    if verdict.evidence is None:
        return {}
    update: dict[str, object] = {"mutants_tried": verdict.ran, "fix_evidence": verdict.evidence}
    chosen = verdict.fixing or verdict.partial
    if chosen:
        mutant = mutants[int(chosen[0][len(prefix):])]
        update.update(fix=mutant.description, fix_source=mutant.source)
    return update


def unpatched_outcomes(trace: SuiteTrace, tests: Sequence[str], report: MutantRunReport,
                        ) -> dict[str, TestOutcome]:
    """The suite's outcomes of ``tests`` without any patch, flaky tests (in either run) left out:
    what mutants run after the suite's trace are judged against."""
    judged = set(tests) - trace.flaky - report.flaky
    return {t.test_id: t.outcome for t in trace.tests if t.test_id in judged}


def llm_inspection_patch(config: LLMConfig, target: str, source: str) -> ModelPatch:
    """The model's inspection patch of ``target`` (None when it gave none: the deterministic one is
    used), with the calls it took (a cache hit spends nothing) and the problem met."""
    from equisa_core.localization.prompts import render_inspection_patch
    from tasks.llm import LLMError, ask_for_function

    qualname = target.rsplit(".", 1)[-1]
    try:
        answer = ask_for_function(config, render_inspection_patch(target, source), source,
                                  _source_qualname(source, qualname), "inspection-patch")
    except LLMError as error:
        return ModelPatch(calls=error.calls, problems=(
            f"inspection patch for {target}: {error.message}; used the deterministic one",))
    return ModelPatch(source=answer.source, calls=answer.calls)


def _source_qualname(source: str, fallback: str) -> str:
    import ast

    first = ast.parse(source).body[0]
    return getattr(first, "name", fallback)


def _llm_reflection(config: LLMConfig, target: str, source: str, patch: str, run: SuiteTrace,
                    ) -> _ModelReflection:
    """The model's label of the failing inspection run (a cache hit spends nothing)."""
    from equisa_core.common.llm_text import parse_reflection_label
    from equisa_core.localization.prompts import render_reflection
    from tasks.llm import LLMError, ask, failed_call

    failing = [t for t in run.tests if t.outcome in (TestOutcome.FAILED, TestOutcome.ERROR)]
    result = "\n\n".join(
        f"Test: {t.test_id}\nException: {t.exception_type}: {t.message}\nTraceback:\n"
        + "\n".join(f'  File "{f.file}", line {f.line}, in {f.function}' for f in t.traceback)
        + f"\nstdout:\n{t.stdout_tail}"
        for t in failing[:3]
    )
    execution = f"Exit Code: {1 if failing else 0}\n{result}"
    messages = render_reflection(target, source, patch, execution)
    try:
        answer = ask(config, messages, "reflection")
    except LLMError as error:
        return _ModelReflection(calls=error.calls or (failed_call(error, config, messages, "reflection"),),
                                problems=(f"reflection on {target}: {error.message}; left neutral",))
    label = parse_reflection_label(answer.text)
    if label not in (LLM_BUGGY, LLM_NOT_BUGGY):
        return _ModelReflection(text=answer.text, calls=(answer.call,), problems=(
            f"reflection on {target}: the model gave no label; left neutral",))
    return _ModelReflection(label=label, text=answer.text, calls=(answer.call,))

"""The ``repair`` flow: Discovery, Localization, then Validation of patch candidates (seed 000 §7).

A driver: the decisions (what to localize, which generator to ask, when to stop) are the state
machine's in ``equisa_core.validation.machine``. The graph of seed 000 Appendix A with its
placeholders made real:
``need_more_tests`` is ``equisa_core.discovery.rules.groups_to_split``; ``has_no_regressions`` is the
Validation verdict. Candidates come from the generators in this order:

- LLM mode: the model's minimal fix of the localized function (seed prompt), re-asked with each
  rejection's reason (``max_llm_fixes``); then the multi-retrieval patcher (seed 004,
  ``tasks/patcher.py``: it greps and reads code, proposes ``<patches>``, hears each verdict);
  then the deterministic search;
- deterministic search: the one-edit mutants (``equisa_core.validation.mutation``) of the top
  ``repair_top`` functions, by confidence; each function's mutants are screened together against
  its tests in one sandboxed process (the screens of all functions run in parallel), and those
  that fix its failing tests without breaking its passing ones are validated in full, smallest
  edit first. A fix the Localization loop already confirmed is tried first.

The first ``SOUND`` candidate is accepted. When none is and some were rejected for regressions,
the run goes back to Discovery (seed 000 §7, bounded by ``max_relocalizations``): a bigger test
budget, a fresh localization, and the functions whose fixes regressed are not patched again.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_progress_artifact, update_progress_artifact

from equisa_core.common.models import Node
from equisa_core.common.options import ValidationOptions
from equisa_core.common.source_edit import replace_function
from equisa_core.localization.fix_evidence import FixEvidence, classify_mutants
from equisa_core.localization.selection import tests_for_node
from equisa_core.localization.steps import LocalizationReport
from equisa_core.validation import machine
from equisa_core.validation.candidates import PatchCandidate, PatchEvaluation, PatchStatus, candidate_diff
from equisa_core.validation.generated_tests import without_testgen
from equisa_core.validation.mutation import mutate_function
from equisa_core.validation.repair import RepairReport, repair_status
from flows.discovery import DiscoveryResult, focused_request
from flows.localize import LocalizeParameters, run_localization
from flows.validation import ValidationContext, test_sources, validate_candidate
from tasks.inspection import file_of, qualname_of, read_function, unreadable_because
from tasks.llm import LLMConfig, choose_llm_mode
from tasks.mutants import MutantRunReport, MutantSpec, run_mutants
from tasks.record import record_finished_run
from tasks.task_runners import FanOutTaskRunner

__all__ = ["RepairParameters", "repair"]


class RepairParameters(LocalizeParameters, ValidationOptions):
    """Parameters of one repair run (those of ``localize`` plus the Validation budgets)."""


@flow(name="repair", flow_run_name="repair {params.path}", log_prints=True,
      task_runner=FanOutTaskRunner())
def repair(params: RepairParameters) -> RepairReport:
    """Find the bug of a repository whose tests fail and a verified patch for it.

    A driver: ``equisa_core.validation.machine`` decides what to localize, generate and validate.
    """
    use_llm, config, problems = choose_llm_mode(params.llm)
    llm = config if use_llm else None
    state = machine.start_repair(machine.RepairBudget(
        repair_top=params.repair_top, max_validations=params.max_validations,
        max_relocalizations=params.max_relocalizations,
        llm_fixes=bool(llm is not None and params.max_llm_fixes),
        patcher=bool(llm is not None and params.patcher_evaluations)))
    state = record(state, machine.Noted(problems=tuple(problems)))
    cost = 0.0
    round_: _Round | None = None
    while steps := machine.next_steps(state):
        step = steps[0]
        if isinstance(step, machine.Localize):
            round_ = _localized(params, step, llm)
            state = record(state, machine.Localized(patchable=machine.patchable_functions(
                [r.fqn for r in round_.localization.ranking], round_.ctx.nodes)))
            continue
        assert round_ is not None, "a step came before the first localization"
        rounds_done, relocalizations = state.rounds_done, state.relocalizations
        for observation in _observe(step, round_, params, llm):
            state = record(state, observation)
        if state.rounds_done > rounds_done:  # the round is over
            update_progress_artifact(round_.progress, 100.0)
            cost += round_.ctx.cost_usd + round_.localization.cost.get("usd", 0.0)
            state = record(state, machine.Noted(problems=tuple(round_.ctx.problems), once=True))
        if state.relocalizations > relocalizations:
            print(f"regressions: back to Discovery (round {state.relocalizations}); "
                  f"not patching {', '.join(state.excluded)} again")
    assert round_ is not None, "the repair loop stopped before localizing"
    cost += sum(c.cost_usd for c in state.candidates.values())
    report = _report(round_.found, round_.localization, state, cost, use_llm)
    return record_finished_run("repair", report, str(round_.found.prepared.repo), params.artifacts, params.db,
                               round_.found.trace)


def record(state: machine.RepairState, observation: machine.RepairObservation) -> machine.RepairState:
    """``machine.record``: the one place the driver feeds the repair machine (tests watch it here)."""
    return machine.record(state, observation)


class _Round:
    """One localization's results and what its generators and validations share."""

    def __init__(self, found: DiscoveryResult, localization: LocalizationReport, ctx: ValidationContext):
        self.found, self.localization, self.ctx = found, localization, ctx
        self.progress = create_progress_artifact(0.0, key="validation-progress",
                                                 description="Validation: candidates validated / budget (%)")
        self.generators: dict[str, Generated] = {}
        self.notes: list[str] = []  # problems the generators met, not yet recorded
        self.validated = 0


def _localized(params: RepairParameters, step: machine.Localize, config: LLMConfig | None) -> _Round:
    """Discovery and Localization with the step's extra test budget."""
    current: LocalizeParameters = params
    if step.extra_rounds or step.extra_tests:
        current = params.model_copy(update={
            "discovery_rounds": params.discovery_rounds + step.extra_rounds,
            "discovery_max_tests": params.discovery_max_tests + step.extra_tests,
        })
    found, localization = run_localization(current)
    return _Round(found, localization, _context(found, localization, params, config))


def _observe(step: machine.RepairStep, round_: _Round, params: RepairParameters, config: LLMConfig | None,
             ) -> list[machine.RepairObservation]:
    """Run one step (find the targets, ask a generator, validate a candidate): what it observed."""
    match step:
        case machine.FindTargets():
            return [_find_targets(step, round_.found)]
        case machine.Generate():
            generated = round_.generators.get(step.generator)
            if generated is None:
                generated = _generator(step, round_, params, config)
                round_.generators[step.generator] = generated
            try:
                candidate, screened = next(generated)
            except StopIteration:
                return [*_noted(round_), machine.Exhausted(generator=step.generator)]
            return [*_noted(round_), machine.Generated(candidate=candidate, screened=screened)]
        case machine.Validate():
            candidate, ctx = step.candidate, round_.ctx
            evaluation = ctx.verdicts.get(candidate.id) or validate_candidate(candidate, ctx)
            ctx.verdicts[candidate.id] = evaluation  # what an LLM generator hears back (_llm_fixes)
            round_.validated += 1
            update_progress_artifact(round_.progress, 100.0 * round_.validated / params.max_validations)
            print(f"{candidate.id}: {evaluation.status.value} ({candidate.description})")
            return [machine.Validated(evaluation=evaluation)]
    raise AssertionError(f"unexpected repair step {step!r}")


def _noted(round_: _Round) -> list[machine.RepairObservation]:
    """The problems the generators met since last asked (they note them on the round)."""
    new, round_.notes = list(round_.notes), []
    return [machine.Noted(problems=tuple(new))] if new else []


def _find_targets(step: machine.FindTargets, found: DiscoveryResult) -> machine.TargetsFound:
    """The first ``step.top`` functions of the ranking whose definition can be read."""
    nodes = {n.fqn: n for n in found.trace.nodes}
    targets: list[str] = []
    unreadable: list[tuple[str, str]] = []
    for fqn in step.ranked:
        if len(targets) == step.top:
            break
        why = unreadable_because(found.prepared.workspace.root, nodes[fqn])
        if why is None:
            targets.append(fqn)
        else:
            unreadable.append((fqn, why))
    return machine.TargetsFound(targets=tuple(targets), unreadable=tuple(unreadable))


def _generator(step: machine.Generate, round_: _Round, params: RepairParameters, config: LLMConfig | None,
               ) -> Generated:
    """The candidates of the step's generator, one at a time, each with the count screened to find it."""
    found, localization, ctx, targets = round_.found, round_.localization, round_.ctx, step.targets
    match step.generator:
        case "llm-fix" if config is not None:  # the machine asks for the model's generators only in LLM mode
            return _llm_fixes(targets[0], found, localization, ctx, params, config, round_.notes)
        case "patcher" if config is not None:
            return _patcher(targets[0], found, localization, ctx, params, config, round_.notes)
        case "confirmed":
            return _confirmed_fixes(targets, found, localization, ctx)
        case "mutation":
            return _mutation_search(targets, found, ctx, params)
    raise AssertionError(f"unknown generator {step.generator!r}, or one of the model's without the model")


def _context(found: DiscoveryResult, localization: LocalizationReport, params: RepairParameters,
             config: LLMConfig | None) -> ValidationContext:
    trace = found.trace
    nodes = {n.fqn: n for n in trace.nodes}
    return ValidationContext(
        found=found, sandbox=params.sandbox, docker_image=params.docker_image, no_cache=params.no_cache,
        nodes=nodes, failing_sources=test_sources(found, sorted(trace.failed_tests())), llm_config=config,
    )


Generated = Iterator[tuple[PatchCandidate | None, int]]


def _file_with(found: DiscoveryResult, node: Node, function: str) -> dict[str, str]:
    text, _ = read_function(found.prepared.workspace.root, node)
    return {file_of(node): replace_function(text, qualname_of(node), function)}


def _confirmed_fixes(targets: Sequence[str], found: DiscoveryResult, localization: LocalizationReport,
                     ctx: ValidationContext) -> Generated:
    """Fixes the Localization loop already ran on the whole suite."""
    seen: set[str] = set()
    for record in localization.inspections:
        if (record.fix_evidence is FixEvidence.FIX_CONFIRMED and record.target in targets
                and record.fix_source and record.target not in seen):
            seen.add(record.target)
            node = ctx.nodes[record.target]
            yield PatchCandidate(
                id=f"confirmed-{len(seen)}", generator="mutation", target=record.target,
                description=f"{record.target}: {record.fix}",
                files=_file_with(found, node, record.fix_source),
            ), 0


def _mutation_search(targets: Sequence[str], found: DiscoveryResult, ctx: ValidationContext,
                     params: RepairParameters) -> Generated:
    """One-edit mutants of each target that fix its tests, screened in parallel, smallest edit first."""
    screens = []
    for target in targets:
        node = ctx.nodes[target]
        _, source = read_function(found.prepared.workspace.root, node)
        mutants = mutate_function(source, target, start_line=node.start_line or 1,
                                  max_mutants=params.max_mutants_per_function)
        selection = tests_for_node(target, found.trace, max_tests=params.max_tests_per_inspection)
        if not mutants or not node.file or not selection.test_ids:
            continue
        specs = tuple(MutantSpec(id=f"m{i}", fqn=target, file=node.file, source=m.source)
                      for i, m in enumerate(mutants))
        request = focused_request(found.prepared, selection.test_ids, found.overlay, mutants=specs,
                                  mutants_fail_fast=True, trace=False)
        future = run_mutants.submit(request, backend=params.sandbox, docker_image=params.docker_image,
                                    interpreter_version=found.prepared.interpreter_version)
        screens.append((target, node, mutants, future))
    seen_sources: set[str] = set()
    for target, node, mutants, future in screens:
        report: MutantRunReport = future.result()
        ran = {i: r.outcomes for i, r in report.mutants.items() if r.status in ("ran", "timeout")}
        # Testgen tests assert the buggy behaviour: they may not veto a fixing mutant.
        original = without_testgen({t: o for t, o in report.original.items() if t not in report.flaky})
        verdict = classify_mutants(original, {i: without_testgen(o) for i, o in ran.items()})
        fixing = machine.mutation_order(verdict.fixing, [m.edit_size for m in mutants])
        yield None, verdict.ran
        for mutant_id in fixing:
            mutant = mutants[int(mutant_id[1:])]
            if mutant.source in seen_sources:
                continue
            seen_sources.add(mutant.source)
            yield PatchCandidate(
                id=f"mutation-{target.rsplit('.', 1)[-1]}-{mutant_id}", generator="mutation", target=target,
                description=f"{target}: {mutant.description}", files=_file_with(found, node, mutant.source),
                edit_size=mutant.edit_size, operator=mutant.operator,
            ), 0


def _llm_fixes(target: str, found: DiscoveryResult, localization: LocalizationReport, ctx: ValidationContext,
               params: RepairParameters, config: LLMConfig, problems: list[str]) -> Generated:
    """The model's minimal fix (seed 000 prompt), re-asked with each rejection's reason."""
    from equisa_core.localization.prompts import render_patch
    from tasks.llm import LLMError, ask_for_function

    node = ctx.nodes[target]
    text, source = read_function(found.prepared.workspace.root, node)
    reflection = _reflection(localization, target)
    failures = "\n".join(f"{t.test_id}: {t.exception_type}: {t.message}" for t in found.trace.tests
                         if t.test_id in found.trace.failed_tests())[:4000]
    messages = render_patch(target, source, f"{reflection}\n\nFailing tests:\n{failures}".strip())
    for attempt in range(1, params.max_llm_fixes + 1):
        try:
            answer = ask_for_function(config, messages, text, qualname_of(node), "patch")
        except LLMError as error:
            problems.append(f"LLM fix of {target}: {error.message}")
            return
        candidate = PatchCandidate(
            id=f"llm-fix-{attempt}", generator="llm-fix", target=target,
            description=f"{target}: the model's fix",
            files={file_of(node): replace_function(text, qualname_of(node), answer.source)},
            cost_usd=sum(c.cost_usd or 0.0 for c in answer.calls),
        )
        yield candidate, 0
        verdict = _last_verdict(ctx, candidate.id)
        if verdict is None or verdict.status is PatchStatus.SOUND:
            return
        messages = [*messages, {"role": "assistant", "content": answer.source},
                    {"role": "user", "content": f"The fix was rejected ({verdict.status.value}): "
                                                f"{verdict.detail}\nReply with ONLY the corrected function."}]


def _patcher(target: str, found: DiscoveryResult, localization: LocalizationReport, ctx: ValidationContext,
             params: RepairParameters, config: LLMConfig, problems: list[str]) -> Generated:
    """The multi-retrieval patcher (seed 004): it retrieves code and proposes patches; each one that
    applies and compiles is validated here, and the verdict is what it hears back."""
    from tasks.patcher import PatcherIssue, run_patcher

    node = ctx.nodes[target]
    _, source = read_function(found.prepared.workspace.root, node)
    failing = sorted(found.trace.failed_tests())
    output = "\n".join(f"{t.test_id}: {t.exception_type}: {t.message}\n" + "\n".join(
        f'  File "{f.file}", line {f.line}, in {f.function}' for f in t.traceback)
        for t in found.trace.tests if t.test_id in failing)
    reflection = _reflection(localization, target)
    issue = PatcherIssue(target=target, target_file=node.file, source=source, failing_tests=tuple(failing),
                         test_output=output, reflection=reflection)

    def evaluate(candidate: PatchCandidate) -> PatchEvaluation:
        verdict = validate_candidate(candidate, ctx)
        ctx.verdicts[candidate.id] = verdict
        proposed.append(candidate)
        return verdict

    proposed: list[PatchCandidate] = []
    result = run_patcher(config, issue, found.prepared.workspace.root, evaluate,
                         max_evaluations=params.patcher_evaluations, id_prefix="patcher")
    ctx.cost_usd += result.cost_usd
    if result.error:
        problems.append(f"patcher: {result.error}")
    for candidate in proposed:
        yield candidate, 0


def _reflection(localization: LocalizationReport, target: str) -> str:
    """What the Localization loop concluded about ``target``, one reasoning per inspection."""
    return "\n".join(r.reasoning for r in localization.inspections if r.target == target and r.reasoning)


def _last_verdict(ctx: ValidationContext, candidate_id: str) -> PatchEvaluation | None:
    return ctx.verdicts.get(candidate_id)


def _report(found: DiscoveryResult, localization: LocalizationReport, state: machine.RepairState, cost: float,
            use_llm: bool) -> RepairReport:
    evaluations, candidates = state.evaluations, state.candidates
    status = repair_status(evaluations)
    best = machine.reported_evaluation(evaluations)
    diff, target, generator, checks = "", None, None, {}
    originals: dict[str, str] = {}
    patched: dict[str, str] = {}
    if best is not None:
        candidate = candidates[best.candidate]
        root = found.prepared.workspace.root
        originals = {p: _read_exact(root / p) for p in candidate.files}
        patched = dict(candidate.files)
        diff = candidate_diff(originals, candidate)
        target, generator, checks = candidate.target, candidate.generator, dict(best.checks)
    elif localization.ranking:
        target = localization.ranking[0].fqn
    report = RepairReport(
        status=status, mode="llm" if use_llm else "deterministic", target=target, diff=diff,
        candidate=best.candidate if best else None, generator=generator, candidates_tried=state.tried,
        validation=checks, evaluations=tuple(evaluations), relocalizations=state.relocalizations,
        localization=localization, cost={"usd": round(cost, 6)},
        problems=tuple(dict.fromkeys([*localization.problems, *state.problems])),
        patched_files=patched, original_files=originals, sandbox=found.prepared.sandbox,
    )
    create_markdown_artifact(
        key="repair-patch",
        markdown=f"**{status}** — {target or 'no target'}\n\n```diff\n{diff or '(no patch)'}\n```\n",
        description=f"repair: {status}",
    )
    return report


def _read_exact(path: Path) -> str:
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()

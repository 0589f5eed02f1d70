"""The repair's patch generators (``equisa_core.repair.machine``'s ``Generate`` step) and the
targets they patch: fixes the Localization loop confirmed, the one-edit mutation search (screened
in sandboxes), the model's minimal fix re-asked with each rejection's reason, and the
multi-retrieval patcher (``tasks.repair.patcher``). Each is a Python generator of the machine's
``Generated`` observations: a candidate (or none), with the model calls made and the problems met
on the way. ``RepairRound`` holds one localization's results and what its generators and
validations share.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence

from prefect.artifacts import create_progress_artifact

from equisa_core.common.models import Node
from equisa_core.common.source_edit import replace_function
from equisa_core.localization.fix_evidence import FixEvidence
from equisa_core.localization.steps import LocalizationReport
from equisa_core.repair import machine
from equisa_core.validation.candidates import PatchCandidate, PatchEvaluation, PatchStatus
from tasks.discovery.suite import DiscoveryResult
from tasks.llm import LLMConfig
from tasks.repair.fix_search import fix_search
from tasks.run.parameters import RepairParameters
from tasks.run.patched_function import file_of, qualname_of, read_function, unreadable_because
from tasks.validation.checks import ValidationContext

__all__ = ["Candidates", "RepairRound", "Validate", "find_targets", "confirmed_fixes",
           "llm_fixes", "patcher"]


def find_targets(step: machine.FindTargets, found: DiscoveryResult) -> machine.TargetsFound:
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


#: A generator's answers to the machine, one at a time: each candidate (or None) with the count of
#: mutants screened to find it, the model calls made and the problems met. What the driver sends in
#: is the verdict on the generator's previous candidate (``machine.last_verdict``), or None: the
#: model's fix is re-asked with it.
Candidates = Generator[machine.Generated, PatchEvaluation | None, None]
#: Judges a candidate against the context (the flow's ``check_candidate``): the verdict, the model
#: calls the checks made and the problems they met.
Validate = Callable[[PatchCandidate, ValidationContext], machine.Validated]


def _file_with(found: DiscoveryResult, node: Node, function: str) -> dict[str, str]:
    text, _ = read_function(found.prepared.workspace.root, node)
    return {file_of(node): replace_function(text, qualname_of(node), function)}


def confirmed_fixes(targets: Sequence[str], found: DiscoveryResult, localization: LocalizationReport,
                    ctx: ValidationContext) -> Candidates:
    """Fixes the Localization loop already ran on the whole suite."""
    seen: set[str] = set()
    for record in localization.inspections:
        if (record.fix_evidence is FixEvidence.FIX_CONFIRMED and record.target in targets
                and record.fix_source and record.target not in seen):
            seen.add(record.target)
            node = ctx.nodes[record.target]
            yield machine.Generated(candidate=PatchCandidate(
                id=f"confirmed-{len(seen)}", generator="mutation", target=record.target,
                description=f"{record.target}: {record.fix}",
                files=_file_with(found, node, record.fix_source),
            ))


def llm_fixes(target: str, found: DiscoveryResult, localization: LocalizationReport, ctx: ValidationContext,
              params: RepairParameters, config: LLMConfig) -> Candidates:
    """The model's minimal fix (seed 000 prompt), re-asked with each rejection's reason; a model
    error ends it with a candidate-less answer that carries the error and the calls made."""
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
            yield machine.Generated(candidate=None, calls=tuple(error.calls),
                                    problems=(f"LLM fix of {target}: {error.message}",))
            return
        candidate = PatchCandidate(
            id=f"llm-fix-{attempt}", generator="llm-fix", target=target,
            description=f"{target}: the model's fix",
            files={file_of(node): replace_function(text, qualname_of(node), answer.source)},
            cost_usd=sum(c.spent_usd for c in answer.calls),
        )
        verdict = yield machine.Generated(candidate=candidate, calls=tuple(answer.calls))
        if verdict is None or verdict.status is PatchStatus.SOUND:
            return
        messages = [*messages, {"role": "assistant", "content": answer.source},
                    {"role": "user", "content": f"The fix was rejected ({verdict.status.value}): "
                                                f"{verdict.detail}\nReply with ONLY the corrected function."}]


def patcher(target: str, found: DiscoveryResult, localization: LocalizationReport, ctx: ValidationContext,
            params: RepairParameters, config: LLMConfig, validate: Validate) -> Candidates:
    """The multi-retrieval patcher (seed 004): it retrieves code and proposes patches; each one that
    applies and compiles is validated here (``validate``), and the verdict is what it hears back.
    Its first answer carries no candidate: the patcher's model calls and its error, if one stopped
    it; then each candidate comes with its verdict and what its validation spent and met."""
    from tasks.repair.patcher import PatcherIssue, run_patcher

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
        validated = validate(candidate, ctx)
        proposed.append((candidate, validated))
        return validated.evaluation

    proposed: list[tuple[PatchCandidate, machine.Validated]] = []
    result = run_patcher(config, issue, found.prepared.workspace.root, evaluate,
                         max_evaluations=params.patcher_evaluations, id_prefix="patcher")
    yield machine.Generated(candidate=None, calls=tuple(result.calls),
                            problems=(f"patcher: {result.error}",) if result.error else ())
    for candidate, validated in proposed:  # validated already: the machine only records the verdicts
        yield machine.Generated(candidate=candidate, evaluation=validated.evaluation, calls=validated.calls,
                                problems=validated.problems)


def _reflection(localization: LocalizationReport, target: str) -> str:
    """What the Localization loop concluded about ``target``, one reasoning per inspection."""
    return "\n".join(r.reasoning for r in localization.inspections if r.target == target and r.reasoning)


class RepairRound:
    """One localization's results and what its generators and validations share."""

    def __init__(self, found: DiscoveryResult, localization: LocalizationReport, ctx: ValidationContext):
        self.found, self.localization, self.ctx = found, localization, ctx
        self.progress = create_progress_artifact(0.0, key="validation-progress",
                                                 description="Validation: candidates validated / budget (%)")
        self.generators: dict[str, Candidates] = {}
        self.validated = 0

    def generator(self, step: machine.Generate, params: RepairParameters, config: LLMConfig | None,
                  validate: Validate) -> Candidates:
        """The candidates of the step's generator, one at a time, each with the count screened to find it."""
        found, localization, ctx, targets = self.found, self.localization, self.ctx, step.targets
        match step.generator:
            # the machine asks for the model's generators only in LLM mode
            case "llm-fix" if config is not None:
                return llm_fixes(targets[0], found, localization, ctx, params, config)
            case "patcher" if config is not None:
                return patcher(targets[0], found, localization, ctx, params, config, validate)
            case "confirmed":
                return confirmed_fixes(targets, found, localization, ctx)
            case "mutation":
                confidence = {r.fqn: r.confidence for r in localization.ranking}
                return fix_search(targets, found, ctx.nodes, confidence, params)
        raise AssertionError(f"unknown generator {step.generator!r}, or one of the model's without the model")

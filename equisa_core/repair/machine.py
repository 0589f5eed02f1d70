"""The repair loop (seed 000 §7) as a pure state machine, in the shape of ``equisa_core.common.loop``.

One round: localize (``localize``); find the functions a patch may change (``find-targets``: the
best ``repair_top`` of the ranking that are not excluded and whose source can be read); then ask the
generators for candidates one at a time (``generate``), in this order:

- LLM mode: the model's minimal fix (``llm-fix``), then the multi-retrieval patcher (``patcher``,
  only while no candidate of the round is sound);
- the fixes the Localization loop already confirmed (``confirmed``), then the deterministic search
  (``mutation``): the one-edit mutants and the wider fix space of the targets that fix their tests,
  best-ranked first (``equisa_core.repair.ranking``; driven by ``tasks.repair.fix_search``);

and validate each candidate in full (``validate``; ``equisa_core.validation.checks``). The round ends
at the first ``SOUND`` candidate, after ``max_validations`` candidates, or when the generators are
spent. When none was sound and some were rejected for regressions, the loop goes back to Discovery
(at most ``max_relocalizations`` times) with a bigger test budget and without the functions whose
fixes regressed. The driver is ``flows.repair``.

What a run spends and meets travels on the observations: ``Localized``, ``Generated`` and ``Validated``
carry the model calls they made (``calls``) and the problems they met (``problems``); ``record`` adds
the calls to the state's one ``ledger`` (``equisa_core.common.cost``), whence the report's cost, and
the problems to ``problems``.

The run's time budget (``max_seconds``) is the machine's too: the driver sends the clock
(``Clocked``: seconds since the run started) before each step, and once they reach the budget the
loop stops (``stopped_because``: "time budget (...) spent"), keeping every verdict made so far, so
the report shows the best of them (a plausible candidate stays ``plausible_only``). The machine reads
no clock; the driver also cuts the step in flight at the deadline (``flows.repair``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Literal

from pydantic import Field

from equisa_core.common.cost import CostLedger, LLMCall
from equisa_core.common.loop import Frozen, Verdict
from equisa_core.common.models import Edge, Node
from equisa_core.common.options import RepairLocalizationOptions, default_of
from equisa_core.common.testcode import is_test_support
from equisa_core.errors import BUDGET_SPENT
from equisa_core.errors import budget_spent as _budget_spent
from equisa_core.localization.interface import is_test_file, is_valid_node
from equisa_core.validation.interface import PatchCandidate, PatchEvaluation, PatchStatus

__all__ = [
    "RepairBudget", "RepairState", "RepairStep", "RepairObservation", "Localize", "FindTargets", "Generate",
    "Validate", "Localized", "TargetsFound", "Generated", "Exhausted", "Validated", "Noted",
    "Clocked", "GeneratorName", "BUDGET_SPENT", "EXTRA_TESTS_PER_RELOCALIZATION", "initial_state",
    "next_steps", "record", "verdict", "last_verdict", "patchable_functions", "test_harness",
    "reported_evaluation", "spent_usd", "budget_spent", "seconds_left", "REPORTED_STATUSES",
]

GeneratorName = Literal["llm-fix", "patcher", "confirmed", "mutation"]

#: Generated tests Discovery may keep on top of its budget, per return to Discovery.
EXTRA_TESTS_PER_RELOCALIZATION = 15



class RepairBudget(Frozen):
    """What the repair loop may spend, and which generators it may ask."""

    repair_top: int = Field(3, ge=1, description="Functions the mutation search patches, by confidence.")
    max_validations: int = Field(12, ge=1, description="Candidates validated in full per round.")
    max_relocalizations: int = Field(0, ge=0, description="Returns to Discovery after regressions.")
    llm_fixes: bool = Field(default=False, description="Ask the model for its minimal fix.")
    patcher: bool = Field(default=False, description="Ask the multi-retrieval patcher.")
    max_seconds: float = Field(default_of(RepairLocalizationOptions, "max_seconds"), gt=0,
                               description="Wall-clock seconds of the whole run (``Clocked``).")


class Localize(Frozen):
    """Run Discovery and Localization, with Discovery's budgets raised by the extras."""

    kind: Literal["localize"] = "localize"
    extra_rounds: int = 0
    extra_tests: int = 0


class FindTargets(Frozen):
    """The first ``top`` functions of ``ranked`` whose source can be read (for patching)."""

    kind: Literal["find-targets"] = "find-targets"
    ranked: tuple[str, ...]
    top: int


class Generate(Frozen):
    """The next candidate of ``generator`` for ``targets`` (the first one, for the model's generators)."""

    kind: Literal["generate"] = "generate"
    generator: GeneratorName
    targets: tuple[str, ...]


class Validate(Frozen):
    """Validate ``candidate`` in full."""

    kind: Literal["validate"] = "validate"
    candidate: PatchCandidate
    evaluation: PatchEvaluation | None = Field(
        default=None, description="Its verdict when already made (the patcher validates what it proposes): "
        "the driver then only records it.")


RepairStep = Annotated[Localize | FindTargets | Generate | Validate, Field(discriminator="kind")]


class Localized(Frozen):
    """Localization's ranking, limited to the functions a patch may change (``patchable_functions``),
    and the model calls Discovery and Localization made."""

    kind: Literal["localized"] = "localized"
    patchable: tuple[str, ...]
    calls: tuple[LLMCall, ...] = ()


class TargetsFound(Frozen):
    """The functions to patch, and why others of the ranking could not be read."""

    kind: Literal["targets-found"] = "targets-found"
    targets: tuple[str, ...]
    unreadable: tuple[tuple[str, str], ...] = ()


class Generated(Frozen):
    """One answer of a generator: a candidate (or None), the candidates screened to find it, the model
    calls made and the problems met on the way (those of its own validation, when it made one)."""

    kind: Literal["generated"] = "generated"
    candidate: PatchCandidate | None
    screened: int = 0
    evaluation: PatchEvaluation | None = Field(
        default=None, description="The candidate's verdict, when the generator validated it itself.")
    calls: tuple[LLMCall, ...] = ()
    problems: tuple[str, ...] = ()


class Exhausted(Frozen):
    """The generator has no candidate left this round."""

    kind: Literal["exhausted"] = "exhausted"
    generator: GeneratorName


class Validated(Frozen):
    """The pending candidate's evaluation, the model calls its checks made and the problems they met."""

    kind: Literal["validated"] = "validated"
    evaluation: PatchEvaluation
    calls: tuple[LLMCall, ...] = ()
    problems: tuple[str, ...] = ()


class Noted(Frozen):
    """Problems met on the way (``once``: those already noted are left out)."""

    kind: Literal["noted"] = "noted"
    problems: tuple[str, ...]
    once: bool = False


class Clocked(Frozen):
    """The driver's clock: seconds since the run started (sent before each step)."""

    kind: Literal["clocked"] = "clocked"
    elapsed_s: float = Field(ge=0)


RepairObservation = Annotated[Localized | TargetsFound | Generated | Exhausted | Validated | Noted | Clocked,
                              Field(discriminator="kind")]


class RepairState(Frozen):
    """Where a repair run stands."""

    budget: RepairBudget
    relocalizations: int = 0
    rounds_done: int = 0
    patchable: tuple[str, ...] | None = Field(default=None, description="This round's ranking.")
    excluded: tuple[str, ...] = Field(default=(), description="Functions whose fixes regressed.")
    targets: tuple[str, ...] | None = Field(default=None, description="Functions to patch this round.")
    generators: tuple[GeneratorName, ...] = Field(default=(), description="Generators to ask.")
    pending: PatchCandidate | None = Field(default=None, description="The candidate to validate next.")
    pending_evaluation: PatchEvaluation | None = Field(
        default=None, description="The pending candidate's verdict, when its generator already made it.")
    round_evaluations: tuple[PatchEvaluation, ...] = ()
    evaluations: tuple[PatchEvaluation, ...] = Field(default=(), description="Every verdict.")
    candidates: dict[str, PatchCandidate] = Field(default_factory=dict)
    tried: int = Field(default=0, description="Candidates run against tests (screened or validated).")
    problems: tuple[str, ...] = ()
    ledger: CostLedger = Field(default_factory=CostLedger, description="Every model call of the run.")
    elapsed_s: float = Field(0.0, description="Seconds since the run started, as last observed.")
    stopped_because: str | None = None


def initial_state(budget: RepairBudget) -> RepairState:
    """The state before the first localization."""
    return RepairState(budget=budget)


def next_steps(state: RepairState) -> list[RepairStep]:
    """The one thing to do next, or nothing once the loop has stopped."""
    if state.stopped_because is not None:
        return []
    if state.patchable is None:
        extra = state.relocalizations
        return [Localize(extra_rounds=extra, extra_tests=extra * EXTRA_TESTS_PER_RELOCALIZATION)]
    if state.targets is None:
        ranked = tuple(f for f in state.patchable if f not in state.excluded)
        return [FindTargets(ranked=ranked, top=state.budget.repair_top)]
    if state.pending is not None:
        return [Validate(candidate=state.pending, evaluation=state.pending_evaluation)]
    return [Generate(generator=state.generators[0], targets=state.targets)]


def record(state: RepairState, observation: RepairObservation) -> RepairState:
    """The state after ``observation``: its calls added to the ledger, its problems noted (once)."""
    match observation:
        case Noted():
            return state.model_copy(update={"problems": _noted(state.problems, observation.problems,
                                                               observation.once)})
    if state.stopped_because is not None:
        return state
    match observation:
        case Localized():
            state = _spent(state, observation.calls)
            return state.model_copy(update={"patchable": observation.patchable})
        case TargetsFound():
            return _targets_found(state, observation)
        case Generated():
            state = _spent(state, observation.calls, observation.problems)
            return _generated(state, observation)
        case Exhausted():
            return _exhausted(state, observation.generator)
        case Validated():
            state = _spent(state, observation.calls, observation.problems)
            return _validated(state, observation.evaluation)
        case Clocked():
            return _clocked(state, observation.elapsed_s)
    return state


def budget_spent(state: RepairState) -> bool:
    """Whether the run stopped because its time budget ran out."""
    return _budget_spent(state.stopped_because)


def seconds_left(state: RepairState) -> float:
    """Seconds of the time budget left, as last observed (0 once spent)."""
    return max(0.0, state.budget.max_seconds - state.elapsed_s)


def spent_usd(state: RepairState) -> float:
    """USD the run spent on the model, rounded to a millionth of a dollar: the ledger's sum."""
    return state.ledger.usd


def verdict(state: RepairState) -> Verdict | None:
    """None while the loop goes on; else why it stopped (``converged``: a candidate is sound)."""
    if state.stopped_because is None:
        return None
    return Verdict(reason=state.stopped_because,
                   converged=any(e.status is PatchStatus.SOUND for e in state.evaluations))


def last_verdict(state: RepairState, generator: GeneratorName) -> PatchEvaluation | None:
    """This round's latest verdict on a candidate of ``generator``: what the generator hears back
    (the model's fix is re-asked with the reason it was rejected)."""
    for evaluation in reversed(state.round_evaluations):
        candidate = state.candidates.get(evaluation.candidate)
        if candidate is not None and candidate.generator == generator:
            return evaluation
    return None


def patchable_functions(ranking: Sequence[str], nodes: Mapping[str, Node],
                        edges: Iterable[Edge] = ()) -> tuple[str, ...]:
    """The functions of ``ranking`` a patch may change: known nodes, neither test code nor the test
    harness, in order. The harness is the project's test support (``is_test_support``: its
    ``testing.py`` and the like) and code outside the test files that calls test code (a runner's or
    a decorator's wrapper, as ``edges`` show): patching it could make a failing test pass by not
    running it."""
    harness = test_harness(nodes, edges)
    return tuple(f for f in ranking if (node := nodes.get(f)) is not None and is_valid_node(node)
                 and not is_test_support(node.file or "") and f not in harness)


def test_harness(nodes: Mapping[str, Node], edges: Iterable[Edge]) -> frozenset[str]:
    """Functions outside the test files that call a function of a test file."""

    def in_tests(fqn: str) -> bool:
        node = nodes.get(fqn)
        return node is not None and is_test_file(node.file or "")

    return frozenset(e.caller for e in edges if in_tests(e.callee) and not in_tests(e.caller)
                     and e.caller in nodes)


test_harness.__dict__["__test__"] = False  # not a pytest test (pytest reads the attribute)


#: The statuses of a patch the report may show, best first: a fix, then a plausible patch against
#: which nothing was found, then one the anti-overfitting checks weigh against.
REPORTED_STATUSES = (PatchStatus.SOUND, PatchStatus.UNCONFIRMED, PatchStatus.OVERFITTING)


def reported_evaluation(evaluations: Sequence[PatchEvaluation]) -> PatchEvaluation | None:
    """The evaluation whose patch the report shows: the first sound one, else the plausible one
    (unconfirmed, then overfitting) that changes the function's behaviour least outside the failing
    tests (``PatchEvaluation.divergence``; unmeasured counts as most), the earliest among equals;
    else none."""
    for status in REPORTED_STATUSES:
        found = [(position, e) for position, e in enumerate(evaluations) if e.status is status]
        if found:
            return min(found, key=lambda pair: (pair[1].divergence is None, pair[1].divergence or 0.0,
                                                pair[0]))[1]
    return None


def _noted(problems: tuple[str, ...], new: Sequence[str], once: bool) -> tuple[str, ...]:
    out = list(problems)
    for problem in new:
        if not once or problem not in out:
            out.append(problem)
    return tuple(out)


def _spent(state: RepairState, calls: Sequence[LLMCall], problems: Sequence[str] = ()) -> RepairState:
    """``state`` with ``calls`` in its ledger and ``problems`` noted (those already noted left out)."""
    return state.model_copy(update={"ledger": state.ledger.plus(calls),
                                    "problems": _noted(state.problems, problems, once=True)})


def _targets_found(state: RepairState, found: TargetsFound) -> RepairState:
    notes = [f"{fqn} cannot be patched: {why}" for fqn, why in found.unreadable]
    problems = _noted(state.problems, notes, once=True)  # once over the rounds
    if not found.targets:
        problems = (*problems, "no function to patch: every candidate was excluded or is test code")
        return _round_over(state.model_copy(update={"targets": (), "problems": problems}))
    budget = state.budget
    asked: list[tuple[bool, GeneratorName]] = [(budget.llm_fixes, "llm-fix"), (budget.patcher, "patcher"),
                                               (True, "confirmed"), (True, "mutation")]
    generators = [name for wanted, name in asked if wanted]
    return state.model_copy(update={"targets": found.targets, "problems": problems,
                                    "generators": tuple(generators)})


def _generated(state: RepairState, generated: Generated) -> RepairState:
    tried = state.tried + generated.screened
    candidate = generated.candidate
    if candidate is None or state.pending is not None or state.targets is None:
        return state.model_copy(update={"tried": tried})
    return state.model_copy(update={"tried": tried + 1, "pending": candidate,
                                    "pending_evaluation": generated.evaluation,
                                    "candidates": {**state.candidates, candidate.id: candidate}})


def _exhausted(state: RepairState, generator: GeneratorName) -> RepairState:
    left = tuple(g for g in state.generators if g != generator)
    if left[:1] == ("patcher",) and any(e.status is PatchStatus.SOUND for e in state.round_evaluations):
        left = left[1:]  # the patcher is asked only while no candidate is accepted
    state = state.model_copy(update={"generators": left})
    return state if left else _round_over(state)


def _validated(state: RepairState, evaluation: PatchEvaluation) -> RepairState:
    if state.pending is None:
        return state
    done = (*state.round_evaluations, evaluation)
    state = state.model_copy(update={"pending": None, "pending_evaluation": None, "round_evaluations": done})
    if evaluation.status is PatchStatus.SOUND or len(done) >= state.budget.max_validations:
        return _round_over(state)
    return state


def _clocked(state: RepairState, elapsed_s: float) -> RepairState:
    """The state at ``elapsed_s``: stopped once the time budget is reached, with every verdict made
    so far kept (those of this round and a verdict its generator already made on the pending
    candidate; a candidate not validated yet is dropped)."""
    elapsed = max(state.elapsed_s, elapsed_s)
    state = state.model_copy(update={"elapsed_s": elapsed})
    if elapsed < state.budget.max_seconds:
        return state
    made = (*state.round_evaluations, *([state.pending_evaluation] if state.pending_evaluation else []))
    return state.model_copy(update={
        "evaluations": (*state.evaluations, *made), "round_evaluations": (), "generators": (),
        "pending": None, "pending_evaluation": None,
        "stopped_because": f"{BUDGET_SPENT} ({state.budget.max_seconds:g}s) spent after {elapsed:.0f}s"})


def _round_over(state: RepairState) -> RepairState:
    """The state after a round: stopped, or ready to localize again without the regressed functions."""
    round_evaluations = state.round_evaluations
    regressed = sorted({target for e in round_evaluations if e.status is PatchStatus.REGRESSIONS
                        and (target := state.candidates[e.candidate].target)})
    update: dict[str, object] = {"evaluations": (*state.evaluations, *round_evaluations),
                                 "round_evaluations": (), "rounds_done": state.rounds_done + 1,
                                 "generators": (), "pending": None, "pending_evaluation": None}
    if any(e.status is PatchStatus.SOUND for e in round_evaluations):
        update["stopped_because"] = "a sound candidate"
    elif not regressed:
        update["stopped_because"] = ("no candidate was sound or regressed" if round_evaluations
                                     else "no candidate left to validate")
    elif state.relocalizations >= state.budget.max_relocalizations:
        update["stopped_because"] = f"relocalization budget ({state.budget.max_relocalizations}) spent"
    else:
        update.update(relocalizations=state.relocalizations + 1, patchable=None, targets=None,
                      excluded=tuple(sorted({*state.excluded, *regressed})))
    return state.model_copy(update=update)

"""The Discovery loop (seed 000 §4) as a pure state machine, in the shape of ``equisa_core.common.loop``.

From the traced suite, while the budget lasts and ``rules.groups_to_split`` names ambiguity groups
(those near the top of the prior, ``rules.near_the_top``, unless ``top`` is 0), one round:

1. ``propose-tests``: generate disambiguating tests for those groups (carved, the model's, testgen's);
2. ``check-tests``: run them in a sandbox, traced; ``record`` keeps the tests that behave (carved and
   testgen tests must pass; a model's test may fail on an assertion, which is evidence) and split
   their group, at most the test budget's room;
3. ``score-suite``: add the kept tests to the suite's trace, and score it again (its ambiguity groups
   and the prior).

The loop stops when Discovery is off, no test fails, a budget is spent, no group is left or no
generated test could be kept (``verdict``). The driver is ``flows.discovery``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Annotated, Literal

from pydantic import Field

from equisa_core.common.cost import CostLedger, LLMCall
from equisa_core.common.loop import Frozen, Verdict
from equisa_core.common.models import CollectError, TestOutcome, TestResult
from equisa_core.discovery.rules import (
    DiscoveryBudget,
    DiscoveryRound,
    groups_to_split,
    keep_test_functions,
    module_test_names,
    near_the_top,
)
from equisa_core.validation.interface import is_testgen_test

__all__ = [
    "Group", "Proposal", "DiscoveryState", "DiscoveryStep", "DiscoveryObservation", "ScoreSuite",
    "ProposeTests", "CheckTests", "Scored", "Proposed", "Checked", "initial_state", "next_steps", "record",
    "stops_at_once", "verdict", "unfit", "UNSPLIT_TRIED",
]

#: An ambiguity group: its members' FQNs, sorted.
Group = tuple[str, ...]
#: Why a carving-only Discovery stops when every group worth a try had one in an earlier round.
UNSPLIT_TRIED = "every group left was tried in an earlier round (carving would propose the same tests)"


class Proposal(Frozen):
    """One generated test module and the group its tests are to split."""

    group: Group
    source: str


class ScoreSuite(Frozen):
    """Add the checked tests ``add`` to the suite's trace; then its ambiguity groups and prior."""

    kind: Literal["score-suite"] = "score-suite"
    add: tuple[str, ...] = ()


class ProposeTests(Frozen):
    """Generate tests splitting ``groups`` (modules numbered from ``first_index``), beside ``overlay``."""

    kind: Literal["propose-tests"] = "propose-tests"
    groups: tuple[Group, ...]
    first_index: int
    overlay: dict[str, str]


class CheckTests(Frozen):
    """Run the proposed modules, traced, beside ``overlay``."""

    kind: Literal["check-tests"] = "check-tests"
    proposals: dict[str, Proposal]
    overlay: dict[str, str]


DiscoveryStep = Annotated[ScoreSuite | ProposeTests | CheckTests, Field(discriminator="kind")]


class Scored(Frozen):
    """The suite's ambiguity groups and the prior's scores of its functions."""

    kind: Literal["scored"] = "scored"
    groups: tuple[Group, ...]
    prior: dict[str, float]


class Proposed(Frozen):
    """The generated modules (path -> proposal), the model calls made for them (cached ones
    included), and the problems met."""

    kind: Literal["proposed"] = "proposed"
    proposals: dict[str, Proposal]
    calls: tuple[LLMCall, ...] = ()
    problems: tuple[str, ...] = ()


class Checked(Frozen):
    """The check run's results, or why not one proposed module imports (``collection_error``)."""

    kind: Literal["checked"] = "checked"
    tests: tuple[TestResult, ...] = ()
    collect_errors: tuple[CollectError, ...] = ()
    collection_error: str | None = None


DiscoveryObservation = Annotated[Scored | Proposed | Checked, Field(discriminator="kind")]


class DiscoveryState(Frozen):
    """Where the Discovery loop stands."""

    budget: DiscoveryBudget
    top: int = Field(10, ge=0, description="Split only groups near the prior's top this many; 0: all.")
    retry_groups: bool = Field(True, description=(
        "Whether a group an earlier round targeted may be targeted again. False when only carving "
        "proposes (no model, no testgen): carving the same group again records the same tests and "
        "proposes the same tests, so a second try costs one or two sandboxed runs and keeps nothing."))
    groups: tuple[Group, ...] = Field(default=(), description="The suite's ambiguity groups now.")
    scored: bool = Field(default=False, description="Whether ``groups`` are the suite's now.")
    targets: tuple[Group, ...] = Field(default=(), description="This round's groups.")
    proposals: dict[str, Proposal] | None = Field(default=None, description="This round's modules.")
    rounds: tuple[DiscoveryRound, ...] = ()
    kept: tuple[str, ...] = Field(default=(), description="Ids of the generated tests kept, in order.")
    overlay: dict[str, str] = Field(default_factory=dict, description="Kept modules: path -> source.")
    ledger: CostLedger = Field(default_factory=CostLedger, description="The model calls of the rounds.")
    problems: tuple[str, ...] = ()
    stopped_because: str | None = None


def initial_state(budget: DiscoveryBudget, top: int, groups: Sequence[Group], enabled: bool,
                    failing: bool, problems: Sequence[str] = (), retry_groups: bool = True) -> DiscoveryState:
    """The state after the first trace (``groups``, ``failing``: whether a test fails;
    ``retry_groups``: see ``DiscoveryState``)."""
    state = DiscoveryState(budget=budget, top=top, groups=tuple(tuple(sorted(g)) for g in groups),
                           problems=tuple(problems), retry_groups=retry_groups)
    if not enabled:
        return state.model_copy(update={"stopped_because": "turned off"})
    if not failing:
        return state.model_copy(update={"stopped_because": "no failing test"})
    return state


def next_steps(state: DiscoveryState) -> list[DiscoveryStep]:
    """The one thing to do next, or nothing once the loop has stopped."""
    if state.stopped_because is not None:
        return []
    if not state.scored:
        add = state.kept[len(state.kept) - state.rounds[-1].kept:] if state.rounds else ()
        return [ScoreSuite(add=add)]
    if state.proposals is None:
        return [ProposeTests(groups=state.targets, first_index=sum(len(r.groups) for r in state.rounds),
                             overlay=state.overlay)]
    return [CheckTests(proposals=state.proposals, overlay=state.overlay)]


def record(state: DiscoveryState, observation: DiscoveryObservation) -> DiscoveryState:
    """The state after ``observation``."""
    if state.stopped_because is not None:
        return state
    match observation:
        case Scored():
            return _scored(state, observation)
        case Proposed():
            state = state.model_copy(update={
                "proposals": observation.proposals, "ledger": state.ledger.plus(observation.calls),
                "problems": (*state.problems, *observation.problems)})
            if not observation.proposals or state.budget.max_tests - len(state.kept) <= 0:
                return _round_done(state, {}, [], [])
            return state
        case Checked():
            return _checked(state, observation)
    return state


def stops_at_once(state: DiscoveryState, groups: Sequence[Collection[str]], prior: Mapping[str, float],
                  ) -> str | None:
    """Why Discovery, started as ``state``, stops before it proposes a test (its first scoring of
    the suite as traced, ``groups`` and ``prior``, leaves no group to split), or None when it goes
    on. The localization asks this before it runs Discovery, which would otherwise publish a
    progress artifact and set up a loop that ends at its first scoring."""
    if state.stopped_because is None:
        state = record(state, Scored(groups=tuple(tuple(sorted(g)) for g in groups), prior=dict(prior)))
    return state.stopped_because


def verdict(state: DiscoveryState) -> Verdict | None:
    """None while the loop goes on; else why it stopped (``converged``: no group is left to split)."""
    if state.stopped_because is None:
        return None
    return Verdict(reason=state.stopped_because,
                   converged=state.stopped_because.startswith("no ambiguity group"))


def unfit(test: TestResult, carved: bool, observed: bool = False) -> str | None:
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


def _scored(state: DiscoveryState, scored: Scored) -> DiscoveryState:
    """The next round's groups, or why the loop stops: the groups worth tests near the prior's top."""
    groups = [frozenset(g) for g in scored.groups]
    budget, rounds, kept = state.budget, len(state.rounds), len(state.kept)
    worth = near_the_top(groups, scored.prior, state.top) if state.top else groups
    tried = {frozenset(g) for done in state.rounds for g in done.groups}
    untried = worth if state.retry_groups else [g for g in worth if g not in tried]
    targets = groups_to_split(untried, scored.prior, budget, rounds, kept)
    update: dict[str, object] = {"groups": tuple(tuple(sorted(g)) for g in scored.groups), "scored": True,
                                 "targets": tuple(tuple(sorted(g)) for g in targets), "proposals": None}
    if not targets:
        if rounds >= budget.max_rounds:
            update["stopped_because"] = f"round budget ({budget.max_rounds}) spent"
        elif kept >= budget.max_tests:
            update["stopped_because"] = f"test budget ({budget.max_tests}) spent"
        elif len(untried) < len(worth) and groups_to_split(worth, scored.prior, budget, rounds, kept):
            update["stopped_because"] = UNSPLIT_TRIED
        else:
            update["stopped_because"] = ("no ambiguity group of two or more left"
                                         + (" near the top of the prior" if state.top else ""))
    return state.model_copy(update=update)


def _checked(state: DiscoveryState, checked: Checked) -> DiscoveryState:
    """Keep the proposed tests that behave and split their group, at most the test budget's room.

    A test that executes every member of its group splits nothing (a carved test of a caller that
    calls the others), so it is dropped too; so is a testgen test that splits its group as a kept
    one already does.
    """
    proposals = state.proposals or {}
    if checked.collection_error is not None:
        # Not one proposed module imports (a carved import that works only beside the project's own
        # test files, for one): none is kept, and Discovery goes on without them.
        dropped = [f"{path}: does not collect ({checked.collection_error})" for path in sorted(proposals)]
        return _round_done(state, {}, [], dropped)
    by_file: dict[str, list[TestResult]] = {}
    for test in checked.tests:
        by_file.setdefault(test.test_id.split("::", 1)[0], []).append(test)
    dropped = [f"{e.location}: does not collect ({e.message.splitlines()[-1] if e.message else 'error'})"
               for e in checked.collect_errors]
    room = state.budget.max_tests - len(state.kept)
    kept: dict[str, str] = {}
    kept_ids: list[str] = []
    splits: dict[Group, set[frozenset[str]]] = {}  # group -> the member sets kept tests run
    for path, proposal in sorted(proposals.items()):  # carved, then the model's, then testgen's
        good = _good_tests(path, proposal, by_file.get(path, []), splits.setdefault(proposal.group, set()),
                           room, dropped)
        kept_ids.extend(test_id for _, test_id in good)
        room -= len(good)
        if good:
            kept[path] = keep_test_functions(proposal.source, [name for name, _ in good])
    return _round_done(state, kept, kept_ids, dropped)


def _good_tests(path: str, proposal: Proposal, tests: Sequence[TestResult], seen: set[frozenset[str]],
                room: int, dropped: list[str]) -> list[tuple[str, str]]:
    """The (name, id) of the tests of module ``path`` to keep (at most ``room``); notes the others'
    reasons in ``dropped`` and the member sets kept tests run in ``seen``."""
    testgen = is_testgen_test(path)
    carved = "/test_carved_" in path or testgen
    group = frozenset(proposal.group)
    good: list[tuple[str, str]] = []
    for test in tests:
        split = frozenset(group & test.covered)
        reason = unfit(test, carved, observed=testgen) or (
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
            good.append((test.test_id.split("::")[-1].split("[", 1)[0], test.test_id))
    return good


def _round_done(state: DiscoveryState, kept: Mapping[str, str], kept_ids: Sequence[str],
                dropped: Sequence[str]) -> DiscoveryState:
    """The state after a round's check: the round recorded; stopped when it kept no test."""
    proposals = state.proposals or {}
    this = DiscoveryRound(
        round=len(state.rounds) + 1, groups=state.targets,
        proposed=sum(len(module_test_names(p.source)) for p in proposals.values()),
        kept=len(kept_ids), dropped=tuple(dropped),
        testgen_proposed=sum(len(module_test_names(p.source)) for path, p in proposals.items()
                             if is_testgen_test(path)),
        testgen_kept=sum(1 for t in kept_ids if is_testgen_test(t)),
    )
    update: dict[str, object] = {"rounds": (*state.rounds, this), "kept": (*state.kept, *kept_ids),
                                 "overlay": {**state.overlay, **kept}, "scored": False}
    if not kept_ids:
        update["stopped_because"] = "no generated test could be kept"
    return state.model_copy(update=update)

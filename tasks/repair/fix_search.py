"""The repair's deterministic search (the machine's ``mutation`` generator).

For each target function it makes the one-edit mutants (``equisa_core.mutation.mutants``) and
the wider fix space (``equisa_core.repair.fix_space``), ranks all the targets' candidates
together (``equisa_core.repair.ranking``: the function's confidence, the fix pattern's prior and
the edit's size), and screens them best first in parallel sandboxed processes, one per core
(``run_mutants``): each candidate runs against its function's tests, the failing ones first, and
its round stops at the first test it breaks or when it fixes none of the failing ones. The screens
share a time budget (``search_seconds``), not a count. The candidates that fix every failing test
of their function and break none of its passing ones are handed to the machine best-ranked first,
to be validated in full.

Two-edit patches come from partial fixes: when no candidate fixes every failing test but some fix
a part of them and break nothing, the best few (``MAX_PARTIAL_FIXES_EXTENDED``) each get every
one-edit candidate of their own text, ranked the same way (the edit size counts both edits), and
screened in the time left. A candidate that only replaces a name nothing defines (it reads fewer
such names than the original and no new one: ``removes_undefined``) counts as a partial fix
whenever it ran, even if it fixes no failing test: the original raised ``NameError`` wherever that
name was read, so the replacement changes no run that did not crash there, and any fix of the
function must make it (a misspelt name and a wrong comparison: two edits).
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache, partial
from pathlib import Path

from equisa_core.common.models import Node, TestOutcome
from equisa_core.common.source_edit import replace_function
from equisa_core.errors import InvalidReplacementError
from equisa_core.localization.fix_evidence import classify_mutants
from equisa_core.localization.selection import tests_for_node
from equisa_core.mutation.fix_context import fix_context
from equisa_core.mutation.mutants import Mutant, mutate_function
from equisa_core.repair import machine
from equisa_core.repair.fix_prior import candidate_score, load_fix_prior
from equisa_core.repair.fix_space import fix_candidates
from equisa_core.repair.operators.idioms import undefined_names
from equisa_core.repair.ranking import PatternScore, RankedCandidate, rank_candidates, spread
from equisa_core.validation.candidates import PatchCandidate, PatchEvaluation
from equisa_core.validation.generated_tests import without_testgen
from tasks.discovery.suite import DiscoveryResult
from tasks.localization.inspections import must_fix
from tasks.run.mutants import MutantRunReport, MutantSpec, run_mutants
from tasks.run.parameters import RepairParameters
from tasks.run.patched_function import file_of, qualname_of, read_function
from tasks.run.prepared_run import focused_request
from tasks.sandbox.contract import RunRequest

__all__ = ["Searched", "edit_size_score", "fix_search", "pattern_score_of", "target_candidates"]

#: The pattern score until a fitted prior is given: the smaller edit first, every pattern alike.
EDIT_WEIGHT = 1.0
#: The pattern of a candidate made of a partial fix and one more edit.
TWO_EDITS = "two_edits"
#: Partial fixes given a second edit, best-ranked first, when no candidate fixes every failing test.
MAX_PARTIAL_FIXES_EXTENDED = 3
#: The second-edit round runs only when at least this much of the search's time is left.
MIN_SECOND_EDIT_S = 5.0


def edit_size_score(pattern: str, edit_size: int) -> float:
    """Every pattern alike; the smaller edit first."""
    return -EDIT_WEIGHT * edit_size


def pattern_score_of(fix_prior: str) -> PatternScore:
    """The search order's pattern score for ``--fix-prior`` (``ValidationOptions.fix_prior``)."""
    if fix_prior == "size":
        return edit_size_score
    prior = load_fix_prior(None if fix_prior == "fitted" else Path(fix_prior))
    return partial(candidate_score, prior)


@dataclass(frozen=True)
class Searched:
    """One target's candidates and the tests they are screened against."""

    target: str
    node: Node
    module_text: str
    candidates: list[Mutant]
    tests: tuple[str, ...]
    source: str  # the target's text: the partial fix's, for second edits


def target_candidates(target: str, node: Node, found: DiscoveryResult, params: RepairParameters,
                      ) -> Searched:
    """The target's mutants, then its fix-space candidates (no source twice), and its tests."""
    text, source = read_function(found.prepared.workspace.root, node)
    tests = tests_for_node(target, found.trace, max_tests=params.max_tests_per_inspection).test_ids
    return Searched(target, node, text, _one_edit(source, target, node, text, params), tuple(tests), source)


def _one_edit(source: str, target: str, node: Node, module_text: str, params: RepairParameters,
              ) -> list[Mutant]:
    """The mutants of ``source`` (the target's text, or a partial fix of it), then its fix space."""
    start = node.start_line or 1
    candidates = mutate_function(source, target, start_line=start,
                                 max_mutants=params.max_mutants_per_function)
    if params.max_fixes_per_function:
        context = fix_context(module_text, qualname_of(node))
        seen = {m.source for m in candidates}
        for fix in fix_candidates(source, target, start_line=start, context=context,
                                  limit=params.max_fixes_per_function):
            if fix.source not in seen:
                seen.add(fix.source)
                candidates.append(fix)
    return candidates


@dataclass(frozen=True)
class _Screened:
    """What parallel screens found: how many candidates ran, the fixing and the partial fixes."""

    ran: int
    fixing: list[RankedCandidate]
    partial: list[RankedCandidate]


def fix_search(targets: Sequence[str], found: DiscoveryResult, nodes: Mapping[str, Node],
               confidence: Mapping[str, float], params: RepairParameters,
               pattern_score: PatternScore | None = None,
               ) -> Generator[machine.Generated, PatchEvaluation | None, None]:
    """The fixing candidates of ``targets``, best-ranked first (see the module docstring);
    ``pattern_score`` defaults to the one ``params.fix_prior`` names."""
    started = time.monotonic()
    pattern_score = pattern_score or pattern_score_of(params.fix_prior)
    searched = {}
    for target in targets:
        node = nodes[target]
        if node.file:
            found_here = target_candidates(target, node, found, params)
            if found_here.candidates and found_here.tests:
                searched[target] = found_here
    ranked = rank_candidates({t: s.candidates for t, s in searched.items()}, confidence, pattern_score)
    screened = _screen(ranked, searched, found, params, params.search_seconds)
    fixing, ran = screened.fixing, screened.ran
    left = params.search_seconds - (time.monotonic() - started)
    if not fixing and screened.partial and left >= MIN_SECOND_EDIT_S:
        searched = _second_edits(screened.partial, searched, params)
        ranked = rank_candidates({t: s.candidates for t, s in searched.items()}, confidence, pattern_score)
        second = _screen(ranked, searched, found, params, left)
        fixing, ran = second.fixing, ran + second.ran
    yield machine.Generated(candidate=None, screened=ran)
    for chosen in fixing:
        target, mutant = chosen.target, chosen.mutant
        yield machine.Generated(candidate=PatchCandidate(
            id=f"mutation-{target.rsplit('.', 1)[-1]}-{_short_id(chosen)}", generator="mutation",
            target=target,
            description=f"{target}: {mutant.description}",
            files={file_of(searched[target].node): _with_function(searched[target], mutant.source)},
            edit_size=mutant.edit_size, operator=mutant.operator,
        ))


def _short_id(candidate: RankedCandidate) -> str:
    return f"m{candidate.index}" if candidate.mutant.pattern != TWO_EDITS else f"p{candidate.index}"


def _screen(ranked: Sequence[RankedCandidate], searched: Mapping[str, Searched], found: DiscoveryResult,
            params: RepairParameters, budget_s: float) -> _Screened:
    """Screen ``ranked`` in parallel (one process per core, ``budget_s`` each); the fixing and the
    partial fixes, best-ranked first."""
    position = {(c.target, c.index): rank for rank, c in enumerate(ranked)}
    parts = spread(ranked, params.shards or os.cpu_count() or 1)
    futures = [run_mutants.submit(_screen_request(part, searched, found, budget_s), backend=params.sandbox,
                                  docker_image=params.docker_image,
                                  interpreter_version=found.prepared.interpreter_version)
               for part in parts]
    ran, fixing, partial = 0, list[RankedCandidate](), list[RankedCandidate]()
    for part, future in zip(parts, futures, strict=True):
        report: MutantRunReport = future.result()
        part_ran, part_fixing, part_partial = _fixing(part, report, searched)
        ran, fixing, partial = ran + part_ran, fixing + part_fixing, partial + part_partial

    def in_rank_order(found_ones: list[RankedCandidate]) -> list[RankedCandidate]:
        return sorted(found_ones, key=lambda c: position[(c.target, c.index)])

    return _Screened(ran, in_rank_order(fixing), in_rank_order(partial))


def _second_edits(partial: Sequence[RankedCandidate], searched: Mapping[str, Searched],
                  params: RepairParameters) -> dict[str, Searched]:
    """Two-edit candidates: each of the best ``MAX_PARTIAL_FIXES_EXTENDED`` partial fixes (fixes
    some failing tests, breaks none) with one more edit of the fix space."""
    made: dict[str, list[Mutant]] = {}
    for first in partial[:MAX_PARTIAL_FIXES_EXTENDED]:
        here = searched[first.target]
        seen = {m.source for m in made.get(first.target, [])}
        for second in _one_edit(first.mutant.source, first.target, here.node, here.module_text, params):
            if second.source not in seen:
                seen.add(second.source)
                made.setdefault(first.target, []).append(second.model_copy(update={
                    "description": f"{first.mutant.description}; and {second.description}",
                    "edit_size": first.mutant.edit_size + second.edit_size, "pattern": TWO_EDITS}))
    return {target: replace(searched[target], candidates=candidates) for target, candidates in made.items()}


def _spec_id(candidate: RankedCandidate) -> str:
    return f"{candidate.target}#m{candidate.index}"


def _screen_request(part: Sequence[RankedCandidate], searched: Mapping[str, Searched], found: DiscoveryResult,
                    budget_s: float) -> RunRequest:
    """One parallel screen: its candidates in rank order, each against its own function's tests."""
    specs = tuple(MutantSpec(id=_spec_id(c), fqn=c.target, file=searched[c.target].node.file or "",
                             source=c.mutant.source, tests=searched[c.target].tests) for c in part)
    only = sorted({t for c in part for t in searched[c.target].tests})
    return focused_request(found.prepared, only, found.overlay, mutants=specs, mutants_fail_fast=True,
                           mutants_must_fix=must_fix(found.trace, only),
                           mutants_budget_s=budget_s, trace=False)


def _fixing(part: Sequence[RankedCandidate], report: MutantRunReport, searched: Mapping[str, Searched],
            ) -> tuple[int, list[RankedCandidate], list[RankedCandidate]]:
    """How many of the screen's candidates ran, those that fix their function's tests, and those
    that fix some of its failing tests and break none of its passing ones."""
    # Testgen tests assert the buggy behaviour: they may not veto a fixing candidate.
    original = without_testgen({t: o for t, o in report.original.items() if t not in report.flaky})
    ran = 0
    fixing, partial = [], []
    for candidate in part:
        result = report.mutants.get(_spec_id(candidate))
        if result is None or result.status not in ("ran", "timeout"):
            continue
        ran += 1
        tests = set(searched[candidate.target].tests)
        own: dict[str, TestOutcome] = {t: o for t, o in original.items() if t in tests}
        verdict = classify_mutants(own, {"c": without_testgen(result.outcomes)})
        if verdict.fixing:
            fixing.append(candidate)
        elif verdict.partial or removes_undefined(candidate.mutant.source, searched[candidate.target]):
            partial.append(candidate)
    return ran, fixing, partial


def removes_undefined(candidate_source: str, searched: Searched) -> bool:
    """Whether a candidate reads fewer names that nothing defines than its target, and no new one."""
    before = _undefined_in(searched.source, searched.module_text, qualname_of(searched.node))
    if not before:
        return False
    try:
        after = _undefined_in(candidate_source, searched.module_text, qualname_of(searched.node))
    except InvalidReplacementError:
        return False
    return after < before


@cache
def _undefined_in(source: str, module_text: str, qualname: str) -> frozenset[str]:
    return undefined_names(source, fix_context(module_text, qualname))


def _with_function(searched: Searched, function: str) -> str:
    return replace_function(searched.module_text, qualname_of(searched.node), function)

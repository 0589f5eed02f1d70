"""Evidence from mutants of an inspected function: does a one-edit change of it fix the failure?

The seed's deterministic evidence (an invariant assertion firing inside the target) is rare for
real bugs: a wrong comparison or constant breaks no invariant that passing runs could teach. What
such a bug does have is a *fix* nearby. So when the Localization loop inspects a node in
deterministic mode, it also runs mutants of that node (``equisa_core.mutation.mutants``) against the same
tests (mutation-based fault localization, as in Metallaxis and MUSE, reduced to the question a
debugger asks: "does a small change here make the failing tests pass without breaking others?").

Classification of one node's mutant run (only mutants that ran count):

=================== ============================================================================
evidence            when
=================== ============================================================================
FIX_FOUND           some mutant makes every failing test of the selection pass and breaks none of
                    its passing tests
PARTIAL_FIX_FOUND   no such mutant, but one makes some failing tests pass and breaks none
FAILURE_CHANGED     no such mutant, but one changes how a failing test fails: another exception or
                    message, or it passes while others break (graded mutant evidence: a change here
                    reaches the failure, as Metallaxis and MUSE count it)
NO_FIX_FOUND        mutants ran and none of the above: no one-edit change here reaches the failure
(none)              no mutant ran: nothing is learnt
=================== ============================================================================

A node with a fix is inspected again, and the fix is run against the whole (amplified) suite:
FIX_CONFIRMED when every failing test passes and no passing test fails, else FIX_REGRESSES.

The likelihoods below are EQUISA's, not the seed's (whose table ``bayes.LIKELIHOODS`` stays
verbatim); each evidence is applied with ``bayes.update_with_likelihoods``, after the seed's
outcome for the same inspection. Rationale for the values: single-edit bugs (the classes the
mutation operators cover) have a fixing mutant in the buggy function most of the time, while an
innocent function only rarely has a one-edit change that makes the failing tests pass and keeps
its own tests green — and more rarely still one that keeps the whole suite green. They are
calibrated on the localization corpus (``bench/localization_corpus.py``):

- NO_FIX_FOUND is weak evidence: a third of the corpus bugs (wrong string constants, wrong return
  expressions, missing guards) have no one-edit fix among the operators, and every uninspected node
  keeps its prior. Its ratio 0.6/0.9 = 2/3 exactly cancels the seed's COLLATERAL_FAILURE (0.6/0.4),
  the outcome that comes with it when the inspection patch saw nothing: "inspected, nothing found"
  leaves a node's odds where the prior put them, instead of sinking the bug below uninspected
  innocents (it did, at 0.40/0.92: sqlparse-05 went from rank 1 to 17).
- FAILURE_CHANGED is mild evidence for the node: most functions that a failing test runs have
  mutants that change nothing in its failure (the failure does not flow through them), while the
  faulty function's mutants nearly always reach it. Messages are compared with memory addresses
  blanked, so that two runs of the same failure read the same.
- FIX_CONFIRMED, a one-edit change that turns every failing test green and keeps the whole suite
  green, rarely happens in an innocent function; after FIX_FOUND it takes a typical prior past 0.9.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from enum import StrEnum
from types import MappingProxyType

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.models import TestOutcome

__all__ = ["FixEvidence", "FIX_LIKELIHOODS", "FixVerdict", "classify_mutants", "confirm_fix"]


class FixEvidence(StrEnum):
    """What the mutants of one node showed; each value is its name."""

    FIX_FOUND = "FIX_FOUND"
    PARTIAL_FIX_FOUND = "PARTIAL_FIX_FOUND"
    FAILURE_CHANGED = "FAILURE_CHANGED"
    NO_FIX_FOUND = "NO_FIX_FOUND"
    FIX_CONFIRMED = "FIX_CONFIRMED"
    FIX_REGRESSES = "FIX_REGRESSES"

    @property
    def likelihoods(self) -> tuple[float, float]:
        """``(P(E|B), P(E|~B))`` for this evidence, from ``FIX_LIKELIHOODS``."""
        return FIX_LIKELIHOODS[self]


#: ``(P(E|B), P(E|~B))`` per kind of fix evidence (read-only); see the module docstring.
FIX_LIKELIHOODS: Mapping[FixEvidence, tuple[float, float]] = MappingProxyType(
    {
        FixEvidence.FIX_FOUND: (0.60, 0.03),
        FixEvidence.PARTIAL_FIX_FOUND: (0.15, 0.05),
        FixEvidence.FAILURE_CHANGED: (0.60, 0.40),
        FixEvidence.NO_FIX_FOUND: (0.60, 0.90),
        FixEvidence.FIX_CONFIRMED: (0.90, 0.08),
        FixEvidence.FIX_REGRESSES: (0.50, 0.50),
    }
)

_GREEN = (TestOutcome.PASSED,)
#: A memory address in a failure message (``<object at 0x7f...>``): blanked before comparing.
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_RED = (TestOutcome.FAILED, TestOutcome.ERROR)


class FixVerdict(BaseModel):
    """The classification of one node's mutant run."""

    model_config = ConfigDict(frozen=True)

    evidence: FixEvidence | None = Field(description="None when no mutant ran.")
    fixing: tuple[str, ...] = Field((), description="Ids of the mutants that fix every failing test.")
    partial: tuple[str, ...] = Field((), description="Ids of the mutants that fix some and break none.")
    changing: tuple[str, ...] = Field(
        (), description="Ids of the mutants that change a failing test's failure.")
    ran: int = Field(0, description="Mutants that ran.")


def _same_failure(before: str | None, after: str | None) -> bool:
    """Whether two failure texts ('Type: message') tell the same failure, addresses blanked."""
    return _ADDRESS.sub("0x", before or "") == _ADDRESS.sub("0x", after or "")


def classify_mutants(
    original: Mapping[str, TestOutcome], mutants: Mapping[str, Mapping[str, TestOutcome]],
    original_failures: Mapping[str, str] | None = None,
    failures: Mapping[str, Mapping[str, str]] | None = None,
) -> FixVerdict:
    """Classify mutant runs against the original run of the same tests (see the module docstring).

    ``original`` maps test id -> outcome on the unmutated code; ``mutants`` maps mutant id ->
    (test id -> outcome), for the mutants that ran, in the order they were tried (the order of
    ``fixing`` and ``partial``). A test missing from a mutant's run counts as failing there.
    ``original_failures`` and ``failures`` (mutant id -> test id -> 'Type: message') let a
    changed failure count (FAILURE_CHANGED); without them, or for a mutant missing from
    ``failures`` (one that timed out, say), only a failing test that passes counts as a change.
    """
    failing = {t for t, o in original.items() if o in _RED}
    passing = {t for t, o in original.items() if o in _GREEN}
    if not mutants:
        return FixVerdict(evidence=None)
    fixing: list[str] = []
    partial: list[str] = []
    changing: list[str] = []
    for mutant_id, outcomes in mutants.items():
        ran_failing = [t for t in failing if t in outcomes]
        mutant_failures = failures.get(mutant_id) if failures is not None else None
        if _changes_a_failure(ran_failing, outcomes, original_failures, mutant_failures):
            changing.append(mutant_id)
        kind = _fix_kind(failing, passing, outcomes)
        if kind == "fixing":
            fixing.append(mutant_id)
        elif kind == "partial":
            partial.append(mutant_id)
    evidence = (FixEvidence.FIX_FOUND if fixing else FixEvidence.PARTIAL_FIX_FOUND if partial
                else FixEvidence.FAILURE_CHANGED if changing else FixEvidence.NO_FIX_FOUND)
    return FixVerdict(evidence=evidence, fixing=tuple(fixing), partial=tuple(partial),
                      changing=tuple(changing), ran=len(mutants))


def _fix_kind(failing: set[str], passing: set[str], outcomes: Mapping[str, TestOutcome]) -> str | None:
    """"fixing" when a mutant passes every test (failing ones included), "partial" when it keeps
    every passing test and fixes only some failing ones, else None."""
    if any(outcomes.get(t) not in _GREEN for t in passing):
        return None
    fixed = {t for t in failing if outcomes.get(t) in _GREEN}
    if failing and fixed == failing:
        return "fixing"
    return "partial" if fixed else None


def _changes_a_failure(ran_failing: Sequence[str], outcomes: Mapping[str, TestOutcome],
                       original_failures: Mapping[str, str] | None,
                       mutant_failures: Mapping[str, str] | None) -> bool:
    """Whether a mutant made a failing test pass, or (with both runs' failure texts) fail otherwise."""
    if not ran_failing:
        return False
    if any(outcomes[t] in _GREEN for t in ran_failing):
        return True
    if original_failures is None or mutant_failures is None:
        return False
    return any(not _same_failure(original_failures.get(t), mutant_failures.get(t)) for t in ran_failing)


def confirm_fix(
    failing: set[str], passing: set[str], outcomes: Mapping[str, TestOutcome]
) -> FixEvidence:
    """FIX_CONFIRMED when a whole-suite run with the fix passes every test that failed and every
    test that passed (flaky tests left out by the caller), else FIX_REGRESSES."""
    if all(outcomes.get(t) in _GREEN for t in failing | passing):
        return FixEvidence.FIX_CONFIRMED
    return FixEvidence.FIX_REGRESSES

"""The likelihood tables the Localization loop counts evidence with, and what an inspection is
expected to teach (the loop's calibrated stopping rule).

Two tables:

* ``table_named("seed")``: the hand-set pairs, the seed's outcome table (``bayes.LIKELIHOODS``, verbatim) and
  EQUISA's fix-evidence table (``fix_evidence.FIX_LIKELIHOODS``). The LLM mode counts with it.
* ``fitted()``: the pairs fitted on the real-bug benchmark (``bench/likelihood_fit.py --adopt``
  writes ``calibrated_likelihoods.json`` beside this module): per kind of evidence, how often it
  came from inspections of the buggy function and of the others, in deterministic runs. Where the
  data disagrees with the seed, the data wins for the deterministic mode: on real bugs a
  collateral failure is as common on innocent functions as on the bug, and a one-edit fix that the
  whole suite confirms turns up in innocent functions too (tests of real projects are weak).

The same file keeps each kind's observed frequencies; they are the predictive distribution of an
inspection's result, from which ``expected_shift`` says how far, on average, an inspection would
move its target's confidence. The loop skips an inspection whose expected shift is below
``min_expected_shift``, and stops when none is left: on real bugs the deterministic inspections'
outcomes are almost always a collateral failure, which teaches next to nothing, while they cost a
test process each.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.fitted import DEFAULT_MIN_EXPECTED_SHIFT, DEFAULT_TABLE, TableName
from equisa_core.errors import EquisaError
from equisa_core.localization.bayes import LIKELIHOODS, Outcome, bayes
from equisa_core.localization.fix_evidence import FIX_LIKELIHOODS, FixEvidence

__all__ = [
    "DEFAULT_MIN_EXPECTED_SHIFT",
    "DEFAULT_TABLE",
    "FITTED_FILE",
    "LikelihoodTable",
    "TableName",
    "expected_shift",
    "fitted",
    "inspection_shift",
    "table_named",
    "worth_inspecting",
    "worth_screening",
]

#: Where ``bench/likelihood_fit.py --adopt`` writes the fitted table.
FITTED_FILE = Path(__file__).with_name("calibrated_likelihoods.json")

Pair = tuple[float, float]
#: A kind of result of one evidence channel: an ``Outcome`` or a ``FixEvidence``.
Kind = TypeVar("Kind")


class LikelihoodTable(BaseModel):
    """``(P(E|B), P(E|~B))`` per outcome and per kind of fix evidence, and the frequencies each
    kind was observed with (on inspections of buggy functions, of the others)."""

    model_config = ConfigDict(frozen=True)

    name: str
    source: str = Field(description="Where the pairs come from.")
    outcomes: Mapping[Outcome, Pair]
    fix: Mapping[FixEvidence, Pair]
    outcome_frequency: Mapping[Outcome, Pair] = Field(
        default_factory=dict, description="Observed kinds only: how often each came (buggy, other).")
    fix_frequency: Mapping[FixEvidence, Pair] = Field(default_factory=dict)


@cache
def fitted() -> LikelihoodTable:
    """The table fitted on the real-bug benchmark (``FITTED_FILE``)."""
    try:
        data = json.loads(FITTED_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:  # a broken install, not the user's input
        raise EquisaError(f"the fitted likelihood table {FITTED_FILE} cannot be read: {error}") from error
    table = LikelihoodTable.model_validate(data)
    # A kind the data never fitted counts with the seed's pair.
    return table.model_copy(update={"outcomes": {**LIKELIHOODS, **table.outcomes},
                                     "fix": {**FIX_LIKELIHOODS, **table.fix}})


def _seed() -> LikelihoodTable:
    observed = fitted()  # how often each result comes does not depend on the table counting it
    return LikelihoodTable(name="seed", source="the seed's outcome table and EQUISA's hand-set fix table",
                           outcomes=dict(LIKELIHOODS), fix=dict(FIX_LIKELIHOODS),
                           outcome_frequency=observed.outcome_frequency, fix_frequency=observed.fix_frequency)


def table_named(name: TableName) -> LikelihoodTable:
    """``"fitted"`` or ``"seed"``."""
    return fitted() if name == "fitted" else _seed()


def expected_shift(confidence: float, pairs: Mapping[Kind, Pair], frequency: Mapping[Kind, Pair]) -> float:
    """How far, on average, one result of a channel moves a confidence of ``confidence``:

        sum over kinds e of  q(e) * |bayes(c, pairs[e]) - c|,
        q(e) = c * fb(e) / sum(fb) + (1 - c) * fn(e) / sum(fn)

    where ``(fb, fn)`` are the observed frequencies (buggy, other) of the kinds seen. No observed
    kind: 0 (nothing is known about what the channel shows)."""
    kinds = [k for k in frequency if k in pairs]
    total_b = sum(frequency[k][0] for k in kinds)
    total_n = sum(frequency[k][1] for k in kinds)
    if not kinds or total_b <= 0 or total_n <= 0:
        return 0.0
    shift = 0.0
    for kind in kinds:
        q = confidence * frequency[kind][0] / total_b + (1 - confidence) * frequency[kind][1] / total_n
        shift += q * abs(bayes(confidence, *pairs[kind]) - confidence)
    return shift


def inspection_shift(table: LikelihoodTable, confidence: float, outcome: bool, mutants: bool) -> float:
    """The expected shift of one inspection of a function at ``confidence``: its outcome (the
    inspection patch's run) and, when its mutants run, their fix evidence."""
    shift = expected_shift(confidence, table.outcomes, table.outcome_frequency) if outcome else 0.0
    if mutants:
        shift += expected_shift(confidence, table.fix, table.fix_frequency)
    return shift


def worth_inspecting(table: LikelihoodTable, confidence: float, threshold: float, mutants: bool) -> bool:
    """The loop's calibrated stopping rule for one function: is its inspection expected to move its
    confidence by ``threshold`` or more? (``threshold`` 0: always.)"""
    return threshold <= 0 or inspection_shift(table, confidence, outcome=True, mutants=mutants) >= threshold


def worth_screening(table: LikelihoodTable, confidence: float, threshold: float) -> bool:
    """The same for trying a function's mutants alone (mutant screening)."""
    return threshold <= 0 or inspection_shift(table, confidence, outcome=False, mutants=True) >= threshold

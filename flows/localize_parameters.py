"""The parameters of a localization run: those of Discovery plus the Localization loop's budgets.

A module of its own so that the flows that run the loop's steps (``flows.inspections``,
``flows.localization_steps``) and its driver (``flows.localize``) import it without importing each other.
"""

from __future__ import annotations

from pydantic import Field

from equisa_core.localization.calibrated_likelihoods import (
    DEFAULT_MIN_EXPECTED_SHIFT,
    DEFAULT_TABLE,
    TableName,
)
from flows.discovery import DiscoveryParameters

__all__ = ["LocalizeParameters"]


class LocalizeParameters(DiscoveryParameters):
    """Parameters of one localization run (those of ``discovery`` plus the loop's budgets)."""

    max_iterations: int = Field(12, ge=0, description="Inspections before giving up; 0: Discovery only.")
    max_cost_usd: float = Field(2.0, ge=0, description="LLM spend before giving up.")
    max_seconds: float = Field(1800.0, gt=0, description="Wall time before giving up.")
    record_top: int = Field(15, ge=1, description="Candidates whose passing executions are recorded.")
    max_tests_per_inspection: int = Field(
        12, ge=1, description="Tests run per inspection: every failing test of the function, then its "
        "fastest passing ones (their calls are recorded for its invariants, in a slowed-down run).")
    mutation_evidence: bool | None = Field(
        None, description="Run mutants of each inspected node (see equisa_core.localization.fix_evidence); "
        "None: in deterministic mode only, where no model reflects.")
    max_mutants: int = Field(40, ge=1, description="Mutants tried per inspected node.")
    screen_top: int = Field(
        20, ge=0, description="Candidates (by prior) whose mutants are tried together in one sandbox "
        "process before the loop, when mutants run: a fix found there is evidence at once, so a "
        "function far down the ranking can still be confirmed; 0: off.")
    screen_budget_s: float = Field(
        15.0, gt=0, description="Mutant screening's estimated cost: the failing tests' durations times "
        "the mutants, summed over the screened functions (a mutant that fixes none stops after them); "
        "also each screening process's wall-clock limit for its mutant rounds (the rest are not run).")
    inspection_budget_s: float = Field(
        20.0, gt=0, description="Wall-clock seconds for the mutant rounds of one batch of inspections "
        "(``inspection_batch``); the mutants left then are not run, the inspection patches still are.")
    max_stalled_inspections: int = Field(
        5, ge=1, description="Stop after this many inspections in a row that found neither a fix, nor a "
        "failing assertion in the target, nor changed the leading node: the evidence is exhausted.")
    since: str | None = Field(
        None, description="A git ref: functions whose lines changed since it (committed or not) are more "
        "suspicious in the prior (``equisa_core.localization.prior``); None: no such signal.")
    inspection_batch: int = Field(
        5, ge=1, description="Deterministic inspections run together in one sandbox process: the selected "
        "node and the next most confident ones (the loop counts each when it selects that node); "
        "1: one process per inspection.")
    likelihoods: TableName = Field(
        DEFAULT_TABLE, description="The deterministic mode's likelihood table "
        "(equisa_core.localization.calibrated_likelihoods): 'fitted' on the real-bug benchmark, "
        "or 'seed' (hand-set; "
        "the LLM mode always counts with it).")
    min_expected_shift: float = Field(
        DEFAULT_MIN_EXPECTED_SHIFT, ge=0, description="Deterministic mode: a screening or inspection is "
        "run only when it is expected to move its function's confidence by this much (by the fitted "
        "frequencies of what inspections show); the loop stops when none is; 0: off.")

"""The fitted likelihood table and the loop's calibrated stopping rule (expected shift)."""

from __future__ import annotations

import json

import pytest

from equisa_core.localization.bayes import LIKELIHOODS, Outcome
from equisa_core.localization.calibrated_likelihoods import (
    FITTED_FILE,
    expected_shift,
    fitted,
    inspection_shift,
    table_named,
    worth_inspecting,
    worth_screening,
)
from equisa_core.localization.fix_evidence import FIX_LIKELIHOODS, FixEvidence


def test_the_fitted_table_is_the_adopted_file_and_falls_back_to_the_seed_for_kinds_never_fitted():
    data = json.loads(FITTED_FILE.read_text())
    table = fitted()
    for kind, pair in data["outcomes"].items():
        assert table.outcomes[Outcome(kind)] == tuple(pair)
    for kind, pair in data["fix"].items():
        assert table.fix[FixEvidence(kind)] == tuple(pair)
    never = [o for o in Outcome if o.value not in data["outcomes"]]
    assert never and all(table.outcomes[o] == LIKELIHOODS[o] for o in never)
    assert set(table.fix) == set(FIX_LIKELIHOODS)
    seed = table_named("seed")
    assert dict(seed.outcomes) == dict(LIKELIHOODS) and dict(seed.fix) == dict(FIX_LIKELIHOODS)
    assert seed.fix_frequency == table.fix_frequency  # what inspections show does not depend on the table


def test_evidence_seen_as_often_on_the_bug_as_elsewhere_teaches_nothing():
    same = {"a": (0.9, 0.9), "b": (0.1, 0.1)}
    assert expected_shift(0.4, same, same) == pytest.approx(0.0)


def test_the_expected_shift_is_the_mean_move_over_the_predicted_results():
    pairs = {"fix": (0.5, 0.1), "none": (0.5, 0.9)}
    frequency = pairs
    c = 0.2
    # P(fix) = 0.2*0.5 + 0.8*0.1 = 0.18, posterior 0.1/0.18; P(none) = 0.82, posterior 0.1/0.82
    expected = 0.18 * abs(0.1 / 0.18 - c) + 0.82 * abs(0.1 / 0.82 - c)
    assert expected_shift(c, pairs, frequency) == pytest.approx(expected)
    assert expected_shift(c, pairs, {}) == 0.0  # nothing observed: nothing predicted


def test_the_stopping_rule_skips_outcome_only_inspections_of_unlikely_functions_on_the_fitted_table():
    table = fitted()
    # Mutants teach more than an inspection patch's outcome, which on real bugs is nearly always
    # a collateral failure, on the bug as elsewhere.
    assert inspection_shift(table, 0.3, outcome=False, mutants=True) > \
        5 * inspection_shift(table, 0.3, outcome=True, mutants=False)
    assert not worth_inspecting(table, 0.05, 0.005, mutants=False)
    assert worth_inspecting(table, 0.05, 0.005, mutants=True)
    assert worth_screening(table, 0.05, 0.005) and not worth_screening(table, 0.001, 0.005)
    # threshold 0 switches the rule off
    assert worth_inspecting(table, 0.0001, 0.0, mutants=False) and worth_screening(table, 0.0001, 0.0)
    # the shift grows with the uncertainty
    shifts = [inspection_shift(table, c, outcome=True, mutants=True) for c in (0.01, 0.05, 0.2, 0.5)]
    assert shifts == sorted(shifts)

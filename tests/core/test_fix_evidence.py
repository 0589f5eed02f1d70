from __future__ import annotations

from typing import Any

import pytest

from equisa_core.common.models import TestOutcome
from equisa_core.localization.bayes import (
    CLAMP_HIGH,
    Outcome,
    bayes,
    update_confidences,
    update_with_likelihoods,
)
from equisa_core.localization.fix_evidence import FIX_LIKELIHOODS, FixEvidence, classify_mutants, confirm_fix

P, F, E = TestOutcome.PASSED, TestOutcome.FAILED, TestOutcome.ERROR
ORIGINAL = {"t_fail_1": F, "t_fail_2": E, "t_ok_1": P, "t_ok_2": P, "t_skip": TestOutcome.SKIPPED}


def test_a_mutant_fixing_every_failure_and_breaking_nothing_is_a_fix():
    verdict = classify_mutants(ORIGINAL, {
        "m0": {"t_fail_1": P, "t_fail_2": P, "t_ok_1": F, "t_ok_2": P},  # breaks a passing test
        "m1": {"t_fail_1": P, "t_fail_2": F, "t_ok_1": P, "t_ok_2": P},  # fixes one of two
        "m2": {"t_fail_1": P, "t_fail_2": P, "t_ok_1": P, "t_ok_2": P},  # fixes both
        "m3": dict(ORIGINAL),
    })
    assert verdict.evidence is FixEvidence.FIX_FOUND
    assert verdict.fixing == ("m2",) and verdict.partial == ("m1",) and verdict.ran == 4


def test_partial_and_no_fix_and_nothing_ran():
    assert classify_mutants(ORIGINAL, {"m1": {"t_fail_1": P, "t_ok_1": P, "t_ok_2": P}}).evidence is (
        FixEvidence.PARTIAL_FIX_FOUND)
    assert classify_mutants(ORIGINAL, {"m0": dict(ORIGINAL)}).evidence is FixEvidence.NO_FIX_FOUND
    # A test missing from the mutant's run counts as failing: no fix credit for crashing early, only
    # the mild credit of having changed how the failing tests end.
    assert classify_mutants(ORIGINAL, {"m0": {"t_fail_1": P, "t_fail_2": P}}).evidence is (
        FixEvidence.FAILURE_CHANGED)
    assert classify_mutants(ORIGINAL, {}).evidence is None


def test_confirmation_needs_the_whole_suite_green():
    failing, passing = {"a"}, {"b", "c"}
    assert confirm_fix(failing, passing, {"a": P, "b": P, "c": P}) is FixEvidence.FIX_CONFIRMED
    assert confirm_fix(failing, passing, {"a": P, "b": F, "c": P}) is FixEvidence.FIX_REGRESSES
    assert confirm_fix(failing, passing, {"a": F, "b": P, "c": P}) is FixEvidence.FIX_REGRESSES


def test_likelihoods_are_read_only_and_point_the_right_way():
    assert set(FIX_LIKELIHOODS) == set(FixEvidence)
    for evidence in (FixEvidence.FIX_FOUND, FixEvidence.PARTIAL_FIX_FOUND, FixEvidence.FIX_CONFIRMED):
        buggy, innocent = evidence.likelihoods
        assert buggy > innocent
    buggy, innocent = FixEvidence.NO_FIX_FOUND.likelihoods
    assert buggy < innocent
    read_only: Any = FIX_LIKELIHOODS  # the write a read-only mapping refuses at run time
    with pytest.raises(TypeError):
        read_only[FixEvidence.FIX_FOUND] = (1.0, 0.0)


def test_a_fix_then_its_confirmation_converge_from_a_typical_prior():
    # By hand: prior 0.06, FIX_FOUND: .6*.06/(.6*.06+.03*.94) = .036/.0642 = 0.5607
    #          then FIX_CONFIRMED: .9*.5607/(.9*.5607+.08*.4393) = .50467/.53981 = 0.9349
    confidences = {"bug": 0.06, "a": 0.47, "b": 0.47}
    after_fix = update_with_likelihoods(confidences, "bug", FixEvidence.FIX_FOUND.likelihoods)
    assert after_fix["bug"] == pytest.approx(0.036 / 0.0642)
    assert after_fix["a"] == pytest.approx((1 - after_fix["bug"]) / 2)
    confirmed = update_with_likelihoods(after_fix, "bug", FixEvidence.FIX_CONFIRMED.likelihoods)
    assert confirmed["bug"] == pytest.approx(bayes(after_fix["bug"], 0.9, 0.08))
    assert confirmed["bug"] == pytest.approx(0.9349, abs=1e-4)
    assert abs(sum(confirmed.values()) - 1) < 1e-9 and confirmed["bug"] <= CLAMP_HIGH


def test_nothing_found_leaves_the_odds_where_the_prior_put_them():
    # COLLATERAL_FAILURE (0.6/0.4) then NO_FIX_FOUND (0.6/0.9): odds x 1.5 x 2/3 = unchanged, so an
    # inspected node keeps its place among the nodes not inspected yet.
    confidences = {"bug": 0.2, "a": 0.5, "b": 0.3}
    after = update_confidences(confidences, "bug", Outcome.COLLATERAL_FAILURE)
    after = update_with_likelihoods(after, "bug", FixEvidence.NO_FIX_FOUND.likelihoods)
    assert after == pytest.approx(confidences)


def test_a_mutant_that_changes_how_a_failing_test_fails_is_graded_evidence():
    before = {"t_fail_1": "AssertionError: assert 3 == 2", "t_fail_2": "KeyError: 'a' at 0x7f00aa"}
    same = {"t_fail_1": "AssertionError: assert 3 == 2", "t_fail_2": "KeyError: 'a' at 0x7f11bb"}
    other = {"t_fail_1": "AssertionError: assert 4 == 2", "t_fail_2": "KeyError: 'a' at 0x7f00aa"}
    mutants = {"m0": dict(ORIGINAL), "m1": dict(ORIGINAL)}
    verdict = classify_mutants(ORIGINAL, mutants, before, {"m0": same, "m1": other})
    assert verdict.evidence is FixEvidence.FAILURE_CHANGED and verdict.changing == ("m1",)
    # Only addresses differ: the same failure. A mutant without recorded failures (timed out) does not count.
    assert classify_mutants(ORIGINAL, mutants, before, {"m0": same}).evidence is FixEvidence.NO_FIX_FOUND
    # Without the failure texts, a changed message cannot be seen.
    assert classify_mutants(ORIGINAL, mutants).evidence is FixEvidence.NO_FIX_FOUND
    buggy, innocent = FixEvidence.FAILURE_CHANGED.likelihoods
    partial_buggy, partial_innocent = FixEvidence.PARTIAL_FIX_FOUND.likelihoods
    assert 1 < buggy / innocent < partial_buggy / partial_innocent

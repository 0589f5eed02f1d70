"""The leader margin and the calibrated rule on it (equisa_core.localization.stop_margin)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from equisa_core.localization.stop_margin import FITTED_STOP_MARGIN, is_decisive, leader_margin


def test_the_margin_is_the_leaders_confidence_over_the_runner_ups():
    assert leader_margin([0.6, 0.3, 0.1]) == 2.0
    assert leader_margin([0.4, 0.4, 0.2]) == 1.0  # a tie
    assert leader_margin([1.0]) == math.inf and leader_margin([0.7, 0.0]) == math.inf
    assert leader_margin([]) == 0.0


def test_a_ranking_is_decisive_from_the_margin_on_and_never_when_the_rule_is_off():
    assert is_decisive([0.6, 0.3], 2.0) and not is_decisive([0.59, 0.3], 2.0)
    assert not is_decisive([0.4, 0.4], FITTED_STOP_MARGIN)  # a tie always goes on to the checks
    assert not is_decisive([0.9, 0.1], None) and not is_decisive([], 1.0)


@given(st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=2).map(lambda xs: sorted(xs, reverse=True)),
       st.floats(1.0, 10.0))
def test_a_larger_margin_never_stops_a_run_a_smaller_one_lets_go_on(confidences, margin):
    if is_decisive(confidences, margin * 1.5):
        assert is_decisive(confidences, margin)

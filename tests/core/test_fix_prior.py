"""The prior over fix patterns: the bundled file, loading, and the candidate score."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from equisa_core.errors import EquisaError
from equisa_core.repair.fix_prior import (
    FIX_PRIOR_FILE,
    FixPrior,
    candidate_score,
    load_fix_prior,
    pattern_of,
)


def _prior(**update: object) -> FixPrior:
    data: dict = {"probabilities": {"a": 0.5, "b": 0.01}, "default_probability": 0.02, "edit_weight": 0.5}
    return FixPrior.model_validate({**data, **update})


def test_the_bundled_prior_loads_with_its_provenance_and_sane_probabilities():
    prior = load_fix_prior()
    assert prior == FixPrior.model_validate(json.loads(FIX_PRIOR_FILE.read_text()))
    assert prior.fitted_on and prior.fitted_at and prior.programs
    assert all(0 < p < 1 for p in prior.probabilities.values())
    assert set(prior.counts) == set(prior.probabilities)
    assert prior.edit_weight >= 0 and 0 < prior.default_probability < 1


def test_the_score_is_log_p_minus_the_weighted_edit_size():
    prior = _prior()
    assert candidate_score(prior, "a", 2) == pytest.approx(math.log(0.5) - 1.0)
    assert candidate_score(prior, "unseen", 1) == pytest.approx(math.log(0.02) - 0.5)
    assert candidate_score(prior, "a", 1) > candidate_score(prior, "a", 3) > candidate_score(prior, "b", 3)


def test_a_mutant_s_pattern_is_its_operator():
    assert pattern_of("comparison_swap", "") == "comparison_swap"
    assert pattern_of("name_replace", "name_replace") == "name_replace"
    assert pattern_of("comparison_swap", None) == "comparison_swap"


def test_load_from_a_path_and_a_broken_file(tmp_path: Path):
    path = tmp_path / "prior.json"
    path.write_text(_prior().model_dump_json())
    assert load_fix_prior(path) == _prior()
    path.write_text("{not json")
    with pytest.raises(EquisaError):
        load_fix_prior(path)


def test_out_of_range_values_are_refused():
    with pytest.raises(ValueError):
        _prior(edit_weight=-1)
    with pytest.raises(ValueError):
        _prior(default_probability=0)

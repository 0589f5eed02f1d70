"""``--fix-prior``: the search order's prior by name or file (``ValidationOptions.fix_prior``)."""

from __future__ import annotations

import json
import math

import pytest
from pydantic import ValidationError

from equisa_core.common.options import ValidationOptions
from equisa_core.repair.fix_prior import load_fix_prior
from tasks.repair.fix_search import edit_size_score, pattern_score_of


def test_the_named_priors_and_a_file(tmp_path):
    assert ValidationOptions().fix_prior == "size"
    assert pattern_score_of("size") is edit_size_score
    fitted = load_fix_prior()
    assert pattern_score_of("fitted")("comparison_swap", 2) == pytest.approx(
        math.log(fitted.probability("comparison_swap")) - fitted.edit_weight * 2)
    own = tmp_path / "prior.json"
    own.write_text(json.dumps({**fitted.model_dump(mode="json"), "probabilities": {"name_replace": 0.5},
                               "edit_weight": 0.0}))
    score = pattern_score_of(str(ValidationOptions(fix_prior=str(own)).fix_prior))
    assert score("name_replace", 9) == pytest.approx(math.log(0.5))


def test_anything_else_is_refused_with_what_is_accepted(tmp_path):
    with pytest.raises(ValidationError, match="fix_prior must be fitted or size or the path"):
        ValidationOptions(fix_prior=str(tmp_path / "missing.json"))

"""A prior over fix patterns: how likely a one-edit candidate of each pattern is a correct fix.

The repair validates its candidates (``mutation.mutate_function``'s mutants and
``fix_space.fix_candidates``) in the order of a score; ``candidate_score`` is its learned part:

    score = log P(pattern) - edit_weight * edit_size

``P(pattern)`` is the add-one smoothed share of correct fixes among the candidates of that pattern
on real bugs, ``(correct + 1) / (candidates + 2)``; a pattern the data never saw gets
``default_probability`` (the pooled share over every pattern). ``edit_weight`` was chosen by a grid
search that minimises the mean rank of the first correct candidate. ``bench/fix_prior_fit.py
--adopt`` fits both on Refactory's wrong student programs (labelled by running every candidate) and
BugsInPy single-function bugs (labelled by the developer's fix) and writes ``fix_prior.json``
beside this module. A mutant's pattern is its operator (``Mutant.pattern`` is empty for mutants).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.errors import EquisaError

__all__ = ["FIX_PRIOR_FILE", "FixPrior", "PatternCount", "candidate_score", "load_fix_prior", "pattern_of"]

#: Where ``bench/fix_prior_fit.py --adopt`` writes the fitted prior.
FIX_PRIOR_FILE = Path(__file__).with_name("fix_prior.json")


class PatternCount(BaseModel):
    """How many candidates of one pattern the fit saw, and how many of them were correct fixes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    candidates: int = Field(ge=0)
    correct: int = Field(ge=0)


class FixPrior(BaseModel):
    """P(a candidate of this pattern is a correct fix), per pattern, and the weight of edit size."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    probabilities: Mapping[str, float] = Field(description="Pattern -> smoothed share of correct fixes.")
    default_probability: float = Field(gt=0, le=1, description="For a pattern the fit never saw.")
    edit_weight: float = Field(ge=0, description="Score lost per token changed.")
    fitted_on: str = Field("", description="What the prior was fitted on.")
    fitted_at: str = Field("", description="The fit's date (UTC, ISO 8601).")
    programs: Mapping[str, int] = Field(default_factory=dict, description="Programs fitted on, per source.")
    counts: Mapping[str, PatternCount] = Field(default_factory=dict, description="The counts behind each P.")

    def probability(self, pattern: str) -> float:
        """P(pattern), or the default for an unseen pattern."""
        return self.probabilities.get(pattern, self.default_probability)


def pattern_of(operator: str, pattern: str | None) -> str:
    """A candidate's pattern: ``Mutant.pattern`` when set, else its operator (mutants)."""
    return pattern or operator


def candidate_score(prior: FixPrior, pattern: str, edit_size: int) -> float:
    """log P(pattern) - edit_weight * edit_size: higher is tried first."""
    probability = min(max(prior.probability(pattern), 1e-12), 1.0)
    return math.log(probability) - prior.edit_weight * edit_size


@cache
def _bundled() -> FixPrior:
    return _read(FIX_PRIOR_FILE)


def _read(path: Path) -> FixPrior:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:  # a broken install, not the user's input
        raise EquisaError(f"the fix-pattern prior {path} cannot be read: {error}") from error
    return FixPrior.model_validate(data)


def load_fix_prior(path: Path | None = None) -> FixPrior:
    """The prior in ``path``, by default the bundled ``fix_prior.json`` (read once)."""
    return _bundled() if path is None else _read(path)

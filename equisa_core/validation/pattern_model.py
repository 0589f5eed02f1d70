"""The pattern model: the probability that a patch is wrong given the patterns of a wrong patch it
shows (``equisa_core.validation.patch_patterns``), a logistic model fitted on the real-bug repair
benchmark by ``bench/patch_pattern_fit.py`` and shipped as ``patch_patterns.json``. Pure but for
reading that file."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from equisa_core.errors import EquisaError
from equisa_core.validation.patch_patterns import PATTERNS, PatternFinding

__all__ = [
    "PATTERN_MODEL_FILE",
    "PRIOR_INTERCEPT",
    "PRIOR_WEIGHT",
    "PatternModel",
    "load_pattern_model",
    "logistic",
]

#: Where ``bench/patch_pattern_fit.py --adopt`` writes the fitted model.
PATTERN_MODEL_FILE = Path(__file__).with_name("patch_patterns.json")


def logistic(z: float) -> float:
    """1 / (1 + e^-z), computed without overflow for either sign of z."""
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


#: The prior of the pattern model (``PatternModel``): the log-odds each pattern adds, and that of a
#: patch with none. The fit (``bench/patch_pattern_fit.py``) is a maximum a posteriori estimate
#: centred on it, so a pattern the benchmark never shows keeps this weight.
PRIOR_WEIGHT = 2.0
PRIOR_INTERCEPT = -1.5


class PatternModel(BaseModel):
    """P(a patch is wrong | the patterns it shows) = logistic(intercept + Σ weight · [pattern present]).

    The shipped ``patch_patterns.json`` is fitted by ``bench/patch_pattern_fit.py --adopt``. Until
    that fit runs, it holds the prior: intercept -1.5 (a patch with no pattern: P = 0.18), +2.0 per
    pattern (one pattern: P = 0.62; two: 0.92) and threshold 0.5, so that any one pattern weighs
    against a patch; ``fitted_on`` then says "not yet fitted: prior weights".
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    intercept: float = Field(description="Log-odds that a patch with no pattern is wrong.")
    weights: Mapping[str, float] = Field(description="Pattern -> log-odds added when it is present.")
    threshold: float = Field(gt=0, lt=1, description="P(wrong) at or above which a patch is weighed against.")
    fitted_on: str = Field(description="What the weights were fitted on, or that they are the prior.")
    fitted_at: str = Field("", description="The fit's date (UTC, ISO 8601).")
    cross_validated: Mapping[str, Any] = Field(
        default_factory=dict,
        description="Leave-one-project-out accuracy, precision and recall of weighs_against.",
    )

    @field_validator("weights")
    @classmethod
    def _known_patterns(cls, value: Mapping[str, float]) -> Mapping[str, float]:
        unknown = sorted(set(value) - set(PATTERNS))
        if unknown:
            raise ValueError(f"weights for unknown patterns {unknown}; known: {', '.join(PATTERNS)}")
        return value

    def probability_wrong(self, findings: Iterable[PatternFinding]) -> float:
        """logistic(intercept + Σ weights[p] over the distinct patterns p present)."""
        present = {f.pattern for f in findings}
        return logistic(self.intercept + sum(self.weights.get(p, 0.0) for p in present))

    def weighs_against(self, findings: Iterable[PatternFinding]) -> tuple[bool, str]:
        """(P(wrong) >= threshold, the reason naming the patterns present)."""
        findings = tuple(findings)
        probability = self.probability_wrong(findings)
        present = [p for p in PATTERNS if any(f.pattern == p for f in findings)]
        named = ", ".join(present) if present else "no pattern of a wrong patch"
        verdict = probability >= self.threshold
        relation = ">=" if verdict else "<"
        return verdict, f"{named}: P(wrong) {probability:.2f} {relation} threshold {self.threshold:.2f}"


@cache
def _bundled() -> PatternModel:
    return _read(PATTERN_MODEL_FILE)


def _read(path: Path) -> PatternModel:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:  # a broken install, not the user's input
        raise EquisaError(f"the patch-pattern model {path} cannot be read: {error}") from error
    return PatternModel.model_validate(data)


def load_pattern_model(path: Path | None = None) -> PatternModel:
    """The model in ``path``, by default the bundled ``patch_patterns.json`` (read once)."""
    return _bundled() if path is None else _read(path)

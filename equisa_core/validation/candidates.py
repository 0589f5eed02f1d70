"""Patch candidates: the one form every patch generator returns and Validation judges.

A candidate is a set of whole new file texts (relative path -> text), so it applies to a workspace
copy as an overlay and turns into one ``git apply``-able diff against the original files. The
generators (mutation search, the LLM minimal fix, the multi-retrieval patcher) differ only in how
they find the texts.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.source_edit import combine_diffs, unified_diff

__all__ = ["Generator", "PatchCandidate", "PatchStatus", "PatchEvaluation", "candidate_diff"]

Generator = Literal["mutation", "llm-fix", "patcher"]


class PatchCandidate(BaseModel):
    """One proposed fix."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1, description="Unique within one repair run, e.g. 'mutation-3'.")
    generator: Generator
    target: str | None = Field(None, description="FQN of the function it changes, when one.")
    description: str = Field(description="What it changes, one line.")
    files: dict[str, str] = Field(description="Relative '/'-path -> the file's whole new text.")
    edit_size: int = Field(0, ge=0, description="Tokens changed (mutations); 0 when unknown.")
    operator: str | None = Field(None, description="The mutation operator, for mutation candidates.")
    cost_usd: float = Field(0.0, ge=0, description="What the model charged for it.")


class PatchStatus(StrEnum):
    """Seed 004's patch statuses, for Python (plus the checks Validation adds)."""

    DOES_NOT_APPLY = "does_not_apply"  # original code not found, or the edit is ambiguous
    DOES_NOT_COMPILE = "does_not_compile"
    STILL_FAILING = "still_failing"  # some originally failing test still fails
    REGRESSIONS = "regressions"  # a previously passing test now fails
    OVERFITTING = "overfitting"  # passes the suite, fails an anti-overfitting check
    UNCONFIRMED = "unconfirmed"  # passes everything that could run, but the evidence does not reach a fix
    SOUND = "sound"  # passes everything asked of it


class PatchEvaluation(BaseModel):
    """What Validation found about one candidate."""

    model_config = ConfigDict(frozen=True)

    candidate: str = Field(description="The candidate's id.")
    status: PatchStatus
    detail: str = Field("", description="Why, for people and for the generator's next attempt.")
    still_failing: tuple[str, ...] = ()
    regressions: tuple[str, ...] = ()
    checks: dict[str, str] = Field(default_factory=dict, description="Check name -> 'passed' or why not.")
    evidence: str = Field("", description="What the behavioural divergence check compared, in one sentence.")
    divergence: float | None = Field(
        None, description="Share of the compared calls outside the failing tests whose outcome changed "
                          "(None: not measured); candidates that change less are preferred.")
    calls: dict[str, float] = Field(
        default_factory=dict, description="The divergence check's counts: recorded, changed_recorded, "
        "generated, changed_generated, failing, uncomparable and line_coverage (empty: not measured).")


def candidate_diff(originals: Mapping[str, str], candidate: PatchCandidate) -> str:
    """The candidate as one git-style diff against ``originals`` (path -> original text)."""
    return combine_diffs(
        unified_diff(path, originals[path], text) for path, text in sorted(candidate.files.items())
    )

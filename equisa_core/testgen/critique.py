"""The values the supervisor and the router share: what the runner measured, and the critique.

Kept apart from both so that the router (which reads a ``Critique``) and the supervisor (which
writes one, using the router's stagnation rule) import them without importing each other.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["RunnerMetrics", "Critique"]


class RunnerMetrics(BaseModel):
    """What the runner measured for one attempt."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    success: bool = Field(description="The module ran: it collected and no runner error happened.")
    tests_collected: int = Field(default=0, ge=0)
    tests_passed: int = Field(default=0, ge=0)
    coverage: float = Field(
        default=0.0, ge=0, le=100, description="Branch coverage of the target file, percent."
    )
    mutation_score: float | None = Field(
        default=None, description="Percent of mutants killed; None: not measured."
    )
    missing_lines: tuple[int, ...] = ()
    test_error: str | None = Field(default=None, description="The runner's error, when it failed.")


class Critique(BaseModel):
    """The supervisor's critique (seed 001 ``Critique``) plus the progress fields the router reads."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    compile_error: bool
    no_tests: bool
    low_coverage: bool
    low_mutation: bool
    critical_error: str | None = Field(default=None, description="An error no enhancement can fix: stop now.")
    coverage: float
    mutation_score: float | None
    lint_issue_count: int
    coverage_delta: float | None = None
    mutation_delta: float | None = None
    progress: bool | None = Field(
        default=None, description="coverage_delta >= 1.0 or mutation_delta >= 2.0; None on attempt 0."
    )
    stagnation_count: int = 0
    no_progress: bool = False
    instructions: tuple[str, ...] = ()
    missing_lines: tuple[int, ...] = ()

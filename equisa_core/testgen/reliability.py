"""Reliability of generated tests, before and after they run (seed 001).

Pre-execution (``pre_execution_level``): the mean token entropy of the model's answer (from
logprobs; ``llm_text.mean_token_entropy``) gives the starting level, static metrics lower it:

    entropy <= HIGH_ENTROPY_MAX (0.15 nats)   -> high
    entropy <= MEDIUM_ENTROPY_MAX (0.5 nats)  -> medium
    otherwise                                 -> low
    no entropy (deterministic tests, or no logprobs) -> high for tests that assert what the code
                                                        was seen to do, medium for a model's tests
    syntax error or no tests                  -> low
    any lint/type issue                       -> one level down
    a test more complex than MAX_TEST_COMPLEXITY -> one level down

(The seed's example: entropy 0.1028 with 16 lint issues is "medium, downgraded from high due to
lint", which fixes the high threshold above 0.1028.)

Post-execution (``post_execution_level``): ``discard`` when the tests could not run (syntax, runner
error, nothing collected, no passing test); ``trusted`` when they ran, every test passed and both
targets are met; otherwise ``needs_review``, with the reasons.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.testgen.static import StaticReport

__all__ = [
    "HIGH_ENTROPY_MAX",
    "MEDIUM_ENTROPY_MAX",
    "MAX_TEST_COMPLEXITY",
    "PreLevel",
    "PostLevel",
    "PreReliability",
    "PostReliability",
    "pre_execution_level",
    "post_execution_level",
]

HIGH_ENTROPY_MAX = 0.15
MEDIUM_ENTROPY_MAX = 0.5
MAX_TEST_COMPLEXITY = 10

PreLevel = Literal["high", "medium", "low"]
PostLevel = Literal["trusted", "needs_review", "discard"]
_ORDER: tuple[PreLevel, ...] = ("high", "medium", "low")


class PreReliability(BaseModel):
    """The pre-execution level and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    level: PreLevel
    entropy: float | None = None
    reasons: tuple[str, ...] = ()


class PostReliability(BaseModel):
    """The post-execution level and its blockers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    level: PostLevel
    reasons: tuple[str, ...] = Field((), description="Why the level is not 'trusted'.")


def _down(level: PreLevel) -> PreLevel:
    return _ORDER[min(_ORDER.index(level) + 1, len(_ORDER) - 1)]


def pre_execution_level(
    static: StaticReport, entropy: float | None, *, observed_oracle: bool
) -> PreReliability:
    """The pre-execution level (module docstring).

    ``observed_oracle``: the tests assert behaviour observed in a real run (carved, boundary).
    """
    reasons: list[str] = []
    if not static.syntax_ok:
        return PreReliability(level="low", entropy=entropy, reasons=(f"syntax error: {static.syntax_error}",))
    if static.test_count == 0:
        return PreReliability(level="low", entropy=entropy, reasons=("no test functions",))
    level: PreLevel
    if entropy is None:
        level = "high" if observed_oracle else "medium"
        reasons.append(
            "no token entropy: "
            + ("assertions of observed behaviour" if observed_oracle else "a model's answer without logprobs")
        )
    elif entropy <= HIGH_ENTROPY_MAX:
        level = "high"
        reasons.append(f"mean token entropy {entropy:.4f} <= {HIGH_ENTROPY_MAX}")
    elif entropy <= MEDIUM_ENTROPY_MAX:
        level = "medium"
        reasons.append(f"mean token entropy {entropy:.4f} <= {MEDIUM_ENTROPY_MAX}")
    else:
        level = "low"
        reasons.append(f"mean token entropy {entropy:.4f} > {MEDIUM_ENTROPY_MAX}")
    if static.lint_issue_count:
        before, level = level, _down(level)
        reasons.append(f"{static.lint_issue_count} lint/type issues: downgraded from {before}")
    if static.max_complexity > MAX_TEST_COMPLEXITY:
        before, level = level, _down(level)
        reasons.append(
            f"a test has complexity {static.max_complexity} > {MAX_TEST_COMPLEXITY}: downgraded from {before}"
        )
    return PreReliability(level=level, entropy=entropy, reasons=tuple(reasons))


def post_execution_level(
    *,
    syntax_ok: bool,
    runner_error: str | None,
    tests_run: int,
    tests_passed: int,
    coverage: float,
    coverage_target: float,
    mutation_score: float | None,
    mutation_target: float,
) -> PostReliability:
    """The post-execution level (module docstring); coverage and scores in percent, None: not measured."""
    if not syntax_ok:
        return PostReliability(level="discard", reasons=("the module does not parse",))
    if runner_error:
        return PostReliability(level="discard", reasons=(f"runner error: {runner_error}",))
    if tests_run == 0:
        return PostReliability(level="discard", reasons=("no tests ran",))
    if tests_passed == 0:
        return PostReliability(level="discard", reasons=("no test passed",))
    reasons = []
    if tests_passed < tests_run:
        reasons.append(f"{tests_run - tests_passed} of {tests_run} tests fail")
    if coverage < coverage_target:
        reasons.append(f"coverage {coverage:.2f}% below target {coverage_target:.2f}%")
    if mutation_score is None:
        reasons.append("mutation score unavailable")
    elif mutation_score < mutation_target:
        reasons.append(f"mutation score {mutation_score:.2f}% below target {mutation_target:.2f}%")
    return PostReliability(level="needs_review" if reasons else "trusted", reasons=tuple(reasons))

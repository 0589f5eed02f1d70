"""The testgen JSON report: one entry per attempt, the baseline and the outcome (issue 6, item 5)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.models import REPORT_SCHEMA_VERSION
from equisa_core.common.sandbox_policy import SandboxIsolation
from equisa_core.environment import SuiteEnvironment
from equisa_core.testgen.critique import Critique
from equisa_core.testgen.reliability import PostReliability, PreReliability
from equisa_core.testgen.static import StaticReport

__all__ = ["CoverageFigures", "PipelineNotes", "AttemptReport", "TestgenReport"]


class CoverageFigures(BaseModel):
    """Coverage of the target file by one selection of tests (percentages)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    percent: float = Field(description="coverage.py's branch-mode total: covered lines and branches.")
    branch_percent: float
    covered_lines: int
    statements: int
    covered_branches: int
    branches: int
    missing_lines: tuple[int, ...] = ()


class PipelineNotes(BaseModel):
    """What the seed 000 §8 pipeline did to one attempt's tests."""

    model_config = ConfigDict(extra="forbid")

    embeddings: str = "local"
    redundant: list[str] = Field(
        default_factory=list, description="Tests found too similar, and what was done."
    )
    smells_found: list[str] = Field(default_factory=list)
    smells_fixed: list[str] = Field(default_factory=list)
    smell_rounds: int = 0
    critic: list[str] = Field(default_factory=list, description="The LLM critic's answers (LLM mode).")
    dropped: list[str] = Field(default_factory=list, description="Tests dropped and why.")
    added_to_store: int = 0


class AttemptReport(BaseModel):
    """One attempt of the loop (seed 001): what was generated and how it measured."""

    model_config = ConfigDict(extra="forbid")

    attempt: int
    origin: str = Field(description="'generator', 'enhancer' or the deterministic strategy used.")
    module: str = Field(description="Where the attempt's test module was written.")
    tests: list[str] = Field(default_factory=list)
    tests_passed: int = 0
    static: StaticReport
    pre_reliability: PreReliability
    coverage: CoverageFigures | None = None
    combined_coverage: CoverageFigures | None = Field(None, description="Existing suite plus these tests.")
    mutation_score: float | None = None
    mutants: dict[str, int] = Field(default_factory=dict, description="Status -> count.")
    surviving_mutants: list[str] = Field(default_factory=list)
    post_reliability: PostReliability
    critique: Critique
    decision: Literal["ENHANCE", "FINISH"]
    decision_reason: str
    pipeline: PipelineNotes = Field(default_factory=PipelineNotes)
    deterministic: list[str] = Field(
        default_factory=list, description="What the deterministic generator did."
    )
    cost_usd: float = 0.0
    llm_calls: int = 0
    cached_llm_calls: int = Field(0, description="Of llm_calls: answers from the cache (they cost nothing).")
    mean_entropy: float | None = None


class TestgenReport(BaseModel):
    """Everything ``equisa testgen`` writes to ``--json``."""

    __test__ = False
    model_config = ConfigDict(extra="forbid")

    schema_version: str = Field(REPORT_SCHEMA_VERSION, description="The schema's version (docs/schema/).")
    mode: Literal["llm", "deterministic"]
    path: str
    target: str
    framework: str
    framework_reason: str
    coverage_target: float
    mutation_target: float
    baseline: CoverageFigures | None = Field(None, description="The repository's own tests on the target.")
    baseline_mutation_score: float | None = None
    attempts: list[AttemptReport] = Field(default_factory=list)
    best_attempt: int | None = None
    output: str | None = Field(None, description="The final test module written to --out.")
    stopped_because: str = ""
    cost_usd: float = 0.0
    problems: list[str] = Field(default_factory=list)
    sandbox: SandboxIsolation | None = Field(None, description="The isolation the run's sandboxes gave.")
    environment: SuiteEnvironment | None = Field(
        None, description="The interpreter that ran the suite, and how it was chosen or built.")
    run_id: str | None = Field(None, description="The run's id in the history (``equisa testgen`` only).")
    artifacts: str | None = Field(None, description="Where the run's artifacts were stored.")

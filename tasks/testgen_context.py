"""What the steps of one testgen run share: the run's context (``TestgenContext``), the shapes of the
prepared run and of the parameters it reads (``PreparedRepository``, ``TestgenRunParameters``:
``flows.trace.PreparedRun`` and ``flows.testgen.TestgenParameters`` have them), and the two things
every step does with it: say what the run is doing now (``stage``) and pick the configuration
embeddings use (``embedding_config``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from equisa_core.common.options import SandboxKind
from equisa_core.common.sandbox_policy import SandboxIsolation
from equisa_core.testgen.framework import FrameworkChoice
from tasks.run_tests import report_progress
from tasks.sandbox import RunRequest
from tasks.testgen import CoverageResult
from tasks.workspace import Workspace

__all__ = ["PreparedRepository", "TestgenContext", "TestgenRunParameters", "embedding_config", "stage"]


class PreparedRepository(Protocol):
    """What a testgen run reads of a prepared run (``flows.trace.PreparedRun``)."""

    @property
    def repo(self) -> Path: ...
    @property
    def workspace(self) -> Workspace: ...
    @property
    def interpreter_version(self) -> str: ...
    @property
    def base(self) -> RunRequest: ...
    @property
    def sandbox(self) -> SandboxIsolation: ...


class TestgenRunParameters(Protocol):
    """What a testgen run reads of its parameters (``flows.testgen.TestgenParameters``)."""

    __test__ = False

    @property
    def target(self) -> str: ...
    @property
    def out(self) -> str | None: ...
    @property
    def focus(self) -> list[str]: ...
    @property
    def specification(self) -> dict[str, str]: ...
    @property
    def module_stem(self) -> str | None: ...
    @property
    def llm(self) -> bool | None: ...
    @property
    def sandbox(self) -> SandboxKind: ...
    @property
    def docker_image(self) -> str | None: ...
    @property
    def no_cache(self) -> bool: ...
    @property
    def progress_key(self) -> str | None: ...
    @property
    def max_iterations(self) -> int: ...
    @property
    def coverage_target(self) -> float: ...
    @property
    def mutation_target(self) -> float: ...
    @property
    def max_mutants(self) -> int: ...
    @property
    def improvement_budget(self) -> int: ...
    @property
    def carved_per_function(self) -> int: ...
    @property
    def boundary_per_function(self) -> int: ...
    @property
    def measure_baseline_mutation(self) -> bool: ...


@dataclass
class TestgenContext:
    """What the steps of one run share: the prepared run, the target, the mode, the model's
    configuration, the output folder, and the last coverage run (the mutants read its per-line tests)."""

    __test__ = False

    prepared: PreparedRepository
    params: TestgenRunParameters
    target: str
    target_source: str
    module_path: str
    framework: FrameworkChoice
    baseline: CoverageResult | None
    out: Path
    durations: dict[str, float] = field(default_factory=dict)
    use_llm: bool = False
    #: The model endpoint's LLMConfig (LLM mode).
    config: Any = None
    problems: list[str] = field(default_factory=list)
    coverage: CoverageResult | None = None


def stage(ctx: TestgenContext, text: str) -> None:
    """What the run is doing now, for the spinner of the command that runs it."""
    report_progress(ctx.params.progress_key, {"kind": "stage", "text": text})


def embedding_config(ctx: TestgenContext) -> Any:
    """The model configuration embeddings use: the endpoint's in LLM mode, else None (local)."""
    return ctx.config if ctx.use_llm else None

"""What the steps of one testgen run share: the run's context (``TestgenContext``: the prepared run,
``tasks.run.prepared_run.PreparedRun``, and the parameters, ``tasks.run.parameters.TestgenParameters``,
among others), and the two things every step does with it: say what the run is doing now
(``stage``) and pick the configuration embeddings use (``embedding_config``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from equisa_core.testgen.framework import FrameworkChoice
from tasks.operations.progress_events import Stage, emit
from tasks.run.parameters import TestgenParameters
from tasks.run.prepared_run import PreparedRun
from tasks.testgen.analysis import CoverageResult

__all__ = ["TestgenContext", "embedding_config", "stage"]


@dataclass
class TestgenContext:
    """What the steps of one run share: the prepared run, the target, the mode, the model's
    configuration, the output folder, the last coverage run (the mutants read its per-line tests) and
    the last mutation run's survivors."""

    __test__ = False

    prepared: PreparedRun
    params: TestgenParameters
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
    coverage: CoverageResult | None = None
    #: The last mutation run's surviving mutants: (fqn, name, mutated ``def``), for the next round's search.
    survivors: tuple[tuple[str, str, str], ...] = ()


def stage(ctx: TestgenContext, text: str) -> None:
    """What the run is doing now, for the spinner of the command that runs it."""
    emit(Stage(text=text))


def embedding_config(ctx: TestgenContext) -> Any:
    """The model configuration embeddings use: the endpoint's in LLM mode, else None (local)."""
    return ctx.config if ctx.use_llm else None

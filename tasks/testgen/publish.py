"""What a testgen run writes and says: each finished attempt's module, ``attempt.json`` and
progress line (``publish_attempt``), and at the end the best module and ``report.json`` in the
output folder (``publish_outputs``); and what the run returns (``GeneratedTests``, and
``GenerateTests``: the shape of ``flows.testgen.generate_tests``, which other flows pass to tasks).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.cost import CostLedger
from equisa_core.testgen.machine import TestgenState
from equisa_core.testgen.parametrize import parametrize_module
from equisa_core.testgen.report import TestgenReport
from tasks.operations.progress_events import Note, emit
from tasks.run.parameters import TestgenParameters
from tasks.run.prepared_run import PreparedRun
from tasks.testgen.analysis import tidy_test_module
from tasks.testgen.context import TestgenContext

__all__ = ["GenerateTests", "GeneratedTests", "publish_attempt", "publish_outputs"]


class GeneratedTests(BaseModel):
    """What ``generate_tests`` returns: the report, the best module (workspace path and text) and
    the run's model calls (its ``CostLedger``: the report's ``cost_usd`` is its sum)."""

    model_config = ConfigDict(frozen=True)

    report: TestgenReport
    path: str | None = None
    source: str | None = None
    ledger: CostLedger = Field(default_factory=CostLedger)


#: ``flows.testgen.generate_tests``: the loop on a prepared run, for these parameters.
GenerateTests = Callable[[PreparedRun, TestgenParameters], GeneratedTests]


def publish_attempt(ctx: TestgenContext, state: TestgenState) -> None:
    """The finished attempt's module and ``attempt.json`` in ``--out``, and its progress line."""
    entry = state.attempts[-1]
    module_file = Path(entry.module)
    module_file.parent.mkdir(parents=True, exist_ok=True)
    module_file.write_text(state.source, encoding="utf-8")
    (module_file.parent / "attempt.json").write_text(
        json.dumps(entry.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8"
    )
    mutation = entry.mutation_score if entry.mutation_score is not None else "-"
    line = (
        f"attempt {entry.attempt}: {len(entry.tests)} tests, coverage {entry.critique.coverage:.2f}%, "
        f"mutation {mutation}, {entry.decision} ({entry.decision_reason})"
    )
    print(line)
    emit(Note(text=line))


def publish_outputs(ctx: TestgenContext, state: TestgenState, report: TestgenReport) -> None:
    """The best module (when there is one; the report names it) and ``report.json`` in ``--out``.
    In deterministic mode the module's same-shape tests are folded into parametrized ones
    (``equisa_core.testgen.parametrize``): each case passed as a test of its own in the attempt."""
    if state.best_attempt is not None:
        final = ctx.out / Path(ctx.module_path).name
        source = state.best_source
        if not ctx.params.llm:
            source = tidy_test_module(parametrize_module(source))
        final.write_text(source, encoding="utf-8")
        report.output = str(final)
    (ctx.out / "report.json").write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")

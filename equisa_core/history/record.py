"""The record of one finished run and the history rows it becomes. Pure.

A ``RunRecord`` is what a flow hands to the history writer, and what waits in the spool when the
history cannot be written: the report's JSON (any of ``TraceReport``, ``LocalizationReport``,
``RepairReport``, ``TestgenReport``, or the ``FailureReport`` of a run that stopped before its own
report existed) plus the run's identity, the trace's per-test results and the LLM calls.
``rows_for_run`` turns it into rows, table by table, in ``schema.TABLES`` column order.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import PurePath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.localization.confidence_history import confidence_history
from equisa_core.localization.steps import InspectionRecord, RankedNode
from equisa_core.report.outcome import is_failure, run_outcome

__all__ = ["LLMCallRecord", "RunRecord", "RunRows", "rows_for_run", "repo_id"]

RunKind = Literal["trace", "localize", "repair", "testgen"]


class LLMCallRecord(BaseModel):
    """One LLM call of a run, as the history keeps it."""

    model_config = ConfigDict(frozen=True)

    at: datetime
    purpose: str
    model: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    latency_s: float = 0.0
    error: str | None = None


class RunRecord(BaseModel):
    """A finished run: who it was, what it reported, where its artifacts are. A run that stopped before
    its report existed (an error, nothing to do, Ctrl-C) reports its ``FailureReport``."""

    model_config = ConfigDict(frozen=True)

    run_id: str = Field(description="The flow run id of the run (unique, also the artifact folder).")
    kind: RunKind
    repository: str = Field(description="Absolute path of the repository.")
    started_at: datetime | None = None
    finished_at: datetime
    flow_run_id: str | None = None
    parent_flow_run_id: str | None = Field(None, description="Set when the run was a child flow run.")
    artifacts: str | None = Field(None, description="URI of the run's folder in the artifact store.")
    report: dict[str, Any] = Field(description="The report's JSON (a FailureReport's for a failed run).")
    trace: dict[str, Any] | None = Field(None, description="The final trace's JSON (TraceReport).")
    llm_calls: tuple[LLMCallRecord, ...] = ()
    problems: tuple[str, ...] = Field((), description="Storage problems met while recording.")


class RunRows(BaseModel):
    """The rows of one run: per-run tables, plus the repository and tests (inserted once)."""

    model_config = ConfigDict(frozen=True)

    repository: tuple[str, str, str]
    tests: tuple[tuple[str, bool], ...]
    tables: dict[str, list[tuple[Any, ...]]]


def repo_id(path: str) -> str:
    """The first 16 hex digits of the SHA-256 of the repository's absolute path."""
    return hashlib.sha256(path.encode()).hexdigest()[:16]


def rows_for_run(record: RunRecord) -> RunRows:
    """Every row the run adds to the history."""
    report, rid = record.report, record.run_id
    localization = report.get("localization") if record.kind == "repair" else (
        report if record.kind == "localize" else None)
    if is_failure(report):
        localization = None
    trace = record.trace if record.trace is not None else (report if record.kind == "trace" else None)
    generated: set[str] = set()
    if localization and localization.get("discovery"):
        generated = set(localization["discovery"].get("tests", ()))
    tests = [(t["test_id"], t["test_id"] in generated) for t in (trace or {}).get("tests", ())]
    tables: dict[str, list[tuple[Any, ...]]] = {
        "runs": [_run_row(record, trace, localization)],
        "test_results": _test_result_rows(rid, trace),
        "nodes": _node_rows(rid, trace, localization),
        "node_scores": [], "inspections": [], "patches": [], "validations": [],
        "llm_calls": _llm_call_rows(record),
        "testgen_attempts": [],
    }
    if localization:
        tables["node_scores"], tables["inspections"] = _inspection_rows(rid, localization)
        tables["testgen_attempts"] = _discovery_round_rows(rid, localization)
    if record.kind == "testgen":
        tables["testgen_attempts"].extend(_testgen_attempt_rows(rid, report))
    if record.kind == "repair":
        tables["patches"], tables["validations"] = _patch_rows(rid, report)
    name = PurePath(record.repository).name or record.repository
    return RunRows(repository=(repo_id(record.repository), record.repository, name), tests=tuple(tests),
                   tables=tables)


def _run_row(record: RunRecord, trace: dict[str, Any] | None,
             localization: dict[str, Any] | None) -> tuple[Any, ...]:
    """The run's one row in ``runs``."""
    passed, failed = _test_counts(record, trace, localization)
    outcome = run_outcome(record.kind, record.report)
    return (
        record.run_id, repo_id(record.repository), record.kind, outcome.status,
        _mode(record), _target(record, localization), (localization or {}).get("converged"),
        (localization or {}).get("stopped_because"), _utc(record.started_at), _utc(record.finished_at),
        _cost(record), passed, failed,
        record.flow_run_id, record.parent_flow_run_id, record.artifacts,
        [*record.report.get("problems", ()), *record.problems],
        outcome.exit_code, outcome.error_type, outcome.error,
    )


def _test_result_rows(rid: str, trace: dict[str, Any] | None) -> list[tuple[Any, ...]]:
    """One ``test_results`` row per test of the trace."""
    flaky = set((trace or {}).get("flaky", ()))
    return [(rid, test["test_id"], test["outcome"], test.get("duration"), test.get("exception_type"),
             test["test_id"] in flaky) for test in (trace or {}).get("tests", ())]


def _node_rows(rid: str, trace: dict[str, Any] | None,
               localization: dict[str, Any] | None) -> list[tuple[Any, ...]]:
    """One ``nodes`` row per ranked node: the localization's ranking if any, else the trace's."""
    if not localization:
        return [(rid, node["fqn"], node.get("file"), node.get("start_line"), node.get("end_line"), rank,
                 node.get("tarantula"), node.get("ochiai"), node.get("dstar"), None)
                for rank, node in enumerate((trace or {}).get("nodes", ()), 1)]
    scores = {n["fqn"]: n for n in (trace or {}).get("nodes", ())}
    rows: list[tuple[Any, ...]] = []
    for rank, ranked in enumerate(localization.get("ranking", ()), 1):
        node = RankedNode.model_validate(ranked)
        scored = scores.get(node.fqn, {})
        rows.append((rid, node.fqn, node.file, node.start_line, node.end_line, rank,
                     node.suspiciousness, scored.get("ochiai"), scored.get("dstar"), node.confidence))
    return rows


def _inspection_rows(rid: str, localization: dict[str, Any]
                     ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The ``node_scores`` rows (confidences after each inspection) and the ``inspections`` rows."""
    ranking = [RankedNode.model_validate(n) for n in localization.get("ranking", ())]
    inspections = [InspectionRecord.model_validate(i) for i in localization.get("inspections", ())]
    node_scores = [(rid, iteration, f, c)
                   for iteration, confidences in enumerate(confidence_history(ranking, inspections))
                   for f, c in confidences.items()]
    rows = [(rid, i.iteration, i.target, i.strategy, _value(i.outcome), i.reflection, i.reflection_by,
             i.prior, i.posterior, _value(i.fix_evidence), i.fix, i.mutants_tried, len(i.tests_run),
             i.reasoning) for i in inspections]
    return node_scores, rows


def _discovery_round_rows(rid: str, localization: dict[str, Any]) -> list[tuple[Any, ...]]:
    """One ``testgen_attempts`` row per round of the localization's test discovery."""
    return [(rid, attempt["round"], ["|".join(g) for g in attempt.get("groups", ())],
             attempt.get("proposed"), attempt.get("kept"), list(attempt.get("dropped", ())))
            for attempt in ((localization.get("discovery") or {}).get("rounds") or ())]


def _testgen_attempt_rows(rid: str, report: dict[str, Any]) -> list[tuple[Any, ...]]:
    """One ``testgen_attempts`` row per attempt: the target, tests written, tests passing, dropped."""
    return [(rid, attempt["attempt"], [str(report.get("target"))], len(attempt.get("tests", ())),
             attempt.get("tests_passed"), list((attempt.get("pipeline") or {}).get("dropped", ())))
            for attempt in report.get("attempts", ())]


def _patch_rows(rid: str, report: dict[str, Any]
                ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The ``patches`` rows (one per evaluated candidate) and the ``validations`` rows (one per check)."""
    accepted = report.get("candidate") if report.get("status") == "fixed" else None
    patches: list[tuple[Any, ...]] = []
    validations: list[tuple[Any, ...]] = []
    for evaluation in report.get("evaluations", ()):
        chosen = evaluation["candidate"] == report.get("candidate")
        patches.append((
            rid, evaluation["candidate"], evaluation["status"], evaluation.get("detail", ""),
            evaluation["candidate"] == accepted, report.get("target") if chosen else None,
            report.get("diff") if chosen else None))
        validations.extend((rid, evaluation["candidate"], check, result)
                           for check, result in evaluation.get("checks", {}).items())
    return patches, validations


def _llm_call_rows(record: RunRecord) -> list[tuple[Any, ...]]:
    """One ``llm_calls`` row per model call of the run."""
    return [(record.run_id, _utc(call.at), call.purpose, call.model, call.input_tokens, call.output_tokens,
             call.cost_usd, call.latency_s, call.error) for call in record.llm_calls]


def _utc(moment: datetime | None) -> datetime | None:
    """A naive UTC timestamp (DuckDB's TIMESTAMP), whatever zone the moment was given in."""
    if moment is None or moment.tzinfo is None:
        return moment
    return datetime.fromtimestamp(moment.timestamp(), UTC).replace(tzinfo=None)  # (a stdlib datetime)


def _value(item: Any) -> str | None:
    return None if item is None else str(getattr(item, "value", item))


def _mode(record: RunRecord) -> str | None:
    return record.report.get("mode") if record.kind != "trace" else None


def _cost(record: RunRecord) -> float:
    if is_failure(record.report):  # what the calls made before the failure cost
        return float(sum(call.cost_usd or 0.0 for call in record.llm_calls))
    if record.kind == "testgen":
        return float(record.report.get("cost_usd", 0.0))
    return float(record.report.get("cost", {}).get("usd", 0.0)) if record.kind != "trace" else 0.0


def _target(record: RunRecord, localization: dict[str, Any] | None) -> str | None:
    if record.kind in ("repair", "testgen") and record.report.get("target"):
        return str(record.report["target"])
    ranking = (localization or {}).get("ranking") or ()
    if ranking and (localization or {}).get("converged"):
        return str(ranking[0]["fqn"])
    return None


def _test_counts(record: RunRecord, trace: dict[str, Any] | None,
                 localization: dict[str, Any] | None) -> tuple[int | None, int | None]:
    if localization and localization.get("tests"):
        return localization["tests"].get("passed"), localization["tests"].get("failed")
    if record.kind == "testgen":  # the generated tests of the best attempt
        attempts = {a["attempt"]: a for a in record.report.get("attempts", ())}
        best = attempts.get(record.report.get("best_attempt"))
        if best is None:
            return None, None
        return best.get("tests_passed", 0), len(best.get("tests", ())) - best.get("tests_passed", 0)
    if trace and trace.get("summary"):
        summary = trace["summary"]
        return summary.get("passed"), summary.get("failed", 0) + summary.get("error", 0)
    return None, None

"""The record of one finished run and the history rows it becomes. Pure.

A ``RunRecord`` is what a flow hands to the history writer, and what waits in the spool when the
history cannot be written: the report's JSON (any of ``TraceReport``, ``LocalizationReport``,
``RepairReport``) plus the run's identity, the trace's per-test results and the LLM calls.
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
    """A finished run: who it was, what it reported, where its artifacts are."""

    model_config = ConfigDict(frozen=True)

    run_id: str = Field(description="The flow run id of the run (unique, also the artifact folder).")
    kind: RunKind
    repository: str = Field(description="Absolute path of the repository.")
    started_at: datetime | None = None
    finished_at: datetime
    flow_run_id: str | None = None
    parent_flow_run_id: str | None = Field(None, description="Set when the run was a child flow run.")
    artifacts: str | None = Field(None, description="URI of the run's folder in the artifact store.")
    report: dict[str, Any] = Field(description="The report's JSON.")
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
    trace = record.trace if record.trace is not None else (report if record.kind == "trace" else None)
    tables: dict[str, list[tuple[Any, ...]]] = {name: [] for name in (
        "runs", "test_results", "nodes", "node_scores", "inspections", "patches", "validations",
        "llm_calls", "testgen_attempts")}
    generated: set[str] = set()
    if localization and localization.get("discovery"):
        generated = set(localization["discovery"].get("tests", ()))
    flaky = set((trace or {}).get("flaky", ()))
    tests: list[tuple[str, bool]] = []
    for test in (trace or {}).get("tests", ()):
        tests.append((test["test_id"], test["test_id"] in generated))
        tables["test_results"].append((rid, test["test_id"], test["outcome"], test.get("duration"),
                                       test.get("exception_type"), test["test_id"] in flaky))
    passed, failed = _test_counts(record, trace, localization)
    tables["runs"].append((
        rid, repo_id(record.repository), record.kind, _status(record, localization), _mode(record),
        _target(record, localization), (localization or {}).get("converged"),
        (localization or {}).get("stopped_because"), _utc(record.started_at), _utc(record.finished_at),
        _cost(record), passed, failed,
        record.flow_run_id, record.parent_flow_run_id, record.artifacts,
        [*report.get("problems", ()), *record.problems],
    ))
    scores = {n["fqn"]: n for n in (trace or {}).get("nodes", ())}
    if localization:
        ranking = [RankedNode.model_validate(n) for n in localization.get("ranking", ())]
        for rank, node in enumerate(ranking, 1):
            scored = scores.get(node.fqn, {})
            tables["nodes"].append((rid, node.fqn, node.file, node.start_line, node.end_line, rank,
                                    node.suspiciousness, scored.get("ochiai"), scored.get("dstar"),
                                    node.confidence))
        inspections = [InspectionRecord.model_validate(i) for i in localization.get("inspections", ())]
        for iteration, confidences in enumerate(confidence_history(ranking, inspections)):
            tables["node_scores"].extend((rid, iteration, f, c) for f, c in confidences.items())
        for i in inspections:
            tables["inspections"].append((
                rid, i.iteration, i.target, i.strategy, _value(i.outcome), i.reflection, i.reflection_by,
                i.prior, i.posterior, _value(i.fix_evidence), i.fix, i.mutants_tried, len(i.tests_run),
                i.reasoning))
        for attempt in ((localization.get("discovery") or {}).get("rounds") or ()):
            tables["testgen_attempts"].append((
                rid, attempt["round"], ["|".join(g) for g in attempt.get("groups", ())],
                attempt.get("proposed"), attempt.get("kept"), list(attempt.get("dropped", ()))))
    else:
        for rank, node in enumerate((trace or {}).get("nodes", ()), 1):
            tables["nodes"].append((rid, node["fqn"], node.get("file"), node.get("start_line"),
                                    node.get("end_line"), rank, node.get("tarantula"), node.get("ochiai"),
                                    node.get("dstar"), None))
    if record.kind == "testgen":  # one row per attempt: the target, tests written, tests passing, dropped
        for attempt in report.get("attempts", ()):
            tables["testgen_attempts"].append((
                rid, attempt["attempt"], [str(report.get("target"))], len(attempt.get("tests", ())),
                attempt.get("tests_passed"), list((attempt.get("pipeline") or {}).get("dropped", ()))))
    if record.kind == "repair":
        accepted = report.get("candidate") if report.get("status") == "fixed" else None
        for evaluation in report.get("evaluations", ()):
            chosen = evaluation["candidate"] == report.get("candidate")
            tables["patches"].append((
                rid, evaluation["candidate"], evaluation["status"], evaluation.get("detail", ""),
                evaluation["candidate"] == accepted, report.get("target") if chosen else None,
                report.get("diff") if chosen else None))
            tables["validations"].extend((rid, evaluation["candidate"], check, result)
                                         for check, result in evaluation.get("checks", {}).items())
    for call in record.llm_calls:
        tables["llm_calls"].append((rid, _utc(call.at), call.purpose, call.model, call.input_tokens,
                                    call.output_tokens, call.cost_usd, call.latency_s, call.error))
    name = PurePath(record.repository).name or record.repository
    return RunRows(repository=(repo_id(record.repository), record.repository, name), tests=tuple(tests),
                   tables=tables)


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
    if record.kind == "testgen":
        return float(record.report.get("cost_usd", 0.0))
    return float(record.report.get("cost", {}).get("usd", 0.0)) if record.kind != "trace" else 0.0


def _status(record: RunRecord, localization: dict[str, Any] | None) -> str:
    if record.kind == "testgen":
        return "generated" if record.report.get("best_attempt") is not None else "nothing_generated"
    if record.kind == "repair":
        return str(record.report.get("status"))
    if record.kind == "localize":
        return "converged" if (localization or {}).get("converged") else "not_converged"
    return "crashed" if record.report.get("crashed") else "traced"


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

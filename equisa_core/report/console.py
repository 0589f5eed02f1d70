"""What the ``equisa`` commands print about a report: rich tables and marked-up lines, built from the
report models. Pure: nothing here prints, reads a file or the clock; the command line prints each
``Printed`` as it says (``console.print(p.content, highlight=p.highlight, soft_wrap=p.soft_wrap)``).

A column of qualified names (``name_column``) is never cut or wrapped: it is as wide as its longest
name, and the command line widens its console for a table that needs more than the console's width
(``cli.flow_runs.show``), so piped output and CI logs keep every name whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rich.console import RenderableType
from rich.markup import escape
from rich.table import Table

from equisa_core.discovery.trace_report import TraceReport
from equisa_core.errors import EquisaError, budget_spent
from equisa_core.localization.steps import LocalizationReport
from equisa_core.operations.batch import BatchSummary
from equisa_core.repair.report import RepairReport
from equisa_core.report.failure import FailureReport
from equisa_core.testgen.input_search import POSSIBLE_BUG
from equisa_core.testgen.report import TestgenReport

__all__ = [
    "Printed",
    "TOP_NODES",
    "batch_summary",
    "duration",
    "error_line",
    "flush_summary",
    "history_summary",
    "line",
    "localization_summary",
    "name_column",
    "note",
    "repair_summary",
    "stored",
    "testgen_summary",
    "trace_summary",
]

#: Functions a ranking table shows.
TOP_NODES = 10


@dataclass(frozen=True)
class Printed:
    """One ``console.print`` call: a renderable (or console markup), and how it is printed."""

    content: RenderableType
    highlight: bool | None = None
    soft_wrap: bool | None = None


def line(markup: str, soft_wrap: bool | None = None) -> Printed:
    """A line of console markup, printed without highlighting."""
    return Printed(markup, highlight=False, soft_wrap=soft_wrap)


def note(problem: str) -> Printed:
    """``note: ...``: something that went wrong but did not stop the run."""
    return line(f"[yellow]note:[/] {problem}", soft_wrap=True)


def error_line(error: BaseException) -> Printed:
    """The one line a command's error ends with: its message for an ``EquisaError``, else (a bug)
    its type and text."""
    if isinstance(error, EquisaError):
        return line(f"[bold red]equisa:[/] {escape(error.message)}", soft_wrap=True)
    if isinstance(error, KeyboardInterrupt):
        return Printed("[bold red]equisa:[/] interrupted")
    return line(f"[bold red]equisa: internal error:[/] {type(error).__name__}: {error} "
                "(run with --debug for the traceback)", soft_wrap=True)


def duration(seconds: float) -> str:
    """``1800`` -> ``30 min``, ``90`` -> ``90 s``, ``7200`` -> ``2 h``."""
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    if seconds >= 120 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


def name_column(table: Table, header: str, names: Sequence[str | None]) -> None:
    """Add a column of qualified names to ``table`` that is never cut or wrapped: at least as wide
    as its longest name, taking the width left over."""
    widest = max((len(name) for name in names if name), default=0)
    table.add_column(header, no_wrap=True, overflow="ignore", min_width=max(widest, len(header)), ratio=1)


def trace_summary(report: TraceReport) -> list[Printed]:
    """``equisa trace``: the outcomes, the most suspicious functions and the ambiguity groups."""
    s = report.summary
    printed = [line(
        f"{s.total} tests: {s.passed} passed, {s.failed} failed, {s.error} errors, "
        f"{s.skipped} skipped{f' ({len(report.flaky)} flaky)' if report.flaky else ''} · "
        f"{len(report.nodes)} functions · {len(report.edges)} edges · "
        f"tracer {report.backend} ({report.backend_reason})")]
    table = Table(title=f"Most suspicious functions (top {TOP_NODES})", title_justify="left")
    name_column(table, "function", [node.fqn for node in report.nodes[:TOP_NODES]])
    for column in ("line", "fail", "pass", "tarantula", "ochiai", "dstar"):
        table.add_column(column, justify="right", no_wrap=True)
    for node in report.nodes[:TOP_NODES]:
        table.add_row(
            node.fqn, str(node.start_line), str(node.failed_s), str(node.passed_s),
            f"{node.tarantula:.3f}", f"{node.ochiai:.3f}", f"{node.dstar:.3f}",
        )
    printed.append(Printed(table))
    if report.ambiguity_groups:
        largest = report.ambiguity_groups[0]
        printed.append(line(
            f"{len(report.ambiguity_groups)} ambiguity groups; largest has {len(largest)} "
            f"functions: {', '.join(largest[:5])}{' …' if len(largest) > 5 else ''}", soft_wrap=True))
    return printed


def localization_summary(report: LocalizationReport) -> list[Printed]:
    """``equisa localize`` (and the first part of ``repair``): the verdict, Discovery, the ranking."""
    verdict = "converged" if report.converged else "not converged"
    printed = [line(
        f"{report.mode} mode · {verdict} ({report.stopped_because}) · {len(report.inspections)} "
        f"inspections · {report.tests.failed} failing, {report.tests.passed} passing, "
        f"{report.tests.flaky} flaky tests", soft_wrap=True)]
    found = report.discovery
    if found is not None and not found.enabled:
        printed.append(line("Discovery: off, no tests generated"))
    elif found is not None:
        testgen = ""
        if found.testgen:
            proposed = sum(r.testgen_proposed for r in found.rounds)
            testgen = f" ({sum(r.testgen_kept for r in found.rounds)} of {proposed} testgen tests)"
        printed.append(line(
            f"Discovery: {found.generated} generated tests kept{testgen}; ambiguity groups "
            f"{list(found.group_sizes_before) or 'none'} -> {list(found.group_sizes_after) or 'none'} "
            f"({found.stopped_because})"))
    table = Table(title="Ranking (top 10)", title_justify="left")
    name_column(table, "function", [node.fqn for node in report.ranking[:TOP_NODES]])
    for column in ("line", "suspiciousness", "confidence"):
        table.add_column(column, justify="right", no_wrap=True)
    for node in report.ranking[:TOP_NODES]:
        table.add_row(node.fqn, str(node.start_line), f"{node.suspiciousness:.3f}", f"{node.confidence:.3f}")
    printed.append(Printed(table))
    return printed + [note(problem) for problem in report.problems]


def repair_summary(report: RepairReport) -> list[Printed]:
    """``equisa repair``: the status, the patch's checks, the patch, and the notes not shown yet."""
    colour = {"fixed": "green", "plausible_only": "yellow"}.get(report.status, "red")
    printed = [line(
        f"[bold {colour}]{report.status}[/] · target {report.target or '-'} · "
        f"{report.candidates_tried} candidates tried · {len(report.evaluations)} validated"
        + (" · applied" if report.applied else "")
        + (f" · stopped: {report.stopped_because}" if budget_spent(report.stopped_because) else ""),
        soft_wrap=True)]
    if report.evidence:
        printed.append(line(f"evidence: {escape(report.evidence)}", soft_wrap=True))
    if report.validation:
        table = Table(title="Validation of the patch", title_justify="left")
        table.add_column("check", no_wrap=True)
        table.add_column("result", overflow="fold", ratio=1)
        for check, result in report.validation.items():
            table.add_row(check, result)
        printed.append(Printed(table))
    if report.diff:
        from rich.syntax import Syntax

        printed.append(Printed(Syntax(report.diff, "diff", theme="ansi_dark", background_color="default")))
    shown = report.localization.problems if report.localization is not None else ()
    return printed + [note(problem) for problem in report.problems
                      if report.localization is None or problem not in shown]


def testgen_summary(report: TestgenReport) -> list[Printed]:
    """``equisa testgen``: the baseline, every attempt, the module kept."""
    base = report.baseline
    printed = [line(
        f"{report.mode} mode · framework {report.framework} · baseline coverage "
        f"{f'{base.percent:.2f}%' if base else '-'} · stopped: {report.stopped_because or '-'} · "
        f"cost ${report.cost_usd:.4f}")]
    table = Table(title="Attempts", title_justify="left")
    for column in ("#", "origin", "tests", "passed", "coverage", "with existing", "mutation", "pre", "post",
                   "router"):
        table.add_column(column, overflow="fold")
    for a in report.attempts:
        table.add_row(
            str(a.attempt), a.origin, str(len(a.tests)), str(a.tests_passed),
            f"{a.coverage.percent:.2f}%" if a.coverage else "-",
            f"{a.combined_coverage.percent:.2f}%" if a.combined_coverage else "-",
            f"{a.mutation_score:.2f}%" if a.mutation_score is not None else "-",
            a.pre_reliability.level, a.post_reliability.level, f"{a.decision} ({a.decision_reason})",
        )
    printed.append(Printed(table))
    if report.output:
        printed.append(line(f"Tests written to {report.output} (attempt {report.best_attempt})"))
    else:
        printed.append(Printed("No test module was kept."))
    notes = [d for a in report.attempts for d in a.deterministic]
    suspicious = dict.fromkeys(d for d in notes if d.startswith(POSSIBLE_BUG))
    printed += [line(escape(found), soft_wrap=True) for found in suspicious]
    return printed + [note(problem) for problem in report.problems]


def stored(report: TraceReport | LocalizationReport | RepairReport | TestgenReport | FailureReport
           ) -> list[Printed]:
    """Where the run was recorded (its HTML report), after the storage notes of a trace run."""
    printed = [note(problem) for problem in report.problems] if isinstance(report, TraceReport) else []
    if report.artifacts:
        printed.append(line(f"Run {report.run_id} recorded: {report.artifacts}/report.html", soft_wrap=True))
    return printed


def batch_summary(summary: BatchSummary) -> list[Printed]:
    """``equisa batch``: one row per repository, and the reports folder."""
    table = Table(title=f"Batch: {len(summary.results)} repositories in {summary.seconds:.1f}s",
                  title_justify="left")
    name_column(table, "repository", [r.name for r in summary.results])
    table.add_column("status", no_wrap=True)
    name_column(table, "target", [r.target for r in summary.results])
    table.add_column("seconds", no_wrap=True)
    table.add_column("note", overflow="fold")
    colours = {"fixed": "green", "plausible_only": "yellow", "error": "red"}
    for r in summary.results:
        colour = colours.get(r.status, "white")
        table.add_row(r.name, f"[{colour}]{r.status}[/]", r.target or "", f"{r.seconds:.1f}", r.error or "")
    printed = [Printed(table)]
    if summary.reports_dir:
        printed.append(line(f"Reports in {summary.reports_dir}", soft_wrap=True))
    return printed


def history_summary(answers: Mapping[str, Any], db_exists: bool) -> list[Printed]:
    """``equisa history``: the four answers (``tasks.storage.history.history_answers``) as tables."""
    printed = []
    if not db_exists:
        printed.append(line(f"No history yet at {answers['db']}: runs are recorded there as they finish."))
    if answers["spooled_runs"]:
        printed.append(line(f"[yellow]note:[/] {answers['spooled_runs']} runs wait in the spool; `equisa "
                            "flush` writes them to the history"))
    for title, key, columns in (
        ("Runs (newest first)", "runs",
         ("finished_at", "kind", "status", "exit_code", "target", "cost_usd", "repository", "run_id")),
        ("Fix rate per repository (repair runs)", "fix_rate",
         ("repository", "repairs", "fixed", "plausible_only", "fix_rate", "last_run")),
        ("Functions that keep being blamed", "blamed",
         ("function", "runs", "fixed", "last_blamed", "repository")),
        ("LLM spend per day", "llm_spend_per_day",
         ("day", "usd", "runs", "calls", "input_tokens", "output_tokens")),
    ):
        printed.append(_rows_table(title, answers[key], columns))
    return printed


def _rows_table(title: str, rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> Printed:
    """A table of ``rows`` (dicts) in ``columns``, or ``title: none``."""
    if not rows:
        return line(f"{title}: none")
    table = Table(title=title, title_justify="left")
    for column in columns:
        if column == "function":
            name_column(table, column, [_cell(row.get(column)) for row in rows])
        else:
            table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(_cell(row.get(c)) for c in columns))
    return Printed(table)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def flush_summary(result: Mapping[str, Any]) -> list[Printed]:
    """``equisa flush``: what each spooled destination took and left (``tasks.storage.artifacts``' flush)."""
    rows = [("artifacts", r["destination"], r["uploaded"], r["remaining"], r["error"])
            for r in result["artifacts"]]
    rows += [("history", r["db"], r["ingested"], r["remaining"], r["error"]) for r in result["history"]]
    if not rows:
        return [line(f"Nothing waits in the spool ({result['spool']}).")]
    table = Table(title=f"Flushed from {result['spool']}", title_justify="left")
    for column in ("what", "destination", "written", "still waiting", "error"):
        table.add_column(column, overflow="fold")
    for what, where, done, left, error in rows:
        table.add_row(what, where, str(done), str(left), error or "-")
    printed = [Printed(table)]
    for failure in [r for r in [*result["artifacts"], *result["history"]] if r["error"]]:
        printed.append(line(f"[bold red]equisa:[/] {failure['error']}", soft_wrap=True))
    return printed

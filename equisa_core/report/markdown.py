"""A localize or repair report (or a batch's summary) as Markdown, ready for a pull-request comment or
a GitHub Actions step summary: the outcome, the top suspects, the diff, and the evidence and tests
behind them. The text lives in jinja2 templates next to this module (``templates/summary.md.j2``,
``templates/batch.md.j2``, ``templates/failure.md.j2``); this module only picks and formats the
values they show. Pure: report in, one Markdown string out.
"""

from __future__ import annotations

import re
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from equisa_core.errors import exit_code_meanings
from equisa_core.localization.steps import InspectionRecord, LocalizationReport
from equisa_core.operations.batch import BatchSummary
from equisa_core.repair.report import RepairReport
from equisa_core.report.failure import FailureReport
from equisa_core.report.suspects import TOP_SUSPECTS, localization_of, suspects

__all__ = ["MAX_DIFF_LINES", "MAX_INSPECTIONS", "render_batch_markdown", "render_failure_markdown",
           "render_markdown"]

#: Lines of the diff a summary shows (a pull-request comment holds at most 65,536 characters).
MAX_DIFF_LINES = 400
#: Inspections the summary's table lists (the most recent ones).
MAX_INSPECTIONS = 30



def _cell(value: object) -> str:
    """A value as one Markdown table cell (or list item): on one line, ``|`` escaped."""
    return " ".join(str(value).split()).replace("|", "\\|")


_TEMPLATES = Environment(
    loader=PackageLoader("equisa_core.report", "templates"),
    autoescape=False,  # Markdown: cells are escaped by the ``cell`` filter, code by its fence
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
_TEMPLATES.filters["cell"] = _cell

#: How each outcome is headed.
_OUTCOMES = {
    "fixed": "fixed: a verified patch",
    "plausible_only": "plausible patch only (it passes the suite, but the evidence does not reach a fix)",
    "not_fixed": "not fixed",
    "error": "error",
}


def render_markdown(report: LocalizationReport | RepairReport) -> str:
    """``report`` (``equisa localize`` or ``equisa repair``) as Markdown for a pull-request comment:
    the outcome, the top suspects, the diff, and the evidence and tests behind them."""
    repair = report if isinstance(report, RepairReport) else None
    localization = localization_of(report)
    diff_lines = (repair.diff if repair else "").splitlines()
    values: dict[str, Any] = dict(
        kind="repair" if repair else "localize",
        outcome=_outcome(report, localization),
        repair=repair,
        localization=localization,
        suspects=suspects(report, min_confidence=0.0, limit=TOP_SUSPECTS),
        diff="\n".join(diff_lines[:MAX_DIFF_LINES]),
        diff_cut=max(len(diff_lines) - MAX_DIFF_LINES, 0),
        fence=_fence(repair.diff if repair else ""),
        inspections=_inspections(localization.inspections if localization else ()),
        inspections_cut=max(len(localization.inspections) - MAX_INSPECTIONS, 0) if localization else 0,
        evaluation=repair.evaluations[-1] if repair and repair.evaluations else None,
        problems=[str(p) for p in report.problems],
        cost=float(report.cost.get("usd", 0.0)),
        run_id=report.run_id or "",
        artifacts=report.artifacts or "",
    )
    return _TEMPLATES.get_template("summary.md.j2").render(values)


def render_failure_markdown(failure: FailureReport) -> str:
    """The summary of a command that stopped before its report existed (``templates/failure.md.j2``):
    what stopped it, its exit code and what that code means."""
    title = {"nothing_to_do": "nothing to do", "interrupted": "interrupted"}.get(failure.status, "error")
    meaning = exit_code_meanings().get(failure.exit_code, "")
    return _TEMPLATES.get_template("failure.md.j2").render(failure=failure, title=title, meaning=meaning)


def render_batch_markdown(summary: BatchSummary) -> str:
    """``equisa batch``'s summary as Markdown: the count of each outcome and one row per repository."""
    return _TEMPLATES.get_template("batch.md.j2").render(summary=summary)


def _outcome(report: LocalizationReport | RepairReport, localization: LocalizationReport | None) -> str:
    """The headline: a repair's status, or whether the localization converged, and on what."""
    if isinstance(report, RepairReport):
        headline = _OUTCOMES.get(report.status, report.status)
        if report.status == "error" and report.error:
            return f"{headline}: {report.error}"
        return f"{headline} of `{report.target}`" if report.target and report.diff else headline
    leader = localization.ranking[0] if localization and localization.ranking else None
    if leader is None:
        return "no function ranked"
    verdict = "converged on" if report.converged else "not converged; the leading suspect is"
    return f"{verdict} `{leader.fqn}` (confidence {leader.confidence:.2f})"


def _inspections(records: tuple[InspectionRecord, ...]) -> list[dict[str, str]]:
    """The last ``MAX_INSPECTIONS`` inspections: what was inspected, how, what it showed, how the
    target's confidence moved."""
    return [dict(iteration=str(r.iteration), target=r.target, strategy=r.strategy,
                 seen=str(r.fix_evidence or (r.outcome.value if r.outcome else None) or r.reflection or "-")
                 + (f" ({r.fix})" if r.fix else ""),
                 moved=f"{r.prior:.2f} → {r.posterior:.2f}", tests=str(len(r.tests_run)))
            for r in records[-MAX_INSPECTIONS:]]


def _fence(code: str) -> str:
    """A code fence longer than any run of backticks in ``code`` (at least three)."""
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    return "`" * max(3, longest + 1)

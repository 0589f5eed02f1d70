"""The Markdown of a fix's pull request (``--open-pr``): the outcome, the patched function, the checks
and the diff. Pure: a repair report in, Markdown out.

A short body on purpose; the full Markdown summary of a run (``--markdown``) may take its place.
"""

from __future__ import annotations

from equisa_core.validation.repair import RepairReport

__all__ = ["pull_request_body"]


def pull_request_body(report: RepairReport) -> str:
    """The pull request's (or its comment's) Markdown for ``report``."""
    lines = [f"**EQUISA: {report.status}** ({report.mode} mode)", ""]
    if report.target:
        lines.append(f"Patched function: `{report.target}`")
    failing = report.localization.tests.failed if report.localization is not None else 0
    if failing:
        lines.append(f"Failing tests before the patch: {failing}")
    if report.validation:
        lines += ["", "| check | result |", "|---|---|"]
        lines += [f"| {check} | {result.replace('|', '/')} |" for check, result in report.validation.items()]
    lines += ["", "```diff", report.diff.rstrip("\n") or "(no patch)", "```"]
    if report.run_id:
        lines += ["", f"<sub>equisa run {report.run_id}</sub>"]
    return "\n".join(lines) + "\n"

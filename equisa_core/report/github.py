"""GitHub Actions workflow commands for a localize or repair report: an annotation at each suspect's
function (``::error`` for the leader or the patched function, ``::warning`` for the others) and one
per changed range of the patch (``::notice`` for a verified patch, ``::warning`` for a plausible
one), with values escaped as the runner reads them. Pure: report in, command lines out.
"""

from __future__ import annotations

from collections.abc import Mapping

from equisa_core.localization.steps import LocalizationReport
from equisa_core.repair.report import RepairReport
from equisa_core.report.suspects import replacements, suspects

__all__ = ["escape_data", "escape_property", "github_annotations", "workflow_command"]

#: The annotation levels GitHub Actions knows.
_LEVELS = ("error", "warning", "notice")


def escape_data(value: str) -> str:
    """A command's message as the runner reads it: ``%``, ``\\r`` and ``\\n`` percent-encoded."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    """A command's property value: as ``escape_data``, and ``:`` and ``,`` percent-encoded too."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def workflow_command(level: str, message: str, properties: Mapping[str, str | int]) -> str:
    """``::level key=value,...::message``, every value escaped (``level``: error, warning or notice)."""
    if level not in _LEVELS:
        raise ValueError(f"not an annotation level: {level!r}")
    spelt = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties.items())
    return f"::{level}{' ' + spelt if spelt else ''}::{escape_data(message)}"


def github_annotations(report: LocalizationReport | RepairReport, prefix: str = "") -> list[str]:
    """The workflow commands that annotate ``report``'s suspects and patch; ``prefix`` is put before
    every path (the analysed folder relative to the repository's root, ``""`` when it is the root)."""
    lines = []
    for suspect in suspects(report):
        if not (suspect.file and suspect.start_line):
            continue
        level = "error" if suspect.rank == 1 or suspect.patched else "warning"
        properties: dict[str, str | int] = {"file": prefix + suspect.file, "line": suspect.start_line}
        if suspect.end_line and suspect.end_line > suspect.start_line:
            properties["endLine"] = suspect.end_line
        properties["title"] = f"EQUISA suspect #{suspect.rank}: confidence {suspect.confidence:.2f}"
        lines.append(workflow_command(level, f"{suspect.fqn} may hold the bug. Evidence: {suspect.evidence}.",
                                      properties))
    if isinstance(report, RepairReport) and report.diff and report.status in ("fixed", "plausible_only"):
        verified = report.status == "fixed"
        what = "Verified patch (every check passed)" if verified else \
            "Plausible patch (passes the suite, but the evidence does not reach a fix)"
        for change in replacements(report.diff):
            properties = {"file": prefix + change.path, "line": max(change.start_line, 1)}
            if change.deleted > 1:
                properties["endLine"] = change.start_line + change.deleted - 1
            properties["title"] = f"EQUISA {'patch' if verified else 'plausible patch'} of {report.target}"
            inserted = change.inserted.rstrip("\n")
            action = ("delete these lines" if not inserted
                      else f"replace these lines with:\n{inserted}" if change.deleted
                      else f"insert before this line:\n{inserted}")
            level = "notice" if verified else "warning"
            lines.append(workflow_command(level, f"{what}: {action}", properties))
    return lines

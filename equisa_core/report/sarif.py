"""A localize or repair report as a SARIF 2.1.0 log (``--sarif``), for code scanning and other CI
viewers: one result per suspect (``equisa_core.report.suspects``: confidence at least
``MIN_CONFIDENCE``) at its function's first line, with its rank, confidence and a one-line summary
of the evidence; a verified patch (``fixed``) is the patched function's ``fixes`` entry, its
replacements made from the diff. Pure: report in, JSON-ready dict out.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from equisa_core.localization.steps import LocalizationReport
from equisa_core.repair.report import RepairReport
from equisa_core.report.failure import FailureReport
from equisa_core.report.suspects import Replacement, Suspect, localization_of, replacements, suspects

__all__ = ["SARIF_SCHEMA", "SARIF_VERSION", "SUSPECT_RULE", "render_failure_sarif", "render_sarif"]

SARIF_VERSION = "2.1.0"
#: Where the log says its schema is (the OASIS errata 01 schema; tests validate against a copy).
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
#: The rule every result reports.
SUSPECT_RULE = "EQUISA001"
_SOURCE_ROOT = "%SRCROOT%"


def render_sarif(report: LocalizationReport | RepairReport, prefix: str = "", tool_version: str = "unknown"
                 ) -> dict[str, Any]:
    """The SARIF 2.1.0 log of ``report``; ``prefix`` is put before every path (the analysed folder
    relative to the repository root that code scanning sees, e.g. ``services/billing/``)."""
    repair = report if isinstance(report, RepairReport) else None
    found = suspects(report)
    results = [_result(s, prefix, repair) for s in found if s.file and s.start_line]
    localization = localization_of(report)
    run: dict[str, Any] = {
        "tool": _tool(tool_version),
        "originalUriBaseIds": {_SOURCE_ROOT: {"description": {"text": "The repository's root."}}},
        "invocations": [{"executionSuccessful": _successful(report)}],
        "results": results,
        "properties": _run_properties(report, localization),
    }
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def render_failure_sarif(failure: FailureReport, tool_version: str = "unknown") -> dict[str, Any]:
    """The SARIF 2.1.0 log of a command that stopped before its report existed (``failure``): no
    result, and the invocation with the exit code and the message, so that a CI step that uploads the
    file finds one that says why. Nothing to do (no test fails) is a successful invocation."""
    invocation = {
        "executionSuccessful": failure.status == "nothing_to_do",
        "exitCode": failure.exit_code,
        "exitCodeDescription": failure.status,
        "toolExecutionNotifications": [{
            "level": "note" if failure.status == "nothing_to_do" else "error",
            "message": {"text": f"equisa {failure.command}: {failure.error}"},
            "descriptor": {"id": failure.error_type},
        }],
    }
    run = {"tool": _tool(tool_version), "invocations": [invocation], "results": []}
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def _tool(tool_version: str) -> dict[str, Any]:
    return {"driver": {
            "name": "EQUISA",
            "version": tool_version,
            "rules": [{
                "id": SUSPECT_RULE,
                "name": "SuspiciousFunction",
                "shortDescription": {"text": "Function suspected of causing the failing tests"},
                "fullDescription": {"text": "EQUISA traced the failing and passing tests, inspected the "
                                            "most suspicious functions in sandboxes and counted the evidence "
                                            "in a Bayesian model; the confidence is the posterior "
                                            "probability that this function holds the bug."},
                "defaultConfiguration": {"level": "warning"},
            }],
        }}


def _result(suspect: Suspect, prefix: str, repair: RepairReport | None) -> dict[str, Any]:
    """One suspect's result: the function's first line, its rank (SARIF's ``rank``: confidence in
    percent), and the verified patch as its fix when it is the patched function."""
    region: dict[str, int] = {"startLine": int(suspect.start_line or 1)}
    if suspect.end_line and suspect.end_line >= region["startLine"]:
        region["endLine"] = suspect.end_line
    result: dict[str, Any] = {
        "ruleId": SUSPECT_RULE,
        "ruleIndex": 0,
        "level": "error" if suspect.rank == 1 or suspect.patched else "warning",
        "message": {"text": f"Suspect #{suspect.rank}: {suspect.fqn} (confidence {suspect.confidence:.2f}). "
                            f"Evidence: {suspect.evidence}."},
        "locations": [{
            "physicalLocation": {"artifactLocation": _artifact(prefix + str(suspect.file)), "region": region},
            "logicalLocations": [{"fullyQualifiedName": suspect.fqn, "kind": "function"}],
        }],
        "rank": round(100 * min(max(suspect.confidence, 0.0), 1.0), 1),
        "properties": {"rank": suspect.rank, "confidence": round(suspect.confidence, 4),
                       "suspiciousness": round(suspect.suspiciousness, 4), "evidence": suspect.evidence},
    }
    if suspect.patched and repair is not None and repair.diff:
        result["fixes"] = [_fix(repair, prefix)]
    return result


def _fix(repair: RepairReport, prefix: str) -> dict[str, Any]:
    """The verified patch as one SARIF fix: per file, its replacements (whole lines, from the diff)."""
    by_file: dict[str, list[Replacement]] = defaultdict(list)
    for replacement in replacements(repair.diff):
        by_file[replacement.path].append(replacement)
    what = "Verified patch" if repair.status == "fixed" else "Plausible patch, not verified"
    evidence = f": {repair.evidence}" if repair.evidence else ""
    return {
        "description": {"text": f"{what} of {repair.target}{evidence}"},
        "artifactChanges": [
            {"artifactLocation": _artifact(prefix + path), "replacements": [_replacement(r) for r in changes]}
            for path, changes in sorted(by_file.items())
        ],
    }


def _replacement(replacement: Replacement) -> dict[str, Any]:
    """Lines as a region from the first deleted line's column 1 to column 1 of the line after the
    last (the lines and their newlines); an insertion is the empty region at its line's column 1."""
    end = replacement.start_line + replacement.deleted
    return {
        "deletedRegion": {"startLine": replacement.start_line, "startColumn": 1,
                          "endLine": end, "endColumn": 1},
        "insertedContent": {"text": replacement.inserted},
    }


def _artifact(path: str) -> dict[str, str]:
    return {"uri": path.replace("\\", "/").lstrip("/"), "uriBaseId": _SOURCE_ROOT}


def _successful(report: LocalizationReport | RepairReport) -> bool:
    """The run did its work (whatever it found): a repair's ``error`` status is the only failure."""
    return not (isinstance(report, RepairReport) and report.status == "error")


def _run_properties(report: LocalizationReport | RepairReport,
                    localization: LocalizationReport | None) -> dict[str, Any]:
    """What the run concluded: the repair's status and target, the localization's verdict."""
    properties: dict[str, Any] = {}
    if isinstance(report, RepairReport):
        properties.update(status=report.status, target=report.target, evidence=report.evidence)
    if localization is not None:
        properties.update(mode=localization.mode, converged=localization.converged,
                          stoppedBecause=localization.stopped_because)
    return properties

"""The outcome of one run, read from its report's JSON: the status the history and the HTML report
show, and the exit code the command returns for it. Pure; the one place that maps a report to both.
A localization's code is its outcome's alone: 0 for its ranking, converged or not (its status says
which); ``equisa localize --fail-unless-converged`` exits otherwise without changing the run
(``errors.localize_exit_code``).

A run's report is the command's own (``TraceReport``, ``LocalizationReport``, ``RepairReport``,
``TestgenReport``) when it ran to its end, or a ``FailureReport`` when it stopped before (an error,
nothing to do, Ctrl-C): that one carries its exit code, error type and message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict

from equisa_core.errors import EXIT_OK, SuiteCrashedError, localize_exit_code, repair_exit_code
from equisa_core.report.failure import FailureStatus

__all__ = ["FAILURE_STATUSES", "RunOutcome", "is_failure", "run_outcome"]

#: The statuses of a ``FailureReport``: the run stopped before its own report existed.
FAILURE_STATUSES: tuple[str, ...] = get_args(FailureStatus)


class RunOutcome(BaseModel):
    """How a run ended: its status, the exit code of the command, and the error that stopped it (if any)."""

    model_config = ConfigDict(frozen=True)

    status: str
    exit_code: int
    error_type: str | None = None
    error: str | None = None


def is_failure(report: Mapping[str, Any]) -> bool:
    """Whether ``report`` is a ``FailureReport`` (a run that stopped before its own report existed)."""
    return report.get("status") in FAILURE_STATUSES and "error_type" in report and "exit_code" in report


def run_outcome(kind: str, report: Mapping[str, Any]) -> RunOutcome:
    """The outcome of a run of ``kind`` (trace, localize, repair, testgen) from its report's JSON."""
    if is_failure(report):
        return RunOutcome(status=str(report["status"]), exit_code=int(report["exit_code"]),
                          error_type=str(report["error_type"]), error=str(report.get("error", "")))
    if kind == "testgen":
        generated = report.get("best_attempt") is not None
        return RunOutcome(status="generated" if generated else "nothing_generated", exit_code=EXIT_OK)
    if kind == "repair":
        status = str(report.get("status", "error"))
        return RunOutcome(status=status, exit_code=repair_exit_code(status, report.get("stopped_because")),
                          error=report.get("error"))
    if kind == "localize":
        converged = bool(report.get("converged"))
        return RunOutcome(status="converged" if converged else "not_converged",
                          exit_code=localize_exit_code(converged, report.get("stopped_because")))
    if report.get("crashed"):
        return RunOutcome(status="crashed", exit_code=SuiteCrashedError.exit_code,
                          error_type=SuiteCrashedError.__name__, error=report.get("crash_reason"))
    return RunOutcome(status="traced", exit_code=EXIT_OK)

"""The report ``--json`` holds when a command stops before its own report exists."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.models import REPORT_SCHEMA_VERSION
from equisa_core.errors import NothingToLocalizeError, exit_code_for

__all__ = ["FailureReport", "FailureStatus", "failure_report"]

FailureStatus = Literal["nothing_to_do", "error", "interrupted"]


class FailureReport(BaseModel):
    """What ``--json`` holds when a command stops before its report exists: nothing to do (no test
    fails), an error, or an interruption, with the exit code and the message the user saw."""

    model_config = ConfigDict(frozen=True)

    schema_version: str = Field(REPORT_SCHEMA_VERSION, description="The schema's version (docs/schema/).")
    command: str = Field(description="The equisa command: trace, localize, repair or testgen.")
    status: FailureStatus
    exit_code: int
    error_type: str = Field(description="The error's class, e.g. NothingToLocalizeError.")
    error: str = Field(description="The message printed.")
    run_id: str | None = Field(None, description="The id the run was recorded under in the history "
                                                 "(`equisa report RUN_ID`); None when it could not be.")
    artifacts: str | None = Field(None, description="The run's folder in the artifact store.")


def failure_report(command: str, error: BaseException) -> FailureReport:
    """The failure report of ``command`` stopped by ``error``: nothing to do for ``NothingToLocalizeError``,
    interrupted for Ctrl-C, an error otherwise; the exit code is ``exit_code_for``'s."""
    status: FailureStatus = ("nothing_to_do" if isinstance(error, NothingToLocalizeError)
                             else "interrupted" if isinstance(error, KeyboardInterrupt) else "error")
    message = str(error) or ("interrupted (Ctrl-C)" if isinstance(error, KeyboardInterrupt)
                             else type(error).__name__)
    return FailureReport(command=command, status=status, exit_code=exit_code_for(error),
                         error_type=type(error).__name__, error=message)

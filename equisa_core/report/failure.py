"""The report ``--json`` holds when a command stops before its own report exists."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.models import REPORT_SCHEMA_VERSION

__all__ = ["FailureReport"]


class FailureReport(BaseModel):
    """What ``--json`` holds when a command stops before its report exists: nothing to do (no test
    fails), an error, or an interruption, with the exit code and the message the user saw."""

    model_config = ConfigDict(frozen=True)

    schema_version: str = Field(REPORT_SCHEMA_VERSION, description="The schema's version (docs/schema/).")
    command: str = Field(description="The equisa command: trace, localize, repair or testgen.")
    status: Literal["nothing_to_do", "error", "interrupted"]
    exit_code: int
    error_type: str = Field(description="The error's class, e.g. NothingToLocalizeError.")
    error: str = Field(description="The message printed.")

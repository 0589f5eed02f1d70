"""The JSON Schemas of the reports ``--json`` writes, generated from their models into
``docs/schema/<command>.schema.json`` (``python -m equisa_core.report.schema``; a test keeps the
files equal to the models). Each report carries ``schema_version`` (``REPORT_SCHEMA_VERSION``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from equisa_core.common.models import REPORT_SCHEMA_VERSION
from equisa_core.discovery.trace_report import TraceReport
from equisa_core.localization.steps import LocalizationReport
from equisa_core.repair.report import RepairReport
from equisa_core.report.failure import FailureReport
from equisa_core.testgen.report import TestgenReport

__all__ = ["REPORTS", "SCHEMA_FOLDER", "report_schema", "schema_files"]

#: The report model of each command.
REPORTS: dict[str, type[BaseModel]] = {"trace": TraceReport, "localize": LocalizationReport,
                                       "repair": RepairReport, "testgen": TestgenReport,
                                       "failure": FailureReport}
#: Where the schemas are kept, in the repository.
SCHEMA_FOLDER = Path(__file__).resolve().parents[2] / "docs" / "schema"


def report_schema(command: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``equisa <command> --json``'s report (``failure``: what it
    holds when the command stopped before its report existed)."""
    schema = REPORTS[command].model_json_schema(mode="serialization")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://equisa.dev/schema/{REPORT_SCHEMA_VERSION}/{command}.schema.json", **schema}


def schema_files() -> dict[str, str]:
    """Each schema file's name and text."""
    return {f"{command}.schema.json": json.dumps(report_schema(command), indent=1, sort_keys=True) + "\n"
            for command in REPORTS}


def main() -> int:
    SCHEMA_FOLDER.mkdir(parents=True, exist_ok=True)
    for name, text in schema_files().items():
        (SCHEMA_FOLDER / name).write_text(text, encoding="utf-8")
        print(SCHEMA_FOLDER / name, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

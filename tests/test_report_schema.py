"""The reports' JSON Schemas in docs/schema/ are the models' (``equisa_core.report.schema``)."""

from __future__ import annotations

import json

from equisa_core.common.models import REPORT_SCHEMA_VERSION
from equisa_core.report.schema import REPORTS, SCHEMA_FOLDER, report_schema, schema_files


def test_the_kept_schemas_are_the_models():
    kept = {p.name: p.read_text(encoding="utf-8") for p in SCHEMA_FOLDER.glob("*.schema.json")}
    assert kept == schema_files(), "regenerate them: uv run python -m equisa_core.report.schema"


def test_every_report_says_its_schema_version():
    for command, model in REPORTS.items():
        schema = report_schema(command)
        assert schema["properties"]["schema_version"]["default"] == REPORT_SCHEMA_VERSION
        assert REPORT_SCHEMA_VERSION in schema["$id"]
        assert model.model_fields["schema_version"].default == REPORT_SCHEMA_VERSION
    assert json.loads(schema_files()["repair.schema.json"])["title"] == "RepairReport"

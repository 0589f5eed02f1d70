"""The pure parts of storage: locations and keys, the confidence replay, history rows, the HTML report."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from equisa_core.errors import InputError
from equisa_core.history import RunRecord, rows_for_run
from equisa_core.history.schema import TABLES
from equisa_core.localization.bayes import initial_confidence
from equisa_core.localization.confidence_history import confidence_history
from equisa_core.localization.signals import Signals
from equisa_core.localization.steps import InspectionRecord, LocalizationReport, apply_observation, rank
from equisa_core.operations.storage import (
    blob_key,
    parse_location,
    resolve_artifacts,
    resolve_db,
    run_key,
    sha256_hex,
)
from equisa_core.repair.report import RepairReport
from equisa_core.report import render_report

REPAIR = Path(__file__).parents[1] / "data" / "repair_invoicing.json"


def test_locations_parse_folders_and_buckets(tmp_path):
    s3 = parse_location("s3://nightly-runs/equisa/prod/")
    assert (s3.kind, s3.bucket, s3.prefix) == ("s3", "nightly-runs", "equisa/prod")
    assert s3.uri("runs/r1/report.json") == "s3://nightly-runs/equisa/prod/runs/r1/report.json"
    assert s3.object_key("runs/r1/a") == "equisa/prod/runs/r1/a"
    assert parse_location("s3://bucket").object_key("k") == "k"
    local = parse_location("art", base=tmp_path)
    assert local.kind == "local" and local.folder == str(tmp_path / "art")
    for bad in ("", "s3://", "s3://UPPER", "gs://bucket/x"):
        with pytest.raises(InputError):
            parse_location(bad)


def test_configuration_precedence_option_then_environment_then_default(tmp_path):
    env = {"EQUISA_ARTIFACTS": "s3://from-env/p", "EQUISA_DB": str(tmp_path / "env.duckdb"),
           "XDG_DATA_HOME": str(tmp_path / "data")}
    assert resolve_artifacts("s3://from-option", env).bucket == "from-option"
    assert resolve_artifacts(None, env).bucket == "from-env"
    default = resolve_artifacts(None, {"XDG_DATA_HOME": str(tmp_path)})
    assert default.folder == str(tmp_path / "equisa" / "artifacts")
    assert resolve_db(None, env) == tmp_path / "env.duckdb"
    assert resolve_db(None, {"XDG_DATA_HOME": str(tmp_path)}) == tmp_path / "equisa" / "history.duckdb"


def test_keys_stay_inside_their_run_and_blobs_are_content_addressed():
    assert run_key("abc-123", "report.html") == "runs/abc-123/report.html"
    for run_id, name in (("../x", "a"), ("ok", "../../etc/passwd"), ("ok", "/abs"), ("a/b", "c")):
        with pytest.raises(InputError):
            run_key(run_id, name)
    digest = sha256_hex(b"trace")
    assert blob_key(digest) == f"blobs/sha256/{digest[:2]}/{digest}.json.gz"
    with pytest.raises(ValueError):
        blob_key("not-a-digest")


def test_replayed_confidences_are_those_the_loop_computed():
    """Run the loop's own update steps and check the replay finds every intermediate vector."""
    suspiciousness = {"m.a": 0.9, "m.b": 0.7, "m.c": 0.2, "m.d": 0.0}
    # Priors from another formula than the ranking's suspiciousness: the replay must not care.
    confidences = initial_confidence({f: s + 0.01 * (f == "m.c") for f, s in suspiciousness.items()})
    seen = [confidences]
    records = []
    collateral = Signals(is_covered=True, has_target_assertion=False, is_failure=True)
    caught = Signals(is_covered=True, has_target_assertion=True, is_failure=True)
    steps = [("m.a", collateral), ("m.b", caught), ("m.b", caught)]
    for iteration, (target, signals) in enumerate(steps, 1):
        prior = confidences[target]
        outcome, confidences, _ = apply_observation(confidences, target, signals, None)
        seen.append(confidences)
        records.append(InspectionRecord(
            iteration=iteration, target=target, strategy="deterministic", tests_run=(), signals=signals,
            reflection=None, reflection_by="traceback", reasoning="", outcome=outcome, prior=prior,
            posterior=confidences[target]))
    ranking = rank(confidences, suspiciousness, {f: (None, None, None) for f in suspiciousness})
    replayed = confidence_history(ranking, records)
    assert len(replayed) == len(seen) == 4
    for expected, got in zip(seen, replayed, strict=True):
        assert got == pytest.approx(expected, abs=1e-12)


def test_the_recorded_repair_replays_to_its_priors():
    report = RepairReport.model_validate_json(REPAIR.read_text())
    localization = report.localization
    assert isinstance(localization, LocalizationReport)
    history = confidence_history(localization.ranking, localization.inspections)
    assert history[-1] == {n.fqn: n.confidence for n in localization.ranking}
    # This run's priors were initial_confidence(tarantula): the walk back finds them.
    priors = initial_confidence({n.fqn: n.suspiciousness for n in localization.ranking})
    assert history[0] == pytest.approx(priors, abs=1e-9)
    for step, record in enumerate(localization.inspections, 1):
        assert history[step - 1][record.target] == pytest.approx(record.prior, abs=1e-12)
        assert sum(history[step].values()) == pytest.approx(1.0, abs=1e-9)


def _record(**changes) -> RunRecord:
    values = dict(run_id="run-1", kind="repair", repository="/repos/invoicing",
                  report=json.loads(REPAIR.read_text()),
                  finished_at=datetime(2026, 11, 22, 9, 30, tzinfo=UTC))
    values.update(changes)
    return RunRecord(**values)


def test_a_repair_becomes_rows_in_every_table_it_touches():
    report = json.loads(REPAIR.read_text())
    rows = rows_for_run(_record())
    loc = report["localization"]
    (run,) = rows.tables["runs"]
    named = dict(zip(TABLES["runs"], run, strict=True))
    assert named["status"] == "fixed" and named["target"] == report["target"]
    assert named["finished_at"] == datetime(2026, 11, 22, 9, 30)  # naive UTC
    assert (named["tests_failed"], named["tests_passed"]) == (loc["tests"]["failed"], loc["tests"]["passed"])
    assert len(rows.tables["nodes"]) == len(loc["ranking"])
    assert len(rows.tables["inspections"]) == len(loc["inspections"])
    assert len(rows.tables["node_scores"]) == len(loc["ranking"]) * (len(loc["inspections"]) + 1)
    assert len(rows.tables["testgen_attempts"]) == len(loc["discovery"]["rounds"])
    assert [p[4] for p in rows.tables["patches"]] == [e["candidate"] == report["candidate"]
                                                       for e in report["evaluations"]]
    assert {v[2] for v in rows.tables["validations"]} == set(report["evaluations"][0]["checks"])
    for table, values in rows.tables.items():
        assert all(len(v) == len(TABLES[table]) for v in values), table


def test_the_html_report_is_self_contained_and_shows_every_section():
    report = json.loads(REPAIR.read_text())
    html = render_report("repair", report, run_id="run-1", repository="/repos/invoicing")
    for section in ("Ranking", "Confidence over the Bayesian iterations", "Ambiguity groups",
                    "Groups after disambiguation", "Inspections", "Patch", "Validation checks"):
        assert f">{section}<" in html, section
    assert html.count("<polyline") >= 2 and "stroke-dasharray" in html  # lines and the 0.9 threshold
    assert '<span class="add">+        return subtotal.amount &gt;= self.minimum.amount</span>' in html
    assert "<script" not in html and "src=" not in html and "<link" not in html
    assert "invoicing.discounts.ThresholdDiscount.applies" in html


def test_a_trace_report_renders_without_a_localization():
    trace = {"repository": "/r", "summary": {"total": 2, "passed": 1, "failed": 1, "error": 0, "skipped": 0},
             "nodes": [{"fqn": "m.f", "file": "m.py", "start_line": 1, "failed_s": 1, "passed_s": 0,
                        "tarantula": 1.0, "ochiai": 1.0, "dstar": 1.0}],
             "ambiguity_groups": [["m.f", "m.g"]], "backend": "monitoring", "backend_reason": "3.12"}
    html = render_report("trace", trace, run_id="t1")
    assert "m.f" in html and "Ranking (spectrum scores)" in html and "2: m.f, m.g" in html


def test_the_html_report_names_the_sandbox_and_whether_it_confined_files():
    trace = {"repository": "/r", "summary": {"total": 0}, "nodes": [], "ambiguity_groups": [],
             "backend": "monitoring", "backend_reason": "3.12",
             "sandbox": {"backend": "local", "level": "network-only", "reason": "no mounts here",
                         "weak_allowed": True, "confines_files": False}}
    html = render_report("trace", trace, run_id="t1")
    assert "<th>sandbox</th><td>local: network-only, files NOT confined (no mounts here)</td>" in html

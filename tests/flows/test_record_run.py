"""The ``record-run`` task inside real flow runs: LLM calls of the run and its child flow runs (and
of no other run) reach the history, and the Prefect artifacts link to what was stored."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from prefect import flow
from prefect.client.orchestration import get_client
from prefect.settings import PREFECT_LOCAL_STORAGE_PATH, temporary_settings

from cli.history_answers import history_answers
from equisa_core.common.cost import CostLedger, LLMCall
from equisa_core.repair.report import RepairReport
from tasks.llm import LLMConfig, ModelPrice, call_llm
from tasks.storage.history import query
from tasks.storage.record import record_finished_run
from tests.scripted_llm_server import Reply

pytestmark = pytest.mark.integration

REPAIR = Path(__file__).parents[1] / "data" / "repair_invoicing.json"


def test_a_runs_llm_calls_and_its_child_runs_calls_are_recorded(prefect_api_url, scripted_llm, tmp_path):
    # The calls travel back as values (a child flow run returns its own), and the run's ledger is
    # what the history records: nothing is gathered on the side by flow run id.
    price = ModelPrice(input_per_mtok=2.0, output_per_mtok=8.0)
    config = LLMConfig(base_url=scripted_llm.base_url, api_key="k", model="m-primary", timeout_s=5.0,
                       backoff_s=0.0, prices={"m-primary": price})
    for _ in range(3):
        scripted_llm.enqueue(Reply("ok", prompt_tokens=1000, completion_tokens=500))
    tag = uuid.uuid4().hex  # fresh prompts: no cached answers
    db, artifacts = tmp_path / "history.duckdb", tmp_path / "artifacts"

    def ask(purpose: str) -> LLMCall:
        return call_llm(config, [{"role": "user", "content": f"{purpose} {tag}"}], purpose).call

    @flow(name="other-run")
    def other_run() -> LLMCall:
        return ask("someone-else")  # a run that is not recorded: its call must not leak into ours

    @flow(name="child-run")
    def child_run() -> LLMCall:
        return ask("in-child")

    @flow(name="recorded-run")
    def recorded_run() -> RepairReport:
        ledger = CostLedger().plus([ask("in-parent"), child_run()])
        report = RepairReport.model_validate_json(REPAIR.read_text())
        return record_finished_run("repair", report, "/repos/invoicing", str(artifacts), str(db),
                                   calls=ledger.paid_calls)

    with temporary_settings({PREFECT_LOCAL_STORAGE_PATH: tmp_path / "results"}):
        other_run()
        report = recorded_run()
    assert report.run_id and report.artifacts == str(artifacts / "runs" / report.run_id)
    calls = query(db, "SELECT purpose, model, input_tokens, cost_usd FROM llm_calls ORDER BY called_at")
    assert [c["purpose"] for c in calls] == ["in-parent", "in-child"]
    assert all(c["cost_usd"] == pytest.approx(1000 * 2.0 / 1e6 + 500 * 8.0 / 1e6) for c in calls)
    (day,) = history_answers(db, None)["llm_spend_per_day"]
    assert (day["calls"], day["input_tokens"], day["output_tokens"]) == (2, 2000, 1000)
    assert (artifacts / "runs" / report.run_id / "report.html").is_file()
    assert (artifacts / "runs" / report.run_id / "patch.diff").read_text() == report.diff

    with get_client(sync_client=True) as client:
        link = client.read_latest_artifacts()
    keys = {a.key: a for a in link}
    assert f"(file://{artifacts}/runs/{report.run_id}/report.html)" in keys["run-report"].data
    assert "inspection-history" in keys and "run-artifacts" in keys


def test_s3_credentials_can_come_from_a_prefect_block(prefect_api_url, rclone_s3, tmp_path, monkeypatch):
    from prefect_aws import AwsCredentials
    from prefect_aws.client_parameters import AwsClientParameters

    from tasks.storage.artifacts import ArtifactStore

    rclone_s3.make_bucket("from-block")
    keys = rclone_s3.env()
    AwsCredentials(
        aws_access_key_id=keys["AWS_ACCESS_KEY_ID"], aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"],
        region_name="us-east-1", aws_client_parameters=AwsClientParameters(endpoint_url=rclone_s3.endpoint),
    ).save("equisa-artifacts", overwrite=True)
    for name in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EQUISA_AWS_CREDENTIALS_BLOCK", "equisa-artifacts")
    store = ArtifactStore("s3://from-block/p", spool=tmp_path / "spool")
    assert not store.put("runs/r1/report.json", b"{}").spooled, store.failure
    assert rclone_s3.keys("from-block") == {"p/runs/r1/report.json"}
    monkeypatch.setenv("EQUISA_AWS_CREDENTIALS_BLOCK", "no-such-block")
    missing = ArtifactStore("s3://from-block/p", spool=tmp_path / "spool")
    assert missing.put("runs/r1/x.json", b"{}").spooled
    assert "cannot load the AwsCredentials block 'no-such-block'" in missing.failure.message


def test_a_localize_run_records_its_ledgers_calls_and_a_cached_answer_spends_nothing(
        prefect_api_url, scripted_llm, tmp_path, monkeypatch):
    """``localize`` passes its report's ledger (Discovery's calls, then the loop's) to the history: the
    calls reach DuckDB. Run again, every answer comes from the
    cache: the run's ledger holds them, it spent nothing, and the history gets no row for them."""
    from flows.localize import localize
    from tasks.run.parameters import LocalizeParameters
    from tests.flows.test_localize import INVOICING, scripted_debugger

    scripted_llm.respond_with(scripted_debugger)
    monkeypatch.setenv("OPENAI_BASE_URL", scripted_llm.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("EQUISA_WORKSPACES", str(tmp_path / "workspaces"))
    db, artifacts = tmp_path / "history.duckdb", tmp_path / "artifacts"
    params = LocalizeParameters(path=str(INVOICING), llm=True, db=str(db), artifacts=str(artifacts))
    with temporary_settings({PREFECT_LOCAL_STORAGE_PATH: tmp_path / "results"}):
        first = localize(params)
        asked = len(scripted_llm.requests)
        again = localize(params)
    paid = first.ledger.paid_calls
    assert paid and paid[0].purpose == "disambiguating-tests" and asked == len(paid)
    rows = query(db, "SELECT run_id, purpose, cost_usd FROM llm_calls ORDER BY called_at")
    assert [r["purpose"] for r in rows] == [c.purpose for c in paid]
    assert {r["run_id"] for r in rows} == {first.run_id}
    assert first.cost["usd"] == pytest.approx(sum(r["cost_usd"] for r in rows)) and first.cost["usd"] > 0
    assert len(scripted_llm.requests) == asked, "the second run's answers all came from the cache"
    assert again.ledger.calls and all(c.cached for c in again.ledger.calls)
    assert again.cost["usd"] == 0.0 and again.ranking == first.ranking

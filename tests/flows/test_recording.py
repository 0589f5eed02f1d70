"""Runs are recorded end to end: the real ``equisa`` CLI against a real S3 server that gets killed,
``equisa flush``, ``equisa history`` and ``equisa report``; the HTML report rendered by Chromium."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from equisa_core.report import render_report
from tests.conftest import FIXTURES
from tests.png_pixels import png_pixels

pytestmark = pytest.mark.integration

SHAPES = FIXTURES / "shapes"
EQUISA = shutil.which("equisa") or str(Path(sys.executable).with_name("equisa"))
REPAIR = Path(__file__).parents[1] / "data" / "repair_invoicing.json"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _equisa(env: dict[str, str], *args: str) -> tuple[int, str]:
    done = subprocess.run([EQUISA, *args], capture_output=True, text=True, env=env, timeout=600)
    return done.returncode, done.stderr


def _run_keys(run_id: str) -> set[str]:
    return {f"nightly/runs/{run_id}/{name}" for name in ("report.json", "report.html", "manifest.json")}


def test_runs_on_s3_survive_a_killed_server_and_are_found_in_the_history(rclone_s3, cli_env, tmp_path):
    rclone_s3.make_bucket("equisa")
    env = {**cli_env, **rclone_s3.env(), "EQUISA_ARTIFACTS": "s3://equisa/nightly"}

    code, printed = _equisa(env, "trace", str(SHAPES), "--json", str(tmp_path / "first.json"))
    assert code == 0, printed
    first = json.loads((tmp_path / "first.json").read_text())
    assert first["artifacts"] == f"s3://equisa/nightly/runs/{first['run_id']}"
    assert f"Run {first['run_id']} recorded" in printed
    assert _run_keys(first["run_id"]) == rclone_s3.keys("equisa")

    # The store goes down between runs, and the history file is corrupt: the run finishes all the same.
    rclone_s3.stop()
    corrupt = Path(env["EQUISA_DB"])
    corrupt.write_bytes(b"not a DuckDB file\n" * 100)
    code, printed = _equisa(env, "trace", str(SHAPES), "--no-cache", "--json", str(tmp_path / "second.json"))
    assert code == 0, printed
    second = json.loads((tmp_path / "second.json").read_text())
    assert any("artifacts spooled" in p and "equisa flush" in p for p in second["problems"])
    assert any("history not written" in p and "not a usable DuckDB file" in p for p in second["problems"])
    assert "artifacts spooled" in " ".join(printed.split())

    code, printed = _equisa(env, "flush")
    assert code == 40 and "cannot reach the artifact store" in " ".join(printed.split()), printed

    rclone_s3.start()
    code, printed = _equisa(env, "flush", "--json", str(tmp_path / "flush.json"))
    assert code == 43 and "not a usable DuckDB file" in " ".join(printed.split()), printed
    flushed = json.loads((tmp_path / "flush.json").read_text())
    assert [(a["uploaded"], a["remaining"]) for a in flushed["artifacts"]] == [(3, 0)]
    assert [(h["ingested"], h["remaining"]) for h in flushed["history"]] == [(0, 1)]
    assert _run_keys(first["run_id"]) | _run_keys(second["run_id"]) <= rclone_s3.keys("equisa")

    corrupt.rename(tmp_path / "corrupt.duckdb")  # what the message says to do; the first run's rows
    code, printed = _equisa(env, "flush")          # were in that file, the second run's were spooled
    assert code == 0, printed

    code, printed = _equisa(env, "history", str(SHAPES), "--json", str(tmp_path / "history.json"))
    assert code == 0, printed
    history = json.loads((tmp_path / "history.json").read_text())
    assert {r["run_id"] for r in history["runs"]} == {second["run_id"]}
    assert all(r["kind"] == "trace" and r["tests_failed"] == 3 for r in history["runs"])

    code, printed = _equisa(env, "report", second["run_id"], "-o", str(tmp_path / "second.html"))
    assert code == 0, printed
    assert "shapes.geometry.triangle_area" in (tmp_path / "second.html").read_text()
    code, printed = _equisa(env, "report", "no-such-run")
    assert code == 44 and "no recorded run 'no-such-run'" in printed


def test_bad_storage_settings_are_refused_before_the_run(cli_env):
    code, printed = _equisa(cli_env, "trace", str(SHAPES), "--artifacts", "ftp://somewhere/x")
    assert code == 3 and "folder or s3://bucket/prefix" in printed
    code, printed = _equisa({**cli_env, "EQUISA_ARTIFACTS": "s3://Not_A_Bucket"}, "trace", str(SHAPES))
    assert code == 3 and "not a valid S3 bucket name" in printed


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/setup-machine installs it)")
def test_the_html_report_renders_in_headless_chromium(tmp_path):
    page = tmp_path / "report.html"
    page.write_text(render_report("repair", json.loads(REPAIR.read_text()), run_id="run-1",
                                  repository="examples/invoicing"), encoding="utf-8")
    shot = tmp_path / "shot.png"
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--virtual-time-budget=3000", "--window-size=1000,1400", f"--screenshot={shot}", page.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert shot.exists(), done.stderr
    width, height, colours = png_pixels(shot)
    assert (width, height) == (1000, 1400)
    white = colours[(255, 255, 255)]
    assert white < 0.95 * width * height  # not blank
    assert len(colours) > 100  # text, tables, lines: many anti-aliased shades
    assert colours[(31, 119, 180)] > 200  # the confidence plot's first line (and the ranking's bars)
    assert colours[(46, 125, 50)] > 200  # the green "fixed" badge


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/setup-machine installs it)")
def test_the_html_reports_checks_show_their_status_in_a_browser_with_no_console_errors(tmp_path):
    from playwright.sync_api import sync_playwright

    report = json.loads(REPAIR.read_text())
    report["validation"]["differential inputs"] = "changes behaviour away from the failure on 2 input(s)"
    page_file = tmp_path / "report.html"
    page_file.write_text(render_report("repair", report, run_id="run-1", repository="examples/invoicing"),
                         encoding="utf-8")
    errors: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(page_file.as_uri())
        shown = {row.locator("td").nth(0).inner_text(): row.locator("td").nth(1).inner_text()
                 for row in page.locator("tr.check").all()}
        browser.close()
    assert shown["compiles"] == "✅ passed"
    assert shown["carved tests"] == "✅ passed (3 tests)"
    assert shown["novel-input tests"] == "➖ not run: deterministic mode"
    assert shown["differential inputs"].startswith("❌ changes behaviour")
    assert errors == []


def test_prefect_results_can_live_on_s3_through_prefect_aws(moto_s3, cli_env, tmp_path):
    """The documented setting: an S3Bucket block as the default result storage of the cached tasks."""
    from prefect_aws import AwsCredentials, S3Bucket
    from prefect_aws.client_parameters import AwsClientParameters

    moto_s3.make_bucket("equisa-results")
    keys = moto_s3.env()
    S3Bucket(bucket_name="equisa-results", credentials=AwsCredentials(
        aws_access_key_id=keys["AWS_ACCESS_KEY_ID"], aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"],
        region_name="us-east-1", aws_client_parameters=AwsClientParameters(endpoint_url=moto_s3.endpoint),
    )).save("equisa-results", overwrite=True)
    env = {**cli_env, "PREFECT_RESULTS_DEFAULT_STORAGE_BLOCK": "s3-bucket/equisa-results"}
    code, printed = _equisa(env, "trace", str(SHAPES), "--shards", "1", "--no-cache")
    assert code == 0, printed
    assert moto_s3.keys("equisa-results"), "the run-tests results were not persisted on S3"

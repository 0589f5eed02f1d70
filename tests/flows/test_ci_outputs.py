"""The machine outputs for CI, from the real ``equisa`` command run as a CI job would: ``--sarif``
(validated against the official SARIF 2.1.0 schema), ``--markdown``, GitHub Actions annotations and
the step summary, and output that is not a terminal (plain progress lines, names never wrapped)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from equisa_core.localization.steps import LocalizationReport
from equisa_core.repair.report import RepairReport
from tests.conftest import small_repo
from tests.core.test_report_outputs import validate_sarif

EQUISA = shutil.which("equisa") or str(Path(sys.executable).with_name("equisa"))
#: Longer than a line of 80 columns by itself.
LONG = "billing_engine.discount_rules.LoyaltyThresholdDiscountPolicy.applies_to_subtotal_amount"
SOURCE = "billing_engine/discount_rules.py"


def shop(root: Path) -> Path:
    """A repository whose bug (``>`` for ``>=``) is in a function with a long qualified name."""
    repo = small_repo(root)
    (repo / "billing_engine").mkdir()
    (repo / "billing_engine" / "__init__.py").write_text("")
    (repo / SOURCE).write_text(
        "class LoyaltyThresholdDiscountPolicy:\n"
        "    def __init__(self, minimum, percent):\n"
        "        self.minimum = minimum\n"
        "        self.percent = percent\n\n"
        "    def applies_to_subtotal_amount(self, subtotal):\n"
        "        return subtotal > self.minimum\n\n"
        "    def discount_for(self, subtotal):\n"
        "        if not self.applies_to_subtotal_amount(subtotal):\n"
        "            return 0\n"
        "        return subtotal * self.percent // 100\n")
    (repo / "tests" / "test_discount_rules.py").write_text(
        "from billing_engine.discount_rules import LoyaltyThresholdDiscountPolicy as Policy\n\n\n"
        "def test_no_discount_below_the_minimum():\n    assert Policy(100, 10).discount_for(50) == 0\n\n\n"
        "def test_discount_above_the_minimum():\n    assert Policy(100, 10).discount_for(200) == 20\n\n\n"
        "def test_discount_at_the_minimum():\n    assert Policy(100, 10).discount_for(100) == 10\n\n\n"
        "def test_applies_at_the_minimum():\n    assert Policy(100, 10).applies_to_subtotal_amount(100)\n\n\n"
        "def test_does_not_apply_below():\n    assert not Policy(100, 10).applies_to_subtotal_amount(99)\n")
    return repo


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``equisa ARGS`` with standard output and error captured apart (neither is a terminal)."""
    return subprocess.run([EQUISA, *args], capture_output=True, text=True, env=env, timeout=900)


def test_a_repair_in_a_github_actions_job_writes_sarif_markdown_annotations_and_the_step_summary(
        tmp_path, cli_env):
    repo = shop(tmp_path / "checkout" / "services" / "shop")
    sarif, markdown = tmp_path / "out" / "equisa.sarif", tmp_path / "out" / "pr.md"
    summary = tmp_path / "summary"
    summary.write_text("## an earlier step\n")
    env = {**cli_env, "COLUMNS": "80", "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary),
           "GITHUB_WORKSPACE": str(tmp_path / "checkout")}
    done = run(env, "repair", str(repo), "--no-llm", "--json", str(tmp_path / "r.json"),
               "--sarif", str(sarif), "--markdown", str(markdown))
    assert done.returncode == 0, done.stderr
    report = RepairReport.model_validate_json((tmp_path / "r.json").read_text())
    assert (report.status, report.target) == ("fixed", LONG)
    in_repository = f"services/shop/{SOURCE}"  # paths from the checkout's root, as GitHub shows them

    log = json.loads(sarif.read_text())
    validate_sarif(log)
    results = log["runs"][0]["results"]
    leader = results[0]
    assert leader["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == LONG
    location = leader["locations"][0]["physicalLocation"]
    assert (location["artifactLocation"]["uri"], location["region"]["startLine"]) == (in_repository, 6)
    assert leader["properties"]["rank"] == 1 and leader["properties"]["evidence"].startswith("Tarantula ")
    assert all(r["properties"]["confidence"] >= 0.1 for r in results)
    (change,) = leader["fixes"][0]["artifactChanges"]
    assert change["artifactLocation"]["uri"] == in_repository
    assert change["replacements"] == [{
        "deletedRegion": {"startLine": 7, "startColumn": 1, "endLine": 8, "endColumn": 1},
        "insertedContent": {"text": "        return subtotal >= self.minimum\n"}}]

    text = markdown.read_text()
    assert text.startswith(f"## EQUISA repair: fixed: a verified patch of `{LONG}`\n")
    assert f"| 1 | `{LONG}` (patched) | `{SOURCE}:6` |" in text
    assert "-        return subtotal > self.minimum\n+        return subtotal >= self.minimum\n" in text
    assert "| failing tests pass | passed |" in text and "- **Tests:** 2 failing, 3 passing" in text
    assert summary.read_text() == "## an earlier step\n" + text

    # Standard output holds the workflow commands alone: the suspect, then the patch.
    commands = done.stdout.splitlines()
    assert commands and all(re.match(r"::(error|warning|notice) file=", c) for c in commands)
    assert commands[0].startswith(f"::error file={in_repository},line=6,endLine=7,"
                                  "title=EQUISA suspect #1%3A ")
    assert f"::{LONG} may hold the bug." in commands[0]
    assert commands[-1].startswith(f"::notice file={in_repository},line=7,title=EQUISA patch of {LONG}::")
    assert commands[-1].endswith("%0A        return subtotal >= self.minimum")

    # Standard error is a log: plain progress lines, no cursor control, the long name whole.
    err = done.stderr
    assert "\x1b[" not in err
    assert f"Repairing {repo} (sandbox" in err and f"Report written to {tmp_path / 'r.json'}\n" in err
    assert re.search(r"^\[\s*\d+s\] localizing the bug, then validating patches$", err, re.M)
    assert re.search(r"^\[\s*\d+s\] tests run: \d+ passed", err, re.M)
    rows = [line for line in err.splitlines() if line.startswith("│ " + LONG)]
    assert rows and all(re.search(r"\d+\.\d{3} │$", row) for row in rows)
    assert f"SARIF written to {sarif}" in err and f"Markdown summary written to {markdown}" in err


def test_with_the_report_on_standard_output_the_annotations_go_to_standard_error(tmp_path, cli_env):
    repo = shop(tmp_path / "shop")
    sarif = tmp_path / "localize.sarif"
    env = {**cli_env, "COLUMNS": "80", "GITHUB_ACTIONS": "true"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    env.pop("GITHUB_WORKSPACE", None)
    # The screening, whatever it costs, confirms the fix: the run converges on the bug.
    done = run(env, "localize", str(repo), "--no-llm", "--screen-cost-ratio", "off", "--json", "-",
               "--sarif", str(sarif))
    assert done.returncode == 0, done.stderr
    report = LocalizationReport.model_validate_json(done.stdout)  # nothing else on standard output
    assert report.ranking[0].fqn == LONG
    log = json.loads(sarif.read_text())
    validate_sarif(log)
    assert all("fixes" not in r for r in log["runs"][0]["results"])
    location = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == SOURCE
    assert re.search(rf"^::error file={SOURCE},line=6,endLine=7,title=EQUISA suspect #1%3A .*::"
                     rf"{re.escape(LONG)} ", done.stderr, re.M)


def test_outside_github_actions_nothing_is_annotated_and_no_step_summary_is_written(tmp_path, cli_env):
    repo = shop(tmp_path / "shop")
    summary = tmp_path / "summary"
    env = {**cli_env, "GITHUB_ACTIONS": "false", "GITHUB_STEP_SUMMARY": str(summary)}
    done = run(env, "localize", str(repo), "--no-llm", "--screen-cost-ratio", "off", "--markdown",
               str(tmp_path / "l.md"))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and "::error" not in done.stderr and not summary.exists()
    assert (tmp_path / "l.md").read_text().startswith("## EQUISA localize: ")


def test_a_command_that_stops_early_still_writes_its_sarif_markdown_and_annotation(tmp_path, cli_env):
    """No test fails: the CI step that uploads the SARIF finds a valid log that says why, and the
    pull request's summary says what happened."""
    repo = shop(tmp_path / "checkout")
    source = repo / SOURCE
    source.write_text(source.read_text().replace("subtotal > self.minimum", "subtotal >= self.minimum"))
    sarif, markdown, summary = tmp_path / "equisa.sarif", tmp_path / "pr.md", tmp_path / "summary"
    env = {**cli_env, "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    done = run(env, "localize", str(repo), "--no-llm", "--sarif", str(sarif), "--markdown", str(markdown))
    assert done.returncode == 20, done.stderr
    log = json.loads(sarif.read_text())
    validate_sarif(log)
    (invocation,) = log["runs"][0]["invocations"]
    assert log["runs"][0]["results"] == [] and invocation["exitCode"] == 20
    assert invocation["executionSuccessful"] is True  # nothing to do is no failure of the tool
    assert "no test fails" in invocation["toolExecutionNotifications"][0]["message"]["text"]
    assert markdown.read_text().startswith("## EQUISA localize: nothing to do")
    assert "Exit code 20: nothing to localize" in markdown.read_text()
    assert summary.read_text() == markdown.read_text()
    assert "::notice title=equisa localize::nothing to localize: no test fails" in done.stdout

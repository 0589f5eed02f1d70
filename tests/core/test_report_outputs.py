"""The machine outputs for CI, made from reports (``equisa_core.report``: ``sarif``, ``markdown``,
``github``, ``suspects``): SARIF valid under the official 2.1.0 schema whose fix rebuilds the patched
file, GitHub's workflow-command escaping, the Markdown summary, and tables that keep every name whole."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
import pytest
from rich.console import Console

from cli.flow_runs import show
from equisa_core.common.source_edit import unified_diff
from equisa_core.localization.steps import LocalizationReport
from equisa_core.operations.batch import RepositoryResult, summarize
from equisa_core.repair.report import RepairReport
from equisa_core.report.console import localization_summary
from equisa_core.report.github import escape_data, escape_property, github_annotations, workflow_command
from equisa_core.report.markdown import render_batch_markdown, render_markdown
from equisa_core.report.sarif import SUSPECT_RULE, render_sarif
from equisa_core.report.suspects import MIN_CONFIDENCE, Replacement, replacements, suspects

DATA = Path(__file__).resolve().parents[1] / "data"
SCHEMA = json.loads((DATA / "sarif" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
INVOICING = Path(__file__).resolve().parents[2] / "examples" / "invoicing"
BUGGY = "invoicing.discounts.ThresholdDiscount.applies"


def validate_sarif(log: dict) -> None:
    """``log`` is valid under the official SARIF 2.1.0 schema (draft 4), URIs and all."""
    jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER).validate(log)


@pytest.fixture
def repaired() -> RepairReport:
    return RepairReport.model_validate_json((DATA / "repair_invoicing.json").read_text(encoding="utf-8"))


def apply_replacements(text: str, changes: list[Replacement]) -> str:
    """``text`` with ``changes`` (line replacements of one file) made, last first."""
    lines = text.splitlines(keepends=True)
    for change in sorted(changes, key=lambda c: c.start_line, reverse=True):
        lines[change.start_line - 1:change.start_line - 1 + change.deleted] = \
            change.inserted.splitlines(keepends=True)
    return "".join(lines)


def test_the_sarif_of_a_fixed_repair_is_valid_and_its_fix_rebuilds_the_patched_file(repaired):
    log = render_sarif(repaired, prefix="examples/invoicing/", tool_version="1.2.3")
    validate_sarif(log)
    run = log["runs"][0]
    assert log["version"] == "2.1.0" and run["tool"]["driver"]["version"] == "1.2.3"
    # One result per function at or above the threshold: here the converged one alone.
    above = [n for n in repaired.localization.ranking if n.confidence >= MIN_CONFIDENCE]
    assert [r["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] for r in run["results"]] == [
        n.fqn for n in above] == [BUGGY]
    result = run["results"][0]
    assert result["ruleId"] == SUSPECT_RULE and result["level"] == "error"
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "examples/invoicing/invoicing/discounts.py"
    assert location["region"]["startLine"] == 56 == above[0].start_line
    assert result["properties"]["rank"] == 1
    assert result["properties"]["confidence"] == pytest.approx(0.9006, 1e-3)
    assert "a one-edit fix (line 58: `>` -> `>=`) passes the whole suite" in result["message"]["text"]
    # The fix: its replacement, made on the original file, gives the patched file.
    (change,) = result["fixes"][0]["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "examples/invoicing/invoicing/discounts.py"
    (replacement,) = change["replacements"]
    assert replacement["deletedRegion"] == {"startLine": 58, "startColumn": 1, "endLine": 59, "endColumn": 1}
    original = (INVOICING / "invoicing" / "discounts.py").read_text(encoding="utf-8")
    patched = apply_replacements(original, replacements(repaired.diff))
    assert patched == original.replace("subtotal.amount > self.minimum", "subtotal.amount >= self.minimum")


def test_a_localization_s_sarif_has_no_fix_and_a_flat_ranking_reports_nothing(repaired):
    localization = repaired.localization
    log = render_sarif(localization)
    validate_sarif(log)
    (result,) = log["runs"][0]["results"]
    location = result["locations"][0]["physicalLocation"]
    assert "fixes" not in result and location["artifactLocation"]["uri"] == "invoicing/discounts.py"
    flat = localization.model_copy(update={"ranking": tuple(
        n.model_copy(update={"confidence": 0.05}) for n in localization.ranking)})
    log = render_sarif(flat)
    validate_sarif(log)
    assert log["runs"][0]["results"] == []


def test_a_verified_patch_s_function_is_reported_even_below_the_threshold(repaired):
    ranking = tuple(n.model_copy(update={"confidence": 0.02}) for n in repaired.localization.ranking)
    low = repaired.model_copy(update={"localization": repaired.localization.model_copy(
        update={"ranking": ranking})})
    (suspect,) = suspects(low)
    assert suspect.fqn == BUGGY and suspect.patched
    log = render_sarif(low)
    validate_sarif(log)
    assert "fixes" in log["runs"][0]["results"][0]


def test_the_replacements_of_a_diff_rebuild_the_new_text():
    """Changes, insertions (in the middle and at the end), deletions, two files: made on the
    originals, the replacements give the new texts."""
    before = "".join(f"line {i}\n" for i in range(1, 31))
    after = (before.replace("line 2\n", "line two\nline 2.5\n").replace("line 10\n", "")
             .replace("line 20\n", "line 20\ninserted\n") + "last\n")
    other_before, other_after = "a\nb\nc\n", "a\nc\n"
    diff = unified_diff("pkg/one.py", before, after) + unified_diff("pkg/two.py", other_before, other_after)
    found = replacements(diff)
    assert {c.path for c in found} == {"pkg/one.py", "pkg/two.py"}
    assert apply_replacements(before, [c for c in found if c.path == "pkg/one.py"]) == after
    assert apply_replacements(other_before, [c for c in found if c.path == "pkg/two.py"]) == other_after
    assert any(c.deleted == 0 for c in found) and any(c.inserted == "" for c in found)


def test_workflow_command_values_are_escaped_as_the_runner_reads_them():
    assert escape_data("50% done\r\nnext: a, b") == "50%25 done%0D%0Anext: a, b"
    assert escape_property("C:\\x,y%\nz") == "C%3A\\x%2Cy%25%0Az"
    assert workflow_command("warning", "two\nlines", {"file": "a,b.py", "line": 3, "title": "t: 1"}) == (
        "::warning file=a%2Cb.py,line=3,title=t%3A 1::two%0Alines")
    with pytest.raises(ValueError):
        workflow_command("fatal", "x", {})


def test_annotations_name_the_suspect_and_the_patch_with_paths_from_the_repository_root(repaired):
    suspect, patch = github_annotations(repaired, prefix="examples/invoicing/")
    assert suspect.startswith("::error file=examples/invoicing/invoicing/discounts.py,line=56,endLine=58,"
                              "title=EQUISA suspect #1%3A confidence 0.90::" + BUGGY)
    assert patch.startswith("::notice file=examples/invoicing/invoicing/discounts.py,line=58,"
                            "title=EQUISA patch")
    assert patch.endswith("replace these lines with:%0A        return subtotal.amount >= self.minimum.amount")
    plausible = repaired.model_copy(update={"status": "plausible_only"})
    assert github_annotations(plausible)[-1].startswith("::warning file=invoicing/discounts.py,line=58,")
    assert len(github_annotations(repaired.model_copy(update={"status": "not_fixed", "diff": ""}))) == 1


def test_the_markdown_summary_holds_the_outcome_suspects_diff_evidence_and_tests(repaired):
    text = render_markdown(repaired)
    assert text.startswith(f"## EQUISA repair: fixed: a verified patch of `{BUGGY}`\n")
    assert f"| 1 | `{BUGGY}` (patched) | `invoicing/discounts.py:56` | 0.90 | 0.87 |" in text
    assert text.count("\n| ") >= 5  # the top suspects' rows, and the checks'
    assert "```diff\n" + repaired.diff.rstrip("\n") + "\n```" in text
    assert "- **Tests:** 3 failing, 45 passing, 0 flaky; 16 generated by Discovery." in text
    assert "| carved tests | passed (3 tests) |" in text
    assert (f"| 5 | `{BUGGY}` | fix-confirmation | FIX_CONFIRMED (line 58: `>` -> `>=`) | 0.60 → 0.90 "
            "| 64 |") in text
    localized = render_markdown(repaired.localization)
    assert localized.startswith(f"## EQUISA localize: converged on `{BUGGY}` (confidence 0.90)")
    assert "### Patch" not in localized and "### Top suspects" in localized


def test_the_markdown_of_a_failed_repair_says_what_went_wrong_and_escapes_cells(repaired):
    broken = repaired.model_copy(update={"status": "error", "error": "the suite crashed", "diff": "",
                                         "localization": None, "problems": ("a | b\nc",)})
    text = render_markdown(broken)
    assert text.startswith("## EQUISA repair: error: the suite crashed\n")
    assert "No function was ranked." in text and "No patch was accepted." in text
    assert "- a \\| b c" in text
    fenced = repaired.model_copy(update={"diff": repaired.diff + "+```\n"})
    assert "````diff\n" in render_markdown(fenced)


def test_the_batch_markdown_has_a_row_per_repository():
    summary = summarize([
        RepositoryResult(name="billing", source="/r/billing", status="fixed", target="billing.tax.rate",
                         failing_tests=2, seconds=12.34),
        RepositoryResult(name="shop", source="/r/shop", status="error", error="clone failed | 128"),
    ], seconds=20.0)
    text = render_batch_markdown(summary)
    assert text.startswith("## EQUISA batch: 2 repositories in 20.0 s\n\nfixed: 1 · error: 1\n")
    assert "| billing | - | fixed | `billing.tax.rate` | 2 | 12.3 |  |" in text
    assert "| shop | - | error | - | 0 | 0.0 | clone failed \\| 128 |" in text


def test_a_long_qualified_name_is_never_cut_or_wrapped_at_80_columns(repaired):
    long = "billing_engine.discount_rules.LoyaltyThresholdDiscountPolicy.applies_to_subtotal_amount"
    ranking = (repaired.localization.ranking[0].model_copy(update={"fqn": long}),
               *repaired.localization.ranking[1:])
    localization: LocalizationReport = repaired.localization.model_copy(update={"ranking": ranking})
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=False, color_system=None)
    show(console, localization_summary(localization))
    console.print("after")
    printed = out.getvalue().splitlines()
    row = next(line for line in printed if long in line)
    assert row.startswith("│ " + long) and row.rstrip().endswith("0.901 │")
    # One line per function: no name is folded onto a second line.
    assert len([line for line in printed if line.startswith("│ ")]) == min(len(ranking), 10)
    assert console.width == 80 and printed[-1] == "after"

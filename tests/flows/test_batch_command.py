"""``equisa batch`` end to end: one repository's failure never stops the others; a re-run resumes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from equisa_core.operations.batch import BatchSummary
from tasks.storage.history import query
from tests.conftest import small_repo

EQUISA = shutil.which("equisa") or str(Path(sys.executable).with_name("equisa"))
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _batch(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([EQUISA, "batch", *args], env=env, capture_output=True, text=True, timeout=900)


def test_a_failing_repository_does_not_stop_the_batch_and_a_rerun_resumes(tmp_path, cli_env):
    """A repository with nothing to fix is an outcome, not a failed run: only the missing one makes the
    exit 51. Every repository's run is in the history with its outcome and exit code."""
    fine = small_repo(tmp_path / "fine")
    (fine / "mod.py").write_text("def ok():\n    return 1\n")
    (fine / "tests" / "test_ok.py").write_text(
        "from mod import ok\n\n\ndef test_ok():\n    assert ok() == 1\n")
    repositories = tmp_path / "repositories.yaml"
    repositories.write_text(
        "defaults: {llm: false}\n"
        f"repositories:\n  - source: {EXAMPLES / 'gradebook'}\n  - source: missing-repository\n"
        f"  - source: {fine}\n")
    summary_path, reports = tmp_path / "summary.json", tmp_path / "reports"
    first = _batch(cli_env, str(repositories), "--json", str(summary_path), "--reports", str(reports))
    assert first.returncode == 51, first.stderr  # ran to the end; one repository failed
    summary = BatchSummary.model_validate_json(summary_path.read_text())
    fixed, missing, nothing = summary.results
    assert (fixed.name, fixed.status, fixed.target) == ("gradebook", "fixed", "gradebook.grades.letter")
    assert (nothing.status, nothing.exit_code) == ("nothing_to_fix", 20)
    assert "+        if score >= lowest:" in fixed.diff and Path(fixed.report_path).is_file()
    assert (missing.status, missing.exit_code) == ("error", 3)
    assert f"repository path {tmp_path / 'missing-repository'} does not exist" in missing.error
    assert summary.counts["fixed"] == 1 and summary.counts["error"] == 1
    runs = query(Path(cli_env["EQUISA_DB"]), "SELECT p.name, r.kind, r.status, r.exit_code, r.error_type, "
                 "r.parent_flow_run_id FROM runs r JOIN repositories p USING (repo_id)")
    assert sorted((r["name"], r["kind"], r["status"], r["exit_code"], r["error_type"]) for r in runs) == [
        ("fine", "repair", "nothing_to_do", 20, "NothingToLocalizeError"),
        ("gradebook", "repair", "fixed", 0, None),
        ("missing-repository", "repair", "error", 3, "RepositoryNotFoundError")]
    assert all(r["parent_flow_run_id"] for r in runs), "each recorded by its repository's child flow run"

    # The re-run, as a GitHub Actions job: its Markdown goes to --markdown and to the step summary.
    markdown, step_summary = tmp_path / "batch.md", tmp_path / "step-summary.md"
    second = _batch({**cli_env, "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(step_summary)},
                    str(repositories), "--json", str(summary_path), "--reports", str(reports),
                    "--markdown", str(markdown))
    assert second.returncode == 51, second.stderr
    text = markdown.read_text()
    assert text.startswith("## EQUISA batch: 3 repositories in ")
    assert "fixed: 1 · nothing_to_fix: 1 · error: 1" in text
    assert "| gradebook | - | fixed | `gradebook.grades.letter` | " in text
    assert "| missing-repository | - | error | - | 0 | " in text and step_summary.read_text() == text
    assert "\nrepairing (watch each repository in the Prefect UI)\n" in second.stderr  # plain, no spinner
    again = BatchSummary.model_validate_json(summary_path.read_text())
    assert again.results[0] == fixed, "the finished repository is served from cache, same run and report"
    assert again.results[1].status == "error" and again.results[1].flow_run_id != missing.flow_run_id


def test_a_bad_repositories_file_exits_50_before_any_work(tmp_path):
    bad = tmp_path / "repositories.yaml"
    bad.write_text("repositories:\n  - source: a\n    budgets: {max_inspections: many}\n")
    done = subprocess.run([EQUISA, "batch", str(bad)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 50
    assert "repositories[0].budgets.max_inspections: Input should be a valid integer" in done.stderr
    bad.write_text("repositories: [a\n")
    done = subprocess.run([EQUISA, "batch", str(bad)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 50 and "is not valid YAML (line 2" in done.stderr
    done = subprocess.run([EQUISA, "batch", str(tmp_path / "nope.yaml")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 50 and "does not exist" in done.stderr


def test_an_unpriced_model_stops_the_batch_before_any_work_and_old_keys_warn(tmp_path):
    repositories = tmp_path / "repositories.yaml"
    repositories.write_text("repositories:\n  - name: shop\n    source: missing-repository\n    llm: true\n"
                            "    sandbox: none\n    budgets: {max_iterations: 3}\n")
    env = {**{k: v for k, v in __import__("os").environ.items() if not k.startswith(("OPENAI_", "EQUISA_"))},
           "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "EQUISA_MODEL": "qwen"}
    done = subprocess.run([EQUISA, "batch", str(repositories)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 12, done.stderr
    assert "shop: the model 'qwen' has no known price" in " ".join(done.stderr.split())
    assert done.stderr.count("budgets.max_iterations is deprecated") == 1
    priced = subprocess.run([EQUISA, "batch", str(repositories), "--max-cost", "none", "--json",
                             str(tmp_path / "summary.json")], env={**env, "PREFECT_API_URL": "http://127.0.0.1:9/api"},
                            capture_output=True, text=True, timeout=120)
    assert "no known price" not in priced.stderr  # explicitly without a cap: the batch goes on to run

"""``equisa testgen`` end to end: the deterministic loop, LLM mode against the scripted server, bad input."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb

from equisa_core.testgen.embedding import local_embedding
from equisa_core.testgen.report import TestgenReport
from tests.integration.test_probe import tree_digest
from tests.scripted_llm_server import RecordedRequest, Reply

ROOT = Path(__file__).resolve().parents[2]
INVOICING = ROOT / "examples" / "invoicing"
TARGET = "invoicing/discounts.py"
EQUISA = shutil.which("equisa") or str(Path(sys.executable).with_name("equisa"))


def count_cases(tests: list[ast.FunctionDef]) -> int:
    """How many cases ``tests`` run: one each, a parametrized test one per row of its table."""
    count = 0
    for test in tests:
        rows = [d.args[1] for d in test.decorator_list if isinstance(d, ast.Call) and len(d.args) == 2
                and ast.unparse(d.func) == "pytest.mark.parametrize"]
        count += len(rows[0].elts) if rows and isinstance(rows[0], ast.List) else 1
    return count


def run_testgen(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    done = subprocess.run([EQUISA, "testgen", *args], capture_output=True, text=True, env=env, timeout=900)
    return done.returncode, done.stdout, done.stderr


def test_deterministic_mode_writes_passing_tests_with_coverage_and_mutation_score(tmp_path, cli_env):
    before = tree_digest(INVOICING)
    out, report_path = tmp_path / "out", tmp_path / "testgen.json"
    code, stdout, err = run_testgen(
        cli_env,
        str(INVOICING),
        "--target",
        TARGET,
        "--no-llm",
        "--out",
        str(out),
        "--json",
        str(report_path),
        "--max-attempts",
        "2",
        "--mutants-per-measurement",
        "40",
    )
    assert code == 0, err
    report = TestgenReport.model_validate_json(report_path.read_text())
    assert report.mode == "deterministic" and report.framework == "pytest"
    assert report.baseline is not None and 50.0 < report.baseline.percent <= 100.0
    first = report.attempts[0]
    assert first.origin.startswith("deterministic") and first.tests and first.tests_passed == len(first.tests)
    assert any(t.startswith("test_boundary_") for t in first.tests), first.deterministic
    assert first.coverage is not None and first.coverage.percent > 50.0
    assert first.combined_coverage.percent >= report.baseline.percent
    assert first.mutation_score is not None and first.mutants.get("killed", 0) > 0
    assert sum(first.mutants.values()) == 40
    assert first.pre_reliability.level in ("high", "medium") and first.static.tools[:2] == ("compile", "ruff")
    assert first.decision in ("ENHANCE", "FINISH") and report.stopped_because
    assert len(report.attempts) <= 2 and report.cost_usd == 0.0
    written = Path(report.output)
    written_tests = [n for n in ast.parse(written.read_text()).body
                     if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
    # Each test of the best attempt, or a case of a parametrized test that folds several of them.
    assert written.parent == out and count_cases(written_tests) == len(report.attempts[report.best_attempt].tests)
    assert (out / "tests.duckdb").is_file() and (out / "attempt_0" / "attempt.json").is_file()
    assert json.loads((out / "report.json").read_text())["target"] == TARGET
    assert "Tests written to" in stdout + err
    assert tree_digest(INVOICING) == before  # the user's tree is never written
    # Progress per attempt on the terminal, and the run recorded: artifacts and history rows.
    assert "attempt 0: " in err and f"Run {report.run_id} recorded:" in err
    assert (Path(report.artifacts) / "report.html").read_text().count("<tr><td>") == len(report.attempts)
    with duckdb.connect(cli_env["EQUISA_DB"], read_only=True) as db:
        run = db.execute("SELECT kind, status, mode, target, cost_usd, tests_passed FROM runs "
                         "WHERE run_id = ?", [report.run_id]).fetchone()
        attempts = db.execute("SELECT round, groups, proposed, kept FROM testgen_attempts WHERE run_id = ? "
                              "ORDER BY round", [report.run_id]).fetchall()
    best = report.attempts[report.best_attempt]
    assert run == ("testgen", "generated", "deterministic", TARGET, 0.0, best.tests_passed)
    assert attempts == [(a.attempt, [TARGET], len(a.tests), a.tests_passed) for a in report.attempts]


def test_bad_target_is_exit_30(tmp_path, cli_env):
    code, _, err = run_testgen(
        cli_env, str(INVOICING), "--target", "invoicing/nope.py", "--no-llm", "--out", str(tmp_path / "o")
    )
    assert code == 30 and "no such file" in err


GENERATED = """\
from decimal import Decimal

import pytest

from invoicing.discounts import Coupon, PercentageDiscount, ThresholdDiscount, apply_discounts
from invoicing.money import Money


def test_percentage_must_be_positive():
    with pytest.raises(ValueError):
        PercentageDiscount(0)


def test_percentage_amount():
    assert PercentageDiscount(10).amount(Money(Decimal("200"), "EUR")).amount == Decimal("20.00")
"""

ENHANCED = (
    GENERATED
    + """

def test_threshold_needs_something_off():
    with pytest.raises(ValueError):
        ThresholdDiscount(100, 0)


def test_expired_coupon_is_invalid():
    from datetime import date

    coupon = Coupon("X", PercentageDiscount(5), expires=date(2024, 1, 1))
    assert coupon.is_valid(date(2024, 1, 2), 3) is False


def test_discounts_never_exceed_the_subtotal():
    total = apply_discounts(Money(Decimal("10"), "EUR"), [ThresholdDiscount(1, 50)])
    assert total.amount == Decimal("10.00")
"""
)


def scripted_testgen(request: RecordedRequest) -> Reply:
    prompt = request.last_user_message
    confident = [[("tok", -0.01), ("alt", -4.7)]] * 40  # mean entropy about 0.06 nats: high
    if prompt.startswith("You are an expert Python test generator."):
        return Reply(GENERATED, logprobs=confident, prompt_tokens=900, completion_tokens=200)
    if prompt.startswith("You are an expert Python test engineer improving an existing test module."):
        return Reply(ENHANCED, logprobs=confident, prompt_tokens=1200, completion_tokens=400)
    if prompt.startswith("You are a strict reviewer of unit tests."):
        return Reply("NO SMELLS")
    return Reply("unexpected prompt")


def test_llm_mode_generates_enhances_and_accounts_cost_and_entropy(tmp_path, cli_env, scripted_llm):
    scripted_llm.respond_with(scripted_testgen)
    scripted_llm.embed_with(local_embedding)
    env = {
        **cli_env,
        "OPENAI_BASE_URL": scripted_llm.base_url,
        "OPENAI_API_KEY": "sk-test",
        "EQUISA_MODEL": "gpt-4o-mini",
    }
    report_path = tmp_path / "testgen.json"
    code, _, err = run_testgen(
        env,
        str(INVOICING),
        "--target",
        TARGET,
        "--llm",
        "--out",
        str(tmp_path / "out"),
        "--json",
        str(report_path),
        "--max-attempts",
        "2",
        "--mutants-per-measurement",
        "30",
        "--coverage-target",
        "99",
    )
    assert code == 0, err
    report = TestgenReport.model_validate_json(report_path.read_text())
    assert report.mode == "llm" and [a.origin for a in report.attempts] == ["generator", "enhancer"]
    first, second = report.attempts
    assert first.mean_entropy is not None and 0.0 < first.mean_entropy < 0.15
    # high from the entropy, downgraded for the three imports only the enhanced module uses (ruff F401)
    assert (
        first.pre_reliability.level == "medium" and "mean token entropy" in first.pre_reliability.reasons[0]
    )
    assert first.static.lint_issue_count == 3 and "downgraded from high" in first.pre_reliability.reasons[-1]
    assert second.pre_reliability.level == "high" and second.static.lint_issue_count == 0
    assert "Resolve 3 lint/type errors reported by available tools." in first.critique.instructions
    assert first.tests_passed == 2 and second.tests_passed == 5
    assert first.decision == "ENHANCE" and second.decision == "FINISH"
    assert second.coverage.percent > first.coverage.percent and second.critique.coverage_delta > 1.0
    assert first.pipeline.embeddings.startswith("endpoint:") and first.pipeline.added_to_store == 2
    assert report.cost_usd > 0 and report.cost_usd == round(first.cost_usd + second.cost_usd, 6)
    generator = next(
        r for r in scripted_llm.requests if r.last_user_message.startswith("You are an expert Python")
    )
    assert "Target file: invoicing/discounts.py" in generator.last_user_message
    assert "Example of an existing test (1):" in generator.last_user_message
    assert generator.body.get("logprobs") is True
    enhancer = next(
        r for r in scripted_llm.requests if "improving an existing test module" in r.last_user_message
    )
    assert "Pytest-style functions and fixtures are acceptable" in enhancer.last_user_message
    assert "test_percentage_amount" in enhancer.last_user_message
    assert any(r.path.endswith("/embeddings") for r in scripted_llm.requests)
    # Run again: the model's answers come from the call-llm task's cache and cost nothing this time.
    asked = sum(1 for r in scripted_llm.requests if r.path.endswith("/chat/completions"))
    again_path = tmp_path / "again.json"
    code, _, err = run_testgen(env, str(INVOICING), "--target", TARGET, "--llm", "--out",
                               str(tmp_path / "again"), "--json", str(again_path), "--max-attempts", "1",
                               "--mutants-per-measurement", "0")
    assert code == 0, err
    [again] = TestgenReport.model_validate_json(again_path.read_text()).attempts
    assert again.origin == "generator" and again.llm_calls >= 1
    assert again.cached_llm_calls == again.llm_calls and again.cost_usd == 0.0
    assert sum(1 for r in scripted_llm.requests if r.path.endswith("/chat/completions")) == asked


def test_the_terminal_shows_no_serializer_warning(tmp_path, cli_env):
    """The report (its ``problems`` merged with the recording's) dumps to JSON without Pydantic's
    serializer warnings on standard error."""
    report_path = tmp_path / "testgen.json"
    code, stdout, err = run_testgen(cli_env, str(ROOT / "examples" / "gradebook"), "--target",
                                    "gradebook/stats.py", "--no-llm", "--out", str(tmp_path / "out"),
                                    "--json", str(report_path), "--max-attempts", "1")
    assert code == 0, err
    assert isinstance(json.loads(report_path.read_text())["problems"], list)
    for unwanted in ("PydanticSerializationUnexpectedValue", "UserWarning"):
        assert unwanted not in err and unwanted not in stdout, err

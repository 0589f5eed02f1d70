"""A testgen run's problems and model calls travel as values: the generator's unusable answer is a
problem on the report, its (cached) call is on the run's ledger and costs nothing in the report, and
the run's history rows are the ledger's paid calls."""

from __future__ import annotations

import duckdb

import tasks.llm
import tasks.testgen.model
import tasks.testgen.setup
import tasks.testgen.steps
from equisa_core.common.cost import LLMCall
from equisa_core.testgen.embedding import local_embedding
from equisa_core.testgen.machine import Generate
from equisa_core.testgen.report import TestgenReport
from tasks.llm import LLMAnswer, LLMConfig
from tasks.testgen.test_store import TestStore, embed_texts
from tests.flows.test_testgen_cli import INVOICING, TARGET, run_testgen
from tests.scripted_llm_server import Reply
from tests.tasks.test_testgen_steps import context

UNUSABLE = "I would rather not write tests for this file."
#: The generator's call, served from the cache: what it cost the first time is not spent again.
CACHED = LLMCall(purpose="testgen-generator", model="gpt-4o-mini", prompt_hash="h", cost_usd=0.25,
                 cached=True)
PROBLEMS = [
    "generator answer unusable: the test module does not parse: invalid syntax (<unknown>, line 1)",
    "the generator gave no usable module; attempt 0 falls back to deterministic tests",
]


def unusable_model(monkeypatch) -> list[str]:
    """The model answers every ask with prose from the cache; embeddings are local; the
    deterministic fallback finds nothing. Returns the purposes asked, in order."""
    asked: list[str] = []

    def ask(config: LLMConfig, messages: list[dict[str, str]], purpose: str) -> LLMAnswer:
        asked.append(purpose)
        return LLMAnswer(text=UNUSABLE, call=CACHED.model_copy(update={"purpose": purpose}))

    def local(texts, config):
        return embed_texts(texts, None)

    monkeypatch.setattr(tasks.llm, "ask", ask)
    for module in (tasks.testgen.model, tasks.testgen.setup, tasks.testgen.steps):
        monkeypatch.setattr(module, "embed_texts", local)
    monkeypatch.setattr(tasks.testgen.steps, "_deterministic", lambda ctx, **_: ("", []))
    return asked


def test_the_generator_step_returns_its_call_and_problems_with_its_observation(tmp_path, monkeypatch):
    asked = unusable_model(monkeypatch)
    ctx = context(tmp_path, llm=True, base_url="http://127.0.0.1:9/v1")
    with TestStore(tmp_path / "s.duckdb") as store:
        observation = tasks.testgen.steps.run_step(ctx, store, Generate(attempt=0, strategy="model"))
    assert asked == ["testgen-generator"] and observation.calls == (CACHED,)
    assert list(observation.problems) == PROBLEMS and observation.source == ""
    assert not hasattr(ctx, "problems"), "the context keeps no problems on the side"


def test_a_runs_problems_and_paid_calls_come_back_on_its_report_and_its_history(tmp_path, cli_env,
                                                                               scripted_llm):
    # The scripted endpoint answers prose: the generator's answer is unusable, which is a problem on
    # the report; the call it cost is on the run's ledger, and the history's rows come from there.
    scripted_llm.respond_with(lambda request: Reply(UNUSABLE, prompt_tokens=100, completion_tokens=10))
    scripted_llm.embed_with(local_embedding)
    db, report_path = tmp_path / "history.duckdb", tmp_path / "testgen.json"
    env = {**cli_env, "OPENAI_BASE_URL": scripted_llm.base_url, "OPENAI_API_KEY": "sk-test",
           "EQUISA_MODEL": "gpt-4o-mini"}
    code, _, err = run_testgen(env, str(INVOICING), "--target", TARGET, "--llm",
                               "--out", str(tmp_path / "out"), "--json", str(report_path),
                               "--max-attempts", "1", "--mutants-per-measurement", "0", "--db", str(db))
    assert code == 0, err
    report = TestgenReport.model_validate_json(report_path.read_text())
    assert report.mode == "llm" and PROBLEMS[0] in report.problems, report.problems
    [attempt] = report.attempts
    assert attempt.llm_calls >= 1 and attempt.cached_llm_calls == 0 and report.cost_usd > 0
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("SELECT purpose, input_tokens, output_tokens, cost_usd FROM llm_calls "
                           "WHERE run_id = ?", [report.run_id]).fetchall()
    assert ("testgen-generator", 100, 10) in {row[:3] for row in rows}
    assert round(sum(row[3] for row in rows), 6) == report.cost_usd

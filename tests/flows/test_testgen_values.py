"""A testgen run's problems and model calls travel as values: the generator's unusable answer is a
problem on the report, its (cached) call is on the run's ledger and costs nothing in the report, and
the flow hands the ledger's calls to the run's record."""

from __future__ import annotations

from prefect.settings import PREFECT_LOCAL_STORAGE_PATH, temporary_settings

import flows.testgen as driver
import tasks.llm
import tasks.testgen_model
import tasks.testgen_setup
import tasks.testgen_steps
from equisa_core.common.cost import LLMCall
from equisa_core.testgen.machine import Generate
from tasks.llm import LLMAnswer, LLMConfig
from tasks.parameters import TestgenParameters
from tasks.test_store import TestStore, embed_texts
from tests.flows.test_testgen_cli import INVOICING, TARGET
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
    for module in (tasks.testgen_model, tasks.testgen_setup, tasks.testgen_steps):
        monkeypatch.setattr(module, "embed_texts", local)
    monkeypatch.setattr(tasks.testgen_steps, "_deterministic", lambda ctx, **_: ("", []))
    return asked


def test_the_generator_step_returns_its_call_and_problems_with_its_observation(tmp_path, monkeypatch):
    asked = unusable_model(monkeypatch)
    ctx = context(tmp_path, llm=True, base_url="http://127.0.0.1:9/v1")
    with TestStore(tmp_path / "s.duckdb") as store:
        observation = tasks.testgen_steps.run_step(ctx, store, Generate(attempt=0, strategy="model"))
    assert asked == ["testgen-generator"] and observation.calls == (CACHED,)
    assert list(observation.problems) == PROBLEMS and observation.source == ""
    assert not hasattr(ctx, "problems"), "the context keeps no problems on the side"


def test_a_runs_problems_and_calls_come_back_on_its_report_and_cached_calls_cost_nothing(
    tmp_path, prefect_api_url, monkeypatch
):
    unusable_model(monkeypatch)
    config = LLMConfig(base_url="http://127.0.0.1:9/v1", api_key="sk-test", model="gpt-4o-mini",
                       backup_model=None, max_retries=0)
    monkeypatch.setattr(tasks.llm, "choose_llm_mode", lambda wanted: (True, config, []))
    made, recorded = [], {}
    generate_tests = driver.generate_tests

    def generating(prepared, params):
        made.append(generate_tests(prepared, params))
        return made[-1]

    def record_run(kind, report, repository, artifacts=None, db=None, trace=None, calls=None):
        recorded.update(kind=kind, calls=calls)
        return report

    monkeypatch.setattr(driver, "generate_tests", generating)
    monkeypatch.setattr(driver, "record_finished_run", record_run)
    params = TestgenParameters(path=str(INVOICING), target=TARGET, llm=True, out=str(tmp_path / "out"),
                               max_iterations=1, max_mutants=0)
    with temporary_settings({PREFECT_LOCAL_STORAGE_PATH: tmp_path / "storage"}):
        report = driver.testgen(params)

    assert report.mode == "llm" and report.problems == PROBLEMS
    [attempt] = report.attempts
    assert (attempt.llm_calls, attempt.cached_llm_calls) == (1, 1)
    assert attempt.cost_usd == report.cost_usd == 0.0
    # The cached call is on the run's ledger, but not among the paid calls the history keeps.
    [result] = made
    assert result.ledger.calls == (CACHED,) and result.ledger.usd == 0.0
    assert recorded == {"kind": "testgen", "calls": ()}

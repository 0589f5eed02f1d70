"""The LLM layer against a real OpenAI-compatible server on 127.0.0.1, with the real ``openai`` client.

Calls run inside Prefect flows against a temporary Prefect server (``prefect_test_harness``), so
retries, backoff, the retry condition and caching are Prefect's own. Each test gets its own result
storage, so nothing is served from another test's cache.
"""

from __future__ import annotations

import hashlib
import math
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
from prefect import flow
from prefect.settings import PREFECT_LOCAL_STORAGE_PATH, temporary_settings
from prefect.testing.utilities import prefect_test_harness
from pydantic import ValidationError

from equisa_core.common.cost import CostLedger, LLMCall
from equisa_core.common.options import EndpointOptions
from equisa_core.localization.prompts import prompt_hash, render_patch
from tasks import llm as llm_module
from tasks.llm import (
    DEFAULT_PRICES,
    FunctionAnswer,
    InvalidAnswerError,
    LLMAnswer,
    LLMConfig,
    LLMRequestError,
    LLMUnavailableError,
    ModelPrice,
    ask_for_function,
    call_llm,
    choose_llm_mode,
    llm_available,
    llm_task,
    priced_config,
)
from tests.scripted_llm_server import (  # noqa: F401  (scripted_llm_fixture provides `scripted_llm`)
    Fault,
    RecordedRequest,
    Reply,
    ScriptedLLM,
    scripted_llm_fixture,
)

pytestmark = pytest.mark.integration

T = TypeVar("T")
PRIMARY, BACKUP = "primary-model", "backup-model"
ORIGINAL = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"


@pytest.fixture(scope="session")
def prefect_server() -> Iterator[None]:
    """One temporary Prefect server and database for the session (starting one takes seconds)."""
    with prefect_test_harness(server_startup_timeout=180):
        yield


@pytest.fixture(autouse=True)
def private_result_storage(prefect_server, tmp_path) -> Iterator[None]:
    """A fresh result store per test: cached answers never leak between tests or sessions."""
    with temporary_settings({PREFECT_LOCAL_STORAGE_PATH: tmp_path / "prefect-results"}):
        yield


def make_config(server: ScriptedLLM, **overrides: Any) -> LLMConfig:
    values: dict[str, Any] = {
        "base_url": server.base_url,
        "api_key": "test-key",
        "model": PRIMARY,
        "backup_model": BACKUP,
        "timeout_s": 5.0,
        "backoff_s": 0.0,
        "prices": {
            PRIMARY: ModelPrice(input_per_mtok=2.0, output_per_mtok=8.0),
            BACKUP: ModelPrice(input_per_mtok=0.5, output_per_mtok=1.0),
        },
    }
    values.update(overrides)
    return LLMConfig(**values)


def in_flow(body: Callable[[], T]) -> T:
    """Run ``body`` inside a Prefect flow run."""

    @flow(name="llm-test")
    def llm_test() -> Any:
        return body()

    return llm_test()


def ask(config: LLMConfig, prompt: str, purpose: str = "test") -> LLMAnswer:
    return in_flow(lambda: llm_task(config)(config, [{"role": "user", "content": prompt}], purpose))


def fix_prompt(tag: str = "") -> list[dict[str, str]]:
    return render_patch("calc.add" + tag, ORIGINAL, "It subtracts instead of adding.\nCONFIRMED_BUGGY")


# --- answers and accounting ----------------------------------------------------------------------


def test_an_answer_records_tokens_cost_and_latency(scripted_llm):
    scripted_llm.enqueue(Reply("Hello.", prompt_tokens=1000, completion_tokens=500))
    config = make_config(scripted_llm)
    answer = ask(config, "say hello", "greeting")

    assert answer.text == "Hello."
    call = answer.call
    assert (call.model, call.purpose, call.attempts) == (PRIMARY, "greeting", 1)
    assert not call.fell_back and not call.cached
    assert (call.input_tokens, call.output_tokens) == (1000, 500)
    assert call.cost_usd == pytest.approx(1000 * 2.0 / 1e6 + 500 * 8.0 / 1e6)
    assert call.latency_s > 0 and call.error is None and call.mean_entropy is None
    assert call.prompt_hash == prompt_hash([{"role": "user", "content": "say hello"}])

    [request] = scripted_llm.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer test-key"
    assert request.body["temperature"] == 0.2 and request.body["top_p"] == 0.95
    assert request.messages == [{"role": "user", "content": "say hello"}]
    assert "logprobs" not in request.body


def test_missing_usage_and_unknown_prices_give_no_cost(scripted_llm):
    scripted_llm.enqueue(Reply("ok", prompt_tokens=None))
    answer = ask(make_config(scripted_llm), "no usage")
    assert (answer.call.input_tokens, answer.call.output_tokens, answer.call.cost_usd) == (None, None, None)
    scripted_llm.enqueue(Reply("ok"))
    answer = ask(make_config(scripted_llm, prices={}), "no price")
    assert answer.call.input_tokens == 100 and answer.call.cost_usd is None


# --- transient faults: retries and fallback ------------------------------------------------------


def test_a_rate_limit_is_retried_after_retry_after(scripted_llm):
    scripted_llm.enqueue(Fault.rate_limit(retry_after=0.6), Reply("ok"))
    answer = ask(make_config(scripted_llm), "busy")
    assert answer.text == "ok" and answer.call.attempts == 2 and not answer.call.fell_back
    first, second = scripted_llm.requests
    assert scripted_llm.models_seen() == [PRIMARY, PRIMARY]
    assert second.received_at - first.received_at >= 0.6


def test_server_errors_are_retried_on_the_same_model(scripted_llm):
    scripted_llm.enqueue(Fault.server_error(500), Fault.server_error(502), Reply("ok"))
    answer = ask(make_config(scripted_llm, fallback_after=3), "flaky")
    assert answer.text == "ok" and answer.call.attempts == 3 and answer.call.model == PRIMARY
    assert scripted_llm.models_seen() == [PRIMARY] * 3


def test_a_timeout_is_retried(scripted_llm):
    scripted_llm.enqueue(Fault.stall(10), Reply("ok"))
    started = time.monotonic()
    answer = ask(make_config(scripted_llm, timeout_s=0.5), "slow")
    assert answer.text == "ok" and answer.call.attempts == 2
    assert time.monotonic() - started < 10
    assert len(scripted_llm.requests) == 2


def test_a_malformed_body_is_retried(scripted_llm):
    scripted_llm.enqueue(Fault.malformed_json(), Reply("ok"))
    answer = ask(make_config(scripted_llm), "garbled")
    assert answer.text == "ok" and answer.call.attempts == 2


def test_the_backup_model_answers_when_the_primary_keeps_failing(scripted_llm):
    scripted_llm.respond_with(
        lambda r: Fault.server_error(503) if r.model == PRIMARY else Reply("from backup")
    )
    answer = ask(make_config(scripted_llm), "primary is down")
    assert answer.text == "from backup"
    assert (answer.call.model, answer.call.fell_back, answer.call.attempts) == (BACKUP, True, 3)
    assert answer.call.cost_usd == pytest.approx(100 * 0.5 / 1e6 + 20 * 1.0 / 1e6)
    assert scripted_llm.models_seen() == [PRIMARY, PRIMARY, BACKUP]


def test_transient_failures_end_in_a_typed_error_after_the_budget(scripted_llm):
    scripted_llm.respond_with(lambda r: Fault.server_error(500))
    config = make_config(scripted_llm, backup_model=None, max_retries=3)
    with pytest.raises(LLMUnavailableError, match="HTTP 500") as info:
        ask(config, "always down")
    assert info.value.exit_code == 11 and info.value.attempt == 4 and not info.value.retryable
    assert scripted_llm.models_seen() == [PRIMARY] * 4


def test_the_config_budget_holds_when_the_task_is_called_directly(scripted_llm):
    scripted_llm.respond_with(lambda r: Fault.server_error(500))
    config = make_config(scripted_llm, max_retries=1)
    with pytest.raises(LLMUnavailableError):
        in_flow(lambda: call_llm(config, [{"role": "user", "content": "direct"}], "direct"))
    assert len(scripted_llm.requests) == 2  # the decorator allows 10 retries; the config 1


def test_a_rejected_request_is_not_retried(scripted_llm):
    scripted_llm.respond_with(lambda r: Fault(status=401, message="bad key"))
    with pytest.raises(LLMRequestError, match="HTTP 401.*bad key") as info:
        ask(make_config(scripted_llm), "unauthorised")
    assert info.value.exit_code == 12 and info.value.status_code == 401
    assert len(scripted_llm.requests) == 1


def test_an_unreachable_endpoint_is_a_typed_error():
    with ScriptedLLM() as server:
        config = make_config(server, max_retries=1, backup_model=None)
    with pytest.raises(LLMUnavailableError, match="cannot reach"):
        ask(config, "nobody home")


def _decide(seed: int, prompt: str, seen: int) -> bool:
    """Whether the ``seen``-th request with ``prompt`` fails: 30% of requests, independent of thread order."""
    digest = hashlib.sha256(f"{seed}|{prompt}|{seen}".encode()).digest()
    return random.Random(digest).random() < 0.3


def test_thirty_percent_of_requests_failing_at_random_all_calls_complete(scripted_llm):
    seen: Counter[str] = Counter()
    lock = threading.Lock()
    faults = [Fault.rate_limit(retry_after=0.05), Fault.server_error(500), Fault.server_error(503),
              Fault.malformed_json(), Fault.stall(4)]

    def respond(request: RecordedRequest) -> Fault | Reply:
        prompt = request.last_user_message
        with lock:
            seen[prompt] += 1
            n = seen[prompt]
        if _decide(7, prompt, n):
            return faults[n % len(faults)]
        return Reply(f"answer to {prompt}")

    scripted_llm.respond_with(respond)
    config = make_config(scripted_llm, timeout_s=1.5)
    def body() -> list[LLMAnswer]:
        task = llm_task(config)
        futures = [
            task.submit(config, [{"role": "user", "content": f"question {i}"}], f"q{i}") for i in range(20)
        ]
        return [f.result() for f in futures]

    answers = in_flow(body)
    ledger = CostLedger().plus(answer.call for answer in answers)

    assert [a.text for a in answers] == [f"answer to question {i}" for i in range(20)]
    failures = len(scripted_llm.requests) - 20
    assert 0 < failures < 20
    assert sum(a.call.attempts for a in answers) == len(scripted_llm.requests)
    assert any(a.call.fell_back for a in answers)  # with seed 7, some call needs the backup model
    totals = ledger.totals()
    assert (totals.calls, totals.failed_calls, totals.input_tokens) == (20, 0, 20 * 100)


# --- caching -------------------------------------------------------------------------------------


def test_an_answer_is_cached_by_prompt_model_and_temperature(scripted_llm):
    scripted_llm.respond_with(lambda r: Reply(FIXED))
    config = make_config(scripted_llm)
    def body() -> list[FunctionAnswer]:
        first = ask_for_function(config, fix_prompt(), ORIGINAL, "add", "patch")
        again = ask_for_function(config, fix_prompt(), ORIGINAL, "add", "patch")
        hotter = config.model_copy(update={"temperature": 0.7})
        other = ask_for_function(hotter, fix_prompt(), ORIGINAL, "add", "patch")
        return [first, again, other]

    first, again, other = in_flow(body)
    ledger = CostLedger().plus(call for answer in (first, again, other) for call in answer.calls)
    assert [a.calls[0].cached for a in (first, again, other)] == [False, True, False]
    assert len(scripted_llm.requests) == 2
    assert scripted_llm.requests[1].body["temperature"] == 0.7
    totals = ledger.totals()
    assert (totals.calls, totals.cached_calls) == (3, 1)
    assert totals.cost_usd == pytest.approx(2 * first.calls[0].cost_usd)


def test_an_inspection_patch_served_from_the_cache_spends_nothing(scripted_llm):
    from tasks.localization.inspections import llm_inspection_patch

    scripted_llm.respond_with(lambda r: Reply(FIXED))
    config = make_config(scripted_llm)

    first, again = in_flow(lambda: [llm_inspection_patch(config, "calc.add", ORIGINAL) for _ in range(2)])
    assert first.source == again.source == FIXED and len(scripted_llm.requests) == 1
    assert not first.problems and not again.problems
    assert CostLedger(calls=first.calls).usd > 0 and CostLedger(calls=again.calls).usd == 0.0
    assert [c.cached for c in (*first.calls, *again.calls)] == [False, True]


def test_failures_are_not_cached(scripted_llm):
    scripted_llm.enqueue(Fault(status=400, message="try later"), Reply("ok"))
    config = make_config(scripted_llm)
    with pytest.raises(LLMRequestError):
        ask(config, "same prompt")
    assert ask(config, "same prompt").text == "ok"
    assert len(scripted_llm.requests) == 2


# --- asking for a function -----------------------------------------------------------------------


def test_a_fenced_answer_is_cleaned(scripted_llm):
    scripted_llm.enqueue(Reply("Here is the fix:\n\n```python\n" + FIXED + "```\n\nIt now adds."))
    config = make_config(scripted_llm)
    result = in_flow(lambda: ask_for_function(config, fix_prompt(), ORIGINAL, "add", "patch"))
    assert result.source == FIXED and result.reasks == 0 and len(result.calls) == 1


def test_a_changed_signature_is_sent_back_with_the_reason(scripted_llm):
    bad = "def add(a, b, c=0):\n    return a + b + c\n"
    scripted_llm.enqueue(Reply(bad), Reply("```python\n" + FIXED + "```"))
    config = make_config(scripted_llm)
    result = in_flow(lambda: ask_for_function(config, fix_prompt(), ORIGINAL, "add", "patch"))
    ledger = CostLedger().plus(result.calls)

    assert result.source == FIXED and result.reasks == 1
    assert [c.purpose for c in result.calls] == ["patch", "patch re-ask 1"]
    first, second = scripted_llm.requests
    assert second.messages[:2] == first.messages + [{"role": "assistant", "content": bad}]
    assert second.messages[2]["role"] == "user"
    assert "changes the signature of 'add'" in second.messages[2]["content"]
    assert ledger.totals().calls == 2


def test_nonsense_forever_ends_in_a_typed_error_after_the_reasks(scripted_llm):
    scripted_llm.respond_with(lambda r: Reply("I am sorry, I cannot help with that."))
    config = make_config(scripted_llm, max_reasks=2)
    with pytest.raises(InvalidAnswerError, match="no usable function 'add' in 3 answer") as info:
        in_flow(lambda: ask_for_function(config, fix_prompt(), ORIGINAL, "add", "patch"))
    ledger = CostLedger().plus(info.value.calls)
    assert info.value.exit_code == 13
    assert len(info.value.calls) == 3 and len(scripted_llm.requests) == 3
    assert [len(r.messages) for r in scripted_llm.requests] == [1, 3, 5]
    assert ledger.totals().calls == 3 and ledger.totals().cost_usd > 0


def test_a_call_without_answer_is_recorded_on_the_error(scripted_llm):
    scripted_llm.respond_with(lambda r: Fault.server_error(500))
    config = make_config(scripted_llm, max_retries=2)
    with pytest.raises(LLMUnavailableError) as info:
        in_flow(lambda: ask_for_function(config, fix_prompt(), ORIGINAL, "add", "patch"))
    ledger = CostLedger().plus(info.value.calls)
    [call] = info.value.calls
    assert call.error is not None and "HTTP 500" in call.error
    assert (call.model, call.fell_back, call.attempts) == (BACKUP, True, 3)
    assert ledger.totals().failed_calls == 1


# --- logprobs ------------------------------------------------------------------------------------


def test_logprobs_give_the_mean_token_entropy(scripted_llm):
    half = math.log(0.5)
    scripted_llm.enqueue(Reply("ab", logprobs=[[("a", half), ("b", half)], [("b", 0.0)]]))
    config = make_config(scripted_llm, logprobs=True, top_logprobs=3)
    answer = ask(config, "entropy please")
    assert answer.call.mean_entropy == pytest.approx(math.log(2) / 2)
    body = scripted_llm.requests[0].body
    assert body["logprobs"] is True and body["top_logprobs"] == 3


# --- configuration and the ledger (no server) ----------------------------------------------------


def test_config_defaults_follow_the_seeds():
    config = LLMConfig()
    assert (config.temperature, config.top_p, config.logprobs) == (0.2, 0.95, False)
    models = [config.attempt_model(n) for n in (1, 2, 3, 4)]
    assert models == [config.model, config.model, config.backup_model, config.backup_model]
    assert LLMConfig(backup_model=None).attempt_model(5) == config.model
    with pytest.raises(ValidationError):
        LLMConfig(modle="typo")
    with pytest.raises(ValidationError):
        LLMConfig(max_retries=llm_module.RETRY_CEILING + 1)
    assert "sk-secret" not in repr(LLMConfig(api_key="sk-secret"))


def test_from_env():
    assert not llm_available({})
    with pytest.raises(LLMRequestError, match="no LLM endpoint configured") as info:
        LLMConfig.from_env({})
    assert info.value.exit_code == 12

    openai_default = LLMConfig.from_env({"OPENAI_API_KEY": "sk-1"})
    assert openai_default.base_url is None and openai_default.api_key.get_secret_value() == "sk-1"
    assert (openai_default.model, openai_default.backup_model) == ("gpt-4o", "gpt-4o-mini")

    local = LLMConfig.from_env({"OPENAI_BASE_URL": "http://localhost:11434/v1", "EQUISA_MODEL": "qwen"})
    assert llm_available({"OPENAI_BASE_URL": "http://localhost:11434/v1"})
    assert (local.base_url, local.model, local.backup_model) == ("http://localhost:11434/v1", "qwen", None)

    both = LLMConfig.from_env(
        {"OPENAI_API_KEY": "k", "EQUISA_MODEL": "a", "EQUISA_BACKUP_MODEL": "b"}, logprobs=True
    )
    assert (both.model, both.backup_model, both.logprobs) == ("a", "b", True)
    assert LLMConfig.from_env({"OPENAI_API_KEY": "k", "EQUISA_BACKUP_MODEL": "none"}).backup_model is None

    tuned = LLMConfig.from_env({"OPENAI_API_KEY": "k", "EQUISA_LLM_TIMEOUT_S": "7.5",
                                "EQUISA_LLM_MAX_RETRIES": "1", "EQUISA_LLM_BACKOFF_S": "0"})
    assert (tuned.timeout_s, tuned.max_retries, tuned.backoff_s) == (7.5, 1, 0.0)
    with pytest.raises(LLMRequestError, match="EQUISA_LLM_TIMEOUT_S must be a number"):
        LLMConfig.from_env({"OPENAI_API_KEY": "k", "EQUISA_LLM_TIMEOUT_S": "soon"})


def test_the_cache_key_covers_prompt_model_and_sampling():
    base = LLMConfig()
    key = base.cache_key("h")
    assert key != base.cache_key("h2")
    for change in ({"model": "x"}, {"backup_model": "y"}, {"temperature": 0.3}, {"top_p": 0.5},
                   {"logprobs": True}, {"base_url": "http://other/v1"}):
        assert base.model_copy(update=change).cache_key("h") != key, change
    assert base.model_copy(update={"max_reasks": 9, "timeout_s": 1.0}).cache_key("h") == key


def test_the_ledger_counts_cached_failed_and_unpriced_calls_and_charges_only_paid_ones():
    call = LLMCall(purpose="p", model="m", prompt_hash="h", input_tokens=3, output_tokens=2, cost_usd=0.001)
    cached = call.model_copy(update={"cached": True})
    failed = LLMCall(purpose="p", model="m", prompt_hash="h", error="LLMUnavailableError: down")
    unpriced = call.model_copy(update={"cost_usd": None})
    ledger = CostLedger()
    for _ in range(250):
        ledger = ledger.plus([call, cached, failed, unpriced])
    totals = ledger.totals()
    assert (totals.calls, totals.cached_calls) == (1000, 250)
    assert (totals.failed_calls, totals.unpriced_calls) == (250, 250)
    assert (totals.input_tokens, totals.output_tokens) == (500 * 3, 500 * 2)
    assert ledger.usd == pytest.approx(0.25) and len(ledger.paid_calls) == 750
    assert CostLedger.model_validate_json(ledger.model_dump_json()) == ledger


@pytest.mark.parametrize("name", llm_module.__all__)
def test_exported_names_exist(name):
    assert hasattr(llm_module, name)


# --- prices and the cost cap ---------------------------------------------------------------------------


def _options(**values: Any) -> EndpointOptions:
    return EndpointOptions(llm=True, **values)


def test_a_model_the_price_table_knows_needs_no_prices() -> None:
    config = LLMConfig()  # gpt-4o, backup gpt-4o-mini
    assert priced_config(config, _options()) == config


@pytest.mark.parametrize(("model", "backup", "unpriced"), [
    ("qwen", None, "'qwen'"), ("gpt-4o", "local-backup", "'local-backup'"), ("a", "b", "'a', 'b'")])
def test_an_unpriced_model_under_a_cap_is_refused_saying_what_to_do(model: str, backup: str | None,
                                                                    unpriced: str) -> None:
    with pytest.raises(LLMRequestError) as refused:
        priced_config(LLMConfig(model=model, backup_model=backup), _options(max_cost_usd=1.5))
    assert refused.value.exit_code == 12
    message = refused.value.message
    assert f"{unpriced} ha" in message and "no known price" in message and "($1.5)" in message
    assert "--price-input and --price-output" in message and "--max-cost none" in message


def test_given_prices_price_the_unknown_models_and_keep_the_tables() -> None:
    config = priced_config(LLMConfig(model="qwen", backup_model="gpt-4o-mini"),
                           _options(price_input=1.0, price_output=3.0))
    assert config.cost_usd("qwen", 1_000_000, 1_000_000) == 4.0
    assert config.prices["gpt-4o-mini"] == DEFAULT_PRICES["gpt-4o-mini"]


def test_without_a_cap_an_unpriced_model_runs_but_one_price_alone_is_refused() -> None:
    config = LLMConfig(model="qwen", backup_model=None)
    assert priced_config(config, _options(max_cost_usd="none")) == config
    with pytest.raises(LLMRequestError, match="--price-input is given without --price-output"):
        priced_config(config, _options(max_cost_usd="none", price_input=1.0))


def test_choosing_the_mode_refuses_an_unpriced_model_only_when_it_would_be_used(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("EQUISA_MODEL", "qwen")
    assert choose_llm_mode(EndpointOptions(llm=False)) == (False, None, [])
    for wanted in (None, True):  # an endpoint is configured: the model would be used
        with pytest.raises(LLMRequestError, match="'qwen' has no known price"):
            choose_llm_mode(EndpointOptions(llm=wanted))
    use, config, _ = choose_llm_mode(EndpointOptions(price_input=0.1, price_output=0.2))
    assert use and config is not None and config.cost_usd("qwen", 10, 10) == pytest.approx(3e-6)

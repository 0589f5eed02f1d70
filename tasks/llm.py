"""The LLM layer: one Prefect task that asks an OpenAI-compatible endpoint, and what builds on it.

``call_llm`` sends one chat request with the real ``openai`` client (its own retries off) and
returns the answer with an ``LLMCall`` record: model, prompt hash, tokens, cost, latency, attempts,
whether the backup model answered, and the mean token entropy when logprobs were asked for.

Attempts, retries and fallback
    Each Prefect attempt of ``call_llm`` sends exactly one request. Which model it asks depends only
    on the attempt's number (``LLMConfig.attempt_model``): attempts 1..``fallback_after`` ask the
    primary model, later attempts ask the backup model (when one is configured). A transient failure
    (HTTP 429, 408, 409, 5xx, a timeout, a connection error, a body that is not a completion) is
    raised as ``LLMUnavailableError`` and Prefect's own retry machinery runs the next attempt:
    ``retries`` and ``retry_delay_seconds`` (``prefect.tasks.exponential_backoff``, with jitter),
    and a ``retry_condition_fn`` that retries that error only. So with the defaults (4 retries,
    fallback after 2) a call makes at most five requests: primary, primary, backup, backup, backup.
    A 429's Retry-After is honoured: when the next attempt asks the same model, the failing attempt
    waits whatever part of Retry-After the scheduled backoff will not cover (capped at
    ``MAX_RETRY_AFTER_S``). Errors retrying cannot fix (401, 403, 404, 400, 422: bad key, unknown
    model, rejected request) raise ``LLMRequestError`` at once. ``openai`` exceptions are
    translated into these typed errors where the request is made; nothing else escapes.

    The retry budget is ``config.max_retries``. ``llm_task(config)`` returns ``call_llm`` with that
    budget and the config's backoff as Prefect options; ``call_llm`` called directly has a ceiling of
    ``RETRY_CEILING`` retries with a 1 s exponential backoff and still stops after
    ``config.max_retries`` (the attempt marks its error not retryable).

Caching
    The cache key is the prompt hash (``equisa_core.localization.prompts.prompt_hash``), the
    endpoint, both models, temperature, top_p and the logprobs setting (``LLMConfig.cache_key``).
    Only completed answers are cached (Prefect never caches a failed run); a cache hit is marked
    ``cached=True`` by ``ask_for_function`` and costs nothing in a ``CostLedger``
    (``equisa_core.common.cost``).

``ask_for_function`` asks for one function, cleans the answer (``strip_code_fences``), validates it
(``validate_function_answer``: parses, one function, same signature) and re-asks with the rejection
appended to the conversation, at most ``max_reasks`` times; then it raises ``InvalidAnswerError``.
Every error it raises carries the ``LLMCall`` records made so far in ``calls``.

Errors (defined in ``equisa_core.errors``, re-exported here): ``LLMError`` (exit 11) ├──
``LLMUnavailableError`` (11) ├── ``LLMRequestError`` (12) └── ``InvalidAnswerError`` (13).
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import math
import os
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from prefect import Task, task
from prefect.client.schemas.objects import TaskRun
from prefect.context import TaskRunContext
from prefect.states import State
from prefect.tasks import exponential_backoff
from prefect.utilities.math import lower_clamp_multiple
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from equisa_core.common.cost import LLMCall, price_problem
from equisa_core.common.llm_text import (
    InvalidAnswerError,
    LLMError,
    LLMRequestError,
    LLMUnavailableError,
    mean_token_entropy,
    render_reask,
    strip_code_fences,
    validate_function_answer,
)
from equisa_core.common.options import EndpointOptions, cost_cap
from equisa_core.localization.prompts import prompt_hash

__all__ = [
    "failed_call",
    "RETRY_CEILING",
    "MAX_RETRY_AFTER_S",
    "DEFAULT_MODEL",
    "DEFAULT_BACKUP_MODEL",
    "DEFAULT_PRICES",
    "ModelPrice",
    "LLMConfig",
    "LLMAnswer",
    "FunctionAnswer",
    "llm_available",
    "choose_llm_mode",
    "priced_config",
    "require_endpoint",
    "call_llm",
    "llm_task",
    "ask",
    "ask_for_function",
    "LLMError",
    "LLMUnavailableError",
    "LLMRequestError",
    "InvalidAnswerError",
]

#: Retries ``call_llm`` allows at most (the decorator's ``retries``); ``LLMConfig.max_retries`` <= this.
RETRY_CEILING = 10
#: The longest Retry-After (seconds) an attempt waits out; longer requests get the backoff only.
MAX_RETRY_AFTER_S = 60.0
#: Jitter of the retry delays (Prefect's ``retry_jitter_factor``).
RETRY_JITTER = 0.2
DEFAULT_MODEL = "gpt-4o"
DEFAULT_BACKUP_MODEL = "gpt-4o-mini"
_CACHE_VERSION = "call-llm-1"
# HTTP statuses worth another attempt: timeout, conflict, rate limit (and every 5xx).
_TRANSIENT_STATUSES = frozenset({408, 409, 429})


class ModelPrice(BaseModel):
    """A model's list price in USD per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_per_mtok: float = Field(ge=0, description="USD per 1M input (prompt) tokens.")
    output_per_mtok: float = Field(ge=0, description="USD per 1M output (completion) tokens.")

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """input_tokens * input_per_mtok / 1e6 + output_tokens * output_per_mtok / 1e6."""
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1_000_000


#: OpenAI list prices at the time of writing; override ``LLMConfig.prices`` for other models.
DEFAULT_PRICES: dict[str, ModelPrice] = {
    "gpt-4o": ModelPrice(input_per_mtok=2.50, output_per_mtok=10.00),
    "gpt-4o-mini": ModelPrice(input_per_mtok=0.15, output_per_mtok=0.60),
}


class LLMConfig(BaseModel):
    """How to reach the model and how to ask it (seed 001: temperature 0.2, top_p 0.95)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str | None = Field(
        default=None,
        description="The OpenAI-compatible endpoint, e.g. 'http://localhost:11434/v1'; None: OpenAI's.",
    )
    api_key: SecretStr = Field(
        default=SecretStr(""), description="The API key; empty for endpoints that need none."
    )
    model: str = Field(default=DEFAULT_MODEL, min_length=1, description="The primary model.")
    backup_model: str | None = Field(
        default=DEFAULT_BACKUP_MODEL,
        description="The model asked once the primary has failed `fallback_after` attempts; None: none.",
    )
    temperature: float = Field(default=0.2, ge=0, le=2, description="Sampling temperature.")
    top_p: float = Field(default=0.95, gt=0, le=1, description="Nucleus-sampling mass.")
    timeout_s: float = Field(default=120.0, gt=0, description="Seconds one request may take.")
    max_retries: int = Field(
        default=4, ge=0, le=RETRY_CEILING, description="Retries of one call after transient failures."
    )
    fallback_after: int = Field(
        default=2, ge=1, description="Attempts on the primary model before the backup model is asked."
    )
    backoff_s: float = Field(
        default=1.0, ge=0, description="Delay before the first retry; it doubles at each retry."
    )
    max_reasks: int = Field(
        default=2, ge=0, description="Re-asks after a rejected answer (bad code, changed signature)."
    )
    prices: dict[str, ModelPrice] = Field(
        default_factory=lambda: dict(DEFAULT_PRICES),
        description="USD per 1M input/output tokens, per model; calls to other models have no cost.",
    )
    logprobs: bool = Field(default=False, description="Ask for logprobs and record the mean token entropy.")
    top_logprobs: int = Field(default=5, ge=0, le=20, description="Alternatives per token with logprobs.")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> LLMConfig:
        """The configuration from the environment.

        Reads ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``EQUISA_MODEL``, ``EQUISA_BACKUP_MODEL``
        and the numbers ``EQUISA_LLM_TIMEOUT_S``, ``EQUISA_LLM_MAX_RETRIES``, ``EQUISA_LLM_BACKOFF_S``.

        ``EQUISA_BACKUP_MODEL`` set to '' or 'none' means no backup. A custom ``EQUISA_MODEL``
        without ``EQUISA_BACKUP_MODEL`` gets no backup (the default backup may not exist on that
        endpoint). ``overrides`` set any other field. Raises LLMRequestError when neither a key nor
        an endpoint is configured.
        """
        env = os.environ if env is None else env
        if not llm_available(env):
            raise LLMRequestError(
                "no LLM endpoint configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for an endpoint "
                "other than OpenAI's)"
            )
        values: dict[str, Any] = {
            "api_key": SecretStr(env.get("OPENAI_API_KEY", "").strip()),
            "base_url": env.get("OPENAI_BASE_URL", "").strip() or None,
        }
        model = env.get("EQUISA_MODEL", "").strip()
        if model:
            values["model"] = model
        if "EQUISA_BACKUP_MODEL" in env:
            backup = env["EQUISA_BACKUP_MODEL"].strip()
            values["backup_model"] = None if backup.lower() in ("", "none") else backup
        elif model:
            values["backup_model"] = None
        for name, field in _NUMERIC_SETTINGS.items():
            text = env.get(name, "").strip()
            if text:
                try:
                    values[field] = float(text) if field != "max_retries" else int(text)
                except ValueError:
                    raise LLMRequestError(f"{name} must be a number, got {text!r}") from None
        values.update(overrides)
        return cls(**values)

    def attempt_model(self, attempt: int) -> str:
        """The model attempt number ``attempt`` (1-based) asks: the backup after ``fallback_after``."""
        if self.backup_model and attempt > self.fallback_after:
            return self.backup_model
        return self.model

    def cost_usd(self, model: str, input_tokens: int | None, output_tokens: int | None) -> float | None:
        """The call's cost from ``prices``; None when the model has no price or usage is unknown."""
        price = self.prices.get(model)
        if price is None or input_tokens is None or output_tokens is None:
            return None
        return price.cost(input_tokens, output_tokens)

    def cache_key(self, messages_hash: str) -> str:
        """The cache key of a call: prompt hash, endpoint, models and sampling settings."""
        parts = [
            _CACHE_VERSION, messages_hash, self.base_url or "", self.model, self.backup_model or "",
            self.fallback_after, self.temperature, self.top_p, self.logprobs,
            self.top_logprobs if self.logprobs else 0,
        ]
        return "call-llm-" + hashlib.sha256(json.dumps(parts).encode()).hexdigest()


#: Environment variables for ``LLMConfig``'s numeric settings -> field.
_NUMERIC_SETTINGS = {
    "EQUISA_LLM_TIMEOUT_S": "timeout_s",
    "EQUISA_LLM_MAX_RETRIES": "max_retries",
    "EQUISA_LLM_BACKOFF_S": "backoff_s",
}


def llm_available(env: Mapping[str, str] | None = None) -> bool:
    """Whether an endpoint is configured: ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is set."""
    env = os.environ if env is None else env
    return bool(env.get("OPENAI_API_KEY", "").strip() or env.get("OPENAI_BASE_URL", "").strip())


def require_endpoint(env: Mapping[str, str] | None = None) -> None:
    """For ``--llm``: raise ``LLMRequestError`` (exit 12) when no endpoint is configured, rather
    than run deterministically when the model was asked for."""
    if not llm_available(env):
        raise LLMRequestError("--llm asks for the model, but no endpoint is configured: set OPENAI_API_KEY "
                              "(and OPENAI_BASE_URL for an endpoint other than OpenAI's), or use --no-llm")


def choose_llm_mode(options: EndpointOptions) -> tuple[bool, LLMConfig | None, list[str]]:
    """Whether to use the model, its configuration (with ``options``' prices), and the problems met
    deciding.

    ``options.llm`` None means "when an endpoint is configured": an endpoint whose configuration is
    unusable then does not stop the run (it runs deterministically and says why). ``llm`` True
    (``--llm``) with no endpoint, or an unusable one, is ``LLMRequestError``; so is a model the run
    would use whose spending its cost cap cannot follow (``priced_config``).
    """
    wanted = options.llm
    if wanted:
        require_endpoint()
    use = llm_available() if wanted is None else wanted
    if not use:
        return False, None, []
    try:
        config = LLMConfig.from_env()
    except Exception as error:  # any bad setting: report it, run without the model
        if wanted:
            raise LLMRequestError(f"--llm asks for the model, but its settings are unusable: {error}",
                                  ) from None
        return False, None, [f"LLM mode unavailable ({error}); ran deterministically"]
    return True, priced_config(config, options), []


def priced_config(config: LLMConfig, options: EndpointOptions) -> LLMConfig:
    """``config`` with ``options``' prices (``price_input``, ``price_output``: USD per million tokens)
    for each model it may ask (the primary, the backup) that its price table does not know.

    Raises ``LLMRequestError`` (exit 12) when one of those models still has no price and the run has
    a cost cap (``options.max_cost_usd`` not ``none``), or when only one of the two prices is given.
    """
    models = (config.model, config.backup_model)
    problem = price_problem(models, config.prices, cost_cap(options.max_cost_usd), options.price_input,
                            options.price_output)
    if problem is not None:
        raise LLMRequestError(problem)
    if options.price_input is None or options.price_output is None:
        return config
    given = ModelPrice(input_per_mtok=options.price_input, output_per_mtok=options.price_output)
    added = {m: given for m in models if m and m not in config.prices}
    return config.model_copy(update={"prices": {**config.prices, **added}}) if added else config


class LLMAnswer(BaseModel):
    """A model's answer text and the record of the call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    call: LLMCall


class FunctionAnswer(BaseModel):
    """A validated function from ``ask_for_function`` and every call it took (re-asks included)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str = Field(description="The function's source: one definition, the original signature.")
    calls: tuple[LLMCall, ...]

    @property
    def reasks(self) -> int:
        """How many times the model had to be asked again."""
        return len(self.calls) - 1


# --- one request ---------------------------------------------------------------------------------


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date); None if absent."""
    try:
        if "retry-after-ms" in headers:
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            seconds = float(value)
        except ValueError:
            seconds = (email.utils.parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds()
        return max(0.0, seconds) if math.isfinite(seconds) else None
    except (TypeError, ValueError, OverflowError):
        return None


def _translate(exc: Exception, config: LLMConfig, model: str, attempt: int) -> LLMError:
    """The typed error for an ``openai`` (or decoding) exception raised by one request."""
    import openai

    where = config.base_url or "the OpenAI API"

    def transient(message: str, status: int | None = None, retry_after: float | None = None) -> LLMError:
        return LLMUnavailableError(
            message, model=model, attempt=attempt, status_code=status, retry_after=retry_after
        )

    if isinstance(exc, openai.APITimeoutError):
        return transient(f"model {model!r} at {where} did not answer within {config.timeout_s:g}s")
    if isinstance(exc, openai.APIConnectionError):
        return transient(f"cannot reach {where}: {exc.__cause__ or exc}")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        detail = f"HTTP {status} from {where} for model {model!r}: {exc.message}"
        if status in _TRANSIENT_STATUSES or status >= 500:
            return transient(detail, status, _retry_after(exc.response.headers))
        return LLMRequestError(detail, status_code=status)
    if isinstance(exc, openai.APIResponseValidationError | ValueError):
        return transient(f"unreadable response from {where} for model {model!r}: {exc}")
    return LLMRequestError(f"the request to {where} for model {model!r} failed: {exc}")


def _token_alternatives(choice: Any) -> list[list[float]] | None:
    """Per answer token, the logprobs of its alternatives (the chosen token included once)."""
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        return None
    tokens = []
    for item in content:
        alternatives = {top.token: top.logprob for top in item.top_logprobs or ()}
        alternatives.setdefault(item.token, item.logprob)
        tokens.append(list(alternatives.values()))
    return tokens


def _request(
    config: LLMConfig, messages: Sequence[Mapping[str, str]], purpose: str, model: str, attempt: int
) -> LLMAnswer:
    """Send one chat request; the answer, or a typed error."""
    # Imported here: deterministic runs (most runs) never load the client, a third of a second.
    import openai
    from openai.types.chat import ChatCompletion

    kwargs: dict[str, Any] = {
        "model": model,
        "messages": [dict(m) for m in messages],
        "temperature": config.temperature,
        "top_p": config.top_p,
    }
    if config.logprobs:
        kwargs.update(logprobs=True, top_logprobs=config.top_logprobs)
    started = time.monotonic()
    try:
        with openai.OpenAI(
            base_url=config.base_url,
            api_key=config.api_key.get_secret_value() or "EMPTY",
            timeout=config.timeout_s,
            max_retries=0,
        ) as client:
            completion = client.chat.completions.create(**kwargs)
    except (openai.OpenAIError, ValueError) as exc:
        raise _translate(exc, config, model, attempt) from exc
    latency = time.monotonic() - started
    if not isinstance(completion, ChatCompletion) or not completion.choices:
        raise LLMUnavailableError(
            f"unreadable response from {config.base_url or 'the OpenAI API'} for model {model!r}: "
            "no completion choices",
            model=model,
            attempt=attempt,
        )
    choice = completion.choices[0]
    usage = completion.usage
    input_tokens = usage.prompt_tokens if usage is not None else None
    output_tokens = usage.completion_tokens if usage is not None else None
    alternatives = _token_alternatives(choice) if config.logprobs else None
    call = LLMCall(
        purpose=purpose,
        model=model,
        prompt_hash=prompt_hash(messages),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=config.cost_usd(model, input_tokens, output_tokens),
        latency_s=latency,
        attempts=attempt,
        fell_back=model != config.model,
        mean_entropy=mean_token_entropy(alternatives) if alternatives else None,
        finish_reason=choice.finish_reason,
        at=datetime.now(UTC),
    )
    return LLMAnswer(text=choice.message.content or "", call=call)


# --- the Prefect task ----------------------------------------------------------------------------


def _cache_key(context: Any, parameters: dict[str, Any]) -> str:
    config: LLMConfig = parameters["config"]
    return config.cache_key(prompt_hash(parameters["messages"]))


def _transient_only(task: Task[..., Any], task_run: TaskRun, state: State[Any]) -> bool:
    """Retry only a transient failure that the failing attempt marked retryable."""
    try:
        state.result(raise_on_failure=True)
    except LLMUnavailableError as exc:
        return exc.retryable
    except Exception:
        return False
    return False


def _attempt_and_retries(config: LLMConfig) -> tuple[int, int, TaskRunContext | None]:
    """(this attempt's 1-based number, the retries allowed, the task-run context)."""
    context = TaskRunContext.get()
    if context is None:
        return 1, 0, None
    return max(context.task_run.run_count, 1), min(config.max_retries, context.task.retries), context


def _scheduled_delay_floor(context: TaskRunContext, attempt: int) -> float:
    """The shortest delay Prefect may schedule before attempt ``attempt + 1`` (jitter included)."""
    delays = context.task.retry_delay_seconds
    if not delays:
        return 0.0
    delay = float(delays[min(attempt - 1, len(delays) - 1)] if isinstance(delays, list) else delays)
    jitter = context.task.retry_jitter_factor
    return delay * lower_clamp_multiple(1 + jitter) if jitter and delay > 0 else delay


@task(
    name="call-llm",
    task_run_name="call-llm {purpose}",
    cache_key_fn=_cache_key,
    cache_expiration=timedelta(days=30),
    persist_result=True,
    retries=RETRY_CEILING,
    retry_delay_seconds=exponential_backoff(backoff_factor=1.0),
    retry_jitter_factor=RETRY_JITTER,
    retry_condition_fn=_transient_only,
)
def call_llm(config: LLMConfig, messages: list[dict[str, str]], purpose: str = "llm") -> LLMAnswer:
    """Ask the model once per attempt; retried on transient errors, falling back to the backup model.

    The attempt number picks the model (``LLMConfig.attempt_model``); see the module docstring for
    the retry, fallback and caching design. Raises LLMUnavailableError when every attempt failed
    transiently, LLMRequestError at once when the request cannot succeed.
    """
    attempt, retries, context = _attempt_and_retries(config)
    model = config.attempt_model(attempt)
    try:
        return _request(config, messages, purpose, model, attempt)
    except LLMUnavailableError as exc:
        exc.retryable = attempt <= retries
        same_model_next = config.attempt_model(attempt + 1) == model
        if exc.retryable and exc.retry_after and context is not None and same_model_next:
            wait = min(exc.retry_after, MAX_RETRY_AFTER_S) - _scheduled_delay_floor(context, attempt)
            if wait > 0:
                time.sleep(wait)
        raise


def llm_task(config: LLMConfig) -> Task[..., LLMAnswer]:
    """``call_llm`` with the retry budget (``max_retries``) and backoff (``backoff_s``) of ``config``."""
    return call_llm.with_options(
        retries=config.max_retries,
        retry_delay_seconds=exponential_backoff(backoff_factor=config.backoff_s),
    )


# --- asking for a function -----------------------------------------------------------------------


def failed_call(
    exc: LLMError, config: LLMConfig, messages: Sequence[Mapping[str, str]], purpose: str
) -> LLMCall:
    """The record of a call that got no answer."""
    model = exc.model if isinstance(exc, LLMUnavailableError) and exc.model else config.model
    attempts = exc.attempt if isinstance(exc, LLMUnavailableError) else 1
    return LLMCall(
        purpose=purpose,
        model=model,
        prompt_hash=prompt_hash(messages),
        attempts=attempts,
        fell_back=model != config.model,
        error=f"{type(exc).__name__}: {exc.message}",
        at=datetime.now(UTC),
    )


def _ask(
    llm: Task[..., LLMAnswer], config: LLMConfig, messages: list[dict[str, str]], purpose: str
) -> LLMAnswer:
    """Run the task; a cache hit comes back with ``cached=True``."""
    state = llm(config, messages, purpose, return_state=True)
    answer: LLMAnswer = state.result(raise_on_failure=True)
    if state.name == "Cached":
        answer = answer.model_copy(update={"call": answer.call.model_copy(update={"cached": True})})
    return answer


def ask(config: LLMConfig, messages: list[dict[str, str]], purpose: str) -> LLMAnswer:
    """One call with the config's retries (``llm_task``); a cache hit comes back with ``cached=True``
    (its ``cost_usd`` is what the original call cost: nothing was spent this time)."""
    return _ask(llm_task(config), config, messages, purpose)


def ask_for_function(
    config: LLMConfig,
    messages: Sequence[Mapping[str, str]],
    original_source: str,
    qualname: str,
    purpose: str,
) -> FunctionAnswer:
    """Ask for a new version of ``qualname`` (in ``original_source``) until one is valid.

    Each answer is cleaned (``strip_code_fences``) and validated (``validate_function_answer``);
    a rejected answer is handed back with the reason (``render_reask``), at most
    ``config.max_reasks`` times. The answer carries every call made (``calls``); so does the
    InvalidAnswerError raised after the last rejected answer, or the LLMError of a call that got
    no answer.
    """
    llm = llm_task(config)
    conversation = [dict(m) for m in messages]
    calls: list[LLMCall] = []
    error = ""
    answer_text = ""
    for round_ in range(config.max_reasks + 1):
        label = purpose if round_ == 0 else f"{purpose} re-ask {round_}"
        try:
            answer = _ask(llm, config, conversation, label)
        except LLMError as exc:
            failed = failed_call(exc, config, conversation, label)
            calls.append(failed)
            exc.calls = tuple(calls)
            raise
        calls.append(answer.call)
        answer_text = answer.text
        try:
            source = validate_function_answer(strip_code_fences(answer.text), original_source, qualname)
        except InvalidAnswerError as exc:
            error = exc.message
            conversation = render_reask(conversation, answer.text, error, qualname)
            continue
        return FunctionAnswer(source=source, calls=tuple(calls))
    raise InvalidAnswerError(
        f"the model gave no usable function {qualname!r} in {len(calls)} answer(s); last: {error}",
        answer=answer_text,
        calls=calls,
    )

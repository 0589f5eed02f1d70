"""The model in a testgen run: one call (``ask``, a Prefect task with the config's retries), the
model as the core's §8 helpers call it (``asker``), the test module in an answer (``usable``), and
the generator's prompt with the stored tests most similar to the uncovered lines
(``generator_prompt``).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from equisa_core.errors import EquisaError
from equisa_core.testgen.modules import clean_generated_module
from equisa_core.testgen.prompts import render_generator
from tasks.test_store import TestStore, embed_texts
from tasks.testgen_context import TestgenContext

__all__ = ["ask", "asker", "generator_prompt", "usable"]


def ask(ctx: TestgenContext, messages: list[dict[str, str]], purpose: str, calls: list) -> str | None:
    """One model call (Prefect task with the config's retries); None, with the problem noted, on failure.

    Logprobs are asked for the generator and the enhancer (their entropy sets the pre-execution
    level) unless ``LLM_COLLECT_LOGPROBS`` (the seed's switch) is ``false``.
    """
    from tasks.llm import LLMError
    from tasks.llm import ask as ask_model

    wanted = os.environ.get("LLM_COLLECT_LOGPROBS", "true").strip().lower() not in ("0", "false", "no")
    logprobs = wanted and purpose in ("testgen-generator", "testgen-enhancer")
    config = ctx.config.model_copy(update={"logprobs": logprobs})
    try:
        answer = ask_model(config, messages, purpose)
    except LLMError as error:
        ctx.problems.append(f"{purpose}: {error.message}")
        calls.extend(getattr(error, "calls", ()) or ())
        return None
    calls.append(answer.call)
    return answer.text


def asker(ctx: TestgenContext, calls: list) -> Callable[[list[dict[str, str]], str], str | None] | None:
    """The model as the core's §8 helpers call it; None in deterministic mode."""
    if not ctx.use_llm:
        return None
    return lambda messages, purpose: ask(ctx, messages, purpose, calls)


def usable(ctx: TestgenContext, text: str | None, role: str) -> str | None:
    """The test module in the model's answer; None (the problem noted) when there is none."""
    if text is None:
        return None
    try:
        return clean_generated_module(text)
    except EquisaError as error:
        ctx.problems.append(f"{role} answer unusable: {error.args[0] if error.args else error}")
        return None


def generator_prompt(ctx: TestgenContext, store: TestStore) -> list[dict[str, str]]:
    """The seed's generator prompt, with the stored tests most similar to the uncovered lines."""
    uncovered = list(ctx.baseline.missing_lines) if ctx.baseline else []
    lines = ctx.target_source.splitlines()
    query = (
        "\n".join(lines[line - 1] for line in uncovered[:40] if line <= len(lines))
        if uncovered
        else ctx.target_source
    )
    vectors, _, _ = embed_texts([query], ctx.config)
    examples = [code for _, code, _ in store.most_similar(vectors[0], 3)] if vectors else []
    return render_generator(
        ctx.prepared.repo.name,
        "HEAD",
        ctx.target,
        ctx.target_source,
        ctx.framework.framework,
        uncovered,
        examples,
        specification=ctx.params.specification,
        focus=ctx.params.focus,
    )

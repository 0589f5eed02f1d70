"""The model in a testgen run: one call (``ask``, a Prefect task with the config's retries), the
model as the core's §8 helpers call it (``asker``), the test module in an answer (``usable``), and
the generator's prompt with the stored tests most similar to the uncovered lines
(``generator_prompt``).

An ask returns a ``ModelReply`` (``equisa_core.testgen.curation``): the answer's text with the
calls it took and the problems it met, which the step runner puts on its observation.
"""

from __future__ import annotations

import os

from equisa_core.errors import EquisaError
from equisa_core.testgen.curation import Ask, ModelReply
from equisa_core.testgen.modules import clean_generated_module
from equisa_core.testgen.prompts import render_generator
from tasks.testgen.context import TestgenContext
from tasks.testgen.test_store import TestStore, embed_texts

__all__ = ["ask", "asker", "generator_prompt", "usable"]


def ask(ctx: TestgenContext, messages: list[dict[str, str]], purpose: str) -> ModelReply:
    """One model call (Prefect task with the config's retries): the reply with its call; on failure
    no text, the failed calls and the problem.

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
        return ModelReply(calls=tuple(error.calls), problems=(f"{purpose}: {error.message}",))
    return ModelReply(text=answer.text, calls=(answer.call,))


def asker(ctx: TestgenContext) -> Ask | None:
    """The model as the core's §8 helpers call it; None in deterministic mode."""
    if not ctx.use_llm:
        return None
    return lambda messages, purpose: ask(ctx, messages, purpose)


def usable(reply: ModelReply, role: str) -> ModelReply:
    """The reply with the test module in its answer as its text; no text (and the problem added)
    when there is none."""
    if reply.text is None:
        return reply
    try:
        return reply.model_copy(update={"text": clean_generated_module(reply.text)})
    except EquisaError as error:
        problem = f"{role} answer unusable: {error.args[0] if error.args else error}"
        return reply.model_copy(update={"text": None, "problems": (*reply.problems, problem)})


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

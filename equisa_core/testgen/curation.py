"""The seed 000 §8 pipeline's decisions: redundant tests, and test smells fixed within a budget.

No I/O here: the similarity search (the DuckDB store) and the model calls belong to the step
runners (``tasks/testgen/steps.py``), which pass the nearest stored test of each new test, and an
``ask`` function (messages, purpose) -> a ``ModelReply``: the answer's text or None, with the calls
it took and the problems it met (LLM mode only; None in deterministic mode). The helpers that ask
return what all their asks took (``ModelUse``) with their result: no call is noted on the side.

- ``find_redundant``: the new tests whose nearest stored test is at least as similar as the
  threshold;
- ``drop_redundant`` (deterministic mode) drops them; ``rewrite_redundant`` (LLM mode) asks the
  model to rewrite the first three toward uncovered lines;
- ``improve_smells``: detect smells (plus the model's critic), fix them (the model's rewrite, else
  ``smells.fix_smells``), at most ``budget`` rounds, stopping when nothing is found or changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from equisa_core.common.cost import LLMCall
from equisa_core.common.loop import Frozen
from equisa_core.errors import EquisaError
from equisa_core.testgen.assembly import append_tests
from equisa_core.testgen.modules import clean_generated_module, keep_tests, list_tests
from equisa_core.testgen.prompts import render_redundant_rewrite, render_smell_critic, render_smell_fix
from equisa_core.testgen.report import PipelineNotes
from equisa_core.testgen.smells import detect_smells, fix_smells

__all__ = [
    "REDUNDANCY_THRESHOLD",
    "Ask",
    "ModelReply",
    "ModelUse",
    "Redundant",
    "drop_redundant",
    "find_redundant",
    "improve_smells",
    "rewrite_redundant",
]


class ModelUse(Frozen):
    """What asking the model took and met: the calls made and the problems noted, in order."""

    calls: tuple[LLMCall, ...] = ()
    problems: tuple[str, ...] = ()

    def plus(self, other: ModelUse) -> ModelUse:
        """This use followed by ``other``."""
        return ModelUse(calls=self.calls + other.calls, problems=self.problems + other.problems)


class ModelReply(ModelUse):
    """One ask of the model: the answer's text (None when it gave none), its calls and problems."""

    text: str | None = None


#: (messages, purpose) -> the model's reply (its text None when it gave none).
Ask = Callable[[list[dict[str, str]], str], ModelReply]
#: (test name, the similar stored test's code, cosine similarity)
Redundant = tuple[str, str, float]

#: Cosine similarity above which a new test counts as redundant with a stored one. The local
#: embedding is lexical (two tests differing in one literal score about 0.96), so it flags only
#: near-identical text; an endpoint's semantic embedding uses the usual 0.95.
REDUNDANCY_THRESHOLD = {"local": 0.995, "endpoint": 0.95}
#: Redundant tests the model is asked to rewrite, per attempt.
MAX_REWRITES = 3
#: Lines of the critic's answer kept.
MAX_CRITIC_LINES = 10


def find_redundant(
    names: Sequence[str], nearest: Sequence[tuple[str, float] | None], threshold: float
) -> list[Redundant]:
    """The tests whose nearest stored test (its code and similarity; None: the store is empty) is at
    least ``threshold`` similar, in order."""
    return [
        (name, found[0], found[1])
        for name, found in zip(names, nearest, strict=True)
        if found is not None and found[1] >= threshold
    ]


def drop_redundant(
    source: str, redundant: Sequence[Redundant], notes: PipelineNotes
) -> tuple[str, PipelineNotes]:
    """Deterministic mode: ``source`` without the redundant tests (unless that leaves none)."""
    drop = {name for name, _, _ in redundant}
    lines = [f"{n}: similarity {s:.3f} to an existing test; dropped" for n, _, s in redundant]
    remaining = [t for t in list_tests(source) if t not in drop]
    kept = keep_tests(source, remaining) if remaining else source
    return kept, notes.model_copy(update={"redundant": [*notes.redundant, *lines]})


def rewrite_redundant(
    source: str,
    tests: Mapping[str, str],
    redundant: Sequence[Redundant],
    notes: PipelineNotes,
    ask: Ask,
    *,
    target: str,
    target_source: str,
    uncovered: Sequence[int],
) -> tuple[str, PipelineNotes, ModelUse]:
    """LLM mode: each of the first ``MAX_REWRITES`` redundant tests replaced by the model's rewrite
    toward the uncovered lines (kept when it gives no usable answer); and what the asks took."""
    lines = list(notes.redundant)
    use = ModelUse()
    for name, similar_code, score in redundant[:MAX_REWRITES]:
        prompt = render_redundant_rewrite(target, target_source, uncovered, similar_code, tests[name], score)
        reply = ask(prompt, "testgen-redundant")
        use, text = use.plus(reply), reply.text
        lines.append(
            f"{name}: similarity {score:.3f}; " + ("rewritten by the model" if text else "kept (no answer)")
        )
        if not text:
            continue
        try:
            rewritten = clean_generated_module(text)
            source = keep_tests(source, [t for t in list_tests(source) if t != name])
            source = append_tests(source, rewritten, suffix=f"_r{len(lines)}")
        except EquisaError as error:
            lines[-1] += f" (unusable rewrite: {error.args[0] if error.args else error})"
    return source, notes.model_copy(update={"redundant": lines}), use


def _critic_lines(ask: Ask | None, source: str) -> tuple[list[str], ModelUse]:
    """The model critic's smells (one a line), [] when it finds none or does not answer."""
    if ask is None:
        return [], ModelUse()
    reply = ask(render_smell_critic(source), "testgen-smell-critic")
    answer, use = reply.text, ModelUse().plus(reply)
    if not answer or answer.strip().upper() == "NO SMELLS":
        return [], use
    return [line.strip() for line in answer.strip().splitlines() if line.strip()][:MAX_CRITIC_LINES], use


def _model_fix(ask: Ask | None, source: str, found: list[str]) -> tuple[str | None, ModelUse]:
    """The model's rewrite of ``source`` without the smells ``found``; None when unusable."""
    if ask is None:
        return None, ModelUse()
    reply = ask(render_smell_fix(source, found), "testgen-smell-fix")
    use = ModelUse().plus(reply)
    if not reply.text:
        return None, use
    try:
        return clean_generated_module(reply.text), use
    except EquisaError:
        return None, use


def improve_smells(
    source: str, notes: PipelineNotes, budget: int, ask: Ask | None
) -> tuple[str, PipelineNotes, ModelUse]:
    """``source`` after at most ``budget`` smell-fixing rounds (module docstring), the notes, and
    what the model's asks took."""
    notes = notes.model_copy(deep=True)
    use = ModelUse()
    for _ in range(budget + 1):
        smells = detect_smells(source)
        critic, asked = _critic_lines(ask, source)
        use = use.plus(asked)
        notes.critic += critic
        found = [f"{s.test}: {s.kind}" for s in smells] + critic
        if not found:
            break
        if notes.smell_rounds == 0:
            notes.smells_found = found
        if notes.smell_rounds >= budget:
            break
        notes.smell_rounds += 1
        before = source
        rewritten, asked = _model_fix(ask, source, found)
        use = use.plus(asked)
        if rewritten is not None:
            source = rewritten
            notes.smells_fixed.append(f"round {notes.smell_rounds}: the model rewrote the module")
        if source == before:
            source, done = fix_smells(source, smells)
            notes.smells_fixed += done
        if source == before:
            break
    return source, notes, use

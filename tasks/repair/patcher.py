"""The multi-retrieval patcher of seed 004: analyse, retrieve, patch, evaluate, until sound or out of budget.

``run_patcher`` drives one conversation with the model (``call_llm``: retries, the backup model
after the primary's failures, cost per call):

* ANALYZE_ISSUE: the first message gives the instructions and the issue (target, its source, the
  failing tests, their output, the reflection); the model analyses it and plans its exploration.
  After a failed evaluation the feedback asks for this analysis again.
* RETRIEVE: each answer holding ``<grep>`` / ``<file>`` queries has them run
  (``equisa_core.repair.retrieval.retrieve``: grep, AST-augmented grep and file ranges in parallel,
  prioritised and de-duplicated) and the snippets fed back; an answer with neither queries nor
  patches is reminded of the two.
* EVALUATE: an answer holding ``<patches>`` is parsed, located in the original files, applied and
  compiled (``equisa_core.repair.patch_format``). A patch that does not apply or compile is fed back at
  once (it costs a turn, not an evaluation); one that compiles becomes a ``PatchCandidate`` and is
  handed to ``evaluate``, the caller's callback, which runs it in sandboxes: this module never runs
  the repository's code. Its ``PatchEvaluation`` is fed back.
* DONE: a SOUND evaluation, ``max_evaluations`` calls of ``evaluate``, ``max_turns`` model
  calls, or a model call that failed for good (``stop_reason`` says which).

Patches always apply to the original files in ``workspace_root`` (read, never written): a new
patch is a new attempt, not an edit of the last one.

Grep runs on ripgrep when ``rg`` is installed (``ripgrep_search``) and on the pure-Python
``equisa_core.repair.retrieval.python_grep`` otherwise; both give the same hits.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import threading
from collections.abc import Callable
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.cost import LLMCall
from equisa_core.repair.patch_format import build_patch_candidate, has_patches
from equisa_core.repair.prompts import (
    render_analyze_issue,
    render_evaluation_feedback,
    render_no_action,
    render_retrieval_results,
)
from equisa_core.repair.retrieval import (
    GENERATED_TESTS_DIR,
    MAX_FILE_BYTES,
    SKIP_DIR_NAMES,
    GrepHit,
    RetrievalLimits,
    SearchFn,
    parse_queries,
    python_grep,
    retrieve,
)
from equisa_core.validation.candidates import PatchCandidate, PatchEvaluation, PatchStatus
from tasks.llm import LLMConfig, LLMError, failed_call, llm_task

# The task layer's own helpers for one call (cache-hit marking, the record of a failed call).
from tasks.llm import _ask as ask_llm

__all__ = [
    "PatchAction",
    "PatcherIssue",
    "PatcherTurn",
    "PatcherResult",
    "StopReason",
    "Evaluate",
    "RIPGREP_TIMEOUT_S",
    "ripgrep_search",
    "default_search",
    "run_patcher",
]

#: Seconds one ripgrep search may take before it is killed (and the Python search used instead).
RIPGREP_TIMEOUT_S = 30.0

StopReason = Literal["sound", "evaluation_limit", "turn_limit", "llm_error"]
#: The caller's evaluation of a candidate (sandboxed runs); its exceptions propagate.
Evaluate = Callable[[PatchCandidate], PatchEvaluation]


class PatchAction(StrEnum):
    """Seed 004's actions."""

    ANALYZE_ISSUE = "ANALYZE_ISSUE"
    RETRIEVE = "RETRIEVE"
    EVALUATE = "EVALUATE"
    DONE = "DONE"


class PatcherIssue(BaseModel):
    """What the patcher is told about the bug."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    target: str | None = Field(description="FQN of the localized function; None when not localized.")
    target_file: str | None = Field(None, description="Relative '/'-path of the target's file, when known.")
    source: str = Field("", description="The localized function's source.")
    failing_tests: tuple[str, ...] = Field((), description="Node ids of the failing tests.")
    test_output: str = Field("", description="Their output: assertion messages and tracebacks.")
    reflection: str = Field("", description="The Localization loop's reflection on the target.")


class PatcherTurn(BaseModel):
    """One model call and what came of it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    number: int = Field(ge=1)
    action: PatchAction = Field(description="What the model was asked: ANALYZE_ISSUE or RETRIEVE.")
    queries: tuple[str, ...] = Field((), description="The retrieval queries it asked, as written.")
    failed_queries: tuple[str, ...] = Field((), description="'query: reason' for those that found nothing.")
    snippets: int = Field(0, ge=0, description="Snippets fed back.")
    candidate: str | None = Field(None, description="The id of the patch it proposed, if it did.")
    status: PatchStatus | None = Field(None, description="The proposed patch's status.")
    evaluated: bool = Field(False, description="Whether `evaluate` ran (not for patches that do not "
                                               "apply or compile).")
    next_action: PatchAction = Field(description="What followed: ANALYZE_ISSUE, RETRIEVE or DONE.")
    call: LLMCall


class PatcherResult(BaseModel):
    """Everything one patcher run did."""

    model_config = ConfigDict(extra="forbid")

    accepted: PatchCandidate | None = Field(None, description="The SOUND candidate, if any.")
    candidates: list[PatchCandidate] = Field(
        default_factory=list, description="Candidates handed to `evaluate` (they applied and compiled)."
    )
    evaluations: list[PatchEvaluation] = Field(
        default_factory=list,
        description="One per proposed patch, in order: local rejections (DOES_NOT_APPLY, "
                    "DOES_NOT_COMPILE, whose ids have no candidate) and the callback's verdicts.",
    )
    turns: list[PatcherTurn] = Field(default_factory=list)
    calls: list[LLMCall] = Field(default_factory=list, description="Every model call, failed ones included.")
    cost_usd: float = Field(0.0, ge=0, description="USD over all calls (unpriced and cached ones cost 0).")
    evaluations_used: int = Field(0, ge=0, description="Calls of `evaluate`.")
    stop_reason: StopReason
    error: str | None = Field(None, description="The model error that stopped the run, if one did.")
    messages: list[dict[str, str]] = Field(default_factory=list, description="The whole conversation.")


# --- grep on ripgrep -----------------------------------------------------------------------------


def _rg_text(field: dict[str, Any]) -> str:
    if "text" in field:
        return str(field["text"])
    return base64.b64decode(field.get("bytes", "")).decode("utf-8", errors="replace")


def _ripgrep_command(rg: str, term: str) -> list[str]:
    """The ``rg`` invocation whose hits equal ``python_grep``'s (see its docstring)."""
    return [
        rg, "--json", "--fixed-strings", "--case-sensitive", "--hidden", "--no-ignore", "--no-config",
        "--no-messages", "--encoding", "none", "--sort", "path", "--max-filesize", str(MAX_FILE_BYTES),
        "--glob", "*.py",
        *(f"--glob=!{name}" for name in sorted(SKIP_DIR_NAMES)),
        f"--glob=!/{GENERATED_TESTS_DIR}",
        "--", term, ".",
    ]


def ripgrep_search(root: Path, term: str, limit: int, *, rg: str = "rg") -> list[GrepHit]:
    """``python_grep`` run by ripgrep: the same hits, in the same order, faster on large trees.

    Stops ripgrep once ``limit`` hits are read. Falls back to ``python_grep`` when ripgrep cannot
    run, fails (exit status 2 without hits) or takes longer than ``RIPGREP_TIMEOUT_S``.
    """
    if not term or limit <= 0:
        return []
    try:
        process = subprocess.Popen(
            _ripgrep_command(rg, term), cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
    except OSError:
        return python_grep(root, term, limit)
    timer = threading.Timer(RIPGREP_TIMEOUT_S, process.kill)
    timer.start()
    hits: list[GrepHit] = []
    stopped = False
    try:
        assert process.stdout is not None
        for raw in process.stdout:
            event = json.loads(raw)
            if event.get("type") != "match":
                continue
            data = event["data"]
            path = _rg_text(data["path"]).removeprefix("./")
            line = _rg_text(data["lines"]).removesuffix("\n").removesuffix("\r")
            hits.append(GrepHit(path=path, line=int(data["line_number"]), text=line))
            if len(hits) >= limit:
                stopped = True
                process.kill()
                break
    finally:
        timer.cancel()
        if process.stdout is not None:
            process.stdout.close()
        returncode = process.wait()
    timed_out = returncode < 0 and not stopped
    if timed_out or (returncode not in (0, 1) and not stopped and not hits):
        return python_grep(root, term, limit)
    return hits


def default_search() -> SearchFn:
    """ripgrep when ``rg`` is on the PATH, else the pure-Python search."""
    rg = shutil.which("rg")
    return partial(ripgrep_search, rg=rg) if rg else python_grep


# --- the loop ------------------------------------------------------------------------------------


def run_patcher(
    config: LLMConfig,
    issue: PatcherIssue,
    workspace_root: Path,
    evaluate: Evaluate,
    *,
    max_evaluations: int = 3,
    max_turns: int = 12,
    search: SearchFn | None = None,
    limits: RetrievalLimits | None = None,
    id_prefix: str = "patcher",
    allow_test_edits: bool = False,
) -> PatcherResult:
    """Fix ``issue`` in the repository at ``workspace_root`` with the model, seed 004's way.

    ``evaluate`` judges each candidate that applies and compiles (the caller runs it in
    sandboxes); it is called at most ``max_evaluations`` times, and the model at most
    ``max_turns`` times. Candidate ids are ``{id_prefix}-1``, ``{id_prefix}-2``, ... in the order
    patches are proposed; each candidate's ``cost_usd`` is what the calls since the previous
    proposal cost. ``search`` is the grep engine (``default_search()`` when None), ``limits``
    bound each retrieval round; the result carries every call (``calls``). A model call that fails
    for good ends the run with ``stop_reason="llm_error"``; exceptions from ``evaluate`` propagate.
    """
    if max_evaluations < 1 or max_turns < 1:
        raise ValueError("max_evaluations and max_turns must be at least 1")
    llm = llm_task(config)
    search = search or default_search()
    messages = render_analyze_issue(
        target_node=issue.target, target_file=issue.target_file, source_code=issue.source,
        failing_tests=issue.failing_tests, test_output=issue.test_output, reflection=issue.reflection,
    )
    result = PatcherResult(stop_reason="turn_limit")
    shown: list[tuple[str, int, int]] = []
    action = PatchAction.ANALYZE_ISSUE
    proposals = 0
    cost_since_proposal = 0.0

    def account(call: LLMCall) -> None:
        nonlocal cost_since_proposal
        result.calls.append(call)
        result.cost_usd += call.spent_usd
        cost_since_proposal += call.spent_usd

    for number in range(1, max_turns + 1):
        purpose = f"patcher {action.value.lower()} {number}"
        try:
            answer = ask_llm(llm, config, messages, purpose)
        except LLMError as exc:
            account(failed_call(exc, config, messages, purpose))
            result.stop_reason, result.error = "llm_error", f"{type(exc).__name__}: {exc.message}"
            break
        account(answer.call)
        messages = [*messages, {"role": "assistant", "content": answer.text}]
        turn: dict[str, Any] = {"number": number, "action": action, "call": answer.call}

        if has_patches(answer.text):
            proposals += 1
            candidate_id = f"{id_prefix}-{proposals}"
            built = build_patch_candidate(
                answer.text, workspace_root, candidate_id=candidate_id, target=issue.target,
                cost_usd=cost_since_proposal, allow_test_edits=allow_test_edits,
            )
            cost_since_proposal = 0.0
            if isinstance(built, PatchCandidate):
                result.candidates.append(built)
                evaluation = evaluate(built)
                result.evaluations_used += 1
                turn["evaluated"] = True
            else:
                evaluation = built
            result.evaluations.append(evaluation)
            turn.update(candidate=candidate_id, status=evaluation.status)
            if evaluation.status == PatchStatus.SOUND and isinstance(built, PatchCandidate):
                result.accepted = built
                result.stop_reason = "sound"
                result.turns.append(PatcherTurn(**turn, next_action=PatchAction.DONE))
                break
            if result.evaluations_used >= max_evaluations:
                result.stop_reason = "evaluation_limit"
                result.turns.append(PatcherTurn(**turn, next_action=PatchAction.DONE))
                break
            messages += render_evaluation_feedback(
                evaluation,
                remaining_evaluations=max_evaluations - result.evaluations_used,
                queries_ignored=bool(parse_queries(answer.text)),
            )
            action = PatchAction.ANALYZE_ISSUE
        else:
            queries = parse_queries(answer.text)
            if queries:
                retrieved = retrieve(workspace_root, queries, search=search, limits=limits,
                                     already_shown=shown)
                shown.extend((s.path, s.start_line, s.end_line) for s in retrieved.snippets)
                messages += render_retrieval_results(retrieved)
                turn.update(
                    queries=tuple(q.label for q in queries),
                    failed_queries=tuple(f"{f.query}: {f.reason}" for f in retrieved.failures),
                    snippets=len(retrieved.snippets),
                )
            else:
                messages += render_no_action()
            action = PatchAction.RETRIEVE
        result.turns.append(PatcherTurn(**turn, next_action=action))

    if result.stop_reason == "turn_limit" and result.turns:
        result.turns[-1] = result.turns[-1].model_copy(update={"next_action": PatchAction.DONE})
    result.messages = messages
    return result

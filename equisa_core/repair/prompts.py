"""Prompts of the multi-retrieval patcher (seed 004), as named constants and pure renderers.

Seed 004 specifies the patcher's behaviour, its query tags and its patch format but gives no prompt
text, so the wording here is EQUISA's own. What comes from the seed:

* the phases: analyse the issue and plan the exploration (ANALYZE_ISSUE), gather code or decide
  the context suffices (RETRIEVE), evaluate a patch (EVALUATE) and go back to the analysis after a
  failed evaluation;
* the query tags and what a grep query may be (``RETRIEVAL_QUERY_INSTRUCTIONS``: the seed's
  "Retrieval Query Types", with Python examples), one file query per answer;
* the ``<patches>`` format (``PATCH_FORMAT_INSTRUCTIONS``: the seed's "Patch Generation Format",
  with a Python example instead of C);
* the statuses fed back after an evaluation (``STATUS_MEANINGS``, seed 004's patch statuses for
  Python).

As in seed 000 (Appendix B) the instructions travel in the first user message, followed by the
evidence (target, source, failing tests, their output, the reflection). The conversation then
grows: the model's answers as assistant turns, retrieval results and evaluation feedback as user
turns. Every renderer returns chat messages (``[{"role": "user", "content": ...}]``).
"""

from __future__ import annotations

from collections.abc import Sequence

from equisa_core.repair.retrieval import RetrievalResult
from equisa_core.validation.interface import PatchEvaluation, PatchStatus

__all__ = [
    "PATCHER_SYSTEM_INSTRUCTIONS",
    "RETRIEVAL_QUERY_INSTRUCTIONS",
    "PATCH_FORMAT_INSTRUCTIONS",
    "ANALYZE_ISSUE_USER_TEMPLATE",
    "RETRIEVAL_RESULTS_TEMPLATE",
    "RETRIEVE_NEXT_STEP",
    "EVALUATION_FEEDBACK_TEMPLATE",
    "NO_ACTION_MESSAGE",
    "QUERIES_IGNORED_NOTE",
    "STATUS_MEANINGS",
    "MAX_TEST_OUTPUT_CHARS",
    "clip_middle",
    "render_analyze_issue",
    "render_retrieval_results",
    "render_evaluation_feedback",
    "render_no_action",
]

#: Characters of test output (tracebacks) put in the first prompt; the middle is cut beyond that.
MAX_TEST_OUTPUT_CHARS = 6000

#: The patcher's role and method (EQUISA's wording of seed 004's SystemGuidedPatcher).
PATCHER_SYSTEM_INSTRUCTIONS = """\
You are an expert Python debugger fixing a bug in a repository. Some tests fail; the fault was
localized to the target function below, but the root cause may lie in code it uses.

Work in steps. In each answer:
1. Analyze: explain the root cause as far as the evidence shows it (the failing tests, their
   output, the code you have seen) and keep a short plan of what to look at next.
2. Then do exactly one of:
   - ask for more code with retrieval queries (<grep> or <file> tags), when you cannot yet be sure
     of the fix; or
   - propose the fix as <patches>, when you have seen all the code the fix touches.

RULES:
- Fix the code under test. Never change tests or test configuration, and never special-case the
  inputs of the failing tests: the fix must be correct for every input.
- Keep the fix minimal and consistent with the surrounding code and its conventions.
- Every <original_code> must be copied exactly, indentation included, from code you retrieved.
- If a patch you proposed failed, read the evaluation result, analyze why, and change your
  approach rather than repeating it."""

#: How to ask for code (seed 004, "Retrieval Query Types").
RETRIEVAL_QUERY_INSTRUCTIONS = """\
RETRIEVAL QUERIES:
- <grep>query</grep> searches the repository's .py files for the literal text and shows each
  match with the function or class around it. A query may be:
  - a fully qualified name, e.g. <grep>package.module.ClassName</grep>
  - a function name, e.g. <grep>function_name</grep>
  - a method name, e.g. <grep>ClassName.method_name</grep>
  - a type or variable name
  - a one-line code snippet, e.g. <grep>total = price * quantity</grep>
  Names find their definitions as well as the lines that use them.
- <file>path/to/file.py</file> shows a whole file, <file>path/to/file.py:20-30</file> lines 20 to
  30 (paths relative to the repository root). At most one <file> query per answer.
You may put several <grep> queries in one answer. Retrieved lines are shown as `N:code`, N being
the line number."""

#: The fix format (seed 004, "Patch Generation Format", with a Python example).
PATCH_FORMAT_INSTRUCTIONS = """\
PATCH FORMAT:
<patches>
<patch>
<original_code>
11:def add(a, b):
12:    return a - b
</original_code>
<code_lines_to_replace>
path/to/file.py:11-12
</code_lines_to_replace>
<patched_code>
def add(a, b):
    return a + b
</patched_code>
</patch>
</patches>
- <original_code>: the exact lines to replace, copied from the retrieved code (with or without
  their `N:` prefixes). They must occur in the file exactly once.
- <code_lines_to_replace>: the file (relative to the repository root) and the line range.
- <patched_code>: the new lines, without line numbers, indented as they must appear in the file.
- One <patch> per changed region; several <patch> blocks may change several places or files.
Do not use markdown code fences inside the tags."""

ANALYZE_ISSUE_USER_TEMPLATE = """\
{system_instructions}

{query_instructions}

{patch_format}

Target Function: {target_node}
File: {target_file}
Source Code:
{source_code}

Failing Tests:
{failing_tests}

Test Output:
{test_output}

Reflection:
{reflection}

Start by analyzing the issue and planning your exploration, then end your answer with your
retrieval queries (or with <patches> if the code above is all the fix needs)."""

RETRIEVAL_RESULTS_TEMPLATE = """\
Retrieval results for your queries:

{snippets}{failures}{notes}

{next_step}"""

#: After retrieval results: decide whether the context suffices (seed 004, RETRIEVE).
RETRIEVE_NEXT_STEP = """\
Update your analysis with what you learned. If you still need code, ask for it with <grep> or
<file> queries; if you have seen everything the fix touches, answer with <patches>."""

EVALUATION_FEEDBACK_TEMPLATE = """\
Your patch {candidate} was evaluated: {status}.
{meaning}

Details:
{detail}
{remaining}
Analyze why the patch failed and plan again, then either ask for more
code with <grep> or <file> queries or propose new <patches>. The repository is unchanged: patches
always apply to the original files, so <original_code> must be copied from them."""

#: When an answer holds neither queries nor patches.
NO_ACTION_MESSAGE = """\
Your answer held neither retrieval queries (<grep>...</grep>, <file>...</file>) nor <patches>.
Continue: ask for the code you need, or propose the fix in the <patches> format."""

#: Appended to feedback when an answer held queries and patches: the patches were taken.
QUERIES_IGNORED_NOTE = (
    "(Your answer also held retrieval queries; they were not run because it proposed patches.)"
)

#: What each status means, for the model (seed 004's patch statuses, for Python).
STATUS_MEANINGS: dict[PatchStatus, str] = {
    PatchStatus.DOES_NOT_APPLY: "The patch could not be applied to the files: it was not tested.",
    PatchStatus.DOES_NOT_COMPILE: "The patched file does not compile: the patch was not tested.",
    PatchStatus.STILL_FAILING: "The patch applies and compiles, but tests that failed still fail: "
                               "the bug is not fixed.",
    PatchStatus.REGRESSIONS: "The failing tests may pass now, but tests that passed before fail "
                             "with the patch: it breaks other behaviour.",
    PatchStatus.OVERFITTING: "The patch passes the suite but fails new tests of the same behaviour "
                             "with other inputs: it fits the known inputs instead of fixing the logic.",
    PatchStatus.UNCONFIRMED: "The patch passes the suite and every check that could run, but there is "
                             "too little evidence that it keeps the function's behaviour elsewhere: a "
                             "smaller, more targeted change is preferred.",
    PatchStatus.SOUND: "The patch fixes the failing tests without regressions.",
}


def clip_middle(text: str, max_chars: int) -> str:
    """``text`` whole when it fits, else its head and tail with a marker saying what was cut."""
    if len(text) <= max_chars:
        return text
    keep = max(max_chars - 60, 2)
    head, tail = text[: keep // 3], text[len(text) - (keep - keep // 3):]
    return f"{head}\n[... {len(text) - len(head) - len(tail)} characters cut ...]\n{tail}"


def _user(content: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": content}]


def render_analyze_issue(
    *,
    target_node: str | None,
    target_file: str | None,
    source_code: str,
    failing_tests: Sequence[str],
    test_output: str,
    reflection: str,
) -> list[dict[str, str]]:
    """The first message: instructions, then the issue's evidence; asks for analysis and a plan."""
    content = ANALYZE_ISSUE_USER_TEMPLATE.format(
        system_instructions=PATCHER_SYSTEM_INSTRUCTIONS,
        query_instructions=RETRIEVAL_QUERY_INSTRUCTIONS,
        patch_format=PATCH_FORMAT_INSTRUCTIONS,
        target_node=target_node or "(not localized)",
        target_file=target_file or "(unknown)",
        source_code=source_code.rstrip() or "(not available: retrieve it)",
        failing_tests="\n".join(f"- {t}" for t in failing_tests) or "(none given)",
        test_output=clip_middle(test_output.strip(), MAX_TEST_OUTPUT_CHARS) or "(none)",
        reflection=reflection.strip() or "(none)",
    )
    return _user(content)


def _snippet_block(result: RetrievalResult) -> str:
    blocks = []
    for snippet in result.snippets:
        origins = "; ".join(snippet.origins)
        blocks.append(f"{snippet.header} [{snippet.priority.name}] {origins}\n{snippet.numbered().rstrip()}")
    if result.repeated:
        blocks.append("Already shown earlier (not repeated): " + ", ".join(result.repeated))
    if result.omitted:
        omitted = ", ".join(result.omitted)
        blocks.append(f"Not shown, over the size limit (ask with <file> if needed): {omitted}")
    return "\n\n".join(blocks) if blocks else "(no code retrieved)"


def render_retrieval_results(result: RetrievalResult, *, note: str = "") -> list[dict[str, str]]:
    """The snippets, failed queries and notes of one retrieval round, and the next step."""
    failures = ""
    if result.failures:
        failures = "\n\nFailed queries:\n" + "\n".join(f"- {f.query}: {f.reason}" for f in result.failures)
    notes = ""
    if result.notes or note:
        notes = "\n\nNotes:\n" + "\n".join(f"- {n}" for n in (*result.notes, *([note] if note else [])))
    content = RETRIEVAL_RESULTS_TEMPLATE.format(
        snippets=_snippet_block(result), failures=failures, notes=notes, next_step=RETRIEVE_NEXT_STEP
    )
    return _user(content)


def render_evaluation_feedback(
    evaluation: PatchEvaluation, *, remaining_evaluations: int, queries_ignored: bool = False
) -> list[dict[str, str]]:
    """The result of evaluating a patch: status, its meaning, the detail, the tests named."""
    lines = [evaluation.detail.strip() or "(no detail)"]
    if evaluation.still_failing:
        lines.append("Still failing: " + ", ".join(evaluation.still_failing))
    if evaluation.regressions:
        lines.append("Regressions (passed before, fail now): " + ", ".join(evaluation.regressions))
    failed_checks = {name: why for name, why in evaluation.checks.items() if why != "passed"}
    if failed_checks:
        lines.append("Checks not passed: " + "; ".join(f"{k}: {v}" for k, v in failed_checks.items()))
    remaining = ""
    if evaluation.status not in (PatchStatus.DOES_NOT_APPLY, PatchStatus.DOES_NOT_COMPILE):
        remaining = f"Evaluations left: {remaining_evaluations}.\n"
    if queries_ignored:
        remaining += QUERIES_IGNORED_NOTE + "\n"
    content = EVALUATION_FEEDBACK_TEMPLATE.format(
        candidate=evaluation.candidate,
        status=evaluation.status.value.upper(),
        meaning=STATUS_MEANINGS[evaluation.status],
        detail="\n".join(lines),
        remaining=remaining,
    )
    return _user(content)


def render_no_action() -> list[dict[str, str]]:
    """The reminder sent when an answer neither asked for code nor proposed patches."""
    return _user(NO_ACTION_MESSAGE)

"""What EQUISA does with a model's text: clean it, read its label, validate it, and its errors.

Pure functions over strings (no network, no Prefect), so the LLM layer's judgement can be tested
alone:

* ``strip_code_fences``: the code of an answer, without markdown fences, ``<think>`` blocks, prose
  before the first ``def``/decorator or prose after the function.
* ``parse_reflection_label``: the verdict of a reflection (``CONFIRMED_BUGGY`` /
  ``CONFIRMED_NOT_BUGGY``), or None.
* ``validate_function_answer``: the answer is one function with the original's signature
  (checked by ``equisa_core.common.source_edit.replace_function``), else ``InvalidAnswerError``.
* ``render_reask``: the follow-up message that hands a rejected answer's error back to the model.
* ``mean_token_entropy``: the mean per-token entropy of an answer from its logprobs.

The LLM errors (``LLMError`` 11, ``LLMUnavailableError`` 11, ``LLMRequestError`` 12,
``InvalidAnswerError`` 13) are part of the one error tree in ``equisa_core.errors``; they are
re-exported here, where ``validate_function_answer`` raises one, and by ``tasks.llm``, which raises
the others.
"""

from __future__ import annotations

import ast
import math
import re
import warnings
from collections.abc import Mapping, Sequence

from equisa_core.common.source_edit import replace_function
from equisa_core.errors import (  # the LLM errors are re-exported: importers keep working
    InvalidAnswerError,
    InvalidReplacementError,
    LLMError,
    LLMRequestError,
    LLMUnavailableError,
)

__all__ = [
    "LLMError",
    "LLMUnavailableError",
    "LLMRequestError",
    "InvalidAnswerError",
    "LABEL_BUGGY",
    "LABEL_NOT_BUGGY",
    "REASK_FUNCTION_TEMPLATE",
    "strip_code_fences",
    "parse_reflection_label",
    "validate_function_answer",
    "clean_test_module",
    "strip_think_and_fences",
    "render_reask",
    "mean_token_entropy",
]

LABEL_BUGGY = "CONFIRMED_BUGGY"
LABEL_NOT_BUGGY = "CONFIRMED_NOT_BUGGY"

#: The follow-up user message after an answer was rejected; ``{error}`` is the rejection reason.
REASK_FUNCTION_TEMPLATE = """\
Your answer was rejected: {error}
Reply again with ONLY the complete source code of the function `{qualname}`: exactly one function
definition with the same name and the same signature as the original. Do not add explanations or
markdown."""


# --- cleaning ------------------------------------------------------------------------------------

_THINK_RE = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
# An opening fence (``` or ~~~, any info string) up to its closing fence or the end of the text.
_FENCE_RE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})[^\n]*\n(?P<body>.*?)(?:^[ \t]*(?P=fence)[ \t]*$|\Z)",
                       re.DOTALL | re.MULTILINE)
_FUNCTION_START_RE = re.compile(r"^[ \t]*(?:@[\w.]+|(?:async[ \t]+)?def[ \t]+\w+[ \t]*[(\[])")
_DEF_RE = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+\w+")
# Lines at the function's margin that are code, not prose: the validation judges them.
_CODE_START_RE = re.compile(
    r"^(?:[)\]}]|@|#|(?:async\s+)?def\s|class\s|import\s|from\s|if\s|elif\s|else\s*:|for\s|while\s|"
    r"with\s|try\s*:|except\b|finally\s*:|return\b|raise\b|pass\b|\"\"\"|''')"
)


def _parses(text: str) -> bool:
    try:
        with warnings.catch_warnings(action="ignore"):
            ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def _parses_block(lines: Sequence[str]) -> bool:
    """Whether ``lines`` parse as code; an indented block (a method) is parsed under ``if True:``."""
    text = "\n".join(lines)
    return _parses("if True:\n" + text if lines and lines[0][:1] in (" ", "\t") else text)


def _is_statement(line: str) -> bool:
    """A line that parses alone as a statement other than a bare expression (``x = 1``, not prose)."""
    try:
        with warnings.catch_warnings(action="ignore"):
            body = ast.parse(line).body
    except (SyntaxError, ValueError):
        return False
    if len(body) != 1 or isinstance(body[0], ast.Expr):
        return False
    # "Note: text" parses as an annotation without a value: prose, not code.
    return not (isinstance(body[0], ast.AnnAssign) and body[0].value is None)


def _indent_width(line: str) -> int:
    return len(line.expandtabs(8)) - len(line.expandtabs(8).lstrip())


def _fenced_block(text: str) -> str | None:
    """The first fenced block holding a function definition, else the first fenced block."""
    blocks = [m.group("body") for m in _FENCE_RE.finditer(text)]
    if not blocks:
        return None
    return next((b for b in blocks if any(_DEF_RE.match(line) for line in b.splitlines())), blocks[0])


def _trim_trailing_prose(lines: list[str], def_index: int) -> list[str]:
    """Cut at the first line at or left of the def's margin that is prose, when what precedes parses."""
    margin = _indent_width(lines[def_index])
    for i in range(def_index + 1, len(lines)):
        line = lines[i]
        if not line.strip() or _indent_width(line) > margin:
            continue
        stripped = line.strip()
        if _CODE_START_RE.match(stripped) or _is_statement(stripped):
            continue
        if _parses_block(lines[:i]):
            return lines[:i]
    if _parses_block(lines):
        return lines
    # Prose that looked like code: fall back to the longest prefix ending at the margin that parses.
    for i in range(len(lines) - 1, def_index, -1):
        if lines[i].strip() and _indent_width(lines[i]) <= margin and _parses_block(lines[:i]):
            return lines[:i]
    return lines


def strip_code_fences(text: str) -> str:
    """The code of an answer: fences, ``<think>`` blocks and surrounding prose removed.

    The first fenced block (```python, ```, ~~~) that holds a ``def`` is taken, else the first
    block; an unclosed fence runs to the end. Prose before the first decorator or ``def`` line is
    dropped, and so is prose after the function (a line at the def's margin that is not code,
    when the code before it parses). Code that is not prose is kept, so that validation can
    reject "two functions" rather than silently dropping one. Returns '' for an empty answer,
    else the code with one trailing newline.
    """
    text = _THINK_RE.sub("", text.replace("\r\n", "\n"))
    block = _fenced_block(text)
    lines = (block if block is not None else text).split("\n")
    start = next((i for i, line in enumerate(lines) if _FUNCTION_START_RE.match(line)), None)
    if start is not None:
        lines = lines[start:]
        def_index = next((i for i, line in enumerate(lines) if _DEF_RE.match(line)), None)
        if def_index is not None:
            lines = _trim_trailing_prose(lines, def_index)
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(line.rstrip() for line in lines) + "\n" if lines else ""


# --- reflection label ----------------------------------------------------------------------------

# A label as a whole word: CONFIRMED_NOT_BUGGY never matches as CONFIRMED_BUGGY, nor X_CONFIRMED_BUGGY.
_LABEL_RE = re.compile(r"(?<![A-Za-z0-9_])CONFIRMED_(?:NOT_)?BUGGY(?![A-Za-z0-9_])")


def parse_reflection_label(text: str) -> str | None:
    """The verdict on the last line that names a label, or None.

    ``LABEL_BUGGY`` or ``LABEL_NOT_BUGGY`` when the last line naming any label names only that one
    (markdown around it is fine: ``**CONFIRMED_BUGGY**``); None when no line names a label or the
    last one names both (ambiguous). Labels are matched as whole upper-case words, so
    ``CONFIRMED_NOT_BUGGY`` is never read as ``CONFIRMED_BUGGY``.
    """
    for line in reversed(text.splitlines()):
        found = set(_LABEL_RE.findall(line))
        if found:
            return found.pop() if len(found) == 1 else None
    return None


# --- validation ----------------------------------------------------------------------------------


def validate_function_answer(answer: str, original_source: str, qualname: str) -> str:
    """Check that ``answer`` can replace ``qualname`` in ``original_source``; return it normalised.

    ``original_source`` is the module holding the function (or the function alone, with
    ``qualname`` its bare name). The answer must parse, be exactly one function of that name, keep
    its signature (async-ness, parameters, defaults, annotations) and leave the module compiling:
    the checks of ``equisa_core.common.source_edit.replace_function``. Returns the answer without
    surrounding blank lines and with one trailing newline. Raises ``InvalidAnswerError`` (with the
    reason, ready to hand back to the model) when the answer fails; ``FunctionNotFoundError`` /
    ``SourceEditError`` when the *original* has no such function or does not parse.
    """
    code = answer.strip("\n")
    if not code.strip():
        raise InvalidAnswerError(f"the answer for {qualname!r} is empty", answer=answer)
    try:
        replace_function(original_source, qualname, code)
    except InvalidReplacementError as exc:
        raise InvalidAnswerError(exc.message, answer=answer) from exc
    return code.rstrip() + "\n"


def strip_think_and_fences(answer: str) -> str:
    """``answer`` without ``<think>`` blocks, reduced to its fenced code block when it has one."""
    text = _THINK_RE.sub("", answer.replace("\r\n", "\n"))
    block = _fenced_block(text)
    return block if block is not None else text


def clean_test_module(answer: str) -> str:
    """The pytest module in ``answer``: fences and ``<think>`` blocks removed, checked to parse.

    Unlike ``strip_code_fences`` nothing before the first ``def`` is dropped (a test module starts
    with its imports). Raises ``InvalidAnswerError`` when the code does not parse or defines no
    top-level ``test_`` function.
    """
    text = _THINK_RE.sub("", answer.replace("\r\n", "\n"))
    block = _fenced_block(text)
    code = (block if block is not None else text).strip("\n")
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError) as exc:
        raise InvalidAnswerError(f"the test module does not parse: {exc}", answer=answer) from exc
    if not any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name.startswith("test")
               for n in tree.body):
        raise InvalidAnswerError("the answer defines no top-level test function", answer=answer)
    return code.rstrip() + "\n"


def render_reask(
    messages: Sequence[Mapping[str, str]], answer: str, error: str, qualname: str
) -> list[dict[str, str]]:
    """The conversation so far, the rejected answer (as the assistant's turn) and the reason."""
    return [
        *(dict(m) for m in messages),
        {"role": "assistant", "content": answer},
        {"role": "user", "content": REASK_FUNCTION_TEMPLATE.format(error=error, qualname=qualname)},
    ]


# --- logprobs ------------------------------------------------------------------------------------


def mean_token_entropy(token_logprobs: Sequence[Sequence[float]]) -> float | None:
    """Mean over tokens of the entropy (nats) of each token's top-k distribution, residual included.

    For a token whose k most likely alternatives have probabilities p_i = exp(logprob_i), with
    residual mass r = max(0, 1 - sum p_i) counted as one more outcome:

        H_t = -sum_i p_i ln p_i - r ln r        (0 ln 0 = 0)
        mean = (1/T) sum_t H_t

    A lower bound of the true entropy (the residual is lumped). None when there are no tokens; a
    token with no alternatives contributes 0.
    """
    if not token_logprobs:
        return None
    total = 0.0
    for alternatives in token_logprobs:
        probs = [math.exp(min(lp, 0.0)) for lp in alternatives if not math.isnan(lp)]
        entropy = -sum(p * math.log(p) for p in probs if p > 0.0)
        residual = 1.0 - sum(probs)
        if residual > 0.0:
            entropy -= residual * math.log(residual)
        total += entropy
    return total / len(token_logprobs)

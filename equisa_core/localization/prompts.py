"""Prompts of the Localization loop (seed 000, Appendix B), as named constants and pure renderers.

The three system instructions are the seed's text verbatim (typos included). As in the seed, each
is sent inside the user message: the user-message template starts with the instructions, then the
target and its evidence, so every renderer returns one chat message,
``[{"role": "user", "content": ...}]``. ``{target_node}`` inside the inspection instructions is
interpolated with the target's FQN (the heartbeat print names it).

``prompt_hash`` is the content hash an LLM task puts in its cache key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence

__all__ = [
    "GENERATE_INSPECTION_PATCH_SYSTEM_INSTRUCTIONS",
    "GENERATE_DEBUGGING_REFLECTION_SYSTEM_INSTRUCTIONS",
    "GENERATE_PATCH_SYSTEM_INSTRUCTIONS",
    "INSPECTION_PATCH_USER_TEMPLATE",
    "DEBUGGING_REFLECTION_USER_TEMPLATE",
    "PATCH_USER_TEMPLATE",
    "inspection_heartbeat",
    "render_inspection_patch",
    "render_reflection",
    "render_patch",
    "prompt_hash",
]

#: Used by the inspection-patch step: the model returns the function with assertions added.
GENERATE_INSPECTION_PATCH_SYSTEM_INSTRUCTIONS = """\
You are a expert debugger. You are given a function's source code and you need to
provide a MODIFIED version of this function that includes validations (assertions
or mocks) to check if it is buggy.

CRITICAL RULES:
1. ALWAYS include this exact print statement as the VERY FIRST line of the
   function body:
   print(f"--- INSPECTION_START: {target_node} ---")
   (Use the actual target node FQN provided below).
2. ONLY use `assert` statements to check for expected behavior. DO NOT use
   additional print statements for validation or debugging.
3. If you detect an invalid state, raise an AssertionError with a descriptive message.
4. Output ONLY the modified function source code. Do not add explanations or markdown.
5. Include all the original logic, just add your validation checks inside it.
6. Ensure the code is syntactically correct and matches the original function's
   signature."""

#: Used by the reflection step: reasoning, then CONFIRMED_BUGGY or CONFIRMED_NOT_BUGGY on its own line.
GENERATE_DEBUGGING_REFLECTION_SYSTEM_INSTRUCTIONS = """\
You are an expert debugger reflecting on the results of an inspection patch execution.
Given the target function, its source code, the inspection patch that was run, and
the execution results (stdout/stderr/exit code), you must determine if the function
is likely buggy.

THE GOLDEN RULE OF CALLEES:
- If the target function fails because a function it CALLS (a dependency/callee)
  returned a wrong value, but the target function's own logic is correct and it
  used that value correctly, then the target function is NOT_BUGGY.
- Only mark as BUGGY if the error is in the target function's own implementation
  or if it passed incorrect arguments to a callee.

Rules:
- First, provide a detailed reasoning and evidence analysis. Analyze the traceback
  carefully to see where the exception actually originated.
- After your reasoning, provide your final decision on a new line using exactly one
  of these two labels: "CONFIRMED_BUGGY" or "CONFIRMED_NOT_BUGGY".
- Be extremely strict: if the root cause is elsewhere, the current node is innocent."""

#: Used by the patch step: the model returns the fixed function.
GENERATE_PATCH_SYSTEM_INSTRUCTIONS = """\
You are an expert debugger. You are given a function's source code and a reflection
describing why it is buggy.
Your task is to generate a fixed version of the function that resolves the bug.

CRITICAL RULES:
1. Output ONLY the fixed function source code.
2. Do not add explanations, markdown, or surrounding text.
3. Ensure the code is syntactically correct and matches the original function's
   signature.
4. The fix should be minimal and directly address the issues identified in the
   reflection."""

INSPECTION_PATCH_USER_TEMPLATE = """\
{system_instructions}

Target Function: {target_node}
Source Code:
{source_code}"""

DEBUGGING_REFLECTION_USER_TEMPLATE = """\
{system_instructions}

Target Function: {target_node}
Source Code:
{source_code}

Inspection Patch:
{patch}

Execution Result:
{execution_result}"""

PATCH_USER_TEMPLATE = """\
{system_instructions}

Target Function: {target_node}
Source Code:
{source_code}

Reflection:
{reflection}"""


def inspection_heartbeat(target_node: str) -> str:
    """The statement the inspection instructions require as the first line of the body."""
    return f'print(f"--- INSPECTION_START: {target_node} ---")'


def _user(content: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": content}]


def render_inspection_patch(target_node: str, source_code: str) -> list[dict[str, str]]:
    """The inspection-patch request for ``target_node`` (its FQN) whose source is ``source_code``."""
    instructions = GENERATE_INSPECTION_PATCH_SYSTEM_INSTRUCTIONS.replace("{target_node}", target_node)
    return _user(
        INSPECTION_PATCH_USER_TEMPLATE.format(
            system_instructions=instructions, target_node=target_node, source_code=source_code
        )
    )


def render_reflection(
    target_node: str, source_code: str, patch: str, execution_result: str
) -> list[dict[str, str]]:
    """The reflection request: the target, the inspection patch that ran and what the run printed."""
    return _user(
        DEBUGGING_REFLECTION_USER_TEMPLATE.format(
            system_instructions=GENERATE_DEBUGGING_REFLECTION_SYSTEM_INSTRUCTIONS,
            target_node=target_node,
            source_code=source_code,
            patch=patch,
            execution_result=execution_result,
        )
    )


def render_patch(target_node: str, source_code: str, reflection: str) -> list[dict[str, str]]:
    """The patch request: the target and the reflection explaining why it is buggy."""
    return _user(
        PATCH_USER_TEMPLATE.format(
            system_instructions=GENERATE_PATCH_SYSTEM_INSTRUCTIONS,
            target_node=target_node,
            source_code=source_code,
            reflection=reflection,
        )
    )


def prompt_hash(messages: Sequence[Mapping[str, object]]) -> str:
    """SHA-256 (hex) of the messages as canonical JSON (sorted keys, no whitespace, UTF-8).

    Equal for equal conversations whatever the dicts' key order; any change to a role or a
    character of content changes it.
    """
    canonical = json.dumps(
        [dict(m) for m in messages], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

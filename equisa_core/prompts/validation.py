"""The Validation loop's prompt: tests of the failing tests' behaviour with novel inputs (seed 000 §6).

Seed 000 states the mandate — "generate new tests that replicate the _semantics_ of the previously
failing tests but use different inputs" — without prompt text, so this one is EQUISA's own, laid
out like the seed's prompts (instructions first, then the evidence, one user message). The model
sees the function as it was (buggy) and the failing tests, never the candidate patch, so its
oracle comes from the tests' intent rather than from the code under judgement.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "NOVEL_INPUT_TESTS_SYSTEM_INSTRUCTIONS",
    "NOVEL_INPUT_TESTS_USER_TEMPLATE",
    "render_novel_input_tests",
]

NOVEL_INPUT_TESTS_SYSTEM_INSTRUCTIONS = """\
You are an expert Python test engineer. The failing tests below show what the function `{target}`
is meant to do; the function currently has a bug. Write NEW pytest tests that check the SAME
behaviour with DIFFERENT inputs (other values, the other side of each boundary, other sizes), so
that a fix which only special-cases the failing tests' exact inputs would fail them.

RULES:
1. Write a complete pytest module: the imports it needs (as the failing tests import), then plain
   `def test_...():` functions.
2. Assert the CORRECT behaviour the failing tests imply, not what the current code does.
3. Do not reuse the failing tests' exact inputs. At most 6 tests. No network, files, sleeps,
   randomness or clock.
4. Output ONLY the Python module. Do not add explanations or markdown."""

NOVEL_INPUT_TESTS_USER_TEMPLATE = """\
{system_instructions}

Function `{target}`:
{source_code}

Failing tests:
{failing_tests}"""


def render_novel_input_tests(
    target: str, source_code: str, failing_tests: Mapping[str, str]
) -> list[dict[str, str]]:
    """The request for novel-input tests of ``target`` given the failing tests (id -> source)."""
    tests = "\n\n".join(f"# {test_id}\n{text.rstrip()}" for test_id, text in sorted(failing_tests.items()))
    content = NOVEL_INPUT_TESTS_USER_TEMPLATE.format(
        system_instructions=NOVEL_INPUT_TESTS_SYSTEM_INSTRUCTIONS.replace("{target}", target),
        target=target, source_code=source_code.rstrip(), failing_tests=tests or "(none available)",
    )
    return [{"role": "user", "content": content}]

"""The Discovery loop's prompt: disambiguating tests for one ambiguity group (seed 000 §1, §4).

Seed 000 describes what the Test Generation Agent must do for an ambiguity group — "generate
targeted tests designed to cover individual functions within that group while _not_ covering
others" — but gives no prompt text for it, so this one is EQUISA's own. It follows the seed's
prompt layout (instructions first, then the evidence, one user message) and the framework rules of
seed 001: pytest style, imports from the project, no network, no sleeps, deterministic inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = [
    "DISAMBIGUATING_TESTS_SYSTEM_INSTRUCTIONS",
    "DISAMBIGUATING_TESTS_USER_TEMPLATE",
    "render_disambiguating_tests",
]

DISAMBIGUATING_TESTS_SYSTEM_INSTRUCTIONS = """\
You are an expert Python test engineer. The functions below are always executed together by the
project's existing tests, so a failure cannot be attributed to any one of them. Write NEW pytest
tests that each call exactly ONE of these functions directly (not through the others), so that the
functions can be told apart.

RULES:
1. Write a complete pytest module: the imports it needs (import the project's modules as the
   sample tests do), then plain `def test_...():` functions.
2. Each test calls one of the listed functions directly, with concrete, deterministic inputs, and
   asserts the result the function's name, docstring and the sample tests imply is CORRECT. Do not
   copy the current behaviour if it looks wrong.
3. To test a method without running the class's other methods, build the object with
   `obj = Cls.__new__(Cls)` and set its attributes directly.
4. At most {max_tests} tests. No network, files, sleeps, randomness or clock.
5. Output ONLY the Python module. Do not add explanations or markdown."""

DISAMBIGUATING_TESTS_USER_TEMPLATE = """\
{system_instructions}

Functions:
{functions}

Sample tests that execute them:
{sample_tests}"""


def render_disambiguating_tests(
    functions: Mapping[str, str], sample_tests: Sequence[str], max_tests: int
) -> list[dict[str, str]]:
    """The request for tests that split one group: ``functions`` maps FQN -> source."""
    listed = "\n\n".join(f"# {fqn}\n{source.rstrip()}" for fqn, source in sorted(functions.items()))
    samples = "\n\n".join(s.rstrip() for s in sample_tests) or "(none available)"
    instructions = DISAMBIGUATING_TESTS_SYSTEM_INSTRUCTIONS.replace("{max_tests}", str(max_tests))
    content = DISAMBIGUATING_TESTS_USER_TEMPLATE.format(
        system_instructions=instructions, functions=listed, sample_tests=samples
    )
    return [{"role": "user", "content": content}]

"""The test-generation agent's prompts: seed 001 (generator, enhancer) and seed 000 §8 (similarity, smells).

The generator prompt, the Django and non-Django framework rules, the enhancer prompt, its
guardrails and its instruction block are the seed's, verbatim. EQUISA adds, and says so here:

- a pytest rule set (the seed has Django and unittest rules only; EQUISA detects pytest
  repositories, and forcing unittest on them would break the enhancer's "preserve the style");
- the §8 evidence appended to the generator's prompt after the seed's text: lines the existing
  tests leave uncovered (coverage.py) and examples of existing tests chosen by similarity;
- the §8 prompts (no text in the seed): rewrite a redundant test, critique smells, fix smells;
- when a caller gives a specification (Validation's novel-input tests: the failing tests show the
  intended behaviour), ``SPECIFICATION_TEMPLATE`` after everything else. Plain ``equisa testgen``
  gives none, so its prompt is the seed's with the §8 evidence, as before.

Every render function returns the chat messages (one user message, as the seed's layout).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = [
    "GENERATOR_TEMPLATE",
    "DJANGO_RULES",
    "UNITTEST_RULES",
    "PYTEST_RULES",
    "ENHANCER_TEMPLATE",
    "REDUNDANT_REWRITE_TEMPLATE",
    "SMELL_CRITIC_TEMPLATE",
    "SMELL_FIX_TEMPLATE",
    "SPECIFICATION_TEMPLATE",
    "framework_rules",
    "guardrails",
    "instruction_block",
    "render_generator",
    "render_enhancer",
    "render_redundant_rewrite",
    "render_smell_critic",
    "render_smell_fix",
]

GENERATOR_TEMPLATE = """\
You are an expert Python test generator.
Your goal is to maximise BRANCH COVERAGE and MUTATION SCORE for the target file.

Repository: {repo}
Version: {version}
Target file: {code_file}

Here is the full source code of the file under test:
----------------
{code_src}
----------------

Follow these framework rules:
{test_style_instructions}

Global requirements for ALL repos:
- Maximise branch coverage
- Use real filesystem operations where possible (tempfile.TemporaryDirectory())
- Avoid network or database calls
- Imports must be correct for the target repo
- Output ONLY Python test code (no markdown, no comments, no headings)
"""

DJANGO_RULES = """\
You MUST generate tests using Django's unittest framework.

Strict requirements:
- Use: from django.test import SimpleTestCase or TestCase
- DO NOT import pytest anywhere
- DO NOT use pytest-style asserts or fixtures
- Use unittest assertions: self.assertEqual, self.assertTrue, self.assertRaises, etc.
- Use unittest.mock instead of pytest.mock
- Maximise coverage by using real filesystem:
    * use tempfile.TemporaryDirectory()
    * create real files/directories using pathlib.Path
    * exercise actual Path.exists(), Path.is_dir(), Path.stat(), Path.iterdir()
    * exercise serve(), directory_index(), and was_modified_since()
- Test branches:
    * directory with show_indexes=True → HTML response
    * directory with show_indexes=False → Http404
    * missing file → Http404
    * valid file → FileResponse (validate headers)
    * If-Modified-Since → HttpResponseNotModified
- Avoid Django test client; call the functions directly.
"""

UNITTEST_RULES = """\
You MUST generate tests using Python's built-in unittest framework.

Strict requirements:
- DO NOT import pytest
- DO NOT use pytest-style asserts
- DO NOT use fixtures or parametrize
- Use: import unittest
- Test classes must subclass unittest.TestCase
- Use unittest assertions:
    * self.assertEqual
    * self.assertTrue
    * self.assertFalse
    * self.assertRaises
- Use unittest.mock for mocking
- Use tempfile.TemporaryDirectory() for real filesystem testing
- Use real pathlib.Path operations, avoid mocking whenever possible
- Maximise branch coverage and mutation score
- Imports must match the repo's internal structure
"""

# EQUISA's own (the seed has no pytest rules): the unittest rules turned to pytest's idioms.
PYTEST_RULES = """\
You MUST generate tests using pytest, in the style of the repository's existing tests.

Strict requirements:
- Use: import pytest (only if a pytest feature is needed)
- Write plain `def test_...():` functions with bare `assert` statements
- Use pytest.raises for expected exceptions and pytest.approx for floats
- Fixtures and parametrize are allowed; keep them simple
- Use unittest.mock (or pytest's monkeypatch) for mocking
- Use tempfile.TemporaryDirectory() (or tmp_path) for real filesystem testing
- Use real pathlib.Path operations, avoid mocking whenever possible
- Maximise branch coverage and mutation score
- Imports must match the repo's internal structure
"""

# EQUISA's own: the Validation loop's mandate (seed 000 §6: "generate new tests that replicate the
# _semantics_ of the previously failing tests but use different inputs"), for the generator.
SPECIFICATION_TEMPLATE = """
Specification of the intended behaviour: the tests below currently FAIL because the code has a bug.
Write tests of {focus} that check the SAME behaviour with DIFFERENT inputs (other values, the other
side of each boundary, other sizes), so that a fix which only special-cases these tests' exact
inputs would fail them. Assert the CORRECT behaviour these tests imply, not what the current code
does. Do not reuse their exact inputs. At most 6 tests.

{failing_tests}
"""

ENHANCER_TEMPLATE = """\
You are an expert Python test engineer improving an existing test module.
Repository: {repo}
Version: {version}
Target file: {code_file}
Follow these guardrails:
{guardrails}

Current test suite:
{current_test_src}

Rewrite the suite by applying the instructions below while preserving the existing framework/style.

Instructions:
{instruction_block}

Return only the revised Python test module (plain code, no markdown).
"""

REDUNDANT_REWRITE_TEMPLATE = """\
You are an expert Python test engineer. The new test below is nearly the same as an existing test
(cosine similarity {similarity:.2f}), so it adds little. Rewrite it to exercise a DIFFERENT path of
the target file: one of the uncovered lines listed, other inputs, or other branches. Keep the
framework and the imports.

Target file: {code_file}
----------------
{code_src}
----------------
Uncovered lines: {uncovered}

Existing similar test:
{similar_test}

New test to rewrite:
{new_test}

Return only the rewritten Python test module (plain code, no markdown).
"""

SMELL_CRITIC_TEMPLATE = """\
You are a strict reviewer of unit tests. List the test smells in the module below: assertion
roulette, empty tests, sleeps, conditional logic in tests, redundant assertions, fragile tests
(depending on time, order, randomness or external state), eager tests and mystery guests.
Answer with one smell per line as `<test name>: <smell>: <why>`, or exactly `NO SMELLS`.

{test_src}
"""

SMELL_FIX_TEMPLATE = """\
You are an expert Python test engineer. Rewrite the test module below to remove these test smells
while keeping what each test covers and asserts (same framework, same imports):
{smells}

{test_src}

Return only the revised Python test module (plain code, no markdown).
"""


def framework_rules(framework: str) -> str:
    """The seed's framework rules: Django or unittest; EQUISA's for pytest."""
    return {"django": DJANGO_RULES, "unittest": UNITTEST_RULES}.get(framework, PYTEST_RULES)


def guardrails(framework: str, repo: str) -> list[str]:
    """The enhancer's guardrails (seed 001), framework-aware."""
    rails = [
        "Use unittest-style classes/tests (unittest.TestCase or django.test.SimpleTestCase). "
        "Do NOT import pytest or use pytest fixtures/decorators.",
        "Keep the existing imports unless a new helper is strictly required.",
        "Avoid filesystem or network dependencies; prefer in-memory values/mocks.",
        "Do not add `if __name__ == '__main__':` or call unittest.main/pytest.main.",
    ]
    if "django" in repo.lower():
        rails.append(
            "When interacting with Django utilities, use django.test helpers and avoid touching real files."
        )
    if framework == "pytest":
        rails[0] = (
            "Pytest-style functions and fixtures are acceptable, but keep the current style consistent."
        )
    return rails


def instruction_block(
    instructions: Sequence[str], missing_lines: Sequence[int], surviving_mutants: Sequence[str] = ()
) -> str:
    """The seed's instruction block; EQUISA appends up to 5 surviving mutants to kill."""
    block = "\n".join(f"- {item}" for item in instructions if item)
    if missing_lines:
        line_targets = ", ".join(str(m) for m in missing_lines[:10])
        block += f"\n- Increase coverage for lines: {line_targets}."
    if surviving_mutants:
        block += (
            "\n- Add assertions that fail for these surviving mutants: "
            + "; ".join(surviving_mutants[:5])
            + "."
        )
    if not block.strip():
        block = "- Improve coverage and robustness without breaking existing passing tests."
    return block


def _user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def render_generator(
    repo: str,
    version: str,
    code_file: str,
    code_src: str,
    framework: str,
    uncovered: Sequence[int] = (),
    examples: Sequence[str] = (),
    specification: Mapping[str, str] | None = None,
    focus: Sequence[str] = (),
) -> list[dict[str, str]]:
    """The generator's messages: the seed's prompt, then the §8 evidence (uncovered lines, examples),
    then, when given, the specification (test id -> source of tests showing the intended behaviour
    of the ``focus`` functions)."""
    text = GENERATOR_TEMPLATE.format(
        repo=repo,
        version=version,
        code_file=code_file,
        code_src=code_src,
        test_style_instructions=framework_rules(framework),
    )
    if uncovered:
        text += (
            "\nLines of the target file the existing tests do not cover: "
            + ", ".join(map(str, uncovered[:40]))
            + "\n"
        )
    for number, example in enumerate(examples[:3], 1):
        text += f"\nExample of an existing test ({number}):\n{example.strip()}\n"
    if specification:
        tests = "\n\n".join(f"# {name}\n{body.rstrip()}" for name, body in sorted(specification.items()))
        named = ", ".join(f"`{fqn}`" for fqn in focus) or f"`{code_file}`"
        text += SPECIFICATION_TEMPLATE.format(focus=named, failing_tests=tests)
    return _user(text)


def render_enhancer(
    repo: str,
    version: str,
    code_file: str,
    framework: str,
    current_test_src: str,
    instructions: Sequence[str],
    missing_lines: Sequence[int],
    surviving_mutants: Sequence[str] = (),
) -> list[dict[str, str]]:
    """The enhancer's messages (seed 001)."""
    rails = "\n".join(f"- {rail}" for rail in guardrails(framework, repo))
    return _user(
        ENHANCER_TEMPLATE.format(
            repo=repo,
            version=version,
            code_file=code_file,
            guardrails=rails,
            current_test_src=current_test_src,
            instruction_block=instruction_block(instructions, missing_lines, surviving_mutants),
        )
    )


def render_redundant_rewrite(
    code_file: str,
    code_src: str,
    uncovered: Sequence[int],
    similar_test: str,
    new_test: str,
    similarity: float,
) -> list[dict[str, str]]:
    """Messages asking to rewrite a test too similar to an existing one."""
    return _user(
        REDUNDANT_REWRITE_TEMPLATE.format(
            code_file=code_file,
            code_src=code_src,
            uncovered=", ".join(map(str, uncovered[:40])) or "none",
            similar_test=similar_test,
            new_test=new_test,
            similarity=similarity,
        )
    )


def render_smell_critic(test_src: str) -> list[dict[str, str]]:
    """Messages asking the critic for smells."""
    return _user(SMELL_CRITIC_TEMPLATE.format(test_src=test_src))


def render_smell_fix(test_src: str, smells: Sequence[str]) -> list[dict[str, str]]:
    """Messages asking to fix the listed smells."""
    return _user(SMELL_FIX_TEMPLATE.format(test_src=test_src, smells="\n".join(f"- {s}" for s in smells)))

"""Cleaning, label parsing, validation and entropy of model answers (pure, no Prefect)."""

from __future__ import annotations

import math
import pickle

import pytest

from equisa_core import errors
from equisa_core.common.llm_text import (
    LABEL_BUGGY,
    LABEL_NOT_BUGGY,
    InvalidAnswerError,
    LLMError,
    LLMRequestError,
    LLMUnavailableError,
    clean_test_module,
    mean_token_entropy,
    parse_reflection_label,
    render_reask,
    strip_code_fences,
    validate_function_answer,
)
from equisa_core.errors import EquisaError, FunctionNotFoundError

FUNC = "def add(a, b):\n    return a + b\n"
MODULE = '''"""A module."""

import math


class Cart:
    def total(self, items, *, tax: float = 0.0) -> float:
        return sum(items) * (1 + tax)


def add(a, b):
    return a - b
'''


# --- strip_code_fences ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        FUNC,
        "```python\n" + FUNC + "```",
        "```py\n" + FUNC + "```\n",
        "```\n" + FUNC + "```",
        "~~~python\n" + FUNC + "~~~",
        "Here is the fixed function:\n\n```python\n" + FUNC + "```\n\nThis fixes the sign error.",
        "Sure! The bug is the minus sign.\n" + FUNC + "\nThis fixes the sign error.\nHope it helps.",
        "<think>the sign is wrong\nso use +</think>\n```python\n" + FUNC + "```",
        "```python\n" + FUNC,  # an unclosed fence
        "\n\n   \n" + FUNC + "\n\n",
        "def add(a, b):   \r\n    return a + b\r\n",
    ],
)
def test_fences_and_prose_are_removed(answer):
    assert strip_code_fences(answer) == FUNC


def test_decorators_are_kept_and_start_the_code():
    answer = "Explanation first.\n```python\n@cache\n@other.deco(1)\ndef add(a, b):\n    return a + b\n```"
    assert strip_code_fences(answer) == "@cache\n@other.deco(1)\n" + FUNC


def test_the_block_with_a_function_is_chosen():
    answer = "```bash\npytest -q\n```\nthen\n```python\n" + FUNC + "```\n```text\nok\n```"
    assert strip_code_fences(answer) == FUNC


def test_an_indented_method_and_trailing_prose():
    answer = "    def total(self, items):\n        return sum(items)\nThat's all."
    assert strip_code_fences(answer) == "    def total(self, items):\n        return sum(items)\n"


def test_a_multiline_signature_is_not_mistaken_for_the_end():
    code = "def add(\n    a,\n    b,\n) -> int:\n    return a + b\n"
    assert strip_code_fences("Fixed:\n" + code + "Done.") == code


def test_a_second_function_is_kept_for_validation_to_reject():
    code = FUNC + "\n\ndef helper(x):\n    return x\n"
    assert strip_code_fences("```python\n" + code + "```") == code


def test_prose_that_parses_as_an_annotation_is_still_prose():
    assert strip_code_fences(FUNC + "Note: fixed\n") == FUNC


def test_text_without_a_function_is_returned_stripped():
    assert strip_code_fences("I cannot help with that.") == "I cannot help with that.\n"
    assert strip_code_fences("") == ""
    assert strip_code_fences("```\n```") == ""


def test_docstrings_and_nested_code_survive():
    code = 'def add(a, b):\n    """Sum.\n\nNot prose: column 0 inside a string.\n    """\n    return a + b\n'
    assert strip_code_fences("```python\n" + code + "```") == code


# --- parse_reflection_label ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("The loop is off by one.\nCONFIRMED_BUGGY", LABEL_BUGGY),
        ("The callee returned a wrong value.\nCONFIRMED_NOT_BUGGY", LABEL_NOT_BUGGY),
        ("Final decision: **CONFIRMED_NOT_BUGGY**.", LABEL_NOT_BUGGY),
        ('Decision: "CONFIRMED_BUGGY"\n\n', LABEL_BUGGY),
        ("I first thought CONFIRMED_BUGGY, but the callee is wrong.\nCONFIRMED_NOT_BUGGY", LABEL_NOT_BUGGY),
        ("CONFIRMED_NOT_BUGGY at first sight.\nOn reflection:\nCONFIRMED_BUGGY\nThanks.", LABEL_BUGGY),
        ("CONFIRMED_BUGGY CONFIRMED_BUGGY", LABEL_BUGGY),
        ("label: `CONFIRMED_NOT_BUGGY`", LABEL_NOT_BUGGY),
    ],
)
def test_the_last_labelled_line_decides(text, label):
    assert parse_reflection_label(text) == label


@pytest.mark.parametrize(
    "text",
    [
        "",
        "No verdict here; the function looks buggy.",
        "Either CONFIRMED_BUGGY or CONFIRMED_NOT_BUGGY, hard to say.",
        "confirmed_buggy",
        "UNCONFIRMED_BUGGY",
        "CONFIRMED_BUGGYISH",
        "CONFIRMED BUGGY",
        "NOT_CONFIRMED_BUGGY_X",
    ],
)
def test_absent_or_ambiguous_labels_give_none(text):
    assert parse_reflection_label(text) is None


def test_not_buggy_is_never_read_as_buggy():
    assert parse_reflection_label("CONFIRMED_NOT_BUGGY") == LABEL_NOT_BUGGY != LABEL_BUGGY


# --- validate_function_answer --------------------------------------------------------------------


def test_a_valid_answer_is_returned_normalised():
    assert validate_function_answer("\n\n" + FUNC + "\n\n", MODULE, "add") == FUNC
    assert validate_function_answer(FUNC, FUNC, "add") == FUNC


def test_a_method_is_validated_against_its_class():
    method = "def total(self, items, *, tax: float = 0.0) -> float:\n    return sum(items) * tax\n"
    assert validate_function_answer(method, MODULE, "Cart.total") == method
    with pytest.raises(InvalidAnswerError, match="signature"):
        answer = "def total(self, items, tax=0.0) -> float:\n    return 0.0\n"
        validate_function_answer(answer, MODULE, "Cart.total")


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("def add(a, b, c=0):\n    return a + b + c\n", "changes the signature"),
        ("async def add(a, b):\n    return a + b\n", "changes the signature"),
        ("def plus(a, b):\n    return a + b\n", "defines 'plus'"),
        ("def add(a, b):\n    return a +\n", "does not parse"),
        (FUNC + "\n\ndef helper():\n    pass\n", "exactly one function"),
        ("x = 1\n", "exactly one function"),
        ("I cannot help with that.\n", "does not parse"),
        ("", "empty"),
        ("   \n", "empty"),
    ],
)
def test_invalid_answers_are_rejected_with_a_reason(answer, reason):
    with pytest.raises(InvalidAnswerError, match=reason) as info:
        validate_function_answer(answer, MODULE, "add")
    assert info.value.exit_code == 13
    assert info.value.answer == answer


def test_a_missing_original_is_not_the_answers_fault():
    with pytest.raises(FunctionNotFoundError):
        validate_function_answer(FUNC, MODULE, "nope")


# --- render_reask --------------------------------------------------------------------------------


def test_reask_appends_the_answer_and_the_reason():
    messages = [{"role": "user", "content": "fix add"}]
    out = render_reask(messages, "def add(a): ...", "it changes the signature", "add")
    assert out[0] == messages[0] and len(messages) == 1
    assert out[1] == {"role": "assistant", "content": "def add(a): ..."}
    assert out[2]["role"] == "user"
    assert out[2]["content"].startswith("Your answer was rejected: it changes the signature\n")
    assert "`add`" in out[2]["content"]


# --- mean_token_entropy --------------------------------------------------------------------------


def test_entropy_of_certain_tokens_is_zero():
    assert mean_token_entropy([[0.0], [0.0, -math.inf]]) == 0.0


def test_entropy_of_a_fair_choice_is_ln2():
    half = math.log(0.5)
    assert mean_token_entropy([[half, half]]) == pytest.approx(math.log(2))
    assert mean_token_entropy([[half, half], [0.0]]) == pytest.approx(math.log(2) / 2)


def test_the_residual_mass_counts_as_one_outcome():
    # one alternative of p=0.5 and a residual of 0.5: ln 2
    assert mean_token_entropy([[math.log(0.5)]]) == pytest.approx(math.log(2))


def test_no_tokens_no_entropy():
    assert mean_token_entropy([]) is None


# --- errors --------------------------------------------------------------------------------------


def test_llm_errors_have_their_own_exit_codes():
    assert issubclass(LLMError, EquisaError)
    assert (LLMError.exit_code, LLMUnavailableError.exit_code) == (11, 11)
    assert (LLMRequestError.exit_code, InvalidAnswerError.exit_code) == (12, 13)
    # They are the tree's own (tests/test_error_tree.py checks that no other error takes their codes).
    assert (errors.LLMError, errors.InvalidAnswerError) == (LLMError, InvalidAnswerError)


def test_llm_errors_survive_pickling():
    error = LLMUnavailableError(
        "busy", model="m", attempt=3, status_code=429, retry_after=1.5, retryable=False
    )
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is LLMUnavailableError and again.message == "busy" and str(again) == "busy"
    assert (again.model, again.attempt, again.status_code, again.retry_after, again.retryable) == (
        "m", 3, 429, 1.5, False,
    )
    rejected = pickle.loads(pickle.dumps(InvalidAnswerError("bad", answer="x", calls=[1, 2])))
    assert (rejected.answer, rejected.calls) == ("x", (1, 2))


# --- clean_test_module ---------------------------------------------------------------------------

TEST_MODULE = "from pkg import f\n\n\ndef test_f():\n    assert f(1) == 2\n"


def test_clean_test_module_keeps_imports_and_drops_fences_and_thinking():
    answer = f"<think>plan</think>Here you go:\n```python\n{TEST_MODULE}```\nThese tests split the group."
    assert clean_test_module(answer) == TEST_MODULE
    assert clean_test_module(TEST_MODULE) == TEST_MODULE


@pytest.mark.parametrize(
    "answer", ["def test_f(:\n    pass\n", "import os\n\ndef helper():\n    return 1\n", ""]
)
def test_clean_test_module_rejects_broken_or_testless_code(answer):
    with pytest.raises(InvalidAnswerError):
        clean_test_module(answer)

"""The pinning rule's recognition of testgen tests, and the generator prompt's specification block."""

from __future__ import annotations

from equisa_core.testgen.prompts import GENERATOR_TEMPLATE, framework_rules, render_generator
from equisa_core.validation.generated_tests import (
    TESTGEN_MODULE_PREFIX,
    is_testgen_test,
    pinned_note,
    split_testgen_tests,
    testgen_module_path,
    without_testgen,
)

PINNED = "tests/equisa_generated/test_testgen_group_0_shop_prices.py::test_boundary_0_applies_0"


def test_testgen_modules_are_recognised_by_their_path_and_nothing_else_is():
    assert testgen_module_path("shop/prices.py") == f"{TESTGEN_MODULE_PREFIX}shop_prices.py"
    assert testgen_module_path("group_3_shop_prices") == (
        "tests/equisa_generated/test_testgen_group_3_shop_prices.py")
    assert is_testgen_test(PINNED) and is_testgen_test(PINNED.split("::")[0])
    for other in ("tests/equisa_generated/test_carved_group_0.py::test_carved_applies_0",
                  "tests/equisa_generated/test_llm_group_0.py::test_x",
                  "tests/test_testgen_cli.py::test_x",  # the project's own test named like one
                  "test_testgen_x.py::test_y"):
        assert not is_testgen_test(other), other


def test_testgen_outcomes_are_left_out_of_what_judges_a_patch():
    own = "tests/test_prices.py::test_minimum"
    assert split_testgen_tests([PINNED, own]) == ([own], [PINNED])
    assert without_testgen({PINNED: "failed", own: "passed"}) == {own: "passed"}
    assert pinned_note(2, 5) == ("2 testgen tests changed behaviour (not counted: they assert the buggy "
                                 "program's behaviour)")
    assert pinned_note(0, 5) == "unchanged (5 tests; not counted either way)"


def test_the_generator_prompt_is_the_seeds_unless_a_specification_is_given():
    plain = render_generator("shop", "HEAD", "shop/prices.py", "def f():\n    return 1\n", "pytest",
                             uncovered=[2], examples=["def test_f():\n    assert f() == 1"])
    [message] = plain
    seed = GENERATOR_TEMPLATE.format(repo="shop", version="HEAD", code_file="shop/prices.py",
                                     code_src="def f():\n    return 1\n",
                                     test_style_instructions=framework_rules("pytest"))
    assert message["content"].startswith(seed)
    assert "Specification" not in message["content"]
    assert render_generator("shop", "HEAD", "shop/prices.py", "def f():\n    return 1\n", "pytest",
                            uncovered=[2], examples=["def test_f():\n    assert f() == 1"],
                            specification={}, focus=["shop.prices.f"]) == plain
    spec = {"tests/test_prices.py::test_f_is_two": "def test_f_is_two():\n    assert f() == 2\n"}
    [asked] = render_generator("shop", "HEAD", "shop/prices.py", "def f():\n    return 1\n", "pytest",
                               specification=spec, focus=["shop.prices.f"])
    text = asked["content"]
    assert text.startswith(seed)
    tail = text[len(seed):]
    assert "Specification of the intended behaviour" in tail and "`shop.prices.f`" in tail
    assert "# tests/test_prices.py::test_f_is_two\ndef test_f_is_two():\n    assert f() == 2" in tail
    assert "DIFFERENT inputs" in tail and "CORRECT behaviour" in tail

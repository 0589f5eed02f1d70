"""Tests for equisa_core.validation.overfitting: copied expected values and special-case branches
in patches."""

from __future__ import annotations

import textwrap
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from equisa_core.common.source_edit import function_source
from equisa_core.errors import InvalidReplacementError, SourceEditError
from equisa_core.validation.overfitting import (
    TRIVIAL_VALUES,
    OverfittingFinding,
    copied_literals,
    overfitting_findings,
    special_case_branches,
)
from equisa_core.validation.tested_values import expected_values, input_values

INVOICING = Path(__file__).resolve().parents[2] / "examples" / "invoicing"


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def checks(findings: list[OverfittingFinding]) -> list[tuple[str, int]]:
    return [(f.check, f.line) for f in findings]


# --- the invoicing bug ---------------------------------------------------------------------------------

FAILING = {
    "tests/test_discounts.py": "test_threshold_discount_applies_at_exact_minimum",
    "tests/test_invoice.py": "test_threshold_discount_at_exact_minimum",
    "tests/test_parsing.py": "test_parsed_order_reaching_the_threshold_gets_the_discount",
}


@pytest.fixture(scope="module")
def invoicing_tests() -> dict[str, str]:
    return {
        f"{path}::{name}": function_source((INVOICING / path).read_text(encoding="utf-8"), name)
        for path, name in FAILING.items()
    }


@pytest.fixture(scope="module")
def discounts() -> str:
    return (INVOICING / "invoicing" / "discounts.py").read_text(encoding="utf-8")


def test_the_invoicing_failing_tests_expectations_and_inputs(invoicing_tests):
    assert expected_values(invoicing_tests) == {
        "tests/test_discounts.py::test_threshold_discount_applies_at_exact_minimum": {10},
        "tests/test_invoice.py::test_threshold_discount_at_exact_minimum": {
            Decimal("90.00"),
            Decimal("107.10"),
        },
        "tests/test_parsing.py::test_parsed_order_reaching_the_threshold_gets_the_discount": {
            Decimal("10.00")
        },
    }
    inputs = input_values(invoicing_tests)
    # ThresholdDiscount(100, 10).amount(Money("100.00")): the constructor's and the call's arguments.
    assert inputs["tests/test_discounts.py::test_threshold_discount_applies_at_exact_minimum"] == {
        100,
        10,
        Decimal("100.00"),
    }
    assert inputs["tests/test_invoice.py::test_threshold_discount_at_exact_minimum"] == {"DE", 100, 10}


def test_the_correct_invoicing_fix_has_no_finding(discounts, invoicing_tests):
    applies = function_source(discounts, "ThresholdDiscount.applies")
    fixed = applies.replace("subtotal.amount > self.minimum", "subtotal.amount >= self.minimum")
    assert fixed != applies
    assert overfitting_findings(applies, fixed, invoicing_tests) == []


def test_a_special_case_for_the_failing_subtotal_is_found(discounts, invoicing_tests):
    applies = function_source(discounts, "ThresholdDiscount.applies")
    patched = applies.replace(
        "return subtotal.amount > self.minimum.amount",
        'return subtotal.amount > self.minimum.amount or subtotal.amount == Decimal("100.00")',
    )
    [finding] = overfitting_findings(applies, patched, invoicing_tests)
    assert finding.check == "special_case_branch"
    assert finding.line == 3  # the def, the docstring, the return
    assert finding.detail == (
        '`subtotal.amount == Decimal("100.00")` special-cases subtotal.amount at Decimal("100.00"), '
        "an input of test_threshold_discount_applies_at_exact_minimum and 2 more tests"
    )


def test_hard_coding_the_minimum_as_a_new_boundary_is_found(discounts, invoicing_tests):
    applies = function_source(discounts, "ThresholdDiscount.applies")
    patched = applies.replace("subtotal.amount > self.minimum.amount", "subtotal.amount >= 100")
    [finding] = overfitting_findings(applies, patched, invoicing_tests)
    assert finding.check == "special_case_branch"
    assert "adds a boundary exactly at 100" in finding.detail
    assert "where the original has no such constant" in finding.detail


def test_hard_coding_the_discount_amount_is_a_copied_literal(discounts):
    amount = function_source(discounts, "ThresholdDiscount.amount")
    patched = amount.replace("return self.off", 'return Money("10.00")')
    failing = {
        "tests/test_discounts.py::test_amount_at_minimum": src(
            """
            def test_amount_at_minimum():
                discount = ThresholdDiscount(100, 10)
                assert discount.amount(Money("100.00")) == Money("10.00")
            """
        )
    }
    assert overfitting_findings(amount, patched, failing) == [
        OverfittingFinding(
            check="copied_literal",
            line=4,
            detail='returns Money("10.00"): "10.00" is an expected value of test_amount_at_minimum',
        )
    ]


# --- grading: a special-case branch and a copied literal together ----------------------------------------

GRADE = src(
    """
    def letter_grade(score, cutoffs=CUTOFFS):
        for letter, cutoff in cutoffs:
            if score > cutoff:
                return letter
        return "F"
    """
)
GRADE_TEST = {
    "tests/test_grades.py::test_ninety_is_an_a": src(
        """
        def test_ninety_is_an_a():
            assert letter_grade(90) == "A"
        """
    )
}


def test_an_if_on_the_failing_input_returning_the_expected_value():
    patched = src(
        """
        def letter_grade(score, cutoffs=CUTOFFS):
            if score == 90:
                return "A"
            for letter, cutoff in cutoffs:
                if score > cutoff:
                    return letter
            return "F"
        """
    )
    assert overfitting_findings(GRADE, patched, GRADE_TEST) == [
        OverfittingFinding(
            check="special_case_branch",
            line=2,
            detail="`score == 90` special-cases score at 90, an input of test_ninety_is_an_a",
        ),
        OverfittingFinding(
            check="copied_literal", line=3, detail='returns "A", an expected value of test_ninety_is_an_a'
        ),
    ]


def test_the_detectors_alone_agree_with_the_combination():
    patched = GRADE.replace("    for letter", '    if score == 90:\n        return "A"\n    for letter')
    expected = expected_values(GRADE_TEST)
    inputs = input_values(GRADE_TEST)
    assert checks(copied_literals(GRADE, patched, expected)) == [("copied_literal", 3)]
    assert checks(special_case_branches(GRADE, patched, inputs)) == [("special_case_branch", 2)]
    assert copied_literals(GRADE, patched, expected) + special_case_branches(
        GRADE, patched, inputs
    ) == sorted(overfitting_findings(GRADE, patched, GRADE_TEST), key=lambda f: f.check)


def test_literals_already_in_the_original_are_never_findings():
    original = src(
        """
        def letter_grade(score):
            if score > 90:
                return "A"
            if score > 80:
                return "B"
            return "C"
        """
    )
    # `> 90 or == 90` is a spelled-out `>=`: 90 and "A" are the original's own constants.
    patched = original.replace("score > 90:", "score > 90 or score == 90:")
    assert overfitting_findings(original, patched, GRADE_TEST) == []
    # Compared by value, not text: 90.0 and Decimal("90") are the original's 90.
    assert overfitting_findings(original, original.replace("score > 90:", "score >= 90.0:"), GRADE_TEST) == []
    patched = original.replace("score > 90:", 'score > 90 or score == Decimal("90"):')
    assert overfitting_findings(original, patched, GRADE_TEST) == []


def test_an_added_ternary_branch():
    original = "def double(x):\n    return x * 2\n"
    patched = "def double(x):\n    return 7 if x == 42 else x * 2\n"
    tests = {"t::test_double": "def test_double():\n    assert double(42) == 7\n"}
    assert checks(overfitting_findings(original, patched, tests)) == [
        ("copied_literal", 2),
        ("special_case_branch", 2),
    ]


def test_membership_in_a_tuple_of_failing_inputs():
    original = src(
        """
        def greet(name):
            return "Hello, " + name.title + "!"
        """
    )
    patched = src(
        """
        def greet(name):
            if name in ("bob", "eve"):
                return "Hello, Bob!"
            return "Hello, " + name.title + "!"
        """
    )
    tests = {"t::test_greet": 'def test_greet():\n    assert greet("bob") == "Hello, Bob!"\n'}
    findings = overfitting_findings(original, patched, tests)
    assert checks(findings) == [("special_case_branch", 2), ("copied_literal", 3)]
    assert (
        '`name in ("bob", "eve")` special-cases name at "bob", an input of test_greet' == findings[0].detail
    )


def test_a_match_case_on_the_failing_input():
    original = "def reason(code):\n    return REASONS[code]\n"
    patched = src(
        """
        def reason(code):
            match code:
                case 410 | 404:
                    return "Not Found"
            return REASONS[code]
        """
    )
    tests = {"t::test_reason": 'def test_reason():\n    assert reason(404) == "Not Found"\n'}
    findings = overfitting_findings(original, patched, tests)
    assert checks(findings) == [("special_case_branch", 3), ("copied_literal", 4)]
    assert findings[0].detail == "`case 410 | 404` special-cases code at 404, an input of test_reason"


def test_a_comparison_with_the_expected_value_is_a_special_case():
    original = "def net(total, rate):\n    result = total / (1 + rate)\n    return result\n"
    patched = src(
        """
        def net(total, rate):
            result = total / (1 + rate)
            if result != 90:
                result = round(result)
            return result
        """
    )
    tests = {"t::test_net": "def test_net():\n    assert net(107.1, 0.19) == 90\n"}
    [finding] = overfitting_findings(original, patched, tests)
    assert finding.check == "special_case_branch"
    assert finding.detail.endswith("at 90, an expected value of test_net")
    # Without the expected values, special_case_branches sees only inputs.
    assert special_case_branches(original, patched, input_values(tests)) == []


def test_a_local_derived_from_a_parameter_is_a_subject_and_a_global_is_not():
    original = "def fee(order):\n    return order.total * RATE\n"
    derived = src(
        """
        def fee(order):
            amount = order.total
            if amount == 250:
                return 0
            return order.total * RATE
        """
    )
    unrelated = src(
        """
        def fee(order):
            if MODE == 250:
                return 0
            return order.total * RATE
        """
    )
    tests = {"t::test_fee": "def test_fee():\n    assert fee(Order(250)) == 0\n"}
    assert checks(overfitting_findings(original, derived, tests)) == [("special_case_branch", 3)]
    assert overfitting_findings(original, unrelated, tests) == []


def test_a_boundary_at_an_expected_value_is_not_a_special_case():
    # A clamp legitimately compares with the value the test expects.
    original = "def to_byte(value):\n    return value\n"
    patched = "def to_byte(value):\n    if value >= 255:\n        value = LIMIT\n    return value\n"
    tests = {"t::test_clamp": "def test_clamp():\n    assert to_byte(300) == 255\n"}
    assert overfitting_findings(original, patched, tests) == []


def test_assignments_yields_and_containers_count_as_results():
    original = "def totals(order):\n    return order.net, order.gross\n"
    tests = {"t::test_totals": "def test_totals():\n    assert totals(ORDER) == (90.0, 107.1)\n"}
    assigned = "def totals(order):\n    gross = 107.1\n    return order.net, gross\n"
    [finding] = overfitting_findings(original, assigned, tests)
    assert (finding.check, finding.line, finding.detail) == (
        "copied_literal",
        2,
        "assigns to gross 107.1, an expected value of test_totals",
    )
    # The whole tuple is reported once, not again element by element.
    whole = "def totals(order):\n    return (90.0, 107.1)\n"
    [finding] = overfitting_findings(original, whole, tests)
    assert finding.detail == "returns (90.0, 107.1), an expected value of test_totals"
    yielded = "def totals(order):\n    yield {'gross': 107.1}\n"
    [finding] = overfitting_findings(original, yielded, tests)
    assert finding.detail == "yields {'gross': 107.1}: 107.1 is an expected value of test_totals"
    attribute = "def totals(order):\n    order.gross = 107.1\n    return order.net, order.gross\n"
    assert checks(overfitting_findings(original, attribute, tests)) == [("copied_literal", 2)]


def test_numbers_compare_by_value_across_float_int_and_decimal():
    original = "def gross(net):\n    return net * RATE\n"
    tests = {"t::test_gross": "def test_gross():\n    assert gross(90) == pytest.approx(107.1)\n"}
    for literal in ('Decimal("107.10")', "107.1", "107.100", "Money('107.1')"):
        patched = f"def gross(net):\n    return {literal}\n"
        assert checks(overfitting_findings(original, patched, tests)) == [("copied_literal", 2)], literal


def test_a_literal_that_does_not_become_the_result_is_not_copied():
    original = "def f(x):\n    return x\n"
    tests = {"t::test_f": "def test_f():\n    assert f(7.5) == 3\n"}
    for body in ("return round(x, 3)", "return x // 3 + x % 3", "return [x][3:]", "print(3)\n    return x"):
        assert overfitting_findings(original, f"def f(x):\n    {body}\n", tests) == [], body


# --- what the tests expect and pass ---------------------------------------------------------------------

EXPECTATION_FORMS = {
    "right": "assert gross(90) == 107.1",
    "left": "assert 107.1 == gross(90)",
    "approx": "assert gross(90) == pytest.approx(107.1)",
    "approx_rel": "assert gross(90) == approx(107.1, rel=1e-6)",
    "assert_equal": "self.assertEqual(gross(90), 107.1)",
    "assert_almost_equal_swapped": "self.assertAlmostEqual(107.1, gross(90), places=3)",
    "isclose": "assert math.isclose(gross(90), 107.1)",
    "numpy": "np.testing.assert_allclose(gross(90), 107.1, rtol=1e-4)",
    "named": "expected = 107.1\n    result = gross(90)\n    assert result == expected",
    "chained": "assert gross(90) == gross(90.0) == 107.1",
    "conjunction": "assert gross(90) > 0 and gross(90) == 107.1",
}


@pytest.mark.parametrize("form", EXPECTATION_FORMS.values(), ids=EXPECTATION_FORMS.keys())
def test_expectation_forms(form):
    tests = {"t::test_gross": f"def test_gross(self):\n    {form}\n"}
    assert expected_values(tests)["t::test_gross"] == {107.1}
    assert 90 in input_values(tests)["t::test_gross"]
    original = "def gross(net):\n    return net * RATE\n"
    patched = "def gross(net):\n    return 107.1\n"
    assert checks(overfitting_findings(original, patched, tests)) == [("copied_literal", 2)]


def test_membership_expectations_and_constant_folding():
    test = src(
        """
        def test_shapes():
            assert status() in ("ok", "done")
            assert delta() == -3
            assert pair() == (3, "x")
            assert price() == Decimal("10.00")
            assert items() == [4, 5]
            assert table() == {"a": 6}
            assert scaled() == 2 * 50
        """
    )
    assert expected_values({"t": test})["t"] == {
        ("ok", "done"), "ok", "done", -3, (3, "x"), 3, "x", Decimal("10.00"), (4, 5), 4, 5,
        frozenset({("a", 6)}), 6, 100,
    }  # fmt: skip


def test_what_is_not_an_expectation():
    test = src(
        """
        def test_not_expected():
            assert total(11) != 12
            assert total(13) > 14
            assert not total(15) == 16
            self.assertNotEqual(total(17), 18)
            with pytest.raises(ValueError, match="19"):
                total(20)
        """
    )
    assert expected_values({"t": test})["t"] == set()
    assert input_values({"t": test})["t"] == {11, 13, 15, 17, 20}


def test_inputs_include_constructor_arguments_receivers_and_attributes():
    test = src(
        """
        def test_inputs():
            limit = 42
            account = Account("acct-7", balance=Money("12.50"))
            account.overdraft = 300
            account.load({"limits": Limits(daily=Money("500.00"))})
            assert "a;b".split(";") == ["a", "b"]
            assert account.withdraw(limit, note="rent", when=date(2024, 3, 31)) is True
        """
    )
    assert input_values({"t": test})["t"] == {
        42, "acct-7", Decimal("12.50"), 300, Decimal("500.00"), "a;b", ";", "rent", 2024, 3, 31,
    }  # fmt: skip
    # A numeric string passed to an ordinary call counts as its number too.
    parse = {"t": 'def test_parse():\n    assert parse_price("45.00") == Money("45.00")\n'}
    assert input_values(parse)["t"] == {"45.00", Decimal("45")}
    assert expected_values(parse)["t"] == {Decimal("45.00")}


def test_a_unittest_method_cut_out_with_its_indentation_is_read():
    method = "    def test_gross(self):\n        self.assertEqual(gross(90), 107.1)\n"
    assert expected_values({"t": method}) == {"t": {107.1}}


# --- parametrized tests ----------------------------------------------------------------------------------

PARAMETRIZED = src(
    """
    @pytest.mark.parametrize("score, expected", [(95, "A"), (90, "A"), (85, "B")])
    def test_grade(score, expected):
        assert letter_grade(score) == expected
    """
)


def test_parametrize_rows_bind_inputs_and_expected_values_by_use():
    tests = {"tests/test_grades.py::test_grade": PARAMETRIZED}
    assert input_values(tests) == {"tests/test_grades.py::test_grade": {95, 90, 85}}
    assert expected_values(tests) == {"tests/test_grades.py::test_grade": {"A", "B"}}


def test_a_parametrized_id_selects_its_row():
    tests = {"tests/test_grades.py::test_grade[90-A]": PARAMETRIZED}
    assert input_values(tests) == {"tests/test_grades.py::test_grade[90-A]": {90}}
    assert expected_values(tests) == {"tests/test_grades.py::test_grade[90-A]": {"A"}}
    patched = GRADE.replace("    for letter", '    if score == 90:\n        return "A"\n    for letter')
    assert checks(overfitting_findings(GRADE, patched, tests)) == [
        ("special_case_branch", 2),
        ("copied_literal", 3),
    ]
    # The passing rows' inputs are not the failing test's.
    other = GRADE.replace("    for letter", '    if score == 95:\n        return "A"\n    for letter')
    assert checks(overfitting_findings(GRADE, other, tests)) == [("copied_literal", 3)]


def test_explicit_ids_params_and_stacked_decorators():
    source = src(
        """
        @pytest.mark.parametrize("currency", ["EUR", "USD"])
        @pytest.mark.parametrize(
            "amount, expected",
            [pytest.param("10.00", "€10.00", id="ten"), ("0.50", "€0.50")],
            ids=["unused", "half"],
        )
        def test_format(amount, expected, currency):
            assert format_amount(amount, currency) == expected
        """
    )
    # The decorator nearest the function comes first in the id.
    assert input_values({"t::test_format[half-USD]": source})["t::test_format[half-USD]"] == {
        "0.50", Decimal("0.5"), "USD",
    }  # fmt: skip
    assert expected_values({"t::test_format[ten-EUR]": source})["t::test_format[ten-EUR]"] == {"€10.00"}
    # An id that names no combination: every row counts.
    assert expected_values({"t::test_format[nope]": source})["t::test_format[nope]"] == {"€10.00", "€0.50"}


def test_row_ids_by_pytest_rules_and_duplicates_fall_back_to_every_row():
    source = src(
        """
        @pytest.mark.parametrize(
            "x, expected",
            [(Fraction(1, 3), 7), (Fraction(1, 5), 8), (3, 9), (3, 9), (-1.5, None), ("é\\n", 5)],
        )
        def test_f(x, expected):
            assert f(x) == expected
        """
    )

    def expected_for(test_id: str) -> set[object]:
        return expected_values({test_id: source})[test_id]

    # The ids pytest 9 collects: x0-7, x1-8, 3-9_0, 3-9_1, -1.5-None, \xe9\n-5.
    assert expected_for("t::test_f[x1-8]") == {8}
    assert expected_for("t::test_f[-1.5-None]") == {None}
    assert expected_for("t::test_f[\\xe9\\n-5]") == {5}
    # Rows pytest has to number apart (the suffix differs across versions): every row counts.
    assert expected_for("t::test_f[3-9_0]") == {7, 8, 9, None, 5}


def test_a_parameter_used_in_no_recognizable_way_counts_both_ways():
    source = src(
        """
        @pytest.mark.parametrize("payload", [{"id": 17}], indirect=True)
        def test_load(payload, client):
            assert client.status == "loaded"
        """
    )
    assert 17 in input_values({"t": source})["t"]
    assert 17 in expected_values({"t": source})["t"]


# --- trivial values -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "test"),
    [
        ("if n is None:\n        return None", "assert f(None) is None"),
        ("if n == 0:\n        return 0", "assert f(0) == 0"),
        ("if n == 1:\n        return 1", "assert f(1) == 1"),
        ("if n == -1:\n        return -1", "assert f(-1) == -1"),
        ("if n == 2:\n        return True", "assert f(2)"),
        ('if n == "":\n        return ""', 'assert f("") == ""'),
        ("if not n:\n        return []", "assert f([]) == []"),
        ("if n == 0.0:\n        return (0, 1)", "assert f(0.0) == (0, 1)"),
    ],
)
def test_trivial_values_are_never_findings(body, test):
    original = "def f(n):\n    return g(n)\n"
    patched = f"def f(n):\n    {body}\n    return g(n)\n"
    tests = {"t::test_f": f"def test_f():\n    {test}\n"}
    assert overfitting_findings(original, patched, tests) == []


def test_the_trivial_values_can_be_chosen():
    assert TRIVIAL_VALUES == (None, True, False, "", b"", -1, 0, 1, 2)
    original = "def f(n):\n    return g(n)\n"
    patched = "def f(n):\n    if n == 2:\n        return 2\n    return g(n)\n"
    tests = {"t::test_f": "def test_f():\n    assert f(2) == 2\n"}
    assert overfitting_findings(original, patched, tests) == []
    assert checks(overfitting_findings(original, patched, tests, trivial=(None, 0, 1))) == [
        ("special_case_branch", 2),
        ("copied_literal", 3),
    ]


# --- real fixes: no false positives ----------------------------------------------------------------------

REAL_FIXES = {
    "off_by_one_range": (
        "def sum_to(n):\n    total = 0\n    for i in range(n):\n        total += i\n    return total\n",
        "def sum_to(n):\n    total = 0\n    for i in range(n + 1):\n        total += i\n    return total\n",
        "assert sum_to(3) == 6",
    ),
    "plus_one": (
        'def count_lines(text):\n    return text.count("\\n")\n',
        'def count_lines(text):\n    return text.count("\\n") + 1\n',
        'assert count_lines("a\\nb") == 2',
    ),
    "none_guard": (
        "def first_word(s):\n    return s.split()[0]\n",
        "def first_word(s):\n    if s is None:\n        return None\n    return s.split()[0]\n",
        "assert first_word(None) is None",
    ),
    "empty_guard": (
        "def average(xs):\n    return sum(xs) / len(xs)\n",
        "def average(xs):\n    if not xs:\n        return 0.0\n    return sum(xs) / len(xs)\n",
        "assert average([]) == 0.0",
    ),
    "leap_year": (
        "def is_leap(year):\n    return year % 4 == 0\n",
        "def is_leap(year):\n    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\n",
        "assert not is_leap(1900)\n    assert is_leap(2000)",
    ),
    "title_case": (
        "def title(s):\n    return s.capitalize()\n",
        'def title(s):\n    return " ".join(w.capitalize() for w in s.split(" "))\n',
        'assert title("hello world") == "Hello World"',
    ),
    "median_even": (
        "def median(xs):\n    s = sorted(xs)\n    return s[len(s) // 2]\n",
        "def median(xs):\n    s = sorted(xs)\n    n = len(s)\n    if n % 2 == 0:\n"
        "        return (s[n // 2 - 1] + s[n // 2]) / 2\n    return s[n // 2]\n",
        "assert median([1, 2, 3, 4]) == 2.5",
    ),
    "percent": (
        "def tax(price, rate):\n    return price * rate\n",
        "def tax(price, rate):\n    return price * rate / 100\n",
        "assert tax(100, 19) == pytest.approx(19.0)",
    ),
    "clamp_to_byte": (
        "def to_byte(value):\n    return max(0, value)\n",
        "def to_byte(value):\n    return max(0, min(value, 255))\n",
        "assert to_byte(300) == 255",
    ),
    "dict_default": (
        "def count(counts, word):\n    return counts[word]\n",
        "def count(counts, word):\n    return counts.get(word, 0)\n",
        'assert count({}, "spam") == 0',
    ),
    "exception_type": (
        "def lookup(table, key):\n    if key not in table:\n"
        "        raise KeyError(key)\n    return table[key]\n",
        "def lookup(table, key):\n    if key not in table:\n"
        '        raise ValueError(f"unknown key: {key}")\n    return table[key]\n',
        'with pytest.raises(ValueError, match="unknown key: 7"):\n        lookup({}, 7)',
    ),
    "rounding_to_cents": (
        "def round_price(x):\n    return round(x, 1)\n",
        "def round_price(x):\n    return round(x, 2)\n",
        "assert round_price(2.675) == 2.67",
    ),
    "fibonacci_base_case": (
        "def fib(n):\n    if n == 0:\n        return 0\n    return fib(n - 1) + fib(n - 2)\n",
        "def fib(n):\n    if n <= 1:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
        "assert fib(1) == 1",
    ),
    "prime_two": (
        "def is_prime(n):\n    return all(n % d for d in range(2, n)) and n > 2\n",
        "def is_prime(n):\n    if n == 2:\n        return True\n"
        "    return all(n % d for d in range(2, n)) and n > 2\n",
        "assert is_prime(2)",
    ),
    "strip_fields": (
        'def split_fields(line):\n    return line.split(",")\n',
        'def split_fields(line):\n    return [f.strip() for f in line.split(",")]\n',
        'assert split_fields("a, b") == ["a", "b"]',
    ),
    "wrong_variable": (
        "def area(width, height):\n    return width * width\n",
        "def area(width, height):\n    return width * height\n",
        "assert area(3, 4) == 12",
    ),
}


@pytest.mark.parametrize(("original", "patched", "test"), REAL_FIXES.values(), ids=REAL_FIXES.keys())
def test_real_fixes_have_no_finding(original, patched, test):
    assert original != patched
    tests = {"tests/test_fix.py::test_fix": f"def test_fix():\n    {test}\n"}
    assert expected_values(tests) or input_values(tests)
    assert overfitting_findings(original, patched, tests) == []


# --- the function text and bad input ---------------------------------------------------------------------


def test_lines_are_relative_to_the_function_text_decorators_included():
    original = "@cache\ndef f(x):\n    return g(x)\n"
    patched = '@cache\ndef f(x):\n    """Doc."""\n    if x == 42:\n        return 7\n    return g(x)\n'
    tests = {"t::test_f": "def test_f():\n    assert f(42) == 7\n"}
    assert checks(overfitting_findings(original, patched, tests)) == [
        ("special_case_branch", 4),
        ("copied_literal", 5),
    ]


def test_docstrings_and_annotations_hold_no_literals():
    original = "def greet(name):\n    return 'Hi ' + name\n"
    patched = "def greet(name: 'Hello'):\n    '''Hello'''\n    x: 'Hello' = name\n    return 'Hi ' + x\n"
    tests = {"t::test_greet": "def test_greet():\n    assert greet('x') == 'Hello'\n"}
    assert overfitting_findings(original, patched, tests) == []


def test_nothing_failing_means_nothing_found():
    assert overfitting_findings(GRADE, GRADE.replace('"F"', '"E"'), {}) == []


@pytest.mark.parametrize(
    ("original", "patched", "message"),
    [
        ("def f(:\n", "def f():\n    pass\n", "the original function does not parse"),
        ("def f():\n    pass\n", "def f():\nreturn 1\n", "the patched function does not parse"),
        ("def f():\n    pass\n", "class C:\n    pass\n", "exactly one function definition; it has ClassDef"),
        ("x = 1\ndef f():\n    pass\n", "def f():\n    pass\n", "it has Assign, FunctionDef"),
    ],
)
def test_functions_that_do_not_parse_or_are_not_one_function(original, patched, message):
    with pytest.raises(InvalidReplacementError, match=message):
        overfitting_findings(original, patched, {})
    with pytest.raises(SourceEditError):
        copied_literals(original, patched, {})
    with pytest.raises(SourceEditError):
        special_case_branches(original, patched, {})


def test_a_test_source_that_does_not_parse():
    with pytest.raises(InvalidReplacementError, match=r"the source of test 't::test_x' does not parse"):
        expected_values({"t::test_x": "def test_x(:\n"})


def test_findings_are_frozen():
    finding = OverfittingFinding(check="copied_literal", line=1, detail="returns 7")
    frozen: Any = finding  # the assignment a frozen model refuses at run time
    with pytest.raises(ValidationError):
        frozen.line = 2
    unknown_check: Any = "other"  # not one of the checks' names
    with pytest.raises(ValidationError):
        OverfittingFinding(check=unknown_check, line=1, detail="")

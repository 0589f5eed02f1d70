import unittest
from decimal import Decimal

import pytest

from invoicing.money import CurrencyMismatch, Money, format_amount, quantize, to_decimal


def test_to_decimal_accepts_int_str_and_decimal():
    assert to_decimal(3) == Decimal("3")
    assert to_decimal(" 4.50 ") == Decimal("4.50")
    assert to_decimal(Decimal("1.1")) == Decimal("1.1")
    assert to_decimal(0.1) == Decimal("0.1")  # via repr, not the binary approximation


def test_to_decimal_rejects_non_numbers():
    with pytest.raises(ValueError):
        to_decimal("abc")
    with pytest.raises(TypeError):
        to_decimal(True)


def test_quantize_rounds_half_up():
    assert quantize("2.675") == Decimal("2.68")
    assert quantize("0.005") == Decimal("0.01")
    assert quantize("-1.005") == Decimal("-1.01")


def test_money_addition_and_subtraction():
    assert Money("10.10") + Money("0.95") == Money("11.05")
    assert Money("10.10") - Money("0.95") == Money("9.15")


def test_money_multiplication_rounds_to_cents():
    assert Money("19.99") * Decimal("0.125") == Money("2.50")
    assert 3 * Money("0.333") == Money("0.99")


def test_combining_currencies_raises():
    with pytest.raises(CurrencyMismatch):
        Money(1, "EUR") + Money(1, "GBP")


class MoneyFormattingTest(unittest.TestCase):
    def test_euro_with_thousands_separator(self):
        self.assertEqual(str(Money("1234.5")), "€1,234.50")

    def test_negative_pounds(self):
        self.assertEqual(format_amount(Decimal("-5"), "gbp"), "-£5.00")

    def test_unknown_currency_gets_code_suffix(self):
        self.assertEqual(str(Money(12, "chf")), "12.00 CHF")

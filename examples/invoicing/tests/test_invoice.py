from datetime import date

import pytest

from invoicing.discounts import Coupon, PercentageDiscount, ThresholdDiscount
from invoicing.invoice import InvalidCoupon, Invoice, LineItem
from invoicing.money import CurrencyMismatch, Money


@pytest.fixture
def book():
    return LineItem("BK-1", "Fluent Python", 1, Money("20.00"), "reduced")


@pytest.fixture
def lamp():
    return LineItem("LM-7", "Desk lamp", 2, Money("50.00"))


def test_line_item_net_is_quantity_times_price(lamp):
    assert lamp.net == Money("100.00")


def test_line_item_rejects_zero_quantity():
    with pytest.raises(ValueError, match="positive"):
        LineItem("X", "thing", 0, Money(1))


def test_subtotal_sums_lines(book, lamp):
    assert Invoice("DE", items=[book, lamp]).subtotal == Money("120.00")


def test_total_without_discounts(lamp):
    assert Invoice("DE", items=[lamp]).total() == Money("119.00")


def test_mixed_tax_categories(book, lamp):
    invoice = Invoice("DE", items=[book, lamp])
    assert invoice.tax().total == Money("20.40")  # 100 * 19 % + 20 * 7 %
    assert invoice.total() == Money("140.40")


def test_discount_is_applied_before_tax(lamp):
    invoice = Invoice("DE", items=[lamp, lamp], discounts=[PercentageDiscount(10)])
    assert invoice.net_total() == Money("180.00")
    assert invoice.total() == Money("214.20")


def test_threshold_and_percentage_discounts_stack(lamp):
    invoice = Invoice("NL", items=[lamp, lamp],
                      discounts=[PercentageDiscount(10), ThresholdDiscount(100, 10)])
    assert invoice.discount_total() == Money("30.00")
    assert invoice.total() == Money("205.70")  # 170 + 21 %


def test_threshold_discount_at_exact_minimum(lamp):
    invoice = Invoice("DE", items=[lamp], discounts=[ThresholdDiscount(100, 10)])
    assert invoice.net_total() == Money("90.00")
    assert invoice.total() == Money("107.10")


def test_coupon_adds_its_discount(book, lamp):
    invoice = Invoice("FR", items=[book, lamp])
    invoice.apply_coupon(Coupon("WELCOME", PercentageDiscount(50)), on=date(2024, 5, 1))
    assert invoice.net_total() == Money("60.00")
    assert invoice.total() == Money("70.55")  # 50 * 20 % + 10 * 5.5 %


def test_expired_coupon_is_refused(lamp):
    invoice = Invoice("FR", items=[lamp])
    coupon = Coupon("XMAS", PercentageDiscount(20), expires=date(2023, 12, 26))
    with pytest.raises(InvalidCoupon):
        invoice.apply_coupon(coupon, on=date(2024, 1, 2))
    assert invoice.discounts == []


def test_items_in_another_currency_are_refused():
    with pytest.raises(CurrencyMismatch):
        Invoice("GB", currency="GBP", items=[LineItem("X", "thing", 1, Money(5, "EUR"))])

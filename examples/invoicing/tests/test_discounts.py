from datetime import date

import pytest

from invoicing.discounts import Coupon, PercentageDiscount, ThresholdDiscount, apply_discounts
from invoicing.money import Money


def test_percentage_discount():
    assert PercentageDiscount(10).amount(Money("59.90")) == Money("5.99")


def test_percentage_discount_rounds_half_up():
    assert PercentageDiscount("12.5").amount(Money("19.99")) == Money("2.50")


@pytest.mark.parametrize("percent", [0, 101])
def test_percentage_out_of_range_rejected(percent):
    with pytest.raises(ValueError):
        PercentageDiscount(percent)


def test_threshold_discount_below_minimum():
    assert ThresholdDiscount(100, 10).amount(Money("99.99")) == Money(0)


def test_threshold_discount_above_minimum():
    assert ThresholdDiscount(100, 10).amount(Money("150.00")) == Money(10)


def test_threshold_discount_applies_at_exact_minimum():
    # "10 off orders of 100 or more": an order of exactly 100.00 qualifies.
    assert ThresholdDiscount(100, 10).amount(Money("100.00")) == Money(10)


def test_discounts_are_computed_on_the_full_subtotal():
    discounts = [PercentageDiscount(10), PercentageDiscount(5)]
    assert apply_discounts(Money(200), discounts) == Money(30)


def test_discount_never_exceeds_subtotal():
    discounts = [PercentageDiscount(60), PercentageDiscount(50)]
    assert apply_discounts(Money("80.00"), discounts) == Money("80.00")


def test_coupon_valid_on_expiry_day():
    coupon = Coupon("SPRING", PercentageDiscount(15), expires=date(2024, 3, 31))
    assert coupon.is_valid(date(2024, 3, 31), item_count=1)
    assert not coupon.is_valid(date(2024, 4, 1), item_count=1)


def test_coupon_minimum_item_count():
    coupon = Coupon("BULK", PercentageDiscount(5), min_items=3)
    assert not coupon.is_valid(date(2024, 1, 1), item_count=2)
    assert coupon.is_valid(date(2024, 1, 1), item_count=3)

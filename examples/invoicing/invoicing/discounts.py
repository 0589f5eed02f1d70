"""Discounts: percentage off, fixed amount off above a minimum order value, and coupons.

Every discount is computed on the undiscounted subtotal (discounts do not compound), and
``apply_discounts`` never takes more off than the subtotal.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from invoicing.money import Money, to_decimal

__all__ = ["Coupon", "PercentageDiscount", "ThresholdDiscount", "apply_discounts"]


def clamp_to_subtotal(func):
    """Decorator: the discount a function returns is kept between zero and the subtotal."""

    @functools.wraps(func)
    def wrapper(subtotal: Money, discounts) -> Money:
        total = func(subtotal, discounts)
        if total.amount > subtotal.amount:
            return subtotal
        if total.amount < 0:
            return Money(0, subtotal.currency)
        return total

    return wrapper


class PercentageDiscount:
    """``PercentageDiscount(10)``: 10 % off the subtotal."""

    def __init__(self, percent) -> None:
        percent = to_decimal(percent)
        if not Decimal("0") < percent <= Decimal("100"):
            raise ValueError(f"percent must be in (0, 100], got {percent}")
        self.percent = percent

    def amount(self, subtotal: Money) -> Money:
        return subtotal * (self.percent / 100)


class ThresholdDiscount:
    """``ThresholdDiscount(100, 10)``: 10 off orders of 100 or more."""

    def __init__(self, minimum, off, currency: str = "EUR") -> None:
        self.minimum = minimum if isinstance(minimum, Money) else Money(minimum, currency)
        self.off = off if isinstance(off, Money) else Money(off, currency)
        if self.off.amount <= 0:
            raise ValueError("a threshold discount must take something off")

    def applies(self, subtotal: Money) -> bool:
        """Whether the order reaches the minimum order value."""
        return subtotal.amount > self.minimum.amount

    def amount(self, subtotal: Money) -> Money:
        if not self.applies(subtotal):
            return Money(0, subtotal.currency)
        return self.off


@dataclass(frozen=True)
class Coupon:
    """A discount redeemable until ``expires`` (inclusive) on orders of ``min_items`` or more."""

    code: str
    discount: PercentageDiscount | ThresholdDiscount
    expires: date | None = None
    min_items: int = 1

    def is_valid(self, on: date, item_count: int) -> bool:
        if self.expires is not None and on > self.expires:
            return False
        return item_count >= self.min_items


@clamp_to_subtotal
def apply_discounts(subtotal: Money, discounts) -> Money:
    """The total taken off ``subtotal`` by ``discounts``, each computed on the full subtotal."""
    total = Money(0, subtotal.currency)
    for discount in discounts:
        total = total + discount.amount(subtotal)
    return total

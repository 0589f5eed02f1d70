"""Invoices: line items, discounts, then VAT per rate on the discounted amounts."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

from invoicing.discounts import Coupon, apply_discounts
from invoicing.money import CurrencyMismatch, Money
from invoicing.tax import CATEGORIES, TaxBreakdown, normalize_region

__all__ = ["InvalidCoupon", "Invoice", "LineItem"]


class InvalidCoupon(ValueError):
    """A coupon was redeemed after it expired or on too small an order."""


@dataclass
class LineItem:
    sku: str
    description: str
    quantity: int
    unit_price: Money
    category: str = "standard"

    def __post_init__(self) -> None:
        if self.quantity <= 0:
            raise ValueError(f"quantity must be positive, got {self.quantity}")
        if not isinstance(self.unit_price, Money):
            self.unit_price = Money(self.unit_price)
        if self.category not in CATEGORIES:
            raise ValueError(f"unknown tax category {self.category!r}")

    @property
    def net(self) -> Money:
        return self.unit_price * self.quantity


@dataclass
class Invoice:
    region: str
    currency: str = "EUR"
    items: list[LineItem] = field(default_factory=list)
    discounts: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.region = normalize_region(self.region)
        items, self.items = self.items, []
        for item in items:
            self.add_item(item)

    def add_item(self, item: LineItem) -> None:
        if item.unit_price.currency != self.currency:
            raise CurrencyMismatch(
                f"{item.sku} is priced in {item.unit_price.currency}, invoice is in {self.currency}"
            )
        self.items.append(item)

    def apply_coupon(self, coupon: Coupon, on: date) -> None:
        item_count = sum(item.quantity for item in self.items)
        if not coupon.is_valid(on, item_count):
            raise InvalidCoupon(f"coupon {coupon.code} cannot be used on {on.isoformat()}")
        self.discounts.append(coupon.discount)

    @property
    def subtotal(self) -> Money:
        total = Money(0, self.currency)
        for item in self.items:
            total = total + item.net
        return total

    def discount_total(self) -> Money:
        return apply_discounts(self.subtotal, self.discounts)

    def net_total(self) -> Money:
        return self.subtotal - self.discount_total()

    def tax(self) -> TaxBreakdown:
        """VAT per rate; the discount is spread over the lines in proportion to their net."""
        breakdown = TaxBreakdown(self.region, self.currency)
        subtotal = self.subtotal
        if subtotal.amount == 0:
            return breakdown
        share = self.net_total().amount / subtotal.amount
        for item in self.items:
            breakdown.add(item.net * share, item.category)
        return breakdown

    def total(self) -> Money:
        return self.net_total() + self.tax().total

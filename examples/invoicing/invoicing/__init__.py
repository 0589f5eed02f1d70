"""invoicing: line items, discounts and VAT for small web-shop invoices.

Amounts are ``Decimal`` throughout, rounded half up to cents, as tax authorities expect.
"""

from invoicing.discounts import Coupon, PercentageDiscount, ThresholdDiscount, apply_discounts
from invoicing.invoice import InvalidCoupon, Invoice, LineItem
from invoicing.money import CurrencyMismatch, Money, format_amount, quantize, to_decimal
from invoicing.parsing import ParseError, parse_order
from invoicing.tax import TaxBreakdown, UnknownRegion, compute_tax, normalize_region, rate_for

__all__ = [
    "Coupon", "PercentageDiscount", "ThresholdDiscount", "apply_discounts",
    "InvalidCoupon", "Invoice", "LineItem",
    "CurrencyMismatch", "Money", "format_amount", "quantize", "to_decimal",
    "ParseError", "parse_order",
    "TaxBreakdown", "UnknownRegion", "compute_tax", "normalize_region", "rate_for",
]

__version__ = "0.3.1"

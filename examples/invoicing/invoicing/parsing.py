"""Orders as text, one line item per line: ``sku, description, quantity, unit price[, category]``.

Blank lines and ``#`` comments are skipped, so is a leading header line whose first field is
``sku``. Prices may carry a currency symbol and thousands separators (quote them: ``"1,299.00"``).
"""

from __future__ import annotations

import csv

from invoicing.invoice import LineItem
from invoicing.money import Money, to_decimal

__all__ = ["ParseError", "parse_order", "parse_price", "parse_quantity"]

_PRICE_DECORATION = "€£$ "


class ParseError(ValueError):
    """A line of an order could not be read; the message starts with its line number."""


def _split_fields(line: str) -> list[str]:
    return [field.strip() for field in next(csv.reader([line], skipinitialspace=True))]


def parse_quantity(text: str) -> int:
    """``"3"`` or ``"3x"`` -> 3; zero, negatives and fractions raise ``ValueError``."""
    cleaned = text.strip().lower().removesuffix("x").strip()
    if not cleaned.isdigit():
        raise ValueError(f"bad quantity {text!r}")
    quantity = int(cleaned)
    if quantity == 0:
        raise ValueError("quantity must be positive")
    return quantity


def parse_price(text: str, currency: str = "EUR") -> Money:
    """``"€1,299.00"`` -> ``Money("1299.00")``; negative prices raise ``ValueError``."""
    cleaned = text.strip().strip(_PRICE_DECORATION).replace(",", "")
    amount = to_decimal(cleaned)
    if amount < 0:
        raise ValueError(f"negative price {text!r}")
    return Money(amount, currency)


def parse_order(text: str, currency: str = "EUR") -> list[LineItem]:
    """Every line item of ``text``; a malformed line raises ``ParseError`` naming its line."""
    items: list[LineItem] = []
    for line_no, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = _split_fields(line)
        if not items and fields[0].lower() == "sku":
            continue
        if len(fields) not in (4, 5):
            raise ParseError(f"line {line_no}: expected 4 or 5 fields, got {len(fields)}")
        sku, description, quantity, price, *rest = fields
        category = rest[0].lower() if rest and rest[0] else "standard"
        try:
            items.append(LineItem(sku, description, parse_quantity(quantity),
                                  parse_price(price, currency), category))
        except ValueError as error:
            raise ParseError(f"line {line_no}: {error}") from None
    return items

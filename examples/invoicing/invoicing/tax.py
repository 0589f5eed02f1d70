"""VAT rates by region and category, and the per-rate breakdown printed on an invoice."""

from __future__ import annotations

from decimal import Decimal

from invoicing.money import Money

__all__ = [
    "CATEGORIES", "STANDARD_RATES", "REDUCED_RATES", "TaxBreakdown", "UnknownRegion",
    "compute_tax", "normalize_region", "rate_for",
]

CATEGORIES = ("standard", "reduced", "exempt")

STANDARD_RATES = {
    "DE": Decimal("0.19"),
    "FR": Decimal("0.20"),
    "NL": Decimal("0.21"),
    "IE": Decimal("0.23"),
    "DK": Decimal("0.25"),
    "GB": Decimal("0.20"),
}
#: Books, food and the like. Regions missing here charge the standard rate.
REDUCED_RATES = {
    "DE": Decimal("0.07"),
    "FR": Decimal("0.055"),
    "NL": Decimal("0.09"),
    "IE": Decimal("0.135"),
    "GB": Decimal("0.05"),
}
REGION_ALIASES = {"UK": "GB", "GER": "DE", "DEU": "DE", "FRA": "FR", "NLD": "NL"}


class UnknownRegion(KeyError):
    """No VAT rates are known for a region."""


def normalize_region(code: str) -> str:
    """``" uk "`` -> ``"GB"``: trimmed, upper-cased, aliases resolved."""
    region = code.strip().upper()
    return REGION_ALIASES.get(region, region)


def rate_for(region: str, category: str = "standard") -> Decimal:
    """The VAT rate of ``category`` goods in ``region``, as a fraction (``0.19``)."""
    region = normalize_region(region)
    if region not in STANDARD_RATES:
        raise UnknownRegion(region)
    if category == "standard":
        return STANDARD_RATES[region]
    if category == "reduced":
        return REDUCED_RATES.get(region, STANDARD_RATES[region])
    if category == "exempt":
        return Decimal("0")
    raise ValueError(f"unknown tax category {category!r}; expected one of {CATEGORIES}")


def compute_tax(net: Money, region: str, category: str = "standard") -> Money:
    """VAT on a net amount, rounded to cents."""
    return net * rate_for(region, category)


class TaxBreakdown:
    """Net amounts grouped by VAT rate; tax is rounded once per rate, not per line."""

    def __init__(self, region: str, currency: str = "EUR") -> None:
        self.region = normalize_region(region)
        self.currency = currency
        self.net_by_rate: dict[Decimal, Money] = {}

    def add(self, net: Money, category: str = "standard") -> None:
        rate = rate_for(self.region, category)
        self.net_by_rate[rate] = self.net_by_rate.get(rate, Money(0, self.currency)) + net

    @property
    def total(self) -> Money:
        tax = Money(0, self.currency)
        for rate, net in sorted(self.net_by_rate.items()):
            tax = tax + net * rate
        return tax

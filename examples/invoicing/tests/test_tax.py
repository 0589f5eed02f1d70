from decimal import Decimal

import pytest

from invoicing.money import Money
from invoicing.tax import TaxBreakdown, UnknownRegion, compute_tax, normalize_region, rate_for


def test_normalize_region_resolves_aliases():
    assert normalize_region(" uk ") == "GB"
    assert normalize_region("deu") == "DE"
    assert normalize_region("fr") == "FR"


def test_standard_rate():
    assert rate_for("DE") == Decimal("0.19")
    assert rate_for("uk") == Decimal("0.20")


def test_reduced_rate():
    assert rate_for("FR", "reduced") == Decimal("0.055")


def test_reduced_rate_falls_back_to_standard():
    assert rate_for("DK", "reduced") == Decimal("0.25")


def test_exempt_goods_pay_no_vat():
    assert rate_for("IE", "exempt") == Decimal("0")


def test_unknown_region_raises():
    with pytest.raises(UnknownRegion):
        rate_for("XX")


def test_unknown_category_raises():
    with pytest.raises(ValueError, match="luxury"):
        rate_for("DE", "luxury")


def test_compute_tax_rounds_to_cents():
    assert compute_tax(Money("19.99"), "DE") == Money("3.80")


def test_breakdown_rounds_once_per_rate():
    breakdown = TaxBreakdown("de")
    breakdown.add(Money("0.03"))
    breakdown.add(Money("0.03"))
    breakdown.add(Money("50.00"), "reduced")
    # 0.06 * 19 % = 0.0114 -> 0.01 (per line it would be 0.01 + 0.01); 50 * 7 % = 3.50
    assert breakdown.total == Money("3.51")

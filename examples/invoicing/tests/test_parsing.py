import pytest

from invoicing.discounts import ThresholdDiscount
from invoicing.invoice import Invoice
from invoicing.money import Money
from invoicing.parsing import ParseError, parse_order, parse_price, parse_quantity

ORDER = """\
sku, description, quantity, unit price, category
# spring catalogue
BK-1, Fluent Python, 1, 45.00, reduced

LM-7, Desk lamp, 2x, €27.50
"""


def test_parse_order_skips_header_comments_and_blank_lines():
    items = parse_order(ORDER)
    assert [item.sku for item in items] == ["BK-1", "LM-7"]
    assert items[0].category == "reduced"
    assert items[1].category == "standard"


def test_parse_order_reads_quantities_and_prices():
    items = parse_order(ORDER)
    assert [item.quantity for item in items] == [1, 2]
    assert items[1].unit_price == Money("27.50")


def test_quoted_price_with_thousands_separator():
    (item,) = parse_order('TV-55, "Television, 55 inch", 1, "€1,299.00"')
    assert item.description == "Television, 55 inch"
    assert item.unit_price == Money("1299.00")


def test_parse_price_keeps_the_currency():
    assert parse_price("£3.20", "GBP") == Money("3.20", "GBP")


def test_parse_quantity_accepts_an_x_suffix():
    assert parse_quantity("3") == 3
    assert parse_quantity(" 12x") == 12
    assert parse_quantity("4 X") == 4


def test_wrong_field_count_names_the_line():
    with pytest.raises(ParseError, match="line 2: expected 4 or 5 fields"):
        parse_order("A, a, 1, 1.00\nB, b, 2")


def test_zero_quantity_names_the_line():
    with pytest.raises(ParseError, match="line 1: quantity must be positive"):
        parse_order("A, a, 0, 1.00")


def test_parsed_order_reaching_the_threshold_gets_the_discount():
    items = parse_order(ORDER)  # 45.00 + 2 * 27.50 = 100.00
    invoice = Invoice("DE", items=items, discounts=[ThresholdDiscount(100, 10)])
    assert invoice.discount_total() == Money("10.00")

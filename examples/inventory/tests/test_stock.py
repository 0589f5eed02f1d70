import pytest

from inventory.stock import Item


def item(on_hand=10):
    return Item("bolt-m6", on_hand=on_hand, reorder_level=5, reorder_quantity=50)


def test_remove_takes_stock_out():
    stock = item()
    stock.remove(4)
    assert stock.on_hand == 6


def test_cannot_remove_more_than_on_hand():
    with pytest.raises(ValueError):
        item(3).remove(4)


def test_reorder_at_the_level():
    assert item(5).needs_reorder()


def test_no_reorder_above_the_level():
    assert not item(6).needs_reorder()


def test_delivery_adds_stock():
    stock = item(2)
    stock.receive(50)
    assert stock.on_hand == 52

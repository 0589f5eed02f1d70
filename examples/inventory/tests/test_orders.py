from inventory.orders import reorders, total_units
from inventory.stock import Item


def warehouse():
    return [Item("bolt", 3, 5, 50), Item("nut", 40, 10, 100), Item("washer", 10, 10, 200)]


def test_reorders():
    assert reorders(warehouse()) == {"bolt": 50, "washer": 200}


def test_total_units():
    assert total_units(warehouse()) == 53


def test_restocked_item_needs_no_reorder():
    items = warehouse()
    items[0].receive(50)
    assert reorders(items) == {"washer": 200}

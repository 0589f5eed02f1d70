"""Reorder suggestions for a whole warehouse."""

from __future__ import annotations

from inventory.stock import Item


def reorders(items: list[Item]) -> dict[str, int]:
    """The quantity to order of every item that needs a reorder, by SKU."""
    return {item.sku: item.reorder_quantity for item in items if item.needs_reorder()}


def total_units(items: list[Item]) -> int:
    """Units on hand across the warehouse."""
    return sum(item.on_hand for item in items)

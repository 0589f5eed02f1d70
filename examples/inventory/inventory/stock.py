"""Stock levels of the items in a warehouse."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Item:
    """One stock-keeping unit: how many are on hand and the level that triggers a reorder."""

    sku: str
    on_hand: int
    reorder_level: int
    reorder_quantity: int

    def needs_reorder(self) -> bool:
        """Whether stock has fallen to the reorder level or below."""
        return self.on_hand <= self.reorder_level

    def remove(self, quantity: int) -> None:
        """Take ``quantity`` out of stock; refuses more than is on hand."""
        if quantity > self.on_hand:
            raise ValueError(f"only {self.on_hand} of {self.sku} on hand")
        self.on_hand -= quantity

    def receive(self, quantity: int) -> None:
        """Add a delivery of ``quantity`` to the stock."""
        self.on_hand -= quantity

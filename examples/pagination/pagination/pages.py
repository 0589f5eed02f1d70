"""Page windows over a list of items."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def page_count(total: int, per_page: int) -> int:
    """How many pages ``total`` items fill, ``per_page`` to a page (at least one page)."""
    if per_page < 1:
        raise ValueError("per_page must be at least 1")
    return max(1, -(-total // per_page))


def page(items: Sequence[T], number: int, per_page: int) -> list[T]:
    """The items of page ``number`` (counted from 1)."""
    if number < 1 or number > page_count(len(items), per_page):
        raise IndexError(f"no page {number}")
    start = (number - 1) * per_page
    return list(items[start:start + per_page - 1])

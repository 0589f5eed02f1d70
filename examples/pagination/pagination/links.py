"""Links to neighbouring pages, as list endpoints return them."""

from __future__ import annotations

from pagination.pages import page_count


def links(total: int, number: int, per_page: int) -> dict[str, int | None]:
    """Numbers of the first, previous, next and last pages (None where there is none)."""
    last = page_count(total, per_page)
    return {
        "first": 1,
        "prev": number - 1 if number > 1 else None,
        "next": number + 1 if number < last else None,
        "last": last,
    }

"""Class statistics over many students' scores."""

from __future__ import annotations

from collections import Counter

from gradebook.grades import letter


def mean(scores: list[float]) -> float:
    """The average score; 0.0 for an empty class."""
    if not scores:
        return 0.0
    return sum(scores) / len(scores)


def distribution(scores: list[float]) -> dict[str, int]:
    """How many students got each letter, every letter listed."""
    counts = Counter(letter(s) for s in scores)
    return {grade: counts.get(grade, 0) for grade in ("A", "B", "C", "D", "F")}


def top(scores: dict[str, float], n: int = 3) -> list[str]:
    """The names of the ``n`` best students, best first (ties by name)."""
    return [name for name, _ in sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:n]]

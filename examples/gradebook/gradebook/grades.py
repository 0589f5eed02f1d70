"""Letter grades from percentage scores."""

from __future__ import annotations

#: Lowest score of each letter, best first.
BOUNDARIES = (("A", 90), ("B", 80), ("C", 70), ("D", 60))


def letter(score: float) -> str:
    """The letter for a score from 0 to 100: 90 or more is an A, 80 or more a B, and so on."""
    if not 0 <= score <= 100:
        raise ValueError(f"score out of range: {score}")
    for grade, lowest in BOUNDARIES:
        if score > lowest:
            return grade
    return "F"


def passed(score: float) -> bool:
    """Whether the score earns a passing letter (anything but F)."""
    return letter(score) != "F"

import pytest

from gradebook.grades import letter, passed


def test_clear_a():
    assert letter(97) == "A"


def test_clear_c():
    assert letter(74.5) == "C"


def test_failing_score():
    assert letter(12) == "F"


def test_exactly_ninety_is_an_a():
    assert letter(90) == "A"


def test_exactly_sixty_passes():
    assert passed(60)


def test_out_of_range_rejected():
    with pytest.raises(ValueError):
        letter(101)

import pytest

from pagination.pages import page, page_count


def test_page_count_rounds_up():
    assert page_count(21, 10) == 3


def test_page_count_of_nothing_is_one():
    assert page_count(0, 10) == 1


def test_bad_page_size_rejected():
    with pytest.raises(ValueError):
        page_count(5, 0)


def test_first_page_is_full():
    assert page(list(range(25)), 1, 10) == list(range(10))


def test_last_page_holds_the_rest():
    assert page(list(range(25)), 3, 10) == [20, 21, 22, 23, 24]


def test_missing_page_rejected():
    with pytest.raises(IndexError):
        page([1, 2, 3], 2, 10)

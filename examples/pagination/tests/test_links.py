from pagination.links import links


def test_links_in_the_middle():
    assert links(95, 3, 10) == {"first": 1, "prev": 2, "next": 4, "last": 10}


def test_links_on_the_first_page():
    assert links(95, 1, 10)["prev"] is None


def test_links_on_the_last_page():
    assert links(95, 10, 10)["next"] is None

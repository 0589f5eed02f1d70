from gradebook.stats import distribution, mean, top


def test_mean():
    assert mean([50, 70, 90]) == 70


def test_mean_of_empty_class():
    assert mean([]) == 0.0


def test_distribution_counts_every_letter():
    assert distribution([95, 85, 55, 42]) == {"A": 1, "B": 1, "C": 0, "D": 0, "F": 2}


def test_top_students():
    assert top({"ada": 91, "bob": 78, "cy": 91, "dee": 60}, n=2) == ["ada", "cy"]

"""The items of ``*args`` in a function's recorded calls seed what the input search passes there
(issue 49): a recorded call holds ``*args`` as one tuple after the keyword-only parameters, and
drawing that tuple as one item passed a tuple where the function takes dicts."""

from __future__ import annotations

from equisa_core.testgen.searched_members import searched_functions
from tests.core.test_input_search import _drawn

COMBINE = '''
def combine(first, *others, replace=True):
    """Each of ``others``' keys in ``first``, replacing or keeping what it held."""
    for other in others:
        for key in other:
            if replace or key not in first:
                first[key] = other[key]
    return first
'''


def test_the_items_of_a_recorded_calls_args_are_drawn_as_items_not_as_one_tuple():
    # combine({"a": 1}, {"b": 2}, replace=False), as the probe records it: first, replace, others.
    seen = {"combine": [("{'a': 1}", "False", "({'b': 2},)")]}
    (combine,) = searched_functions(COMBINE, ["combine"], seen, [])
    first, item, again, replace = combine.strategies
    assert item == again and replace.startswith("_keyword('replace'")
    items = _drawn(item)
    assert items and all(isinstance(value, dict) for value in items), items[:5]
    assert {"b": 2} in items


def test_a_docstring_example_is_read_positionally_as_before():
    source = COMBINE.replace('replacing or keeping what it held."""',
                             'replacing or keeping what it held.\n\n    >>> combine({1: "a"}, {2: "b"})\n    """')
    (combine,) = searched_functions(source, ["combine"], {}, [])
    items = _drawn(combine.strategies[1])
    assert items and all(isinstance(value, dict) for value in items), items[:5]


def test_an_annotated_args_is_drawn_by_its_annotation_when_nothing_was_seen():
    source = COMBINE.replace("def combine(first, *others, replace=True):",
                             "def combine(first: dict, *others: Mapping, replace: bool = True):")
    (combine,) = searched_functions("from typing import Mapping\n" + source, ["combine"], {}, [])
    first, item, again, replace = combine.strategies
    assert item == again and all(isinstance(value, dict) for value in _drawn(item))

"""The repair operator ``initialize_local`` (``equisa_core.repair.operators.initialization``)."""

from __future__ import annotations

from equisa_core.mutation.edits import load_function
from equisa_core.mutation.fix_context import fix_context
from equisa_core.repair.fix_space import fix_candidates
from equisa_core.repair.operators.initialization import updated_before_bound
from tests.fix_space_checks import same_source


def candidates(source: str, qualname: str = "f") -> list[str]:
    context = fix_context(source, qualname)
    return [m.source for m in fix_candidates(source, f"m.{qualname}", start_line=1, context=context,
                                             operators="initialize_local")]


SEARCH = '''def search(x, seq):
    for elem in seq:
        if x <= elem:
            break
        position += 1
    return position
'''


def test_a_counter_updated_before_it_is_bound_gets_its_zero_before_the_loop():
    fixed = SEARCH.replace("    for elem", "    position = 0\n    for elem")
    found = candidates(SEARCH, "search")
    assert any(same_source(c, fixed) for c in found)
    assert found[0] == fixed  # the value the use suggests comes first
    for text in found:
        compile(text, "m.py", "exec")
        assert not same_source(text, SEARCH)


def test_an_accumulator_list_a_set_and_a_dict_get_the_value_their_use_needs():
    source = '''def split(items):
    """Evens and odds."""
    for item in items:
        if item % 2:
            odds.append(item)
        else:
            seen.add(item)
            index[item] = True
    return odds, seen, index
'''
    found = candidates(source, "split")
    for line in ("odds = []", "seen = set()", "index = {}"):
        fixed = source.replace('    """Evens and odds."""\n', f'    """Evens and odds."""\n    {line}\n')
        assert any(same_source(c, fixed) for c in found), line
    assert set(updated_before_bound(load_function(source, "m.split"))) == {"odds", "seen", "index"}


def test_a_string_and_a_product_start_from_empty_and_one():
    source = ("def f(words, n):\n    for w in words:\n        text += w + ' '\n        total *= n\n"
              "    return text, total\n")
    found = candidates(source)
    assert any(same_source(c, source.replace("    for w", "    text = ''\n    for w")) for c in found)
    assert any(same_source(c, source.replace("    for w", "    total = 1\n    for w")) for c in found)


def test_bound_locals_and_parameters_are_left_alone():
    source = "def f(total, xs):\n    count = 0\n    for x in xs:\n        count += x\n        total += x\n" \
             "    return count, total\n"
    assert candidates(source) == []

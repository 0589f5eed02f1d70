"""The strings a module's regular expressions look for join the input search's strings (issue 49:
texts drawn over a module's other strings rarely hold the case change a converter branches on)."""

from __future__ import annotations

import ast
import re

from equisa_core.testgen.pattern_strings import module_patterns, pattern_strings, shortest_match
from equisa_core.testgen.searched_members import searched_functions

CONVERTER = '''
import re
from re import sub as substitute

_BOUNDARY = re.compile(r"(?<=[a-z])([A-Z])")


def dashed(text):
    """``helloWorld`` -> ``hello-world``; a text with no case change is returned as it is."""
    if not _BOUNDARY.search(text):
        return text
    return _BOUNDARY.sub(lambda m: "-" + m.group(1), text).lower()


def squeezed(text):
    return substitute(r"\\s+", " ", text)


def source_of(text):
    return compile(text, "<text>", "eval"), "a b".split(" ")
'''


def test_the_patterns_passed_to_re_are_read_and_nothing_else():
    tree = ast.parse(CONVERTER)
    assert module_patterns(tree) == ["(?<=[a-z])([A-Z])", r"\s+"]  # not the builtin compile's source


def test_each_pattern_gives_the_shortest_text_it_finds_the_same_every_time():
    assert shortest_match("(?<=[a-z])([A-Z])") == "aA"
    assert re.search(r"\d+\.\d+", shortest_match(r"\d+\.\d+") or "")
    assert shortest_match("(") is None  # does not compile
    assert pattern_strings(ast.parse(CONVERTER)) == ["aA", " "]


def test_the_searched_functions_draw_the_case_change_the_pattern_looks_for():
    [dashed] = [f for f in searched_functions(CONVERTER, ["dashed"], {}, []) if f.qualname == "dashed"]
    assert "'aA'" in dashed.strategies[0], dashed.strategies

"""Python's own slips as repair operators (``equisa_core.repair.operators.idioms``), each on a small
function of our own whose known fix must be among the candidates."""

from __future__ import annotations

import ast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from equisa_core.mutation.fix_context import fix_context
from equisa_core.repair.fix_space import fix_candidates
from tests.fix_space_checks import same_source

IDIOMS = ("method_result_assign", "undefined_rename", "assignment_swap", "constant_to_name", "list_wrap",
          "bare_call", "lost_swap", "print_return")


def candidates(source: str, name: str, operator: str, module: str = "") -> list[str]:
    text = module + source
    start = text.count("\n", 0, text.index(f"def {name}")) + 1
    return [m.source for m in fix_candidates(source, f"m.{name}", start_line=start,
                                             context=fix_context(text, name), operators=operator)]


CASES = [
    ("method_result_assign", "unique",
     "def unique(items):\n    kept = []\n    for i in items:\n        if i not in kept:\n"
     "            kept = kept.append(i)\n    return kept\n",
     "            kept.append(i)\n", "            kept = kept.append(i)\n"),
    ("assignment_swap", "oldest",
     "def oldest(people):\n    best = people[0]\n    for person in people:\n        if person[1] > best[1]:\n"
     "            person = best\n    return best\n",
     "            best = person\n", "            person = best\n"),
    ("constant_to_name", "top",
     "def top(values, k):\n    ranked = sorted(values, reverse=True)\n    return ranked[:3]\n",
     "    return ranked[:k]\n", "    return ranked[:3]\n"),
    ("list_wrap", "unique",
     "def unique(items):\n    kept = []\n    for i in items:\n        if i not in kept:\n"
     "            kept = kept + i\n    return kept\n",
     "            kept = kept + [i]\n", "            kept = kept + i\n"),
    ("bare_call", "unique",
     "def unique(items):\n    kept = []\n    for i in items:\n        kept.append(i)\n"
     "        if kept.count(i) > 1:\n            kept.pop\n    return kept\n",
     "            kept.pop()\n", "            kept.pop\n"),
    ("lost_swap", "bubble",
     "def bubble(xs):\n    for _ in xs:\n        for j in range(len(xs) - 1):\n"
     "            if xs[j] > xs[j + 1]:\n"
     "                xs[j] = xs[j + 1]\n                xs[j + 1] = xs[j]\n"
     "    return xs\n",
     "                xs[j], xs[j + 1] = xs[j + 1], xs[j]\n",
     "                xs[j] = xs[j + 1]\n                xs[j + 1] = xs[j]\n"),
    ("print_return", "total",
     "def total(xs):\n    \"\"\"The sum.\"\"\"\n    result = 0\n"
     "    for x in xs:\n        result += x\n    print(result)\n",
     "    return result\n", "    print(result)\n"),
]


@pytest.mark.parametrize(("operator", "name", "source", "fixed_line", "buggy_line"), CASES,
                         ids=[c[0] for c in CASES])
def test_the_known_fix_is_a_candidate_and_every_candidate_compiles(operator, name, source, fixed_line,
                                                                    buggy_line):
    found = candidates(source, name, operator)
    fixed = source.replace(buggy_line, fixed_line)
    assert any(same_source(c, fixed) for c in found), found
    for text in found:
        compile(text, "m.py", "exec")
        assert not same_source(text, source)


def test_a_misspelt_loop_variable_is_renamed_at_every_read():
    source = ("def largest(values):\n    best = values[0]\n    for value in values:\n"
              "        if valeu > best:\n            best = valeu\n    return best\n")
    found = candidates(source, "largest", "undefined_rename")
    assert same_source(found[0], source.replace("valeu", "value"))  # the nearest name first
    assert all("valeu" not in c for c in found)


def test_a_lower_case_constant_is_renamed_to_the_constant():
    source = ("def unique(day, days):\n    count = 0\n    for d in days:\n        if d == day:\n"
              "            count += 1\n    if count <= 1:\n        return true\n    return False\n")
    found = candidates(source, "unique", "undefined_rename")
    assert same_source(found[0], source.replace("return true", "return True"))


def test_a_defined_name_is_never_renamed_and_a_module_name_counts_as_defined():
    source = "def f(xs):\n    return LIMIT + len(xs)\n"
    assert candidates(source, "f", "undefined_rename", module="LIMIT = 3\n\n\n") == []


def test_a_name_read_before_its_binding_is_not_offered_for_a_literal():
    source = "def f(xs):\n    head = xs[0]\n    size = len(xs)\n    return head + size\n"
    found = candidates(source, "f", "constant_to_name")
    assert not any(same_source(c, source.replace("xs[0]", "xs[size]")) for c in found)


def test_a_bare_name_or_a_called_method_is_not_called_again():
    source = "def f(xs):\n    xs\n    xs.sort()\n    return xs\n"
    assert candidates(source, "f", "bare_call") == []


def test_two_assignments_that_do_not_swap_are_left_alone():
    source = "def f(a, b):\n    a = b\n    c = a\n    a = a\n    return a, c\n"
    assert candidates(source, "f", "lost_swap") == []


@pytest.mark.parametrize("source", [
    "def f(xs):\n    if not xs:\n        return 0\n    print(len(xs))\n",  # it returns a value elsewhere
    "def f(xs):\n    print(len(xs), xs)\n",  # two values printed
    "def f(xs):\n    print(xs)\n    xs.sort()\n",  # the print is not the last statement
])
def test_print_is_left_alone_unless_it_is_the_last_statement_of_a_function_returning_nothing(source):
    assert candidates(source, "f", "print_return") == []


def test_a_nested_functions_return_does_not_count_as_the_functions_own():
    source = "def f(xs):\n    def key(x):\n        return -x\n    print(sorted(xs, key=key))\n"
    found = candidates(source, "f", "print_return")
    assert [c.splitlines()[-1] for c in found] == ["    return sorted(xs, key=key)"]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(CASES), st.sampled_from(IDIOMS))
def test_candidates_are_distinct_and_never_the_original(case, operator) -> None:
    _, name, source, _, _ = case
    found = candidates(source, name, operator)
    assert len({ast.dump(ast.parse(c)) for c in found}) == len(found)
    assert not any(same_source(c, source) for c in found)

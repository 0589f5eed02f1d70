"""Tests for equisa_core.repair.operators.templates: the fix patterns of template-based repair.

Each template gets a small function with a realistic bug (written for these tests) whose known
fix must be among the candidates; every candidate must compile, differ from the original and
from every other candidate.
"""

from __future__ import annotations

import ast
import functools
import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from equisa_core.common.source_edit import function_source
from equisa_core.mutation.fix_context import fix_context
from equisa_core.mutation.mutants import Mutant
from equisa_core.repair.fix_space import MAX_PER_SITE, fix_candidates
from tests.fix_space_checks import assert_valid, candidates_of

#: The templates' candidates of one function, checked valid (a template's pattern names the template).
template_candidates = functools.partial(candidates_of, operators="template", pattern_is_operator=False)


def fixing(found: list[Mutant], fixed_module: str, qualname: str) -> Mutant:
    """The candidate that is the fix (StopIteration, failing the test, when there is none)."""
    wanted = ast.dump(ast.parse(function_source(textwrap.dedent(fixed_module), qualname)))
    return next(c for c in found if ast.dump(ast.parse(c.source)) == wanted)


# --- guards around a statement ---------------------------------------------------------------------


def test_a_none_check_around_a_dereference() -> None:
    module = """
        def close_all(handles):
            for handle in handles:
                handle.close()
    """
    fixed = """
        def close_all(handles):
            for handle in handles:
                if handle is not None:
                    handle.close()
    """
    fix = fixing(template_candidates(module, "close_all"), fixed, "close_all")
    assert fix.source == textwrap.dedent(fixed).lstrip("\n")  # the statement's text, indented


def test_a_length_check_around_an_index() -> None:
    module = """
        def nth_or_default(items, n, default):
            result = default
            result = items[n]
            return result
    """
    fixed = """
        def nth_or_default(items, n, default):
            result = default
            if n < len(items):
                result = items[n]
            return result
    """
    fixing(template_candidates(module, "nth_or_default"), fixed, "nth_or_default")


def test_a_try_returns_a_default_for_an_exception_the_module_names() -> None:
    module = """
        def read_config(path):
            try:
                return open(path).read()
            except OSError:
                return ""

        def parse_port(text):
            if not text:
                return 0
            return int(text)
    """
    found = template_candidates(module, "parse_port")
    wrapped = "try:\n                return int(text)\n            except OSError:\n                return 0"
    fixed = module.replace("return int(text)", wrapped)
    fixing(found, fixed, "parse_port")
    fixed = fixed.replace("except OSError", "except Exception")
    fixing(found, fixed, "parse_port")
    # the module's exception, then Exception, each with the literal the function returns and None
    assert len([c for c in found if "try:" in c.source]) == MAX_PER_SITE["template"]


# --- casts -----------------------------------------------------------------------------------------


def test_a_number_concatenated_to_a_string_is_cast() -> None:
    module = """
        def label(count):
            return "items: " + count
    """
    fix = fixing(template_candidates(module, "label"), module.replace("+ count", "+ str(count)"), "label")
    assert fix.description == 'line 3: `"items: " + count` -> `"items: " + str(count)`'


def test_a_true_division_used_as_a_bound_is_cast_to_int() -> None:
    module = """
        def first_half(values):
            return [values[i] for i in range(len(values) / 2)]
    """
    fixed = module.replace("range(len(values) / 2)", "range(int(len(values) / 2))")
    fixing(template_candidates(module, "first_half"), fixed, "first_half")


def test_an_indexed_iterator_is_made_a_list() -> None:
    module = """
        def first_upper(words):
            return map(str.upper, words)[0]
    """
    fixed = module.replace("map(str.upper, words)[0]", "list(map(str.upper, words))[0]")
    fixing(template_candidates(module, "first_upper"), fixed, "first_upper")


# --- returns, comparisons, operands ----------------------------------------------------------------

STACK = """
    class Stack:
        def __init__(self):
            self.items = []

        def snapshot(self):
            return self.items
"""


def test_a_returned_container_is_copied() -> None:
    found = template_candidates(STACK, "Stack.snapshot")
    fixing(found, STACK.replace("return self.items", "return list(self.items)"), "Stack.snapshot")
    fixing(found, STACK.replace("return self.items", "return self.items.copy()"), "Stack.snapshot")
    fixing(found, STACK.replace("return self.items", "return sorted(self.items)"), "Stack.snapshot")


def test_equality_becomes_membership_and_identity_becomes_equality() -> None:
    module = """
        def is_vowel(letter):
            return letter.lower() == "aeiou"
    """
    fixing(template_candidates(module, "is_vowel"), module.replace('== "aeiou"', 'in "aeiou"'), "is_vowel")
    module = """
        def same_total(first, second):
            return sum(first) is not sum(second)
    """
    fixed = module.replace("is not", "!=")
    fixing(template_candidates(module, "same_total"), fixed, "same_total")


def test_the_operands_of_a_subtraction_and_of_a_call_swap() -> None:
    module = """
        def remaining(budget, spent):
            return spent - budget

        def is_count(value):
            return isinstance(int, value)
    """
    swapped = module.replace("spent - budget", "budget - spent")
    fixing(template_candidates(module, "remaining"), swapped, "remaining")
    fixed = module.replace("isinstance(int, value)", "isinstance(value, int)")
    fixing(template_candidates(module, "is_count"), fixed, "is_count")
    # an addition of numbers is commutative: its operands never swap
    assert not template_candidates("def total(a, b):\n    return a + b\n", "total")


# --- properties ------------------------------------------------------------------------------------

_NAMES = st.sampled_from(["a", "b", "items", "total", "key"])
_EXPRESSIONS = st.one_of(
    _NAMES,
    st.integers(0, 3).map(str),
    st.tuples(_NAMES, st.sampled_from(["+", "-", "/", "=="]), _NAMES).map(" ".join),
    st.tuples(_NAMES, _NAMES).map(lambda p: f"{p[0]}[{p[1]}]"),
    st.tuples(_NAMES, _NAMES).map(lambda p: f"{p[0]}.get({p[1]})"),
    st.tuples(_NAMES, _NAMES).map(lambda p: f"divmod({p[0]}, {p[1]})"),
    _NAMES.map(lambda n: f"'n=' + {n}"),
    _NAMES.map(lambda n: f"range({n} / 2)"),
)


@st.composite
def small_modules(draw: st.DrawFn) -> str:
    """A module with an exception class and a function ``target`` of assignments, ifs and returns."""
    lines = ["class LookupFailed(KeyError):", "    pass", "", "def target(a, b, items):"]
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["assign", "if", "expr", "loop"]))
        name, value = draw(_NAMES), draw(_EXPRESSIONS)
        if kind == "assign":
            lines.append(f"    {name} = {value}")
        elif kind == "if":
            lines += [f"    if {value}:", f"        return {draw(_EXPRESSIONS)}"]
        elif kind == "loop":
            lines += [f"    for {name} in {value}:", f"        items.append({draw(_EXPRESSIONS)})"]
        else:
            lines.append(f"    print({value})")
    lines.append(f"    return {draw(_EXPRESSIONS)}")
    return "\n".join(lines) + "\n"


@settings(max_examples=60, deadline=None)
@given(small_modules())
def test_candidates_differ_from_the_original_and_from_each_other(module: str) -> None:
    source = function_source(module, "target")
    context = fix_context(module, "target")
    found = fix_candidates(source, "target", start_line=4, context=context, operators="template")
    assert_valid(source, "target", 4, found, pattern_is_operator=False)
    assert fix_candidates(source, "target", start_line=4, context=context, operators="template") == found

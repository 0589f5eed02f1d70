"""Tests for equisa_core.mutation.mutants: the deterministic mutants of one function."""

from __future__ import annotations

import ast
import bisect
import colorsys
import inspect
import textwrap
from types import ModuleType
from typing import Any

import pytest
from pydantic import ValidationError

from equisa_core.common.source_edit import function_source, list_functions, replace_function
from equisa_core.errors import InvalidReplacementError, SourceEditError
from equisa_core.mutation.mutants import OPERATORS, Mutant, mutate_function

FQN = "pkg.mod.f"


def sources(source: str, operator: str) -> list[str]:
    return [m.source for m in mutate_function(source, FQN, operators=[operator])]


def header(source: str) -> str:
    """Decorators, name and signature of the one function in ``source``."""
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    node.body = []
    return ast.dump(node)


# --- one operator at a time: the exact mutated text ------------------------------------------------

CASES: list[tuple[str, str, list[str]]] = [
    (
        "comparison_swap",
        "def f(a, b):\n    return a < b\n",
        ["def f(a, b):\n    return a <= b\n", "def f(a, b):\n    return a > b\n"],
    ),
    (
        "comparison_swap",
        "def f(a, b):\n    return a >= b or a is not None and a not in b and a == b\n",
        [
            "def f(a, b):\n    return a > b or a is not None and a not in b and a == b\n",
            "def f(a, b):\n    return a <= b or a is not None and a not in b and a == b\n",
            "def f(a, b):\n    return a >= b or a is None and a not in b and a == b\n",
            "def f(a, b):\n    return a >= b or a is not None and a in b and a == b\n",
            "def f(a, b):\n    return a >= b or a is not None and a not in b and a != b\n",
            "def f(a, b):\n    return a >= b or a is not None and a not in b and a <= b\n",
            "def f(a, b):\n    return a >= b or a is not None and a not in b and a >= b\n",
        ],
    ),
    (
        "comparison_swap",
        "def f(n):\n    while n != 0:\n        n -= 1\n",
        [
            "def f(n):\n    while n == 0:\n        n -= 1\n",
            "def f(n):\n    while n > 0:\n        n -= 1\n",
            "def f(n):\n    while n < 0:\n        n -= 1\n",
        ],
    ),
    (
        "boolean_operator_swap",
        "def f(a, b):\n    return a and b\n",
        ["def f(a, b):\n    return a or b\n"],
    ),
    (  # precedence: the swapped operator binds differently, so the edit adds parentheses
        "boolean_operator_swap",
        "def f(a, b, c):\n    return a or b and c\n",
        ["def f(a, b, c):\n    return a and (b and c)\n", "def f(a, b, c):\n    return a or (b or c)\n"],
    ),
    (
        "negate_condition",
        "def f(a, b):\n    if a:\n        return b\n    while b or a:\n        b -= 1\n"
        "    assert a, 'msg'\n    return [1 if not a else 2 for _ in b if _]\n",
        [
            "def f(a, b):\n    if not a:\n        return b\n    while b or a:\n        b -= 1\n"
            "    assert a, 'msg'\n    return [1 if not a else 2 for _ in b if _]\n",
            "def f(a, b):\n    if a:\n        return b\n    while not (b or a):\n        b -= 1\n"
            "    assert a, 'msg'\n    return [1 if not a else 2 for _ in b if _]\n",
            "def f(a, b):\n    if a:\n        return b\n    while b or a:\n        b -= 1\n"
            "    assert not a, 'msg'\n    return [1 if not a else 2 for _ in b if _]\n",
            "def f(a, b):\n    if a:\n        return b\n    while b or a:\n        b -= 1\n"
            "    assert a, 'msg'\n    return [1 if a else 2 for _ in b if _]\n",
            "def f(a, b):\n    if a:\n        return b\n    while b or a:\n        b -= 1\n"
            "    assert a, 'msg'\n    return [1 if not a else 2 for _ in b if not _]\n",
        ],
    ),
    (
        "negate_condition",
        "def f(a):\n    if a:\n        pass\n    elif a > 1:\n        pass\n",
        [
            "def f(a):\n    if not a:\n        pass\n    elif a > 1:\n        pass\n",
            "def f(a):\n    if a:\n        pass\n    elif not a > 1:\n        pass\n",
        ],
    ),
    (
        "constant_off_by_one",
        "def f(x):\n    return x[0] + 5 if True else x\n",
        [
            "def f(x):\n    return x[1] + 5 if True else x\n",
            "def f(x):\n    return x[-1] + 5 if True else x\n",
            "def f(x):\n    return x[0] + 6 if True else x\n",
            "def f(x):\n    return x[0] + 4 if True else x\n",
        ],
    ),
    (
        "range_bound",
        "def f(n):\n    return range(n), range(1, n - 1, 2)\n",
        [
            "def f(n):\n    return range(n + 1), range(1, n - 1, 2)\n",
            "def f(n):\n    return range(n - 1), range(1, n - 1, 2)\n",
            "def f(n):\n    return range(n), range(1, n, 2)\n",
            "def f(n):\n    return range(n), range(1, n - 2, 2)\n",
        ],
    ),
    (
        "subscript_off_by_one",
        "def f(xs, i, j):\n    return xs[i], xs[i:j], xs['key'], xs[1:]\n",
        [
            "def f(xs, i, j):\n    return xs[i + 1], xs[i:j], xs['key'], xs[1:]\n",
            "def f(xs, i, j):\n    return xs[i - 1], xs[i:j], xs['key'], xs[1:]\n",
            "def f(xs, i, j):\n    return xs[i], xs[i + 1:j], xs['key'], xs[1:]\n",
            "def f(xs, i, j):\n    return xs[i], xs[i - 1:j], xs['key'], xs[1:]\n",
            "def f(xs, i, j):\n    return xs[i], xs[i:j + 1], xs['key'], xs[1:]\n",
            "def f(xs, i, j):\n    return xs[i], xs[i:j - 1], xs['key'], xs[1:]\n",
        ],
    ),
    (
        "subscript_off_by_one",
        "def f(xs, n):\n    return xs[n + 1]\n",
        ["def f(xs, n):\n    return xs[n]\n", "def f(xs, n):\n    return xs[n + 2]\n"],
    ),
    (  # string concatenation and %-formatting are left alone
        "arithmetic_swap",
        "def f(a, b):\n    return a + b, a / b, a % b, 'x%s' % a, 'x' + a, a ** 2\n",
        [
            "def f(a, b):\n    return a - b, a / b, a % b, 'x%s' % a, 'x' + a, a ** 2\n",
            "def f(a, b):\n    return a + b, a * b, a % b, 'x%s' % a, 'x' + a, a ** 2\n",
            "def f(a, b):\n    return a + b, a // b, a % b, 'x%s' % a, 'x' + a, a ** 2\n",
            "def f(a, b):\n    return a + b, a / b, a // b, 'x%s' % a, 'x' + a, a ** 2\n",
            "def f(a, b):\n    return a + b, a / b, a % b, 'x%s' % a, 'x' + a, a * 2\n",
        ],
    ),
    (
        "augmented_assignment_swap",
        "def f(a, s):\n    a += 1\n    a *= 2\n    s += 'x'\n    return a\n",
        [
            "def f(a, s):\n    a -= 1\n    a *= 2\n    s += 'x'\n    return a\n",
            "def f(a, s):\n    a += 1\n    a /= 2\n    s += 'x'\n    return a\n",
        ],
    ),
    (
        "boolean_constant_flip",
        "def f(a):\n    return g(a, flag=True)\n",
        ["def f(a):\n    return g(a, flag=False)\n"],
    ),
    (  # one guard per parameter, self and *args/**kwargs excepted, right after the docstring
        "none_guard",
        "def f(self, a, /, b=None, *args, c, **kw):\n    '''Doc.'''\n\n    return a\n",
        [
            "def f(self, a, /, b=None, *args, c, **kw):\n    '''Doc.'''\n"
            "    if a is None:\n        return None\n\n    return a\n",
            "def f(self, a, /, b=None, *args, c, **kw):\n    '''Doc.'''\n"
            "    if b is None:\n        return None\n\n    return a\n",
            "def f(self, a, /, b=None, *args, c, **kw):\n    '''Doc.'''\n"
            "    if c is None:\n        return None\n\n    return a\n",
        ],
    ),
    (
        "none_guard",
        "def f(a):\n\t# why\n\treturn a\n",
        ["def f(a):\n\t# why\n\tif a is None:\n\t\treturn None\n\treturn a\n"],
    ),
    (
        "return_value",
        "def f(a):\n    if a:\n        return a > 1\n    if not a:\n        return not a\n"
        "    if a is None:\n        return True\n    return\n",
        [
            "def f(a):\n    if a:\n        return not a > 1\n    if not a:\n        return not a\n"
            "    if a is None:\n        return True\n    return\n",
            "def f(a):\n    if a:\n        return None\n    if not a:\n        return not a\n"
            "    if a is None:\n        return True\n    return\n",
            "def f(a):\n    if a:\n        return a > 1\n    if not a:\n        return a\n"
            "    if a is None:\n        return True\n    return\n",
            "def f(a):\n    if a:\n        return a > 1\n    if not a:\n        return None\n"
            "    if a is None:\n        return True\n    return\n",
            "def f(a):\n    if a:\n        return a > 1\n    if not a:\n        return not a\n"
            "    if a is None:\n        return False\n    return\n",
            "def f(a):\n    if a:\n        return a > 1\n    if not a:\n        return not a\n"
            "    if a is None:\n        return None\n    return\n",
        ],
    ),
    (  # `c` is bound only once `a + 1` is evaluated: it does not replace that `a`
        "variable_swap",
        "def f(a, b):\n    c = a + 1\n    return c * b\n",
        [
            "def f(a, b):\n    c = b + 1\n    return c * b\n",
            "def f(a, b):\n    c = a + 1\n    return a * b\n",
            "def f(a, b):\n    c = a + 1\n    return b * b\n",
            "def f(a, b):\n    c = a + 1\n    return c * c\n",
            "def f(a, b):\n    c = a + 1\n    return c * a\n",
        ],
    ),
    (  # at most three replacements per read; comprehension and lambda variables are not locals
        "variable_swap",
        "def f(a, b, c, d, e):\n    return [x for x in a if x], lambda b: b\n",
        [
            "def f(a, b, c, d, e):\n    return [x for x in b if x], lambda b: b\n",
            "def f(a, b, c, d, e):\n    return [x for x in c if x], lambda b: b\n",
            "def f(a, b, c, d, e):\n    return [x for x in d if x], lambda b: b\n",
        ],
    ),
    (  # the most recently bound locals are preferred; self is never a replacement
        "variable_swap",
        "def f(self, a):\n    for i in a:\n        x = i\n    return self.g(a)\n",
        [
            "def f(self, a):\n    for i in a:\n        x = a\n    return self.g(a)\n",
            "def f(self, a):\n    for i in a:\n        x = i\n    return self.g(x)\n",
            "def f(self, a):\n    for i in a:\n        x = i\n    return self.g(i)\n",
        ],
    ),
    (
        "argument_swap",
        "def f(a, b):\n    return g(a, b, *a), g(a, a), g(a, key=b)\n",
        ["def f(a, b):\n    return g(b, a, *a), g(a, a), g(a, key=b)\n"],
    ),
    (
        "min_max_swap",
        "def f(a, b):\n    return min(a, b) + max(a)\n",
        ["def f(a, b):\n    return max(a, b) + max(a)\n", "def f(a, b):\n    return min(a, b) + min(a)\n"],
    ),
    ("min_max_swap", "def f(a, min):\n    return min(a)\n", []),  # a parameter, not the builtin
    (
        "any_all_swap",
        "def f(xs):\n    return any(xs) or all(x > 0 for x in xs)\n",
        [
            "def f(xs):\n    return all(xs) or all(x > 0 for x in xs)\n",
            "def f(xs):\n    return any(xs) or any(x > 0 for x in xs)\n",
        ],
    ),
    (
        "unary_minus",
        "def f(a, b):\n    return -a + b\n",
        ["def f(a, b):\n    return a + b\n", "def f(a, b):\n    return -a + -b\n"],
    ),
    (
        "break_continue_swap",
        "def f(xs):\n    for x in xs:\n        if x:\n            break\n        continue\n",
        [
            "def f(xs):\n    for x in xs:\n        if x:\n            continue\n        continue\n",
            "def f(xs):\n    for x in xs:\n        if x:\n            break\n        break\n",
        ],
    ),
    (  # the only statement of a block becomes `pass`
        "statement_removal",
        "def f(a):\n    a.append(1)\n    if a:\n        return a\n    raise ValueError(a)\n",
        [
            "def f(a):\n    if a:\n        return a\n    raise ValueError(a)\n",
            "def f(a):\n    a.append(1)\n    raise ValueError(a)\n",
            "def f(a):\n    a.append(1)\n    if a:\n        pass\n    raise ValueError(a)\n",
            "def f(a):\n    a.append(1)\n    if a:\n        return a\n",
        ],
    ),
    (  # an elif is not a statement of its own on the page: only the whole if-block goes
        "statement_removal",
        "def f(a):\n    if a:\n        a = 1\n    elif a > 1:\n        a = 2\n",
        [
            "def f(a):\n    pass\n",
            "def f(a):\n    if a:\n        pass\n    elif a > 1:\n        a = 2\n",
            "def f(a):\n    if a:\n        a = 1\n    elif a > 1:\n        pass\n",
        ],
    ),
    (
        "statement_duplication",
        "def f(a):\n    a.append(1)  # note\n    n: int = len(a)\n    return n\n",
        [
            "def f(a):\n    a.append(1)  # note\n    a.append(1)  # note\n"
            "    n: int = len(a)\n    return n\n",
            "def f(a):\n    a.append(1)  # note\n    n: int = len(a)\n    n: int = len(a)\n    return n\n",
        ],
    ),
]


@pytest.mark.parametrize(("operator", "source", "expected"), CASES)
def test_each_operator_makes_the_expected_text(operator: str, source: str, expected: list[str]) -> None:
    assert sources(source, operator) == expected


def test_every_operator_has_a_case() -> None:
    assert {case[0] for case in CASES} == set(OPERATORS)
    assert len(OPERATORS) == len(set(OPERATORS))


# --- the repair the engine exists for --------------------------------------------------------------

APPLIES = 'def applies(self, subtotal):\n    """doc"""\n    return subtotal.amount > self.minimum.amount\n'


def test_the_boundary_fix_is_the_first_mutant_with_its_file_line() -> None:
    mutants = mutate_function(APPLIES, "shop.discounts.Discount.applies", start_line=57)
    first = mutants[0]
    assert first == Mutant(
        fqn="shop.discounts.Discount.applies",
        operator="comparison_swap",
        description="line 59: `>` -> `>=`",
        line=59,
        source=APPLIES.replace(" > ", " >= "),
        edit_size=1,
    )
    assert [(m.operator, m.line, m.description) for m in mutants] == [
        ("comparison_swap", 59, "line 59: `>` -> `>=`"),
        ("comparison_swap", 59, "line 59: `>` -> `<`"),
        ("none_guard", 59, "line 59: inserted `if subtotal is None: return None`"),
        (
            "return_value",
            59,
            "line 59: `return subtotal.amount > self.minimum.amount` -> "
            "`return not subtotal.amount > self.minimum.amount`",
        ),
        ("return_value", 59, "line 59: `return subtotal.amount > self.minimum.amount` -> `return None`"),
        ("statement_removal", 59, "line 59: removed `return subtotal.amount > self.minimum.amount`"),
    ]


def test_a_mutant_replaces_the_function_in_its_module() -> None:
    module = "class Discount:\n    minimum = None\n\n    " + APPLIES.replace("\n    ", "\n        ")
    loc = next(loc for loc in list_functions(module) if loc.qualname == "Discount.applies")
    text = function_source(module, "Discount.applies")
    mutant = mutate_function(text, "Discount.applies", start_line=loc.start_line)[0]
    patched = replace_function(module, "Discount.applies", mutant.source)
    assert patched.splitlines()[mutant.line - 1] == "        return subtotal.amount >= self.minimum.amount"


# --- what is never touched -------------------------------------------------------------------------

GUARDED = '''\
@cache(maxsize=1)  # decorator constants stay
@other(True)
def f(a: int = 1, *, b: list[int] = [0], c=-1) -> dict[str, int]:
    """Docstring 1 > 0 and True."""
    y: tuple[int, int] = (a, 2)
    return {"a": a + y[0] if b else c}
'''


def test_decorators_docstring_signature_and_annotations_are_untouched() -> None:
    mutants = mutate_function(GUARDED, FQN)
    assert {m.operator for m in mutants} >= {"constant_off_by_one", "arithmetic_swap", "negate_condition"}
    for mutant in mutants:
        lines = mutant.source.splitlines()
        assert lines[:4] == GUARDED.splitlines()[:4]
        assert header(mutant.source) == header(GUARDED)
        function = ast.parse(mutant.source).body[0]
        assert isinstance(function, ast.FunctionDef)
        assert ast.get_docstring(function) == "Docstring 1 > 0 and True."
        annotations = [s.annotation for s in function.body if isinstance(s, ast.AnnAssign)]
        assert {ast.unparse(a) for a in annotations} <= {"tuple[int, int]"}


NESTED = """\
def outer(a):
    def inner(b, k=1):
        return b > 1 and k
    class K:
        x = 1
    return inner(a) + 1 if a else [n - 1 for n in a]
"""


def test_nested_definitions_are_untouched_but_comprehensions_are_mutated() -> None:
    nested = "    def inner(b, k=1):\n        return b > 1 and k\n    class K:\n        x = 1\n"
    mutants = mutate_function(NESTED, FQN)
    assert mutants
    for mutant in mutants:
        assert nested in mutant.source
    assert any("[n + 1 for n in a]" in m.source for m in mutants)


def test_comments_and_formatting_outside_the_edit_are_kept() -> None:
    source = (
        "def f(a, b):\n"
        "    # leading comment\n"
        "    total   =   a+b   # odd spacing kept\n"
        "    return (a  # first\n"
        "            < b)  # trailing\n"
    )
    mutants = mutate_function(source, FQN)
    by_description = {m.description: m.source for m in mutants}
    assert by_description["line 5: `<` -> `<=`"] == source.replace("< b", "<= b")
    assert by_description["line 3: `+` -> `-`"] == source.replace("a+b", "a-b")
    assert by_description["line 4: `a < b` -> `b < b`"] == source.replace("(a  #", "(b  #")
    for mutant in mutants:
        assert "# leading comment" in mutant.source
        if mutant.operator != "statement_removal":
            assert "    total   =   " in mutant.source and "   # odd spacing kept\n" in mutant.source
            assert ")  # trailing\n" in mutant.source


def test_a_column_after_multibyte_text_is_a_byte_offset() -> None:
    source = 'def f(n):\n    label = "héllo → ☃" if n > 0 else "x"  # ünï\n    return label\n'
    mutants = mutate_function(source, FQN, operators=["comparison_swap", "constant_off_by_one"])
    assert [m.source for m in mutants] == [
        source.replace("n > 0", "n >= 0"),
        source.replace("n > 0", "n < 0"),
        source.replace("n > 0", "n > 1"),
        source.replace("n > 0", "n > -1"),
    ]


def test_line_endings_and_a_missing_final_newline_are_kept() -> None:
    crlf = "def f(n):\r\n    x = n + 1\r\n    return x\r\n"
    removed, duplicated = (
        m.source
        for m in mutate_function(crlf, FQN, operators=["statement_removal", "statement_duplication"])
        if "x = n + 1" in m.description
    )
    assert removed == "def f(n):\r\n    return x\r\n"
    assert duplicated == "def f(n):\r\n    x = n + 1\r\n    x = n + 1\r\n    return x\r\n"
    assert sources("def f(a):\n    a += 1\n    return a", "statement_duplication") == [
        "def f(a):\n    a += 1\n    a += 1\n    return a"
    ]


def test_a_one_line_function_gets_expression_mutants_only() -> None:
    mutants = mutate_function("def f(x): return x > 1\n", FQN)
    assert {m.operator for m in mutants} == {"comparison_swap", "constant_off_by_one", "return_value"}


def test_an_async_generator_gets_no_guard_that_would_not_compile() -> None:
    # `return None` is a SyntaxError in an async generator, which only the compiler reports
    assert sources("async def f(x):\n    yield x\n", "none_guard") == []
    assert sources("async def f(x):\n    y = await x\n    return y\n", "none_guard") == [
        "async def f(x):\n    if x is None:\n        return None\n    y = await x\n    return y\n"
    ]


def test_a_mutant_that_would_not_compile_is_dropped() -> None:
    # without `x = 0` the nested `nonlocal x` has no binding: a compile-time error, not a parse error
    source = (
        "def f():\n    x = 0\n\n"
        "    def inc():\n        nonlocal x\n        x += 1\n\n"
        "    inc()\n    return x\n"
    )
    removed = [m.description for m in mutate_function(source, FQN, operators=["statement_removal"])]
    assert removed == ["line 8: removed `inc()`", "line 9: removed `return x`"]


# --- deduplication, ordering, limits ---------------------------------------------------------------


def test_duplicates_keep_their_first_place() -> None:
    mutants = mutate_function("def f(a):\n    a += 1\n    a += 1\n    return True\n", FQN)
    flips = [m for m in mutants if "return False" in m.source]
    assert [m.operator for m in flips] == ["boolean_constant_flip"]  # not again as return_value
    removals = [m for m in mutants if m.operator == "statement_removal" and "a += 1" in m.description]
    assert [m.source for m in removals] == ["def f(a):\n    a += 1\n    return True\n"]
    dumps = [ast.dump(ast.parse(m.source)) for m in mutants]
    assert len(dumps) == len(set(dumps))
    assert ast.dump(ast.parse("def f(a):\n    a += 1\n    a += 1\n    return True\n")) not in dumps


def test_order_is_operator_priority_then_position() -> None:
    for source in (NESTED, GUARDED, *(real[1] for real in REAL[4:])):
        mutants = mutate_function(source, FQN)
        keys = [(OPERATORS.index(m.operator), m.line) for m in mutants]
        assert keys == sorted(keys)
        assert mutate_function(source, FQN) == mutants  # deterministic


def test_max_mutants_truncates_after_ordering_and_operators_filter() -> None:
    everything = mutate_function(NESTED, FQN)
    assert mutate_function(NESTED, FQN, max_mutants=3) == everything[:3]
    assert mutate_function(NESTED, FQN, max_mutants=0) == []
    assert mutate_function(NESTED, FQN, max_mutants=10_000) == everything
    compared = mutate_function(NESTED, FQN, operators=["comparison_swap"])
    assert compared == [m for m in everything if m.operator == "comparison_swap"]
    assert mutate_function(NESTED, FQN, operators="comparison_swap") == compared
    both = mutate_function(NESTED, FQN, operators=("statement_removal", "comparison_swap"))
    assert [m.operator for m in both] == ["comparison_swap"] * len(compared) + ["statement_removal"] * (
        len(both) - len(compared)
    )
    assert mutate_function(NESTED, FQN, operators=[]) == []


def test_the_whole_list_for_a_small_function_with_edit_sizes() -> None:
    source = "def f(a, b):\n    if a or b:\n        return g(a, b)[0] - 1\n"
    assert [(m.description, m.edit_size) for m in mutate_function(source, FQN)] == [
        ("line 2: `or` -> `and`", 1),
        ("line 2: `a or b` -> `not (a or b)`", 3),
        ("line 3: `0` -> `1`", 1),
        ("line 3: `0` -> `-1`", 2),
        ("line 3: `1` -> `2`", 1),
        ("line 3: `1` -> `0`", 1),
        ("line 3: `-` -> `+`", 1),
        ("line 2: inserted `if a is None: return None`", 7),
        ("line 2: inserted `if b is None: return None`", 7),
        ("line 3: `return g(a, b)[0] - 1` -> `return None`", 11),
        ("line 2: `a or b` -> `b or b`", 1),
        ("line 2: `a or b` -> `a or a`", 1),
        ("line 3: `g(a, b)` -> `g(b, b)`", 1),
        ("line 3: `g(a, b)` -> `g(a, a)`", 1),
        ("line 3: `a, b` -> `b, a`", 2),
        ("line 3: `g(a, b)[0]` -> `-g(a, b)[0]`", 1),
        ("line 2: removed `if a or b: return g(a, b)[0] - 1`", 17),
        ("line 3: removed `return g(a, b)[0] - 1`", 12),
    ]


def test_mutants_are_frozen() -> None:
    mutant = mutate_function(APPLIES, FQN)[0]
    frozen: Any = mutant  # the assignment a frozen model refuses at run time
    with pytest.raises(ValidationError):
        frozen.line = 3


# --- bad input -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "def f(:\n    pass\n",
        "",
        "x = 1\n",
        "class C:\n    def f(self):\n        pass\n",
        "def f():\n    pass\ndef g():\n    pass\n",
        "    def f():\n        pass\n",  # not dedented
    ],
)
def test_source_that_is_not_one_function_is_refused(source: str) -> None:
    with pytest.raises(InvalidReplacementError) as info:
        mutate_function(source, FQN)
    assert isinstance(info.value, SourceEditError)
    assert FQN in info.value.message


def test_bad_arguments_are_value_errors() -> None:
    with pytest.raises(ValueError, match="unknown mutation operator"):
        mutate_function(APPLIES, FQN, operators=["flip_everything"])
    with pytest.raises(ValueError, match="max_mutants"):
        mutate_function(APPLIES, FQN, max_mutants=-1)
    with pytest.raises(ValueError, match="start_line"):
        mutate_function(APPLIES, FQN, start_line=0)


# --- every mutant of real functions is valid -------------------------------------------------------


def stdlib_functions(module: ModuleType, names: list[str]) -> list[tuple[str, str, int]]:
    text = inspect.getsource(module)
    found = []
    for loc in list_functions(text):
        if loc.qualname in names:
            found.append((loc.qualname, function_source(text, loc.qualname), loc.start_line))
    assert sorted(name for name, _, _ in found) == sorted(names)
    return found


REAL = [
    *stdlib_functions(
        textwrap, ["TextWrapper._wrap_chunks", "TextWrapper._split_chunks", "indent", "dedent"]
    ),
    *stdlib_functions(colorsys, ["rgb_to_hls", "hls_to_rgb", "_v", "rgb_to_hsv", "hsv_to_rgb"]),
    *stdlib_functions(bisect, ["insort_right", "bisect_right", "bisect_left"]),
]


@pytest.mark.parametrize(("qualname", "source", "start_line"), REAL, ids=[r[0] for r in REAL])
def test_every_mutant_of_a_real_function_is_valid(qualname: str, source: str, start_line: int) -> None:
    mutants = mutate_function(source, qualname, start_line=start_line)
    assert len(mutants) >= 3
    original = ast.parse(source)
    dumps = {ast.dump(original)}
    n_lines = source.count("\n")
    for mutant in mutants:
        assert mutant.fqn == qualname and mutant.operator in OPERATORS
        compile(mutant.source, "<mutant>", "exec", dont_inherit=True)
        tree = ast.parse(mutant.source)
        assert len(tree.body) == 1
        assert header(mutant.source) == header(source)
        mutated, unmutated = tree.body[0], original.body[0]
        assert isinstance(mutated, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        assert isinstance(unmutated, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        assert ast.get_docstring(mutated) == ast.get_docstring(unmutated)
        dump = ast.dump(tree)
        assert dump not in dumps
        dumps.add(dump)
        assert start_line <= mutant.line < start_line + n_lines
        assert mutant.description.startswith(f"line {mutant.line}: ")
        if mutant.operator == "none_guard":
            assert mutant.source.splitlines()[mutant.line - start_line].strip().startswith("if ")
        elif mutant.operator not in ("statement_removal", "statement_duplication"):
            # the text differs first on the reported line
            before, after = source.splitlines(), mutant.source.splitlines()
            first = next(i for i, (x, y) in enumerate(zip(before, after, strict=False)) if x != y)
            assert start_line + first == mutant.line
    assert mutate_function(source, qualname, start_line=start_line) == mutants

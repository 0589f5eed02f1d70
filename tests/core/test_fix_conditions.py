"""Tests for equisa_core.repair.operators.conditions: conditions widened, narrowed, cut and guards added.

Each test function carries a realistic bug (written for these tests) whose known fix must be among
the candidates of one operator, compared by AST with the fixed function; every candidate must
compile, differ from the original and from every other candidate.
"""

from __future__ import annotations

import ast
import textwrap
import time
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from equisa_core.common.models import EncodedValue, RecordedCall
from equisa_core.common.source_edit import find_function, function_source, list_functions
from equisa_core.mutation.fix_context import FixContext, fix_context
from equisa_core.mutation.mutants import Mutant
from equisa_core.probe.equisa_probe import encode_value
from equisa_core.repair.fix_space import MAX_PER_SITE, REPAIR_OPERATORS
from equisa_core.repair.operators.conditions import broken_invariants, negation
from tests.fix_space_checks import candidates_of

REPO = Path(__file__).resolve().parents[2]
OPERATORS = ("condition_edit", "guard_insert")


def has_fix(found: list[Mutant], fixed_module: str, qualname: str) -> bool:
    """Whether a candidate is the function as ``fixed_module`` spells it (equal ASTs)."""
    wanted = ast.dump(ast.parse(function_source(textwrap.dedent(fixed_module), qualname)))
    return any(ast.dump(ast.parse(c.source)) == wanted for c in found)


def test_operators_are_registered_with_their_caps() -> None:
    assert set(OPERATORS) <= set(REPAIR_OPERATORS)
    assert all(MAX_PER_SITE[op] >= 1 for op in OPERATORS)


# --- condition_edit ---------------------------------------------------------------------------------

SEARCH = """
def first_at_least(lst, target):
    \"\"\"The first item of the sorted list that is not below target, or None.\"\"\"
    if lst[-1] < target:
        return None
    lo, hi = 0, len(lst) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if lst[mid] < target:
            lo = mid + 1
        else:
            hi = mid
    return lst[lo]
"""


def test_a_condition_is_widened_by_a_guard_of_the_name_it_reads() -> None:
    found = candidates_of(SEARCH, "first_at_least", "condition_edit")
    assert has_fix(
        found, SEARCH.replace("if lst[-1] < target:", "if not lst or lst[-1] < target:"), "first_at_least"
    )


BATCHES = """
def is_blank(lst):
    return lst == []


def should_skip(lst, seen):
    \"\"\"A batch is skipped when it was seen before or holds nothing.\"\"\"
    if tuple(lst) in seen:
        return True
    return False
"""


def test_a_condition_is_widened_by_a_condition_of_the_module() -> None:
    found = candidates_of(BATCHES, "should_skip", "condition_edit")
    fixed = BATCHES.replace("if tuple(lst) in seen:", "if tuple(lst) in seen or lst == []:")
    assert has_fix(found, fixed, "should_skip")


DISCOUNT = """
def discounted(price, member, coupon):
    \"\"\"Members get 10% off; a coupon alone is not enough.\"\"\"
    if member and coupon:
        return round(price * 0.9, 2)
    return price
"""


def test_a_clause_is_dropped_and_a_condition_negated() -> None:
    found = candidates_of(DISCOUNT, "discounted", "condition_edit")
    assert has_fix(found, DISCOUNT.replace("if member and coupon:", "if member:"), "discounted")
    assert has_fix(found, DISCOUNT.replace("if member and coupon:", "if coupon:"), "discounted")
    assert has_fix(
        found, DISCOUNT.replace("if member and coupon:", "if not (member and coupon):"), "discounted"
    )


WEIGHTS = """
def total_weight(items):
    total = 0
    for item in items:
        if item.weight > 0:
            total += item.weight
    return total
"""


def test_a_condition_is_narrowed_by_a_none_test_in_front() -> None:
    found = candidates_of(WEIGHTS, "total_weight", "condition_edit")
    fixed = WEIGHTS.replace("if item.weight > 0:", "if item is not None and item.weight > 0:")
    assert has_fix(found, fixed, "total_weight")


PREFIXED = """
def with_prefix(names, prefix):
    return [name for name in names if name.startswith(prefix)]
"""


def test_a_comprehension_condition_is_narrowed() -> None:
    found = candidates_of(PREFIXED, "with_prefix", "condition_edit")
    fixed = PREFIXED.replace("if name.startswith(prefix)", "if name and name.startswith(prefix)")
    assert has_fix(found, fixed, "with_prefix")


FACTORIAL = """
def factorial(n):
    if n == 1:
        return 1
    return n * factorial(n - 1)
"""


def test_an_int_condition_is_widened_by_a_comparison_with_a_constant_of_the_function() -> None:
    found = candidates_of(FACTORIAL, "factorial", "condition_edit")
    assert has_fix(found, FACTORIAL.replace("if n == 1:", "if n == 1 or n < 1:"), "factorial")


def test_names_bound_later_and_comparison_swaps_are_not_offered() -> None:
    found = candidates_of(SEARCH, "first_at_least", "condition_edit")
    first = [c.source for c in found if c.line == 4]
    assert first and not any("mid" in source.splitlines()[3] for source in first)
    assert not any("if lst[-1] <= target:" in source for source in first)


def test_a_ternary_condition_and_a_while_condition_are_edited() -> None:
    module = """
    def clamp_all(values, low):
        out = []
        i = 0
        while i < len(values):
            out.append(values[i] if values[i] > low else low)
            i += 1
        return out
    """
    found = candidates_of(module, "clamp_all", "condition_edit")
    lines = {c.line for c in found}
    assert {5, 6} <= lines
    fixed = module.replace(
        "values[i] if values[i] > low else low",
        "values[i] if values[i] is not None and values[i] > low else low",
    )
    assert not has_fix(found, fixed, "clamp_all")  # values[i] is not a name: no name test of it
    assert has_fix(
        found, module.replace("while i < len(values):", "while not (i < len(values)):"), "clamp_all"
    )


def test_negation_is_written_plainly() -> None:
    for text, negated in [
        ("x is None", "x is not None"),
        ("x not in seen", "x in seen"),
        ("not x", "x"),
        ("a == b", "a != b"),
        ("x < 3", "not x < 3"),
        ("a and b", "not (a and b)"),
    ]:
        assert ast.unparse(negation(ast.parse(text, mode="eval").body)) == negated


# --- guard_insert -----------------------------------------------------------------------------------

LENGTHS = """
def total_length(words):
    total = 0
    for word in words:
        total += len(word)
    return total
"""


def test_a_loop_gets_a_none_guard_that_continues() -> None:
    found = candidates_of(LENGTHS, "total_length", "guard_insert")
    fixed = LENGTHS.replace(
        "        total += len(word)",
        "        if word is None:\n            continue\n        total += len(word)",
    )
    assert has_fix(found, fixed, "total_length")
    assert found[0].description.startswith("line ") and "inserted `if " in found[0].description


MEAN = """
def mean(values):
    \"\"\"The arithmetic mean.\"\"\"
    return sum(values) / len(values)
"""


def test_an_empty_input_returns_zero() -> None:
    found = candidates_of(MEAN, "mean", "guard_insert")
    fixed = MEAN.replace('mean."""\n', 'mean."""\n    if not values:\n        return 0\n')
    assert has_fix(found, fixed, "mean")
    # a guard goes after the docstring, never before it
    for candidate in found:
        definition = ast.parse(candidate.source).body[0]
        assert isinstance(definition, ast.FunctionDef)
        assert ast.get_docstring(definition) == "The arithmetic mean."


ORDERS = """
class InvalidOrder(Exception):
    pass


def check(quantity):
    if quantity < 0:
        raise InvalidOrder("negative quantity")


def unit_price(total, quantity):
    return total / quantity
"""


def test_a_guard_raises_an_exception_the_module_raises() -> None:
    found = candidates_of(ORDERS, "unit_price", "guard_insert")
    fixed = ORDERS.replace(
        "    return total / quantity",
        "    if not quantity:\n        raise InvalidOrder('not quantity')\n    return total / quantity",
    )
    assert has_fix(found, fixed, "unit_price")
    assert not any("raise ValueError" in c.source for c in found)  # not raised anywhere in the module


def test_a_function_without_a_return_value_gets_a_bare_return() -> None:
    module = """
    def log_all(lines, sink):
        for line in lines:
            sink.write(line)
    """
    module = textwrap.dedent(module)
    found = candidates_of(module, "log_all", "guard_insert")
    fixed = module.replace("    for line", "    if sink is None:\n        return\n    for line")
    assert has_fix(found, fixed, "log_all")
    assert not any("return None" in c.source or "return lines" in c.source for c in found)


def ev(value: Any) -> EncodedValue:
    """Encode a value exactly as the probe does."""
    return EncodedValue(**encode_value(value))


def call(part: Any, whole: Any, result: Any = None, raised: str | None = None) -> RecordedCall:
    return RecordedCall(
        fqn="shop.ratio.safe_ratio",
        args={"part": ev(part), "whole": ev(whole)},
        result=None if raised else ev(result),
        raised=raised,
    )


RATIO = """
def safe_ratio(part, whole):
    share = part / whole
    return round(share, 3)
"""


def test_a_guard_negates_the_invariant_a_failing_call_breaks() -> None:
    module = textwrap.dedent(RATIO)
    passing = [call(1, 2, 0.5), call(3, 4, 0.75), call(2, 8, 0.25)]
    failing = [call(1, 0, raised="builtins.ZeroDivisionError")]
    context = fix_context(module, "safe_ratio", passing_calls=passing, failing_calls=failing)
    assert context.passing_calls == tuple(passing) and context.failing_calls == tuple(failing)
    assert broken_invariants(context, ["part", "whole"]) == ["whole > 0"]
    found = candidates_of(RATIO, "safe_ratio", "guard_insert", context)
    fixed = RATIO.replace("    share =", "    if not whole > 0:\n        return 0\n    share =")
    assert has_fix(found, fixed, "safe_ratio")
    assert found[0].source == textwrap.dedent(fixed).lstrip("\n")  # the broken invariant comes first
    without = candidates_of(RATIO, "safe_ratio", "guard_insert")
    assert not has_fix(without, fixed, "safe_ratio")
    # calls that break nothing give no invariant guard
    quiet = fix_context(module, "safe_ratio", passing_calls=passing, failing_calls=[call(5, 10, 0.5)])
    assert broken_invariants(quiet, ["part", "whole"]) == []


def test_fix_context_keeps_its_old_signature_and_gathers_conditions_and_raises() -> None:
    context = fix_context(textwrap.dedent(ORDERS), "unit_price")
    assert context.passing_calls == () and context.failing_calls == ()
    assert context.raised_exceptions == ("InvalidOrder",)
    assert context.module_conditions == ("quantity < 0",)
    assert FixContext.model_validate_json(context.model_dump_json()) == context


def test_guards_never_go_before_an_elif_or_a_statement_sharing_its_line() -> None:
    module = """
    def sign(x, zero):
        if x > 0: return 1
        elif x < 0:
            return -1
        return zero
    """
    found = candidates_of(module, "sign", "guard_insert")
    assert found and all("elif x < 0:" in c.source for c in found)
    start = find_function(textwrap.dedent(module), "sign").start_line
    assert {c.site_line for c in found} == {start + 1, start + 4}  # before the `if` and `return zero`


# --- the examples and properties --------------------------------------------------------------------


def example_functions() -> list[tuple[str, str]]:
    """(module path, qualname) of every function in the bundled examples' packages."""
    found = []
    for path in sorted((REPO / "examples").glob("*/*/*.py")):
        if not path.name.startswith("test_"):
            found += [(str(path.relative_to(REPO)), loc.qualname) for loc in list_functions(path.read_text())]
    return found


def test_candidates_over_the_example_functions_stay_bounded() -> None:
    counts: dict[str, int] = dict.fromkeys(OPERATORS, 0)
    functions = example_functions()
    started = time.perf_counter()
    for path, qualname in functions:
        found = candidates_of((REPO / path).read_text(), qualname, OPERATORS)
        for candidate in found:
            counts[candidate.operator] += 1
    elapsed = time.perf_counter() - started
    print(f"{len(functions)} functions: {counts} in {elapsed:.1f}s")
    assert len(functions) >= 40
    assert all(count > 0 for count in counts.values())
    assert sum(counts.values()) < 60 * len(functions)


_NAMES = st.sampled_from(["a", "b", "n", "items", "total", "key"])
_CONDITIONS = st.one_of(
    _NAMES,
    st.tuples(_NAMES, st.sampled_from(["<", "==", "is", "in"]), _NAMES).map(" ".join),
    st.tuples(_NAMES, _NAMES).map(lambda p: f"{p[0]} and not {p[1]}"),
    st.tuples(_NAMES, _NAMES, _NAMES).map(lambda p: f"{p[0]} or {p[1]} > {p[2]}"),
    st.tuples(_NAMES, _NAMES).map(lambda p: f"isinstance({p[0]}, int) and {p[1]}"),
    _NAMES.map(lambda n: f"len({n}) > 1"),
)


@st.composite
def small_modules(draw: st.DrawFn) -> str:
    """A module with a helper and a function ``target`` of ifs, loops, ternaries and returns."""
    lines = ["def helper(x):", "    if x is None:", "        raise ValueError('x')", "    return x", ""]
    lines.append("def target(a, b, items):")
    for _ in range(draw(st.integers(1, 5))):
        shape = draw(st.sampled_from(["assign", "loop", "if", "while", "ternary", "comprehension"]))
        name, condition = draw(_NAMES), draw(_CONDITIONS)
        if shape == "assign":
            lines.append(f"    {name} = {draw(_NAMES)} + 1")
        elif shape == "loop":
            lines += [f"    for {name} in {draw(_NAMES)}:", f"        if {condition}:", "            break"]
        elif shape == "if":
            lines += [f"    if {condition}:", f"        return {draw(_NAMES)}"]
        elif shape == "while":
            lines += [f"    while {condition}:", f"        {name} = {name} - 1"]
        elif shape == "ternary":
            lines.append(f"    {name} = {draw(_NAMES)} if {condition} else 0")
        else:
            lines.append(f"    {name} = [v for v in items if {condition}]")
    lines.append(f"    return {draw(_NAMES)}")
    return "\n".join(lines) + "\n"


@settings(max_examples=60, deadline=None)
@given(small_modules())
def test_candidates_are_distinct_and_never_the_original(module: str) -> None:
    found = candidates_of(module, "target", OPERATORS)
    assert len(found) == len({c.source for c in found})
    assert candidates_of(module, "target", OPERATORS) == found  # deterministic

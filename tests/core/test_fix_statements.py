"""Tests for equisa_core.repair.operators.statements: statements copied, swapped and moved.

Each operator gets small functions with a realistic statement-level bug (written for these tests)
whose known fix must be among its candidates; every candidate must compile, differ from the
original and from every other candidate.
"""

from __future__ import annotations

import ast
import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from equisa_core.common.source_edit import function_source
from equisa_core.mutation.fix_context import fix_context
from equisa_core.mutation.mutants import Mutant
from equisa_core.repair.fix_space import MAX_PER_SITE, fix_candidates
from tests.fix_space_checks import assert_valid, candidates_of

STATEMENT_OPERATORS = ("statement_copy", "statement_swap", "statement_move")


def has_fix(found: list[Mutant], fixed_module: str, qualname: str) -> bool:
    """Whether a candidate is the function as ``fixed_module`` spells it (equal ASTs)."""
    wanted = ast.dump(ast.parse(function_source(textwrap.dedent(fixed_module), qualname)))
    return any(ast.dump(ast.parse(c.source)) == wanted for c in found)


def fixing(found: list[Mutant], fixed_module: str, qualname: str) -> Mutant:
    """The candidate that is the fix (the test fails when there is none)."""
    wanted = ast.dump(ast.parse(function_source(textwrap.dedent(fixed_module), qualname)))
    return next(c for c in found if ast.dump(ast.parse(c.source)) == wanted)


# --- statement_move --------------------------------------------------------------------------------

CONTAINS = """
    def contains(item, sequence):
        for element in sequence:
            if element == item:
                return True
            return False
"""
CONTAINS_FIXED = """
    def contains(item, sequence):
        for element in sequence:
            if element == item:
                return True
        return False
"""


def test_a_return_inside_a_loop_is_dedented_after_it() -> None:
    found = candidates_of(CONTAINS, "contains", ("statement_move",))
    fix = fixing(found, CONTAINS_FIXED, "contains")
    assert fix.description == "line 6: dedented out of its block `return False`"
    # a one-line edit: only the indentation of the moved line changes
    assert fix.source == textwrap.dedent(CONTAINS_FIXED).lstrip("\n")
    assert fix.site_line == 6


COUNT_UP = """
    def count_up(limit):
        seen = []
        i = 0
        while i < limit:
            seen.append(i)
        i += 1
        return seen
"""


def test_an_increment_after_a_while_body_is_indented_into_it() -> None:
    found = candidates_of(COUNT_UP, "count_up", ("statement_move",))
    fixed = COUNT_UP.replace(
        "            seen.append(i)\n        i += 1", "            seen.append(i)\n            i += 1"
    )
    assert has_fix(found, fixed, "count_up")


ROW_COUNTS = """
    def row_counts(rows):
        counts = []
        count = 0
        for row in rows:
            for cell in row:
                if cell:
                    count += 1
            counts.append(count)
        return counts
"""


def test_an_initialisation_moves_into_the_loop_it_should_reset_in() -> None:
    found = candidates_of(ROW_COUNTS, "row_counts", ("statement_move",))
    fixed = ROW_COUNTS.replace(
        "        count = 0\n        for row in rows:\n", "        for row in rows:\n            count = 0\n"
    )
    assert has_fix(found, fixed, "row_counts")


def test_a_block_s_first_statement_moves_out_before_it() -> None:
    module = """
        def totals(orders):
            result = {}
            for order in orders:
                tax_rate = 0.2
                result[order.id] = order.net * (1 + tax_rate)
            return result
    """
    found = candidates_of(module, "totals", ("statement_move",))
    fixed = """
        def totals(orders):
            result = {}
            tax_rate = 0.2
            for order in orders:
                result[order.id] = order.net * (1 + tax_rate)
            return result
    """
    assert has_fix(found, fixed, "totals")


def test_a_text_without_a_final_line_ending_and_a_multi_line_statement() -> None:
    module = (
        "def pairs(xs):\n"
        "    out = []\n"
        "    for x in xs:\n"
        "        out.append((x,\n"
        "                    x * 2))\n"
        "    return out"
    )
    found = candidates_of(module, "pairs")
    fixed = (
        "def pairs(xs):\n"
        "    out = []\n"
        "    for x in xs:\n"
        "        out.append((x,\n"
        "                    x * 2))\n"
        "        return out"
    )
    assert has_fix(found, fixed, "pairs")
    assert any(c.operator == "statement_swap" for c in found)


# --- statement_swap --------------------------------------------------------------------------------

SEGMENTS = """
    def segments(path):
        parts = path.split("/")
        path = path.strip("/")
        return [part for part in parts if part]
"""


def test_two_adjacent_statements_swap() -> None:
    found = candidates_of(SEGMENTS, "segments", ("statement_swap",))
    fixed = """
        def segments(path):
            path = path.strip("/")
            parts = path.split("/")
            return [part for part in parts if part]
    """
    fix = fixing(found, fixed, "segments")
    assert fix.description == 'line 3: swapped with the next statement `parts = path.split("/")`'
    assert len(found) == 2  # one per adjacent pair


def test_a_statement_hops_over_a_block_but_two_blocks_do_not_swap() -> None:
    module = """
        def drain(queue, log):
            while queue:
                log.append(queue.pop())
            if log:
                log.sort()
            log.clear()
    """
    found = candidates_of(module, "drain", ("statement_swap",))
    assert len(found) == 1
    assert has_fix(
        found,
        """
        def drain(queue, log):
            while queue:
                log.append(queue.pop())
            log.clear()
            if log:
                log.sort()
        """,
        "drain",
    )


def test_nothing_moves_above_the_binding_of_a_name_it_reads() -> None:
    module = """
        def mean(values):
            total = 0
            count = len(values)
            for value in values:
                total += value
                print(total)
            return total / count
    """
    found = candidates_of(module, "mean", ("statement_swap", "statement_move"))
    for candidate in found:
        lines = candidate.source.splitlines()
        assert lines.index("    total = 0") < min(i for i, ln in enumerate(lines) if "total +=" in ln)
        assert "    total += value" not in lines  # the first statement of the loop stays in it
    # the two independent assignments still swap
    assert any(c.source.index("count = len") < c.source.index("total = 0") for c in found)


# --- statement_copy --------------------------------------------------------------------------------

SQUARES = """
    def squares(values):
        acc = []
        for v in values:
            acc.append(v * v)
        return acc

    def even_squares(values):
        acc = []
        for v in values:
            if v % 2 == 0:
                pass
        return acc
"""


def test_a_missing_statement_is_copied_from_a_sibling_function() -> None:
    found = candidates_of(SQUARES, "even_squares", ("statement_copy",))
    fixed = SQUARES.replace(
        "            if v % 2 == 0:\n                pass\n",
        "            if v % 2 == 0:\n                acc.append(v * v)\n                pass\n",
    )
    fix = fixing(found, fixed, "even_squares")
    assert fix.description == "line 12: inserted `acc.append(v * v)`"
    # nothing is inserted where it could never run, after the return
    assert not any(c.source.rstrip().endswith("return acc\n    acc.append(v * v)") for c in found)


def test_a_copied_statement_with_one_name_out_of_scope_is_renamed() -> None:
    module = """
        def total_price(prices):
            total = 0
            for price in prices:
                total += price
            return total

        def total_weight(items):
            total = 0
            for item in items:
                print(item)
            return total
    """
    found = candidates_of(module, "total_weight", ("statement_copy",))
    fixed = module.replace(
        "                print(item)\n", "                print(item)\n                total += item\n"
    )
    fix = fixing(found, fixed, "total_weight")
    assert fix.description == "line 12: inserted `total += item`"


def test_names_must_be_in_scope_where_a_statement_goes() -> None:
    module = """
        def report(lines):
            header = "report"
            print(header)
            body = "\\n".join(lines)
            print(body)
            return header + body
    """
    found = candidates_of(module, "report", ("statement_copy",))
    assert found
    for candidate in found:
        bound = {"lines"}
        function = ast.parse(candidate.source).body[0]
        assert isinstance(function, ast.FunctionDef)
        for stmt in function.body:  # every name a statement reads is bound before it (or a builtin)
            names = [n for n in ast.walk(stmt) if isinstance(n, ast.Name)]
            reads = {n.id for n in names if isinstance(n.ctx, ast.Load)} - {"print"}
            assert reads <= bound, candidate.description
            bound |= {n.id for n in names if isinstance(n.ctx, ast.Store)}


def test_copies_are_capped_per_position_and_the_function_s_own_come_first() -> None:
    found = candidates_of(SQUARES, "even_squares", ("statement_copy",))
    per_position: dict[tuple[int, str], int] = {}
    for c in found:
        inserted = c.source.splitlines()[c.line - 8]  # the function starts on line 8
        position = (c.line, inserted[: len(inserted) - len(inserted.lstrip())])
        per_position[position] = per_position.get(position, 0) + 1
    assert max(per_position.values()) == MAX_PER_SITE["statement_copy"]
    before_loop = [c.description for c in found if c.line == 10]
    # the function's own statements first, nearest first: `acc = []` just above is not duplicated
    assert before_loop[0] == "line 10: inserted `return acc`"


def test_break_is_copied_only_into_a_loop() -> None:
    module = """
        def first_even(values):
            found = None
            for v in values:
                if v % 2 == 0:
                    found = v
            return found

        def first_odd(values):
            for v in values:
                if v % 2:
                    break
            return v
    """
    found = candidates_of(module, "first_even", ("statement_copy",))
    fixed = module.replace("found = v\n", "found = v\n                    break\n", 1)
    assert has_fix(found, fixed, "first_even")
    for c in found:
        if "break" in c.description:
            compile(c.source, "<candidate>", "exec")


# --- properties ------------------------------------------------------------------------------------

_NAMES = st.sampled_from(["a", "b", "n", "items", "total", "count"])
_VALUES = st.one_of(
    _NAMES,
    st.integers(0, 3).map(str),
    st.tuples(_NAMES, st.sampled_from(["+", "-"]), _NAMES).map(" ".join),
    _NAMES.map(lambda n: f"len({n})"),
)


@st.composite
def small_modules(draw: st.DrawFn) -> str:
    """A module with a helper and a function ``target`` of assignments, loops, ifs and returns."""
    lines = ["def helper(a, n):", "    total = a + n", "    items.append(total)", "    return total", ""]
    lines.append("def target(a, b, items):")

    def body(indent: str, depth: int) -> None:
        for _ in range(draw(st.integers(1, 3))):
            kind = draw(
                st.sampled_from(
                    ["assign", "loop", "while", "if", "expr", "return"] if depth < 2 else ["assign", "expr"]
                )
            )
            name, value = draw(_NAMES), draw(_VALUES)
            if kind == "assign":
                lines.append(f"{indent}{name} = {value}")
            elif kind == "expr":
                lines.append(f"{indent}items.append({value})")
            elif kind == "return":
                lines.append(f"{indent}return {value}")
                return
            else:
                header = {"loop": f"for {name} in items:", "while": f"while {value}:", "if": f"if {value}:"}[
                    kind
                ]
                lines.append(f"{indent}{header}")
                body(indent + "    ", depth + 1)

    body("    ", 0)
    lines.append(f"    return {draw(_VALUES)}")
    return "\n".join(lines) + "\n"


@settings(max_examples=60, deadline=None)
@given(small_modules())
def test_candidates_differ_from_the_original_and_from_each_other(module: str) -> None:
    source = function_source(module, "target")
    found = fix_candidates(
        source, "target", start_line=6, context=fix_context(module, "target"), operators=STATEMENT_OPERATORS
    )
    assert_valid(source, "target", 6, found)
    assert (
        fix_candidates(
            source,
            "target",
            start_line=6,
            context=fix_context(module, "target"),
            operators=STATEMENT_OPERATORS,
        )
        == found
    )

"""What the fix space's tests (``tests/core/test_fix_*.py``) share: the candidates of one function
of a module, checked to be valid one-edit candidates, and equality of source up to formatting."""

from __future__ import annotations

import ast
import textwrap

from equisa_core.common.source_edit import find_function, function_source
from equisa_core.mutation.fix_context import FixContext, fix_context
from equisa_core.mutation.mutants import Mutant
from equisa_core.repair.fix_space import REPAIR_OPERATORS, fix_candidates


def assert_valid(source: str, qualname: str, start_line: int, found: list[Mutant],
                 pattern_is_operator: bool = True) -> None:
    """Every candidate compiles, differs from the original and from the others, names its
    function and operator, and says where, within the function (``pattern_is_operator``: its
    pattern is its operator's name, as for every operator but the templates)."""
    dumps = {ast.dump(ast.parse(source))}
    n_lines = source.count("\n") + (0 if source.endswith("\n") else 1)
    for candidate in found:
        assert candidate.fqn == qualname and candidate.operator in REPAIR_OPERATORS
        assert candidate.pattern == candidate.operator or not pattern_is_operator
        compile(candidate.source, "<candidate>", "exec", dont_inherit=True)
        dump = ast.dump(ast.parse(candidate.source))
        assert dump not in dumps, candidate.description
        dumps.add(dump)
        assert start_line <= candidate.line < start_line + n_lines
        assert start_line <= candidate.site_line < start_line + n_lines
        assert candidate.description.startswith(f"line {candidate.line}: ")


def candidates_of(module: str, qualname: str, operators: str | tuple[str, ...] = REPAIR_OPERATORS,
                  context: FixContext | None = None, pattern_is_operator: bool = True) -> list[Mutant]:
    """The candidates of ``operators`` for one function of ``module`` (dedented), checked valid."""
    module = textwrap.dedent(module)
    source = function_source(module, qualname)
    start = find_function(module, qualname).start_line
    context = context or fix_context(module, qualname)
    found = fix_candidates(source, qualname, start_line=start, context=context, operators=operators)
    assert_valid(source, qualname, start, found, pattern_is_operator)
    return found


def same_source(a: str, b: str) -> bool:
    """Whether two sources parse to the same tree (formatting aside)."""
    return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))

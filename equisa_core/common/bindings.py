"""Which names a function may bind: the one answer that inspections and the mutation operators
share (both must not take a local for a builtin or a global when they rewrite a name)."""

from __future__ import annotations

import ast

__all__ = ["names_bound_in"]


def names_bound_in(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Every name ``function`` may bind anywhere, nested scopes included: its parameters, assigned,
    deleted and loop names, nested definitions, imports, ``except ... as``, match captures and the
    names it declares ``global`` or ``nonlocal``. An over-approximation, to stay safe; the
    function's own name is not included (it is bound in the enclosing scope)."""
    bound: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node is not function:
                bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            bound.update(node.names)
    return bound

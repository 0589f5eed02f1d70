"""Which exceptions a module's functions raise on purpose, so that generated tests assert only those
(issue 49: no misuse tests).

A driver's input that makes ``merge("0a  0b a")`` fail to unpack a pair raises ``ValueError``, but
no caller would pass it and no maintainer would keep a test of it. A test that an input raises is
kept only when the function raises that exception itself: a ``raise`` of it in the function's body,
or in a function or method of the module that it calls (by name, or as ``self.method``), however
deep; an exception class the module defines counts as raised on purpose by every member. Pure: reads
``ast`` only.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

__all__ = ["raised_on_purpose"]


def _raised_names(function: ast.AST) -> set[str]:
    """The exception names ``raise X`` and ``raise X(...)`` name under ``function``."""
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Raise) and node.exc is not None:
            raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(raised, ast.Name | ast.Attribute):
                names.add(ast.unparse(raised).rsplit(".", 1)[-1])
    return names


def _called_names(function: ast.AST) -> set[str]:
    """The names the function calls: ``f(...)`` as ``f``, ``self.m(...)``/``cls.m(...)`` as ``m``."""
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                names.add(node.func.id)
            elif (isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
                  and node.func.value.id in ("self", "cls")):
                names.add(node.func.attr)
    return names


def _members(tree: ast.Module) -> Iterator[tuple[str, str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(qualname, plain name, definition) of the module's functions and of its classes' methods."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node.name, node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    yield f"{node.name}.{item.name}", item.name, item


def raised_on_purpose(source: str, qualname: str) -> frozenset[str]:
    """The exception names (last dotted part) that member ``qualname`` of ``source`` (``f``,
    ``Class.method``, or ``Class`` for all its methods) raises itself, directly or through the
    module's functions and methods it calls, with the exception classes the module defines."""
    tree = ast.parse(source)
    members = list(_members(tree))
    by_name: dict[str, list[ast.AST]] = {}
    for _, name, node in members:
        by_name.setdefault(name, []).append(node)
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    start: list[ast.AST] = [node for q, _, node in members if q == qualname or q.startswith(qualname + ".")]
    start += [classes[qualname]] if qualname in classes else []
    raised = {name for name, node in classes.items()
              if any(ast.unparse(b).endswith(("Error", "Exception")) for b in node.bases)}
    visited: set[int] = set()
    while start:
        current = start.pop()
        if id(current) in visited:
            continue
        visited.add(id(current))
        raised |= _raised_names(current)
        for called in _called_names(current):
            start += by_name.get(called, [])
            start += [classes[called]] if called in classes else []
    return frozenset(raised)

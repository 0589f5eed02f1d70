"""The repair operator ``initialize_local``: a missing initialization, inserted. Pure.

A local that the function updates before any plain binding of it (``count += 1``,
``found.append(x)``, ``seen[k] = v`` with no ``count = ...`` above) raises ``UnboundLocalError`` or
``NameError``: the fix is the forgotten ``count = 0``. For each such name the operator inserts
``name = <value>`` before the statement of the function's body that holds its first update, and at
the start of the body when that is elsewhere. The values come from the use: ``[]`` for list methods,
``set()`` for ``add``, ``{}`` and ``[]`` for an item assignment, ``''`` for ``+=`` of a string, ``1``
for ``*=``, else ``0``; then ``None``. Every candidate is verified by ``edits.make`` like the other
repair operators (``fix_space``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from equisa_core.mutation.edits import SELF_NAMES, Candidate, FunctionModel, Proposal
from equisa_core.mutation.fix_context import FixContext

__all__ = ["initialize_local", "updated_before_bound"]

_LIST_METHODS = frozenset({"append", "extend", "insert", "pop", "sort", "reverse", "remove"})
_SET_METHODS = frozenset({"add", "discard", "update"})


def _stringy(value: ast.expr) -> bool:
    """Whether ``value`` builds a string: a string literal or an f-string in it."""
    return any(isinstance(n, ast.JoinedStr) or isinstance(n, ast.Constant) and isinstance(n.value, str)
               for n in ast.walk(value))


def _updates(node: ast.AST) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(name, values that would initialize it) for each update of a bare name in ``node``."""
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        value = node.value
        if _stringy(value):
            yield node.target.id, ("''",)
        elif isinstance(node.op, ast.Mult):
            yield node.target.id, ("1",)
        elif isinstance(value, ast.List | ast.ListComp):
            yield node.target.id, ("[]",)
        else:
            yield node.target.id, ("0",)
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
          and isinstance(node.func.value, ast.Name)):
        method = node.func.attr
        if method in _LIST_METHODS:
            yield node.func.value.id, ("[]",)
        elif method in _SET_METHODS:
            yield node.func.value.id, ("set()",)
    elif isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                yield target.value.id, ("{}", "[]")


def _plainly_bound(node: ast.AST) -> Iterator[str]:
    """Names a statement binds outright (assignment, loop or ``with`` target, import, ``def``)."""
    targets: list[ast.AST] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        targets = [node.target]
    elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
        targets = [node.target]
    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
        targets = [node.optional_vars]
    elif isinstance(node, ast.NamedExpr):
        targets = [node.target]
    elif isinstance(node, ast.Import | ast.ImportFrom):
        yield from ((a.asname or a.name).split(".")[0] for a in node.names)
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name
    for target in targets:
        yield from (n.id for n in ast.walk(target)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))


def _in_source_order(node: ast.AST) -> list[ast.AST]:
    found = [n for n in ast.walk(node) if hasattr(n, "lineno")]
    return sorted(found, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))


def updated_before_bound(fn: FunctionModel) -> dict[str, tuple[ast.stmt, tuple[str, ...]]]:
    """Name -> (the body statement holding its first update, the initial values to try), for the
    locals updated before any plain binding of them in source order; parameters left out."""
    body_of: dict[int, ast.stmt] = {}
    for stmt in fn.node.body:
        for node in ast.walk(stmt):
            body_of.setdefault(id(node), stmt)
    bound: set[str] = set(fn.parameters) | set(SELF_NAMES)
    found: dict[str, tuple[ast.stmt, tuple[str, ...]]] = {}
    for node in _in_source_order(fn.node):
        if node is fn.node or id(node) not in body_of:
            continue
        for name, values in _updates(node):
            if name not in bound and name not in found:
                found[name] = (body_of[id(node)], values)
        bound.update(_plainly_bound(node))
    return found


def initialize_local(fn: FunctionModel, context: FixContext) -> Iterator[Proposal]:
    """``name = <value>`` inserted for each local updated before it is bound (see the module docstring)."""
    first = 1 if fn.docstring is not None else 0
    body = fn.node.body
    if len(body) <= first:
        return
    eol = fn.eol()
    for name, (holder, values) in updated_before_bound(fn).items():
        index = next(i for i, s in enumerate(body) if s is holder)
        for position in dict.fromkeys((index, first)):
            stmt = body[position]
            if not fn.own_lines(stmt):
                continue
            indent = fn.lines[stmt.lineno - 1][: stmt.col_offset]
            point = fn.starts[stmt.lineno - 1]
            for value in (*values, "None"):
                assignment = ast.parse(f"{name} = {value}").body[0]
                text = f"{indent}{name} = {value}{eol}"
                new_body = [*body[:position], assignment, *body[position:]]
                candidate = Candidate(fn.node, "body", new_body, (((point, point, text),),), (point, point),
                                      "inserted")
                yield Proposal(candidate, stmt)

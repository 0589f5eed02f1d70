"""Repair operators for Python's own slips: the mistakes the language invites, each fixed by a small
verified edit (``edits.make``, like every operator of ``fix_space``). Pure.

- ``method_result_assign``: ``xs = xs.append(x)`` keeps the ``None`` an in-place method returns;
  the fix drops the assignment (``xs.append(x)``). Methods: ``IN_PLACE_METHODS``.
- ``assignment_swap``: ``a = b`` written for ``b = a`` (two plain names).
- ``undefined_rename``: a name the function reads but nothing defines (not a local, parameter,
  module name or builtin: a ``NameError`` waiting) renamed at every read to a name in scope
  within ``MAX_RENAME_DISTANCE`` edits (``element`` for ``elements``), nearest first.
- ``constant_to_name``: an int literal replaced by an int-valued name in scope, parameters first
  (``result[:3]`` for ``result[:k]``).
- ``list_wrap``: ``xs + x`` or ``xs += x``, where ``xs`` starts as a list and ``x`` is a plain
  name, becomes ``xs + [x]`` (concatenating an element rather than a list).
"""

from __future__ import annotations

import ast
import builtins
import copy
from collections.abc import Iterator

from equisa_core.validation.edits import SELF_NAMES, Candidate, FunctionModel, Proposal, Site, name_distance
from equisa_core.validation.fix_context import FixContext

__all__ = ["IN_PLACE_METHODS", "MAX_RENAME_DISTANCE", "method_result_assign", "assignment_swap",
           "undefined_rename", "constant_to_name", "list_wrap"]

#: Methods of the builtin containers that change their object and return None.
IN_PLACE_METHODS = frozenset({"append", "extend", "insert", "remove", "sort", "reverse", "clear", "update",
                              "add", "discard"})
#: ``undefined_rename`` offers names at most this many edits away (case ignored).
MAX_RENAME_DISTANCE = 3
#: The constants a misspelt name may stand for (a lower-case ``true`` is a ``NameError``).
_NAMED_CONSTANTS = frozenset({"True", "False", "None"})




def _to_name(node: ast.AST) -> tuple[str, ast.expr] | None:
    """(name, value) of ``name = value``; None for any other statement."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id, node.value
    return None


def _calls(node: ast.AST, function: str) -> bool:
    """Whether ``node`` is a call of the builtin ``function`` by its name."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == function


def _statement_sites(fn: FunctionModel) -> Iterator[tuple[Site, ast.stmt]]:
    for site in fn.sites:
        if isinstance(site.node, ast.stmt) and site.index is not None and fn.own_lines(site.node):
            yield site, site.node


def _replace_statement(fn: FunctionModel, site: Site, new: ast.stmt, text: str) -> Candidate:
    start, end = fn.span(site.node)
    siblings = list(getattr(site.parent, site.field))
    assert site.index is not None
    siblings[site.index] = new
    return Candidate(site.parent, site.field, siblings, (((start, end, text),),), (start, end))


def method_result_assign(fn: FunctionModel, context: FixContext) -> Iterator[Proposal]:
    """``xs = xs.append(x)`` -> ``xs.append(x)``."""
    for site, stmt in _statement_sites(fn):
        assigned = _to_name(stmt)
        call = assigned[1] if assigned else None
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr in IN_PLACE_METHODS):
            yield Proposal(_replace_statement(fn, site, ast.Expr(call), fn.src(call)), stmt)


def assignment_swap(fn: FunctionModel, context: FixContext) -> Iterator[Proposal]:
    """``a = b`` -> ``b = a`` for two plain names."""
    for site, stmt in _statement_sites(fn):
        assigned = _to_name(stmt)
        if assigned and isinstance(assigned[1], ast.Name) and assigned[1].id not in SELF_NAMES:
            target, value = assigned[0], assigned[1].id
            new = ast.Assign([ast.Name(value, ast.Store())], ast.Name(target, ast.Load()))
            yield Proposal(_replace_statement(fn, site, new, f"{value} = {target}"), stmt)


def _undefined(fn: FunctionModel, context: FixContext) -> list[str]:
    """Names read in the function that nothing defines, in order of first read."""
    known = set(fn.bound) | set(fn.parameters) | set(context.module_names) | set(dir(builtins))
    reads = [n.id for n in ast.walk(fn.node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    return list(dict.fromkeys(n for n in reads if n not in known))


def undefined_rename(fn: FunctionModel, context: FixContext) -> Iterator[Proposal]:
    """Every read of an undefined name renamed to a near name in scope, or to ``True``, ``False``
    or ``None`` (``return true``)."""
    in_scope = sorted(set(fn.bound) | set(fn.parameters) | set(context.module_names) | _NAMED_CONSTANTS)
    for name in _undefined(fn, context):
        reads = [n for n in ast.walk(fn.node) if isinstance(n, ast.Name) and n.id == name]
        near = sorted((n for n in in_scope if name_distance(n, name) <= MAX_RENAME_DISTANCE),
                      key=lambda n: (name_distance(n, name), n))
        for other in near:
            body = _renamed(copy.deepcopy(fn.node.body), name, other)
            edits = tuple((*fn.span(r), other) for r in sorted(reads, key=lambda r: fn.span(r)[0]))
            first = fn.span(reads[0])
            yield Proposal(Candidate(fn.node, "body", body, (edits,), first), reads[0])


def _renamed(body: list[ast.stmt], name: str, other: str) -> list[ast.stmt]:
    """``body`` with every ``name`` read as ``other`` (a ``True``/``False``/``None`` constant node
    for those, as the parser makes them)."""
    class Rename(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.expr:
            if node.id != name:
                return node
            if other in _NAMED_CONSTANTS:
                return ast.copy_location(ast.Constant(value={"True": True, "False": False}.get(other)), node)
            return ast.copy_location(ast.Name(id=other, ctx=node.ctx), node)

    module = Rename().visit(ast.Module(body=body, type_ignores=[]))
    return list(module.body)


def _int_names(fn: FunctionModel) -> list[str]:
    """Parameters, then locals bound to an int literal, a ``len(...)`` or a ``range`` loop variable."""
    names = [p for p in fn.parameters if p not in SELF_NAMES]
    for node in ast.walk(fn.node):
        assigned = _to_name(node)
        if assigned and (isinstance(assigned[1], ast.Constant) and type(assigned[1].value) is int
                         or _calls(assigned[1], "len")):
            names.append(assigned[0])
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name) and _calls(node.iter, "range"):
            names.append(node.target.id)
    return list(dict.fromkeys(names))


def constant_to_name(fn: FunctionModel, context: FixContext) -> Iterator[Proposal]:
    """An int literal -> an int-valued name bound before it, parameters first."""
    names = _int_names(fn)
    for site in fn.sites:
        node = site.node
        if not (isinstance(node, ast.Constant) and type(node.value) is int):
            continue
        start, end = fn.span(node)
        for name in names:
            bound = fn.bindings.get(name)
            if name in fn.parameters or (bound and bound[0] < start):
                yield Proposal(fn.replace(site, ast.Name(name, ast.Load()), [[(start, end, name)]]), node)


def _lists(fn: FunctionModel) -> set[str]:
    """Locals the function binds to a list display or ``list(...)``."""
    found = set()
    for node in ast.walk(fn.node):
        assigned = _to_name(node)
        if assigned and (isinstance(assigned[1], ast.List | ast.ListComp) or _calls(assigned[1], "list")):
            found.add(assigned[0])
    return found


def list_wrap(fn: FunctionModel, context: FixContext) -> Iterator[Proposal]:
    """``xs + x`` / ``xs += x`` -> ``xs + [x]`` / ``xs += [x]`` for a list ``xs`` and a plain name ``x``."""
    lists = _lists(fn)
    for site in fn.sites:
        node = site.node
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = node.left, node.right
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
            left, right = node.target, node.value
        else:
            continue
        if isinstance(left, ast.Name) and left.id in lists and isinstance(right, ast.Name):
            right_site = next((s for s in fn.sites if s.node is right), None)
            if right_site is not None:
                start, end = fn.span(right)
                wrapped = ast.List([ast.Name(right.id, ast.Load())], ast.Load())
                yield Proposal(fn.replace(right_site, wrapped, [[(start, end, f"[{right.id}]")]]), right)

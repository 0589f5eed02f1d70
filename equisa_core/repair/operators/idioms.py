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
- ``bare_call``: a statement that only names a method (``xs.pop``, pointless as it stands: the
  parentheses were forgotten) becomes its call, ``xs.pop()``.
- ``lost_swap``: ``a = b`` followed by ``b = a`` (any targets: names, items, attributes), where the
  second reads the value the first just overwrote, becomes ``a, b = b, a``.
- ``print_return``: a function that returns no value and prints one value as its last statement
  (``print(result)``) returns it instead.
"""

from __future__ import annotations

import ast
import builtins
import copy
from collections.abc import Iterator

from equisa_core.mutation.edits import (
    SELF_NAMES,
    Candidate,
    FunctionModel,
    Proposal,
    Site,
    load_function,
    name_distance,
)
from equisa_core.mutation.fix_context import FixContext

__all__ = ["IN_PLACE_METHODS", "MAX_RENAME_DISTANCE", "method_result_assign", "assignment_swap",
           "undefined_rename", "undefined_names", "constant_to_name", "list_wrap", "bare_call", "lost_swap",
           "print_return"]

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


def undefined_names(function_source: str, context: FixContext) -> frozenset[str]:
    """The names a function (one definition at column 0) reads that nothing defines."""
    return frozenset(_undefined(load_function(function_source, "f"), context))


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


def bare_call(fn: FunctionModel, context: FixContext) -> Iterator[Proposal]:
    """``xs.pop`` as a statement -> ``xs.pop()``."""
    for site, stmt in _statement_sites(fn):
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Attribute):
            text = f"{fn.src(stmt.value)}()"
            new = ast.Expr(ast.Call(copy.deepcopy(stmt.value), [], []))
            yield Proposal(_replace_statement(fn, site, new, text), stmt)


def _single_target(stmt: ast.stmt) -> tuple[ast.expr, ast.expr] | None:
    """(target, value) of ``target = value`` with one target of any kind but a tuple or a starred one."""
    if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name | ast.Subscript | ast.Attribute)):
        return stmt.targets[0], stmt.value
    return None


def _same(a: ast.AST, b: ast.AST) -> bool:
    """The same expression, whether read or written."""
    def read(node: ast.AST) -> str:
        return ast.dump(node).replace("ctx=Store()", "ctx=Load()")
    return read(a) == read(b)


def lost_swap(fn: FunctionModel, context: FixContext) -> Iterator[Proposal]:
    """``a = b`` then ``b = a`` -> ``a, b = b, a``."""
    for site, first in _statement_sites(fn):
        assert site.index is not None
        siblings = list(getattr(site.parent, site.field))
        if site.index + 1 >= len(siblings):
            continue
        second = siblings[site.index + 1]
        one, two = _single_target(first), _single_target(second)
        if not (one and two and fn.own_lines(second)):
            continue
        (a, b), (b_again, a_again) = one, two
        if _same(a, a_again) and _same(b, b_again) and not _same(a, b):
            targets = ast.Tuple([copy.deepcopy(a), copy.deepcopy(b_again)], ast.Store())
            values = ast.Tuple([copy.deepcopy(b), copy.deepcopy(a_again)], ast.Load())
            new = ast.Assign([targets], values)
            text = f"{fn.src(a)}, {fn.src(b_again)} = {fn.src(b)}, {fn.src(a_again)}"
            start, end = fn.span(first)[0], fn.span(second)[1]
            siblings[site.index:site.index + 2] = [new]
            edits = (((start, end, text),),)
            yield Proposal(Candidate(site.parent, site.field, siblings, edits, (start, end)), first)


def _returns_value(fn: FunctionModel) -> bool:
    """Whether the function (not a function or lambda nested in it) returns a value anywhere."""
    pending: list[ast.AST] = list(fn.node.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Return) and node.value is not None:
            return True
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            pending.extend(ast.iter_child_nodes(node))
    return False


def print_return(fn: FunctionModel, context: FixContext) -> Iterator[Proposal]:
    """A last ``print(value)`` of a function that returns nothing -> ``return value``."""
    body = [s for s in fn.node.body if not (isinstance(s, ast.Pass) or s is _docstring_of(fn))]
    last = body[-1] if body else None
    if not (isinstance(last, ast.Expr) and _calls(last.value, "print")) or _returns_value(fn):
        return
    call = last.value
    assert isinstance(call, ast.Call)
    if len(call.args) != 1 or call.keywords or isinstance(call.args[0], ast.Starred):
        return
    site = next((s for s, stmt in _statement_sites(fn) if stmt is last), None)
    if site is not None:
        value = call.args[0]
        new = ast.Return(copy.deepcopy(value))
        yield Proposal(_replace_statement(fn, site, new, f"return {fn.src(value)}"), last)


def _docstring_of(fn: FunctionModel) -> ast.stmt | None:
    first = fn.node.body[0] if fn.node.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        return first if isinstance(first.value.value, str) else None
    return None

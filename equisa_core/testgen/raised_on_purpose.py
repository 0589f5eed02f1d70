"""Which exceptions a module's functions raise on purpose, so that generated tests assert only those
(issue 49: no misuse tests).

A driver's input that makes ``merge("0a  0b a")`` fail to unpack a pair raises ``ValueError``, but
no caller would pass it and no maintainer would keep a test of it. A test that an input raises is
kept only when the function raises that exception itself: a ``raise`` of it in the function's body,
or in a function or method of the module that it calls (by name, or as ``self.method``; a class
called, through its ``__new__``, ``__init__`` and ``__post_init__``), however deep; an exception
class the module defines counts as raised on purpose by every member.

A method-sequence test (construct, call methods, the last call in ``pytest.raises``) is about the
call in its block, not its whole class: ``raised_in_block`` judges it by the members that block calls
(``obj.copy()``: ``Dict.copy``; ``obj[k]``: ``__getitem__``; ``obj.x = 1``: ``__setattr__``; the
class itself: its constructor), so one method raising ``AttributeError`` on purpose does not excuse
another that does not. Pure: reads ``ast`` only.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping, Sequence

__all__ = ["raised_in_block", "raised_on_purpose"]

#: The special method an operator or a builtin applied to an object calls.
_OPERATORS: Mapping[type[ast.AST], str] = {
    ast.Add: "__add__", ast.Sub: "__sub__", ast.Mult: "__mul__", ast.Div: "__truediv__",
    ast.FloorDiv: "__floordiv__", ast.Mod: "__mod__", ast.Pow: "__pow__", ast.MatMult: "__matmul__",
    ast.BitAnd: "__and__", ast.BitOr: "__or__", ast.BitXor: "__xor__", ast.LShift: "__lshift__",
    ast.RShift: "__rshift__", ast.Invert: "__invert__", ast.USub: "__neg__", ast.UAdd: "__pos__",
    ast.Not: "__bool__", ast.Eq: "__eq__", ast.NotEq: "__ne__", ast.Lt: "__lt__", ast.LtE: "__le__",
    ast.Gt: "__gt__", ast.GtE: "__ge__", ast.In: "__contains__", ast.NotIn: "__contains__",
}
_BUILTINS = {"len": "__len__", "hash": "__hash__", "reversed": "__reversed__", "iter": "__iter__",
             "list": "__iter__", "tuple": "__iter__", "set": "__iter__", "sorted": "__iter__",
             "bool": "__bool__", "str": "__str__", "repr": "__repr__", "next": "__next__"}
_SUBSCRIPT = {ast.Load: "__getitem__", ast.Store: "__setitem__", ast.Del: "__delitem__"}
_ATTRIBUTE = {ast.Store: "__setattr__", ast.Del: "__delattr__"}
_CONSTRUCTION = ("__new__", "__init__", "__post_init__")


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
    return _raised(ast.parse(source), [qualname])


def raised_in_block(source: str, cls: str, block: Sequence[ast.stmt]) -> tuple[frozenset[str], list[str]]:
    """(what the members of ``source`` that the statements ``block`` call raise on purpose, with the
    exception classes the module defines; those members, ``Class.method`` or ``f``): ``block`` is the
    body of a ``pytest.raises`` in a method-sequence test of class ``cls`` (module docstring). A method
    is looked up in ``cls`` and its bases of the module; one defined elsewhere (a builtin base's
    ``dict.copy``) raises nothing on purpose."""
    tree = ast.parse(source)
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    called: list[str] = []
    for name, owner in _block_calls(block, cls, classes, functions):
        defined = _owner(classes, owner, name) if owner is not None else name
        if defined is not None and defined not in called:
            called.append(defined)
    return _raised(tree, called), called


def _block_calls(block: Sequence[ast.stmt], cls: str, classes: Mapping[str, ast.ClassDef],
                 functions: Iterable[str]) -> Iterator[tuple[str, str | None]]:
    """(method name, the class it is looked up in), or (a module function's name, None), for what
    ``block`` calls: methods by name, special methods by operator and builtin, constructors."""
    plain = set(functions)
    nodes = [n for statement in block for n in ast.walk(statement)]
    called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    for node in nodes:
        yield from _node_calls(node, cls, classes, plain, id(node) in called)


def _node_calls(node: ast.AST, cls: str, classes: Mapping[str, ast.ClassDef], plain: set[str],
                called: bool) -> list[tuple[str, str | None]]:
    """``_block_calls`` of one node (``called``: the node is what a call calls)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return _name_call(node.func.id, cls, classes, plain)
    if isinstance(node, ast.Attribute):
        special = _ATTRIBUTE.get(type(node.ctx))
        if special is not None:
            return [(special, cls)]
        read: list[tuple[str, str | None]] = [(node.attr, cls)]
        return read + ([] if called else [("__getattr__", cls)])  # a read may reach ``__getattr__``
    if isinstance(node, ast.Subscript):
        return [(_SUBSCRIPT[type(node.ctx)], cls)]
    ops: list[ast.AST] = [node.op] if isinstance(node, ast.BinOp | ast.UnaryOp) else []
    ops += node.ops if isinstance(node, ast.Compare) else []
    return [(_OPERATORS[type(op)], cls) for op in ops if type(op) in _OPERATORS]


def _name_call(name: str, cls: str, classes: Mapping[str, ast.ClassDef],
               plain: set[str]) -> list[tuple[str, str | None]]:
    """``_block_calls`` of a call of a plain name: a class's constructor, a function, a builtin."""
    if name in classes:
        return [(method, name) for method in _CONSTRUCTION]
    if name in plain:
        return [(name, None)]
    return [(_BUILTINS[name], cls)] if name in _BUILTINS else []


def _owner(classes: Mapping[str, ast.ClassDef], cls: str, method: str) -> str | None:
    """``Class.method`` of the class among ``cls`` and its bases in the module (depth first, as
    written) that defines ``method``; None when none does."""
    node = classes.get(cls)
    if node is None:
        return None
    if any(isinstance(i, ast.FunctionDef | ast.AsyncFunctionDef) and i.name == method for i in node.body):
        return f"{cls}.{method}"
    for base in node.bases:
        if isinstance(base, ast.Name) and base.id != cls:
            found = _owner(classes, base.id, method)
            if found is not None:
                return found
    return None


def _raised(tree: ast.Module, qualnames: Iterable[str]) -> frozenset[str]:
    """``raised_on_purpose`` of each of ``qualnames``, together."""
    wanted = set(qualnames)
    members = list(_members(tree))
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    start: list[ast.AST] = [node for q, _, node in members
                            if q in wanted or q.split(".", 1)[0] in wanted and "." in q]
    start += [classes[q] for q in wanted if q in classes]
    raised = {name for name, node in classes.items()
              if any(ast.unparse(b).endswith(("Error", "Exception")) for b in node.bases)}
    visited: set[int] = set()
    while start:
        current = start.pop()
        if id(current) not in visited:
            visited.add(id(current))
            raised |= _raised_names(current)
            start += _callees(current, members, classes)
    return frozenset(raised)


def _callees(function: ast.AST, members: Sequence[tuple[str, str, ast.AST]],
             classes: Mapping[str, ast.ClassDef]) -> list[ast.AST]:
    """The module's functions and methods ``function`` calls (``_called_names``, by plain name), and
    the constructor methods of the classes it calls."""
    found: list[ast.AST] = []
    for called in _called_names(function):
        found += [node for _, name, node in members if name == called]
        made = {_owner(classes, called, m) for m in _CONSTRUCTION} if called in classes else set()
        found += [node for q, _, node in members if q in made]
    return found

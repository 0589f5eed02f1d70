"""The shape of the values a parameter takes, read from how the function's body uses it (issue 49).

A parameter with no annotation and no value seen in the suite was drawn as a number or a short text,
so ``merge(intervals)`` got ``merge("0a  0b a")`` and a test that it raises. The body says more:

- ``for lo, hi in sorted(intervals)``: an iterable of pairs (``Shape("pairs", width=2)``), their
  items shaped by how ``lo`` and ``hi`` are used;
- ``for item in values``, ``values[i]``, ``len(values)``, ``values.append(...)``: a sequence;
- ``options.get(...)``, ``options.items()``, ``options["key"]``: a mapping;
- ``name.lower()``, ``text.split(...)``: a text;
- ``x < y``, ``lo <= x <= hi``, ``x + 1``, ``range(n)``, ``abs(x)``: a number;
- passed on to another function of the module: that function's shape for the parameter it fills
  (``forwarded``; the caller's search may also draw the values seen there);
- ``func(x)``, ``key(a, b)``, ``map(func, xs)``, ``sorted(xs, key=key)``, ``functools.reduce(f, xs)``,
  ``callable(f)``: a callable (``Shape("callable", width=arity)``, the positional arguments of its
  call sites; -1 when not known), and ``func.__doc__`` read: one whose docstring matters
  (``documented``, drawn from ``callable_inputs.DOCUMENTED``).

Evidence ranks callables over pairs, pairs over mappings, texts, sequences and numbers (a text is
also sized and subscripted; a comparison says little next to ``.lower()``). Nothing found: None, and
the caller keeps its fallback. ``shape_strategy`` writes a shape as a Hypothesis strategy's text for the input
search's driver. Pure: reads ``ast`` only.

Hand-written rather than a type inferencer (pyright, MonkeyType): these need the program to run or
a project set-up, and all the search needs is a likely shape per parameter, not a sound type.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from equisa_core.testgen.callable_inputs import callable_strategy
from equisa_core.testgen.value_strategies import (
    DEFAULT_MAX_LENGTH,
    int_strategy,
    mapping_strategy,
    text_strategy,
)

__all__ = ["Shape", "attribute_shapes", "forwarded", "parameter_shapes", "shape_strategy"]

ShapeKind = Literal["callable", "pairs", "mapping", "text", "sequence", "number"]
#: Stronger evidence first: a shape found for a parameter replaces a weaker one.
_RANK: tuple[ShapeKind, ...] = ("callable", "pairs", "mapping", "text", "sequence", "number")
#: Calls that call their first argument with one positional argument per iterable after it
#: (``map``), with one (``filter``...), or with two (``reduce``).
_CALLING_FIRST = {"map": -2, "filter": 1, "reduce": 2, "starmap": -1, "takewhile": 1, "dropwhile": 1,
                  "filterfalse": 1, "accumulate": 2}
#: Keyword arguments that are called with one positional argument (``sorted(xs, key=f)``).
_CALLED_KEYWORDS = frozenset({"key", "default_factory", "predicate", "func", "function", "callback"})
#: Attributes only a function (or class) has: reading one says the parameter is a callable.
_FUNCTION_ATTRIBUTES = frozenset({"__doc__", "__name__", "__qualname__", "__wrapped__", "__code__"})
_TEXT_METHODS = frozenset({
    "lower", "upper", "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith",
    "endswith", "replace", "isdigit", "isalpha", "isalnum", "isspace", "casefold", "title",
    "capitalize", "encode", "zfill", "partition", "rpartition", "find", "rfind",
})
_MAPPING_METHODS = frozenset({"get", "items", "keys", "values", "setdefault", "update"})
_SEQUENCE_METHODS = frozenset({"append", "extend", "insert", "pop", "sort", "index", "count", "remove"})
_ITERATING_CALLS = frozenset({"sorted", "reversed", "list", "tuple", "set", "iter", "enumerate"})
_NUMBER_CALLS = frozenset({"range", "abs", "round", "divmod", "chr", "bin", "hex"})
_ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)


@dataclass(frozen=True)
class Shape:
    """A parameter's likely shape: its kind, for ``pairs`` the width unpacked, and for ``pairs`` and
    ``sequence`` its items' kind."""

    kind: ShapeKind
    width: int = 0
    item: ShapeKind = "number"
    documented: bool = False  # a callable whose docstring is read
    checked: bool = False  # ``callable(x)`` asked: maybe something else too


def _stronger(old: Shape | None, new: Shape) -> Shape:
    if old is not None and old.kind == new.kind == "callable":  # a known arity, a docstring read: kept
        width = old.width if old.width >= 0 else new.width
        return Shape("callable", width=width, documented=old.documented or new.documented,
                     checked=old.checked or new.checked)
    if old is not None and old.kind == new.kind and old.item == "number" != new.item:  # items now known
        return new
    return new if old is None or _RANK.index(new.kind) < _RANK.index(old.kind) else old


def _iterated_name(node: ast.expr) -> str | None:
    """The name ``for ... in`` iterates: ``xs``, ``sorted(xs)``, ``enumerate(xs)``..."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _ITERATING_CALLS:
        return _iterated_name(node.args[0]) if node.args else None
    return node.id if isinstance(node, ast.Name) else None


def _item_shape(names: Sequence[str], body: Sequence[ast.stmt]) -> Shape:
    """How ``body`` uses the loop variables ``names``: the kind of their items (a callable, a mapping,
    a text, else a number), ``documented`` when a callable's docstring is read."""
    found: dict[str, Shape] = {}
    for statement in body:
        _collect(statement, set(names), found)
    shapes = [found[n] for n in names if n in found]
    kinds = [shape.kind for shape in shapes]
    kind: ShapeKind = next((k for k in ("callable", "mapping", "text") if k in kinds), "number")
    return Shape(kind, documented=any(shape.documented for shape in shapes))


def _loop_shape(loop: ast.For | ast.comprehension, body: Sequence[ast.stmt]) -> Shape:
    """What iterating with ``loop`` says of the iterable."""
    target = loop.target
    enumerated = (isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Name)
                  and loop.iter.func.id == "enumerate")
    if enumerated and isinstance(target, ast.Tuple) and len(target.elts) == 2:
        target = target.elts[1]
    if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
        names = [e.id for e in target.elts if isinstance(e, ast.Name)]
        return Shape("pairs", width=len(names), item=_item_shape(names, body).kind)
    if isinstance(target, ast.Name):
        item = _item_shape([target.id], body)
        return Shape("sequence", item=item.kind, documented=item.documented)
    return Shape("sequence")


def _used_as(node: ast.AST, names: set[str]) -> tuple[str, Shape] | None:
    """(parameter, shape) when ``node`` uses one of ``names`` in a telling way."""
    for reading in (_called_use, _method_use, _subscript_use, _call_use, _arithmetic_use):
        found = reading(node, names)
        if found is not None:
            return found
    return None


def _called_use(node: ast.AST, names: set[str]) -> tuple[str, Shape] | None:
    """``name(a, b)``: a callable of arity 2; ``map(name, xs)``, ``sorted(xs, key=name)``,
    ``callable(name)``: a callable (of the arity those calls use, -1 when not known)."""
    if not isinstance(node, ast.Call):
        return None
    starred = any(isinstance(a, ast.Starred) for a in node.args)
    if isinstance(node.func, ast.Name) and node.func.id in names:
        return node.func.id, Shape("callable", width=-1 if starred else len(node.args))
    callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    first = node.args[0] if node.args else None
    if isinstance(first, ast.Name) and first.id in names and callee in (*_CALLING_FIRST, "callable"):
        arity = _CALLING_FIRST.get(callee, -1)
        width = len(node.args) - 1 if arity == -2 and not starred else arity
        return first.id, Shape("callable", width=width, checked=callee == "callable")
    for keyword in node.keywords:
        value = keyword.value
        if keyword.arg in _CALLED_KEYWORDS and isinstance(value, ast.Name) and value.id in names:
            return value.id, Shape("callable", width=1)
    return None


def _method_use(node: ast.AST, names: set[str]) -> tuple[str, Shape] | None:
    """``name.lower()``: a text; ``name.get(...)``: a mapping; ``name.append(...)``: a sequence;
    ``name.__doc__``: a callable whose docstring matters."""
    if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in names):
        return None
    if node.attr in _FUNCTION_ATTRIBUTES:
        return node.value.id, Shape("callable", width=-1, documented=node.attr == "__doc__")
    kinds: dict[ShapeKind, frozenset[str]] = {
        "text": _TEXT_METHODS, "mapping": _MAPPING_METHODS, "sequence": _SEQUENCE_METHODS}
    kind = next((k for k, methods in kinds.items() if node.attr in methods), None)
    return (node.value.id, Shape(kind)) if kind else None


def _subscript_use(node: ast.AST, names: set[str]) -> tuple[str, Shape] | None:
    """``name["key"]``: a mapping; ``name[i]``: a sequence."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in names):
        return None
    keyed = isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)
    return node.value.id, Shape("mapping" if keyed else "sequence")


def _call_use(node: ast.AST, names: set[str]) -> tuple[str, Shape] | None:
    """``len(name)``: a sequence; ``range(name)``, ``abs(name)``...: a number."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args):
        return None
    first = node.args[0]
    if not (isinstance(first, ast.Name) and first.id in names):
        return None
    if node.func.id == "len":
        return first.id, Shape("sequence")
    return (first.id, Shape("number")) if node.func.id in _NUMBER_CALLS else None


def _arithmetic_use(node: ast.AST, names: set[str]) -> tuple[str, Shape] | None:
    """``name + 1``, ``2 * name`` (a number on the other side; ``%`` formats texts too): a number."""
    if not isinstance(node, ast.BinOp) or isinstance(node.op, ast.Mod):
        return None
    for side, other in ((node.left, node.right), (node.right, node.left)):
        if (isinstance(side, ast.Name) and side.id in names and isinstance(other, ast.Constant)
                and type(other.value) in (int, float)):
            return side.id, Shape("number")
    return None


def _collect(node: ast.AST, names: set[str], found: dict[str, Shape]) -> None:
    """Every telling use of ``names`` under ``node`` into ``found`` (the strongest per name)."""
    for child in ast.walk(node):
        if isinstance(child, ast.For) and _iterated_name(child.iter) in names:
            name = _iterated_name(child.iter)
            assert name is not None
            found[name] = _stronger(found.get(name), _loop_shape(child, child.body))
        elif isinstance(child, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            _collect_comprehension(child, names, found)
        elif isinstance(child, ast.Compare) and any(isinstance(op, _ORDERING) for op in child.ops):
            for operand in (child.left, *child.comparators):
                if isinstance(operand, ast.Name) and operand.id in names:
                    found[operand.id] = _stronger(found.get(operand.id), Shape("number"))
        else:
            used = _used_as(child, names)
            if used is not None:
                found[used[0]] = _stronger(found.get(used[0]), used[1])


def _collect_comprehension(node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp,
                           names: set[str], found: dict[str, Shape]) -> None:
    """What a comprehension's loops over ``names`` say, its items shaped by its element and tests."""
    elements = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
    for loop in node.generators:
        name = _iterated_name(loop.iter)
        if name in names:
            body = [ast.Expr(e) for e in (*elements, *loop.ifs, *(g.iter for g in node.generators))]
            found[name] = _stronger(found.get(name), _loop_shape(loop, body))


def _parameter_names(function: ast.FunctionDef) -> list[str]:
    """The parameters' names, ``*args``' included (its items' shape: ``Shape("sequence")``)."""
    args = function.args
    vararg = [args.vararg] if args.vararg is not None else []
    return [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, *vararg)]


def forwarded(function: ast.FunctionDef,
              callees: Mapping[str, ast.FunctionDef]) -> dict[str, list[tuple[str, int]]]:
    """Parameter -> ``(callee, position)`` for each positional argument of a call of one of
    ``callees`` (the module's functions, by name) that passes the parameter as it is."""
    names = set(_parameter_names(function))
    found: dict[str, list[tuple[str, int]]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in callees:
            for position, argument in enumerate(node.args):
                if isinstance(argument, ast.Name) and argument.id in names:
                    found.setdefault(argument.id, []).append((node.func.id, position))
    return found


def parameter_shapes(function: ast.FunctionDef, callees: Mapping[str, ast.FunctionDef] | None = None,
                     _visiting: frozenset[str] = frozenset()) -> dict[str, Shape]:
    """Parameter -> its likely shape, from ``function``'s body and, for a parameter passed on as it
    is, from the shape the callee (one of ``callees``) gives the parameter it fills."""
    callees = callees or {}
    names = set(_parameter_names(function))
    found: dict[str, Shape] = {}
    for statement in function.body:
        _collect(statement, names, found)
    visiting = _visiting | {function.name}
    for name, uses in forwarded(function, callees).items():
        for callee, position in uses:
            if callee in visiting:
                continue
            callee_parameters = _parameter_names(callees[callee])
            if position < len(callee_parameters):
                shape = parameter_shapes(callees[callee], callees, visiting).get(callee_parameters[position])
                if shape is not None:
                    found[name] = _stronger(found.get(name), shape)
    return found


def shape_strategy(shape: Shape, numbers: Sequence[Decimal], strings: Sequence[str],
                   documented: Sequence[str] = ()) -> str:
    """A Hypothesis strategy's text for ``shape``: numbers near ``numbers``, texts from ``strings``,
    callables (``callable_inputs``; the ``documented`` functions where a docstring is read),
    containers up to ``DEFAULT_MAX_LENGTH`` items."""
    def scalar(kind: ShapeKind) -> str:
        if kind == "callable":
            return callable_strategy(-1, documented if shape.documented else ())
        if kind == "mapping":
            return mapping_strategy([], numbers, strings)
        return text_strategy(strings) if kind == "text" else int_strategy(numbers)

    if shape.kind == "callable":
        drawn = callable_strategy(shape.width, documented if shape.documented else ())
        return f"st.one_of({drawn}, st.none(), {text_strategy(strings)})" if shape.checked else drawn
    if shape.kind == "pairs":
        items = ", ".join([scalar(shape.item)] * shape.width)
        return f"st.lists(st.tuples({items}), max_size={DEFAULT_MAX_LENGTH})"
    if shape.kind == "sequence":
        return f"st.lists({scalar(shape.item)}, max_size={DEFAULT_MAX_LENGTH})"
    return scalar(shape.kind)


def _stored_parameters(init: ast.FunctionDef) -> dict[str, str]:
    """Attribute -> the parameter ``init`` stores in it as it is (``self.key = key``)."""
    names = set(_parameter_names(init))
    stored: dict[str, str] = {}
    for node in ast.walk(init):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in names:
            for target in node.targets:
                if isinstance(target, ast.Attribute) and ast.unparse(target.value) == "self":
                    stored[target.attr] = node.value.id
    return stored


def attribute_shapes(cls: ast.ClassDef, init: ast.FunctionDef) -> dict[str, Shape]:
    """``init``'s parameters -> their shapes, from its body and, for one it stores as an attribute
    (``self.key = key``), from the calls of that attribute in the class's methods (``self.key(item)``:
    a callable of one argument)."""
    found = parameter_shapes(init)
    stored = _stored_parameters(init)
    for node in ast.walk(cls):
        function = node.func if isinstance(node, ast.Call) else None
        if (isinstance(node, ast.Call) and isinstance(function, ast.Attribute) and function.attr in stored
                and isinstance(function.value, ast.Name) and function.value.id == "self"):
            name = stored[function.attr]
            found[name] = _stronger(found.get(name), Shape("callable", width=len(node.args)))
    return found

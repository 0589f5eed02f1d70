"""Template repair operator of the fix space: the fix patterns of template-based repair, in Python.

``template`` is a generator ``(fn, context) -> Iterator[Proposal]`` registered in
``fix_space.REPAIR_OPERATORS``; its fix patterns are those of template-based repair (TBar's
templates, adapted to Python), each a small edit that ``edits.make`` verifies:

- null check: a statement that dereferences a local ``x`` (``x.a``, ``x[k]``, ``x.m()``) is
  wrapped in ``if x is not None:``;
- range check: a statement that indexes ``xs[i]`` is wrapped in ``if i < len(xs):``;
- cast: an expression used as a number, a string or a list is converted with ``int()``,
  ``float()``, ``str()`` or ``list()`` (an operand next to a literal of that type, an argument of
  ``range``, an index, an iterator such as ``map(...)`` that is indexed or measured); a true
  division ``a / b`` where an int is due (an index, ``range``) becomes ``int(a / b)``;
- copy on return: ``return x`` returns ``list(x)``, ``x.copy()`` or ``sorted(x)``;
- membership and identity: ``==`` becomes ``in`` or ``is``, ``in`` and ``is`` become ``==``
  (and their negations likewise);
- exception handling: a statement that calls, indexes or reads an attribute is wrapped in
  ``try: ... except E: return d``, ``E`` an exception class the module names
  (``FixContext.exceptions``), then ``Exception``, and ``d`` a literal the function returns,
  else ``None``;
- operand swap: the operands of a non-commutative operator (``-``, ``/``, ``//``, ``%``, ``**``,
  shifts, ``@``, ``+`` on strings or lists) or the two positional arguments of a call swap.

Each pattern makes at most a few proposals per site (a statement, a name, a subscript, an
operand, a comparison, a return), and ``fix_space.MAX_PER_SITE["template"]`` caps the verified
ones per pattern and site: each pattern counts against a site of its own. Proposals come by
node in source order.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator, Sequence

from equisa_core.mutation.edits import (
    SELF_NAMES,
    Candidate,
    Edit,
    FunctionModel,
    Proposal,
    Site,
    is_stringy,
    with_field,
)
from equisa_core.mutation.fix_context import FixContext
from equisa_core.repair.operators.statements import (
    Block,
    blocks,
    indent_of,
    indent_unit,
    line_chunk,
    placed,
    reindent,
)

__all__ = ["MAX_EXCEPTIONS", "MAX_RETURN_DEFAULTS", "template"]

#: At most this many exception classes per wrapped statement (the module's first, then Exception).
MAX_EXCEPTIONS = 2
#: At most this many returned defaults per exception class.
MAX_RETURN_DEFAULTS = 2
_BUILTIN_NAMES = frozenset(dir(builtins))
_SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return, ast.Raise, ast.Delete, ast.Assert)
_RAISING = (ast.Call, ast.Subscript, ast.Attribute)
_COPYABLE_RETURN = (ast.Name, ast.Attribute, ast.Subscript, ast.Call)
_CONVERTERS = frozenset({"list", "sorted", "tuple", "set", "dict", "str", "int", "float", "bool", "len"})
_ITERATORS = frozenset({"map", "filter", "zip", "reversed", "enumerate"})
_VIEWS = frozenset({"keys", "values", "items"})
_NON_COMMUTATIVE = (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.RShift, ast.MatMult)
_COMPARE_TEMPLATES: dict[type[ast.cmpop], tuple[type[ast.cmpop], ...]] = {
    ast.Eq: (ast.In, ast.Is),
    ast.NotEq: (ast.NotIn, ast.IsNot),
    ast.In: (ast.Eq,),
    ast.NotIn: (ast.NotEq,),
    ast.Is: (ast.Eq,),
    ast.IsNot: (ast.NotEq,),
}
_COMPARE_TEXT: dict[type[ast.cmpop], str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}
_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


# --- sites ---------------------------------------------------------------------------------------


class _Sites:
    """One site per pattern and node, so that each pattern has its own per-site cap: a marker
    statement on the line of the node's statement, kept alive while the generator runs (the
    caps count sites by id)."""

    def __init__(self, fn: FunctionModel) -> None:
        self.fn = fn
        self.markers: dict[tuple[str, int], ast.stmt] = {}

    def __call__(self, pattern: str, node: ast.AST) -> ast.stmt:
        key = (pattern, id(node))
        if key not in self.markers:
            current: ast.AST | None = node
            while current is not None and not isinstance(current, ast.stmt):
                current = self.fn.parents.get(id(current))
            line = current.lineno if current is not None else self.fn.node.lineno
            self.markers[key] = ast.Pass(lineno=line, col_offset=0, end_lineno=line, end_col_offset=0)
        return self.markers[key]


# --- wrapping a statement ------------------------------------------------------------------------


def _wrap(
    fn: FunctionModel,
    block: Block,
    index: int,
    new: ast.stmt,
    head: Sequence[str],
    tail: Sequence[tuple[int, str]],
) -> Candidate:
    """``block.statements[index]`` inside a new compound statement: the ``head`` lines, the
    statement indented one level, then the ``tail`` lines (each with its extra indentation)."""
    stmt = block.statements[index]
    indent, unit, eol = indent_of(fn, stmt), indent_unit(fn), fn.eol()
    start, end, text = line_chunk(fn, stmt)
    wrapped = "".join(f"{indent}{line}{eol}" for line in head) + reindent(text, indent, indent + unit)
    wrapped += "".join(f"{indent}{unit * depth}{line}{eol}" for depth, line in tail)
    rendered = "".join(f"{indent}{line}{eol}" for line in ast.unparse(new).splitlines())
    value = [*block.statements[:index], new, *block.statements[index + 1 :]]
    alternatives = (((start, end, placed(wrapped, end, fn)),), ((start, end, placed(rendered, end, fn)),))
    return Candidate(block.owner, block.field, value, alternatives, fn.span(stmt))


def _header_expressions(stmt: ast.stmt) -> list[ast.AST]:
    """The parts of a statement that run before its body: the whole of a simple statement, the
    test of ``if``/``while``, the iterable of ``for``, the context expressions of ``with``."""
    if isinstance(stmt, _SIMPLE):
        return [stmt]
    if isinstance(stmt, ast.If | ast.While):
        return [stmt.test]
    if isinstance(stmt, ast.For | ast.AsyncFor):
        return [stmt.iter]
    if isinstance(stmt, ast.With | ast.AsyncWith):
        return [item.context_expr for item in stmt.items]
    return []


def _inner_names(parts: Sequence[ast.AST]) -> set[str]:
    """Names bound by the lambdas and comprehensions inside ``parts``."""
    inner: set[str] = set()
    for part in parts:
        for node in ast.walk(part):
            if isinstance(node, ast.Lambda):
                inner.update(a.arg for a in (*node.args.posonlyargs, *node.args.args))
            elif isinstance(node, ast.comprehension):
                inner.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
    return inner


def _null_checks(
    fn: FunctionModel, block: Block, index: int, parts: Sequence[ast.AST], site: _Sites
) -> Iterator[Proposal]:
    inner = _inner_names(parts)
    seen: set[str] = set()
    for part in parts:
        for node in ast.walk(part):
            if not isinstance(node, ast.Attribute | ast.Subscript) or not isinstance(node.value, ast.Name):
                continue
            name = node.value
            if name.id in seen or name.id in inner or name.id in SELF_NAMES or name.id not in fn.bindings:
                continue
            seen.add(name.id)
            test = ast.Compare(ast.Name(name.id, ast.Load()), [ast.IsNot()], [ast.Constant(None)])
            new = ast.If(test, [block.statements[index]], [])
            wrapped = _wrap(fn, block, index, new, [f"if {name.id} is not None:"], [])
            yield Proposal(wrapped, site("null check", name))


def _index_is_simple(index: ast.expr, inner: set[str]) -> bool:
    if isinstance(index, ast.Slice | ast.Tuple | ast.Constant | ast.UnaryOp):
        return False
    nodes = list(ast.walk(index))
    if any(isinstance(n, (ast.Call, ast.Subscript, ast.JoinedStr, *_SCOPES)) for n in nodes):
        return False
    return not any(isinstance(n, ast.Name) and n.id in inner for n in nodes)


def _range_checks(
    fn: FunctionModel, block: Block, index: int, parts: Sequence[ast.AST], site: _Sites
) -> Iterator[Proposal]:
    if "len" in fn.bound:
        return
    inner = _inner_names(parts)
    seen: set[str] = set()
    for part in parts:
        for node in ast.walk(part):
            if not isinstance(node, ast.Subscript) or not isinstance(node.value, ast.Name | ast.Attribute):
                continue
            if not _index_is_simple(node.slice, inner) or any(
                isinstance(n, ast.Name) and n.id in inner for n in ast.walk(node.value)
            ):
                continue
            head = f"if {fn.src(node.slice)} < len({fn.src(node.value)}):"
            if head in seen:
                continue
            seen.add(head)
            length = ast.Call(ast.Name("len", ast.Load()), [node.value], [])
            test = ast.Compare(node.slice, [ast.Lt()], [length])
            new = ast.If(test, [block.statements[index]], [])
            yield Proposal(_wrap(fn, block, index, new, [head], []), site("range check", node))


def _literal_returns(fn: FunctionModel) -> list[str]:
    """The literals the function returns (``False``, ``0``, ``[]``), in source order, no repeats."""
    found: dict[str, None] = {}
    for site in fn.sites:
        node = site.node
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        value = node.value
        empty = isinstance(value, ast.List | ast.Tuple | ast.Dict | ast.Set) and not any(
            getattr(value, f) for f in ("elts", "keys") if hasattr(value, f)
        )
        if (isinstance(value, ast.Constant) and value.value is not None) or empty:
            found.setdefault(fn.src(value), None)
    return list(found)


def _exception_names(fn: FunctionModel, context: FixContext) -> list[str]:
    """Exception classes a handler may name: the module's that resolve here, then ``Exception``."""
    usable = [
        name
        for name in context.exceptions
        if name != "Exception"
        and name.split(".")[0] not in fn.bound
        and (name.split(".")[0] in context.module_names or name.split(".")[0] in _BUILTIN_NAMES)
    ]
    return [*usable[: MAX_EXCEPTIONS - 1], "Exception"]


def _try_wraps(
    fn: FunctionModel, block: Block, index: int, handlers: Sequence[tuple[str, str]], site: _Sites
) -> Iterator[Proposal]:
    stmt = block.statements[index]
    if not isinstance(stmt, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Expr | ast.Return):
        return
    if not any(isinstance(n, _RAISING) for n in ast.walk(stmt)):
        return
    for exception, default in handlers:
        handler = ast.ExceptHandler(
            ast.parse(exception, mode="eval").body, None, [ast.Return(ast.parse(default, mode="eval").body)]
        )
        new = ast.Try([stmt], [handler], [], [])
        tail = [(0, f"except {exception}:"), (1, f"return {default}")]
        yield Proposal(_wrap(fn, block, index, new, ["try:"], tail), site("try", stmt))


# --- expression templates ------------------------------------------------------------------------


def _is_literal(node: ast.AST, kind: type) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is kind


def _iterator_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id in _ITERATORS) or (
        isinstance(func, ast.Attribute) and func.attr in _VIEWS
    )


def _literal_casts(others: Sequence[ast.AST], compared: bool) -> list[str]:
    """The conversions of an operand next to literals: an int, a float, a str (compared)."""
    if any(_is_literal(o, int) for o in others):
        return ["int", "float"]
    if any(_is_literal(o, float) for o in others):
        return ["float"]
    if compared and any(_is_literal(o, str) for o in others):
        return ["str"]
    return []


def _binary_casts(parent: ast.BinOp, other: ast.AST) -> list[str]:
    """The conversions of one operand of a binary operator, by the other operand."""
    if isinstance(parent.op, ast.Add) and isinstance(other, ast.List | ast.ListComp):
        return ["list"]
    if isinstance(parent.op, ast.Add) and is_stringy(other) and not isinstance(other, ast.Tuple):
        return ["str"]
    return _literal_casts([other], compared=False)


def _casts(site: Site) -> list[str]:
    """The conversions an operand is likely to need, judged by where it is used."""
    node, parent = site.node, site.parent
    if isinstance(parent, ast.BinOp):
        return _binary_casts(parent, parent.right if site.field == "left" else parent.left)
    if isinstance(parent, ast.Compare):
        return _literal_casts([o for o in (parent.left, *parent.comparators) if o is not node], compared=True)
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and site.field == "args":
        if parent.func.id == "range":
            return ["int"]
        return ["list"] if parent.func.id == "len" and _iterator_call(node) else []
    if isinstance(parent, ast.Subscript):
        if site.field == "slice":
            return ["int"]
        return ["list"] if _iterator_call(node) else []
    return []


def _cast_templates(fn: FunctionModel, site: Site, sites: _Sites) -> Iterator[Proposal]:
    node = site.node
    if not isinstance(node, ast.expr):
        return
    division = isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)  # a float where an int is due
    if not (isinstance(node, ast.Name | ast.Attribute | ast.Subscript | ast.Call) or division):
        return
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CONVERTERS:
        return
    start, end = fn.span(node)
    display = fn.span(site.parent) if isinstance(site.parent, ast.expr) else None
    for cast in _casts(site):
        if cast in fn.bound or (division and cast != "int"):
            continue
        new = ast.Call(ast.Name(cast, ast.Load()), [node], [])
        edits: list[Edit] = [(start, start, f"{cast}("), (end, end, ")")]
        yield Proposal(fn.replace(site, new, [edits], display), sites("cast", node))


def _return_copies(fn: FunctionModel, site: Site, sites: _Sites) -> Iterator[Proposal]:
    node = site.node
    if not isinstance(node, ast.Return) or not isinstance(node.value, _COPYABLE_RETURN):
        return
    value = node.value
    if isinstance(value, ast.Name) and value.id in SELF_NAMES:
        return
    if isinstance(value, ast.Call) and (
        (isinstance(value.func, ast.Name) and value.func.id in _BUILTIN_NAMES)  # a bool, a number, ...
        or (isinstance(value.func, ast.Attribute) and value.func.attr == "copy")
    ):
        return
    start, end = fn.span(value)
    target = Site(value, node, "value", None, site.shadow)
    for name in ("list", "copy", "sorted"):
        if name == "copy":
            new: ast.expr = ast.Call(ast.Attribute(value, "copy", ast.Load()), [], [])
            edits: list[Edit] = [(end, end, ".copy()")]
        elif name in fn.bound:
            continue
        else:
            new = ast.Call(ast.Name(name, ast.Load()), [value], [])
            edits = [(start, start, f"{name}("), (end, end, ")")]
        yield Proposal(fn.replace(target, new, [edits], fn.span(node)), sites("return copy", value))


def _is_plain_literal(node: ast.AST) -> bool:
    """A literal other than None, True and False (the singletons ``is`` may compare)."""
    if isinstance(node, ast.Constant):
        return node.value is not None and not isinstance(node.value, bool)
    return isinstance(node, ast.JoinedStr | ast.List | ast.Tuple | ast.Dict | ast.Set)


def _compare_templates(fn: FunctionModel, site: Site, sites: _Sites) -> Iterator[Proposal]:
    node = site.node
    if not isinstance(node, ast.Compare):
        return
    operands = [node.left, *node.comparators]
    for i, op in enumerate(node.ops):
        if type(op) not in _COMPARE_TEMPLATES:
            continue
        gap = fn.operator_span(fn.span(operands[i])[1], fn.span(operands[i + 1])[0], _COMPARE_TEXT[type(op)])
        literal = any(_is_plain_literal(o) for o in operands[i : i + 2])
        for new_op in _COMPARE_TEMPLATES[type(op)]:
            if literal and new_op in (ast.Is, ast.IsNot):
                continue  # `is` with a literal: never the fix (and a SyntaxWarning)
            ops = [*node.ops[:i], new_op(), *node.ops[i + 1 :]]
            primary = [] if gap is None else [[(*gap, _COMPARE_TEXT[new_op])]]
            yield Proposal(
                fn.replace(site, with_field(node, "ops", ops), primary, gap), sites("comparison", node)
            )


def _operand_swaps(fn: FunctionModel, site: Site, sites: _Sites) -> Iterator[Proposal]:
    node = site.node
    if isinstance(node, ast.BinOp):
        concatenation = isinstance(node.op, ast.Add) and (is_stringy(node.left) or is_stringy(node.right))
        if not (isinstance(node.op, _NON_COMMUTATIVE) or concatenation):
            return
        first, second = node.left, node.right
        new: ast.AST = ast.BinOp(second, node.op, first)
    elif isinstance(node, ast.Call) and len(node.args) == 2:
        first, second = node.args
        if isinstance(first, ast.Starred) or isinstance(second, ast.Starred):
            return
        new = with_field(node, "args", [second, first])
    else:
        return
    if ast.dump(first) == ast.dump(second):
        return
    (a0, a1), (b0, b1) = fn.span(first), fn.span(second)
    edits = [(a0, a1, fn.text[b0:b1]), (b0, b1, fn.text[a0:a1])]
    yield Proposal(fn.replace(site, new, [edits]), sites("operand swap", node))


# --- the operator --------------------------------------------------------------------------------


def template(fn: FunctionModel, context: FixContext) -> Iterator[Proposal]:
    """The template fixes of the function, by site in source order (see the module docstring)."""
    positions = {
        id(stmt): (block, i)
        for block in blocks(fn)
        for i, stmt in enumerate(block.statements)
        if i >= block.first
    }
    defaults = [*_literal_returns(fn), "None"][:MAX_RETURN_DEFAULTS]
    handlers = [(e, d) for e in _exception_names(fn, context) for d in defaults]
    sites = _Sites(fn)
    for site in fn.sites:
        node = site.node
        if isinstance(node, ast.stmt) and id(node) in positions:
            block, index = positions[id(node)]
            parts = _header_expressions(node)
            yield from _null_checks(fn, block, index, parts, sites)
            yield from _range_checks(fn, block, index, parts, sites)
            yield from _try_wraps(fn, block, index, handlers, sites)
        yield from _return_copies(fn, site, sites)
        yield from _compare_templates(fn, site, sites)
        yield from _operand_swaps(fn, site, sites)
        yield from _cast_templates(fn, site, sites)

"""Repair operators that edit conditions and guards: a condition widened, narrowed or cut, a guard added.

Two operators of the repair's fix space (``fix_space.REPAIR_OPERATORS``), each a generator of
``Proposal``s that ``fix_space.fix_candidates`` verifies with ``edits.make`` like every other:

- ``condition_edit``: the test ``c`` of an ``if``/``elif``, a ``while``, a ternary or a
  comprehension ``if`` (not an ``assert``, not a constant) becomes, in this order: ``c`` with one
  clause of one of its ``and``/``or`` dropped; ``not c``; then, for each of the best
  ``MAX_OPTIONS`` conditions ``e`` in scope, ``c or e`` (widened), ``c and e`` and ``c and not e``
  (narrowed; the negation written plainly, ``x is not None`` for ``not x is None``). A test of a
  name that ``c`` reads (``x is None``, ``not x``, ...) goes first, so that it guards ``c``:
  ``not x or c``, ``x is not None and c``. The conditions ``e``: the function's other conditions
  and the module's (``FixContext.module_conditions``: tests, comparisons, boolean calls such as
  ``isinstance``) whose names are all in scope at ``c``; ``x is None``, ``x is not None``,
  ``not x`` and ``len(x) == 0`` (not for an int) for the parameters and the locals bound before
  ``c``; comparisons of the int ones with the function's int constants. Ranked: those that share
  a name with ``c`` first, then the smaller (in AST nodes), then in that order. Comparison
  operators are left to ``mutation.comparison_swap``.
- ``guard_insert``: ``if <cond>: <action>`` inserted before a statement on lines of its own (not
  an ``elif``): the first statement of the body, each statement that reads a parameter (in its
  header, for a compound statement) and the first statement of each loop body. ``<cond>``: at
  the start of the body, the negation of each argument invariant (``localization.invariants``)
  that every recorded passing call keeps and some recorded failing call breaks
  (``FixContext.passing_calls``/``failing_calls``: a call breaks an invariant when mining the
  passing calls with that call added loses it); then ``not x``, ``x is None`` and
  ``len(x) == 0`` for the names the statement reads (a loop's first statement: its loop
  variables first; the body's first: the parameters). ``<action>``, in this order: ``continue``
  inside a loop; ``return`` of a constant the function returns, of ``0``/``[]``/``''``/
  ``False``/``True`` when it returns values of that kind, of ``None``; ``raise T('<cond>')`` for
  the first ``MAX_RAISED`` exception types the function or its module raises; ``return`` of
  another return expression in scope or of a parameter (a bare ``return`` in a function that
  returns no value). Conditions and actions are paired best-first along diagonals (the first
  of each, then the first two of each, ...), at most ``_GUARDS_TRIED`` per statement.
"""

from __future__ import annotations

import ast
import builtins
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from equisa_core.localization.interface import RESULT_NAME, RESULT_SUBJECT, mine_invariants
from equisa_core.mutation.edits import (
    SELF_NAMES,
    Candidate,
    Edit,
    FunctionModel,
    Proposal,
    Site,
    expression,
    negate,
    with_field,
)
from equisa_core.mutation.fix_context import FixContext, is_condition, literal_text, raised_types

__all__ = ["MAX_OPTIONS", "MAX_RAISED", "condition_edit", "guard_insert", "negation"]

#: Conditions ``e`` tried per condition site (three edits each), best-ranked first.
MAX_OPTIONS = 10
#: Exception types a guard may raise.
MAX_RAISED = 2
# Guards proposed per position, best first (the per-site cap of fix_space keeps fewer).
_GUARDS_TRIED = 40
_ALL_INVARIANTS = 10_000
_BUILTIN_NAMES = frozenset(dir(builtins))
_NOT_COUNTED = (ast.expr_context, ast.operator, ast.boolop, ast.cmpop, ast.unaryop)
_UNSAFE = (ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom, ast.Lambda)
_NEGATED: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
}
_INT_COMPARISONS: tuple[type[ast.cmpop], ...] = (ast.Eq, ast.NotEq, ast.Lt, ast.Gt, ast.LtE, ast.GtE)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_NUMERIC_CALLS = frozenset({"len", "sum", "int", "float", "abs", "round", "min", "max"})
_LIST_CALLS = frozenset({"list", "sorted"})
_STR_CALLS = frozenset({"str", "repr", "format"})
_STR_METHODS = frozenset({"join", "format", "strip", "lower", "upper", "replace"})


# --- shared --------------------------------------------------------------------------------------


def negation(node: ast.expr) -> ast.expr:
    """``node`` negated plainly: ``x`` for ``not x``, ``x is not None`` for ``x is None``, else ``not x``."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return node.operand
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _NEGATED:
        return ast.Compare(node.left, [_NEGATED[type(node.ops[0])]()], node.comparators)
    return ast.UnaryOp(ast.Not(), node)


def _size(node: ast.AST) -> int:
    return sum(1 for n in ast.walk(node) if not isinstance(n, _NOT_COUNTED))


def _free_names(node: ast.AST) -> frozenset[str]:
    """The names ``node`` reads, less those its own comprehensions and lambdas bind."""
    read = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    local = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Lambda):
            local.update(a.arg for a in (*sub.args.posonlyargs, *sub.args.args, *sub.args.kwonlyargs))
    return frozenset(read - local)


def _scope(fn: FunctionModel, context: FixContext, shadow: frozenset[str], offset: int) -> frozenset[str]:
    """The names readable at ``offset``: enclosing comprehension and lambda names, parameters,
    locals bound before it, and the module's names and builtins that the function does not bind."""
    names = set(shadow) | set(fn.parameters)
    names.update(name for name, offsets in fn.bindings.items() if offsets[0] < offset)
    names.update(n for n in context.module_names if n not in fn.bound)
    names.update(n for n in _BUILTIN_NAMES if n not in fn.bound)
    return frozenset(names)


def _locals_at(fn: FunctionModel, shadow: frozenset[str], offset: int) -> list[str]:
    """Parameters and locals bound before ``offset`` (and enclosing comprehension names), no ``self``."""
    names = dict.fromkeys(p for p in fn.parameters if p not in SELF_NAMES)
    names.update(dict.fromkeys(n for n, offsets in fn.bindings.items() if offsets[0] < offset))
    names.update(dict.fromkeys(sorted(shadow)))
    return list(names)


def _int_valued(node: ast.AST | None) -> bool:
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id in ("len", "int")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.FloorDiv):
        return _int_valued(node.left) or _int_valued(node.right)
    return False


def _loop_int_names(node: ast.For) -> list[str]:
    """The variable of ``for i in range(...)`` and the index of ``for i, x in enumerate(...)``."""
    func = node.iter.func if isinstance(node.iter, ast.Call) else None
    called = func.id if isinstance(func, ast.Name) else ""
    target = node.target
    if called == "range" and isinstance(target, ast.Name):
        return [target.id]
    if called == "enumerate" and isinstance(target, ast.Tuple) and target.elts:
        first = target.elts[0]
        return [first.id] if isinstance(first, ast.Name) else []
    return []


def _int_targets(node: ast.AST) -> list[str]:
    """The names one node shows to hold ints (see ``_int_names``)."""
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and _int_valued(node.value):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [t.id for t in targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.For):
        return _loop_int_names(node)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        pair = (node.left, node.comparators[0])
        if any(isinstance(side, ast.Constant) and _int_valued(side) for side in pair):
            return [side.id for side in pair if isinstance(side, ast.Name)]
    return []


def _int_names(fn: FunctionModel) -> frozenset[str]:
    """Names that hold ints: assigned an int, a ``range`` loop's variable, an ``enumerate`` index,
    or compared with or incremented by an int literal."""
    return frozenset(name for site in fn.sites for name in _int_targets(site.node))


def _name_tests(name: str, ints: frozenset[str]) -> list[ast.expr]:
    """``x is None``, ``x is not None``, ``not x`` and ``len(x) == 0`` (not for an int)."""

    def var() -> ast.expr:
        return ast.Name(name, ast.Load())

    tests: list[ast.expr] = [
        ast.Compare(var(), [ast.Is()], [ast.Constant(None)]),
        ast.Compare(var(), [ast.IsNot()], [ast.Constant(None)]),
        ast.UnaryOp(ast.Not(), var()),
    ]
    if name not in ints:
        length = ast.Call(ast.Name("len", ast.Load()), [var()], [])
        tests.append(ast.Compare(length, [ast.Eq()], [ast.Constant(0)]))
    return tests


def _parsed(text: str) -> ast.expr | None:
    try:
        return ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError):
        return None


# --- condition_edit ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Option:
    """A condition ``e`` that may widen or narrow another: its node (a copy), text and ranking facts."""

    node: ast.expr
    text: str
    names: frozenset[str]
    dump: str
    origin: int  # 0 the function's conditions, 1 the module's, 2 name tests, 3 int comparisons
    order: int
    guard: bool  # a test of a name's None-ness or emptiness: it goes before what it guards


def _option(node: ast.expr, text: str, origin: int, order: int, guard: bool = False) -> _Option:
    return _Option(node, text, _free_names(node), ast.dump(node), origin, order, guard)


def _function_conditions(fn: FunctionModel) -> list[_Option]:
    """The function's own conditions, each a fresh copy of the node."""
    found: list[_Option] = []
    for site in fn.sites:
        node = site.node
        is_test = (isinstance(site.parent, ast.If | ast.While | ast.IfExp) and site.field == "test") or (
            isinstance(site.parent, ast.comprehension) and site.field == "ifs"
        )
        if not isinstance(node, ast.expr) or not (is_test or is_condition(node)):
            continue
        if isinstance(node, ast.Constant) or any(isinstance(n, _UNSAFE) for n in ast.walk(node)):
            continue
        source = fn.src(node)
        text = source if "\n" not in source and "\r" not in source else ast.unparse(node)
        copy = _parsed(text)
        if copy is not None:
            found.append(_option(copy, text, 0, len(found)))
    return found


def _module_options(context: FixContext) -> list[_Option]:
    options = []
    for order, text in enumerate(context.module_conditions):
        node = _parsed(text)
        if node is not None:
            options.append(_option(node, text, 1, order))
    return options


def _generated_options(fn: FunctionModel, context: FixContext, names: Sequence[str]) -> list[_Option]:
    """Name tests for ``names``, then comparisons of the int names with the function's int constants."""
    ints = _int_names(fn)
    options = [
        _option(test, ast.unparse(test), 2, len(names) * k + i, guard=True)
        for i, name in enumerate(names)
        for k, test in enumerate(_name_tests(name, ints))
    ]
    constants = [c for c in (_parsed(t) for t in context.function_constants.get("int", ())) if c is not None]
    for name in (n for n in names if n in ints):
        for constant, op in itertools.product(constants, _INT_COMPARISONS):
            comparison = ast.Compare(ast.Name(name, ast.Load()), [op()], [constant])
            options.append(_option(comparison, ast.unparse(comparison), 3, len(options)))
    return options


def _ranked_options(
    fn: FunctionModel,
    context: FixContext,
    site: Site,
    own: Sequence[_Option],
    module: Sequence[_Option],
) -> list[_Option]:
    """The best ``MAX_OPTIONS`` conditions in scope at the condition of ``site``, other than its parts."""
    condition = expression(site)
    start = fn.span(condition)[0]
    scope = _scope(fn, context, site.shadow, start)
    parts = {ast.dump(n) for n in ast.walk(condition) if isinstance(n, ast.expr)}
    names = _free_names(condition)
    pool = [*own, *module, *_generated_options(fn, context, _locals_at(fn, site.shadow, start))]
    seen: set[str] = set()
    usable = []
    for option in pool:
        if option.dump in parts or option.dump in seen or not option.names <= scope:
            continue
        seen.add(option.dump)
        usable.append(option)
    usable.sort(key=lambda o: (not (o.names & names), _size(o.node), o.origin, o.order))
    return usable[:MAX_OPTIONS]


def _connected(
    fn: FunctionModel, site: Site, op: ast.boolop, other: ast.expr, text: str, first: bool
) -> Candidate:
    """``c op e`` (``e op c`` when ``first``), joined into ``c``'s own ``and``/``or`` when it has one."""
    condition = expression(site)
    start, end = fn.span(condition)
    same = isinstance(condition, ast.BoolOp) and type(condition.op) is type(op)
    values = list(condition.values) if isinstance(condition, ast.BoolOp) and same else [condition]
    new = ast.BoolOp(op, [other, *values] if first else [*values, other])
    word = " and " if isinstance(op, ast.And) else " or "
    alternatives: list[list[Edit]] = []
    for wrap_condition, wrap_other in itertools.product((False, True), (False, True)):
        piece = f"({text})" if wrap_other else text
        opened, closed = ("(", ")") if wrap_condition else ("", "")
        if first:
            edits: list[Edit] = [(start, start, piece + word + opened)]
            edits += [(end, end, closed)] if wrap_condition else []
        else:
            edits = [(start, start, opened)] if wrap_condition else []
            edits.append((end, end, closed + word + piece))
        alternatives.append(edits)
    return fn.replace(site, new, alternatives, (start, end))


def _clause_drops(fn: FunctionModel, site: Site, sites: dict[int, Site]) -> Iterator[Candidate]:
    """The condition with one clause of one of its ``and``/``or`` left out."""
    for node in ast.walk(expression(site)):
        if not isinstance(node, ast.BoolOp) or id(node) not in sites:
            continue
        values = node.values
        for i in range(len(values)):
            rest = [*values[:i], *values[i + 1 :]]
            if i + 1 < len(values):
                edit: Edit = (fn.span(values[i])[0], fn.span(values[i + 1])[0], "")
            else:
                edit = (fn.span(values[i - 1])[1], fn.span(values[i])[1], "")
            new = rest[0] if len(rest) == 1 else with_field(node, "values", rest)
            yield fn.replace(sites[id(node)], new, [[edit]], fn.span(expression(site)))


def _is_condition_site(site: Site) -> bool:
    if isinstance(site.node, ast.Constant):
        return False
    return (isinstance(site.parent, ast.If | ast.While | ast.IfExp) and site.field == "test") or (
        isinstance(site.parent, ast.comprehension) and site.field == "ifs"
    )


def condition_edit(fn: FunctionModel, context: FixContext) -> Iterator[Proposal]:
    """Conditions widened, narrowed, cut to fewer clauses or negated (see the module docstring)."""
    sites = {id(site.node): site for site in fn.sites}
    own = _function_conditions(fn)
    module = _module_options(context)
    for site in fn.sites:
        if not _is_condition_site(site):
            continue
        condition = expression(site)
        for candidate in _clause_drops(fn, site, sites):
            yield Proposal(candidate, condition)
        yield Proposal(negate(fn, site), condition)
        names = _free_names(condition)
        for option in _ranked_options(fn, context, site, own, module):
            first = option.guard and bool(option.names & names)
            yield Proposal(_connected(fn, site, ast.Or(), option.node, option.text, first), condition)
            for narrowing in (option.node, negation(option.node)):
                text = option.text if narrowing is option.node else ast.unparse(narrowing)
                yield Proposal(_connected(fn, site, ast.And(), narrowing, text, first), condition)


# --- guard_insert --------------------------------------------------------------------------------


def broken_invariants(context: FixContext, parameters: Sequence[str]) -> list[str]:
    """The argument invariants that all passing calls keep and some failing call breaks, strongest first."""
    if not context.passing_calls or not context.failing_calls:
        return []
    passing = list(context.passing_calls)
    kept = [
        inv.expression
        for inv in mine_invariants(passing, parameters, limit=_ALL_INVARIANTS)
        if inv.subject != RESULT_SUBJECT
        and not inv.subject.startswith(RESULT_SUBJECT + ".")
        and RESULT_NAME not in inv.expression
    ]
    broken: set[str] = set()
    for call in context.failing_calls:
        still = {
            inv.expression for inv in mine_invariants([*passing, call], parameters, limit=_ALL_INVARIANTS)
        }
        broken.update(e for e in kept if e not in still)
    return [e for e in kept if e in broken]


def _header(stmt: ast.stmt) -> list[ast.AST]:
    """What a statement evaluates before its blocks: the test, the iterable, the context managers."""
    if isinstance(stmt, ast.If | ast.While):
        return [stmt.test]
    if isinstance(stmt, ast.For | ast.AsyncFor):
        return [stmt.iter]
    if isinstance(stmt, ast.With | ast.AsyncWith):
        return [item.context_expr for item in stmt.items]
    if isinstance(stmt, ast.Match):
        return [stmt.subject]
    if isinstance(stmt, ast.Try | ast.TryStar):
        return []
    return [stmt]


def _reads(stmt: ast.stmt) -> list[str]:
    """The names a statement (its header, for a compound one) reads, in order, no repeats."""
    read = [
        node
        for part in _header(stmt)
        for node in ast.walk(part)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    ]
    read.sort(key=lambda n: (n.lineno, n.col_offset))
    return list(dict.fromkeys(n.id for n in read))


def _loop_of(fn: FunctionModel, stmt: ast.stmt) -> ast.stmt | None:
    """The loop whose body holds ``stmt`` (at any depth), if any."""
    child: ast.AST = stmt
    parent = fn.parents.get(id(stmt))
    while parent is not None and parent is not fn.node:
        if isinstance(parent, _LOOPS) and any(child is s for s in parent.body):
            return parent
        child, parent = parent, fn.parents.get(id(parent))
    return None


def _value_kind(value: ast.expr) -> tuple[str, ...]:
    """``0``, ``[]``, ``''`` or ``False`` and ``True`` for a returned value of that kind, else ()."""
    func = value.func if isinstance(value, ast.Call) else None
    called = func.id if isinstance(func, ast.Name) else ""
    method = func.attr if isinstance(func, ast.Attribute) else ""
    constant = value.value if isinstance(value, ast.Constant) else None
    negated = isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not)
    if isinstance(constant, bool) or negated or is_condition(value):
        return "False", "True"
    if isinstance(constant, str) or isinstance(value, ast.JoinedStr) or called in _STR_CALLS:
        return ("''",)
    negative = isinstance(value, ast.UnaryOp) and literal_text(value) is not None
    if (
        isinstance(constant, int | float)
        or negative
        or isinstance(value, ast.BinOp)
        or called in _NUMERIC_CALLS
    ):
        return ("0",)
    if isinstance(value, ast.List | ast.ListComp) or called in _LIST_CALLS:
        return ("[]",)
    return ("''",) if method in _STR_METHODS else ()


def _returned_kinds(values: Sequence[ast.expr]) -> list[str]:
    """``0``, ``[]``, ``''``, ``False``, ``True`` for the kinds of value the function returns."""
    return list(dict.fromkeys(kind for value in values for kind in _value_kind(value)))


@dataclass(frozen=True)
class _Action:
    """What a guard does: its text (without the indent) and its statement."""

    text: str
    node: ast.stmt


class _Guards:
    """What the guards of one function share: its return values, raised types and layout."""

    raised: list[str]

    def __init__(self, fn: FunctionModel, context: FixContext) -> None:
        self.fn = fn
        self.context = context
        self.ints = _int_names(fn)
        returns = [s.node for s in fn.sites if isinstance(s.node, ast.Return)]
        self.values = [r.value for r in returns if r.value is not None]
        self.generator = any(isinstance(s.node, ast.Yield | ast.YieldFrom) for s in fn.sites)
        self.kinds = _returned_kinds(self.values)
        raised = dict.fromkeys([*raised_types(fn.node), *context.raised_exceptions])
        self.raised = [t for t in raised if t.split(".")[0] not in fn.bound][:MAX_RAISED]
        first = fn.node.body[0]
        indent = fn.lines[first.lineno - 1][: first.col_offset]
        def_line = fn.lines[fn.node.lineno - 1]
        outer = def_line[: len(def_line) - len(def_line.lstrip(" \t\f"))]
        self.unit = indent[len(outer) :] if indent.startswith(outer) and len(indent) > len(outer) else "    "
        self.eol = fn.eol()
        self.invariants = broken_invariants(context, fn.parameters)

    def actions(self, scope: frozenset[str], in_loop: bool) -> list[_Action | str]:
        """What a guard may do, best first: ``continue`` in a loop, ``return`` of a constant or
        ``None``, ``raise`` (an exception type's name, to be called with the condition's text),
        ``return`` of another return expression in scope or of a parameter."""
        first: list[_Action | str] = [_Action("continue", ast.Continue())] if in_loop else []
        if self.generator or not self.values:
            return [*first, _Action("return", ast.Return(None)), *self.raised]
        texts: dict[str, ast.expr] = {}
        for value in self.values:
            source = self.fn.src(value)
            text = source if "\n" not in source and "\r" not in source else ast.unparse(value)
            copy = _parsed(text)
            if copy is not None and _free_names(copy) <= scope:
                texts.setdefault(text, copy)
        for text in [*self.kinds, "None", *(p for p in self.fn.parameters if p not in SELF_NAMES)]:
            copy = _parsed(text)
            if copy is not None:
                texts.setdefault(text, copy)
        constants = [t for t, node in texts.items() if literal_text(node) is not None or t in ("[]", "None")]
        others = [t for t in texts if t not in constants]
        returns = [_Action(f"return {t}", ast.Return(texts[t])) for t in [*constants, *others]]
        return [*first, *returns[: len(constants)], *self.raised, *returns[len(constants) :]]

    @staticmethod
    def raising(name: str, condition: str) -> _Action | None:
        """``raise name('<condition>')``, or None when ``name`` does not parse."""
        func = _parsed(name)
        if func is None:
            return None
        node = ast.Raise(ast.Call(func, [ast.Constant(condition)], []), None)
        return _Action(f"raise {name}({condition!r})", node)

    def conditions(self, site: Site, start: int) -> list[ast.expr]:
        """Guard conditions before the statement of ``site`` (see the module docstring)."""
        fn, stmt = self.fn, site.node
        assert isinstance(stmt, ast.stmt)
        found: list[ast.expr] = []
        at_start = site.parent is fn.node
        if at_start:
            found += [negation(e) for e in (_parsed(t) for t in self.invariants) if e is not None]
        in_scope = set(_locals_at(fn, site.shadow, start))
        names: list[str] = []
        loop = _loop_of(fn, stmt)
        if loop is not None and isinstance(loop, ast.For | ast.AsyncFor) and loop.body[0] is stmt:
            names += [n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)]
        if at_start:
            names += [p for p in fn.parameters if p not in SELF_NAMES]
        names += [n for n in _reads(stmt) if n in in_scope]
        tests = [_name_tests(name, self.ints) for name in dict.fromkeys(names)]
        for kind in (2, 0, 3):  # `not x` for every name, then `x is None`, then `len(x) == 0`
            found += [of_name[kind] for of_name in tests if kind < len(of_name)]
        return found

    def proposals(self, site: Site) -> Iterator[Proposal]:
        fn, stmt = self.fn, site.node
        assert isinstance(stmt, ast.stmt) and site.index is not None
        start = fn.span(stmt)[0]
        conditions = self.conditions(site, start)
        if not conditions:
            return
        scope = _scope(fn, self.context, site.shadow, start)
        loop = _loop_of(fn, stmt)
        indent = fn.lines[stmt.lineno - 1][: stmt.col_offset]
        point = fn.starts[stmt.lineno - 1]
        block: list[ast.stmt] = getattr(site.parent, site.field)
        actions = self.actions(scope, loop is not None)
        pairs = sorted(
            itertools.product(range(len(conditions)), range(len(actions))),
            key=lambda p: (p[0] + p[1], p[0]),
        )
        for i, j in pairs[:_GUARDS_TRIED]:
            condition = conditions[i]
            test = ast.unparse(condition)
            chosen = actions[j]
            action = self.raising(chosen, test) if isinstance(chosen, str) else chosen
            if action is None:
                continue
            guard = ast.If(test=condition, body=[action.node], orelse=[])
            text = f"{indent}if {test}:{self.eol}{indent}{self.unit}{action.text}{self.eol}"
            value = [*block[: site.index], guard, *block[site.index :]]
            candidate = Candidate(
                site.parent, site.field, value, (((point, point, text),),), (point, point), "inserted"
            )
            yield Proposal(candidate, stmt)


def _positions(fn: FunctionModel) -> Iterator[Site]:
    """Statements a guard may go before: the body's first, those that read a parameter, each loop's first."""
    parameters = {p for p in fn.parameters if p not in SELF_NAMES}
    first = 1 if fn.docstring is not None else 0
    for site in fn.sites:
        stmt = site.node
        if not isinstance(stmt, ast.stmt) or site.index is None or not fn.own_lines(stmt):
            continue
        if isinstance(stmt, ast.If) and fn.text.startswith("elif", fn.span(stmt)[0]):
            continue
        body_start = site.parent is fn.node and site.index == first
        loop_start = isinstance(site.parent, _LOOPS) and site.field == "body" and site.index == 0
        if body_start or loop_start or parameters & set(_reads(stmt)):
            yield site


def guard_insert(fn: FunctionModel, context: FixContext) -> Iterator[Proposal]:
    """Guards ``if <cond>: return/continue/raise`` inserted before statements (see the module docstring)."""
    guards = _Guards(fn, context)
    for site in _positions(fn):
        yield from guards.proposals(site)

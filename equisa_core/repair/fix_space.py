"""The repair's wider fix space: one-edit candidates that draw on the names and constants in scope.

``fix_candidates`` lists candidate fixes of one function, each a small verified edit like the
mutants of ``mutation.py`` and made by the same engine (``edits.make``: the edited text must
parse to exactly the intended AST, compile when the original does and differ from it). Unlike the
mutants, which invert injected bugs, these edits reach what real one-edit fixes need: any name in
scope, not only the three nearest locals; the class's attributes and the sibling methods of a
call; a call's arguments; the constants of the function and its module (``fix_context``).

Operators (``REPAIR_OPERATORS``, apart from ``mutation.OPERATORS``, which screening and test
generation use):

- ``name_replace``: a read of a name becomes another name that fits the use. A value read may
  become a local bound before the read, a parameter, a name bound by an enclosing comprehension
  or lambda, or a module-level variable that the function does not rebind; a called module
  function or class may become another module function or class. Ranked by closeness: names of
  the same kind (parameter, local, global) first, then by the edit distance of the names (case ignored).
- ``attribute_replace``: ``self.a`` becomes another attribute of the class, ``self.m()`` another
  method of it, and a called method its sibling (``append``/``extend``/``insert``,
  ``keys``/``values``/``items``, ...; ``METHOD_GROUPS``).
- ``argument_edit``: one argument of a call removed, replaced by a name in scope or a constant of
  the function (arguments that are a bare name or a literal are left to ``name_replace`` and
  ``constant_replace``), or one positional argument added at the end. When the callee is known
  (a module function, a method of the class on ``self``, a common builtin), a removal or an
  addition must leave a number of positional arguments it accepts.
- ``constant_replace``: a literal becomes another literal of the same type from the function,
  then from the module.
- ``return_replace``: ``return e`` returns one of the function's other return expressions, a
  name in scope or ``None``.
- ``slice_edit``: a slice bound moved by one, dropped or added (``1`` as a start, ``-1`` as a
  stop), and ``[::-1]`` added to an iterated, returned, assigned or compared value, or removed.
- ``condition_edit`` (in ``fix_conditions``): the test of an ``if``/``elif``/``while``/ternary or
  comprehension ``if`` with a clause of its ``and``/``or`` dropped, negated, widened
  (``c or e``) or narrowed (``c and e``, ``c and not e``) by a condition ``e`` in scope.
- ``guard_insert`` (in ``fix_conditions``): ``if <cond>: return <e>`` / ``continue`` /
  ``raise T(...)`` inserted before the body's first statement, a statement that reads a
  parameter, or a loop body's first; ``<cond>`` tests a name for None or emptiness, or negates an
  invariant of the passing calls that a failing call breaks (when the context carries calls).
- ``initialize_local`` (in ``fix_initialization``): ``name = 0`` / ``[]`` / ``''`` / ... inserted
  for a local updated (``+=``, ``.append``, an item assigned) before it is ever bound.
- ``method_result_assign``, ``undefined_rename``, ``assignment_swap``, ``constant_to_name``,
  ``list_wrap``, ``bare_call``, ``lost_swap``, ``print_return`` (in ``fix_idioms``): Python's own
  slips, such as ``xs = xs.append(x)``, a misspelt name read everywhere, ``a = b`` for ``b = a``, a
  literal for a parameter, ``xs + x`` for ``xs + [x]``, ``xs.pop`` for ``xs.pop()``, a swap written
  as two assignments, ``print(result)`` for ``return result``.
- ``statement_copy``, ``statement_swap``, ``statement_move`` (``fix_statements``): a simple
  statement of the function or of the module's other functions inserted where the names it reads
  are in scope (plastic surgery), two adjacent statements swapped, a statement moved by one
  position across a block boundary (a ``return`` dedented out of a loop, an increment indented
  into a ``while`` body).
- ``template`` (``fix_templates``): the fix patterns of template-based repair: a None check or a
  length check around a statement, a cast (``int()``, ``float()``, ``str()``, ``list()``), a copy
  on return, ``==`` <-> ``in``/``is``, a ``try``/``except`` that returns a default, and the
  operands of a non-commutative operator or of a two-argument call swapped.

Order and caps. Candidates come by operator (the order of ``REPAIR_OPERATORS``), then by site in
source order, then by rank within the site. At most ``MAX_PER_SITE[operator]`` verified
candidates are kept per site (a name read, an attribute, an argument, a call, a literal, a
return, a subscript, a condition, the statement a guard goes before, a statement, an insertion
position); candidates whose AST equals an earlier one's are dropped. The result is deterministic.
Each candidate is a ``Mutant`` with ``pattern`` (the operator) and ``site_line`` (the file line of
the edited statement) set.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence

from equisa_core.mutation.edits import (
    SELF_NAMES,
    Candidate,
    Edit,
    FunctionModel,
    Proposal,
    Site,
    int_node,
    int_value,
    load_function,
    make,
    name_distance,
    shift,
    with_field,
)
from equisa_core.mutation.fix_context import FixContext, literal_text
from equisa_core.mutation.mutants import Mutant
from equisa_core.repair.operators.conditions import condition_edit, guard_insert
from equisa_core.repair.operators.idioms import (
    assignment_swap,
    bare_call,
    constant_to_name,
    list_wrap,
    lost_swap,
    method_result_assign,
    print_return,
    undefined_rename,
)
from equisa_core.repair.operators.initialization import initialize_local
from equisa_core.repair.operators.statements import statement_copy, statement_move, statement_swap
from equisa_core.repair.operators.templates import template

__all__ = ["MAX_PER_SITE", "METHOD_GROUPS", "REPAIR_OPERATORS", "fix_candidates"]

#: The repair's operators, in the order their candidates come.
REPAIR_OPERATORS: tuple[str, ...] = (
    "name_replace",
    "attribute_replace",
    "argument_edit",
    "constant_replace",
    "return_replace",
    "slice_edit",
    "condition_edit",
    "guard_insert",
    "initialize_local",
    "method_result_assign",
    "undefined_rename",
    "assignment_swap",
    "constant_to_name",
    "list_wrap",
    "bare_call",
    "lost_swap",
    "print_return",
    "statement_copy",
    "statement_swap",
    "statement_move",
    "template",
)
#: At most this many verified candidates per site, per operator.
MAX_PER_SITE: dict[str, int] = {
    "name_replace": 12,
    "attribute_replace": 8,
    "argument_edit": 10,
    "constant_replace": 8,
    "return_replace": 10,
    "slice_edit": 8,
    "condition_edit": 12,
    "guard_insert": 12,
    "initialize_local": 6,
    "method_result_assign": 1,
    "undefined_rename": 4,
    "assignment_swap": 1,
    "constant_to_name": 6,
    "list_wrap": 1,
    "bare_call": 1,
    "lost_swap": 1,
    "print_return": 1,
    "statement_copy": 3,
    "statement_swap": 1,
    "statement_move": 4,
    "template": 3,
}
#: Methods that are easily mistaken for one another.
METHOD_GROUPS: tuple[tuple[str, ...], ...] = (
    ("append", "extend", "insert"),
    ("keys", "values", "items"),
    ("add", "update"),
    ("remove", "discard", "pop"),
    ("find", "index"),
    ("lower", "upper"),
    ("startswith", "endswith"),
    ("lstrip", "rstrip", "strip"),
    ("split", "rsplit"),
)
_SIBLING_METHODS = {m: tuple(o for o in group if o != m) for group in METHOD_GROUPS for m in group}
_KIND_ORDER = {"local": 0, "parameter": 1, "global": 2}
# Where a sequence may be wanted reversed: iterated, returned, assigned or compared.
_REVERSIBLE_AT = (
    (ast.For, "iter"),
    (ast.AsyncFor, "iter"),
    (ast.comprehension, "iter"),
    (ast.Return, "value"),
    (ast.Assign, "value"),
    (ast.Compare, "left"),
    (ast.Compare, "comparators"),
)
_REVERSIBLE = (ast.Name, ast.Attribute, ast.Subscript, ast.Call)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
#: (fewest, most) positional arguments of common builtins; None: any number.
_BUILTIN_ARITIES: dict[str, tuple[int, int | None]] = {
    "abs": (1, 1),
    "all": (1, 1),
    "any": (1, 1),
    "bool": (0, 1),
    "callable": (1, 1),
    "chr": (1, 1),
    "dict": (0, 1),
    "divmod": (2, 2),
    "enumerate": (1, 2),
    "filter": (2, 2),
    "float": (0, 1),
    "format": (1, 2),
    "frozenset": (0, 1),
    "getattr": (2, 3),
    "hasattr": (2, 2),
    "hash": (1, 1),
    "id": (1, 1),
    "int": (0, 2),
    "isinstance": (2, 2),
    "issubclass": (2, 2),
    "iter": (1, 2),
    "len": (1, 1),
    "list": (0, 1),
    "map": (2, None),
    "max": (1, None),
    "min": (1, None),
    "next": (1, 2),
    "ord": (1, 1),
    "pow": (2, 3),
    "print": (0, None),
    "range": (1, 3),
    "repr": (1, 1),
    "reversed": (1, 1),
    "round": (1, 2),
    "set": (0, 1),
    "setattr": (3, 3),
    "sorted": (1, 1),
    "str": (0, 3),
    "sum": (1, 2),
    "tuple": (0, 1),
    "type": (1, 3),
    "zip": (0, None),
}


# --- names in scope ------------------------------------------------------------------------------




def _visible(fn: FunctionModel, site: Site) -> frozenset[str]:
    """The names of enclosing comprehensions and lambdas that are bound at ``site``: a
    comprehension's iterable is evaluated before that generator's target (and later ones) exist."""
    hidden: set[str] = set()
    child, parent = site.node, fn.parents.get(id(site.node))
    while parent is not None:
        owner = fn.parents.get(id(parent))
        if (
            isinstance(parent, ast.comprehension)
            and child is parent.iter
            and isinstance(owner, _COMPREHENSIONS)
        ):
            later = owner.generators[owner.generators.index(parent) :]
            hidden.update(n.id for g in later for n in ast.walk(g.target) if isinstance(n, ast.Name))
        child, parent = parent, owner
    return site.shadow - hidden


def _value_names(fn: FunctionModel, context: FixContext, site: Site, offset: int) -> dict[str, str]:
    """The names a value read at ``offset`` may use, with their kind: names bound by enclosing
    comprehensions and lambdas, locals bound before the read, parameters, and module variables
    that the function does not rebind."""
    names = dict.fromkeys(sorted(_visible(fn, site)), "local")
    for name, offsets in fn.bindings.items():
        if offsets[0] < offset:
            names.setdefault(name, "parameter" if name in fn.parameters else "local")
    for name in context.global_names("variable"):
        if name not in fn.bound:
            names.setdefault(name, "global")
    return names


def _name_kind(fn: FunctionModel, context: FixContext, site: Site, name: str) -> str:
    if name in _visible(fn, site):
        return "local"
    if name in fn.bindings:
        return "parameter" if name in fn.parameters else "local"
    if name not in fn.bound and context.module_names.get(name) == "variable":
        return "global"
    return "other"


def _closest(names: dict[str, str], name: str, kind: str) -> list[str]:
    """The other names, the same kind first, then by edit distance, then by name."""
    others = [n for n in names if n != name]
    return sorted(others, key=lambda n: (names[n] != kind, name_distance(n, name), n))


def _recent(names: dict[str, str], fn: FunctionModel, offset: int) -> list[str]:
    """Names for a slot that holds no name: locals by nearest binding, then parameters, then globals."""

    def last_binding(name: str) -> int:
        before = [o for o in fn.bindings.get(name, ()) if o < offset]
        return before[-1] if before else -1

    return sorted(names, key=lambda n: (_KIND_ORDER.get(names[n], 0), -last_binding(n), n))


def _receiver(fn: FunctionModel, context: FixContext) -> str | None:
    """The name of a method's instance parameter (``self``), or None outside a class."""
    if context.class_name is None:
        return None
    if any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.node.decorator_list):
        return None
    positional = [*fn.node.args.posonlyargs, *fn.node.args.args]
    return positional[0].arg if positional else None


def _literal_node(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


# --- operators -----------------------------------------------------------------------------------


def _name_replace(fn: FunctionModel, context: FixContext) -> Iterator[Proposal]:
    callables = {
        n: k for n, k in context.module_names.items() if k in ("function", "class") and n not in fn.bound
    }
    for site in fn.sites:
        node = site.node
        if not isinstance(node, ast.Name) or not isinstance(node.ctx, ast.Load) or node.id in SELF_NAMES:
            continue
        start, end = fn.span(node)
        if isinstance(site.parent, ast.Call) and site.field == "func":
            if node.id not in callables:
                continue
            names, kind = callables, callables[node.id]
        else:
            names, kind = _value_names(fn, context, site, start), _name_kind(fn, context, site, node.id)
        display = fn.span(site.parent) if isinstance(site.parent, ast.expr) else None
        for name in _closest(names, node.id, kind):
            yield Proposal(
                fn.replace(site, ast.Name(name, ast.Load()), [[(start, end, name)]], display), node
            )


def _attribute_options(node: ast.Attribute, called: bool, on_self: bool, context: FixContext) -> list[str]:
    options = list(_SIBLING_METHODS.get(node.attr, ())) if called else []
    members = context.class_methods if called else context.class_attributes
    if on_self:
        ranked = sorted(members, key=lambda m: (name_distance(m, node.attr), m))
        options += [m for m in ranked if m not in options and not (m.startswith("__") and m.endswith("__"))]
    return [m for m in options if m != node.attr]


def _attribute_replace(fn: FunctionModel, context: FixContext) -> Iterator[Proposal]:
    receiver = _receiver(fn, context)
    for site in fn.sites:
        node = site.node
        if not isinstance(node, ast.Attribute):
            continue
        called = isinstance(site.parent, ast.Call) and site.field == "func"
        on_self = (
            receiver is not None
            and isinstance(node.value, ast.Name)
            and node.value.id == receiver
            and receiver not in site.shadow
        )
        end = fn.span(node)[1]
        at = end - len(node.attr)
        in_place = fn.text[at:end] == node.attr  # else the unparsed attribute is the edit
        for name in _attribute_options(node, called, on_self, context):
            edits: list[list[Edit]] = [[(at, end, name)]] if in_place else []
            yield Proposal(fn.replace(site, with_field(node, "attr", name), edits), node)


def _call_arity(fn: FunctionModel, context: FixContext, node: ast.Call) -> tuple[int, int | None]:
    """(fewest, most) positional arguments the callee takes, when it is known: a module function,
    a method of the class called on ``self``, a builtin that neither rebinds; else (0, None)."""
    func = node.func
    if isinstance(func, ast.Name) and func.id not in fn.bound:
        if func.id in context.function_arities:
            return context.function_arities[func.id]
        if func.id not in context.module_names:
            return _BUILTIN_ARITIES.get(func.id, (0, None))
    receiver = _receiver(fn, context)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == receiver:
        return context.method_arities.get(func.attr, (0, None))
    return 0, None


def _argument_removals(fn: FunctionModel, site: Site, node: ast.Call, fewest: int) -> Iterator[Proposal]:
    elements: list[ast.AST] = sorted([*node.args, *node.keywords], key=lambda e: fn.span(e))
    for k, element in enumerate(elements):
        if isinstance(element, ast.expr) and len(node.args) <= fewest:
            continue  # the callee needs every positional argument it gets
        start, end = fn.span(element)
        if k + 1 < len(elements):
            edit: Edit = (start, fn.span(elements[k + 1])[0], "")
        elif k > 0:
            edit = (fn.span(elements[k - 1])[1], end, "")
        else:
            edit = (start, end, "")
        if isinstance(element, ast.keyword):
            new = with_field(node, "keywords", [kw for kw in node.keywords if kw is not element])
        else:
            new = with_field(node, "args", [a for a in node.args if a is not element])
        yield Proposal(fn.replace(site, new, [[edit]]), element)


def _slot_values(fn: FunctionModel, context: FixContext, site: Site, offset: int) -> list[str]:
    """Texts an argument slot may take: names in scope (nearest binding first), then the function's
    constants."""
    names = _recent(_value_names(fn, context, site, offset), fn, offset)
    constants = [c for texts in context.function_constants.values() for c in texts]
    return [*names, *constants]


def _argument_replacements(
    fn: FunctionModel, site: Site, node: ast.Call, values: Sequence[str]
) -> Iterator[Proposal]:
    for i, arg in enumerate(node.args):
        if isinstance(arg, ast.Name | ast.Constant | ast.Starred):
            continue  # left to name_replace and constant_replace
        start, end = fn.span(arg)
        for text in values:
            args = [*node.args[:i], _literal_node(text), *node.args[i + 1 :]]
            yield Proposal(fn.replace(site, with_field(node, "args", args), [[(start, end, text)]]), arg)


def _argument_additions(
    fn: FunctionModel, site: Site, node: ast.Call, values: Sequence[str]
) -> Iterator[Proposal]:
    used = {a.id for a in node.args if isinstance(a, ast.Name)}
    call_end = fn.span(node)[1]
    for text in values:
        if text in used:
            continue
        if node.args:
            edit: Edit = (fn.span(node.args[-1])[1],) * 2 + (f", {text}",)
        elif node.keywords:
            edit = (fn.span(node.keywords[0])[0],) * 2 + (f"{text}, ",)
        else:
            edit = (call_end - 1, call_end - 1, text)
        new = with_field(node, "args", [*node.args, _literal_node(text)])
        yield Proposal(fn.replace(site, new, [[edit]]), node)


def _argument_edit(fn: FunctionModel, context: FixContext) -> Iterator[Proposal]:
    for site in fn.sites:
        node = site.node
        if not isinstance(node, ast.Call):
            continue
        fewest, most = _call_arity(fn, context, node)
        unpacked = any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        )
        yield from _argument_removals(fn, site, node, 0 if unpacked else fewest)
        values = _slot_values(fn, context, site, fn.span(node)[0])
        yield from _argument_replacements(fn, site, node, values)
        if unpacked or most is None or len(node.args) < most:  # else the callee takes no more
            yield from _argument_additions(fn, site, node, values)


def _constant_replace(fn: FunctionModel, context: FixContext) -> Iterator[Proposal]:
    for site in fn.sites:
        node = site.node
        if isinstance(site.parent, ast.JoinedStr | ast.FormattedValue):
            continue
        if isinstance(site.parent, ast.UnaryOp) and isinstance(site.parent.op, ast.USub):
            continue  # the negative number is the site
        literal = literal_text(node)
        if literal is None:
            continue
        type_name, text = literal
        start, end = fn.span(node)
        for other in context.constants(type_name):
            if other != text:
                yield Proposal(fn.replace(site, _literal_node(other), [[(start, end, other)]]), node)


def _return_replace(fn: FunctionModel, context: FixContext) -> Iterator[Proposal]:
    returned = [s.node.value for s in fn.sites if isinstance(s.node, ast.Return) and s.node.value is not None]
    for site in fn.sites:
        node = site.node
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        value = node.value
        start, end = fn.span(value)
        options: list[tuple[str, ast.expr]] = [
            (fn.src(other), other) for other in returned if other is not value
        ]
        names = _value_names(fn, context, site, start)
        if isinstance(value, ast.Name):
            ranked = _closest(names, value.id, _name_kind(fn, context, site, value.id))
        else:
            ranked = _recent(names, fn, start)
        options += [(name, ast.Name(name, ast.Load())) for name in ranked]
        options.append(("None", ast.Constant(None)))
        target = Site(value, node, "value", None, site.shadow)
        for text, new in options:
            yield Proposal(fn.replace(target, new, [[(start, end, text)]], fn.span(node)), node)


def _colon_after(fn: FunctionModel, offset: int, end: int) -> int | None:
    """The offset just after the first ``:`` from ``offset`` (blanks and closing brackets skipped)."""
    i = offset
    while i < end and fn.text[i] in " \t\f\r\n\\)":
        i += 1
    return i + 1 if i < end and fn.text[i] == ":" else None


def _bound_edits(fn: FunctionModel, site: Site, node: ast.Subscript, piece: ast.Slice) -> Iterator[Candidate]:
    slice_site = Site(piece, node, "slice", None, site.shadow)
    start, end = fn.span(piece)
    display = fn.span(node)
    for name in ("lower", "upper"):
        bound = getattr(piece, name)
        if bound is None:
            continue
        literal = int_value(bound)
        bound_site = Site(bound, piece, name, None, site.shadow)
        for delta in (1, -1):
            if literal is not None:
                text = str(literal + delta)
                yield fn.replace(bound_site, int_node(literal + delta), [[(*fn.span(bound), text)]], display)
            else:
                yield shift(fn, bound_site, delta, display)
        yield fn.replace(slice_site, with_field(piece, name, None), [[(*fn.span(bound), "")]], display)
    if piece.lower is None:
        yield fn.replace(
            slice_site, with_field(piece, "lower", ast.Constant(1)), [[(start, start, "1")]], display
        )
    if piece.upper is None:
        after = _colon_after(fn, fn.span(piece.lower)[1] if piece.lower is not None else start, end)
        new = with_field(piece, "upper", int_node(-1))
        yield fn.replace(slice_site, new, [] if after is None else [[(after, after, "-1")]], display)


def _is_reversal(node: ast.AST) -> bool:
    piece = node.slice if isinstance(node, ast.Subscript) else None
    return (
        isinstance(piece, ast.Slice)
        and piece.lower is None
        and piece.upper is None
        and piece.step is not None
        and ast.dump(piece.step) == ast.dump(int_node(-1))
    )


def _slice_edit(fn: FunctionModel, context: FixContext) -> Iterator[Proposal]:
    for site in fn.sites:
        node = site.node
        if isinstance(node, ast.Subscript) and _is_reversal(node):
            inner = fn.src(node.value)
            yield Proposal(fn.replace(site, node.value, [[(*fn.span(node), inner)]]), node)
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            for candidate in _bound_edits(fn, site, node, node.slice):
                yield Proposal(candidate, node)
        if (
            isinstance(node, _REVERSIBLE)
            and not _is_reversal(node)
            and any(
                isinstance(site.parent, parent) and site.field == field for parent, field in _REVERSIBLE_AT
            )
        ):
            start, end = fn.span(node)
            reversed_node = ast.Subscript(node, ast.Slice(None, None, int_node(-1)), ast.Load())
            edits: list[list[Edit]] = [[(end, end, "[::-1]")], [(start, start, "("), (end, end, ")[::-1]")]]
            yield Proposal(fn.replace(site, reversed_node, edits), node)


_GENERATORS: dict[str, Callable[[FunctionModel, FixContext], Iterator[Proposal]]] = {
    "name_replace": _name_replace,
    "attribute_replace": _attribute_replace,
    "argument_edit": _argument_edit,
    "constant_replace": _constant_replace,
    "return_replace": _return_replace,
    "slice_edit": _slice_edit,
    "condition_edit": condition_edit,
    "guard_insert": guard_insert,
    "initialize_local": initialize_local,
    "method_result_assign": method_result_assign,
    "undefined_rename": undefined_rename,
    "assignment_swap": assignment_swap,
    "constant_to_name": constant_to_name,
    "list_wrap": list_wrap,
    "bare_call": bare_call,
    "lost_swap": lost_swap,
    "print_return": print_return,
    "statement_copy": statement_copy,
    "statement_swap": statement_swap,
    "statement_move": statement_move,
    "template": template,
}


# --- the candidates ------------------------------------------------------------------------------


def _statement_line(fn: FunctionModel, node: ast.AST) -> int:
    """The line (in the function's text) of the statement that holds ``node``."""
    current: ast.AST | None = node
    while current is not None and not isinstance(current, ast.stmt):
        current = fn.parents.get(id(current))
    return current.lineno if current is not None else fn.node.lineno


def _chosen(operators: Collection[str] | str) -> set[str]:
    chosen = {operators} if isinstance(operators, str) else set(operators)
    unknown = chosen - set(REPAIR_OPERATORS)
    if unknown:
        raise ValueError(
            f"unknown repair operator(s) {sorted(unknown)}; known: {', '.join(REPAIR_OPERATORS)}"
        )
    return chosen


def fix_candidates(
    source: str,
    fqn: str,
    *,
    start_line: int,
    context: FixContext,
    operators: Sequence[str] | str = REPAIR_OPERATORS,
    limit: int | None = None,
) -> list[Mutant]:
    """The candidate fixes of one function, in a deterministic order (see the module docstring).

    ``source`` is one function or method definition at column 0 (``source_edit.function_source``)
    and ``start_line`` the file line of its first line; ``context`` is its ``fix_context``.
    ``operators`` restricts the operators (names from ``REPAIR_OPERATORS``); ``limit`` keeps the
    first candidates. Raises InvalidReplacementError when ``source`` is not exactly one function
    definition, ValueError for an unknown operator, a negative ``limit`` or a ``start_line`` below 1.
    """
    if start_line < 1:
        raise ValueError(f"start_line must be >= 1, got {start_line}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    chosen = _chosen(operators)
    fn = load_function(source, fqn)
    seen = {fn.shape}
    candidates: list[Mutant] = []
    for operator in (op for op in REPAIR_OPERATORS if op in chosen):
        kept: Counter[int] = Counter()
        for proposal in _GENERATORS[operator](fn, context):
            if limit is not None and len(candidates) >= limit:
                return candidates
            if kept[id(proposal.site)] >= MAX_PER_SITE[operator]:
                continue
            made = make(fn, operator, proposal.candidate, start_line)
            if made is None or made.shape in seen:
                continue
            seen.add(made.shape)
            kept[id(proposal.site)] += 1
            candidates.append(
                Mutant(
                    fqn=fqn,
                    operator=operator,
                    description=made.description,
                    line=made.line,
                    source=made.source,
                    edit_size=made.edit_size,
                    pattern=operator,
                    site_line=start_line + _statement_line(fn, proposal.site) - 1,
                )
            )
    return candidates

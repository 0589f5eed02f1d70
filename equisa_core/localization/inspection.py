"""The deterministic inspection patch: the heartbeat plus assertions of mined invariants.

Seed 000 Appendix B asks an inspection patch for the target's own source with the heartbeat
``print`` as the first line of the body, only ``assert`` statements added, all the original logic
kept and the same signature. ``build_inspection_patch`` does that from invariants
(``equisa_core.localization.invariants``) instead of a model:

* the docstring, when there is one, stays the first statement so ``__doc__`` survives; the
  heartbeat comes right after it, as the first statement that runs. It is printed with
  ``flush=True`` so a run that is killed afterwards (a timeout in an endless loop) still shows
  the target was reached;
* then the argument assertions, type and None-ness first (the others are evaluated only once
  those held, see ``invariants``);
* then, when result assertions read arguments, entry snapshots of those arguments: the
  invariants relate the result to the arguments *as they were passed*, and the body may rebind
  an argument (``n -= 1``) or change it in place (``xs.pop()``). An argument the body rebinds is
  kept by reference; one it may change in place (any use other than reading it: see
  ``_may_mutate``) is kept as a shallow ``.copy()`` when it is exactly a list, dict, set or
  bytearray. An argument the body neither rebinds nor may change is read directly;
* every ``return X`` of the target itself becomes ``__equisa_result__ = X``, the result
  assertions, ``return __equisa_result__``. Bare ``return`` and falling off the end are not
  checked. Generators and async generators get no result assertions (their ``return`` value is
  not what the caller receives); nested functions, lambdas and classes are left untouched.

Built with ``ast`` and ``ast.unparse`` rather than libcst: the patch is temporary and runs only in
a sandbox copy of the repository, so its formatting and comments need not survive, and ``ast``
makes the scope analysis (own returns, yields, bound names) a plain walk. The output parses, keeps
the decorators and the exact signature, and ``source_edit.replace_function`` accepts it.

Builtins the assertions use (``isinstance``, ``len``, ``print``, ...) are written
``__import__('builtins').name`` when the function binds that name itself (a parameter called
``type``). A module that rebinds a builtin at top level cannot be seen from the function's source.
The assertions disappear under ``python -O``, as any ``assert`` does, and a ``return`` inside a
``try`` whose handler catches ``AssertionError`` (or ``Exception``) swallows its own checks.
"""

from __future__ import annotations

import ast
import builtins
import copy
from collections.abc import Iterator, Sequence

from equisa_core.common.bindings import names_bound_in
from equisa_core.errors import SourceEditError
from equisa_core.localization.invariants import RESULT_NAME, Invariant, InvariantKind
from equisa_core.localization.signals import heartbeat

__all__ = ["ASSERTION_PREFIX", "build_inspection_patch", "assertion_message"]

#: Every assertion message starts with this, so a report can tell EQUISA's assertions apart.
ASSERTION_PREFIX = "EQUISA inspection"
_ENTRY_PREFIX = "__equisa_entry_"
_GUARD_KINDS = frozenset({InvariantKind.TYPE, InvariantKind.NONE})
_BUILTIN_NAMES = frozenset(dir(builtins))
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef

# Exact types whose shallow copy is cheap, cannot run user code and keeps every property the
# invariants read (type, length, membership).
_COPIED_TYPES = ("list", "dict", "set", "bytearray")
# Calls that only read their arguments.
_READING_CALLS = frozenset({
    "abs", "all", "any", "bool", "bytes", "chr", "dict", "divmod", "enumerate", "filter", "float",
    "format", "frozenset", "hash", "id", "int", "isinstance", "iter", "len", "list", "map", "max",
    "min", "ord", "print", "range", "repr", "reversed", "round", "set", "sorted", "str", "sum",
    "tuple", "type", "zip",
})
# Methods of builtin containers and strings that do not change the receiver.
_READING_METHODS = frozenset({
    "copy", "count", "endswith", "find", "format", "get", "index", "isdigit", "items", "join",
    "keys", "lower", "rfind", "rindex", "rsplit", "rstrip", "split", "startswith", "strip", "upper",
    "values", "difference", "intersection", "issubset", "issuperset", "union", "isdisjoint",
})


def assertion_message(fqn: str, invariant: Invariant) -> str:
    """The message of the assertion checking ``invariant`` in ``fqn``."""
    return (
        f"{ASSERTION_PREFIX}: {invariant.kind.value} invariant violated in {fqn}: "
        f"{invariant.description} [{invariant.expression}]"
    )


def _own_nodes(function: _FunctionNode) -> Iterator[ast.AST]:
    """Nodes of the function's own scope: the body, not nested functions, lambdas or classes."""
    stack: list[ast.AST] = list(reversed(function.body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _SCOPES):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _is_generator(function: _FunctionNode) -> bool:
    return any(isinstance(node, ast.Yield | ast.YieldFrom) for node in _own_nodes(function))


def _parameters(function: _FunctionNode) -> list[str]:
    args = function.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    every += [a for a in (args.vararg, args.kwarg) if a is not None]
    return [a.arg for a in every]


def _rebound(function: _FunctionNode, name: str) -> bool:
    """Whether the function may assign or delete ``name`` (nested scopes included, to be safe)."""
    return any(
        isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load)
        for node in ast.walk(function)
    )


def _parents(function: _FunctionNode) -> dict[int, ast.AST]:
    return {id(child): node for node in ast.walk(function) for child in ast.iter_child_nodes(node)}


def _reads_only(node: ast.Name, parent: ast.AST, grandparent: ast.AST | None, shadowed: set[str]) -> bool:
    """Whether this use of a name only reads the object it names (it cannot change it)."""
    if isinstance(parent, ast.Call):
        func = parent.func
        return (
            node in parent.args
            and isinstance(func, ast.Name)
            and func.id in _READING_CALLS
            and func.id not in shadowed
        )
    if isinstance(parent, ast.Attribute):
        return parent.attr in _READING_METHODS and isinstance(grandparent, ast.Call)
    if isinstance(parent, ast.Subscript):
        return parent.value is node and isinstance(parent.ctx, ast.Load)
    if isinstance(parent, ast.For | ast.AsyncFor | ast.comprehension):
        return parent.iter is node
    if isinstance(parent, ast.If | ast.While | ast.IfExp | ast.Assert):
        return parent.test is node
    return isinstance(parent, ast.Compare | ast.BinOp | ast.UnaryOp | ast.Return | ast.FormattedValue)


def _may_mutate(function: _FunctionNode, name: str) -> bool:
    """Whether the function may change the object ``name`` was bound to at entry.

    Conservative: every use of the name must be a read (an argument of a reading builtin, a
    reading method call, a subscript load, a loop's iterable, a test, an operand, the returned
    value); anything else (a call of user code, an alias, ``xs += ...``, ``xs[i] = ...``) counts
    as a possible change.
    """
    parents = _parents(function)
    shadowed = {function.name, *names_bound_in(function)}
    for node in ast.walk(function):
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            return True
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
            continue
        parent = parents.get(id(node))
        if parent is None:
            return True
        if not _reads_only(node, parent, parents.get(id(parent)), shadowed):
            return True
    return False


def _builtin(name: str, shadowed: set[str]) -> ast.expr:
    """A reference to the builtin ``name``: plain, or through the builtins module when shadowed."""
    if name not in shadowed:
        return ast.Name(name, ast.Load())
    module = ast.Call(ast.Name("__import__", ast.Load()), [ast.Constant("builtins")], [])
    return ast.Attribute(module, name, ast.Load())


class _Rename(ast.NodeTransformer):
    """Resolves the names of an invariant's expression inside the patched function.

    A called name, and every name in the second argument of ``isinstance``, is a builtin (the
    vocabulary of invariants); any other name is a parameter when the function has one of that
    name (renamed to its entry snapshot if it has one), else a builtin. Builtins the function
    shadows are reached through the builtins module.
    """

    def __init__(self, renames: dict[str, str], shadowed: set[str], parameters: Sequence[str]) -> None:
        self.renames = renames
        self.shadowed = shadowed
        self.parameters = frozenset(parameters)

    def _builtins_in(self, node: ast.expr) -> ast.expr:
        if isinstance(node, ast.Name):
            return ast.copy_location(_builtin(node.id, self.shadowed), node)
        if isinstance(node, ast.Tuple):
            node.elts = [self._builtins_in(e) for e in node.elts]
            return node
        visited: ast.expr = self.visit(node)  # NodeTransformer.visit is typed Any; an expr visits to an expr
        return visited

    def visit_Call(self, node: ast.Call) -> ast.expr:
        callee = node.func
        node.func = self._builtins_in(callee) if isinstance(callee, ast.Name) else self.visit(callee)
        if isinstance(callee, ast.Name) and callee.id == "isinstance" and len(node.args) == 2:
            node.args = [self.visit(node.args[0]), self._builtins_in(node.args[1])]
        else:
            node.args = [self.visit(a) for a in node.args]
        node.keywords = [self.visit(k) for k in node.keywords]
        return node

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id in self.renames:
            return ast.copy_location(ast.Name(self.renames[node.id], ast.Load()), node)
        if node.id in self.parameters or node.id not in _BUILTIN_NAMES:
            return node
        return ast.copy_location(_builtin(node.id, self.shadowed), node)


def _snapshot(name: str, target: str, mutated: bool, shadowed: set[str]) -> ast.stmt:
    """``target = name``, or a shallow copy of ``name`` when it is exactly a copyable builtin."""
    value: ast.expr = ast.Name(name, ast.Load())
    if mutated:
        value = ast.IfExp(
            test=ast.Compare(
                ast.Call(_builtin("type", shadowed), [ast.Name(name, ast.Load())], []),
                [ast.In()],
                [ast.Tuple([_builtin(t, shadowed) for t in _COPIED_TYPES], ast.Load())],
            ),
            body=ast.Call(ast.Attribute(ast.Name(name, ast.Load()), "copy", ast.Load()), [], []),
            orelse=ast.Name(name, ast.Load()),
        )
    return ast.Assign([ast.Name(target, ast.Store())], value)


def _parse_expression(invariant: Invariant) -> ast.expr:
    try:
        return ast.parse(invariant.expression, mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"invariant expression {invariant.expression!r} does not parse: {exc.msg}") from exc


def _free_names(expression: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(expression) if isinstance(n, ast.Name)}


class _Returns(ast.NodeTransformer):
    """Rewrites the target's own ``return X`` statements to check the result first."""

    def __init__(self, checks: Sequence[ast.stmt]) -> None:
        self.checks = checks

    def _nested_scope(self, node: ast.AST) -> ast.AST:
        return node  # a nested scope: its returns are not the target's

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = _nested_scope

    def visit_Return(self, node: ast.Return) -> ast.AST | list[ast.stmt]:
        if node.value is None:
            return node
        store = ast.Assign([ast.Name(RESULT_NAME, ast.Store())], node.value)
        load = ast.Return(ast.Name(RESULT_NAME, ast.Load()))
        statements = [store, *copy.deepcopy(list(self.checks)), load]
        return [ast.copy_location(statement, node) for statement in statements]


def _parse_function(function_source: str) -> tuple[ast.Module, _FunctionNode]:
    try:
        module = ast.parse(function_source)
    except SyntaxError as exc:
        raise SourceEditError(f"the function source does not parse: {exc.msg} (line {exc.lineno})") from exc
    if len(module.body) != 1 or not isinstance(module.body[0], ast.FunctionDef | ast.AsyncFunctionDef):
        raise SourceEditError("the function source must hold exactly one function definition")
    return module, module.body[0]


def _guards_first(invariants: Sequence[Invariant]) -> list[Invariant]:
    return sorted(invariants, key=lambda inv: 0 if inv.kind in _GUARD_KINDS else 1)


def build_inspection_patch(function_source: str, fqn: str, invariants: Sequence[Invariant]) -> str:
    """The function's source with the heartbeat and assertions of ``invariants`` added.

    ``function_source`` is one function definition at column 0, as ``source_edit.function_source``
    returns it. Invariants whose expression reads ``__equisa_result__`` are checked at every own
    ``return X``; the others at entry. Invariants naming anything but the function's parameters,
    the result and builtins are left out, as are result invariants of generators. When every
    invariant holds, the patched function behaves as the original apart from printing the
    heartbeat. Raises SourceEditError when the source is not one function, ValueError when an
    invariant's expression does not parse.
    """
    module, function = _parse_function(function_source)
    parameters = _parameters(function)
    shadowed = {function.name, *names_bound_in(function)}
    generator = _is_generator(function)

    entry: list[tuple[Invariant, ast.expr]] = []
    at_return: list[tuple[Invariant, ast.expr]] = []
    for invariant in _guards_first(invariants):
        expression = _parse_expression(invariant)
        names = _free_names(expression)
        unknown = names - set(parameters) - {RESULT_NAME} - _BUILTIN_NAMES
        if unknown or RESULT_NAME in parameters:
            continue
        if RESULT_NAME in names:
            if not generator:
                at_return.append((invariant, expression))
        else:
            entry.append((invariant, expression))

    # Arguments the result assertions read, and the snapshots that keep their entry values.
    read = [p for p in parameters if any(p in _free_names(e) for _, e in at_return)]
    renames: dict[str, str] = {}
    snapshots: list[ast.stmt] = []
    for name in read:
        mutated = _may_mutate(function, name)
        if not (mutated or _rebound(function, name)):
            continue
        renames[name] = f"{_ENTRY_PREFIX}{name}__"
        snapshots.append(_snapshot(name, renames[name], mutated, shadowed))

    def checks(items: Sequence[tuple[Invariant, ast.expr]], names: dict[str, str]) -> list[ast.stmt]:
        return [
            ast.Assert(_Rename(names, shadowed, parameters).visit(copy.deepcopy(expression)),
                       ast.Constant(assertion_message(fqn, invariant)))
            for invariant, expression in items
        ]

    body = list(function.body)
    docstring = ast.get_docstring(function, clean=False) is not None
    head, rest = (body[:1], body[1:]) if docstring else ([], body)
    if at_return:
        returns = _Returns(checks(at_return, renames))
        rest = [returns.visit(statement) for statement in rest]
        rest = [s for item in rest for s in (item if isinstance(item, list) else [item])]
    flush = ast.keyword("flush", ast.Constant(True))
    beat = ast.Expr(ast.Call(_builtin("print", shadowed), [ast.Constant(heartbeat(fqn))], [flush]))
    function.body = [*head, beat, *checks(entry, {}), *snapshots, *rest]
    ast.fix_missing_locations(module)
    return ast.unparse(module) + "\n"

"""What a fix may draw on beyond the function itself: the names and constants of its module and class.

``fix_context(module_text, qualname)`` reads the module that holds a function and gathers what
the repair's wider fix space (``fix_space``) replaces names, attributes, arguments and constants
with:

- the module's global names and what each is: a ``variable`` (assigned at module level, also
  inside module-level ``if``/``try``/``for``/``with`` blocks), an ``import``, a ``function`` or a
  ``class``;
- the module's constants by type (``int``, ``float``, ``str``, ``bytes``), as literal text ready
  to insert (``-1``, ``'abc'``), most frequent first;
- the enclosing class (the nearest one around the function, if any): its attributes (``self.x``
  assigned in any of its methods, names assigned in its body, properties) and its method names;
- the function's own constants, by type as above;
- how many positional arguments the module's functions and the class's methods take;
- the module's conditions (tests of ``if``/``while``/ternaries/comprehensions, comparisons and
  boolean calls such as ``isinstance``) as text, and the exception types it raises;
- optionally, recorded calls of the function from passing and from failing tests (the guards of
  ``fix_conditions`` negate the invariants that the failing calls break).
- the simple statements of the module's other functions (``copyable_statements``), nearest
  function first, that ``fix_statements.statement_copy`` may copy into the function;
- the exception classes the module names (``exceptions``): those it defines, raises or catches.

Docstrings, f-string parts and strings longer than ``MAX_STRING_LENGTH`` are not constants here.
Everything comes out in a deterministic order. The module is only parsed, never run.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.models import RecordedCall
from equisa_core.common.source_edit import find_function

__all__ = [
    "BOOLEAN_CALLS",
    "MAX_CONDITIONS",
    "MAX_COPYABLE_STATEMENTS",
    "MAX_STRING_LENGTH",
    "CopyableStatement",
    "FixContext",
    "arity",
    "fix_context",
    "is_condition",
    "is_copyable",
    "literal_constants",
    "literal_text",
    "raised_types",
]

#: Longer string literals are not offered as replacement constants.
MAX_STRING_LENGTH = 40
#: At most this many module conditions are kept, each at most this long.
MAX_CONDITIONS = 200
_MAX_CONDITION_LENGTH = 80
#: Calls that return a bool: ``isinstance(x, T)`` is a condition.
BOOLEAN_CALLS = frozenset({"isinstance", "issubclass", "callable", "hasattr", "all", "any", "bool"})
#: At most this many statements of the module's other functions are offered for copying.
MAX_COPYABLE_STATEMENTS = 120
#: The statements a fix may copy: assignments, expression calls, returns, break and continue.
_COPYABLE_TYPES = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return, ast.Break, ast.Continue)
# Statements holding these are not copied: they change what kind of function holds them.
_UNCOPYABLE_PARTS = (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr)
_CONSTANT_TYPES = (int, float, str, bytes)
_DefinitionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


class CopyableStatement(BaseModel):
    """A simple statement of another function of the module, as text, and that function's parameters."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str = Field(description="The statement on one line, without indentation.")
    parameters: tuple[str, ...] = Field((), description="The parameter names of the function it is in.")


class FixContext(BaseModel):
    """The names and constants a fix of one function may use, beyond the function's own."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    qualname: str = Field("", description="The function the context is for.")
    module_names: dict[str, str] = Field(
        default_factory=dict,
        description="Module-level name -> 'variable', 'import', 'function' or 'class', in source order.",
    )
    module_constants: dict[str, tuple[str, ...]] = Field(
        default_factory=dict, description="Type name -> literal texts in the module, most frequent first."
    )
    class_name: str | None = Field(None, description="The enclosing class, if any.")
    class_attributes: tuple[str, ...] = Field(
        (), description="The class's attributes: `self.x` assigned in its methods, body names, properties."
    )
    class_methods: tuple[str, ...] = Field((), description="The class's method names, in source order.")
    function_constants: dict[str, tuple[str, ...]] = Field(
        default_factory=dict, description="Type name -> literal texts in the function, most frequent first."
    )
    function_arities: dict[str, tuple[int, int | None]] = Field(
        default_factory=dict,
        description="Module function -> (fewest, most) positional arguments; most is None with *args.",
    )
    method_arities: dict[str, tuple[int, int | None]] = Field(
        default_factory=dict,
        description="The class's methods -> positional arguments (the receiver not counted).",
    )
    module_conditions: tuple[str, ...] = Field(
        (),
        description="The module's conditions (tests, comparisons, boolean calls), unparsed, in order.",
    )
    raised_exceptions: tuple[str, ...] = Field(
        (), description="Exception types the module raises (`raise T(...)`, `raise T`), in source order."
    )
    passing_calls: tuple[RecordedCall, ...] = Field(
        (), description="Recorded calls of the function in passing tests, when known."
    )
    failing_calls: tuple[RecordedCall, ...] = Field(
        (), description="Recorded calls of the function in failing tests, when known."
    )
    copyable_statements: tuple[CopyableStatement, ...] = Field(
        (), description="Simple statements of the module's other functions, nearest function first."
    )
    exceptions: tuple[str, ...] = Field(
        (), description="Exception classes the module defines, raises or catches, in source order."
    )

    def global_names(self, *kinds: str) -> tuple[str, ...]:
        """The module's global names of the given kinds (all kinds when none is given)."""
        return tuple(name for name, kind in self.module_names.items() if not kinds or kind in kinds)

    def constants(self, type_name: str) -> tuple[str, ...]:
        """Literal texts of one type: the function's first, then the rest of the module's."""
        own = self.function_constants.get(type_name, ())
        return (*own, *(c for c in self.module_constants.get(type_name, ()) if c not in own))


def literal_text(node: ast.AST) -> tuple[str, str] | None:
    """(type name, literal text) of a constant or a negated number; None for anything else."""
    negative = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
    inner = node.operand if isinstance(node, ast.UnaryOp) and negative else node
    if not isinstance(inner, ast.Constant) or type(inner.value) not in _CONSTANT_TYPES:
        return None
    value = inner.value
    if negative and not isinstance(value, int | float):
        return None
    if isinstance(value, str | bytes) and len(value) > MAX_STRING_LENGTH:
        return None
    text = repr(value)
    if isinstance(value, float) and text in ("inf", "nan"):
        return None
    return type(value).__name__, ("-" + text if negative else text)


def _docstring_nodes(tree: ast.AST) -> set[int]:
    """id() of the docstring constants of a module and of every definition in it."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | _DefinitionNode) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                if isinstance(first.value.value, str):
                    found.add(id(first.value))
    return found


def literal_constants(tree: ast.AST) -> dict[str, tuple[str, ...]]:
    """The constants under ``tree`` by type name, most frequent first, then in source order.

    Docstrings and the parts of f-strings are left out; ``-1`` counts as one constant."""
    skipped = _docstring_nodes(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            skipped.update(id(part) for part in ast.walk(node))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            skipped.add(id(node.operand))  # counted as the negative number
    counts: Counter[tuple[str, str]] = Counter()
    first_seen: dict[tuple[str, str], int] = {}
    for order, node in enumerate(_in_source_order(tree)):
        if id(node) in skipped:
            continue
        literal = literal_text(node)
        if literal is not None:
            counts[literal] += 1
            first_seen.setdefault(literal, order)
    by_type: dict[str, list[str]] = {}
    for literal in sorted(counts, key=lambda lit: (-counts[lit], first_seen[lit])):
        by_type.setdefault(literal[0], []).append(literal[1])
    return {name: tuple(texts) for name, texts in sorted(by_type.items())}


def _in_source_order(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``tree`` (itself included), depth first in field order."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _target_names(target: ast.AST) -> Iterator[str]:
    for node in ast.walk(target):
        if isinstance(node, ast.Name):
            yield node.id


def _module_level(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements run at module level: the body, with the blocks of if/try/for/while/with."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If | ast.For | ast.AsyncFor | ast.While | ast.With | ast.AsyncWith):
            yield from _module_level(stmt.body)
            yield from _module_level(getattr(stmt, "orelse", []))
        elif isinstance(stmt, ast.Try | ast.TryStar):
            for block in (stmt.body, stmt.orelse, stmt.finalbody, *(h.body for h in stmt.handlers)):
                yield from _module_level(block)


def _statement_names(stmt: ast.stmt) -> Iterator[tuple[str, str]]:
    """(name, kind) for the module-level names one statement binds."""
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
        yield stmt.name, "function"
    elif isinstance(stmt, ast.ClassDef):
        yield stmt.name, "class"
    elif isinstance(stmt, ast.Import | ast.ImportFrom):
        for alias in stmt.names:
            if alias.name != "*":
                yield (alias.asname or alias.name).split(".")[0], "import"
    elif isinstance(stmt, ast.Assign):
        for target in stmt.targets:
            yield from ((name, "variable") for name in _target_names(target))
    elif isinstance(stmt, ast.AugAssign | ast.AnnAssign | ast.For | ast.AsyncFor):
        yield from ((name, "variable") for name in _target_names(stmt.target))
    elif isinstance(stmt, ast.With | ast.AsyncWith):
        for item in stmt.items:
            if item.optional_vars is not None:
                yield from ((name, "variable") for name in _target_names(item.optional_vars))


def _module_names(tree: ast.Module) -> dict[str, str]:
    names: dict[str, str] = {}
    for stmt in _module_level(tree.body):
        for name, kind in _statement_names(stmt):
            names.setdefault(name, kind)
    return names


def _enclosing_class(tree: ast.Module, function: ast.AST) -> ast.ClassDef | None:
    """The nearest class around ``function``, if any."""
    parents = {id(child): parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    node = parents.get(id(function))
    while node is not None and not isinstance(node, ast.ClassDef):
        node = parents.get(id(node))
    return node


def _is_property(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(
        (isinstance(d, ast.Name) and d.id in ("property", "cached_property"))
        or (isinstance(d, ast.Attribute) and d.attr == "cached_property")
        for d in node.decorator_list
    )


def _class_members(cls: ast.ClassDef) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(attributes, methods) of a class, each in source order without repeats."""
    attributes: dict[str, None] = {}
    methods: dict[str, None] = {}
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            (attributes if _is_property(stmt) else methods).setdefault(stmt.name, None)
            receiver = [*stmt.args.posonlyargs, *stmt.args.args][:1]
            if receiver:
                attributes.update(dict.fromkeys(_assigned_attributes(stmt, receiver[0].arg)))
        else:
            for name, kind in _statement_names(stmt):
                if kind == "variable":
                    attributes.setdefault(name, None)
    return tuple(attributes), tuple(methods)


def _assigned_attributes(method: ast.AST, receiver: str) -> Iterator[str]:
    """``x`` for every ``<receiver>.x`` that ``method`` assigns (nested functions included)."""
    for node in _in_source_order(method):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id == receiver
        ):
            yield node.attr


def arity(args: ast.arguments, *, bound: bool = False) -> tuple[int, int | None]:
    """(fewest, most) positional arguments a call passes; most is None with ``*args``. ``bound``:
    a method called on its instance, whose first parameter the call does not pass."""
    positional = len(args.posonlyargs) + len(args.args) - (1 if bound else 0)
    fewest = max(positional - len(args.defaults), 0)
    return fewest, None if args.vararg is not None else max(positional, 0)


def _is_static(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)


def _method_arities(cls: ast.ClassDef) -> dict[str, tuple[int, int | None]]:
    return {
        stmt.name: arity(stmt.args, bound=not _is_static(stmt))
        for stmt in cls.body
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and not _is_property(stmt)
    }


def is_copyable(stmt: ast.stmt) -> bool:
    """A simple statement a fix may copy: an assignment, an expression call, a return, break or
    continue, without ``yield``, ``await`` or ``:=``."""
    if not isinstance(stmt, _COPYABLE_TYPES):
        return False
    if isinstance(stmt, ast.Expr) and not isinstance(stmt.value, ast.Call):
        return False
    if isinstance(stmt, ast.AnnAssign) and stmt.value is None:
        return False
    return not any(isinstance(node, _UNCOPYABLE_PARTS) for node in ast.walk(stmt))


def _own_statements(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.stmt]:
    """The statements of a function, nested definitions' statements left out, in source order."""
    stack: list[ast.stmt] = list(reversed(function.body))
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        yield stmt
        children = [c for c in ast.iter_child_nodes(stmt) if isinstance(c, ast.stmt | ast.ExceptHandler)]
        for child in reversed(children):
            stack.extend(reversed(child.body) if isinstance(child, ast.ExceptHandler) else [child])


def _statement_text(lines: list[str], stmt: ast.stmt, dump: str) -> str:
    """A statement's own text when it is on one line (and reads back as the same statement), else
    its rendering by ``ast.unparse``."""
    if stmt.lineno == stmt.end_lineno and stmt.lineno <= len(lines):
        line = lines[stmt.lineno - 1].encode("utf-8", "surrogatepass")  # columns count bytes
        segment = line[stmt.col_offset : stmt.end_col_offset].decode("utf-8", "replace")
        try:
            parsed = ast.parse(segment).body
        except (SyntaxError, ValueError):
            parsed = []
        if len(parsed) == 1 and ast.dump(parsed[0]) == dump:
            return segment
    return ast.unparse(stmt)


def _copyable_statements(
    module_text: str, tree: ast.Module, function: ast.AST
) -> tuple[CopyableStatement, ...]:
    """The copyable statements of the module's other functions, nearest function first, no repeats."""
    others = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node is not function
    ]
    others.sort(key=lambda node: (abs(node.lineno - getattr(function, "lineno", 0)), node.lineno))
    lines = module_text.splitlines()  # may split where the tokenizer does not: each text is checked
    found: dict[str, CopyableStatement] = {}
    for other in others:
        parameters = tuple(a.arg for a in (*other.args.posonlyargs, *other.args.args, *other.args.kwonlyargs))
        for stmt in _own_statements(other):
            if not is_copyable(stmt):
                continue
            dump = ast.dump(stmt)
            if dump not in found:
                text = _statement_text(lines, stmt, dump)
                found[dump] = CopyableStatement(text=text, parameters=parameters)
            if len(found) >= MAX_COPYABLE_STATEMENTS:
                return tuple(found.values())
    return tuple(found.values())


def _exception_name(node: ast.AST | None) -> str | None:
    """The class a ``raise`` or an ``except`` names (``E``, ``E(...)``, ``mod.E``), if it is one name."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return ast.unparse(node)
    return None


def _exceptions(tree: ast.Module) -> tuple[str, ...]:
    """Exception classes the module defines (a class whose base ends in Error or Exception), raises
    or catches, in source order."""
    names: dict[str, None] = {}
    for node in _in_source_order(tree):
        found: list[ast.AST | None] = []
        if isinstance(node, ast.ClassDef):
            bases = [_exception_name(b) or "" for b in node.bases]
            if any(b.endswith(("Error", "Exception")) for b in bases):
                names.setdefault(node.name, None)
        elif isinstance(node, ast.Raise):
            found = [node.exc]
        elif isinstance(node, ast.ExceptHandler):
            found = list(node.type.elts) if isinstance(node.type, ast.Tuple) else [node.type]
        for name in map(_exception_name, found):
            if name is not None and name.rsplit(".", 1)[-1].endswith(("Error", "Exception")):
                names.setdefault(name, None)
    return tuple(names)


def is_condition(node: ast.AST) -> bool:
    """A comparison or a call of a boolean builtin (``isinstance(x, T)``)."""
    if isinstance(node, ast.Compare):
        return True
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in BOOLEAN_CALLS


def _tests(tree: ast.AST) -> Iterator[ast.expr]:
    """Conditions under ``tree`` in source order: the tests of if/while/ternaries/comprehensions,
    comparisons and boolean calls."""
    for node in _in_source_order(tree):
        if isinstance(node, ast.If | ast.While | ast.IfExp):
            yield node.test
        elif isinstance(node, ast.comprehension):
            yield from node.ifs
        elif isinstance(node, ast.expr) and is_condition(node):
            yield node


def _module_conditions(tree: ast.Module) -> tuple[str, ...]:
    texts: dict[str, None] = {}
    for node in _tests(tree):
        if isinstance(node, ast.Constant) or any(
            isinstance(n, ast.NamedExpr | ast.Await | ast.Yield | ast.YieldFrom | ast.Lambda)
            for n in ast.walk(node)
        ):
            continue
        text = ast.unparse(node)
        if len(text) <= _MAX_CONDITION_LENGTH:
            texts.setdefault(text, None)
        if len(texts) >= MAX_CONDITIONS:
            break
    return tuple(texts)


def raised_types(tree: ast.AST) -> tuple[str, ...]:
    """The exception types raised under ``tree``: ``T`` of ``raise T(...)`` and of ``raise T`` when
    ``T`` is capitalized (``raise error`` re-raises a variable), in source order."""
    found: dict[str, None] = {}
    for node in _in_source_order(tree):
        if not isinstance(node, ast.Raise) or node.exc is None:
            continue
        exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        name = exc.attr if isinstance(exc, ast.Attribute) else exc.id if isinstance(exc, ast.Name) else ""
        called = isinstance(node.exc, ast.Call)
        if isinstance(exc, ast.Name | ast.Attribute) and (called or name[:1].isupper()):
            found.setdefault(ast.unparse(exc), None)
    return tuple(found)


def fix_context(
    module_text: str,
    qualname: str,
    *,
    passing_calls: Sequence[RecordedCall] = (),
    failing_calls: Sequence[RecordedCall] = (),
) -> FixContext:
    """The context of the function ``qualname`` in ``module_text`` (see the module docstring);
    ``passing_calls`` and ``failing_calls`` are its recorded calls in passing and failing tests.

    Raises FunctionNotFoundError when the module has no such function and SourceEditError when
    it does not parse."""
    location = find_function(module_text, qualname)
    module_text = module_text.removeprefix("\ufeff")
    tree = ast.parse(module_text)
    function = next(
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.lineno == location.def_line
    )
    cls = _enclosing_class(tree, function)
    attributes, methods = _class_members(cls) if cls is not None else ((), ())
    return FixContext(
        qualname=location.qualname,
        module_names=_module_names(tree),
        module_constants=literal_constants(tree),
        class_name=cls.name if cls is not None else None,
        class_attributes=attributes,
        class_methods=methods,
        function_constants=literal_constants(function),
        function_arities={
            stmt.name: arity(stmt.args)
            for stmt in _module_level(tree.body)
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef)
        },
        method_arities=_method_arities(cls) if cls is not None else {},
        module_conditions=_module_conditions(tree),
        raised_exceptions=raised_types(tree),
        passing_calls=tuple(passing_calls),
        failing_calls=tuple(failing_calls),
        copyable_statements=_copyable_statements(module_text, tree, function),
        exceptions=_exceptions(tree),
    )

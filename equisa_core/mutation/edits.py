"""The verified-edit engine behind mutants and fix candidates: one function, small source edits.

``FunctionModel`` is one parsed function definition with its text, its code positions (``Site``)
and the facts edit operators share (its local bindings and the offsets from which they hold). An
operator proposes ``Candidate`` changes: an intended AST change (``parent.field = value``) and the
text edits that should make it. ``make`` verifies a candidate: the edited text must parse to
exactly the intended AST (compared through the structural hash of ``shape``), compile when the
original does and differ from it. ``equisa_core.mutation.mutants`` (the mutants of screening,
repair and test generation) and ``equisa_core.repair.fix_space`` (the repair's wider fix space)
both build on it; see the former's docstring for the text-edit and verification rules.
"""

from __future__ import annotations

import ast
import bisect
import difflib
import hashlib
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from equisa_core.common.bindings import names_bound_in
from equisa_core.errors import InvalidReplacementError

__all__ = [
    "SELF_NAMES",
    "Candidate",
    "Edit",
    "FunctionModel",
    "FunctionNode",
    "Made",
    "Proposal",
    "Shape",
    "Site",
    "arg_names",
    "bounds",
    "compiles",
    "edit_size",
    "expression",
    "int_node",
    "int_value",
    "is_int",
    "is_stringy",
    "load_function",
    "make",
    "name_distance",
    "negate",
    "parse_quietly",
    "shape",
    "shift",
    "splice",
    "with_field",
]

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
# Physical lines as the tokenizer sees them: "\r\n", "\r" and "\n" all end a line.
_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_MAX_SHOWN = 60
SELF_NAMES = frozenset({"self", "cls"})

_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# Leaves of the tree that are not code positions: operators and expression contexts.
_NOT_SITES = (ast.expr_context, ast.operator, ast.cmpop, ast.boolop, ast.unaryop)
# Fields never descended into: signatures, annotations, decorators.
_SKIPPED_FIELDS = frozenset({"annotation", "returns", "decorator_list", "type_comment", "type_params"})
# Tokens, for counting an edit's size: strings, numbers, names and operators; blanks and comments
# are skipped. Cruder than ``tokenize`` but it counts fragments (``not (``) that do not tokenize alone.
_TOKEN_RE = re.compile(
    r"""
    (?P<blank>[ \t\f\r\n\\]+) | (?P<comment>\#[^\r\n]*)
    | (?P<token>
        [rRbBuUfF]{0,2}(?:'''[\s\S]*?'''|\"\"\"[\s\S]*?\"\"\"|'(?:\\.|[^'\\\r\n])*'|"(?:\\.|[^"\\\r\n])*")
      | (?:\d|\.\d)(?:[eE][-+]|[\w.])*
      | \w+
      | \*\*=|//=|>>=|<<=|\.\.\.|->|:=|[-+*/%@&|^<>=!]=|\*\*|//|<<|>>|.
    )
    """,
    re.VERBOSE,
)


Edit = tuple[int, int, str]  # (start, end, replacement) in characters of the function text
# A structural hash of an AST: blake2b over what ``ast.dump`` prints (node types, fields in order,
# other values by repr; positions excluded), built bottom-up so that unchanged subtrees reuse their
# hash. Two trees have the same shape exactly when their ``ast.dump`` is the same (up to a 128-bit
# collision), at the cost of one path of the tree per mutant instead of a whole dump.
Shape = bytes


@dataclass(frozen=True)
class Site:
    """A node of the function's own code and where it hangs: ``parent.field[index]``."""

    node: ast.AST
    parent: ast.AST
    field: str
    index: int | None
    shadow: frozenset[str]  # names bound by enclosing lambdas and comprehensions


@dataclass(frozen=True)
class Candidate:
    """An intended change (``parent.field = value``) and the text edits that should make it."""

    parent: ast.AST
    field: str
    value: object
    alternatives: tuple[tuple[Edit, ...], ...]  # tried in order; the first that verifies wins
    display: tuple[int, int]  # the span of the original shown in the description
    verb: str = ""  # "removed", "duplicated" or "inserted" for line edits; "" for replacements


@dataclass(frozen=True)
class Proposal:
    """A repair operator's candidate and the node its per-site cap counts against
    (``fix_space.MAX_PER_SITE``)."""

    candidate: Candidate
    site: ast.AST


@dataclass(frozen=True)
class Made:
    """A verified candidate: the edited function's text, its shape, where and what changed."""

    operator: str
    source: str
    shape: Shape
    line: int
    description: str
    edit_size: int
    position: int


def parse_quietly(text: str) -> ast.Module:
    """``ast.parse`` with the compiler's warnings (invalid escapes, ...) silenced."""
    with warnings.catch_warnings(action="ignore"):
        return ast.parse(text)


def compiles(tree: ast.Module) -> bool:
    """Whether a parsed module compiles (the compiler's warnings silenced)."""
    try:
        with warnings.catch_warnings(action="ignore"):
            compile(tree, "<mutant>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def _docstring(node: FunctionNode) -> ast.Expr | None:
    first = node.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return first
    return None


def is_int(node: ast.AST) -> bool:
    """Whether a node is an int literal (``True`` is not one)."""
    return int_value(node) is not None


def int_value(node: ast.AST) -> int | None:
    """The value of an int literal (``True`` is not one), else None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def expression(site: Site) -> ast.expr:
    """The node of a site that holds an expression (a condition, a call's argument, a bound)."""
    if not isinstance(site.node, ast.expr):
        raise TypeError(f"a {type(site.node).__name__} node in {site.field}, not an expression")
    return site.node


@runtime_checkable
class _Positioned(Protocol):
    """A node with a place in the source: statements, expressions, keywords, arguments, handlers."""

    lineno: int
    col_offset: int
    end_lineno: int | None
    end_col_offset: int | None


def bounds(node: ast.AST) -> tuple[int, int, int, int]:
    """A parsed node's (line, column, end line, end column); AttributeError for a node without one."""
    if not isinstance(node, _Positioned) or node.end_lineno is None or node.end_col_offset is None:
        raise AttributeError(f"{type(node).__name__} node without a position in the source")
    return node.lineno, node.col_offset, node.end_lineno, node.end_col_offset


def is_stringy(node: ast.AST) -> bool:
    """A str/bytes literal, an f-string or a sequence display: `+` and `%` there are not arithmetic."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str | bytes)
    return isinstance(node, ast.JoinedStr | ast.List | ast.Tuple | ast.ListComp)


def with_field(node: ast.AST, field: str, value: object) -> ast.AST:
    """A shallow copy of ``node`` with one field replaced."""
    copy = type(node)(**{name: getattr(node, name, None) for name in node._fields})
    setattr(copy, field, value)
    return copy


def arg_names(args: ast.arguments) -> list[str]:
    """Every parameter name of a signature, ``*args`` and ``**kwargs`` included."""
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    every += [a for a in (args.vararg, args.kwarg) if a is not None]
    return [a.arg for a in every]


def _shown(text: str) -> str:
    """A fragment on one line for a description: comments dropped, blanks collapsed, shortened."""
    flat = " ".join("".join(m["token"] or " " for m in _TOKEN_RE.finditer(text) if not m["comment"]).split())
    return flat if len(flat) <= _MAX_SHOWN else flat[: _MAX_SHOWN - 3] + "..."


def splice(text: str, edits: Sequence[Edit]) -> str:
    """``text`` with the (non-overlapping) edits applied."""
    out, cursor = [], 0
    for start, end, replacement in sorted(edits, key=lambda e: (e[0], e[1])):
        out += [text[cursor:start], replacement]
        cursor = end
    out.append(text[cursor:])
    return "".join(out)


def _lex(text: str) -> list[str]:
    return [m["token"] for m in _TOKEN_RE.finditer(text) if m["token"]]


def edit_size(text: str, edits: Sequence[Edit]) -> int:
    """Tokens changed: per edit, the replaced, inserted and removed tokens (a replacement counts once)."""
    size = 0
    for start, end, replacement in edits:
        matcher = difflib.SequenceMatcher(None, _lex(text[start:end]), _lex(replacement), autojunk=False)
        size += sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal")
    return max(size, 1)


def shape(
    node: ast.AST, known: Callable[[ast.AST], Shape | None], store: dict[int, Shape] | None = None
) -> Shape:
    """The structural hash of ``node``; ``known`` may supply the hash of a subtree, ``store`` keeps them."""
    hit = known(node)
    if hit is not None:
        return hit
    digest = hashlib.blake2b(type(node).__name__.encode(), digest_size=16)
    for name in node._fields:
        value = getattr(node, name, None)
        digest.update(b"[" if isinstance(value, list) else b"(")
        for item in value if isinstance(value, list) else (value,):
            if isinstance(item, ast.AST):
                digest.update(b"N" + shape(item, known, store))
            else:
                digest.update(b"V" + repr(item).encode("utf-8", "surrogatepass") + b"\0")
        digest.update(b"]")
    result = digest.digest()
    if store is not None:
        store[id(node)] = result
    return result


def _statement_key(lines: Sequence[str], stmt: ast.stmt) -> tuple[str, int, int | None]:
    """The exact text of a statement (its whole lines and the columns it starts and ends at)."""
    first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))])
    return "".join(lines[first - 1 : stmt.end_lineno]), stmt.col_offset, stmt.end_col_offset


def _binding_pairs(node: ast.AST) -> list[tuple[ast.AST, ast.AST]]:
    """The (target, value) pairs of a statement or expression that binds its targets once the value
    is evaluated: assignments, ``for`` (the iterable), ``with`` (the context expression), ``:=``."""
    if isinstance(node, ast.Assign):
        return [(target, node.value) for target in node.targets]
    if isinstance(node, ast.AugAssign | ast.AnnAssign | ast.NamedExpr) and node.value is not None:
        return [(node.target, node.value)]
    if isinstance(node, ast.For | ast.AsyncFor):
        return [(node.target, node.iter)]
    if isinstance(node, ast.With | ast.AsyncWith):
        return [(item.optional_vars, item.context_expr) for item in node.items if item.optional_vars]
    return []


class FunctionModel:
    """The parsed function with its text, its sites and the facts the operators share."""

    def __init__(self, text: str, tree: ast.Module, node: FunctionNode) -> None:
        self.text = text
        self.tree = tree
        self.node = node
        self.lines: list[str] = _LINE_RE.findall(text)
        self.starts: list[int] = []
        total = 0
        for line in self.lines:
            self.starts.append(total)
            total += len(line)
        self.shapes: dict[int, Shape] = {}  # id(node) -> shape, for every node of the original
        self.shape = shape(node, lambda _: None, self.shapes)
        self.parents = {
            id(child): parent for parent in ast.walk(node) for child in ast.iter_child_nodes(parent)
        }
        # statements by their exact text: a mutant's statement with the same text has the same shape
        self.statement_shapes = {
            _statement_key(self.lines, stmt): self.shapes[id(stmt)]
            for stmt in ast.walk(node)
            if isinstance(stmt, ast.stmt) and stmt is not node
        }
        self.compiles = compiles(tree)
        self.docstring = _docstring(node)
        self.sites = self._walk()
        self.parameters = arg_names(node.args)
        self.bound = names_bound_in(node)  # every name it may bind: to spot shadowed builtins
        self.bindings = self._local_bindings()

    # positions

    def offset(self, lineno: int, col: int) -> int:
        """The character offset of (1-based line, UTF-8 byte column)."""
        line = self.lines[lineno - 1]
        return self.starts[lineno - 1] + len(
            line.encode("utf-8", "surrogatepass")[:col].decode("utf-8", "replace")
        )

    def span(self, node: ast.AST) -> tuple[int, int]:
        line, column, end_line, end_column = bounds(node)
        return self.offset(line, column), self.offset(end_line, end_column)

    def src(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.text[start:end]

    def line_of(self, offset: int) -> int:
        """The 1-based line holding a character offset."""
        return bisect.bisect_right(self.starts, offset)

    def eol(self) -> str:
        return next((ln[len(ln.rstrip("\r\n")) :] for ln in self.lines if ln.endswith(("\n", "\r"))), "\n")

    # analysis

    def _walk(self) -> list[Site]:
        """The function's own nodes in source order, docstring and nested definitions excluded."""
        sites: list[Site] = []
        first = 1 if self.docstring is not None else 0
        stack: list[Site] = [
            Site(stmt, self.node, "body", i, frozenset())
            for i, stmt in enumerate(self.node.body)
            if i >= first
        ]
        stack.reverse()
        while stack:
            site = stack.pop()
            node = site.node
            if isinstance(node, (*_NOT_SITES, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            sites.append(site)
            shadow = site.shadow
            if isinstance(node, ast.Lambda):
                shadow = shadow | set(arg_names(node.args))
            elif isinstance(node, _COMPREHENSIONS):
                shadow = shadow | {
                    n.id for gen in node.generators for n in ast.walk(gen.target) if isinstance(n, ast.Name)
                }
            children: list[Site] = []
            for name, value in ast.iter_fields(node):
                if name in _SKIPPED_FIELDS or isinstance(value, ast.arguments):
                    continue
                if isinstance(value, list):
                    children += [
                        Site(child, node, name, i, shadow)
                        for i, child in enumerate(value)
                        if isinstance(child, ast.AST)
                    ]
                elif isinstance(value, ast.AST):
                    children.append(Site(value, node, name, None, shadow))
            stack.extend(reversed(children))
        return sites

    def _local_bindings(self) -> dict[str, list[int]]:
        """Local variables (parameters and assigned names) with the offsets from which they are bound.

        A name is bound once the value assigned to it is evaluated: after the right-hand side of
        an assignment, after the iterable of a ``for``, after the context expression of a
        ``with``, after the value of a ``:=``; elsewhere (``except ... as``, ``match`` captures)
        at the name itself. Parameters are bound at offset -1. Names declared global or
        nonlocal, names bound only inside lambdas and comprehensions, and ``self``/``cls`` are
        left out.
        """
        declared = {
            name
            for site in self.sites
            if isinstance(site.node, ast.Global | ast.Nonlocal)
            for name in site.node.names
        }
        bound_at = self._binding_offsets()
        bindings: dict[str, list[int]] = {name: [-1] for name in self.parameters}
        for site in self.sites:
            node = site.node
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in site.shadow:
                offset = bound_at.get(id(node), self.span(node)[0])
                bindings.setdefault(node.id, []).append(offset)
        return {
            name: sorted(offsets)
            for name, offsets in bindings.items()
            if name not in declared and name not in SELF_NAMES
        }

    def _binding_offsets(self) -> dict[int, int]:
        """id(Name) -> the offset from which the name is bound, for the names that an assignment,
        ``for``, ``with`` or ``:=`` binds once its value is evaluated."""
        bound_at: dict[int, int] = {}
        for site in self.sites:
            for target, value in _binding_pairs(site.node):
                end = self.span(value)[1]
                bound_at.update((id(n), end) for n in ast.walk(target) if isinstance(n, ast.Name))
        return bound_at

    def own_lines(self, stmt: ast.stmt) -> bool:
        """Whether a statement occupies whole lines (nothing but a comment shares them)."""
        start, end = self.span(stmt)
        before = self.text[self.starts[stmt.lineno - 1] : start]
        end_line = bounds(stmt)[2]
        last = self.lines[end_line - 1]
        after = self.text[end : self.starts[end_line - 1] + len(last)]
        return before.strip(" \t\f") == "" and (after.strip() == "" or after.lstrip().startswith("#"))

    def line_span(self, first: int, last: int) -> tuple[int, int]:
        """Character span of whole lines ``first``..``last`` (1-based, inclusive, endings included)."""
        return self.starts[first - 1], self.starts[last - 1] + len(self.lines[last - 1])

    # candidates

    def replace(
        self,
        site: Site,
        new: ast.AST,
        primary: Sequence[Sequence[Edit]],
        display: tuple[int, int] | None = None,
    ) -> Candidate:
        """Replace ``site.node`` by ``new``: the primary edits first, then an unparsed fragment."""
        start, end = self.span(site.node)
        rendered = ast.unparse(new)
        alternatives = [tuple(edits) for edits in primary]
        alternatives.append(((start, end, rendered),))
        if isinstance(new, ast.expr):
            alternatives.append(((start, end, f"({rendered})"),))
        value: object = new
        if site.index is not None:
            siblings = list(getattr(site.parent, site.field))
            siblings[site.index] = new
            value = siblings
        return Candidate(site.parent, site.field, value, tuple(alternatives), display or (start, end))

    def operator_span(self, start: int, end: int, expected: str) -> tuple[int, int] | None:
        """The span of the operator between two operands, skipping parentheses, blanks and comments."""
        text, i = self.text, start
        first = last = -1
        while i < end:
            ch = text[i]
            if ch == "#":
                newline = text.find("\n", i, end)
                i = end if newline < 0 else newline
                continue
            if ch in " \t\f\r\n()\\":
                i += 1
                continue
            if first < 0:
                first = i
            last = i = i + 1
        if first < 0 or " ".join(text[first:last].split()) != expected:
            return None
        return first, last

    def intended_shape(self, candidate: Candidate) -> Shape:
        """The shape of the function with the candidate's change applied (in place, then undone)."""
        stale: set[int] = set()  # the changed node's ancestors: their stored shapes no longer hold
        node: ast.AST | None = candidate.parent
        while node is not None:
            stale.add(id(node))
            node = self.parents.get(id(node))
        old = getattr(candidate.parent, candidate.field)
        setattr(candidate.parent, candidate.field, candidate.value)
        try:
            return shape(self.node, lambda n: None if id(n) in stale else self.shapes.get(id(n)))
        finally:
            setattr(candidate.parent, candidate.field, old)

    def shape_of(self, node: FunctionNode, text: str) -> Shape:
        """The shape of a parsed mutant; statements whose text is unchanged reuse the original's."""
        lines = _LINE_RE.findall(text)

        def known(sub: ast.AST) -> Shape | None:
            if isinstance(sub, ast.stmt) and sub is not node:
                return self.statement_shapes.get(_statement_key(lines, sub))
            return None

        return shape(node, known)




def name_distance(a: str, b: str) -> int:
    """The Levenshtein distance of two names, case ignored (``LIMIT`` is near ``limit``). By hand: a
    dozen lines for short identifiers, where a library would be a dependency for one function."""
    a, b = a.lower(), b.lower()
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def negate(fn: FunctionModel, site: Site) -> Candidate:
    """``not X`` for ``X``, or ``X`` for ``not X`` (a mutation and a repair edit alike)."""
    node = expression(site)
    start, end = fn.span(node)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = fn.src(node.operand)
        return fn.replace(site, node.operand, [[(start, end, inner)], [(start, end, f"({inner})")]])
    new = ast.UnaryOp(ast.Not(), node)
    return fn.replace(site, new, [[(start, start, "not ")], [(start, start, "not ("), (end, end, ")")]])


def int_node(value: int) -> ast.expr:
    """The literal of an int: ``3`` or ``-3``."""
    return ast.Constant(value) if value >= 0 else ast.UnaryOp(ast.USub(), ast.Constant(-value))


def shift(fn: FunctionModel, site: Site, delta: int, display: tuple[int, int]) -> Candidate:
    """``e + 1`` / ``e - 1`` for ``e``; an existing ``e + k`` / ``e - k`` becomes ``e + (k +- 1)``."""
    node = expression(site)
    start, end = fn.span(node)
    right = int_value(node.right) if isinstance(node, ast.BinOp) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub) and right is not None:
        amount = right if isinstance(node.op, ast.Add) else -right
        amount += delta
        if amount == 0:  # `n - 1` + 1 is `n`
            left = fn.src(node.left)
            return fn.replace(site, node.left, [[(start, end, left)], [(start, end, f"({left})")]], display)
        new = ast.BinOp(node.left, ast.Add() if amount > 0 else ast.Sub(), ast.Constant(abs(amount)))
        same_sign = (amount > 0) == isinstance(node.op, ast.Add)
        primary = [[(*fn.span(node.right), str(abs(amount)))]] if same_sign else []
        return fn.replace(site, new, primary, display)
    tail = " + 1" if delta > 0 else " - 1"
    new = ast.BinOp(node, ast.Add() if delta > 0 else ast.Sub(), ast.Constant(1))
    return fn.replace(site, new, [[(end, end, tail)], [(start, start, "("), (end, end, ")" + tail)]], display)


def _describe(fn: FunctionModel, candidate: Candidate, edits: Sequence[Edit], line: int) -> str:
    start, end = candidate.display
    if candidate.verb == "inserted":
        return f"line {line}: inserted `{_shown(edits[0][2])}`"
    if candidate.verb:
        return f"line {line}: {candidate.verb} `{_shown(fn.text[start:end])}`"
    start = min(start, *(e[0] for e in edits))
    end = max(end, *(e[1] for e in edits))
    local = [(s - start, e - start, r) for s, e, r in edits]
    old = fn.text[start:end]
    return f"line {line}: `{_shown(old)}` -> `{_shown(splice(old, local))}`"


def make(fn: FunctionModel, operator: str, candidate: Candidate, start_line: int) -> Made | None:
    """Verify a candidate's edits against its intended AST; the first alternative that holds wins."""
    expected = fn.intended_shape(candidate)
    if expected == fn.shape:
        return None
    for edits in candidate.alternatives:
        text = splice(fn.text, edits)
        try:
            tree = parse_quietly(text)
        except (SyntaxError, ValueError):
            continue
        node = tree.body[0] if len(tree.body) == 1 else None
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if fn.shape_of(node, text) != expected:
            continue
        if fn.compiles and not compiles(tree):
            return None  # every alternative has this same AST
        position = min(e[0] for e in edits)
        first = candidate.display[0] if candidate.verb in ("removed", "duplicated") else position
        line = start_line + fn.line_of(first) - 1
        return Made(
            operator=operator,
            source=text,
            shape=expected,
            line=line,
            description=_describe(fn, candidate, edits, line),
            edit_size=edit_size(fn.text, edits),
            position=position,
        )
    return None


def load_function(function_source: str, fqn: str) -> FunctionModel:
    """The model of one function definition; InvalidReplacementError when it is anything else."""
    try:
        tree = parse_quietly(function_source)
    except (SyntaxError, ValueError) as exc:
        where = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) and exc.lineno else ""
        message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        raise InvalidReplacementError(f"the source of {fqn!r} does not parse: {message}{where}") from exc
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef | ast.AsyncFunctionDef):
        kinds = ", ".join(type(s).__name__ for s in tree.body[:5]) or "nothing"
        raise InvalidReplacementError(
            f"the source of {fqn!r} must be exactly one function definition; it has {kinds}"
        )
    return FunctionModel(function_source, tree, tree.body[0])


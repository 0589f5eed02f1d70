"""Statement-level repair operators of the fix space: copy, swap and move whole statements.

Each operator is a generator ``(fn, context) -> Iterator[Proposal]`` registered in
``fix_space.REPAIR_OPERATORS``; every proposal is a line edit that ``edits.make`` verifies like
any other (the edited text must parse to exactly the intended AST, compile when the original
does and differ from it). Only statements that occupy whole lines are copied, swapped or moved,
and only blocks whose statements all do are edited, so the edits are whole-line splices that
leave every other line byte-identical.

- ``statement_copy``: the redundancy assumption of plastic-surgery repair. A simple statement
  (an assignment, an augmented assignment, an expression call such as ``acc.append(v)``, a
  return, ``break`` or ``continue``) of this function or of the module's other functions
  (``FixContext.copyable_statements``) is inserted at another position of a statement list,
  only when every name it reads is in scope there: a parameter, a local bound before the
  position, a module name or a builtin that the function does not rebind. A statement with
  exactly one name out of scope is offered with that name renamed to an in-scope name of the
  same kind (a parameter to a parameter, a local to a local) that it does not already use, the
  closest names first. No statement is inserted where it could not run (after a return, raise,
  break or continue). The sites are the insertion positions in source order; at a position,
  the function's own statements come first, nearest first, then the module's, nearest
  function first.
- ``statement_swap``: two adjacent statements of one block change places (at most one of them
  a compound statement: a simple statement may hop over a block), unless the second reads a
  name that only the first binds.
- ``statement_move``: a statement crosses a block boundary by one position. A block's last
  statement is dedented to just after the block (a ``return False`` wrongly inside a loop), the
  statement after a block is indented into the end of the block (an ``i += 1`` wrongly after a
  ``while`` body), the statement before a block moves to the start of its body, and a block's
  first statement moves to just before it; a statement is never moved above the binding of a
  name it reads, nor below one that the block's header reads.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator
from dataclasses import dataclass

from equisa_core.mutation.edits import (
    SELF_NAMES,
    Candidate,
    Edit,
    FunctionModel,
    Proposal,
    Shape,
    bounds,
    name_distance,
    shape,
    splice,
    with_field,
)
from equisa_core.mutation.fix_context import FixContext, is_copyable

__all__ = [
    "Block",
    "blocks",
    "first_line",
    "indent_of",
    "indent_unit",
    "is_elif",
    "line_chunk",
    "placed",
    "reindent",
    "statement_copy",
    "statement_move",
    "statement_swap",
]

#: At most this many renamed variants of one copied statement.
MAX_RENAMES = 2
#: Proposals made per insertion position (the per-site cap keeps fewer verified ones).
_PROPOSALS_PER_POSITION = 16
_BUILTIN_NAMES = frozenset(dir(builtins))
_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.TryStar)
_Compound = ast.If | ast.For | ast.AsyncFor | ast.While | ast.With | ast.AsyncWith | ast.Try | ast.TryStar
_TERMINAL = (ast.Return, ast.Raise, ast.Break, ast.Continue)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


# --- blocks and their text -----------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """A statement list of the function, ``owner.field``, whose statements all occupy whole lines."""

    owner: ast.AST
    field: str
    statements: list[ast.stmt]
    first: int  # the first position that may be edited: 1 after a docstring, else 0
    indent: str  # the indentation of its statements


def is_elif(fn: FunctionModel, node: ast.AST) -> bool:
    """Whether an ``If`` node is spelled ``elif``."""
    return isinstance(node, ast.If) and fn.text.startswith("elif", fn.span(node)[0])


def first_line(stmt: ast.stmt) -> int:
    """The first line of a statement, its decorators included."""
    decorators: list[ast.expr] = getattr(stmt, "decorator_list", [])
    return min([stmt.lineno, *(d.lineno for d in decorators)])


def indent_of(fn: FunctionModel, stmt: ast.stmt) -> str:
    """The blanks that start a statement's first line."""
    line = fn.lines[stmt.lineno - 1]
    return line[: len(line) - len(line.lstrip(" \t\f"))]


def indent_unit(fn: FunctionModel) -> str:
    """One level of indentation, as the function's body uses it (four blanks when it cannot tell)."""
    first = fn.node.body[0]
    unit = indent_of(fn, first) if fn.own_lines(first) else ""
    return unit or "    "


def line_chunk(fn: FunctionModel, stmt: ast.stmt) -> tuple[int, int, str]:
    """The whole lines of a statement: (start, end, text), the text always ending a line."""
    start, end = fn.line_span(first_line(stmt), bounds(stmt)[2])
    text = fn.text[start:end]
    return start, end, text if text.endswith(("\n", "\r")) else text + fn.eol()


def reindent(text: str, old: str, new: str) -> str:
    """Lines of ``text`` that start with the indentation ``old`` start with ``new`` instead."""
    lines = text.splitlines(keepends=True)
    return "".join(
        new + line[len(old) :] if line.startswith(old) and line.strip() else line for line in lines
    )


def _statement_lists(fn: FunctionModel) -> Iterator[tuple[ast.AST, str, list[ast.stmt]]]:
    owners: list[ast.AST] = [fn.node]
    owners += [s.node for s in fn.sites if isinstance(s.node, ast.stmt | ast.ExceptHandler | ast.match_case)]
    for owner in owners:
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(owner, field, None)
            if not isinstance(statements, list) or not statements:
                continue
            if field == "orelse" and len(statements) == 1 and is_elif(fn, statements[0]):
                continue
            yield owner, field, statements


def blocks(fn: FunctionModel) -> list[Block]:
    """The function's statement lists whose statements occupy whole lines, in source order."""
    found: list[Block] = []
    for owner, field, statements in _statement_lists(fn):
        if not isinstance(statements[0], ast.stmt) or not all(fn.own_lines(s) for s in statements):
            continue
        first = 1 if owner is fn.node and fn.docstring is not None else 0
        found.append(Block(owner, field, statements, first, indent_of(fn, statements[0])))
    return found


def _in_loop(fn: FunctionModel, block: Block) -> bool:
    """Whether a block is inside the body of a loop of the function (``break`` may go there)."""
    if isinstance(block.owner, _LOOPS) and block.field == "body":
        return True
    child, parent = block.owner, fn.parents.get(id(block.owner))
    while parent is not None:
        if isinstance(parent, _LOOPS) and any(child is s for s in parent.body):
            return True
        child, parent = parent, fn.parents.get(id(parent))
    return False


# --- statement_copy ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Source:
    """A statement that may be copied: its node and text, the names it reads and binds."""

    node: ast.stmt
    text: str
    shape: Shape
    reads: frozenset[str]
    stores: frozenset[str]
    parameters: frozenset[str]  # of the function it comes from
    line: int | None  # its line in this function; None for another function's


@dataclass(frozen=True)
class _Position:
    """Where a statement may be inserted: ``block.statements[index]`` becomes it."""

    block: Block
    index: int
    point: int  # the offset the text goes to
    lead: str  # a line ending to put first (at the end of a text without one)
    line: int
    in_loop: bool


def _names(stmt: ast.AST) -> tuple[frozenset[str], frozenset[str]]:
    """(names read, names bound) by a statement or an expression; names of its lambdas and
    comprehensions left out."""
    inner: set[str] = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Lambda):
            inner.update(a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs))
        elif isinstance(node, ast.comprehension):
            inner.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
    names = [n for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id not in inner]
    reads = {n.id for n in names if isinstance(n.ctx, ast.Load)}
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        reads.add(stmt.target.id)
    return frozenset(reads), frozenset(n.id for n in names if not isinstance(n.ctx, ast.Load))


def _sources(fn: FunctionModel, context: FixContext) -> tuple[list[_Source], list[_Source]]:
    """The function's own copyable statements and the module's."""
    own: list[_Source] = []
    for site in fn.sites:
        node = site.node
        if isinstance(node, ast.stmt) and is_copyable(node):
            text = fn.src(node) if node.lineno == node.end_lineno else ast.unparse(node)
            reads, stores = _names(node)
            own.append(
                _Source(node, text, fn.shapes[id(node)], reads, stores, frozenset(fn.parameters), node.lineno)
            )
    others: list[_Source] = []
    for statement in context.copyable_statements:
        try:
            parsed = ast.parse(statement.text).body
        except (SyntaxError, ValueError):
            continue
        if len(parsed) != 1 or "\n" in statement.text.strip() or not is_copyable(parsed[0]):
            continue
        node = parsed[0]
        reads, stores = _names(node)
        others.append(
            _Source(
                node,
                statement.text.strip(),
                shape(node, lambda _: None),
                reads,
                stores,
                frozenset(statement.parameters),
                None,
            )
        )
    return own, others


def _positions(fn: FunctionModel) -> list[_Position]:
    """Every insertion position of the function's blocks, in source order (inner blocks first)."""
    found: list[tuple[tuple[int, int], _Position]] = []
    for block in blocks(fn):
        loop = _in_loop(fn, block)
        statements = block.statements
        for index in range(block.first, len(statements) + 1):
            if index < len(statements):
                line = first_line(statements[index])
                point, lead = fn.starts[line - 1], ""
            else:
                line = bounds(statements[-1])[2]
                point = fn.line_span(line, line)[1]
                lead = "" if fn.text.endswith(("\n", "\r")) or point < len(fn.text) else fn.eol()
            found.append(((point, -len(block.indent)), _Position(block, index, point, lead, line, loop)))
    found.sort(key=lambda item: item[0])
    return [position for _, position in found]




class _Scope:
    """Which names a statement inserted at an offset of the function may read and bind."""

    def __init__(self, fn: FunctionModel, context: FixContext) -> None:
        self.fn = fn
        self.module = frozenset(context.module_names)
        self.parameters = frozenset(fn.parameters)
        self.read_anywhere = frozenset(
            s.node.id for s in fn.sites if isinstance(s.node, ast.Name) and isinstance(s.node.ctx, ast.Load)
        )

    def readable(self, name: str, offset: int, *, unknown: bool = False) -> bool:
        """Whether ``name`` may be read at ``offset``. A name the function binds where no offset
        is known (``except ... as``, an import, a nested definition) counts as ``unknown``."""
        if name in self.parameters:
            return True
        bound = self.fn.bindings.get(name)
        if bound:
            return bound[0] < offset
        if name in self.fn.bound:
            return unknown or name in self.module  # declared global
        return name in self.module or name in _BUILTIN_NAMES

    def runs_at(self, stmt: ast.stmt, offset: int) -> bool:
        """Whether every name a statement of the function reads (and does not bind itself, for
        a compound one) is bound at ``offset``: moving it there reads nothing unbound."""
        reads, stores = _names(stmt)
        needed = reads - stores if isinstance(stmt, _COMPOUND) else reads
        return all(self.readable(n, offset, unknown=True) for n in needed)

    def bindable(self, name: str) -> bool:
        """A name the statement may bind: a local already, or a name the function never reads
        (binding a global it reads would make every read of it local)."""
        if name in SELF_NAMES:
            return False
        return name in self.fn.bindings or (name not in self.fn.bound and name not in self.read_anywhere)

    def locals_at(self, offset: int) -> list[str]:
        """The parameters and the locals bound before ``offset``."""
        return [n for n, offsets in self.fn.bindings.items() if offsets[0] < offset]


def _renamed(source: _Source, old: str, new: str) -> _Source | None:
    """The statement with every ``old`` name spelled ``new``, as node and text."""
    try:
        tree = ast.parse(source.text).body[0]
    except (SyntaxError, ValueError, IndexError):
        return None
    encoded = source.text.encode("utf-8")
    edits: list[Edit] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == old:
            start = len(encoded[: node.col_offset].decode("utf-8", "replace"))
            end = len(encoded[: node.end_col_offset].decode("utf-8", "replace"))
            edits.append((start, end, new))
            node.id = new
    reads, stores = _names(tree)
    text = splice(source.text, edits)
    return _Source(tree, text, shape(tree, lambda _: None), reads, stores, source.parameters, None)


def _fitting(source: _Source, position: _Position, scope: _Scope) -> list[_Source]:
    """The source itself if it fits the position, else its variants with one name renamed."""
    if not all(scope.bindable(n) for n in source.stores):
        return []
    if isinstance(source.node, ast.Break | ast.Continue) and not position.in_loop:
        return []
    missing = [n for n in sorted(source.reads) if not scope.readable(n, position.point)]
    if not missing:
        return [source]
    if len(missing) > 1 or missing[0] in SELF_NAMES:
        return []
    old = missing[0]
    kind = old in source.parameters  # a parameter is renamed to a parameter, a local to a local
    present = source.reads | source.stores  # a name the statement already uses would conflate two
    options = [
        n for n in scope.locals_at(position.point) if n not in present and (n in scope.parameters) == kind
    ]
    options.sort(key=lambda n: (name_distance(n, old), n))
    found = []
    for name in options[:MAX_RENAMES]:
        renamed = _renamed(source, old, name)
        if renamed is not None and all(scope.bindable(n) for n in renamed.stores):
            found.append(renamed)
    return found


def _insertion(fn: FunctionModel, position: _Position, source: _Source) -> Candidate:
    block = position.block
    statements = block.statements
    value = [*statements[: position.index], source.node, *statements[position.index :]]
    text = f"{position.lead}{block.indent}{source.text}{fn.eol()}"
    return Candidate(
        block.owner,
        block.field,
        value,
        (((position.point, position.point, text),),),
        (position.point, position.point),
        "inserted",
    )


def _unreachable(position: _Position) -> bool:
    """Whether a statement inserted at the position could never run: it follows a return, a raise,
    a break or a continue."""
    index = position.index
    return index > 0 and isinstance(position.block.statements[index - 1], _TERMINAL)


def _adjacent(fn: FunctionModel, position: _Position, source: _Source) -> bool:
    """Whether the statement would land next to a copy of itself (duplication is a mutant's job)."""
    statements = position.block.statements
    neighbours = statements[max(position.index - 1, 0) : position.index + 1]
    return any(fn.shapes.get(id(s)) == source.shape for s in neighbours)


def statement_copy(fn: FunctionModel, context: FixContext) -> Iterator[Proposal]:
    """Insert a statement of this function or of the module's others where its names are in scope."""
    own, others = _sources(fn, context)
    if not own and not others:
        return
    scope = _Scope(fn, context)
    markers: list[ast.stmt] = []  # one per position, kept alive: the per-site caps count by id
    for position in _positions(fn):
        if _unreachable(position):
            continue
        marker = ast.Pass(lineno=position.line, col_offset=0, end_lineno=position.line, end_col_offset=0)
        markers.append(marker)
        ranked = sorted(own, key=lambda s: (abs((s.line or 0) - position.line), s.line or 0)) + others
        made = 0
        for source in ranked:
            for fitting in _fitting(source, position, scope):
                if _adjacent(fn, position, fitting):
                    continue
                yield Proposal(_insertion(fn, position, fitting), marker)
                made += 1
            if made >= _PROPOSALS_PER_POSITION:
                break


# --- statement_swap ------------------------------------------------------------------------------


def placed(text: str, end: int, fn: FunctionModel) -> str:
    """A chunk of whole lines placed to end at ``end``: no final line ending at the end of a text
    that has none."""
    if end == len(fn.text) and not fn.text.endswith(("\n", "\r")):
        return text.rstrip("\r\n")
    return text


def _swappable(fn: FunctionModel, stmt: ast.stmt) -> bool:
    return not isinstance(stmt, _DEFINITIONS) and not is_elif(fn, stmt)


def statement_swap(fn: FunctionModel, context: FixContext) -> Iterator[Proposal]:
    """Two adjacent statements of a block change places (at most one of them a compound one)."""
    scope = _Scope(fn, context)
    for block in blocks(fn):
        statements = block.statements
        for i in range(block.first, len(statements) - 1):
            a, b = statements[i], statements[i + 1]
            if not (_swappable(fn, a) and _swappable(fn, b)):
                continue
            if isinstance(a, _COMPOUND) and isinstance(b, _COMPOUND):
                continue
            if not scope.runs_at(b, fn.span(a)[0]):
                continue  # b reads what a binds
            a_start, a_end, a_text = line_chunk(fn, a)
            b_start, b_end, b_text = line_chunk(fn, b)
            edits = ((a_start, a_end, b_text), (b_start, b_end, placed(a_text, b_end, fn)))
            value = [*statements[:i], b, a, *statements[i + 2 :]]
            candidate = Candidate(
                block.owner, block.field, value, (edits,), fn.span(a), "swapped with the next statement"
            )
            yield Proposal(candidate, a)


# --- statement_move ------------------------------------------------------------------------------


def _last_block(fn: FunctionModel, node: _Compound) -> str | None:
    """The field of a compound statement's textually last block, None when it is an ``elif``."""
    if isinstance(node, ast.Try | ast.TryStar):
        if node.finalbody:
            return "finalbody"
        return "orelse" if node.orelse else None  # a handler's body hangs off the handler
    orelse = getattr(node, "orelse", None)
    if orelse:
        return None if len(orelse) == 1 and is_elif(fn, orelse[0]) else "orelse"
    return "body"


def _movable(fn: FunctionModel, stmt: ast.stmt) -> bool:
    return fn.own_lines(stmt) and not isinstance(stmt, _DEFINITIONS) and not is_elif(fn, stmt)


def _moves_at(fn: FunctionModel, scope: _Scope, block: Block, j: int, outer: _Compound) -> Iterator[Proposal]:
    """The moves across the boundaries of the compound statement ``outer``, ``block.statements[j]``."""
    statements = block.statements
    field = _last_block(fn, outer)
    last: list[ast.stmt] = getattr(outer, field) if field else []
    if not all(fn.own_lines(s) for s in [*outer.body, *last]):
        return
    outer_indent = indent_of(fn, outer)
    if field and len(last) >= 2 and _movable(fn, last[-1]):  # the last statement dedented after the block
        moved = last[-1]
        start, end, text = line_chunk(fn, moved)
        new_text = placed(reindent(text, indent_of(fn, moved), outer_indent), end, fn)
        shrunk = with_field(outer, field, last[:-1])
        value = [*statements[:j], shrunk, moved, *statements[j + 1 :]]
        candidate = Candidate(
            block.owner,
            block.field,
            value,
            (((start, end, new_text),),),
            fn.span(moved),
            "dedented out of its block",
        )
        yield Proposal(candidate, moved)
    if field and j + 1 < len(statements) and _movable(fn, statements[j + 1]):  # the next one indented in
        moved = statements[j + 1]
        start, end, text = line_chunk(fn, moved)
        new_text = placed(reindent(text, block.indent, indent_of(fn, last[-1])), end, fn)
        grown = with_field(outer, field, [*last, moved])
        value = [*statements[:j], grown, *statements[j + 2 :]]
        candidate = Candidate(
            block.owner,
            block.field,
            value,
            (((start, end, new_text),),),
            fn.span(moved),
            "indented into the block above",
        )
        yield Proposal(candidate, moved)
    yield from _moves_at_start(fn, scope, block, j, outer)


def _header_reads(outer: _Compound) -> frozenset[str]:
    """The names the header of a compound statement reads (its test, iterable or contexts)."""
    if isinstance(outer, ast.If | ast.While):
        return _names(outer.test)[0]
    if isinstance(outer, ast.For | ast.AsyncFor):
        return _names(outer.iter)[0]
    if isinstance(outer, ast.With | ast.AsyncWith):
        return frozenset().union(*(_names(item.context_expr)[0] for item in outer.items))
    return frozenset()


def _moves_at_start(
    fn: FunctionModel, scope: _Scope, block: Block, j: int, outer: _Compound
) -> Iterator[Proposal]:
    """The statement before a block moved to the start of its body, and the body's first
    statement moved before the block."""
    statements = block.statements
    body = outer.body
    outer_indent = indent_of(fn, outer)
    body_indent = indent_of(fn, body[0])
    to = fn.starts[first_line(body[0]) - 1]
    before = statements[j - 1] if j > block.first else None
    if (
        before is not None
        and _movable(fn, before)
        and all(scope.readable(n, fn.span(before)[0], unknown=True) for n in _header_reads(outer))
    ):  # the header does not read what the moved statement binds
        moved = before
        start, end, text = line_chunk(fn, moved)
        edits = ((start, end, ""), (to, to, reindent(text, block.indent, body_indent)))
        grown = with_field(outer, "body", [moved, *body])
        value = [*statements[: j - 1], grown, *statements[j + 1 :]]
        verb = "moved into the block below"
        candidate = Candidate(block.owner, block.field, value, (edits,), fn.span(moved), verb)
        yield Proposal(candidate, moved)
    if len(body) >= 2 and _movable(fn, body[0]) and scope.runs_at(body[0], fn.span(outer)[0]):
        moved = body[0]
        start, end, text = line_chunk(fn, moved)
        at = fn.starts[first_line(outer) - 1]
        edits = ((at, at, reindent(text, body_indent, outer_indent)), (start, end, ""))
        shrunk = with_field(outer, "body", body[1:])
        value = [*statements[:j], moved, shrunk, *statements[j + 1 :]]
        verb = "moved out before its block"
        candidate = Candidate(block.owner, block.field, value, (edits,), fn.span(moved), verb)
        yield Proposal(candidate, moved)


def statement_move(fn: FunctionModel, context: FixContext) -> Iterator[Proposal]:
    """A statement moved by one position across a block boundary (see the module docstring)."""
    scope = _Scope(fn, context)
    for block in blocks(fn):
        for j in range(block.first, len(block.statements)):
            outer = block.statements[j]
            if isinstance(outer, _COMPOUND) and not is_elif(fn, outer) and fn.own_lines(outer):
                yield from _moves_at(fn, scope, block, j, outer)

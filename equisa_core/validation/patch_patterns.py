"""Patterns of wrong patches: shapes, read from a patch, that count as evidence against it.

A patch can pass every test it was checked with and still be wrong: it silences the error the
tests saw, drops the check that rejected bad input, inverts a test that no test looked at both
ways, or fixes one of two parallel expressions. ``patch_patterns`` compares the target function
before and after a patch and names each such shape; ``PatternModel``
(``equisa_core.validation.pattern_model``) turns the names into a probability that the patch is
wrong (a logistic model fitted on the real-bug repair benchmark by ``bench/patch_pattern_fit.py``).
Both are pure.

The patterns (``PATTERNS``), and what each matches exactly:

* ``broad_except_added``: an ``except:``, ``except Exception`` or ``except BaseException`` handler
  (also ``builtins.Exception`` and a tuple that holds one of them) that the patch has beyond the
  original's. Handlers are counted by kind and the multisets compared, so a broad handler the
  original already had, or one merely moved, is not added.
* ``silencing_return_added``: a ``return``, ``return None``, ``return <constant>`` or ``return``
  of an empty literal (``[]``, ``{}``, ``()``, ``""``, ``list()``, ``dict()``, ...) inside a new
  handler (any exception type), or inside a new ``if`` (body or ``else``) whose test checks None
  (``is None``, ``== None``), emptiness (``not x``), a length (``len(x)``), a type or capability
  (``isinstance``, ``issubclass``, ``hasattr``, ``callable``), membership (``in``: guards a
  lookup) or zero (guards a division or an index), alone or in ``and``/``or``/``not``. New: the
  original has no handler of that exception type (no ``if`` with that test) left unclaimed; an
  ``if`` must also not be the original's own, edited in place (an ``if`` whose test the patch
  corrected is not new; a handler whose type it widened is).
* ``guard_deleted``: a check of the original that the patch no longer has: a ``raise``, an
  ``assert``, or an ``if`` whose body ends in ``raise`` or ``return``. A check is kept when the
  patch has one equal to it, or one of the same kind that keeps its test or its ending (an ``if``
  whose test was corrected but still raises the same error is kept, and so is one the patch
  edited in place, test and ending both, as long as it still raises or still returns; an ``if``
  that now returns where it raised is deleted). A ``raise`` inside a deleted ``if`` is not
  reported again.
* ``condition_inverted``: a test that became its negation: wrapped in ``not`` or unwrapped, a
  comparison operator replaced by its complement (``<``/``>=``, ``==``/``!=``, ``is``/``is not``,
  ``in``/``not in``, operands swapped too: ``a < b`` -> ``b <= a``), found where the patch changed
  the expression, also inside ``and``/``or``. The test may be an ``if``/``elif``, ``while``,
  ternary, ``assert`` or comprehension condition, or any boolean expression. It is reported
  unless ``arcs`` show the suite took the original ``if``/``while`` both ways: an arc from the
  test's lines to the first line of the body, and one to any other line outside the test (the
  ``else`` when there is one). With ``arcs`` None, or for a test whose branches share its line (a
  one-line ``if``, a ternary, an ``assert``), it is not shown both ways. Inverting a test and
  swapping its two branches (an equivalent rewrite) is not reported.
* ``sibling_left_unchanged``: the patch changes an expression that has parallels: the smallest
  expression enclosing the change, of at least ``MIN_SIBLING_NODES`` expression nodes, for which
  the statements of its block (or the function's body) hold other expressions of the same shape.
  Shape is the AST with names and attributes normalised (a called name or method keeps its name:
  ``l_bar.format(n=n)`` and ``self.r_bar.format(n=total)`` have one shape, ``len(a)`` and
  ``str(a)`` do not; constants are kept). Reported when some of those parallels are left as
  they were; parallels that the patch changed too, or deleted, are not.

Known blind spots: De Morgan rewrites and partial negations of chained comparisons are not
inversions; a silencing return under an ``if`` with another test (a flag), or in a handler that
only changed its body, is not reported (a ``raise`` that became a ``return`` is a
``guard_deleted``); siblings are looked for in one block only, and a parallel that differs in a
constant is no sibling.

Functions are given as source text at column 0 (``source_edit.function_source``), each exactly
one function definition (a method, decorated or not, is fine). ``first_line`` is the file line of
the original text's first line; a finding's ``line`` is a file line: of the patched text for what
the patch added or changed (the patch starts at the same line), of the original for what it
deleted. Text that does not parse, or is not one function, raises ``InvalidReplacementError``.
"""

from __future__ import annotations

import ast
import difflib
import warnings
from collections import Counter
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import Field, field_validator

from equisa_core.common.loop import Frozen
from equisa_core.errors import InvalidReplacementError

__all__ = [
    "MIN_SIBLING_NODES",
    "PATTERNS",
    "PatternFinding",
    "patch_patterns",
]

PATTERNS = (
    "broad_except_added",
    "silencing_return_added",
    "guard_deleted",
    "condition_inverted",
    "sibling_left_unchanged",
)
#: The smallest expression (in expression nodes) whose parallels ``sibling_left_unchanged`` compares.
MIN_SIBLING_NODES = 5

_FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
_Arc = tuple[int, int]
_T = TypeVar("_T")
_MAX_SHOWN = 60


class PatternFinding(Frozen):
    """One shape of a wrong patch, found in a patch."""

    pattern: str = Field(description="One of PATTERNS.")
    line: int = Field(description="File line: of the patched text, or of the original for a deletion.")
    detail: str = Field(description="What was found, e.g. 'a new `except Exception` handler'.")

    @field_validator("pattern")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in PATTERNS:
            raise ValueError(f"unknown pattern {value!r}; known: {', '.join(PATTERNS)}")
        return value


# --- the two functions and what changed between them --------------------------------------------


def _load(text: str, what: str) -> _FunctionNode:
    try:
        with warnings.catch_warnings(action="ignore"):
            tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:
        raise InvalidReplacementError(f"the {what} function does not parse: {exc}") from exc
    if len(tree.body) != 1 or not isinstance(tree.body[0], _FunctionNode):
        kinds = ", ".join(type(s).__name__ for s in tree.body[:5]) or "nothing"
        raise InvalidReplacementError(
            f"the {what} function must be exactly one function definition; it has {kinds}"
        )
    return tree.body[0]


def _dump(node: ast.AST) -> str:
    return ast.dump(node)


def _shown(node: ast.AST) -> str:
    text = ast.unparse(node).replace("\n", " ")
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def _parents(root: ast.AST) -> dict[int, ast.AST]:
    """Each node's parent, by ``id`` of the child."""
    return {id(child): node for node in ast.walk(root) for child in ast.iter_child_nodes(node)}


def _scalars(node: ast.AST) -> tuple[object, ...]:
    """The fields of ``node`` that are not nodes: names, operators' texts, constants' values."""
    out: list[object] = []
    for name in node._fields:
        value = getattr(node, name)
        if isinstance(value, list) and not any(isinstance(v, ast.AST) for v in value):
            out.append((name, tuple(value)))
        elif not isinstance(value, ast.AST | list) and value is not None:
            out.append((name, type(value).__name__, repr(value)))
    return tuple(out)


_Change = tuple[ast.AST | None, ast.AST | None]


@dataclass
class _Diff:
    """The smallest differing pairs of two trees walked in step (``changes``), and the patched
    nodes that have a counterpart of the same type in the original (``kept``: the patched node's
    ``id`` -> the original node's ``id``).

    A node whose type or own values differ is one change; a list of statements is aligned by
    ``difflib`` (a statement only in one tree is a change with None on the other side); another
    list whose length changed is a change of its owner.
    """

    changes: list[_Change] = field(default_factory=list)
    kept: dict[int, int] = field(default_factory=dict)

    def walk(self, o: ast.AST, p: ast.AST) -> None:
        if type(o) is not type(p) or _scalars(o) != _scalars(p):
            self.changes.append((o, p))
            return
        self.kept[id(p)] = id(o)
        for name in o._fields:
            a, b = getattr(o, name), getattr(p, name)
            if isinstance(a, list) and isinstance(b, list):
                self.lists(o, p, a, b)
            elif isinstance(a, ast.AST) and isinstance(b, ast.AST):
                self.walk(a, b)
            elif isinstance(a, ast.AST) or isinstance(b, ast.AST):
                self.changes.append((o, p))
                return

    def lists(self, o: ast.AST, p: ast.AST, a: list[Any], b: list[Any]) -> None:
        if not all(isinstance(x, ast.stmt) for x in (*a, *b)):
            if len(a) != len(b):
                self.changes.append((o, p))
            else:
                for x, y in zip(a, b, strict=True):
                    if isinstance(x, ast.AST) and isinstance(y, ast.AST):
                        self.walk(x, y)
            return
        matcher = difflib.SequenceMatcher(None, [_dump(x) for x in a], [_dump(y) for y in b], autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                for x, y in zip(a[i1:i2], b[j1:j2], strict=True):
                    self.kept.update((id(m), id(n)) for n, m in zip(ast.walk(x), ast.walk(y), strict=True))
                continue
            paired = min(i2 - i1, j2 - j1)
            for k in range(paired):
                self.walk(a[i1 + k], b[j1 + k])
            self.changes.extend((x, None) for x in a[i1 + paired : i2])
            self.changes.extend((None, y) for y in b[j1 + paired : j2])


@dataclass
class _Patch:
    """The original and patched function, their parents, and what changed between them."""

    original: _FunctionNode
    patched: _FunctionNode
    first_line: int
    arcs: frozenset[_Arc] | None
    parent_o: dict[int, ast.AST] = field(init=False)
    parent_p: dict[int, ast.AST] = field(init=False)
    changes: list[_Change] = field(init=False)
    kept: dict[int, int] = field(init=False)

    def __post_init__(self) -> None:
        self.parent_o = _parents(self.original)
        self.parent_p = _parents(self.patched)
        diff = _Diff()
        diff.walk(self.original, self.patched)
        self.changes, self.kept = diff.changes, diff.kept

    def line(self, node: ast.AST) -> int:
        """The file line of a node of either text."""
        return self.first_line + int(getattr(node, "lineno", 1)) - 1

    def finding(self, pattern: str, node: ast.AST, detail: str) -> PatternFinding:
        return PatternFinding(pattern=pattern, line=self.line(node), detail=detail)


def _unmatched(olds: Sequence[_T], news: Sequence[_T], keys: Sequence[Callable[[_T], Hashable]]) -> list[_T]:
    """The ``news`` left when each of the ``olds`` claims one equal new, key by key (the first key
    first: exact matches are claimed before looser ones)."""
    left_old, left_new = list(olds), list(news)
    for key in keys:
        pool = Counter(key(item) for item in left_old)
        kept_new, claimed = [], Counter[Hashable]()
        for item in left_new:
            k = key(item)
            if pool[k] > 0:
                pool[k] -= 1
                claimed[k] += 1
            else:
                kept_new.append(item)
        kept_old = []
        for item in left_old:
            k = key(item)
            if claimed[k] > 0:
                claimed[k] -= 1
            else:
                kept_old.append(item)
        left_old, left_new = kept_old, kept_new
    return left_new


def _nodes(fn: _FunctionNode, kind: type[_T]) -> list[_T]:
    """The nodes of one type in a function, in source order."""
    found = [n for n in ast.walk(fn) if isinstance(n, kind)]
    return sorted(found, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))


# --- broad_except_added ---------------------------------------------------------------------------

_BROAD = frozenset({"Exception", "BaseException"})


def _broad_kind(handler: ast.ExceptHandler) -> str | None:
    """``except:`` -> "bare", ``except (ValueError, Exception)`` -> "Exception", else None."""
    if handler.type is None:
        return "bare"
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    for name in names:
        spelt = name.id if isinstance(name, ast.Name) else getattr(name, "attr", "")
        if spelt in _BROAD:
            return spelt
    return None


def _handler_text(handler: ast.ExceptHandler) -> str:
    return f"`except {_shown(handler.type)}`" if handler.type else "`except:`"


def _broad_excepts_added(patch: _Patch) -> list[PatternFinding]:
    """Broad handlers of the patch beyond the original's, counted by kind (exact copies claimed first)."""

    def broad(fn: _FunctionNode) -> list[ast.ExceptHandler]:
        return [h for h in _nodes(fn, ast.ExceptHandler) if _broad_kind(h) is not None]

    added = _unmatched(broad(patch.original), broad(patch.patched), (_dump, _broad_kind))
    return [patch.finding("broad_except_added", h, f"a new {_handler_text(h)} handler") for h in added]


# --- silencing_return_added -----------------------------------------------------------------------

_EMPTY_CALLS = frozenset({"list", "dict", "tuple", "set", "frozenset", "str", "bytes"})
_TYPE_CHECKS = frozenset({"isinstance", "issubclass", "hasattr", "callable"})


def _silent_value(node: ast.Return) -> str | None:
    """What a return gives back when it gives nothing computed: None, a constant, an empty literal."""
    value = node.value
    if value is None:
        return "nothing"
    if isinstance(value, ast.Constant):
        return repr(value.value)
    if isinstance(value, ast.List | ast.Tuple | ast.Set) and not value.elts:
        return _shown(value)
    if isinstance(value, ast.Dict) and not value.keys:
        return "{}"
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in _EMPTY_CALLS:
        return _shown(value) if not value.args and not value.keywords else None
    return None


def _compare_check(node: ast.Compare) -> str | None:
    operands = [node.left, *node.comparators]
    if any(isinstance(x, ast.Constant) and x.value is None for x in operands):
        return "a None check"
    if any(isinstance(x, ast.Call) and isinstance(x.func, ast.Name) and x.func.id == "len" for x in operands):
        return "a length check"
    if any(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
        return "a membership check"
    if any(isinstance(x, ast.Constant) and x.value == 0 and not isinstance(x.value, bool) for x in operands):
        return "a zero check"
    return None


def _guard_check(test: ast.expr) -> str | None:
    """What a test checks when it guards a failure: None, emptiness, length, type, membership, zero."""
    if isinstance(test, ast.BoolOp):
        return next((c for v in test.values if (c := _guard_check(v))), None)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        if isinstance(test.operand, ast.Name | ast.Attribute | ast.Subscript | ast.Call):
            inner = _guard_check(test.operand)
            return inner or "an emptiness check"
        return _guard_check(test.operand)
    if isinstance(test, ast.Compare):
        return _compare_check(test)
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id in _TYPE_CHECKS:
        return f"a {test.func.id} check"
    return None


def _returns_in(statements: Iterable[ast.stmt]) -> Iterator[ast.Return]:
    """The returns in a block, nested definitions left out."""
    for stmt in statements:
        if isinstance(stmt, ast.Return):
            yield stmt
        elif not isinstance(stmt, _FunctionNode | ast.ClassDef):
            for name in ("body", "orelse", "finalbody", "handlers", "cases"):
                yield from _returns_in(getattr(stmt, name, []))


def _test_key(node: ast.If) -> str:
    return _dump(node.test)


def _silencing_returns_added(patch: _Patch) -> list[PatternFinding]:
    """Constant returns inside a handler or a guarding ``if`` that the original did not have."""

    def type_key(h: ast.ExceptHandler) -> str:
        return _dump(h.type) if h.type else "bare"

    handlers = _unmatched(
        _nodes(patch.original, ast.ExceptHandler), _nodes(patch.patched, ast.ExceptHandler), (_dump, type_key)
    )
    blocks: list[tuple[list[ast.stmt], str]] = [
        (h.body, f"a new {_handler_text(h)} handler") for h in handlers
    ]
    for node in _unmatched(_nodes(patch.original, ast.If), _nodes(patch.patched, ast.If), (_dump, _test_key)):
        check = _guard_check(node.test)
        if check and id(node) not in patch.kept:
            blocks.append(([*node.body, *node.orelse], f"a new `if {_shown(node.test)}` ({check})"))
    found = []
    for body, where in blocks:
        for ret in _returns_in(body):
            value = _silent_value(ret)
            if value is not None:
                what = "returns nothing" if value == "nothing" else f"returns {value}"
                found.append(patch.finding("silencing_return_added", ret, f"{what} under {where}"))
    return found


# --- guard_deleted --------------------------------------------------------------------------------


def _raised_name(node: ast.Raise) -> str:
    exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
    if exc is None:
        return "re-raise"
    return exc.id if isinstance(exc, ast.Name) else exc.attr if isinstance(exc, ast.Attribute) else _dump(exc)


def _is_guard(node: ast.If) -> bool:
    return bool(node.body) and isinstance(node.body[-1], ast.Raise | ast.Return)


def _guard_test_key(node: ast.stmt) -> Hashable:
    """A guard's kind and test; an ``if``'s also whether it raises or returns."""
    if isinstance(node, ast.If):
        return ("if", _dump(node.test), type(node.body[-1]).__name__)
    if isinstance(node, ast.Assert):
        return ("assert", _dump(node.test))
    return ("raise", _raised_name(node)) if isinstance(node, ast.Raise) else ("other", id(node))


def _guard_end_key(node: ast.stmt) -> Hashable:
    """A guard's kind and ending: an ``if``'s last statement, an assert's message."""
    if isinstance(node, ast.If):
        return ("if-end", _dump(node.body[-1]))
    if isinstance(node, ast.Assert) and node.msg is not None:
        return ("assert-msg", _dump(node.msg))
    return ("unique", id(node))


def _guards(fn: _FunctionNode) -> list[ast.stmt]:
    return [
        n
        for n in _nodes(fn, ast.stmt)
        if isinstance(n, ast.Raise | ast.Assert) or (isinstance(n, ast.If) and _is_guard(n))
    ]


def _guard_text(node: ast.stmt) -> str:
    if isinstance(node, ast.If):
        return f"`if {_shown(node.test)}: ... {_shown(node.body[-1])}`"
    return f"`{_shown(node)}`"


def _guards_deleted(patch: _Patch) -> list[PatternFinding]:
    """The original's raises, asserts and raising/returning ``if``s that the patch lost."""

    def in_step(node: ast.stmt) -> Hashable:
        """The original node (its ``id``) that a patched one was walked in step with, and the
        kind of its ending: the same check edited in place, still raising or returning."""
        ending = type(node.body[-1]).__name__ if isinstance(node, ast.If) else type(node).__name__
        return (patch.kept.get(id(node), id(node)), ending)

    keys = (_dump, _guard_test_key, _guard_end_key, in_step)
    lost = _unmatched(_guards(patch.patched), _guards(patch.original), keys)
    lost_ifs = [n for n in lost if isinstance(n, ast.If)]
    found = []
    for node in lost:
        if isinstance(node, ast.Raise) and any(node in ast.walk(i) for i in lost_ifs):
            continue
        found.append(patch.finding("guard_deleted", node, f"the check {_guard_text(node)} is gone"))
    return found


# --- condition_inverted ---------------------------------------------------------------------------

_COMPLEMENT: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.LtE: ast.Gt, ast.Gt: ast.LtE,
    ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In,
}  # fmt: skip
_MIRROR: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.Eq, ast.NotEq: ast.NotEq, ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE,
}  # fmt: skip


def _same(a: ast.AST, b: ast.AST) -> bool:
    return _dump(a) == _dump(b)


def _is_not(node: ast.AST) -> bool:
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)


def _complemented(a: ast.Compare, b: ast.Compare) -> bool:
    """``b`` is ``not a`` by a complemented operator, operands in place or swapped."""
    if len(a.ops) != 1 or len(b.ops) != 1:
        return False
    complement = _COMPLEMENT[type(a.ops[0])]
    if _same(a.left, b.left) and _same(a.comparators[0], b.comparators[0]):
        return type(b.ops[0]) is complement
    if _same(a.left, b.comparators[0]) and _same(a.comparators[0], b.left):
        return complement in _MIRROR and type(b.ops[0]) is _MIRROR[complement]
    return False


def _negates(a: ast.AST, b: ast.AST) -> bool:
    """``b`` is the negation of ``a``: ``not``-wrapped, unwrapped, or a complemented comparison."""
    if isinstance(b, ast.UnaryOp) and _is_not(b) and _same(b.operand, a):
        return True
    if isinstance(a, ast.UnaryOp) and _is_not(a) and _same(a.operand, b):
        return True
    return isinstance(a, ast.Compare) and isinstance(b, ast.Compare) and _complemented(a, b)


def _inverted_pair(patch: _Patch, o: ast.AST, p: ast.AST) -> tuple[ast.expr, ast.expr] | None:
    """Going up from a change in step in both trees: the first pair of expressions where the
    patched one negates the original one."""
    while not isinstance(o, ast.stmt | ast.ExceptHandler | ast.arguments):
        if isinstance(o, ast.expr) and isinstance(p, ast.expr) and _negates(o, p):
            return o, p
        up_o, up_p = patch.parent_o.get(id(o)), patch.parent_p.get(id(p))
        if up_o is None or up_p is None:
            return None
        o, p = up_o, up_p
    return None


def _site(parents: Mapping[int, ast.AST], node: ast.expr) -> tuple[ast.AST | None, ast.expr]:
    """The statement or expression whose test holds ``node`` (through ``and``/``or``/``not``),
    and that test; (None, node) when it is no test."""
    test = node
    while True:
        up = parents.get(id(test))
        if isinstance(up, ast.If | ast.While | ast.IfExp | ast.Assert) and up.test is test:
            return up, test
        if isinstance(up, ast.comprehension) and any(c is test for c in up.ifs):
            return up, test
        if not (isinstance(up, ast.BoolOp) or (up is not None and _is_not(up))):
            return None, node
        assert isinstance(up, ast.expr)
        test = up


def _branches_swapped(o_site: ast.AST | None, p_site: ast.AST | None) -> bool:
    """The two branches traded places too (an equivalent rewrite)."""
    if isinstance(o_site, ast.If) and isinstance(p_site, ast.If) and o_site.orelse:
        return (
            all(map(_same, o_site.body, p_site.orelse))
            and all(map(_same, o_site.orelse, p_site.body))
            and len(o_site.body) == len(p_site.orelse)
            and len(o_site.orelse) == len(p_site.body)
        )
    if isinstance(o_site, ast.IfExp) and isinstance(p_site, ast.IfExp):
        return _same(o_site.body, p_site.orelse) and _same(o_site.orelse, p_site.body)
    return False


def _shown_both_ways(patch: _Patch, site: ast.AST | None, test: ast.expr) -> bool:
    """Arcs from the test's lines into the body's first line and to another line were both seen
    (only an ``if``/``while`` whose body starts below its test can show it)."""
    if patch.arcs is None or not isinstance(site, ast.If | ast.While):
        return False
    lines = set(range(patch.line(site), patch.first_line + int(test.end_lineno or test.lineno)))
    true_line = patch.line(site.body[0])
    if true_line in lines:
        return False
    exits = {dst for src, dst in patch.arcs if src in lines and dst not in lines}
    if site.orelse:
        return true_line in exits and patch.line(site.orelse[0]) in exits
    return true_line in exits and any(dst != true_line for dst in exits)


def _site_name(site: ast.AST | None) -> str:
    names = {ast.If: "an if test", ast.While: "a while test", ast.IfExp: "a ternary's test",
             ast.Assert: "an assert", ast.comprehension: "a comprehension's condition"}  # fmt: skip
    return names.get(type(site), "a boolean expression") if site is not None else "a boolean expression"


def _conditions_inverted(patch: _Patch) -> list[PatternFinding]:
    """Tests the patch negated, unless the arcs show the suite took the original both ways."""
    found, seen = [], set()
    for o, p in patch.changes:
        pair = _inverted_pair(patch, o, p) if o is not None and p is not None else None
        if pair is None or id(pair[0]) in seen:
            continue
        seen.add(id(pair[0]))
        old, new = pair
        o_site, test = _site(patch.parent_o, old)
        p_site, _ = _site(patch.parent_p, new)
        if _branches_swapped(o_site, p_site) or _shown_both_ways(patch, o_site, test):
            continue
        why = "no arcs recorded" if patch.arcs is None else "the suite did not take it both ways"
        detail = f"`{_shown(old)}` became `{_shown(new)}` in {_site_name(o_site)} ({why})"
        found.append(patch.finding("condition_inverted", new, detail))
    return found


# --- sibling_left_unchanged -----------------------------------------------------------------------


def _shape(node: ast.AST) -> str:
    """The AST with names and attributes normalised; a called name or method keeps its name."""

    def norm(n: ast.AST, called: bool = False) -> str:
        if isinstance(n, ast.Name):
            return n.id if called else "_"
        if isinstance(n, ast.Attribute):
            return f"{norm(n.value)}.{n.attr if called else '_'}"
        if isinstance(n, ast.Call):
            args = [norm(a) for a in n.args] + [f"{k.arg}={norm(k.value)}" for k in n.keywords]
            return f"{norm(n.func, called=True)}({', '.join(args)})"
        if isinstance(n, ast.expr_context):
            return ""
        parts = [type(n).__name__, *map(repr, _scalars(n))]
        for name in n._fields:
            value = getattr(n, name)
            items = value if isinstance(value, list) else [value]
            parts += [norm(v) for v in items if isinstance(v, ast.AST)]
        return "<" + " ".join(parts) + ">"

    return norm(node)


def _size(node: ast.AST) -> int:
    return sum(isinstance(n, ast.expr) for n in ast.walk(node))


def _block_of(parents: Mapping[int, ast.AST], node: ast.AST) -> list[ast.stmt]:
    """The statements of the block that holds ``node``'s statement."""
    stmt = node
    while not isinstance(stmt, ast.stmt):
        stmt = parents[id(stmt)]
    owner = parents.get(id(stmt))
    for name in ("body", "orelse", "finalbody"):
        block = getattr(owner, name, None)
        if isinstance(block, list) and any(s is stmt for s in block):
            return block
    return [stmt]


def _ancestors(parents: Mapping[int, ast.AST], node: ast.AST) -> list[ast.AST]:
    out = []
    while (up := parents.get(id(node))) is not None:
        out.append(up)
        node = up
    return out


def _parallels(patch: _Patch, node: ast.expr) -> list[ast.expr]:
    """The other expressions of ``node``'s shape in its block, neither inside nor around it."""
    shape, inside = _shape(node), {id(n) for n in ast.walk(node)}
    around = {id(n) for n in _ancestors(patch.parent_o, node)}
    return [
        n
        for stmt in _block_of(patch.parent_o, node)
        for n in ast.walk(stmt)
        if isinstance(n, ast.expr) and id(n) not in inside and id(n) not in around and _shape(n) == shape
    ]


def _changed_group(patch: _Patch, changed: ast.AST) -> tuple[ast.expr, list[ast.expr]] | None:
    """The smallest expression around a change that has parallels, and the parallels."""
    node: ast.AST | None = changed
    climbs = (ast.expr, ast.operator, ast.cmpop, ast.boolop, ast.unaryop, ast.keyword, ast.comprehension)
    while isinstance(node, climbs):
        if (
            isinstance(node, ast.expr)
            and _size(node) >= MIN_SIBLING_NODES
            and (found := _parallels(patch, node))
        ):
            return node, found
        node = patch.parent_o.get(id(node))
    return None


def _siblings_left_unchanged(patch: _Patch) -> list[PatternFinding]:
    """A changed expression whose parallels (same shape, same block) the patch left as they were."""
    changed = {id(o) for o, _ in patch.changes if o is not None}

    def touched(node: ast.AST) -> bool:
        return any(id(n) in changed for n in ast.walk(node)) or any(
            id(n) in changed for n in _ancestors(patch.parent_o, node)
        )

    found, done = [], set()
    for o, _ in patch.changes:
        group = _changed_group(patch, o) if o is not None else None
        if group is None or id(group[0]) in done:
            continue
        done.add(id(group[0]))
        node, parallels = group
        left = [s for s in parallels if not touched(s)]
        if left:
            detail = (
                f"`{_shown(node)}` changed, but not its parallel{'s' if len(left) > 1 else ''} "
                + ", ".join(f"`{_shown(s)}` (line {patch.line(s)})" for s in left)
            )
            found.append(patch.finding("sibling_left_unchanged", node, detail))
    return found


# --- all of them ----------------------------------------------------------------------------------

_DETECTORS: tuple[tuple[str, Callable[[_Patch], list[PatternFinding]]], ...] = (
    ("broad_except_added", _broad_excepts_added),
    ("silencing_return_added", _silencing_returns_added),
    ("guard_deleted", _guards_deleted),
    ("condition_inverted", _conditions_inverted),
    ("sibling_left_unchanged", _siblings_left_unchanged),
)


def patch_patterns(
    original: str,
    patched: str,
    *,
    first_line: int = 1,
    arcs: Collection[tuple[int, int]] | None = None,
) -> tuple[PatternFinding, ...]:
    """Every pattern of a wrong patch found in ``original`` -> ``patched`` (see the module
    docstring), in ``PATTERNS`` order, then by line."""
    patch = _Patch(
        _load(original, "original"),
        _load(patched, "patched"),
        first_line,
        None if arcs is None else frozenset(arcs),
    )
    found: list[PatternFinding] = []
    for _name, detector in _DETECTORS:
        found += sorted(detector(patch), key=lambda f: f.line)
    return tuple(found)

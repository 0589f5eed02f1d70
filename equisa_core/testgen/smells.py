"""Deterministic test-smell detectors and the fixes that need no model (seed 000 §8).

Detected per test function or method (names as in tsDetect, the usual catalogue):

- ``assertion_roulette``: ROULETTE_MIN_ASSERTIONS or more assertions, none with a message: when
  one fails nobody knows which check it was (a single bare assert names itself in the traceback);
- ``empty_test``: no statement besides a docstring or ``pass``/``...``;
- ``sleepy_test``: a call of ``time.sleep``/``asyncio.sleep``/``sleep``;
- ``conditional_logic``: ``if``/``for``/``while``/``match`` in the test body (comprehensions and
  ``with pytest.raises`` are fine): a test that takes paths tests different things on each run;
- ``redundant_assertion``: an assertion that cannot fail: ``assert True``, ``assert x == x``,
  ``self.assertTrue(True)``, ``self.assertEqual(a, a)``, an ``assert`` on a non-empty literal.

``fix_smells`` applies the fixes that keep a test's intent without a model: empty tests and
redundant assertions are removed, sleeps are removed, and assertions of a roulette get a message
(the asserted expression, so a failure names its check). Conditional logic needs a rewrite (the
model in LLM mode); deterministically it is reported and the test kept.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["ROULETTE_MIN_ASSERTIONS", "SmellKind", "Smell", "detect_smells", "fix_smells"]

ROULETTE_MIN_ASSERTIONS = 4
SmellKind = Literal[
    "assertion_roulette", "empty_test", "sleepy_test", "conditional_logic", "redundant_assertion"
]
_SLEEPS = frozenset({"sleep"})
_UNITTEST_ASSERTS_WITH_MSG = {  # method -> index of the msg argument
    "assertTrue": 1,
    "assertFalse": 1,
    "assertIsNone": 1,
    "assertIsNotNone": 1,
    "assertEqual": 2,
    "assertNotEqual": 2,
    "assertIn": 2,
    "assertNotIn": 2,
    "assertIs": 2,
    "assertIsNot": 2,
    "assertGreater": 2,
    "assertLess": 2,
    "assertGreaterEqual": 2,
    "assertLessEqual": 2,
    "assertAlmostEqual": 3,
    "assertIsInstance": 2,
    "assertCountEqual": 2,
}


class Smell(BaseModel):
    """One smell in one test."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    test: str
    kind: SmellKind
    line: int
    detail: str


def _tests(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name.startswith("test"):
                    yield f"{node.name}.{item.name}", item


def _own_nodes(function: ast.AST) -> Iterator[ast.stmt | ast.expr]:
    """Statements and expressions of the test's body (the nodes a smell is reported at, each with a
    line), not of functions or classes defined inside it."""
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.stmt | ast.expr):
            yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            stack.extend(ast.iter_child_nodes(node))


def _assertion(node: ast.AST) -> tuple[bool, bool] | None:
    """(has a message, cannot fail) of an assertion node, None for other nodes."""
    if isinstance(node, ast.Assert):
        return _assert_statement(node)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr[:6] == "assert":
        return _assert_call(node, node.func.attr)
    return None


def _assert_statement(node: ast.Assert) -> tuple[bool, bool]:
    """(has a message, cannot fail) of an ``assert`` statement: a true constant, a non-empty literal
    container or ``x == x`` cannot fail."""
    test = node.test
    trivial = (
        isinstance(test, ast.Constant)
        and bool(test.value)
        or isinstance(test, ast.List | ast.Tuple | ast.Set | ast.Dict)
        and bool(getattr(test, "elts", None) or getattr(test, "keys", None))
    )
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq | ast.Is):
        trivial = trivial or ast.dump(test.left) == ast.dump(test.comparators[0])
    return node.msg is not None, trivial


def _assert_call(node: ast.Call, name: str) -> tuple[bool, bool]:
    """(has a message, cannot fail) of a unittest ``self.assert*`` call."""
    index = _UNITTEST_ASSERTS_WITH_MSG.get(name)
    has_msg = any(k.arg == "msg" for k in node.keywords) or (index is not None and len(node.args) > index)
    trivial = False
    if name == "assertTrue" and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value:
        trivial = True
    if name in ("assertEqual", "assertIs") and len(node.args) >= 2:
        trivial = ast.dump(node.args[0]) == ast.dump(node.args[1])
    return has_msg, trivial


def _is_sleep(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id in _SLEEPS) or (
        isinstance(func, ast.Attribute) and func.attr in _SLEEPS
    )


def _is_empty(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    body = list(function.body)
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    return all(
        isinstance(s, ast.Pass)
        or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and s.value.value is Ellipsis)
        for s in body
    )


def detect_smells(source: str) -> list[Smell]:
    """Every smell of every test in ``source`` (module docstring); [] when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    smells: list[Smell] = []
    for name, function in _tests(tree):
        if _is_empty(function):
            smells.append(
                Smell(test=name, kind="empty_test", line=function.lineno, detail="the test does nothing")
            )
            continue
        bare = 0
        with_message = 0
        for node in _own_nodes(function):
            found = _assertion(node)
            if found is not None:
                has_msg, trivial = found
                bare += not has_msg
                with_message += has_msg
                if trivial:
                    smells.append(
                        Smell(
                            test=name,
                            kind="redundant_assertion",
                            line=node.lineno,
                            detail=f"cannot fail: {ast.unparse(node)[:80]}",
                        )
                    )
            if _is_sleep(node):
                smells.append(
                    Smell(
                        test=name,
                        kind="sleepy_test",
                        line=node.lineno,
                        detail=ast.unparse(node)[:80],
                    )
                )
            if isinstance(node, ast.If | ast.For | ast.AsyncFor | ast.While | ast.Match):
                smells.append(
                    Smell(
                        test=name,
                        kind="conditional_logic",
                        line=node.lineno,
                        detail=f"{type(node).__name__.lower()} in a test",
                    )
                )
        if bare >= ROULETTE_MIN_ASSERTIONS and with_message == 0:
            smells.append(
                Smell(
                    test=name,
                    kind="assertion_roulette",
                    line=function.lineno,
                    detail=f"{bare} assertions without a message",
                )
            )
    return sorted(smells, key=lambda s: (s.line, s.kind))


class _Fixer(ast.NodeTransformer):
    def __init__(self, roulette: set[str], current: list[str]) -> None:
        self.roulette = roulette
        self.current = current

    def visit_Assert(self, node: ast.Assert) -> ast.AST | None:
        found = _assertion(node)
        if found is not None and found[1]:
            return None  # a redundant assertion
        if self.current and self.current[-1] in self.roulette and node.msg is None:
            node.msg = ast.Constant(value=ast.unparse(node.test)[:120])
        return node

    def visit_Expr(self, node: ast.Expr) -> ast.AST | None:
        if _is_sleep(node.value):
            return None
        found = _assertion(node.value)
        if found is not None and found[1]:
            return None
        return self.generic_visit(node)


def fix_smells(source: str, smells: list[Smell]) -> tuple[str, list[str]]:
    """``source`` with the deterministic fixes applied (module docstring) and what was done.

    Statements left empty get ``pass``; the result parses. Unchanged when there is nothing to fix.
    """
    fixable = [s for s in smells if s.kind != "conditional_logic"]
    if not fixable:
        return source, []
    tree = ast.parse(source)
    _drop_tests(tree, {s.test for s in fixable if s.kind == "empty_test"})
    roulette = {s.test for s in fixable if s.kind == "assertion_roulette"}
    for owner, function in list(_tests(tree)):
        _fix_body(function, _Fixer(roulette, [owner]))
    fixed = ast.unparse(ast.fix_missing_locations(tree)) + "\n"
    ast.parse(fixed)
    return fixed, [f"{s.test}: {s.kind.replace('_', ' ')} fixed" for s in fixable]


def _drop_tests(tree: ast.Module, names: set[str]) -> None:
    """Remove the test functions named in ``names`` ('test_x' or 'Class.test_x'); a class left empty
    keeps a ``pass``."""

    def keep(owner: str | None, node: ast.stmt) -> bool:
        name = getattr(node, "name", "")
        qualified = f"{owner}.{name}" if owner else name
        return not (isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and qualified in names)

    tree.body = [n for n in tree.body if keep(None, n)]
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            node.body = [n for n in node.body if keep(node.name, n)] or [ast.Pass()]


def _fix_body(function: ast.FunctionDef | ast.AsyncFunctionDef, fixer: _Fixer) -> None:
    """The test's statements through ``fixer``; a block (the test's own included) left empty gets ``pass``."""
    function.body = [s for s in (fixer.visit(s) for s in function.body) if s is not None] or [ast.Pass()]
    for node in ast.walk(function):
        block = getattr(node, "body", None)
        if isinstance(block, list) and node is not function and not block:
            setattr(node, "body", [ast.Pass()])  # noqa: B010 (ast.AST declares no body for mypy)

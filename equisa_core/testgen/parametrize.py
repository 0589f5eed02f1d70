"""Tests of one shape folded into one ``pytest.mark.parametrize`` test (issue 22: "parametrize where
many cases share one shape").

Generated modules hold runs of tests that differ only in their literals: a boundary search's
``test_boundary_0_merge_returns_a_list``, ``..._2``, ``..._3``. ``parametrize_module`` folds each
such run into one test when

- the tests are of the same kind and member (their names equal up to the behaviour the generators
  name: ``test_boundary_0_merge`` in ``test_boundary_0_merge_returns_a_list_2``),
- their bodies are the same once every literal (a constant, a literal container, a negative
  number) is taken out, and
- there are at least ``MIN_CASES`` of them.

The folded test is named by what the names share (``test_boundary_0_merge_returns_a_list``, or
``test_carved_len_returns`` for ``..._returns_1``, ``_2``, ``_3``). The literals that differ become
the parameters (``expected`` where a test compares a result with
it, ``arg_1``, ``arg_2``, ... elsewhere), the others stay in the body. The folded test keeps the
first test's leading comments. A test with decorators or parameters of its own is left alone, and
so is anything that is not a module-level ``def test_...``. The text goes through ``ast.unparse``,
so the module should be formatted afterwards (``tasks/testgen/analysis.py``'s ``tidy_test_module`` does).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import TypeGuard

__all__ = ["MIN_CASES", "parametrize_module"]

#: Tests of one shape needed to fold them.
MIN_CASES = 3
#: At most this many differing literals per folded test: beyond, a table of cases reads worse.
MAX_PARAMETERS = 5

_NUMBERED = re.compile(r"_\d+$")
_BEHAVIOUR = re.compile(r"_(?:returns|raises|succeeds)(?:_|$)")


@dataclass
class _Case:
    """One test: its definition, the literals taken out of its body, the body's shape."""

    node: ast.FunctionDef
    literals: list[ast.expr]
    shape: str
    comments: list[str]


def _member_part(name: str) -> str:
    """A generated test's name up to its behaviour (``_returns...``, ``_raises...``, ``_succeeds``):
    its kind and member, ``test_boundary_0_merge``."""
    return _BEHAVIOUR.split(_NUMBERED.sub("", name), maxsplit=1)[0]


def _common_name(member: str, names: list[str]) -> str:
    """The folded test's name: what the names share, whole words, at least ``member``."""
    shared = names[0]
    for name in names[1:]:
        while not name.startswith(shared):
            shared = shared[:-1]
    shared = shared if shared in names or shared.endswith("_") else shared.rsplit("_", 1)[0]
    shared = _NUMBERED.sub("", shared.rstrip("_"))
    return shared if len(shared) > len(member) else member


def _is_literal(node: ast.AST) -> TypeGuard[ast.expr]:
    if not isinstance(node, ast.expr) or isinstance(node, ast.Name):
        return False
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


class _TakeLiterals(ast.NodeTransformer):
    """Replaces each maximal literal with a placeholder name, in order, keeping the literals."""

    def __init__(self) -> None:
        self.literals: list[ast.expr] = []

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if _is_literal(node) and not (isinstance(node, ast.Constant) and node.value is None):
            self.literals.append(node)
            return ast.Name(id=f"__literal_{len(self.literals) - 1}", ctx=ast.Load())
        return super().generic_visit(node)


def _case(node: ast.FunctionDef, source_lines: list[str]) -> _Case | None:
    if node.decorator_list or node.args.args or node.args.kwonlyargs or node.args.vararg or node.args.kwarg:
        return None
    body = ast.Module(body=[ast.parse(ast.unparse(s)).body[0] for s in node.body], type_ignores=[])
    taker = _TakeLiterals()
    shaped = taker.visit(body)
    comments = [
        line.strip()
        for line in source_lines[node.lineno - 1 : (node.end_lineno or node.lineno)]
        if line.strip().startswith("#")
    ]
    return _Case(node, taker.literals, ast.unparse(shaped), comments)


def _role(shape: ast.Module, index: int) -> str:
    """``expected`` when the placeholder is what an assertion compares a result with, else ``arg``."""
    name = f"__literal_{index}"

    def named(nodes: list[ast.expr]) -> bool:
        return any(isinstance(n, ast.Name) and n.id == name for n in nodes)

    for node in ast.walk(shape):
        if isinstance(node, ast.Compare) and named(node.comparators):
            return "expected"
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "approx"
            and named(node.args)
        ):
            return "expected"
    return "arg"


def _parameter_names(roles: list[str]) -> list[str]:
    """The parameters' names, one per role: ``expected`` alone when one literal is, else numbered."""
    names: list[str] = []
    for role in roles:
        base = "expected" if role == "expected" and roles.count("expected") == 1 else f"{role}_"
        taken = sum(1 for n in names if n.startswith(base))
        names.append(base if base == "expected" else f"{base}{taken + 1}")
    return names


def _filled(shape: ast.Module, rename: dict[str, str], fixed: dict[str, ast.expr]) -> ast.AST:
    """``shape`` with its placeholders renamed to parameters (``rename``) or given back (``fixed``)."""

    class _Fill(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id in rename:
                return ast.Name(id=rename[node.id], ctx=ast.Load())
            return fixed.get(node.id, node)

    filled: ast.AST = _Fill().visit(shape)
    return filled


def _parametrize_header(names: list[str], texts: list[list[str]], varying: list[int]) -> str:
    """The ``@pytest.mark.parametrize(...)`` line: the parameters' names and one row per case."""
    if len(names) == 1:
        rows = ", ".join(t[varying[0]] for t in texts)
        return f"@pytest.mark.parametrize({names[0]!r}, [{rows}])"
    rows = ", ".join("(" + ", ".join(t[i] for i in varying) + ")" for t in texts)
    return f"@pytest.mark.parametrize(({', '.join(repr(n) for n in names)}), [{rows}])"


def _folded(name: str, cases: list[_Case]) -> str | None:
    """The parametrized test of ``cases`` (one shape), or None when too many literals differ."""
    count = len(cases[0].literals)
    texts = [[ast.unparse(c.literals[i]) for i in range(count)] for c in cases]
    varying = [i for i in range(count) if len({t[i] for t in texts}) > 1]
    if not varying or len(varying) > MAX_PARAMETERS:
        return None
    shape = ast.parse(cases[0].shape)
    names = _parameter_names([_role(shape, i) for i in varying])
    rename = {f"__literal_{i}": n for i, n in zip(varying, names, strict=True)}
    fixed = {f"__literal_{i}": cases[0].literals[i] for i in range(count) if i not in varying}
    body = _filled(shape, rename, fixed)
    header = _parametrize_header(names, texts, varying)
    lines = "".join(f"    {line}\n" for line in ast.unparse(body).splitlines())
    comments = "".join(f"{c}\n" for c in cases[0].comments[:1])
    return f"{comments}{header}\ndef {name}({', '.join(names)}):\n{lines}"


def _groups(tree: ast.Module, lines: list[str]) -> dict[tuple[str, str], list[_Case]]:
    """The module's tests with literals, grouped by (kind and member, shape of the body)."""
    groups: dict[tuple[str, str], list[_Case]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            case = _case(node, lines)
            if case is not None and case.literals:
                groups.setdefault((_member_part(node.name), case.shape), []).append(case)
    return groups


def _replacements(tree: ast.Module, groups: dict[tuple[str, str], list[_Case]]) -> dict[int, str | None]:
    """First line of a test -> the fold that replaces it, or None: the test is dropped (folded)."""
    replaced: dict[int, str | None] = {}
    folding = [
        (m, c)
        for (m, _), c in groups.items()
        if len(c) >= MIN_CASES and len({len(x.literals) for x in c}) == 1
    ]
    folded_tests = {c.node.name for _, cases in folding for c in cases}
    taken = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name not in folded_tests}
    for member, cases in folding:
        name = _common_name(member, [c.node.name for c in cases])
        unique, number = name, 2
        while unique in taken:  # two shapes of one member, or a test left as it was, have that name
            unique, number = f"{name}_{number}", number + 1
        folded = _folded(unique, cases)
        if folded is None:
            continue
        taken.add(unique)
        first, *rest = sorted(cases, key=lambda c: c.node.lineno)
        replaced[first.node.lineno] = folded
        replaced.update({c.node.lineno: None for c in rest})
    return replaced


def _rewritten(tree: ast.Module, lines: list[str], replaced: dict[int, str | None]) -> str:
    """The module's lines with each replaced test swapped for its fold (or dropped)."""
    out: list[str] = []
    skip_until = 0
    spans = {n.lineno: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    for number, line in enumerate(lines, start=1):
        if number <= skip_until:
            continue
        test = spans.get(number)
        if test is not None and number in replaced:
            skip_until = test.end_lineno or number
            # The test's own leading comments go with it (the fold carries the first one's).
            while out and out[-1].lstrip().startswith("#"):
                out.pop()
            fold = replaced[number]
            if fold is not None:
                out.append(fold.rstrip("\n"))
            continue
        out.append(line)
    return "\n".join(out) + "\n"


def parametrize_module(text: str) -> str:
    """``text`` with each run of same-behaviour, same-shape tests folded into one parametrized test
    (see the module docstring); ``text`` itself when nothing folds or it does not parse."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    lines = text.splitlines()
    replaced = _replacements(tree, _groups(tree, lines))
    if not replaced:
        return text
    result = _rewritten(tree, lines, replaced)
    if "import pytest" not in result.split("\ndef ", 1)[0]:
        result = _with_pytest_import(result)
    return result


def _with_pytest_import(text: str) -> str:
    """``text`` with ``import pytest`` after its docstring."""
    tree = ast.parse(text)
    first = tree.body[0] if tree.body else None
    at = first.end_lineno if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) else 0
    lines = text.splitlines()
    return "\n".join([*lines[: at or 0], "import pytest", *lines[at or 0 :]]) + "\n"

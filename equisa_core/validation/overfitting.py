"""Deterministic anti-overfitting checks: literals copied from the failing tests, special-case branches.

A patch that makes the failing tests pass may only satisfy their exact data (seed 000, Problem 3):
it returns the value the test expects, or adds a branch for the test's input. Novel-input tests
catch such patches by running them; these two detectors catch the commonest shapes by reading
them, for free, before anything runs. Both compare the patched function with the original one and
with the literals of the failing tests' sources; both are pure functions of those texts.

What the tests say (``expected_values``, ``input_values``) is read in
``equisa_core.validation.tested_values``; literal values are folded and compared in
``equisa_core.validation.literal_values``.

What counts as overfitting:

* Only what the patch adds. A literal whose value (compared by value on the AST, not as text:
  ``10``, ``10.0`` and ``Decimal("10.00")`` are one value) appears anywhere in the original
  function is never a finding. So ``x > 90`` -> ``x > 90 or x == 90`` (a spelled-out ``>=``) is
  clean, and so is any boundary moved between constants the original already had.
* Trivial values are never findings: None, True, False, ``""``, ``b""``, empty containers,
  containers of trivial values, and the integers -1, 0, 1 and 2 (floats and Decimals equal to
  them too). 2 is included because real fixes add it constantly and for reasons of their own
  (``round(x, 2)`` for cents, ``n // 2``, ``% 2``, ``** 2``, ``if n == 2: return True`` in a prime
  test) while ``len(...) == 2`` is among the commonest expectations; 3 and up are rare in both
  roles. ``TRIVIAL_VALUES`` is the default of every detector's ``trivial`` argument.
* copied_literal: an added literal whose value equals an expected value of a failing test, in a
  position where it becomes the result as it is: the value of a ``return``, an assignment, a
  ``yield`` or a walrus, looking through tuples, lists, sets, dict values, both branches of a
  ternary, ``and``/``or`` operands and the arguments of constructor calls (``return
  Money("10.00")``). A literal in arithmetic, a comparison, a subscript or an argument of an
  ordinary call (``round(x, 3)``, ``min(x, 100)``) is not copied: it does not become the result.
* special_case_branch: an added literal compared with a subject derived from the parameters (a
  parameter, an attribute or item of one, a call on one, or a local assigned from them, followed
  through assignments, loops and ``with``) by ``==``, ``!=``, ``is``, ``is not``, ``in`` or
  ``not in`` (containers: each element), or matched by a ``case`` of a ``match`` on such a
  subject, when the literal is an input or an expected value of a failing test. Every comparison
  counts, not only ``if``/``elif``/ternary tests: ``return a > b or a == Decimal("100.00")`` is a
  special case in a boolean expression. An ordering comparison (``<``, ``<=``, ``>``, ``>=``) with
  an added literal that equals a failing test's input is reported too, as a new boundary placed
  exactly on that input (a bound equal to an expected value is not: a clamp legitimately compares
  with the value it clamps to, ``if x > 255: x = MAX_BYTE``).

The detectors are evidence, not proof. A genuine fix that corrects a wrong constant to the very
value a test expects (``return 9`` -> ``return 10`` when the test asserts ``f() == 10``) is a
copied_literal by these rules; Validation should let novel-input tests decide such patches.

Functions are given as source text at column 0 (as ``source_edit.function_source`` returns them),
each exactly one function definition; finding lines are 1-based lines of the patched function's
text. Text that does not parse, or is not one function, raises ``InvalidReplacementError``; a test
source that does not parse raises it too.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.errors import InvalidReplacementError
from equisa_core.validation.literal_values import (
    NOT_LITERAL,
    FunctionNode,
    ValueKey,
    describe_parse_error,
    fold_literal,
    folded_elements,
    is_constructor,
    is_trivial,
    parse_quietly,
    source_excerpt,
    trivial_keys,
    value_key,
)
from equisa_core.validation.tested_values import literal_facts

__all__ = [
    "TRIVIAL_VALUES",
    "OverfittingFinding",
    "copied_literals",
    "special_case_branches",
    "overfitting_findings",
]

#: Values that legitimately appear everywhere; never a finding (see the module docstring).
#: A tuple, not a set: in a set ``True`` and ``1`` are one element, and ``value_key`` tells them apart.
TRIVIAL_VALUES: tuple[object, ...] = (None, True, False, "", b"", -1, 0, 1, 2)


class OverfittingFinding(BaseModel):
    """One sign that a patch fits the failing tests' data rather than the behaviour."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    check: Literal["copied_literal", "special_case_branch"]
    line: int = Field(ge=1, description="1-based line in the patched function's text.")
    detail: str = Field(description="What was found, e.g. 'returns 107.1, an expected value of test_x'.")


# --- the patched and the original function -------------------------------------------------------


def _load_function(text: str, what: str) -> FunctionNode:
    try:
        tree = parse_quietly(text)
    except (SyntaxError, ValueError) as exc:
        raise InvalidReplacementError(
            f"the {what} function does not parse: {describe_parse_error(exc)}"
        ) from exc
    if len(tree.body) != 1 or not isinstance(tree.body[0], FunctionNode):
        kinds = ", ".join(type(s).__name__ for s in tree.body[:5]) or "nothing"
        raise InvalidReplacementError(
            f"the {what} function must be exactly one function definition; it has {kinds}"
        )
    return tree.body[0]


def _docstring(node: FunctionNode | ast.ClassDef) -> ast.expr | None:
    first = node.body[0] if node.body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return first.value
    return None


_SKIPPED_FIELDS = frozenset({"annotation", "returns", "decorator_list", "type_comment", "type_params"})


def _code_nodes(fn: FunctionNode) -> Iterator[ast.AST]:
    """Every node of a function's code, in source order: no docstrings, annotations, decorators
    or signatures (of nested functions and lambdas either)."""
    docstrings = {
        id(doc)
        for node in ast.walk(fn)
        if isinstance(node, FunctionNode | ast.ClassDef) and (doc := _docstring(node)) is not None
    }
    stack: list[ast.AST] = list(reversed(fn.body))
    while stack:
        node = stack.pop()
        if id(node) in docstrings:
            continue
        yield node
        children: list[ast.AST] = []
        for name, value in ast.iter_fields(node):
            if name in _SKIPPED_FIELDS or (name == "args" and isinstance(node, FunctionNode | ast.Lambda)):
                continue
            if isinstance(value, ast.AST):
                children.append(value)
            elif isinstance(value, list):
                children.extend(item for item in value if isinstance(item, ast.AST))
        stack.extend(reversed(children))


def _present_keys(fn: FunctionNode) -> set[ValueKey]:
    """The keys of every literal in the original function (sub-literals and numeric strings too)."""
    keys: set[ValueKey] = set()
    defaults = [d for d in [*fn.args.defaults, *fn.args.kw_defaults] if d is not None]
    for node in itertools.chain(_code_nodes(fn), *(ast.walk(d) for d in defaults)):
        if not isinstance(node, ast.expr):
            continue
        value = fold_literal(node)
        if value is not NOT_LITERAL:
            keys.update(value_key(v) for v in folded_elements(value))
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            number = fold_literal(node, numeric_strings=True)
            keys.add(value_key(number))
    return keys


# --- the detectors -----------------------------------------------------------------------------------


def _index(values: Mapping[str, Collection[object]] | None) -> dict[ValueKey, list[str]]:
    """Value key -> the ids of the tests it comes from, sorted."""
    index: dict[ValueKey, list[str]] = {}
    given = values or {}
    for test_id in sorted(given):
        for value in given[test_id]:
            index.setdefault(value_key(value), []).append(test_id)
    return index


def _tests(ids: Sequence[str]) -> str:
    """'test_a', or 'test_a and 2 more tests': ids shown without their file."""
    first = ids[0].rsplit("::", 1)[-1]
    if len(ids) == 1:
        return first
    return f"{first} and {len(ids) - 1} more test{'s' if len(ids) > 2 else ''}"


@dataclass
class _Context:
    text: str
    present: set[ValueKey]
    trivial: frozenset[ValueKey]

    def added(self, key: ValueKey) -> bool:
        return key not in self.present and not is_trivial(key, self.trivial)


def _findings(found: Iterable[OverfittingFinding]) -> list[OverfittingFinding]:
    unique = {(f.line, f.check, f.detail): f for f in found}
    return [unique[k] for k in sorted(unique)]


def _value_statements(fn: FunctionNode, text: str) -> Iterator[tuple[ast.expr, str]]:
    """The expressions whose value becomes a result as it is, with what the code does with it."""
    for node in _code_nodes(fn):
        if isinstance(node, ast.Return) and node.value is not None:
            yield node.value, "returns"
        elif isinstance(node, ast.Assign):
            targets = ", ".join(source_excerpt(t, text) for t in node.targets)
            yield node.value, f"assigns to {targets}"
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            yield node.value, f"assigns to {source_excerpt(node.target, text)}"
        elif isinstance(node, ast.Yield | ast.YieldFrom) and node.value is not None:
            yield node.value, "yields"
        elif isinstance(node, ast.NamedExpr):
            yield node.value, f"binds to {source_excerpt(node.target, text)}"


def _result_literals(
    node: ast.expr, *, numeric_strings: bool = False
) -> Iterator[tuple[ast.expr, object, bool]]:
    """The literals that become part of an expression's value as they are.

    Yields (node, value, is_container_literal) outermost first; the caller skips the elements of a
    container it has reported.
    """
    value = fold_literal(node, numeric_strings=numeric_strings)
    if value is not NOT_LITERAL:
        container = isinstance(node, ast.Tuple | ast.List | ast.Set | ast.Dict)
        yield node, value, container
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            for elt in node.elts:
                yield from _result_literals(elt)
        elif isinstance(node, ast.Dict):
            for item in node.values:
                yield from _result_literals(item)
        return
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        for elt in node.elts:
            yield from _result_literals(elt)
    elif isinstance(node, ast.Dict):
        for item in node.values:
            yield from _result_literals(item)
    elif isinstance(node, ast.Starred | ast.Await | ast.NamedExpr):
        yield from _result_literals(node.value)
    elif isinstance(node, ast.IfExp):
        yield from _result_literals(node.body)
        yield from _result_literals(node.orelse)
    elif isinstance(node, ast.BoolOp):
        for item in node.values:
            yield from _result_literals(item)
    elif isinstance(node, ast.Call) and is_constructor(node.func):
        for arg in [*node.args, *(kw.value for kw in node.keywords)]:
            yield from _result_literals(arg, numeric_strings=True)


def _within(node: ast.AST, outer: ast.AST) -> bool:
    return any(child is node for child in ast.walk(outer))


def copied_literals(
    original_function: str,
    patched_function: str,
    expected: Mapping[str, Collection[object]],
    *,
    trivial: Collection[object] = TRIVIAL_VALUES,
) -> list[OverfittingFinding]:
    """The literals the patch adds that become its result and equal a failing test's expected value."""
    original = _load_function(original_function, "original")
    patched = _load_function(patched_function, "patched")
    ctx = _Context(patched_function, _present_keys(original), trivial_keys(trivial))
    index = _index(expected)
    found: list[OverfittingFinding] = []
    for value_node, action in _value_statements(patched, ctx.text):
        reported: list[ast.expr] = []
        for node, value, _container in _result_literals(value_node):
            if any(_within(node, done) for done in reported):
                continue
            key = value_key(value)
            if not ctx.added(key) or key not in index:
                continue
            reported.append(node)
            why = f"an expected value of {_tests(index[key])}"
            whole, literal = source_excerpt(value_node, ctx.text), source_excerpt(node, ctx.text)
            if node is value_node:
                detail = f"{action} {literal}, {why}"
            else:
                detail = f"{action} {whole}: {literal} is {why}"
            found.append(OverfittingFinding(check="copied_literal", line=node.lineno, detail=detail))
    return _findings(found)


# --- special cases ----------------------------------------------------------------------------------


def _parameter_names(fn: FunctionNode) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, FunctionNode | ast.Lambda):
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if arg is not None:
                    names.add(arg.arg)
    return names


def _bindings(fn: FunctionNode) -> Iterator[tuple[ast.expr, ast.expr]]:
    """(target, value) for every binding of a local in the function."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                yield target, node.value
        elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr) and node.value is not None:
            yield node.target, node.value
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            yield node.target, node.iter
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            yield node.optional_vars, node.context_expr


def _mentions(node: ast.AST, names: Collection[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def _derived_names(fn: FunctionNode) -> set[str]:
    """The parameters and every local assigned from them, directly or through other such locals."""
    names = _parameter_names(fn)
    bindings = list(_bindings(fn))
    changed = True
    while changed:
        changed = False
        for target, value in bindings:
            if not _mentions(value, names):
                continue
            for node in ast.walk(target):
                if isinstance(node, ast.Name) and node.id not in names:
                    names.add(node.id)
                    changed = True
    return names


def _literal_operand(node: ast.expr) -> list[tuple[ast.expr, object]] | None:
    """The literals a comparison operand holds: itself, a container's elements, a constructor's
    arguments; None when it is not a literal."""
    value = fold_literal(node)
    if value is not NOT_LITERAL:
        parts: list[tuple[ast.expr, object]] = [(node, value)]
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            for elt in node.elts:
                parts += _literal_operand(elt) or []
        return parts
    if isinstance(node, ast.Call) and is_constructor(node.func) and (node.args or node.keywords):
        parts = []
        for arg in [*node.args, *(kw.value for kw in node.keywords)]:
            arg_value = fold_literal(arg, numeric_strings=True)
            if arg_value is NOT_LITERAL:
                inner = _literal_operand(arg)
                if inner is None:
                    return None
                parts += inner
            else:
                parts.append((arg, arg_value))
        return parts
    return None


_EQUALITY = (ast.Eq, ast.NotEq, ast.Is, ast.IsNot, ast.In, ast.NotIn)
_ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_OP_TEXT: dict[type[ast.cmpop], str] = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
}  # fmt: skip


@dataclass
class _SpecialCases:
    """What the special-case search compares the patched function's comparisons with."""

    ctx: _Context
    inputs: dict[ValueKey, list[str]]
    expected: dict[ValueKey, list[str]]
    derived: set[str]

    def equality_reason(self, key: ValueKey) -> str | None:
        if key in self.inputs:
            return f"an input of {_tests(self.inputs[key])}"
        if key in self.expected:
            return f"an expected value of {_tests(self.expected[key])}"
        return None

    def comparison(self, node: ast.Compare) -> Iterator[OverfittingFinding]:
        """At most one finding per compared pair: the first added literal that decides it."""
        text = self.ctx.text
        operands = [node.left, *node.comparators]
        for i, op in enumerate(node.ops):
            pair = (operands[i], operands[i + 1])
            shown = f"`{source_excerpt(pair[0], text)} {_OP_TEXT[type(op)]} {source_excerpt(pair[1], text)}`"
            for subject, other in (pair, pair[::-1]):
                literals = _literal_operand(other)
                if literals is None or not _mentions(subject, self.derived):
                    continue
                for literal, value in literals:
                    key = value_key(value)
                    if not self.ctx.added(key):
                        continue
                    # A constructor's argument is shown with its call: Decimal("100.00").
                    at = source_excerpt(other if isinstance(other, ast.Call) else literal, text)
                    if isinstance(op, _EQUALITY) and (reason := self.equality_reason(key)):
                        detail = f"{shown} special-cases {source_excerpt(subject, text)} at {at}, {reason}"
                    elif isinstance(op, _ORDERING) and key in self.inputs:
                        detail = (
                            f"{shown} adds a boundary exactly at {at}, an input of "
                            f"{_tests(self.inputs[key])}, where the original has no such constant"
                        )
                    else:
                        continue
                    yield OverfittingFinding(check="special_case_branch", line=literal.lineno, detail=detail)
                    break

    def match(self, node: ast.Match) -> Iterator[OverfittingFinding]:
        """One finding per ``case`` whose pattern holds an added input or expected value."""
        if not _mentions(node.subject, self.derived):
            return
        text = self.ctx.text
        for case in node.cases:
            values = [v for p in ast.walk(case.pattern) if isinstance(p, ast.MatchValue) for v in [p.value]]
            literals = [item for v in values for item in _literal_operand(v) or []]
            for literal, value in literals:
                key = value_key(value)
                if self.ctx.added(key) and (reason := self.equality_reason(key)):
                    detail = (
                        f"`case {source_excerpt(case.pattern, text)}` special-cases "
                        f"{source_excerpt(node.subject, text)} at {source_excerpt(literal, text)}, {reason}"
                    )
                    yield OverfittingFinding(check="special_case_branch", line=literal.lineno, detail=detail)
                    break


def special_case_branches(
    original_function: str,
    patched_function: str,
    inputs: Mapping[str, Collection[object]],
    *,
    expected: Mapping[str, Collection[object]] | None = None,
    trivial: Collection[object] = TRIVIAL_VALUES,
) -> list[OverfittingFinding]:
    """The comparisons the patch adds between the parameters and a failing test's input (or, with
    ``expected``, its expected value); see the module docstring."""
    original = _load_function(original_function, "original")
    patched = _load_function(patched_function, "patched")
    ctx = _Context(patched_function, _present_keys(original), trivial_keys(trivial))
    search = _SpecialCases(ctx, _index(inputs), _index(expected), _derived_names(patched))
    found: list[OverfittingFinding] = []
    for node in _code_nodes(patched):
        if isinstance(node, ast.Compare):
            found += search.comparison(node)
        elif isinstance(node, ast.Match):
            found += search.match(node)
    return _findings(found)


def overfitting_findings(
    original_function: str,
    patched_function: str,
    failing_test_sources: Mapping[str, str],
    *,
    trivial: Collection[object] = TRIVIAL_VALUES,
) -> list[OverfittingFinding]:
    """Both detectors on a patch, against the sources of the tests that failed before it."""
    facts = literal_facts(failing_test_sources)
    expected = {test_id: f.expected for test_id, f in facts.items()}
    inputs = {test_id: f.inputs for test_id, f in facts.items()}
    found = copied_literals(original_function, patched_function, expected, trivial=trivial)
    found += special_case_branches(
        original_function, patched_function, inputs, expected=expected, trivial=trivial
    )
    return _findings(found)

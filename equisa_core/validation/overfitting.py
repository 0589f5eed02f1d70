"""Deterministic anti-overfitting checks: literals copied from the failing tests, special-case branches.

A patch that makes the failing tests pass may only satisfy their exact data (seed 000, Problem 3):
it returns the value the test expects, or adds a branch for the test's input. Novel-input tests
catch such patches by running them; these two detectors catch the commonest shapes by reading
them, for free, before anything runs. Both compare the patched function with the original one and
with the literals of the failing tests' sources; both are pure functions of those texts.

What the tests say (``expected_values``, ``input_values``):

* Expected values are the literals a test asserts the code produces: the operands of ``==``,
  ``is`` and ``in`` in an ``assert`` (either side: ``assert f(x) == 3`` and ``assert 3 == f(x)``
  alike; the side that is code has no literal value and is skipped), the first two arguments of
  assertion helpers (``assertEqual``, ``assertAlmostEqual``, ``assertIn``, ``assertCountEqual``,
  numpy's ``assert_allclose``: any name whose first word is ``assert`` and which has the word
  equal, close, almost, in or is, and not "not"; also ``isclose``, ``allclose``, ``array_equal``),
  and the argument of ``pytest.approx``.
* Input values are the literals passed as arguments to any other call in the test (the receiver
  of a method call on a literal too, ``"a,b".split(",")``), and those assigned to attributes or
  items (``obj.limit = 5``). Assertion calls (``assertNotEqual(f(x), 3)``: 3), ``pytest.*``
  (``raises(match=...)``, ``mark``, ``param``) and ``print`` give none of their own.
* A literal is a constant, folded: ``-1``; ``100 * 1.07``; tuples, lists, sets and dicts of
  literals (lists become tuples, sets frozensets, dicts frozensets of their items), each element
  counting too (dict values, not keys). A call of a constructor (a capitalized name such as
  ``Money`` or ``Decimal``, ``cls``, or one of the builtin and datetime types) whose arguments are
  all literals gives its arguments' values, and a numeric string argument counts as that number:
  ``Money("10.00")`` and ``Decimal("10.00")`` both give ``Decimal("10.00")``. A numeric string
  passed anywhere as an input also counts as its number (the code under test will parse it).
* A name bound in the test to a literal (``expected = Money("10.00")``) stands for its values
  wherever it is used.
* ``@pytest.mark.parametrize`` rows bind their argument names the same way: a name asserted on
  gives expected values, a name passed to a call gives inputs, a name used both ways gives both,
  and a name used in neither recognizable way (passed to a fixture, say) gives both. When the test
  id ends in ``[...]`` and exactly one combination of rows gets that id by pytest's rules (values'
  ``str``, ``ids=``, ``pytest.param(id=)``, ``argname + index``, joined with ``-``), only that row
  counts: the other rows of a table do not fail. Otherwise every row counts.
* The source may be the test function (decorators included) or a larger text, read whole. Names
  bound outside it (fixtures, module constants) are not followed.

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
import math
import operator
import re
import textwrap
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Literal, TypeGuard

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.errors import InvalidReplacementError

__all__ = [
    "TRIVIAL_VALUES",
    "OverfittingFinding",
    "expected_values",
    "input_values",
    "copied_literals",
    "special_case_branches",
    "overfitting_findings",
]

#: Values that legitimately appear everywhere; never a finding (see the module docstring).
#: A tuple, not a set: in a set ``True`` and ``1`` are one element, and ``_key`` tells them apart.
TRIVIAL_VALUES: tuple[object, ...] = (None, True, False, "", b"", -1, 0, 1, 2)


class OverfittingFinding(BaseModel):
    """One sign that a patch fits the failing tests' data rather than the behaviour."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    check: Literal["copied_literal", "special_case_branch"]
    line: int = Field(ge=1, description="1-based line in the patched function's text.")
    detail: str = Field(description="What was found, e.g. 'returns 107.1, an expected value of test_x'.")


# --- literal values --------------------------------------------------------------------------------

_FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
_NOT_LITERAL = object()
_NUMERIC_RE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
# Lower-case callees that construct a value from their arguments, like a class does.
_CONSTRUCTORS = frozenset(
    {
        "int", "float", "complex", "str", "bytes", "bool", "tuple", "list", "set", "frozenset",
        "dict", "cls", "date", "datetime", "time", "timedelta",
    }
)  # fmt: skip
_BINARY: dict[type[ast.operator], Callable[[object, object], object]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_MAX_POWER = 64
_MAX_SHOWN = 60
# Keyword arguments of assertion helpers that are tolerances or messages, not values.
_HELPER_OPTIONS = frozenset(
    {"msg", "rtol", "atol", "rel", "abs", "rel_tol", "abs_tol", "places", "delta", "err_msg", "verbose",
     "equal_nan", "strict", "decimal", "check_dtype"}
)  # fmt: skip
_MAX_ROW_COMBINATIONS = 10_000


def _is_number(value: object) -> TypeGuard[int | float | complex | Decimal]:
    return isinstance(value, int | float | complex | Decimal) and not isinstance(value, bool)


def _magnitude(value: int | float | complex | Decimal) -> int | float | Decimal:
    """``abs(value)``, spelled per type so that its type is known (a complex's is a float)."""
    if isinstance(value, Decimal):
        return abs(value)
    if isinstance(value, complex):
        return abs(value)
    return abs(value)


def _callee_name(func: ast.expr) -> str | None:
    """The last identifier of a callee: ``Money``, ``decimal.Decimal`` -> ``Decimal``."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _is_constructor(func: ast.expr) -> bool:
    name = _callee_name(func)
    return name is not None and (name[:1].isupper() or name in _CONSTRUCTORS)


def _is_approx(func: ast.expr) -> bool:
    return _callee_name(func) == "approx"


def _fold(node: ast.expr, *, numeric_strings: bool = False) -> object:
    """The value of a literal expression, or ``_NOT_LITERAL``.

    ``numeric_strings``: a string constant that spells a number gives that ``Decimal`` (for the
    arguments of constructors, ``Money("10.00")``).
    """
    if isinstance(node, ast.Constant):
        return _fold_constant(node, numeric_strings)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return _fold_sign(node, numeric_strings)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return _fold_collection(node)
    if isinstance(node, ast.Dict):
        return _fold_dict(node)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _fold_binary(node)
    return _NOT_LITERAL


def _fold_constant(node: ast.Constant, numeric_strings: bool) -> object:
    value = node.value
    if value is Ellipsis:
        return _NOT_LITERAL
    if numeric_strings and isinstance(value, str) and _NUMERIC_RE.fullmatch(value.strip()):
        return Decimal(value.strip())
    return value


def _fold_sign(node: ast.UnaryOp, numeric_strings: bool) -> object:
    """A number with a unary ``-`` or ``+``."""
    operand = _fold(node.operand, numeric_strings=numeric_strings)
    if not _is_number(operand):
        return _NOT_LITERAL
    return -operand if isinstance(node.op, ast.USub) else +operand


def _fold_collection(node: ast.Tuple | ast.List | ast.Set) -> object:
    """A set display folds to a frozenset, a tuple or list display to a tuple."""
    values = [_fold(elt) for elt in node.elts]
    if any(v is _NOT_LITERAL for v in values):
        return _NOT_LITERAL
    return frozenset(values) if isinstance(node, ast.Set) else tuple(values)


def _fold_dict(node: ast.Dict) -> object:
    """A dict display folds to the frozenset of its (key, value) pairs."""
    keys = [key for key in node.keys if key is not None]
    if len(keys) != len(node.keys):  # a '**' in the display
        return _NOT_LITERAL
    items = [(_fold(k), _fold(v)) for k, v in zip(keys, node.values, strict=True)]
    if any(k is _NOT_LITERAL or v is _NOT_LITERAL for k, v in items):
        return _NOT_LITERAL
    return frozenset(items)


def _fold_binary(node: ast.BinOp) -> object:
    left, right = _fold(node.left), _fold(node.right)
    numbers = _is_number(left) and _is_number(right)
    strings = isinstance(left, str) and isinstance(right, str) and isinstance(node.op, ast.Add)
    if not (numbers or strings):
        return _NOT_LITERAL
    if (
        isinstance(node.op, ast.Pow) and _is_number(left) and _is_number(right)
        and (_magnitude(right) > _MAX_POWER or _magnitude(left) > 10**6)
    ):
        return _NOT_LITERAL
    try:
        with warnings.catch_warnings(action="ignore"):
            return _BINARY[type(node.op)](left, right)
    except (ArithmeticError, TypeError, ValueError, InvalidOperation):
        return _NOT_LITERAL


def _elements(value: object) -> Iterator[object]:
    """A folded value and, recursively, its elements (of a folded dict, the values)."""
    yield value
    if isinstance(value, tuple):
        for item in value:
            yield from _elements(item)
    elif isinstance(value, frozenset):
        # A folded dict is a frozenset of (key, value) pairs; a set of pairs reads the same, harmlessly.
        pairs = all(isinstance(item, tuple) and len(item) == 2 for item in value)
        for item in value:
            yield from _elements(item[1] if pairs else item)


_Key = tuple[object, ...]


def _key(value: object) -> _Key:
    """A value's identity for comparison: numbers by numeric value (float via repr, so 107.1 and
    Decimal("107.10") agree), everything else by type and value, containers element-wise."""
    if value is None:
        return ("none",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("num", value)
    if isinstance(value, float):
        return ("num", Decimal(repr(value))) if math.isfinite(value) else ("float", repr(value))
    if isinstance(value, Decimal):
        return ("num", value) if value.is_finite() else ("float", str(value).lower())
    if isinstance(value, complex):
        return ("complex", value)
    if isinstance(value, str | bytes):
        return (type(value).__name__, value)
    if isinstance(value, tuple | list):
        return ("seq", tuple(_key(item) for item in value))
    if isinstance(value, frozenset | set):
        return ("set", frozenset(_key(item) for item in value))
    if isinstance(value, dict):
        return ("set", frozenset(_key(item) for item in value.items()))
    return ("other", type(value).__name__, repr(value))


def _trivial_keys(trivial: Collection[object]) -> frozenset[_Key]:
    return frozenset(_key(value) for value in trivial)


def _is_trivial(key: _Key, trivial: frozenset[_Key]) -> bool:
    if key in trivial:
        return True
    if key[0] in ("seq", "set") and isinstance(key[1], tuple | frozenset):  # the keys of a container's items
        return all(_is_trivial(item, trivial) for item in key[1])
    return False


def _shown(node: ast.AST, text: str) -> str:
    segment = ast.get_source_segment(text, node) or ast.unparse(node)
    segment = " ".join(segment.split())
    return segment if len(segment) <= _MAX_SHOWN else segment[: _MAX_SHOWN - 1] + "…"


# --- parsing -----------------------------------------------------------------------------------------


def _parse(text: str) -> ast.Module:
    with warnings.catch_warnings(action="ignore"):
        return ast.parse(text)


def _describe(exc: SyntaxError | ValueError) -> str:
    if isinstance(exc, SyntaxError):
        return f"{exc.msg} (line {exc.lineno})" if exc.lineno else str(exc.msg)
    return str(exc)


def _load_function(text: str, what: str) -> _FunctionNode:
    try:
        tree = _parse(text)
    except (SyntaxError, ValueError) as exc:
        raise InvalidReplacementError(f"the {what} function does not parse: {_describe(exc)}") from exc
    if len(tree.body) != 1 or not isinstance(tree.body[0], _FunctionNode):
        kinds = ", ".join(type(s).__name__ for s in tree.body[:5]) or "nothing"
        raise InvalidReplacementError(
            f"the {what} function must be exactly one function definition; it has {kinds}"
        )
    return tree.body[0]


def _load_test(test_id: str, text: str) -> ast.Module:
    try:
        return _parse(text)
    except (SyntaxError, ValueError) as exc:
        try:  # a method cut out of its class with its indentation
            return _parse(textwrap.dedent(text))
        except (SyntaxError, ValueError):
            pass
        raise InvalidReplacementError(
            f"the source of test {test_id!r} does not parse: {_describe(exc)}"
        ) from exc


def _docstring(node: _FunctionNode | ast.ClassDef) -> ast.expr | None:
    first = node.body[0] if node.body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return first.value
    return None


_SKIPPED_FIELDS = frozenset({"annotation", "returns", "decorator_list", "type_comment", "type_params"})


def _code_nodes(fn: _FunctionNode) -> Iterator[ast.AST]:
    """Every node of a function's code, in source order: no docstrings, annotations, decorators
    or signatures (of nested functions and lambdas either)."""
    docstrings = {
        id(doc)
        for node in ast.walk(fn)
        if isinstance(node, _FunctionNode | ast.ClassDef) and (doc := _docstring(node)) is not None
    }
    stack: list[ast.AST] = list(reversed(fn.body))
    while stack:
        node = stack.pop()
        if id(node) in docstrings:
            continue
        yield node
        children: list[ast.AST] = []
        for name, value in ast.iter_fields(node):
            if name in _SKIPPED_FIELDS or (name == "args" and isinstance(node, _FunctionNode | ast.Lambda)):
                continue
            if isinstance(value, ast.AST):
                children.append(value)
            elif isinstance(value, list):
                children.extend(item for item in value if isinstance(item, ast.AST))
        stack.extend(reversed(children))


def _present_keys(fn: _FunctionNode) -> set[_Key]:
    """The keys of every literal in the original function (sub-literals and numeric strings too)."""
    keys: set[_Key] = set()
    defaults = [d for d in [*fn.args.defaults, *fn.args.kw_defaults] if d is not None]
    for node in itertools.chain(_code_nodes(fn), *(ast.walk(d) for d in defaults)):
        if not isinstance(node, ast.expr):
            continue
        value = _fold(node)
        if value is not _NOT_LITERAL:
            keys.update(_key(v) for v in _elements(value))
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            number = _fold(node, numeric_strings=True)
            keys.add(_key(number))
    return keys


# --- reading the tests -------------------------------------------------------------------------------


@dataclass
class _Facts:
    expected: set[object] = field(default_factory=set)
    inputs: set[object] = field(default_factory=set)


@dataclass
class _Env:
    """Names bound to literal values in a test: locals and parametrize arguments."""

    values: dict[str, set[object]] = field(default_factory=dict)
    params: set[str] = field(default_factory=set)
    used: set[str] = field(default_factory=set)

    def bind(self, name: str, values: Iterable[object]) -> None:
        self.values.setdefault(name, set()).update(values)


def _shape(node: ast.expr, env: _Env, *, numeric_strings: bool = False) -> set[object] | None:
    """The literal values an expression stands for, or None when it is code (see the docstring)."""
    if isinstance(node, ast.Name):
        if node.id in env.values:
            env.used.add(node.id)
            return set(env.values[node.id])
        return None
    value = _fold(node, numeric_strings=numeric_strings)
    if value is not _NOT_LITERAL:
        return set(_elements(value))
    parts = _shaped_parts(node)
    if parts is None:
        return None
    return _union_of_shapes(*parts, env)


def _shaped_parts(node: ast.expr) -> tuple[list[ast.expr], bool] | None:
    """The parts whose values a non-literal expression stands for, and whether numeric strings count
    as numbers in them (constructor arguments); None when the expression is code."""
    if isinstance(node, ast.Call) and _is_approx(node.func):
        return list(node.args[:1]), True
    if isinstance(node, ast.Call) and _is_constructor(node.func):
        return [*node.args, *(kw.value for kw in node.keywords)], True
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return list(node.elts), False
    if isinstance(node, ast.Dict) and all(k is not None and _fold(k) is not _NOT_LITERAL for k in node.keys):
        return list(node.values), False  # the values: keys are structure
    return None


def _union_of_shapes(parts: list[ast.expr], numeric_strings: bool, env: _Env) -> set[object] | None:
    """The values of every part (``*x`` as ``x``), or None as soon as one part is code."""
    result: set[object] = set()
    for part in parts:
        values = _shape(part.value if isinstance(part, ast.Starred) else part, env,
                        numeric_strings=numeric_strings)
        if values is None:
            return None
        result |= values
    return result


_CLOSE_FUNCTIONS = frozenset({"isclose", "allclose", "array_equal"})
_HELPER_WORDS = frozenset({"equal", "equals", "allclose", "close", "almost", "in", "is"})


def _is_helper(func: ast.expr) -> bool:
    """An assertion helper whose first two arguments are compared for equality or membership:
    ``assertEqual``, ``assert_allclose``, ``assertIn``, ``math.isclose``, ``np.allclose``; not
    ``assertNotEqual``."""
    name = _callee_name(func)
    if name is None:
        return False
    if name in _CLOSE_FUNCTIONS:
        return True
    words = [w.lower() for w in re.findall(r"[a-z]+|[A-Z][a-z]*", name)]
    return (
        bool(words) and words[0] == "assert" and "not" not in words and bool(_HELPER_WORDS & set(words[1:]))
    )


def _gives_no_inputs(func: ast.expr) -> bool:
    """Calls whose own literal arguments are no inputs: assertions (``assertNotEqual(f(x), 3)``,
    ``pytest.approx``), ``pytest.*`` (``raises(match=...)``, ``mark``, ``param``) and ``print``."""
    name = _callee_name(func)
    if name is not None and (name == "print" or name.lower().startswith("assert") or _is_helper(func)):
        return True
    root = func
    while isinstance(root, ast.Attribute):
        root = root.value
    return isinstance(root, ast.Name) and root.id == "pytest"


def _assert_operands(test: ast.expr) -> Iterator[ast.expr]:
    """The operands an ``assert`` compares for equality, identity or membership."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        for value in test.values:
            yield from _assert_operands(value)
    elif isinstance(test, ast.Compare):
        operands = [test.left, *test.comparators]
        for i, op in enumerate(test.ops):
            if isinstance(op, ast.Eq | ast.Is | ast.In):
                yield operands[i]
                yield operands[i + 1]


def _helper_operands(call: ast.Call) -> Iterator[ast.expr]:
    yield from call.args[:2]
    for keyword in call.keywords:
        if keyword.arg is not None and keyword.arg not in _HELPER_OPTIONS:
            yield keyword.value


def _statement_order(tree: ast.AST) -> list[ast.stmt | ast.expr]:
    nodes = [n for n in ast.walk(tree) if isinstance(n, ast.stmt | ast.expr)]
    return sorted(nodes, key=lambda n: (n.lineno, n.col_offset))


def _bind_locals(tree: ast.Module, env: _Env) -> None:
    """Names assigned a literal (or a constructor of literals) in the test, in source order."""
    for node in _statement_order(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                _bind_target(target, node.value, env)
        elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
            _bind_target(node.target, node.value, env)


def _bind_target(target: ast.expr, value: ast.expr, env: _Env) -> None:
    if isinstance(target, ast.Name):
        values = _shape(value, env)
        if values is not None:
            env.bind(target.id, values)
    elif (
        isinstance(target, ast.Tuple | ast.List)
        and isinstance(value, ast.Tuple | ast.List)
        and len(target.elts) == len(value.elts)
    ):
        for t, v in zip(target.elts, value.elts, strict=True):
            _bind_target(t, v, env)


# --- parametrize ------------------------------------------------------------------------------------


@dataclass
class _Row:
    values: dict[str, ast.expr]
    id: str | None


def _parametrize_rows(decorator: ast.expr) -> list[_Row] | None:
    """The rows of one ``@pytest.mark.parametrize(...)``, or None when it is not one we can read."""
    if not (isinstance(decorator, ast.Call) and _callee_name(decorator.func) == "parametrize"):
        return None
    keywords = {kw.arg: kw.value for kw in decorator.keywords if kw.arg}
    names_node = decorator.args[0] if decorator.args else keywords.get("argnames")
    rows_node = decorator.args[1] if len(decorator.args) > 1 else keywords.get("argvalues")
    if names_node is None or rows_node is None:
        return None
    names = _argnames(names_node)
    if names is None or not isinstance(rows_node, ast.List | ast.Tuple) or not names:
        return None
    ids_node = keywords.get("ids")
    explicit_ids = ids_node.elts if isinstance(ids_node, ast.List | ast.Tuple) else None
    return [_parametrize_row(elt, index, names, explicit_ids) for index, elt in enumerate(rows_node.elts)]


def _argnames(node: ast.expr) -> list[str] | None:
    """The names of ``parametrize``'s ``argnames`` ('a, b' or ('a', 'b')), or None when unreadable."""
    value = _fold(node)
    if isinstance(value, str):
        return [n.strip() for n in value.split(",") if n.strip()]
    if isinstance(value, tuple) and all(isinstance(n, str) for n in value):
        return list(value)
    return None


def _parametrize_row(elt: ast.expr, index: int, names: list[str],
                     explicit_ids: list[ast.expr] | None) -> _Row:
    """Row ``index`` of a parametrize table: its values by name and its id; empty when unreadable."""
    row_values = _row_values(elt, len(names))
    if row_values is None:
        return _Row({}, None)
    parts, row_id = row_values
    if len(parts) != len(names) or any(isinstance(p, ast.Starred) for p in parts):
        return _Row({}, None)
    if row_id is None and explicit_ids is not None and index < len(explicit_ids):
        given = _fold(explicit_ids[index])
        row_id = given if isinstance(given, str) else None
    if row_id is None:
        row_id = "-".join(_value_id(part, name, index) for part, name in zip(parts, names, strict=True))
    return _Row(dict(zip(names, parts, strict=True)), row_id)


def _row_values(elt: ast.expr, width: int) -> tuple[list[ast.expr], str | None] | None:
    """A row's value expressions and its ``pytest.param(..., id=...)`` id, or None when unreadable."""
    if isinstance(elt, ast.Call) and _callee_name(elt.func) == "param":
        row_id: str | None = None
        for kw in elt.keywords:
            if kw.arg == "id" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                row_id = kw.value.value
        return list(elt.args), row_id
    if width == 1:
        return [elt], None
    if isinstance(elt, ast.Tuple | ast.List):
        return list(elt.elts), None
    return None


def _value_id(node: ast.expr, argname: str, index: int) -> str:
    """The id pytest derives from one parameter value (``_idval_from_value``), else argname+index."""
    value = _fold(node)
    if isinstance(value, str):
        return value.encode("unicode_escape").decode("ascii")
    if value is None or isinstance(value, int | float | complex):
        return str(value)
    return f"{argname}{index}"


def _unique_ids(rows: Sequence[_Row]) -> list[str | None]:
    """Row ids as pytest makes them unique; an id pytest would have to suffix is left unknown."""
    ids = [row.id for row in rows]
    return [i if i is not None and ids.count(i) == 1 else None for i in ids]


def _selected_rows(test_id: str, tables: Sequence[list[_Row]]) -> list[list[_Row]]:
    """Only the row (per table) that the test id names, when exactly one combination does."""
    match = re.search(r"\[(.*)\]\Z", test_id)
    if match is None or not tables:
        return [list(table) for table in tables]
    wanted = match.group(1)
    # The decorator nearest the function comes first in the id.
    ordered = list(reversed(tables))
    count = math.prod(len(t) for t in ordered)
    if count == 0 or count > _MAX_ROW_COMBINATIONS:
        return [list(table) for table in tables]
    unique = [_unique_ids(t) for t in ordered]
    found: list[tuple[int, ...]] = []
    for combination in itertools.product(*(range(len(t)) for t in ordered)):
        parts = [unique[k][i] for k, i in enumerate(combination)]
        named = [p for p in parts if p is not None]
        if len(named) == len(parts) and "-".join(named) == wanted:
            found.append(combination)
    if len(found) != 1:
        return [list(table) for table in tables]
    chosen = [[ordered[k][i]] for k, i in enumerate(found[0])]
    return list(reversed(chosen))


def _bind_parameters(test_id: str, tree: ast.Module, env: _Env) -> None:
    for node in ast.walk(tree):
        if not isinstance(node, _FunctionNode):
            continue
        tables = [rows for d in node.decorator_list if (rows := _parametrize_rows(d)) is not None]
        for table in _selected_rows(test_id, tables):
            for row in table:
                for name, value in row.values.items():
                    values = _shape(value, env)
                    if values is not None:
                        env.bind(name, values)
                        env.params.add(name)


# --- the facts of one test ---------------------------------------------------------------------------


def _with_numbers(values: Iterable[object]) -> set[object]:
    """Inputs plus the number each numeric string spells."""
    result = set(values)
    for value in list(result):
        if isinstance(value, str) and _NUMERIC_RE.fullmatch(value.strip()):
            result.add(Decimal(value.strip()))
    return result


def _analyze_test(test_id: str, source: str) -> _Facts:
    tree = _load_test(test_id, source)
    env = _Env()
    _bind_parameters(test_id, tree, env)
    _bind_locals(tree, env)
    facts = _Facts()
    env.used = set()
    expected_nodes = _collect_expected(tree, env, facts)
    used_as_expected = set(env.used)
    env.used = set()
    _collect_inputs(tree, env, expected_nodes, facts)
    used_as_input = set(env.used)
    # A parametrize argument used in neither recognizable way counts both ways.
    for name in env.params - used_as_expected - used_as_input:
        facts.expected |= env.values[name]
        facts.inputs |= env.values[name]
    facts.inputs = _with_numbers(facts.inputs)
    return facts


def _collect_expected(tree: ast.Module, env: _Env, facts: _Facts) -> set[int]:
    """Add the expected values (what the assertions compare with) to ``facts``; the ids of the
    operands they come from."""
    expected_nodes: set[int] = set()
    for node in ast.walk(tree):
        operands: Iterable[ast.expr] = ()
        if isinstance(node, ast.Assert):
            operands = _assert_operands(node.test)
        elif isinstance(node, ast.Call) and _is_helper(node.func):
            operands = _helper_operands(node)
        for operand in operands:
            values = _shape(operand, env)
            if values is not None:
                facts.expected |= values
                expected_nodes.add(id(operand))
    return expected_nodes


def _collect_inputs(tree: ast.Module, env: _Env, expected_nodes: set[int], facts: _Facts) -> None:
    """Add the inputs (the literal arguments of every other call, values stored in attributes and
    items) to ``facts``, outside expected operands and decorators."""
    decorators = {
        id(d) for n in ast.walk(tree) if isinstance(n, _FunctionNode | ast.ClassDef) for d in n.decorator_list
    }
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if id(node) in expected_nodes or id(node) in decorators:
            continue
        stack.extend(ast.iter_child_nodes(node))
        for value, numeric in _input_expressions(node):
            values = _shape(value, env, numeric_strings=numeric)
            if values is not None:
                facts.inputs |= values


def _input_expressions(node: ast.AST) -> list[tuple[ast.expr, bool]]:
    """The expressions of ``node`` that may be inputs, each with whether numeric strings count as
    numbers in it: a call's arguments and receiver, the value assigned to an attribute or item."""
    if isinstance(node, ast.Call) and not _gives_no_inputs(node.func):
        arguments = [a.value if isinstance(a, ast.Starred) else a for a in node.args]
        arguments += [kw.value for kw in node.keywords]
        if isinstance(node.func, ast.Attribute):
            arguments.append(node.func.value)
        numeric = _is_constructor(node.func)
        return [(argument, numeric) for argument in arguments]
    if isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Attribute | ast.Subscript) for t in node.targets
    ):
        return [(node.value, False)]
    return []


def _analyze(test_sources: Mapping[str, str]) -> dict[str, _Facts]:
    return {test_id: _analyze_test(test_id, source) for test_id, source in test_sources.items()}


def expected_values(test_sources: Mapping[str, str]) -> dict[str, set[object]]:
    """Test id -> the literal values its assertions expect (see the module docstring).

    Trivial values are included; the detectors leave them out.
    """
    return {test_id: facts.expected for test_id, facts in _analyze(test_sources).items()}


def input_values(test_sources: Mapping[str, str]) -> dict[str, set[object]]:
    """Test id -> the literal values it passes to the code under test (see the module docstring)."""
    return {test_id: facts.inputs for test_id, facts in _analyze(test_sources).items()}


# --- the detectors -----------------------------------------------------------------------------------


def _index(values: Mapping[str, Collection[object]] | None) -> dict[_Key, list[str]]:
    """Value key -> the ids of the tests it comes from, sorted."""
    index: dict[_Key, list[str]] = {}
    given = values or {}
    for test_id in sorted(given):
        for value in given[test_id]:
            index.setdefault(_key(value), []).append(test_id)
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
    present: set[_Key]
    trivial: frozenset[_Key]

    def added(self, key: _Key) -> bool:
        return key not in self.present and not _is_trivial(key, self.trivial)


def _findings(found: Iterable[OverfittingFinding]) -> list[OverfittingFinding]:
    unique = {(f.line, f.check, f.detail): f for f in found}
    return [unique[k] for k in sorted(unique)]


def _value_statements(fn: _FunctionNode, text: str) -> Iterator[tuple[ast.expr, str]]:
    """The expressions whose value becomes a result as it is, with what the code does with it."""
    for node in _code_nodes(fn):
        if isinstance(node, ast.Return) and node.value is not None:
            yield node.value, "returns"
        elif isinstance(node, ast.Assign):
            targets = ", ".join(_shown(t, text) for t in node.targets)
            yield node.value, f"assigns to {targets}"
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            yield node.value, f"assigns to {_shown(node.target, text)}"
        elif isinstance(node, ast.Yield | ast.YieldFrom) and node.value is not None:
            yield node.value, "yields"
        elif isinstance(node, ast.NamedExpr):
            yield node.value, f"binds to {_shown(node.target, text)}"


def _result_literals(
    node: ast.expr, *, numeric_strings: bool = False
) -> Iterator[tuple[ast.expr, object, bool]]:
    """The literals that become part of an expression's value as they are.

    Yields (node, value, is_container_literal) outermost first; the caller skips the elements of a
    container it has reported.
    """
    value = _fold(node, numeric_strings=numeric_strings)
    if value is not _NOT_LITERAL:
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
    elif isinstance(node, ast.Call) and _is_constructor(node.func):
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
    ctx = _Context(patched_function, _present_keys(original), _trivial_keys(trivial))
    index = _index(expected)
    found: list[OverfittingFinding] = []
    for value_node, action in _value_statements(patched, ctx.text):
        reported: list[ast.expr] = []
        for node, value, _container in _result_literals(value_node):
            if any(_within(node, done) for done in reported):
                continue
            key = _key(value)
            if not ctx.added(key) or key not in index:
                continue
            reported.append(node)
            why = f"an expected value of {_tests(index[key])}"
            whole, literal = _shown(value_node, ctx.text), _shown(node, ctx.text)
            if node is value_node:
                detail = f"{action} {literal}, {why}"
            else:
                detail = f"{action} {whole}: {literal} is {why}"
            found.append(OverfittingFinding(check="copied_literal", line=node.lineno, detail=detail))
    return _findings(found)


# --- special cases ----------------------------------------------------------------------------------


def _parameter_names(fn: _FunctionNode) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, _FunctionNode | ast.Lambda):
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if arg is not None:
                    names.add(arg.arg)
    return names


def _bindings(fn: _FunctionNode) -> Iterator[tuple[ast.expr, ast.expr]]:
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


def _derived_names(fn: _FunctionNode) -> set[str]:
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
    value = _fold(node)
    if value is not _NOT_LITERAL:
        parts: list[tuple[ast.expr, object]] = [(node, value)]
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            for elt in node.elts:
                parts += _literal_operand(elt) or []
        return parts
    if isinstance(node, ast.Call) and _is_constructor(node.func) and (node.args or node.keywords):
        parts = []
        for arg in [*node.args, *(kw.value for kw in node.keywords)]:
            arg_value = _fold(arg, numeric_strings=True)
            if arg_value is _NOT_LITERAL:
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
    inputs: dict[_Key, list[str]]
    expected: dict[_Key, list[str]]
    derived: set[str]

    def equality_reason(self, key: _Key) -> str | None:
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
            shown = f"`{_shown(pair[0], text)} {_OP_TEXT[type(op)]} {_shown(pair[1], text)}`"
            for subject, other in (pair, pair[::-1]):
                literals = _literal_operand(other)
                if literals is None or not _mentions(subject, self.derived):
                    continue
                for literal, value in literals:
                    key = _key(value)
                    if not self.ctx.added(key):
                        continue
                    # A constructor's argument is shown with its call: Decimal("100.00").
                    at = _shown(other if isinstance(other, ast.Call) else literal, text)
                    if isinstance(op, _EQUALITY) and (reason := self.equality_reason(key)):
                        detail = f"{shown} special-cases {_shown(subject, text)} at {at}, {reason}"
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
                key = _key(value)
                if self.ctx.added(key) and (reason := self.equality_reason(key)):
                    detail = (
                        f"`case {_shown(case.pattern, text)}` special-cases "
                        f"{_shown(node.subject, text)} at {_shown(literal, text)}, {reason}"
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
    ctx = _Context(patched_function, _present_keys(original), _trivial_keys(trivial))
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
    facts = _analyze(failing_test_sources)
    expected = {test_id: f.expected for test_id, f in facts.items()}
    inputs = {test_id: f.inputs for test_id, f in facts.items()}
    found = copied_literals(original_function, patched_function, expected, trivial=trivial)
    found += special_case_branches(
        original_function, patched_function, inputs, expected=expected, trivial=trivial
    )
    return _findings(found)

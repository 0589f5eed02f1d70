"""The literal values the failing tests are about: what their assertions expect and what they pass to
the code under test, read from their sources (never run). Pure; the overfitting checks
(``equisa_core.validation.overfitting``) compare a patch's added literals with them.

What the tests say (``expected_values``, ``input_values``, ``literal_facts``):

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

A test source that does not parse raises ``InvalidReplacementError``.
"""

from __future__ import annotations

import ast
import itertools
import math
import re
import textwrap
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from equisa_core.errors import InvalidReplacementError
from equisa_core.validation.literal_values import (
    NOT_LITERAL,
    NUMERIC_RE,
    FunctionNode,
    callee_name,
    describe_parse_error,
    fold_literal,
    folded_elements,
    is_constructor,
    parse_quietly,
)

__all__ = ["LiteralFacts", "expected_values", "input_values", "literal_facts"]

# Keyword arguments of assertion helpers that are tolerances or messages, not values.
_HELPER_OPTIONS = frozenset(
    {"msg", "rtol", "atol", "rel", "abs", "rel_tol", "abs_tol", "places", "delta", "err_msg", "verbose",
     "equal_nan", "strict", "decimal", "check_dtype"}
)  # fmt: skip
_MAX_ROW_COMBINATIONS = 10_000


def _is_approx(func: ast.expr) -> bool:
    return callee_name(func) == "approx"


def _load_test(test_id: str, text: str) -> ast.Module:
    try:
        return parse_quietly(text)
    except (SyntaxError, ValueError) as exc:
        try:  # a method cut out of its class with its indentation
            return parse_quietly(textwrap.dedent(text))
        except (SyntaxError, ValueError):
            pass
        raise InvalidReplacementError(
            f"the source of test {test_id!r} does not parse: {describe_parse_error(exc)}"
        ) from exc


@dataclass
class LiteralFacts:
    """The literal values one test expects (asserts on) and passes as inputs."""

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
    value = fold_literal(node, numeric_strings=numeric_strings)
    if value is not NOT_LITERAL:
        return set(folded_elements(value))
    parts = _shaped_parts(node)
    if parts is None:
        return None
    return _union_of_shapes(*parts, env)


def _shaped_parts(node: ast.expr) -> tuple[list[ast.expr], bool] | None:
    """The parts whose values a non-literal expression stands for, and whether numeric strings count
    as numbers in them (constructor arguments); None when the expression is code."""
    if isinstance(node, ast.Call) and _is_approx(node.func):
        return list(node.args[:1]), True
    if isinstance(node, ast.Call) and is_constructor(node.func):
        return [*node.args, *(kw.value for kw in node.keywords)], True
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return list(node.elts), False
    if isinstance(node, ast.Dict) and all(
        k is not None and fold_literal(k) is not NOT_LITERAL for k in node.keys
    ):
        return list(node.values), False  # the values: keys are structure
    return None


def _union_of_shapes(parts: list[ast.expr], numeric_strings: bool, env: _Env) -> set[object] | None:
    """The values of every part (``*x`` as ``x``), or None as soon as one part is code."""
    result: set[object] = set()
    for part in parts:
        values = _shape(
            part.value if isinstance(part, ast.Starred) else part, env, numeric_strings=numeric_strings
        )
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
    name = callee_name(func)
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
    name = callee_name(func)
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
    if not (isinstance(decorator, ast.Call) and callee_name(decorator.func) == "parametrize"):
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
    value = fold_literal(node)
    if isinstance(value, str):
        return [n.strip() for n in value.split(",") if n.strip()]
    if isinstance(value, tuple) and all(isinstance(n, str) for n in value):
        return list(value)
    return None


def _parametrize_row(
    elt: ast.expr, index: int, names: list[str], explicit_ids: list[ast.expr] | None
) -> _Row:
    """Row ``index`` of a parametrize table: its values by name and its id; empty when unreadable."""
    row_values = _row_values(elt, len(names))
    if row_values is None:
        return _Row({}, None)
    parts, row_id = row_values
    if len(parts) != len(names) or any(isinstance(p, ast.Starred) for p in parts):
        return _Row({}, None)
    if row_id is None and explicit_ids is not None and index < len(explicit_ids):
        given = fold_literal(explicit_ids[index])
        row_id = given if isinstance(given, str) else None
    if row_id is None:
        row_id = "-".join(_value_id(part, name, index) for part, name in zip(parts, names, strict=True))
    return _Row(dict(zip(names, parts, strict=True)), row_id)


def _row_values(elt: ast.expr, width: int) -> tuple[list[ast.expr], str | None] | None:
    """A row's value expressions and its ``pytest.param(..., id=...)`` id, or None when unreadable."""
    if isinstance(elt, ast.Call) and callee_name(elt.func) == "param":
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
    value = fold_literal(node)
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
        if not isinstance(node, FunctionNode):
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
        if isinstance(value, str) and NUMERIC_RE.fullmatch(value.strip()):
            result.add(Decimal(value.strip()))
    return result


def _analyze_test(test_id: str, source: str) -> LiteralFacts:
    tree = _load_test(test_id, source)
    env = _Env()
    _bind_parameters(test_id, tree, env)
    _bind_locals(tree, env)
    facts = LiteralFacts()
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


def _collect_expected(tree: ast.Module, env: _Env, facts: LiteralFacts) -> set[int]:
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


def _collect_inputs(tree: ast.Module, env: _Env, expected_nodes: set[int], facts: LiteralFacts) -> None:
    """Add the inputs (the literal arguments of every other call, values stored in attributes and
    items) to ``facts``, outside expected operands and decorators."""
    decorators = {
        id(d) for n in ast.walk(tree) if isinstance(n, FunctionNode | ast.ClassDef) for d in n.decorator_list
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
        numeric = is_constructor(node.func)
        return [(argument, numeric) for argument in arguments]
    if isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Attribute | ast.Subscript) for t in node.targets
    ):
        return [(node.value, False)]
    return []


def literal_facts(test_sources: Mapping[str, str]) -> dict[str, LiteralFacts]:
    """Test id -> the literal values it expects and passes (``expected_values``, ``input_values``)."""
    return {test_id: _analyze_test(test_id, source) for test_id, source in test_sources.items()}


def expected_values(test_sources: Mapping[str, str]) -> dict[str, set[object]]:
    """Test id -> the literal values its assertions expect (see the module docstring).

    Trivial values are included; the detectors leave them out.
    """
    return {test_id: facts.expected for test_id, facts in literal_facts(test_sources).items()}


def input_values(test_sources: Mapping[str, str]) -> dict[str, set[object]]:
    """Test id -> the literal values it passes to the code under test (see the module docstring)."""
    return {test_id: facts.inputs for test_id, facts in literal_facts(test_sources).items()}

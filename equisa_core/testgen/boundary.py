"""Deterministic boundary-value tests (issue 6, deterministic mode): inputs moved to the edges.

Carved tests (``equisa_core.testgen.carving``) replay calls the suite made. Boundary testing moves their
inputs to the values where the code under test changes behaviour: the constants it compares
against, and one step either side. Two steps, both in the sandbox:

1. ``driver_module``: each carved test becomes *driver* tests, one per (numeric input, boundary
   value): the carved test's setup and call with one number (an ``int``/``float`` literal or the
   string of a ``Decimal('...')``) replaced, the call wrapped in ``try/except Exception`` and the
   assertion dropped: a driver only makes the call happen. Running the drivers with the target's
   calls recorded (``RunRequest.record``) observes what the code does at each boundary;
2. the recordings are carved again (``carve_tests``): each becomes a real test asserting the
   observed result or exception, kept only if it then passes (it asserts today's behaviour: a
   regression oracle, as Pynguin's generated assertions are).

The values tried are the core's ``boundary_values`` (``equisa_core.inputs.neighbours``, the input
rules the repair's checks share): every numeric constant ``c`` of the target file (literals and
``Decimal('...')`` strings, booleans excluded, ``file_constants``) gives ``c - 1``, ``c``, ``c + 1``
(integers) or ``c - step``, ``c``, ``c + step`` with the constant's own decimal step (``0.01`` for
``'10.00'``); the input's own value gives its neighbours the same way; 0 is always tried.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from equisa_core.inputs.neighbours import boundary_values, edges
from equisa_core.testgen.carving import CarvedTest
from equisa_core.testgen.import_names import held_after_import, names_after_import

__all__ = [
    "file_constants",
    "driver_module",
    "driver_tests",
    "MAX_DRIVERS_PER_TEST",
    "ScratchCall",
    "scratch_driver_module",
    "scratch_test",
]

MAX_DRIVERS_PER_TEST = 24


def _decimal_call(node: ast.AST) -> ast.Call | None:
    """``node`` when it is a ``Decimal('...')`` / ``decimal.Decimal('...')`` call, else None."""
    if (
        isinstance(node, ast.Call)
        and len(node.args) == 1
        and not node.keywords
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name == "Decimal":
            return node
    return None


def _decimal_text(node: ast.AST) -> str | None:
    """The string argument of ``Decimal('...')`` / ``decimal.Decimal('...')``, else None."""
    call = _decimal_call(node)
    if call is None:
        return None
    argument = call.args[0]
    return argument.value if isinstance(argument, ast.Constant) and isinstance(argument.value, str) else None


def _number(node: ast.AST) -> Decimal | None:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return Decimal(repr(node.value))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return -inner if inner is not None else None
    text = _decimal_text(node)
    if text is not None:
        try:
            value = Decimal(text)
        except InvalidOperation:
            return None
        return value if value.is_finite() else None
    return None


def file_constants(source: str) -> list[Decimal]:
    """The numeric constants of a module (literals, ``Decimal('...')``; booleans excluded), sorted."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    found = {value for node in ast.walk(tree) if (value := _number(node)) is not None}
    return sorted(found)


def _render(original: ast.AST, value: Decimal) -> ast.expr:
    """``value`` in the form of ``original``: an int/float literal or a ``Decimal('...')`` call."""
    call = _decimal_call(original)
    if call is not None:
        replaced = copy.deepcopy(call)
        replaced.args[0] = ast.Constant(value=str(value))
        return replaced
    literal = (
        int(value)
        if value == value.to_integral_value() and "." not in _source_number(original)
        else float(value)
    )
    node: ast.expr = ast.Constant(value=abs(literal))
    return ast.UnaryOp(op=ast.USub(), operand=node) if literal < 0 else node


def _source_number(node: ast.AST) -> str:
    inner = node.operand if isinstance(node, ast.UnaryOp) else node
    return repr(inner.value) if isinstance(inner, ast.Constant) else ""


def _numeric_sites(function: ast.FunctionDef) -> list[tuple[ast.AST, str, int | None, Decimal]]:
    """(parent, field, index, value) of each numeric input in the setup and the call, not in asserts."""
    sites = []
    for statement in function.body:
        if isinstance(statement, ast.Assert):
            continue
        for parent in ast.walk(statement):
            for field, value in ast.iter_fields(parent):
                items = list(enumerate(value)) if isinstance(value, list) else [(None, value)]
                for index, child in items:
                    if not isinstance(child, ast.AST) or isinstance(parent, ast.UnaryOp):
                        continue
                    number = _number(child)
                    if number is not None and not _inside_decimal(parent):
                        sites.append((parent, field, index, number))
    return sites


def _inside_decimal(parent: ast.AST) -> bool:
    return _decimal_text(parent) is not None


def _wrap_call(function: ast.FunctionDef) -> ast.FunctionDef | None:
    """The test's statements up to its call of the member, that call in ``try/except``, no assertions.

    A carved test is its setup, then the call (``result = <call>``, or ``<call>`` inside ``with
    pytest.raises(...)``), then assertions only: the call is in the last statement that is not an
    assertion."""
    body = function.body
    last = max((i for i, s in enumerate(body) if not isinstance(s, ast.Assert)), default=None)
    if last is None:
        return None
    statement = body[last]
    call: ast.expr | None = None
    if isinstance(statement, ast.Assign | ast.Expr):  # a call, or an operator (``obj + other``)
        call = statement.value
    elif isinstance(statement, ast.With) and len(statement.body) == 1:
        inner = statement.body[0]
        call = inner.value if isinstance(inner, ast.Expr) else None
    if call is None:
        return None
    guarded = ast.Try(
        body=[ast.Expr(value=call)],
        handlers=[ast.ExceptHandler(type=ast.Name(id="Exception", ctx=ast.Load()), name=None,
                                    body=[ast.Pass()])],
        orelse=[],
        finalbody=[],
    )
    function.body = [*body[:last], guarded]
    return function


def driver_tests(
    carved: Sequence[CarvedTest], constants: Sequence[Decimal], max_per_test: int = MAX_DRIVERS_PER_TEST
) -> list[CarvedTest]:
    """Driver tests (module docstring) for ``carved``; they keep the carved tests' imports.

    Named ``test_drive_<carved name>_<n>``; a carved test without numeric inputs gives none.
    """
    drivers: list[CarvedTest] = []
    for test in carved:
        tree = ast.parse(test.code)
        function = tree.body[0]
        if not isinstance(function, ast.FunctionDef):
            continue
        count = 0
        for site_index in range(len(_numeric_sites(function))):
            if count >= max_per_test:
                break
            own = _numeric_sites(function)[site_index][3]
            for value in boundary_values(constants, own):
                if count >= max_per_test:
                    break
                variant = copy.deepcopy(function)
                parent, field, index, _ = _numeric_sites(variant)[site_index]
                original = getattr(parent, field) if index is None else getattr(parent, field)[index]
                replacement = _render(original, value)
                if index is None:
                    setattr(parent, field, replacement)
                else:
                    getattr(parent, field)[index] = replacement
                wrapped = _wrap_call(variant)
                if wrapped is None:
                    break
                wrapped.name = f"test_drive_{test.name.removeprefix('test_')}_{count}"
                code = ast.unparse(ast.fix_missing_locations(ast.Module(body=[wrapped], type_ignores=[])))
                drivers.append(test.model_copy(update={"name": wrapped.name, "code": code + "\n"}))
                count += 1
    return drivers


# --- drivers from scratch: functions no existing test calls --------------------------------------

_MAX_SCRATCH_CALLS = 24
_STR_CONSTANTS = 4


def _literal(node: ast.expr | None) -> str | None:
    if node is None:
        return None
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return ast.unparse(node)


def _strings(function: ast.AST) -> list[str]:
    found: list[str] = []
    for node in ast.walk(function):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) <= 40:
            text = repr(node.value)
            if text not in found and not (
                node.value.strip() and " " in node.value.strip() and len(node.value) > 20
            ):
                found.append(text)
    return found[:_STR_CONSTANTS]


def _numbers(constants: Sequence[Decimal], floats: bool) -> list[str]:
    values = [Decimal(0), Decimal(1), Decimal(-1)]
    for constant in constants:
        for value in edges(constant):
            if value not in values:
                values.append(value)
    if floats:
        return [repr(float(v)) for v in values]
    return [str(int(v)) for v in values if v == v.to_integral_value()]


def _candidates(
    arg: ast.arg, default: ast.expr | None, function: ast.AST, constants: Sequence[Decimal]
) -> list[str]:
    """Argument texts to try for one parameter: its default first, then by annotation."""
    values: list[str] = []
    literal = _literal(default)
    if literal is not None:
        values.append(literal)
    annotation = ast.unparse(arg.annotation) if arg.annotation is not None else ""
    kind = annotation.replace("typing.", "").split("[", 1)[0].split("|", 1)[0].strip()
    if kind == "bool":
        values += ["True", "False"]
    elif kind == "int":
        values += _numbers(constants, floats=False)
    elif kind == "float":
        values += _numbers(constants, floats=True)
    elif kind == "str":
        values += ["''", "'a'", *_strings(function)]
    elif kind in ("list", "List", "Sequence", "Iterable"):
        values += ["[]", "[1, 2, 3]", "['a', 'b']"]
    elif kind in ("dict", "Dict", "Mapping"):
        values += ["{}", "{'a': 1}"]
    elif not annotation:  # strings first when the function has string constants, else numbers
        numbers, strings = _numbers(constants, floats=False)[:6], _strings(function)
        values += [*strings, *numbers] if strings else numbers
        values += ["None", "[]", "[1, 2, 3]"]
    else:
        return values  # a class or a protocol: nothing literal fits
    return list(dict.fromkeys(values))


def _one_at_a_time(options: Sequence[list[str]], limit: int) -> list[list[str]]:
    """Argument lists: the first option of each, then each parameter varied alone, at most ``limit``."""
    if any(not o for o in options):
        return []
    base = [o[0] for o in options]
    calls = [base]
    for index, choices in enumerate(options):
        for choice in choices[1:]:
            if len(calls) >= limit:
                return calls
            calls.append([*base[:index], choice, *base[index + 1 :]])
    return calls


@dataclass(frozen=True)
class ScratchCall:
    """One driver call: the driver test that makes it, the function called, the call's text."""

    test: str
    qualname: str
    call: str


def scratch_driver_module(
    source: str, module: str, qualnames: Iterable[str], max_calls: int = _MAX_SCRATCH_CALLS
) -> tuple[str | None, list[ScratchCall]]:
    """A pytest module calling module-level functions (and methods of classes whose ``__init__``
    takes literal arguments, on a fresh object each time) with boundary and typical literal
    arguments, one parameter varied at a time, at most ``max_calls`` per function: one driver test
    per call, the call guarded by ``try/except Exception``. None when no function of ``qualnames``
    can be called with literals (async, positional-only, parameters typed with classes). A name the
    module does not hold after its import (``del helper``: ``import_names``) is never called.
    """
    constants = file_constants(source)
    held = names_after_import(source)
    wanted = {q for q in qualnames if held_after_import(q, held)}
    made: list[ScratchCall] = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name in wanted and not node.name.startswith("_"):
            options = _literal_params(node, False, constants)
            if options is not None:
                texts = [f"{node.name}({', '.join(c)})" for c in _one_at_a_time(options, max_calls)]
                made += _driver_calls(node.name, texts)
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for qualname, texts in _method_calls(node, wanted, constants, max_calls):
                made += _driver_calls(qualname, texts)
    if not made:
        return None, []
    return driver_module(module, made), made


def driver_module(module: str, calls: Sequence[ScratchCall], names: Sequence[str] = ()) -> str:
    """A pytest module with one driver test per call, the call guarded by ``try/except Exception``
    (a driver only makes the call happen, for the recorder): the names ``calls`` use imported from
    ``module`` (``names``: the module's names the arguments start from, ``DocstringStyle``), and
    ``datetime`` and ``decimal`` when an argument is written as one of their calls."""
    imported = sorted({c.qualname.split(".")[0] for c in calls} | set(names))
    tests = [
        f"def {c.test}():\n    try:\n        {c.call}\n    except Exception:\n        pass\n" for c in calls
    ]
    values = [f"import {m}\n" for m in ("datetime", "decimal") if any(f"{m}." in c.call for c in calls)]
    header = "".join(values) + ("\n" if values else "") + f"from {module} import {', '.join(imported)}\n\n\n"
    return header + "\n\n".join(tests)


def _literal_params(
    function: ast.FunctionDef | ast.AsyncFunctionDef | None, skip_first: bool, constants: list[Decimal]
) -> list[list[str]] | None:
    """Candidates per positional parameter (``*args``/``**kwargs`` left empty); None: not callable
    with literals."""
    if function is None:
        return []
    if isinstance(function, ast.AsyncFunctionDef) or function.args.posonlyargs:
        return None
    positional = list(function.args.args)[1 if skip_first else 0 :]
    defaults = [None] * (len(positional) - len(function.args.defaults)) + list(function.args.defaults)
    options = [_candidates(a, d, function, constants) for a, d in zip(positional, defaults, strict=True)]
    return options if all(options) else None


def _method_calls(
    node: ast.ClassDef, wanted: set[str], constants: list[Decimal], max_calls: int
) -> list[tuple[str, list[str]]]:
    """(Class.method, call texts) for the wanted public methods of a class built from literals."""
    methods = {m.name: m for m in node.body if isinstance(m, ast.FunctionDef)}
    targets = [
        m
        for name, m in methods.items()
        if f"{node.name}.{name}" in wanted and not name.startswith("_") and not m.decorator_list
    ]
    init_options = _literal_params(methods.get("__init__"), True, constants)
    if not targets or init_options is None:
        return []
    constructions = _one_at_a_time(init_options, 4)
    found = []
    for method in targets:
        options = _literal_params(method, True, constants)
        if options is None:
            continue
        calls = _one_at_a_time(options, max(1, max_calls // len(constructions)))
        texts = [
            f"{node.name}({', '.join(k)}).{method.name}({', '.join(c)})" for k in constructions for c in calls
        ]
        found.append((f"{node.name}.{method.name}", texts[:max_calls]))
    return found


def _driver_calls(qualname: str, calls: Iterable[str]) -> list[ScratchCall]:
    """One driver test per call of ``qualname``."""
    stem = qualname.replace(".", "_")
    return [
        ScratchCall(test=f"test_scratch_{stem}_{number}", qualname=qualname, call=call)
        for number, call in enumerate(calls)
    ]


def scratch_test(
    call: ScratchCall, module: str, result_literal: str | None, raised: str | None, name: str
) -> tuple[str, set[str]] | None:
    """A test asserting what one driver call was observed to do, and its imports; None when that
    cannot be written (a result with no literal, an exception that cannot be named, a TypeError,
    which only says the driver guessed the arguments wrong).

    ``raised`` is the exception's qualified type ('builtins.ValueError', 'pkg.mod.Error').
    """
    imports = {f"from {module} import {call.qualname.split('.')[0]}"}
    if raised is not None:
        owner, _, exception = raised.rpartition(".")
        if exception == "TypeError" or not exception.isidentifier():
            return None
        if owner not in ("builtins", module):
            return None
        if owner == module:
            imports.add(f"from {module} import {exception}")
        imports.add("import pytest")
        return f"def {name}():\n    with pytest.raises({exception}):\n        {call.call}\n", imports
    if result_literal is None:
        return None
    try:
        value = ast.literal_eval(result_literal)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if value is None or isinstance(value, bool):
        check = f"assert {call.call} is {result_literal}"
    elif isinstance(value, float):
        imports.add("import pytest")
        check = f"assert {call.call} == pytest.approx({result_literal})"
    else:
        check = f"assert {call.call} == {result_literal}"
    return f"def {name}():\n    {check}\n", imports

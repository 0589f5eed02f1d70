"""Disambiguating tests carved from recorded executions (the deterministic test generator).

The members of an ambiguity group are executed by exactly the same tests, so no spectrum formula
can tell them apart (seed 000 §1, Problem 1). A test that executes one member *alone* splits the
group. Carving builds such tests without a model: the probe records the arguments and the result
or exception of every call of the members (``RunRequest.record``); each recorded call becomes a
test that rebuilds those arguments, calls that one member directly, and asserts what the real run
observed.

What is trusted:

- a call recorded in a passing test: its result (floats and flat containers of numbers compared
  with ``pytest.approx``; values rebuilt from a build, such as ``Decimal``, exactly with ``==``;
  an object by its exact type and then attribute by attribute, since a plain class compares by
  identity) or its exception;
- a call recorded in a failing (or erroring, or skipped) test: only an exception, and not the one
  the test failed with when the traceback runs through the member — that exception may be the bug
  itself, and a test asserting it would pass on the buggy code and clear the culprit. A value
  returned in a failing test is exactly what cannot be trusted;
- nothing from flaky tests, and no inputs seen with two different outcomes (the member then
  depends on something beyond its arguments).

Arguments are rebuilt from their literals, or from their builds (``equisa_core.common.values``: stdlib
values such as ``decimal.Decimal('10.00')`` or dates, enum members, and plain objects, nested ones
included, as ``obj = Cls.__new__(Cls); obj.__dict__.update({...})``, with ``object.__setattr__``
for slots, so frozen dataclasses too, without running ``__init__``); objects of older records
from their literal ``state`` the same way; classes by name. A call with any other argument is
skipped, as are functions nested in others (``<locals>``).
The recorded arguments carry names but not their kinds. When the member's definition is given
(``sources``), each test calls it as a maintainer would, every argument placed by its kind
(``call_shape``): ``total(items, 2, strict=True)``, ``cart.add(item)`` on the rebuilt instance,
``Rate.named('vat')``. Otherwise (no source, a property, an async function) the test goes
through one small helper, ``_equisa_call``, that places each argument by the member's signature
at run time; the module defines the helper only when a test needs it.

Carved tests still have to be run before they are kept: a member that reads global state, files
or the clock gives tests that fail on the code they were carved from.
(Generators need no special case: the probe records each resumption as a call with the same
arguments and another result — the value yielded, then None — so they are dropped as
non-deterministic.)
"""

from __future__ import annotations

import ast
import keyword
import re
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.models import EncodedValue, Node, RecordedCall, SuiteTrace, TestOutcome, TestResult
from equisa_core.common.source_edit import function_source
from equisa_core.common.testcode import GENERATED_TESTS_DIR
from equisa_core.common.values import build_expression, object_build, parse_build, walk_build
from equisa_core.errors import EquisaError, ProbeProtocolError
from equisa_core.testgen.call_shape import CallShape, Constructor, call_shape, constructor_of

__all__ = [
    "GENERATED_TESTS_DIR",
    "CarvedTest",
    "carve_tests",
    "carved_module",
    "carved_module_path",
]


#: Exceptions a carved test never asserts: interpreter control flow and test-runner outcomes.
_UNASSERTABLE_EXCEPTIONS = frozenset(
    {"builtins.BaseException", "builtins.GeneratorExit", "builtins.KeyboardInterrupt", "builtins.SystemExit"}
)
_UNASSERTABLE_MODULES = ("_pytest.", "pytest.", "equisa_probe.")
_NAMESPACE_TYPES = frozenset({"types.SimpleNamespace", "argparse.Namespace"})
_CLASS_REPR = re.compile(r"<class '([A-Za-z_][\w.]*)'>\Z")
_HELPER = "_equisa_call"
#: A result list or tuple holding objects is asserted item by item up to this many items.
MAX_ITEMWISE = 6
_RESERVED = frozenset({"pytest", "inspect", "object", "type", "getattr", _HELPER})

_HELPER_SOURCE = f'''\
def {_HELPER}(function, /, **arguments):
    """Call ``function`` with its recorded arguments, each placed as the signature wants."""
    if isinstance(function, property):
        function = function.fget if len(arguments) < 2 else function.fset
    elif type(function).__name__ == "cached_property":
        function = function.func
    if inspect.ismethod(function) and arguments:
        first = next(iter(arguments))
        if arguments[first] is function.__self__:  # a classmethod: the class is already bound
            del arguments[first]
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return function(**arguments)
    positional, keywords, in_order = [], {{}}, True
    for parameter in parameters:
        if parameter.name not in arguments:
            in_order = in_order and parameter.kind not in (parameter.POSITIONAL_ONLY,
                                                           parameter.POSITIONAL_OR_KEYWORD)
            continue
        value = arguments.pop(parameter.name)
        if parameter.kind is parameter.VAR_POSITIONAL:
            positional.extend(value)
        elif parameter.kind is parameter.VAR_KEYWORD:
            keywords.update(value)
        elif parameter.kind is parameter.KEYWORD_ONLY or not in_order:
            keywords[parameter.name] = value
        else:
            positional.append(value)
    keywords.update(arguments)
    return function(*positional, **keywords)
'''


class CarvedTest(BaseModel):
    """One test that calls one ambiguity-group member directly with recorded arguments."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="The test function's name, unique among one carving's tests.")
    target_fqn: str = Field(description="The member the test calls.")
    source_test: str = Field(description="Id of the test the call was recorded in.")
    expects: Literal["result", "exception"] = Field(description="What the test asserts.")
    code: str = Field(description="The test function's source; needs ``imports`` and the helper.")
    imports: tuple[str, ...] = Field((), description="Import statements the code needs.")


# ---------------------------------------------------------------------------------------------
# Names: where a dotted name's module ends, and what a carved module binds.


def _module_of(fqn: str, file: str | None) -> str | None:
    """The module part of ``fqn``, found as the longest dotted suffix of ``file`` that prefixes it.

    ``invoicing.discounts.ThresholdDiscount.applies`` in ``src/invoicing/discounts.py`` gives
    ``invoicing.discounts``: the FQN's module part is the name the code was imported under.
    """
    if not file or not file.endswith(".py"):
        return None
    parts = file[: -len(".py")].replace("\\", "/").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    for start in range(len(parts)):
        candidate = ".".join(parts[start:])
        if candidate and fqn.startswith(candidate + "."):
            return candidate
    return None


def _modules_of(sources: Mapping[str, str]) -> dict[str, str]:
    """Module name -> text for files given by path: every dotted suffix of the path names it
    (``src/shop/money.py`` is ``shop.money`` when imported from ``src``), so a class is found under
    the module name its objects record."""
    modules: dict[str, str] = {}
    for file, text in sources.items():
        if not file.endswith(".py"):
            continue
        parts = file[: -len(".py")].replace("\\", "/").split("/")
        if parts[-1] == "__init__":
            parts.pop()
        for start in range(len(parts)):
            if all(_is_name(part) for part in parts[start:]):
                modules.setdefault(".".join(parts[start:]), text)
    return modules


def _guess_module(dotted: str, known_modules: Collection[str]) -> str | None:
    """The module part of a type's dotted name: a known module, else up to the first CapWord."""
    best = max((m for m in known_modules if dotted.startswith(m + ".")), key=len, default=None)
    if best is not None:
        return best
    parts = dotted.split(".")
    if len(parts) < 2:
        return None
    for index, part in enumerate(parts[1:], start=1):
        if part.lstrip("_")[:1].isupper():
            return ".".join(parts[:index])
    return ".".join(parts[:-1])


def _rebuildable_type(dotted: str) -> bool:
    """Whether an object of this type can be rebuilt from ``__dict__`` alone (``Cls.__new__``).

    Project and third-party classes, and namespaces; not functions, modules or other types of
    the standard library, whose instances keep their real state elsewhere.
    """
    return dotted in _NAMESPACE_TYPES or dotted.split(".", 1)[0] not in sys.stdlib_module_names


def _is_name(text: str) -> bool:
    return text.isidentifier() and not keyword.iskeyword(text)


def _attribute(owner_parts: Sequence[str], name: str) -> str:
    """How ``name`` defined in class ``owner_parts[-1]`` is reached as an attribute (mangling)."""
    if owner_parts and name.startswith("__") and not name.endswith("__"):
        owner = owner_parts[-1].lstrip("_")
        if owner:
            return f"_{owner}{name}"
    return name


class _Namespace:
    """The module-level names one carving binds by imports, allocated without clashes."""

    def __init__(self) -> None:
        self.by_identity: dict[tuple[str, ...], str] = {}
        self.taken: dict[str, tuple[str, ...]] = {name: ("reserved", name) for name in _RESERVED}

    def _bind(self, identity: tuple[str, ...], preferred: str, fallback: str) -> str:
        known = self.by_identity.get(identity)
        if known is not None:
            return known
        name, counter = preferred, 1
        while name in self.taken:
            name = fallback if counter == 1 else f"{fallback}_{counter}"
            counter += 1
        self.taken[name] = identity
        self.by_identity[identity] = name
        return name

    def from_import(self, module: str, top: str) -> tuple[str, str]:
        """The name bound to ``top`` of ``module`` and the import statement binding it."""
        name = self._bind(("from", module, top), top, f"{top}_{module.replace('.', '_')}")
        if name == top:
            return name, f"from {module} import {top}"
        return name, f"from {module} import {top} as {name}"

    def module(self, module: str) -> tuple[str, str]:
        """An expression naming ``module`` and the import statement that makes it valid."""
        root = module.split(".", 1)[0]
        identity = ("root", root)
        if self.taken.get(root, identity) == identity:
            self.taken[root] = identity
            self.by_identity[identity] = root
            return module, f"import {module}"
        alias = module.replace(".", "_") + "_module"
        name = self._bind(("module", module), alias, alias)
        return name, f"import {module} as {name}"


@dataclass(frozen=True)
class _Target:
    fqn: str
    module: str
    qualname: tuple[str, ...]
    file: str | None

    @property
    def code_name(self) -> str:
        return self.qualname[-1]


# ---------------------------------------------------------------------------------------------
# Rebuilding values as code.


def _literal(text: str | None) -> str | None:
    """``text`` when it is a Python literal (so safe to paste into code), else None."""
    if text is None:
        return None
    try:
        ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return text


class _Builder:
    """Turns recorded values into code for one carving, sharing its namespace."""

    def __init__(self, namespace: _Namespace, known_modules: Collection[str], targets: Sequence[_Target],
                 definitions: Mapping[str, str] | None = None):
        self.namespace = namespace
        self.known_modules = known_modules
        # Classes of the targets' own modules are imported by name, like the targets.
        self.target_modules = {t.module for t in targets}
        self.definitions = definitions or {}  # module -> its text, where constructors are read
        self.constructors: dict[tuple[str, str], Constructor | None] = {}

    def constructor(self, module: str | None, qualname: str) -> Constructor | None:
        """How the class's constructor rebuilds its objects (``call_shape.constructor_of``), if it does."""
        if module is None or module not in self.definitions:
            return None
        key = (module, qualname)
        if key not in self.constructors:
            self.constructors[key] = constructor_of(self.definitions[module], qualname)
        return self.constructors[key]

    def type_expression(self, dotted: str, imports: set[str]) -> str | None:
        """An expression for the class named ``dotted`` ('module.Qual.Name'), adding its import."""
        if "<" in dotted or not all(_is_name(part) for part in dotted.split(".")):
            return None
        if "." not in dotted:
            return dotted  # repr of a builtin class: "<class 'int'>"
        if dotted.startswith("builtins."):
            rest = dotted[len("builtins.") :]
            return rest if "." not in rest else None
        module = _guess_module(dotted, self.known_modules)
        if module is None:
            return None
        return self.class_expression(module, dotted[len(module) + 1 :], imports)

    def class_expression(self, module: str, qualname: str, imports: set[str]) -> str | None:
        """An expression for class ``qualname`` of ``module`` (both known exactly), adding its import."""
        parts = qualname.split(".")
        if not all(_is_name(part) for part in [*module.split("."), *parts]):
            return None
        if module == "builtins":
            return qualname if len(parts) == 1 else None
        if module in self.target_modules:
            name, statement = self.namespace.from_import(module, parts[0])
            imports.add(statement)
            return ".".join([name, *parts[1:]])
        expression, statement = self.namespace.module(module)
        imports.add(statement)
        return ".".join([expression, *parts])

    def value(self, value: EncodedValue, emitter: _Emitter, hint: str) -> str | None:
        """An expression equal to ``value`` (setup lines go to ``emitter``), or None if it can't be rebuilt.

        ``hint`` names the local an object is rebuilt in; a local is allocated only after the
        object's class is imported, so it can avoid every name the imports bind.
        """
        literal = _literal(value.literal)
        if literal is not None:
            return literal
        node = _parsed(value.build)
        if node is not None:
            expression = build_expression(node, emitter, hint)
            if expression is not None:
                return expression
        if value.state is not None and _rebuildable_type(value.type):
            items = []
            for attribute, text in value.state.items():
                if _literal(text) is None:
                    return None
                items.append(f"{attribute!r}: {text}")
            cls = self.type_expression(value.type, emitter.imports)
            if cls is None:
                return None
            name = emitter.variable(hint)
            emitter.statement(f"{name} = {cls}.__new__({cls})")
            if items:
                emitter.statement(f"{name}.__dict__.update({{{', '.join(items)}}})")
            return name
        match = _CLASS_REPR.match(value.repr or "")
        if match is not None and value.type.endswith(("type", "Meta", "meta")):
            return self.type_expression(match.group(1), emitter.imports)
        return None


class _Emitter:
    """Where rebuilt values of one carved test put their imports, setup lines and locals.

    Implements ``values.Emitter``: modules and classes are named through the carving's
    namespace, locals avoid every name bound so far.
    """

    def __init__(self, builder: _Builder, imports: set[str], setup: list[str], locals_: set[str]) -> None:
        self.builder = builder
        self.imports = imports
        self.setup = setup
        self.locals = locals_

    def module(self, name: str) -> str:
        expression, statement = self.builder.namespace.module(name)
        self.imports.add(statement)
        return expression

    def cls(self, module: str | None, qualname: str) -> str | None:
        if module is None:
            return self.builder.type_expression(qualname, self.imports)
        return self.builder.class_expression(module, qualname, self.imports)

    def variable(self, hint: str) -> str:
        local = _local(hint, self.builder.namespace.taken.keys() | self.locals)
        self.locals.add(local)
        return local

    def statement(self, line: str) -> None:
        self.setup.append(line)

    def constructor(self, module: str | None, qualname: str) -> Constructor | None:
        return self.builder.constructor(module, qualname)


def _parsed(build: str | None) -> ast.expr | None:
    """The checked syntax tree of a recorded build, or None when there is none or it is rejected."""
    if build is None:
        return None
    try:
        return parse_build(build)
    except ProbeProtocolError:
        return None


# ---------------------------------------------------------------------------------------------
# Choosing the calls.


@dataclass(frozen=True)
class _Candidate:
    call: RecordedCall
    test: TestResult
    index: int  # order of appearance in the trace
    inputs: tuple[tuple[str, str], ...]
    outcome: tuple[str, str]  # ("result", literal) or ("exception", type)

    @property
    def trusted_source(self) -> bool:
        return self.test.outcome is TestOutcome.PASSED


def _input_key(value: EncodedValue) -> str:
    if value.literal is not None:
        return "L" + value.literal
    if value.build is not None:
        return "B" + value.build
    if value.state is not None:
        return "S" + value.type + repr(sorted(value.state.items()))
    return "R" + value.type + (value.repr or "")


def _snake(name: str) -> str:
    """``CurrencyMismatch`` -> ``currency_mismatch``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _behaviour(outcome: tuple[str, str], target: _Target) -> str:
    """What a carved test checks, as words for its name: ``raises_value_error``, ``returns_true``,
    ``returns_5``, ``returns_empty_list``, ``returns_a_money``, ``succeeds`` (a constructor)."""
    kind, value = outcome
    if kind == "exception":
        return "raises_" + _snake(value.rsplit(".", 1)[-1])
    if target.code_name == "__init__":
        return "succeeds"
    literal = _literal(value)
    if literal is None:
        node = _parsed(value)
        found = object_build(node) if node is not None else None
        if found is not None:
            return "returns_a_" + _snake(found.qualname.rsplit(".", 1)[-1])
        callee = node.func if isinstance(node, ast.Call) else None
        name = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", "value")
        return "returns_a_" + _snake(str(name))
    parsed = ast.literal_eval(literal)
    if parsed is None or isinstance(parsed, bool):
        return f"returns_{str(parsed).lower()}"
    if isinstance(parsed, int | float) and len(literal) <= 8:
        return "returns_" + literal.replace("-", "minus_").replace(".", "_")
    if isinstance(parsed, str) and parsed and len(parsed) <= 12 and re.fullmatch(r"\w+", parsed, re.ASCII):
        return "returns_" + _snake(parsed)
    if isinstance(parsed, list | tuple | dict | set | str | bytes) and not parsed:
        return f"returns_empty_{type(parsed).__name__}"
    return f"returns_a_{type(parsed).__name__}"


def _numbered(name: str, taken: set[str]) -> str:
    """``name``, or ``name_2``, ``name_3``... when it is taken."""
    if name not in taken:
        return name
    number = 2
    while f"{name}_{number}" in taken:
        number += 1
    return f"{name}_{number}"


def _short_exception(raised: str) -> str:
    return raised[len("builtins.") :] if raised.startswith("builtins.") else raised


def _assertable_exception(raised: str) -> bool:
    return raised not in _UNASSERTABLE_EXCEPTIONS and not raised.startswith(_UNASSERTABLE_MODULES)


def _failure_came_from(test: TestResult, call: RecordedCall, target: _Target) -> bool:
    """Whether the exception ``call`` raised is, as far as the trace shows, the one that failed ``test``."""
    if call.raised is None or test.exception_type != _short_exception(call.raised):
        return False
    if not test.traceback:
        return True
    return any(
        frame.function == target.code_name and (target.file is None or frame.file == target.file)
        for frame in test.traceback
    )


def _outcome_of(call: RecordedCall, test: TestResult, target: _Target) -> tuple[str, str] | None:
    """What a carved test may assert about ``call``, or None when nothing can be trusted."""
    if call.raised is not None:
        if not _assertable_exception(call.raised):
            return None
        if test.outcome is not TestOutcome.PASSED and _failure_came_from(test, call, target):
            return None
        return ("exception", call.raised)
    if test.outcome is not TestOutcome.PASSED or call.result is None:
        return None
    literal = _literal(call.result.literal)
    if literal is not None and _hash_ordered_inputs(call) and _shows_order(literal):
        return None  # ``repr`` of a set of texts, or an item it gave first: PYTHONHASHSEED decides
    if literal is not None:
        return ("result", literal)
    build = call.result.build
    node = _parsed(build)
    if build is None or node is None or not _assertable(node):
        return None
    return ("result", build)


def _hash_ordered_inputs(call: RecordedCall) -> bool:
    """Whether an argument of ``call`` (``self`` included) holds a set of anything but numbers: its
    iteration order, pinned in the sandbox by ``PYTHONHASHSEED``, changes in the user's runs."""
    for value in call.args.values():
        node = _parsed(value.literal if value.literal is not None else value.build)
        if node is None:
            continue
        for part in walk_build(node):
            if isinstance(part, ast.Set) and any(not _number(item) for item in part.elts):
                return True
    return False


def _number(node: ast.expr) -> bool:
    value = node.operand if isinstance(node, ast.UnaryOp) else node
    return isinstance(value, ast.Constant) and type(value.value) in (int, float)


def _shows_order(literal: str) -> bool:
    """Whether a result's literal is compared in an order (a text, list or tuple: not a number, a
    set or a dict, whose equality ignores the order)."""
    return not isinstance(ast.literal_eval(literal), bool | int | float | complex | set | frozenset | dict
                          | type(None))


def _is_nan(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float"
        and bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == "nan"
    )


def _assertable(node: ast.expr) -> bool:
    """Whether a built result can be asserted: no NaN, and objects only where they are compared
    attribute by attribute (the result itself, an item of a short list or tuple of results, or an
    attribute of an asserted object)."""
    found = object_build(node)
    if found is not None:
        return all(_assertable(child) for child in (*found.attributes.values(), *found.slots.values()))
    if _itemwise(node):
        return all(_assertable(item) for item in node.elts)  # type: ignore[attr-defined]
    return not any(_is_nan(part) or object_build(part) is not None for part in walk_build(node))


def _itemwise(node: ast.expr) -> bool:
    """Whether ``node`` is a list or tuple asserted item by item: it holds an object, and at most
    ``MAX_ITEMWISE`` items."""
    return (isinstance(node, ast.List | ast.Tuple) and len(node.elts) <= MAX_ITEMWISE
            and any(object_build(part) is not None for part in walk_build(node)))


def _distance(a: _Candidate, b: _Candidate) -> int:
    """Arguments whose recorded values differ between two calls."""
    left, right = dict(a.inputs), dict(b.inputs)
    return sum(left.get(name) != right.get(name) for name in left.keys() | right.keys())


def _select(candidates: list[_Candidate], limit: int) -> list[_Candidate]:
    """Up to ``limit`` calls with distinct inputs, spread over outcomes and argument values.

    Inputs seen with two different outcomes are dropped. Among the rest, each pick prefers an
    outcome kind not chosen yet, then the call whose arguments differ most from those chosen
    (the smallest number of differing arguments to any chosen call, maximised), then the
    earliest call; calls from passing tests come first among equal inputs.
    """
    outcomes: dict[tuple[tuple[str, str], ...], set[tuple[str, str]]] = {}
    for candidate in candidates:
        outcomes.setdefault(candidate.inputs, set()).add(candidate.outcome)
    unique: dict[tuple[tuple[str, str], ...], _Candidate] = {}
    for candidate in sorted(candidates, key=lambda c: (not c.trusted_source, c.index)):
        if len(outcomes[candidate.inputs]) == 1:
            unique.setdefault(candidate.inputs, candidate)
    pool = sorted(unique.values(), key=lambda c: c.index)
    chosen: list[_Candidate] = []
    while pool and len(chosen) < limit:
        kinds = {c.outcome[0] for c in chosen}

        def preference(candidate: _Candidate, kinds: set[str] = kinds) -> tuple[int, int, int]:
            spread = min((_distance(candidate, c) for c in chosen), default=0)
            return (candidate.outcome[0] not in kinds, spread, -candidate.index)

        best = max(pool, key=preference)
        chosen.append(best)
        pool.remove(best)
    return chosen


# ---------------------------------------------------------------------------------------------
# Writing the tests.


def _expectation_lines(outcome: tuple[str, str], call_expression: str, result: str,
                       exception: str | None, emitter: _Emitter) -> list[str] | None:
    """The lines that call the member and assert ``outcome``; None when a class cannot be named."""
    kind, value = outcome
    if kind == "exception":
        emitter.imports.add("import pytest")
        return [f"with pytest.raises({exception}):", f"    {call_expression}"]
    checks: list[str] | None
    if _literal(value) is not None:
        checks = _literal_assertion(result, value, emitter)
    else:
        checks = _built_assertions(result, parse_build(value), emitter)
    return None if checks is None else [f"{result} = {call_expression}", *checks]


def _literal_assertion(subject: str, text: str, emitter: _Emitter) -> list[str]:
    """``subject is None``/``True``/``False``, ``== pytest.approx(...)`` for floats, else ``==``."""
    parsed = ast.literal_eval(text)
    if parsed is None or isinstance(parsed, bool):
        return [f"assert {subject} is {text}"]
    if _approximate(parsed):
        emitter.imports.add("import pytest")
        return [f"assert {subject} == pytest.approx({text})"]
    return [f"assert {subject} == {text}"]


def _built_assertions(subject: str, node: ast.expr, emitter: _Emitter) -> list[str] | None:
    """Assertions that ``subject`` equals the build ``node`` (one ``_assertable`` allows).

    An object: its exact type, then each recorded attribute in turn (a plain class compares by
    identity, so ``==`` against a rebuilt copy would fail); a short list or tuple holding objects:
    its length, then each item so; anything else: ``==`` (``Decimal``
    exactly, never approximately).
    """
    try:
        text = ast.unparse(node)
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    else:
        return _literal_assertion(subject, text, emitter)
    if _itemwise(node):
        assert isinstance(node, ast.List | ast.Tuple)
        lines = [f"assert len({subject}) == {len(node.elts)}"]
        for index, item in enumerate(node.elts):
            checks = _built_assertions(f"{subject}[{index}]", item, emitter)
            if checks is None:
                return None
            lines.extend(checks)
        return lines
    found = object_build(node)
    if found is None:
        expression = build_expression(node, emitter, "expected")
        return None if expression is None else [f"assert {subject} == {expression}"]
    cls = emitter.cls(found.module, found.qualname)
    if cls is None:
        return None
    lines = [f"assert type({subject}) is {cls}"]
    for attribute, child in (*found.attributes.items(), *found.slots.items()):
        access = f"{subject}.{attribute}" if _is_name(attribute) else f"getattr({subject}, {attribute!r})"
        checks = _built_assertions(access, child, emitter)
        if checks is None:
            return None
        lines.extend(checks)
    return lines


def _approximate(value: object) -> bool:
    """Whether ``value`` holds floats that ``pytest.approx`` can compare (a flat container at most)."""

    def number(item: object) -> bool:
        return isinstance(item, int | float | complex) and not isinstance(item, bool)

    if isinstance(value, float | complex):
        return True
    if isinstance(value, list | tuple) and value:
        items = list(value)
    elif isinstance(value, dict) and value:
        items = list(value.values())
    else:
        return False
    return all(number(item) for item in items) and any(isinstance(i, float | complex) for i in items)


def _local(preferred: str, taken: Collection[str]) -> str:
    name = preferred
    while name in taken:
        name += "_"
    return name


def _placed(shape: CallShape, arguments: dict[str, str]) -> tuple[str | None, list[str], list[str]] | None:
    """(the receiver's expression for a method, else None; the positional arguments; the keyword
    ones, ``name=value``) with each recorded argument (name -> expression) placed by its kind;
    None when the names do not fit."""
    parameters = list(shape.parameters)
    left = dict(arguments)
    receiver = None
    if shape.binding == "method":
        receiver = left.pop(parameters.pop(0)[0], None)
        if receiver is None:
            return None
    elif shape.binding == "classmethod":
        left.pop(parameters.pop(0)[0], None)  # the class is bound by the reference
    positional: list[str] = []
    keywords: list[str] = []
    in_order = True
    for parameter, kind in parameters:
        if parameter not in left:
            in_order = in_order and kind not in ("positional_only", "positional")
            continue
        expression = left.pop(parameter)
        if kind == "var_positional":
            items = _unpacked(expression)
            if items is None or (items and not in_order):
                return None
            positional.extend(items)
        elif kind == "var_keyword":
            pairs = _keywords(expression)
            if pairs is None:
                return None
            keywords.extend(pairs)
        elif kind == "positional_only" and not in_order:
            return None
        elif kind == "keyword_only" or not in_order:
            keywords.append(f"{parameter}={expression}")
        else:
            positional.append(expression)
    if left:
        return None  # a recorded name the definition does not have: it is not the function called
    return receiver, positional, keywords


def _unpacked(expression: str) -> list[str] | None:
    """A tuple expression's items as texts (``*args`` spelt out); None when it is not a tuple display."""
    node = _parsed_expression(expression)
    if not isinstance(node, ast.Tuple):
        return None
    if any(isinstance(item, ast.Starred) for item in node.elts):
        return None
    return [ast.unparse(item) for item in node.elts]


def _keywords(expression: str) -> list[str] | None:
    """A dict display's items as ``name=value`` (``**kwargs`` spelt out); None when a key is not a
    name."""
    node = _parsed_expression(expression)
    if not isinstance(node, ast.Dict):
        return None
    pairs = []
    for key, value in zip(node.keys, node.values, strict=True):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str) and _is_name(key.value)):
            return None
        pairs.append(f"{key.value}={ast.unparse(value)}")
    return pairs


def _parsed_expression(text: str) -> ast.expr | None:
    try:
        return ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError):
        return None


#: Special methods as the code that calls them is written: ``a + b``, not ``a.__add__(b)``.
_BINARY_OPERATORS = {
    "__add__": "+", "__sub__": "-", "__mul__": "*", "__truediv__": "/", "__floordiv__": "//",
    "__mod__": "%", "__pow__": "**", "__matmul__": "@", "__and__": "&", "__or__": "|", "__xor__": "^",
    "__lshift__": "<<", "__rshift__": ">>", "__eq__": "==", "__ne__": "!=", "__lt__": "<",
    "__le__": "<=", "__gt__": ">", "__ge__": ">=",
}
_UNARY_OPERATORS = {"__neg__": "-", "__pos__": "+", "__invert__": "~"}
_BUILTIN_CALLS = {"__len__": "len", "__str__": "str", "__repr__": "repr", "__bool__": "bool",
                  "__hash__": "hash", "__abs__": "abs", "__int__": "int", "__float__": "float"}


#: Expressions that need no parentheses as an operand.
_OPERANDS = (ast.Name, ast.Constant, ast.Call, ast.Attribute, ast.Subscript, ast.Tuple, ast.List, ast.Dict,
             ast.Set, ast.UnaryOp)


def _operator_form(name: str, receiver: str, positional: Sequence[str], keywords: Sequence[str],
                   ) -> str | None:
    """How a special method's call is written (``obj + other``, ``len(obj)``, ``obj[key]``,
    ``key in obj``); None for another method, or arguments that do not fit the form."""
    if keywords:
        return None
    arguments = [a if isinstance(_parsed_expression(a), _OPERANDS) else f"({a})" for a in positional]
    if len(arguments) == 1 and name in _BINARY_OPERATORS:
        return f"{receiver} {_BINARY_OPERATORS[name]} {arguments[0]}"
    if len(arguments) == 1 and name == "__getitem__":
        return f"{receiver}[{arguments[0]}]"
    if len(arguments) == 1 and name == "__contains__":
        return f"{arguments[0]} in {receiver}"
    if not arguments and name in _UNARY_OPERATORS:
        return f"{_UNARY_OPERATORS[name]}{receiver}"
    if not arguments and name in _BUILTIN_CALLS:
        return f"{_BUILTIN_CALLS[name]}({receiver})"
    return None


def _owner_instance(call: RecordedCall, target: _Target) -> bool:
    """Whether a method's recorded receiver (its first argument) is an instance of the class that
    defines the member, not of a subclass."""
    first = next(iter(call.args.values()), None)
    return first is not None and first.type == ".".join([target.module, *target.qualname[:-1]])


def _constructed(call: RecordedCall, target: _Target, shape: CallShape | None) -> bool:
    """Whether a recorded ``__init__`` call is written as the class's constructor call (``Rate(20)``):
    a method called directly, on an instance of exactly its class with nothing set yet."""
    first = next(iter(call.args.values()), None)
    if not (shape is not None and shape.binding == "method" and target.code_name == "__init__"
            and first is not None and not first.state and _owner_instance(call, target)):
        return False
    if first.build is None:
        return True
    node = _parsed(first.build)
    built = object_build(node) if node is not None else None
    return built is not None and not built.attributes and not built.slots


def _carve_one(
    candidate: _Candidate, target: _Target, builder: _Builder, name: str, shape: CallShape | None = None
) -> CarvedTest | None:
    """The test for one call, or None when an argument or the exception cannot be rebuilt. With the
    member's ``shape`` the test calls it directly, else through the helper."""
    imports: set[str] = set()
    top, statement = builder.namespace.from_import(target.module, target.qualname[0])
    imports.add(statement)
    owner = target.qualname[:-1]
    function = ".".join([top, *owner[1:], _attribute(owner, target.code_name)]) if owner else top
    kind, expected = candidate.outcome
    exception = None
    if kind == "exception":
        exception = builder.type_expression(expected, imports)
        if exception is None:
            return None

    setup: list[str] = []
    arguments: dict[str, str] = {}
    locals_: set[str] = set()
    emitter = _Emitter(builder, imports, setup, locals_)
    constructed = _constructed(candidate.call, target, shape)
    for index, (parameter, value) in enumerate(candidate.call.args.items()):
        if not _is_name(parameter):
            return None
        if constructed and index == 0:
            arguments[parameter] = parameter  # the instance the constructor makes: not rebuilt
            continue
        expression = builder.value(value, emitter, "obj" if parameter == "self" else f"{parameter}_obj")
        if expression is None:
            return None
        arguments[parameter] = expression
    placed = _placed(shape, arguments) if shape is not None else None
    if placed is not None:
        receiver, positional, keywords = placed
        listed = ", ".join([*positional, *keywords])
        if constructed:
            call_expression = f"{function.removesuffix('.__init__')}({listed})"
        elif receiver is not None and not _owner_instance(candidate.call, target):
            # An instance of a subclass: ``obj.method`` could reach an override, so the member is
            # called through its class, the instance first.
            call_expression = f"{function}({', '.join(p for p in (receiver, listed) if p)})"
        elif receiver is not None:
            if not _is_name(receiver):
                local = emitter.variable("obj")
                setup.append(f"{local} = {receiver}")
                receiver = local
            call_expression = _operator_form(target.code_name, receiver, positional, keywords) or (
                f"{receiver}.{_attribute(owner, target.code_name)}({listed})")
        else:
            call_expression = f"{function}({listed})"
    else:
        imports.add("import inspect")
        listed = ", ".join([function, *(f"{k}={v}" for k, v in arguments.items())])
        call_expression = f"{_HELPER}({listed})"
    # Once to import what the assertions name, then with a local that avoids those names.
    if _expectation_lines(candidate.outcome, call_expression, "result", exception, emitter) is None:
        return None
    result = _local("result", builder.namespace.taken.keys() | locals_)
    expectation = _expectation_lines(candidate.outcome, call_expression, result, exception, emitter)
    if expectation is None:  # never, as the first call above: only the local's name differs
        return None
    if constructed and kind == "result":  # ``__init__`` returned None: the object is what it made
        cls = function.removesuffix(".__init__")
        expectation = [f"{result} = {call_expression}", f"assert isinstance({result}, {cls})"]
    body = setup + expectation
    source = " ".join(candidate.test.test_id.split())
    lines = [
        f"def {name}():",
        f"    # Carved from {source} ({candidate.test.outcome.value}): calls {target.fqn} directly.",
        *(f"    {line}" for line in body),
    ]
    return CarvedTest(
        name=name,
        target_fqn=target.fqn,
        source_test=candidate.test.test_id,
        expects="exception" if kind == "exception" else "result",
        code="\n".join(lines) + "\n",
        imports=tuple(sorted(imports)),
    )


def _target(fqn: str, node: Node | None, known_modules: Collection[str]) -> _Target | None:
    if "<" in fqn:  # <locals>, <lambda>, comprehensions: not reachable from a module
        return None
    file = node.file if node is not None else None
    module = _module_of(fqn, file) or _guess_module(fqn, known_modules)
    if module is None or not all(_is_name(p) for p in module.split(".")):
        return None
    qualname = tuple(fqn[len(module) + 1 :].split("."))
    if not qualname or not all(_is_name(part) for part in qualname):
        return None
    return _Target(fqn=fqn, module=module, qualname=qualname, file=file)


def _base_names(targets: Sequence[_Target]) -> dict[str, str]:
    """A test-name stem per target: its last name, qualified further only where names clash."""
    def stem(target: _Target, depth: int) -> str:
        parts = [*target.module.split("."), *target.qualname][-depth:]
        return "_".join(part.strip("_") or "x" for part in parts)

    stems: dict[str, str] = {}
    for target in targets:
        for depth in range(1, len(target.module.split(".")) + len(target.qualname) + 1):
            candidate = stem(target, depth)
            if all(stem(other, depth) != candidate for other in targets if other is not target):
                break
        stems[target.fqn] = candidate
    return stems


def _shape_of(target: _Target, sources: Mapping[str, str]) -> CallShape | None:
    """The member's call shape, from its definition in ``sources`` (file -> text); None when the
    file is not given or the definition cannot be found there."""
    text = sources.get(target.file or "")
    if text is None:
        return None
    try:
        definition = function_source(text, ".".join(target.qualname))
    except (EquisaError, SyntaxError, ValueError):
        return None
    return call_shape(definition, in_class=len(target.qualname) > 1)


def carve_tests(
    trace: SuiteTrace,
    group: Collection[str],
    nodes: Mapping[str, Node],
    max_per_member: int = 3,
    sources: Mapping[str, str] | None = None,
) -> list[CarvedTest]:
    """Tests that each call one member of ``group`` directly with arguments recorded in ``trace``.

    ``trace`` must come from a run that recorded the members' calls (``RunRequest.record``);
    ``nodes`` maps FQNs to nodes (for the file each member lives in); ``sources`` maps those files
    to their text, so that a test calls its member directly (else through the helper). At most
    ``max_per_member`` tests per member, chosen by ``_select``; members in sorted order, and
    tests named ``test_carved_<member>_<behaviour>`` (``test_carved_parse_raises_value_error``,
    numbered when two say the same). Members without a usable recorded call get none.
    """
    if max_per_member < 0:
        raise ValueError(f"max_per_member must be >= 0, not {max_per_member}")
    known_modules = {m for n in nodes.values() if (m := _module_of(n.fqn, n.file)) is not None}
    targets = [t for fqn in sorted(set(group)) if (t := _target(fqn, nodes.get(fqn), known_modules))]
    by_fqn = {t.fqn: t for t in targets}
    candidates: dict[str, list[_Candidate]] = {t.fqn: [] for t in targets}
    index = 0
    for test in trace.tests:
        if test.test_id in trace.flaky:
            continue
        for call in test.calls:
            target = by_fqn.get(call.fqn)
            index += 1
            if target is None:
                continue
            outcome = _outcome_of(call, test, target)
            if outcome is None:
                continue
            inputs = tuple((name, _input_key(value)) for name, value in call.args.items())
            candidates[call.fqn].append(_Candidate(call, test, index, inputs, outcome))

    definitions = _modules_of(sources or {})
    namespace = _Namespace()
    builder = _Builder(namespace, known_modules, targets, definitions)
    stems = _base_names(targets)
    names: set[str] = set()
    carved: list[CarvedTest] = []
    for target in targets:
        shape = _shape_of(target, sources or {})
        # Only buildable calls compete for the slots; a scratch namespace keeps the real one
        # free of names that no kept test uses.
        scratch = _Builder(_Namespace(), known_modules, targets, definitions)
        buildable = [c for c in candidates[target.fqn]
                     if _carve_one(c, target, scratch, "t", shape) is not None]
        for candidate in _select(buildable, max_per_member):
            behaviour = _behaviour(candidate.outcome, target)
            name = _numbered(f"test_carved_{stems[target.fqn]}_{behaviour}", names)
            made = _carve_one(candidate, target, builder, name, shape)
            if made is not None:
                names.add(name)
                carved.append(made)
    return carved


# ---------------------------------------------------------------------------------------------
# The module.


def carved_module_path(group_index: int) -> str:
    """Where the carved tests of ambiguity group ``group_index`` go in the workspace copy."""
    if group_index < 0:
        raise ValueError(f"group_index must be >= 0, not {group_index}")
    return f"{GENERATED_TESTS_DIR}/test_carved_group_{group_index}.py"


def _import_sort_key(statement: str) -> tuple[int, str]:
    return (statement.startswith("from "), statement)


def _import_bindings(statement: str) -> dict[str, str]:
    """Name -> what it is bound to, for one import statement."""
    node = ast.parse(statement).body[0]
    bound: dict[str, str] = {}
    if isinstance(node, ast.Import):
        for alias in node.names:
            bound[alias.asname or alias.name.split(".")[0]] = (
                alias.name if alias.asname else "module " + alias.name.split(".")[0]
            )
    elif isinstance(node, ast.ImportFrom):
        for alias in node.names:
            bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


def _needs_helper(code: str) -> bool:
    """Whether a test's code calls its member through the helper (it had no call shape)."""
    return f"{_HELPER}(" in code


def carved_module(tests: Sequence[CarvedTest]) -> str:
    """One pytest module holding ``tests``, their imports (de-duplicated, sorted) and, when a test
    calls through it, the helper.

    Raises ``ValueError`` when two tests share a name or their imports bind one name to two
    different things (tests from different carvings merged carelessly).
    """
    names = [t.name for t in tests]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise ValueError(f"carved tests share names: {', '.join(duplicated)}")
    helper = any(_needs_helper(t.code) for t in tests)
    statements = sorted({s for t in tests for s in (*t.imports, *(("import inspect",) if helper else ()))},
                        key=_import_sort_key)
    bindings: dict[str, str] = {}
    for statement in statements:
        for name, meaning in _import_bindings(statement).items():
            if bindings.setdefault(name, meaning) != meaning:
                raise ValueError(f"carved tests import two different things as {name!r}")
    header = (
        '"""Tests carved by EQUISA from recorded executions.\n\n'
        "Each test calls one function directly with arguments recorded in a real run of the suite and\n"
        "asserts the result (or exception) that run observed. Generated: do not edit.\n"
        '"""\n'
    )
    plain = [s for s in statements if s.startswith("import ")]
    from_imports: dict[str, list[str]] = {}
    for statement in statements:
        if statement.startswith("from "):
            module, _, imported = statement[len("from ") :].partition(" import ")
            from_imports.setdefault(module, []).append(imported)
    merged = [f"from {module} import {', '.join(names)}" for module, names in sorted(from_imports.items())]
    import_block = "\n\n".join(block for block in ("\n".join(plain), "\n".join(merged)) if block)
    parts = [header + "\n" + import_block, *((_HELPER_SOURCE,) if helper else ()), *(t.code for t in tests)]
    source = "\n\n\n".join(part.rstrip("\n") for part in parts) + "\n"
    ast.parse(source)  # a carving bug must fail here, not in the sandbox
    return source

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
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.models import Node, RecordedCall, SuiteTrace
from equisa_core.common.source_edit import function_source
from equisa_core.common.testcode import GENERATED_TESTS_DIR
from equisa_core.common.values import object_build
from equisa_core.errors import EquisaError
from equisa_core.testgen.call_shape import CallShape, call_shape
from equisa_core.testgen.carving_assertions import expectation_lines
from equisa_core.testgen.carving_calls import constructed, direct_call, placed
from equisa_core.testgen.carving_choice import Candidate, candidates_by_member, select
from equisa_core.testgen.carving_names import (
    HELPER,
    Namespace,
    Target,
    attribute_name,
    guess_module,
    is_name,
    module_of,
    modules_of,
)
from equisa_core.testgen.carving_values import Builder, Emitter, literal, local_name, parsed_build

__all__ = [
    "GENERATED_TESTS_DIR",
    "CarvedTest",
    "carve_tests",
    "carved_module",
    "carved_module_path",
    "imports_a_test_module",
    "is_test_module",
]

_HELPER_SOURCE = f'''\
def {HELPER}(function, /, **arguments):
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
    definitions: tuple[str, ...] = Field(
        (), description="Module-level functions the code names (a documented callable it passes)."
    )


# ---------------------------------------------------------------------------------------------
# Naming the tests.


def _snake(name: str) -> str:
    """``CurrencyMismatch`` -> ``currency_mismatch``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _behaviour(outcome: tuple[str, str], target: Target) -> str:
    """What a carved test checks, as words for its name: ``raises_value_error``, ``returns_true``,
    ``returns_5``, ``returns_empty_list``, ``returns_a_money``, ``succeeds`` (a constructor)."""
    kind, value = outcome
    if kind == "exception":
        return "raises_" + _snake(value.rsplit(".", 1)[-1])
    if target.code_name == "__init__":
        return "succeeds"
    pasted = literal(value)
    if pasted is None:
        node = parsed_build(value)
        found = object_build(node) if node is not None else None
        if found is not None:
            return "returns_a_" + _snake(found.qualname.rsplit(".", 1)[-1])
        callee = node.func if isinstance(node, ast.Call) else None
        name = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", "value")
        return "returns_a_" + _snake(str(name))
    parsed = ast.literal_eval(pasted)
    if parsed is None or isinstance(parsed, bool):
        return f"returns_{str(parsed).lower()}"
    if isinstance(parsed, int | float) and len(pasted) <= 8:
        return "returns_" + pasted.replace("-", "minus_").replace(".", "_")
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


def _target(fqn: str, node: Node | None, known_modules: Collection[str]) -> Target | None:
    if "<" in fqn:  # <locals>, <lambda>, comprehensions: not reachable from a module
        return None
    file = node.file if node is not None else None
    module = module_of(fqn, file) or guess_module(fqn, known_modules)
    if module is None or not all(is_name(p) for p in module.split(".")):
        return None
    qualname = tuple(fqn[len(module) + 1 :].split("."))
    if not qualname or not all(is_name(part) for part in qualname):
        return None
    return Target(fqn=fqn, module=module, qualname=qualname, file=file)


def _base_names(targets: Sequence[Target]) -> dict[str, str]:
    """A test-name stem per target: its last name, qualified further only where names clash."""

    def stem(target: Target, depth: int) -> str:
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


# ---------------------------------------------------------------------------------------------
# Writing one test.


def _carve_one(
    candidate: Candidate, target: Target, builder: Builder, name: str, shape: CallShape | None = None
) -> CarvedTest | None:
    """The test for one call, or None when an argument or the exception cannot be rebuilt. With the
    member's ``shape`` the test calls it directly, else through the helper."""
    imports: set[str] = set()
    function = _member_reference(target, builder.namespace, imports)
    kind, expected = candidate.outcome
    exception = None
    if kind == "exception":
        exception = builder.type_expression(expected, imports)
        if exception is None:
            return None
    setup: list[str] = []
    emitter = Emitter(builder, imports, setup, set())
    is_constructed = constructed(candidate.call, target, shape)
    arguments = _rebuilt_arguments(candidate.call, builder, emitter, is_constructed)
    if arguments is None:
        return None
    placed_arguments = placed(shape, arguments) if shape is not None else None
    if placed_arguments is not None:
        call_expression = direct_call(
            function, target, candidate.call, placed_arguments, emitter, is_constructed
        )
    else:
        imports.add("import inspect")
        listed = ", ".join([function, *(f"{k}={v}" for k, v in arguments.items())])
        call_expression = f"{HELPER}({listed})"
    constructed_class = function.removesuffix(".__init__") if is_constructed else None
    expectation = _expectation(candidate.outcome, call_expression, exception, emitter, constructed_class)
    if expectation is None:
        return None
    return _carved_test(name, candidate, target, setup + expectation, imports)


def _member_reference(target: Target, namespace: Namespace, imports: set[str]) -> str:
    """The expression naming the member (``Rate.apply``), adding the import of its top name."""
    top, statement = namespace.from_import(target.module, target.qualname[0])
    imports.add(statement)
    owner = target.qualname[:-1]
    return ".".join([top, *owner[1:], attribute_name(owner, target.code_name)]) if owner else top


def _rebuilt_arguments(
    call: RecordedCall, builder: Builder, emitter: Emitter, is_constructed: bool
) -> dict[str, str] | None:
    """Argument name -> an expression rebuilding its recorded value; None when one cannot be
    rebuilt. The instance a constructor call makes is not rebuilt: it is named by itself."""
    arguments: dict[str, str] = {}
    for index, (parameter, value) in enumerate(call.args.items()):
        if not is_name(parameter):
            return None
        if is_constructed and index == 0:
            arguments[parameter] = parameter  # the instance the constructor makes: not rebuilt
            continue
        expression = builder.value(value, emitter, "obj" if parameter == "self" else f"{parameter}_obj")
        if expression is None:
            return None
        arguments[parameter] = expression
    return arguments


def _expectation(
    outcome: tuple[str, str],
    call_expression: str,
    exception: str | None,
    emitter: Emitter,
    constructed_class: str | None,
) -> list[str] | None:
    """The lines that call the member and assert ``outcome``, the result in a local that avoids
    every name bound; for a constructor call (``constructed_class``), that it made an object."""
    # Once to import what the assertions name, then with a local that avoids those names.
    if expectation_lines(outcome, call_expression, "result", exception, emitter) is None:
        return None
    result = local_name("result", emitter.builder.namespace.taken.keys() | emitter.locals)
    expectation = expectation_lines(outcome, call_expression, result, exception, emitter)
    if expectation is None:  # never, as the first call above: only the local's name differs
        return None
    if constructed_class is not None and outcome[0] == "result":
        # ``__init__`` returned None: the object is what it made
        return [f"{result} = {call_expression}", f"assert isinstance({result}, {constructed_class})"]
    return expectation


def _carved_test(
    name: str, candidate: Candidate, target: Target, body: list[str], imports: set[str]
) -> CarvedTest:
    """The test function ``name`` running ``body``, with a comment naming where its call was recorded."""
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
        expects="exception" if candidate.outcome[0] == "exception" else "result",
        code="\n".join(lines) + "\n",
        imports=tuple(sorted(imports)),
    )


# ---------------------------------------------------------------------------------------------
# Carving a group.


def _shape_of(target: Target, sources: Mapping[str, str]) -> CallShape | None:
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


def is_test_module(module: str) -> bool:
    """Whether ``module`` names a test file of a folder that is no package (``test_x``, ``x_test``,
    ``conftest``, as pytest collects them, with no package part): pytest put that folder on
    ``sys.path``, not the generated tests' folder, so a generated test cannot import it. In a
    package (``tests.test_x``) it can."""
    return "." not in module and (module.startswith("test_") or module.endswith("_test")
                                  or module == "conftest")


def imports_a_test_module(imports: Iterable[str]) -> bool:
    """Whether one of the import statements ``imports`` imports from a test file (``is_test_module``):
    a recorded argument that the suite's own test file defines (a helper class, a function)."""
    for statement in imports:
        words = statement.split()
        if len(words) >= 2 and words[0] in ("import", "from") and is_test_module(words[1]):
            return True
    return False


def carve_tests(
    trace: SuiteTrace,
    group: Collection[str],
    nodes: Mapping[str, Node],
    max_per_member: int = 3,
    sources: Mapping[str, str] | None = None,
    test_lines: Mapping[str, frozenset[int]] | None = None,
) -> list[CarvedTest]:
    """Tests that each call one member of ``group`` directly with arguments recorded in ``trace``.

    ``trace`` must come from a run that recorded the members' calls (``RunRequest.record``);
    ``nodes`` maps FQNs to nodes (for the file each member lives in); ``sources`` maps those files
    to their text, so that a test calls its member directly (else through the helper). At most
    ``max_per_member`` tests per member, chosen by ``select`` (with ``test_lines``, test id -> the
    lines of the members' files it executed, more while each reaches lines of its member that the
    ones before did not, as the parametrized cases of one entry point do); members in sorted
    order, and
    tests named ``test_carved_<member>_<behaviour>`` (``test_carved_parse_raises_value_error``,
    numbered when two say the same). Members without a usable recorded call get none.
    """
    if max_per_member < 0:
        raise ValueError(f"max_per_member must be >= 0, not {max_per_member}")
    known_modules = {m for n in nodes.values() if (m := module_of(n.fqn, n.file)) is not None}
    targets = [t for fqn in sorted(set(group)) if (t := _target(fqn, nodes.get(fqn), known_modules))]
    candidates = candidates_by_member(trace, targets)
    definitions = modules_of(sources or {})
    builder = Builder(Namespace(), known_modules, targets, definitions)
    stems = _base_names(targets)
    names: set[str] = set()
    carved: list[CarvedTest] = []
    for target in targets:
        shape = _shape_of(target, sources or {})
        # Only buildable calls compete for the slots; a scratch namespace keeps the real one
        # free of names that no kept test uses.
        scratch = Builder(Namespace(), known_modules, targets, definitions)
        buildable = [
            c for c in candidates[target.fqn]
            if (made := _carve_one(c, target, scratch, "t", shape)) is not None
            and not imports_a_test_module(made.imports)
        ]
        for candidate in select(buildable, max_per_member, _lines_within(nodes.get(target.fqn), test_lines)):
            behaviour = _behaviour(candidate.outcome, target)
            name = _numbered(f"test_carved_{stems[target.fqn]}_{behaviour}", names)
            made = _carve_one(candidate, target, builder, name, shape)
            if made is not None:
                names.add(name)
                carved.append(made)
    return carved


def _lines_within(node: Node | None, test_lines: Mapping[str, frozenset[int]] | None
                  ) -> Callable[[Candidate], frozenset[int]] | None:
    """The lines of ``node``'s definition that a candidate's test executed (None: not known)."""
    if test_lines is None or node is None or node.start_line is None or node.end_line is None:
        return None
    span = frozenset(range(node.start_line, node.end_line + 1))
    return lambda candidate: test_lines.get(candidate.test.test_id, frozenset()) & span


# ---------------------------------------------------------------------------------------------
# The module.

_MODULE_DOCSTRING = (
    '"""Tests carved by EQUISA from recorded executions.\n\n'
    "Each test calls one function directly with arguments recorded in a real run of the suite and\n"
    "asserts the result (or exception) that run observed. Generated: do not edit.\n"
    '"""\n'
)


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
    return f"{HELPER}(" in code


def _import_statements(tests: Sequence[CarvedTest], helper: bool) -> list[str]:
    """The tests' import statements, de-duplicated and sorted (``import inspect`` for the helper).

    Raises ``ValueError`` when two of them bind one name to two different things.
    """
    statements = sorted(
        {s for t in tests for s in (*t.imports, *(("import inspect",) if helper else ()))},
        key=_import_sort_key,
    )
    bindings: dict[str, str] = {}
    for statement in statements:
        for name, meaning in _import_bindings(statement).items():
            if bindings.setdefault(name, meaning) != meaning:
                raise ValueError(f"carved tests import two different things as {name!r}")
    return statements


def _import_block(statements: Sequence[str]) -> str:
    """The module's imports: plain ``import`` lines, then one ``from`` line per module."""
    plain = [s for s in statements if s.startswith("import ")]
    from_imports: dict[str, list[str]] = {}
    for statement in statements:
        if statement.startswith("from "):
            module, _, imported = statement[len("from ") :].partition(" import ")
            from_imports.setdefault(module, []).append(imported)
    merged = [f"from {module} import {', '.join(names)}" for module, names in sorted(from_imports.items())]
    return "\n\n".join(block for block in ("\n".join(plain), "\n".join(merged)) if block)


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
    import_block = _import_block(_import_statements(tests, helper))
    definitions = list(dict.fromkeys(d for t in tests for d in t.definitions))
    parts = [
        _MODULE_DOCSTRING + "\n" + import_block,
        *((_HELPER_SOURCE,) if helper else ()),
        *definitions,
        *(t.code for t in tests),
    ]
    source = "\n\n\n".join(part.rstrip("\n") for part in parts) + "\n"
    ast.parse(source)  # a carving bug must fail here, not in the sandbox
    return source

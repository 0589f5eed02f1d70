"""What a carved test asserts about its call: which recorded results can be asserted at all, and
the assertion lines (``is`` for ``None`` and booleans, ``pytest.approx`` for floats, objects by
their exact type and then attribute by attribute, short lists of objects item by item).

Part of the carving (``equisa_core.testgen.carving``); pure.
"""

from __future__ import annotations

import ast
from typing import TypeGuard

from equisa_core.common.values import build_expression, object_build, parse_build, walk_build
from equisa_core.testgen.carving_names import is_name
from equisa_core.testgen.carving_values import Emitter, literal

__all__ = ["MAX_ITEMWISE", "assertable", "expectation_lines", "itemwise"]

#: A result list or tuple holding objects is asserted item by item up to this many items.
MAX_ITEMWISE = 6


def _is_nan(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "float"
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value == "nan"
    )


def assertable(node: ast.expr) -> bool:
    """Whether a built result can be asserted: no NaN, and objects only where they are compared
    attribute by attribute (the result itself, an item of a short list or tuple of results, or an
    attribute of an asserted object)."""
    found = object_build(node)
    if found is not None:
        return all(assertable(child) for child in (*found.attributes.values(), *found.slots.values()))
    if itemwise(node):
        return all(assertable(item) for item in node.elts)
    return not any(_is_nan(part) or object_build(part) is not None for part in walk_build(node))


def itemwise(node: ast.expr) -> TypeGuard[ast.List | ast.Tuple]:
    """Whether ``node`` is a list or tuple asserted item by item: it holds an object, and at most
    ``MAX_ITEMWISE`` items."""
    return (
        isinstance(node, ast.List | ast.Tuple)
        and len(node.elts) <= MAX_ITEMWISE
        and any(object_build(part) is not None for part in walk_build(node))
    )


def expectation_lines(
    outcome: tuple[str, str], call_expression: str, result: str, exception: str | None, emitter: Emitter
) -> list[str] | None:
    """The lines that call the member and assert ``outcome``; None when a class cannot be named."""
    kind, value = outcome
    if kind == "exception":
        emitter.imports.add("import pytest")
        return [f"with pytest.raises({exception}):", f"    {call_expression}"]
    checks: list[str] | None
    if literal(value) is not None:
        checks = _literal_assertion(result, value, emitter)
    else:
        checks = _built_assertions(result, parse_build(value), emitter)
    return None if checks is None else [f"{result} = {call_expression}", *checks]


def _literal_assertion(subject: str, text: str, emitter: Emitter) -> list[str]:
    """``subject is None``/``True``/``False``, ``== pytest.approx(...)`` for floats, else ``==``."""
    parsed = ast.literal_eval(text)
    if parsed is None or isinstance(parsed, bool):
        return [f"assert {subject} is {text}"]
    if _approximate(parsed):
        emitter.imports.add("import pytest")
        return [f"assert {subject} == pytest.approx({text})"]
    return [f"assert {subject} == {text}"]


def _built_assertions(subject: str, node: ast.expr, emitter: Emitter) -> list[str] | None:
    """Assertions that ``subject`` equals the build ``node`` (one ``assertable`` allows).

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
    if itemwise(node):
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
        access = f"{subject}.{attribute}" if is_name(attribute) else f"getattr({subject}, {attribute!r})"
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

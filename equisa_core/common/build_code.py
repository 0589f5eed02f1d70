"""Builds written out as code for a carved test (``build_expression``): standard-library values
through their constructors, enum members and classes through the names an ``Emitter`` imports,
objects through their constructor or rebuilt from their state by setup statements.
"""

from __future__ import annotations

import ast
import keyword
import re
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from equisa_core.common.build_grammar import (
    BUILTIN_CALLS,
    STDLIB_CONSTANTS,
    ObjectBuild,
    class_build,
    dict_keys,
    dotted_name,
    is_literal,
    object_build,
    walk_build,
)

__all__ = ["Constructor", "Emitter", "build_expression"]


class Constructor(Protocol):
    """How calling a class rebuilds one of its objects (``testgen.call_shape.Constructor``)."""

    @property
    def parameters(self) -> tuple[tuple[str, str], ...]:
        """(name, kind) in order, each stored under its own name."""

    @property
    def constants(self) -> tuple[tuple[str, str], ...]:
        """Attribute -> the literal text ``__init__`` always stores in it."""


class Emitter(Protocol):
    """Where ``build_expression`` asks for names and puts setup statements (see carving).

    An emitter may also have ``constructor(module, qualname)``: a ``Constructor`` when calling the
    class rebuilds an object whose attributes are its parameters and its constants (holding their
    literals), else None (then the object is rebuilt from its state, ``__init__`` bypassed)."""

    def module(self, name: str) -> str:
        """An expression naming the standard-library module ``name``, imported."""

    def cls(self, module: str | None, qualname: str) -> str | None:
        """An expression naming a class, imported; ``module`` None: ``qualname`` is a dotted path
        whose module part has to be guessed. None when it cannot be named."""

    def variable(self, hint: str) -> str:
        """A fresh local variable name, close to ``hint``."""

    def statement(self, line: str) -> None:
        """Append one setup statement, run before the expression is used."""


class _Unwritable(Exception):
    """A class of the build cannot be named from the carved test."""


def _identifier(text: str) -> str:
    cleaned = re.sub(r"\W+", "_", text).strip("_") or "value"
    cleaned = cleaned if not cleaned[0].isdigit() else f"v_{cleaned}"
    return cleaned + "_" if keyword.iskeyword(cleaned) else cleaned


class _Writer:
    """Writes one build as code, each class and module named once through the emitter."""

    def __init__(self, emitter: Emitter) -> None:
        self.emitter = emitter
        self.classes: dict[tuple[str | None, str], str] = {}
        self.modules: dict[str, str] = {}

    def prepare(self, node: ast.expr) -> None:
        """Import every class and module first, so no variable takes a name an import needs."""
        for part in walk_build(node):
            found = object_build(part) if isinstance(part, ast.Call) else None
            named = class_build(part)
            if found is not None:
                self.cls(found.module, found.qualname)
            elif named is not None:
                self.class_value(named)
            elif isinstance(part, ast.Call) and (dotted_name(part.func) or "") not in BUILTIN_CALLS:
                self.module((dotted_name(part.func) or "").split(".", 1)[0])
            elif isinstance(part, ast.Attribute):
                dotted = dotted_name(part) or ""
                if dotted in STDLIB_CONSTANTS:
                    self.module(dotted.split(".", 1)[0])
                elif "." in dotted:
                    self.cls(None, dotted.rpartition(".")[0])

    def cls(self, module: str | None, qualname: str) -> str:
        key = (module, qualname)
        if key not in self.classes:
            named = self.emitter.cls(module, qualname)
            if named is None:
                raise _Unwritable(qualname)
            self.classes[key] = named
        return self.classes[key]

    def class_value(self, type_name: str) -> str:
        """A builtin class by its name (``int``), any other imported through the emitter."""
        module, _, qualname = type_name.partition(":")
        if module == "builtins" and "." not in qualname:
            return qualname
        return self.cls(module, qualname)

    def module(self, name: str) -> str:
        if name not in self.modules:
            self.modules[name] = self.emitter.module(name)
        return self.modules[name]

    def write(self, node: ast.expr, hint: str) -> str:
        """Source of an expression equal to the build ``node``; ``hint`` names its variables."""
        if is_literal(node):
            return ast.unparse(node)
        write = _NODE_WRITERS.get(type(node), _Writer.write_call)
        return write(self, node, hint)

    def items(self, elements: list[ast.expr], hint: str) -> str:
        """The elements of a display, comma-separated."""
        return ", ".join(self.write(e, f"{hint}_{i}") for i, e in enumerate(elements))

    def write_list(self, node: ast.List, hint: str) -> str:
        return "[" + self.items(node.elts, hint) + "]"

    def write_tuple(self, node: ast.Tuple, hint: str) -> str:
        items = [self.write(e, f"{hint}_{i}") for i, e in enumerate(node.elts)]
        return "(" + items[0] + ",)" if len(items) == 1 else "(" + ", ".join(items) + ")"

    def write_set(self, node: ast.Set, hint: str) -> str:
        return "{" + self.items(node.elts, hint) + "}"

    def write_dict(self, node: ast.Dict, hint: str) -> str:
        pairs = [
            f"{self.write(k, f'{hint}_key_{i}')}: {self.write(v, f'{hint}_{i}')}"
            for i, (k, v) in enumerate(zip(dict_keys(node), node.values, strict=True))
        ]
        return "{" + ", ".join(pairs) + "}"

    def write_attribute(self, node: ast.Attribute, hint: str) -> str:
        """A standard-library constant through its module, an enum member through its class."""
        dotted = dotted_name(node) or ""
        if dotted in STDLIB_CONSTANTS:
            module, _, rest = dotted.partition(".")
            return f"{self.module(module)}.{rest}"
        owner, _, member = dotted.rpartition(".")
        return f"{self.cls(None, owner)}.{member}"

    def write_call(self, node: ast.expr, hint: str) -> str:
        """An object, a class, or a whitelisted call with its arguments written out."""
        assert isinstance(node, ast.Call)
        found = object_build(node)
        if found is not None:
            return self.write_object(found, hint)
        named = class_build(node)
        if named is not None:
            return self.class_value(named)
        name = dotted_name(node.func) or ""
        if name in BUILTIN_CALLS:
            callee = name
        else:
            module, _, rest = name.partition(".")
            callee = f"{self.module(module)}.{rest}"
        arguments = [self.write(a, f"{hint}_{i}") for i, a in enumerate(node.args)]
        arguments += [f"{k.arg}={self.write(k.value, f'{hint}_{k.arg}')}" for k in node.keywords]
        return f"{callee}({', '.join(arguments)})"

    def write_object(self, found: ObjectBuild, hint: str) -> str:
        cls = self.cls(found.module, found.qualname)
        known = getattr(self.emitter, "constructor", None)
        constructor: Constructor | None = known(found.module, found.qualname) if known is not None else None
        if constructor is not None and not found.slots and _rebuilds(constructor, found.attributes):
            # ``Money(Decimal('5.99'), 'EUR')``: the constructor, as the code under test writes it.
            arguments = []
            for parameter, kind in constructor.parameters:
                expression = self.write(found.attributes[parameter], f"{hint}_{parameter}")
                arguments.append(expression if kind == "positional" else f"{parameter}={expression}")
            return f"{cls}({', '.join(arguments)})"
        name = self.emitter.variable(_identifier(hint))
        items = [
            f"{attribute!r}: {self.write(child, f'{name}_{attribute}')}"
            for attribute, child in found.attributes.items()
        ]
        slots = [
            (attribute, self.write(child, f"{name}_{attribute}")) for attribute, child in found.slots.items()
        ]
        self.emitter.statement(f"{name} = {cls}.__new__({cls})")
        if items:
            self.emitter.statement(f"{name}.__dict__.update({{{', '.join(items)}}})")
        for attribute, expression in slots:
            self.emitter.statement(f"object.__setattr__({name}, {attribute!r}, {expression})")
        return name


#: How each kind of (non-literal) build node is written; calls are the rest.
_NODE_WRITERS: dict[type[ast.expr], Callable[[_Writer, Any, str], str]] = {
    ast.List: _Writer.write_list,
    ast.Tuple: _Writer.write_tuple,
    ast.Set: _Writer.write_set,
    ast.Dict: _Writer.write_dict,
    ast.Attribute: _Writer.write_attribute,
}


def _rebuilds(constructor: Constructor, attributes: Mapping[str, ast.expr]) -> bool:
    """Whether calling the class with ``attributes``' parameter values gives an object with exactly
    ``attributes``: every other attribute is one of the constructor's constants, holding its literal."""
    constants = dict(constructor.constants)
    if set(attributes) != {p for p, _ in constructor.parameters} | set(constants):
        return False
    for attribute, text in constants.items():
        try:
            expected, found = ast.literal_eval(text), ast.literal_eval(attributes[attribute])
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return False
        if type(expected) is not type(found) or expected != found:
            return False
    return True


def build_expression(node: ast.expr, emitter: Emitter, hint: str = "value") -> str | None:
    """Source of an expression equal to the build ``node`` (from ``parse_build``), or None.

    Standard-library modules and classes are named through ``emitter`` (which imports them). An
    object whose class the emitter knows a constructor for is that call (``Money(Decimal('5.99'),
    'EUR')``); any other is made in a local variable by setup statements, inner objects first::

        obj_minimum = Money.__new__(Money)
        obj_minimum.__dict__.update({'amount': decimal.Decimal('100.00'), 'currency': 'EUR'})
        obj = ThresholdDiscount.__new__(ThresholdDiscount)
        obj.__dict__.update({'minimum': obj_minimum, ...})

    ``__dict__.update`` and ``object.__setattr__`` (for slots) bypass ``__setattr__``, so frozen
    dataclasses are rebuilt too, and ``__init__`` never runs. None when a class cannot be named;
    statements may have been emitted by then, so the caller discards them.
    """
    writer = _Writer(emitter)
    try:
        writer.prepare(node)
        return writer.write(node, hint)
    except _Unwritable:
        return None

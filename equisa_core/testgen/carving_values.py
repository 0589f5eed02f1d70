"""Rebuilding recorded values as code for carved tests: literals pasted as they are, builds
(``equisa_core.common.values``) turned into expressions, objects of older records rebuilt from
their ``state``, classes named through the carving's imports.

Part of the carving (``equisa_core.testgen.carving``); pure.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Mapping, Sequence

from equisa_core.common.models import EncodedValue
from equisa_core.common.values import build_expression, parse_build
from equisa_core.errors import ProbeProtocolError
from equisa_core.testgen.call_shape import Constructor, constructor_of
from equisa_core.testgen.carving_names import Namespace, Target, guess_module, is_name, rebuildable_type

__all__ = ["Builder", "Emitter", "literal", "local_name", "parsed_build"]

_CLASS_REPR = re.compile(r"<class '([A-Za-z_][\w.]*)'>\Z")


def literal(text: str | None) -> str | None:
    """``text`` when it is a Python literal (so safe to paste into code), else None."""
    if text is None:
        return None
    try:
        ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return text


def local_name(preferred: str, taken: Collection[str]) -> str:
    """``preferred``, with underscores appended until it is not in ``taken``."""
    name = preferred
    while name in taken:
        name += "_"
    return name


def parsed_build(build: str | None) -> ast.expr | None:
    """The checked syntax tree of a recorded build, or None when there is none or it is rejected."""
    if build is None:
        return None
    try:
        return parse_build(build)
    except ProbeProtocolError:
        return None


class Builder:
    """Turns recorded values into code for one carving, sharing its namespace."""

    def __init__(
        self,
        namespace: Namespace,
        known_modules: Collection[str],
        targets: Sequence[Target],
        definitions: Mapping[str, str] | None = None,
    ):
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
        if "<" in dotted or not all(is_name(part) for part in dotted.split(".")):
            return None
        if "." not in dotted:
            return dotted  # repr of a builtin class: "<class 'int'>"
        if dotted.startswith("builtins."):
            rest = dotted[len("builtins.") :]
            return rest if "." not in rest else None
        module = guess_module(dotted, self.known_modules)
        if module is None:
            return None
        return self.class_expression(module, dotted[len(module) + 1 :], imports)

    def class_expression(self, module: str, qualname: str, imports: set[str]) -> str | None:
        """An expression for class ``qualname`` of ``module`` (both known exactly), adding its import."""
        parts = qualname.split(".")
        if not all(is_name(part) for part in [*module.split("."), *parts]):
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

    def value(self, value: EncodedValue, emitter: Emitter, hint: str) -> str | None:
        """An expression equal to ``value`` (setup lines go to ``emitter``), or None if it can't be rebuilt.

        ``hint`` names the local an object is rebuilt in; a local is allocated only after the
        object's class is imported, so it can avoid every name the imports bind.
        """
        pasted = literal(value.literal)
        if pasted is not None:
            return pasted
        node = parsed_build(value.build)
        if node is not None:
            expression = build_expression(node, emitter, hint)
            if expression is not None:
                return expression
        if value.state is not None and rebuildable_type(value.type):
            return self._from_state(value, value.state, emitter, hint)
        match = _CLASS_REPR.match(value.repr or "")
        if match is not None and value.type.endswith(("type", "Meta", "meta")):
            return self.type_expression(match.group(1), emitter.imports)
        return None

    def _from_state(
        self, value: EncodedValue, state: Mapping[str, str], emitter: Emitter, hint: str
    ) -> str | None:
        """A local holding the object of an older record, rebuilt from its literal ``state``."""
        items = []
        for attribute, text in state.items():
            if literal(text) is None:
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


class Emitter:
    """Where rebuilt values of one carved test put their imports, setup lines and locals.

    Implements ``values.Emitter``: modules and classes are named through the carving's
    namespace, locals avoid every name bound so far.
    """

    def __init__(self, builder: Builder, imports: set[str], setup: list[str], locals_: set[str]) -> None:
        self.builder = builder
        self.imports = imports
        self.setup = setup
        self.locals = locals_

    def module(self, name: str) -> str:
        """An expression naming module ``name``, adding its import."""
        expression, statement = self.builder.namespace.module(name)
        self.imports.add(statement)
        return expression

    def cls(self, module: str | None, qualname: str) -> str | None:
        """An expression naming the class, adding its import; None when it cannot be named."""
        if module is None:
            return self.builder.type_expression(qualname, self.imports)
        return self.builder.class_expression(module, qualname, self.imports)

    def variable(self, hint: str) -> str:
        """A new local named after ``hint``, clashing with no bound name."""
        local = local_name(hint, self.builder.namespace.taken.keys() | self.locals)
        self.locals.add(local)
        return local

    def statement(self, line: str) -> None:
        """Adds a setup line before the test's call."""
        self.setup.append(line)

    def constructor(self, module: str | None, qualname: str) -> Constructor | None:
        """How the class's constructor rebuilds its objects, if it does."""
        return self.builder.constructor(module, qualname)

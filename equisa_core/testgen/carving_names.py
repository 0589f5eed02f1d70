"""Names in a carved test module: where a dotted name's module part ends, how a member is reached
as an attribute, and which module-level names one carving's imports bind (``Namespace``).

Part of the carving (``equisa_core.testgen.carving``); pure.
"""

from __future__ import annotations

import keyword
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "HELPER",
    "Namespace",
    "Target",
    "attribute_name",
    "guess_module",
    "is_name",
    "module_of",
    "modules_of",
    "rebuildable_type",
]

#: The helper a carved test calls its member through when it has no call shape.
HELPER = "_equisa_call"
_NAMESPACE_TYPES = frozenset({"types.SimpleNamespace", "argparse.Namespace"})
_RESERVED = frozenset({"pytest", "inspect", "object", "type", "getattr", HELPER})


def module_of(fqn: str, file: str | None) -> str | None:
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


def modules_of(sources: Mapping[str, str]) -> dict[str, str]:
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
            if all(is_name(part) for part in parts[start:]):
                modules.setdefault(".".join(parts[start:]), text)
    return modules


def guess_module(dotted: str, known_modules: Collection[str]) -> str | None:
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


def rebuildable_type(dotted: str) -> bool:
    """Whether an object of this type can be rebuilt from ``__dict__`` alone (``Cls.__new__``).

    Project and third-party classes, and namespaces; not functions, modules or other types of
    the standard library, whose instances keep their real state elsewhere.
    """
    return dotted in _NAMESPACE_TYPES or dotted.split(".", 1)[0] not in sys.stdlib_module_names


def is_name(text: str) -> bool:
    """Whether ``text`` can be written as a name in code (an identifier, not a keyword)."""
    return text.isidentifier() and not keyword.iskeyword(text)


def attribute_name(owner_parts: Sequence[str], name: str) -> str:
    """How ``name`` defined in class ``owner_parts[-1]`` is reached as an attribute (mangling)."""
    if owner_parts and name.startswith("__") and not name.endswith("__"):
        owner = owner_parts[-1].lstrip("_")
        if owner:
            return f"_{owner}{name}"
    return name


class Namespace:
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
class Target:
    """A member to carve tests for: its FQN, module, qualified name parts and file."""

    fqn: str
    module: str
    qualname: tuple[str, ...]
    file: str | None

    @property
    def code_name(self) -> str:
        """The member's own name (the last part of its qualified name)."""
        return self.qualname[-1]

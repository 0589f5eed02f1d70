"""Module-level names as inputs of the input search (issue 49): enum members and classes.

A parameter whose default is an enum member (``style=DocstringStyle.AUTO``), whose annotation names
an enum the module defines, or whose recorded values are enum members, is drawn from all the members
of that enum (``search_driver._members``). A parameter whose default is a collection of classes
(``exclude=(DocstringReturns,)``) or whose annotation is one (``Iterable[Type[DocstringMeta]]``) is
drawn as collections of those classes and of the module's other classes of the same base
(``search_driver._classes``). The driver finds them in the module at run time and shows each by the
name the module knows it by (``DocstringStyle.GOOGLE``, ``(DocstringReturns,)``); the host imports
those names from the module (``named_imports``). A parameter without such evidence is left as it was.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from equisa_core.testgen.annotation_strategies import SEQUENCE_NAMES, SET_NAMES, TUPLE_NAMES
from equisa_core.testgen.import_names import names_held

__all__ = [
    "NO_NAMES",
    "ModuleNames",
    "is_named_text",
    "module_names",
    "named_imports",
    "named_roots",
    "named_strategy",
]

#: The bases that make a class of the module an enum.
_ENUM_BASES = {"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"}


@dataclass(frozen=True)
class ModuleNames:
    """The names a module binds at its top level (its imports, classes, functions and assignments),
    those of the classes it defines, and of the enums among them."""

    bound: frozenset[str] = frozenset()
    enums: frozenset[str] = frozenset()
    classes: frozenset[str] = frozenset()


#: No names known: parameters are drawn without them.
NO_NAMES = ModuleNames()


def module_names(tree: ast.Module) -> ModuleNames:
    """The top-level names of the module ``tree`` that it holds after its import (``import_names``)."""
    bound: set[str] = set()
    enums: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
        elif isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            bound.add(node.name)
            if isinstance(node, ast.ClassDef) and any(_dotted(b)[-1:] in ([e] for e in _ENUM_BASES)
                                                      for b in node.bases):
                enums.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound |= {t.id for t in targets if isinstance(t, ast.Name)}
    held = names_held(tree)
    classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    return ModuleNames(frozenset(bound) & held, frozenset(enums) & held, frozenset(classes) & held)


def _dotted(node: ast.expr) -> list[str]:
    """The parts of a dotted name (``common.DocstringStyle.AUTO``), or [] for another expression."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    return [node.id, *parts] if isinstance(node, ast.Name) else []


def _class_name(name: str) -> bool:
    """Whether ``name`` is spelled as a class is (``DocstringStyle``, not ``sys`` nor ``MAX_SIZE``)."""
    return name[:1].isupper() and not name.isupper() and "_" not in name.strip("_")


def _enum_like(owner: str, names: ModuleNames) -> bool:
    """Whether ``owner`` may be an enum: one the module defines, or a class it imports (a class it
    defines that is no enum is not)."""
    return owner in names.enums or owner not in names.classes and _class_name(owner)


def _builtin_class(name: str) -> bool:
    return isinstance(getattr(builtins, name, None), type)


def named_strategy(annotation: ast.expr | None, default: ast.expr | None, texts: Sequence[str],
                   names: ModuleNames) -> str | None:
    """The strategy of a parameter drawn from the module's names (its annotation, its default and
    the texts of the values recorded for it as evidence), or None when nothing says it takes them."""
    return _members(annotation, default, texts, names) or _classes(annotation, default, names)


def _members(annotation: ast.expr | None, default: ast.expr | None, texts: Sequence[str],
             names: ModuleNames) -> str | None:
    """All the members of the enum a default, an annotation or a recorded value names
    (``_members('DocstringStyle', 'DocstringStyle.AUTO')``: the default drawn alone when the module's
    ``DocstringStyle`` is no enum after all)."""
    parts = _dotted(default) if default is not None else []
    if len(parts) >= 2 and parts[0] in names.bound and _enum_like(parts[-2], names):
        return f"_members({'.'.join(parts[:-1])!r}, {'.'.join(parts)!r})"
    named = _dotted(annotation) if annotation is not None else []
    if named and named[-1] in names.enums:
        return f"_members({'.'.join(named)!r}, None)"
    for text in texts:  # the probe writes a member as module.Class.MEMBER
        try:
            parts = _dotted(ast.parse(text, mode="eval").body)
        except SyntaxError:
            continue
        if len(parts) >= 3 and parts[-2] in names.bound and _enum_like(parts[-2], names):
            return f"_members({parts[-2]!r}, None)"
    return None


def _classes(annotation: ast.expr | None, default: ast.expr | None, names: ModuleNames) -> str | None:
    """Collections of classes, when the default is one (``(DocstringReturns,)``) or the annotation
    says so (``Iterable[Type[DocstringMeta]]``): ``_classes(['DocstringReturns'], 'tuple')``."""
    shape = {ast.Tuple: "tuple", ast.List: "list", ast.Set: "set"}.get(type(default)) if default else None
    if isinstance(default, ast.Tuple | ast.List | ast.Set) and default.elts:
        found = [_dotted(e) for e in default.elts]
        if all(p and (p[0] in names.bound and _class_name(p[-1]) or p == [p[0]] and _builtin_class(p[0]))
               for p in found):
            return f"_classes({['.'.join(p) for p in found]!r}, {shape!r})"
    item = _class_of_items(annotation) if annotation is not None else None
    if item is None or item[1][0] not in names.bound:
        return None
    return f"_classes({['.'.join(item[1])]!r}, {shape or item[0]!r})"


def _class_of_items(annotation: ast.expr) -> tuple[str, list[str]] | None:
    """(The collection's shape, the dotted name of ``X``) of an annotation ``Iterable[Type[X]]``
    (``list[type[X]]``, ``Tuple[Type[X], ...]``, ``Set[Type[X]]``...), or None."""
    if not isinstance(annotation, ast.Subscript):
        return None
    container = (_dotted(annotation.value) or [""])[-1]
    inner = annotation.slice
    items = inner.elts if isinstance(inner, ast.Tuple) else [inner]
    if container not in SEQUENCE_NAMES | TUPLE_NAMES | SET_NAMES or not items:
        return None
    item = items[0]
    if not isinstance(item, ast.Subscript) or (_dotted(item.value) or [""])[-1] not in ("Type", "type"):
        return None
    parts = _dotted(item.slice)
    shape = "set" if container in SET_NAMES else "list" if container in ("list", "List") else "tuple"
    return (shape, parts) if parts else None


def named_roots(text: str) -> frozenset[str] | None:
    """The names a value's text starts from when it writes the module's names only: dotted names
    (``DocstringStyle.GOOGLE``) or displays of them (``(DocstringReturns, DocstringParam)``); None
    for another text."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    nodes = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    roots = [_dotted(n)[:1] for n in nodes]
    if not nodes or not all(roots):
        return None
    return frozenset(r[0] for r in roots)


def is_named_text(text: str, names: Collection[str]) -> bool:
    """Whether ``text`` writes values the search drew from the module (``named_roots``), each
    starting from one of its ``names`` or from a builtin class."""
    roots = named_roots(text)
    return roots is not None and all(r in names or _builtin_class(r) for r in roots)


def named_imports(texts: Sequence[str], names: Collection[str]) -> list[str]:
    """The names of the module among ``names`` (those the search drew) that ``texts`` start from,
    sorted: what a test imports from the module (a builtin class, ``ValueError``, needs no import)."""
    found: set[str] = set()
    for text in texts:
        found |= named_roots(text) or frozenset()
    return sorted(found & set(names))

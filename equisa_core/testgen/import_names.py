"""The top-level names a module still holds once it is imported: what a generated test (a carved or
boundary test, a scratch or search driver) may import from it.

A ``def`` at the top of a module does not mean ``from module import name`` works: a helper
decorator removed with ``del doc`` at the end of the module, a function defined only under ``if
TYPE_CHECKING:`` or ``if __name__ == "__main__":`` are not there after the import, and a generated
module that imports one does not import at all. ``names_after_import`` reads the module's top-level
statements in source order (into ``if``, ``try``, ``with``, ``for``, ``while`` and ``match`` bodies,
never into a function or class): a name is held when its last binding comes after its last ``del``.
Branches are read as if each ran, so a name deleted in one branch counts as gone. What the module
does through ``globals()`` or ``setattr`` is not seen. Pure: reads ``ast`` only.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator, Sequence

__all__ = ["held_after_import", "names_after_import", "names_held"]


def _never_at_import(test: ast.expr) -> bool:
    """Whether an ``if`` test is false whenever the module is imported: ``TYPE_CHECKING``,
    ``typing.TYPE_CHECKING``, a false constant, ``__name__ == "__main__"``."""
    text = ast.unparse(test)
    if text.rsplit(".", 1)[-1] == "TYPE_CHECKING":
        return True
    if isinstance(test, ast.Constant):
        return not test.value
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
        sides = {ast.unparse(test.left), ast.unparse(test.comparators[0])}
        return sides in ({"__name__", "'__main__'"}, {"__name__", '"__main__"'})
    return False


def _targets(target: ast.expr) -> Iterator[str]:
    """The plain names an assignment, ``for`` or ``with ... as`` target (or a ``del``) names."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for item in target.elts:
            yield from _targets(item)
    elif isinstance(target, ast.Starred):
        yield from _targets(target.value)


def _bindings(statement: ast.stmt) -> Iterator[str]:
    """The names one simple statement binds at the top of a module."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield statement.name
    elif isinstance(statement, ast.Import | ast.ImportFrom):
        yield from ((a.asname or a.name).split(".")[0] for a in statement.names if a.name != "*")
    elif isinstance(statement, ast.Assign):
        for target in statement.targets:
            yield from _targets(target)
    elif isinstance(statement, ast.AnnAssign | ast.AugAssign) and (
        not isinstance(statement, ast.AnnAssign) or statement.value is not None
    ):
        yield from _targets(statement.target)


def _bodies(statement: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists a compound statement may run at import, in source order."""
    if isinstance(statement, ast.If):
        return [statement.orelse] if _never_at_import(statement.test) else [statement.body, statement.orelse]
    if isinstance(statement, ast.Try | ast.TryStar):
        handlers = [h.body for h in statement.handlers]
        return [statement.body, *handlers, statement.orelse, statement.finalbody]
    if isinstance(statement, ast.For | ast.AsyncFor | ast.While):
        return [statement.body, statement.orelse]
    if isinstance(statement, ast.With | ast.AsyncWith):
        return [statement.body]
    if isinstance(statement, ast.Match):
        return [case.body for case in statement.cases]
    return []


def _events(statements: Sequence[ast.stmt]) -> Iterator[tuple[str, bool]]:
    """(name, bound: True, or deleted: False) of the module's top-level statements, in source order."""
    for statement in statements:
        if isinstance(statement, ast.Delete):
            yield from ((name, False) for target in statement.targets for name in _targets(target))
            continue
        if isinstance(statement, ast.For | ast.AsyncFor):
            yield from ((name, True) for name in _targets(statement.target))
        elif isinstance(statement, ast.With | ast.AsyncWith):
            yield from ((name, True) for item in statement.items if item.optional_vars is not None
                        for name in _targets(item.optional_vars))
        yield from ((name, True) for name in _bindings(statement))
        for body in _bodies(statement):
            yield from _events(body)


def names_after_import(source: str) -> frozenset[str]:
    """The top-level names ``source`` binds and still holds after its import (module docstring):
    functions, classes, assigned and imported names, less those a later ``del`` removes and those
    bound only under a test false at import. Empty when ``source`` does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return frozenset()
    return names_held(tree)


def names_held(tree: ast.Module) -> frozenset[str]:
    """``names_after_import`` of a parsed module."""
    held: dict[str, bool] = {}
    for name, bound in _events(tree.body):
        held[name] = bound
    return frozenset(name for name, bound in held.items() if bound)


def held_after_import(qualname: str, names: Collection[str]) -> bool:
    """Whether member ``qualname`` (``f``, ``Class.method``) is reached from a name in ``names``
    (``names_after_import``): its first part is one."""
    return qualname.split(".", 1)[0] in names

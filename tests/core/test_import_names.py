"""What a module holds after its import (issue 49): a generated test never imports a name the module
deletes (``del doc``) or binds only when it is not imported, so its module imports."""

from __future__ import annotations

import textwrap

from equisa_core.testgen.assembly import target_nodes
from equisa_core.testgen.boundary import scratch_driver_module
from equisa_core.testgen.import_names import held_after_import, names_after_import
from equisa_core.testgen.named_inputs import module_names
from equisa_core.testgen.searched_members import searched_classes, searched_functions

SOURCE = textwrap.dedent('''
    import ast
    from typing import TYPE_CHECKING

    if TYPE_CHECKING:
        def typed_only(x: int) -> int:
            return x

    def doc(text):
        def decorate(function):
            function.__doc__ = text
            return function
        return decorate

    def helper(x: int) -> int:
        return x

    @doc("Twice x.")
    def twice(x: int) -> int:
        return helper(x) * 2

    class Box:
        def __init__(self, size: int = 1):
            self.size = size

        def grow(self, by: int) -> int:
            self.size += by
            return self.size

    class Gone:
        def __init__(self, size: int = 1):
            self.size = size

        def shrink(self, by: int) -> int:
            return self.size - by

    def reborn(x: int) -> int:
        return x

    try:
        del helper
    except NameError:
        pass
    if True:
        del Gone
    del reborn
    def reborn(x: int) -> int:
        return -x
    del doc, ast

    if __name__ == "__main__":
        def main(argv: list) -> int:
            return 0
''')


def test_names_the_module_deletes_or_binds_only_when_not_imported_are_not_held():
    held = names_after_import(SOURCE)
    assert held == {"TYPE_CHECKING", "twice", "Box", "reborn"}
    assert held_after_import("Box.grow", held) and not held_after_import("Gone.shrink", held)
    assert names_after_import("def broken(:\n") == frozenset()


def test_no_generated_test_imports_what_the_module_does_not_hold():
    nodes = target_nodes("pkg/mod.py", SOURCE)
    assert sorted(nodes) == ["pkg.mod.Box.__init__", "pkg.mod.Box.grow", "pkg.mod.reborn", "pkg.mod.twice"]
    everything = ["typed_only", "doc", "helper", "twice", "reborn", "main", "Box.grow", "Gone.shrink"]
    text, calls = scratch_driver_module(SOURCE, "pkg.mod", everything, max_calls=2)
    assert text is not None and text.splitlines()[0] == "from pkg.mod import Box, reborn, twice"
    assert {c.qualname for c in calls} == {"twice", "reborn", "Box.grow"}
    assert {f.qualname for f in searched_functions(SOURCE, everything, {}, [])} == {"twice", "reborn"}
    assert [c.qualname for c in searched_classes(SOURCE, everything, {}, [])] == ["Box"]
    import ast

    names = module_names(ast.parse(SOURCE))
    assert "Gone" not in names.classes and "doc" not in names.bound and "Box" in names.classes

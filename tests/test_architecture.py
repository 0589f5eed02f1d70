"""The import rules of issues 18 and 47: the layers (``equisa_core`` below ``tasks`` below ``flows``
below ``cli``) and no import cycles between the modules of the four packages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("equisa_core", "tasks", "flows", "cli")

# Cycles tolerated for now: none. An import under ``if TYPE_CHECKING:`` counts here too, since a
# type-only cycle still ties two modules together.
KNOWN_CYCLES: set[frozenset[str]] = set()


def import_cycles(graph: grimp.ImportGraph) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan): each is a set of
    modules that import one another, directly or through the others."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: set[frozenset[str]] = set()

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.add(frozenset(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return cycles


def test_the_layer_contracts_hold():
    """``lint-imports`` runs the contracts of ``[tool.importlinter]`` in pyproject.toml: the core
    imports nothing above it, ``tasks`` nothing from ``flows`` or ``cli``, ``flows`` nothing from ``cli``."""
    lint_imports = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint_imports), "--no-cache", "--no-logo"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_no_import_cycles_but_the_known_ones():
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    cycles = import_cycles(graph)
    new = sorted(sorted(c) for c in cycles - KNOWN_CYCLES)
    assert new == [], f"import cycles: {new}"
    gone = sorted(sorted(c) for c in KNOWN_CYCLES - cycles)
    assert gone == [], f"these cycles are broken now: remove them from KNOWN_CYCLES: {gone}"


def test_the_cycle_finder_finds_a_cycle_through_three_modules():
    graph = grimp.ImportGraph()
    for importer, imported in (("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")):
        graph.add_import(importer=importer, imported=imported)
    assert import_cycles(graph) == {frozenset({"a", "b", "c"})}

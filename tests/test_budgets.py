"""The budgets of the house (issue 47), held by CI: complexity, ``type: ignore``, the size of
``flows/`` and of every module. A budget met once stays met; raise one only with a reason here."""

from __future__ import annotations

import re
from pathlib import Path

from radon.complexity import cc_rank, cc_visit

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("cli", "flows", "tasks", "equisa_core")
#: Functions rated D or worse (radon's cyclomatic complexity over 20) allowed in the core, and in
#: the three outer layers. Issue 47 allows 5 in the core; its close reached 0, which is held.
MAX_D_OR_WORSE_IN_CORE = 0
MAX_D_OR_WORSE_OUTSIDE_CORE = 0
#: ``type: ignore`` comments allowed in the four packages, each with its reason on its line. Issue
#: 47 allows 10; its close reached 7, which is held.
MAX_TYPE_IGNORES = 7
#: Lines of ``flows/`` (the ``@flow`` drivers only).
MAX_FLOWS_LINES = 1500
#: Lines of any one module, but the probe, which is one file by design (it is copied whole into
#: the suite's interpreter).
MAX_MODULE_LINES = 800
ONE_FILE_BY_DESIGN = {"equisa_core/probe/equisa_probe.py"}

IGNORE = re.compile(r"#\s*type:\s*ignore(\[[^\]]*\])?(?P<rest>.*)$")


def sources(*packages: str) -> list[Path]:
    """The Python files of ``packages``, in a stable order."""
    return sorted(p for package in packages for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts)


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def rated_d_or_worse(paths: list[Path]) -> list[str]:
    """``file::function rank (complexity)`` of each function or method rated D or worse."""
    found = []
    for path in paths:
        for block in cc_visit(path.read_text(encoding="utf-8")):
            for item in [block, *getattr(block, "methods", [])]:
                rank = cc_rank(item.complexity)
                if rank in "DEF" and type(item).__name__ != "Class":
                    found.append(f"{rel(path)}::{item.fullname} {rank} ({item.complexity})")
    return sorted(set(found))


def type_ignores(paths: list[Path]) -> list[tuple[str, str]]:
    """``(file:line, text after the ignore)`` of each ``type: ignore`` comment."""
    found = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = IGNORE.search(line)
            if match:
                found.append((f"{rel(path)}:{number}", match.group("rest").strip()))
    return found


def test_no_function_rated_d_or_worse_in_cli_flows_or_tasks():
    found = rated_d_or_worse(sources("cli", "flows", "tasks"))
    assert len(found) <= MAX_D_OR_WORSE_OUTSIDE_CORE, "split these:\n" + "\n".join(found)


def test_no_more_functions_rated_d_or_worse_in_the_core_than_its_budget():
    found = rated_d_or_worse(sources("equisa_core"))
    assert len(found) <= MAX_D_OR_WORSE_IN_CORE, f"{len(found)} over {MAX_D_OR_WORSE_IN_CORE}:\n" + "\n".join(found)


def test_type_ignores_within_budget_each_with_its_reason():
    found = type_ignores(sources(*PACKAGES))
    assert len(found) <= MAX_TYPE_IGNORES, "\n".join(where for where, _ in found)
    unexplained = [where for where, rest in found if not rest.lstrip("#").strip()]
    assert unexplained == [], "say why on the line (`# type: ignore[code]  # why`):\n" + "\n".join(unexplained)


def test_flows_holds_at_most_1500_lines():
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in sources("flows"))
    assert lines <= MAX_FLOWS_LINES


def test_no_module_over_800_lines_but_the_probe():
    over = [f"{rel(p)} ({n})" for p in sources(*PACKAGES)
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
            and rel(p) not in ONE_FILE_BY_DESIGN]
    assert over == [], "split these:\n" + "\n".join(over)


def test_the_budget_checks_see_what_they_count(tmp_path):
    """The checks are not blind: a D-rated function and an unexplained ignore are found."""
    branches = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(25))
    module = tmp_path / "m.py"
    module.write_text(f"def busy(x):\n{branches}\n    return None  # type: ignore[return-value]\n")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        assert rated_d_or_worse([module]) == ["m.py::busy D (26)"]
        assert type_ignores([module]) == [("m.py:52", "")]
    finally:
        ROOT = saved

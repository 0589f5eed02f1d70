"""``equisa_core`` stays deterministic: no Prefect, no network or storage clients."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import equisa_core

FORBIDDEN = {"prefect", "boto3", "botocore", "duckdb", "docker", "openai", "httpx", "requests"}
CORE = Path(equisa_core.__file__).parent


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_no_core_module_imports_a_forbidden_package():
    offenders = {
        str(path.relative_to(CORE)): sorted(imported_roots(path) & FORBIDDEN)
        for path in CORE.rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_probe_imports_only_the_standard_library_and_pytest():
    probe = CORE / "probe" / "equisa_probe.py"
    # pytest hosts the probe; `_pytest` is its own package (runtestprotocol is not re-exported by pytest)
    allowed = set(sys.stdlib_module_names) | {"__future__", "pytest", "_pytest"}
    assert imported_roots(probe) - allowed == set()


def test_importing_every_core_module_loads_no_forbidden_package():
    modules = sorted(
        "equisa_core." + ".".join(p.relative_to(CORE).with_suffix("").parts)
        for p in CORE.rglob("*.py") if p.name != "__init__.py" and p.parent.name != "probe"
    )
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        f"print(sorted(set(m.split('.')[0] for m in sys.modules) & {FORBIDDEN!r}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"

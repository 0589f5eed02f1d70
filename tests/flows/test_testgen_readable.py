"""Generated tests a maintainer would keep (issue 22, readability): ``equisa testgen --no-llm`` on the
invoicing example's modules, its output read as a reviewer would. Every test calls a function or
method of the target module itself (no test goes through a helper), no file defines a helper longer
than 10 lines, ruff finds nothing, and the module passes 3 times in 3 different random orders."""

from __future__ import annotations

import ast
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.flows.test_testgen_cli import EQUISA, INVOICING, count_cases

pytestmark = pytest.mark.integration

MAX_HELPER_LINES = 10


def _defined_in(target: Path) -> tuple[set[str], set[str]]:
    """(the module-level names the target defines, every function and method name it defines)."""
    tree = ast.parse(target.read_text())
    top = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}
    functions = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    return top, functions


#: Builtins that call a special method (``len(obj)`` calls ``__len__``).
SPECIAL_CALLS = {"len", "str", "repr", "bool", "hash", "abs", "int", "float"}


def _calls_the_target(test: ast.FunctionDef, module: str, top: set[str], functions: set[str]) -> bool:
    """Whether the test calls one of the target's functions or methods itself: ``name(...)`` for a
    name imported from it, ``<object or class>.method(...)``, ``module.Class(...)``, or, for a
    special method the target defines, the operator or builtin that calls it (``a + b``,
    ``len(obj)``, ``obj[key]``, ``key in obj``)."""
    special = any(f.startswith("__") and f.endswith("__") and f != "__init__" for f in functions)
    for statement in (n for n in ast.walk(test) if isinstance(n, ast.stmt)):
        value = statement.value if isinstance(statement, ast.Assign | ast.Expr) else None
        if special and isinstance(value, ast.BinOp | ast.Compare | ast.UnaryOp | ast.Subscript):
            return True
        if special and isinstance(value, ast.Call) and ast.unparse(value.func) in SPECIAL_CALLS:
            return True
    for call in (n for n in ast.walk(test) if isinstance(n, ast.Call)):
        callee = call.func
        if isinstance(callee, ast.Name) and callee.id in top:
            return True
        if isinstance(callee, ast.Attribute) and (callee.attr in functions or (
                callee.attr in top and ast.unparse(callee.value) == module)):
            return True
    return False


@pytest.mark.parametrize("target", ["invoicing/discounts.py", "invoicing/money.py"])
def test_generated_tests_call_the_target_directly_pass_in_any_order_and_are_ruff_clean(
        target, tmp_path, cli_env):
    out = tmp_path / "out"
    done = subprocess.run([EQUISA, "testgen", str(INVOICING), "--target", target, "--no-llm",
                           "--out", str(out), "--max-attempts", "1", "--mutants-per-measurement", "10"],
                          capture_output=True, text=True, env=cli_env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    (written,) = out.glob("test_*.py")
    text = written.read_text()
    tree = ast.parse(text)
    module = target.removesuffix(".py").replace("/", ".")
    top, functions = _defined_in(INVOICING / target)
    tests = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
    helpers = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
               and not n.name.startswith("test_")]
    assert len(tests) >= 10, text[:2000]
    assert "_equisa_call" not in text
    long_helpers = [(h.name, h.end_lineno - h.lineno + 1) for h in helpers
                    if h.end_lineno is not None and h.end_lineno - h.lineno + 1 > MAX_HELPER_LINES]
    assert not long_helpers, long_helpers
    indirect = [t.name for t in tests if not _calls_the_target(t, module, top, functions)]
    assert not indirect, f"tests that do not call {module} directly: {indirect}"

    linted = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", str(written)],
                            capture_output=True, text=True)
    assert linted.returncode == 0, linted.stdout + linted.stderr

    # Three runs, each in its own random order (pytest runs node ids in the order given).
    ids = [f"{written.name}::{t.name}" for t in tests]
    for seed in (1, 2, 3):
        order = ids[:]
        random.Random(seed).shuffle(order)
        ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              f"--rootdir={out}", *order], cwd=out, capture_output=True, text=True,
                             timeout=300, env={**cli_env, "PYTHONPATH": str(INVOICING)})
        assert ran.returncode == 0, f"seed {seed}:\n" + ran.stdout[-3000:]
        assert f"{count_cases(tests)} passed" in ran.stdout

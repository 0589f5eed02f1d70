"""``equisa testgen --no-llm`` on a module whose functions take functions (issue 49): the search draws
callables (builtins, ``operator`` functions, lambdas, documented functions) for the parameters the
bodies call, writes them as source in passing tests, and keeps a test of the decorator factory."""

from __future__ import annotations

import ast
import json

from tests.conftest import FIXTURES
from tests.flows.test_testgen_cli import run_testgen

CALLABLES = FIXTURES / "callables"


def test_functions_taking_functions_get_passing_tests_with_callables_written_as_source(tmp_path, cli_env):
    out, report = tmp_path / "out", tmp_path / "report.json"
    code, _, stderr = run_testgen(cli_env, str(CALLABLES), "--target", "funcs.py", "--no-llm",
                                  "--out", str(out), "--json", str(report), "--max-attempts", "1",
                                  "--mutants-per-measurement", "0")
    assert code == 0, stderr[-3000:]
    text = next(out.glob("test_*.py")).read_text()
    attempt = json.loads(report.read_text())["attempts"][0]
    assert attempt["tests_passed"] == len(attempt["tests"]) > 0, attempt
    assert attempt["coverage"]["percent"] >= 85, attempt["coverage"]
    assert "<function" not in text and " at 0x" not in text, text
    tests = {n.name: ast.unparse(n) for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)}
    searched = [code for name, code in tests.items() if name.startswith("test_search_0_")]
    # fold's combine is called with two arguments, rank's key passed as key=: both drawn as callables
    assert any("fold(operator." in c or "fold(max" in c or "fold(min" in c or "fold(lambda x, y" in c
               for c in searched), text
    assert any("rank(" in c and ("len)" in c or "lambda x: x)" in c or "str)" in c) for c in searched), text
    # the decorator factory: called with documented functions, its result applied, the docstring compared
    factory = next(c for name, c in tests.items() if name.startswith("test_search_0_merge_notes"))
    assert "functools.wraps(" in factory and "result.__doc__ ==" in factory, factory
    assert any(name.endswith("_documented") for name in tests), text  # defined at module level

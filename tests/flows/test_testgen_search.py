"""``equisa testgen --no-llm`` with the coverage-guided input search (issue 22), on a module over
lists of intervals whose own tests only ever pass a list of one interval (and one of two with a
gap): the search builds longer lists, so merging is exercised both ways, and the input that makes
``first_gap`` fail with ``IndexError`` is listed as a possible bug, not asserted; ``IntervalSet`` is
tested through method sequences (construct, several calls, the state they leave). Without the
search (``--input-search-examples 0``) the same run reaches fewer branches."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

from tests.conftest import FIXTURES
from tests.flows.test_testgen_cli import EQUISA

INTERVALS = FIXTURES / "intervals"
TARGET = "intervals/core.py"


def _testgen(tmp_path, cli_env, name: str, *extra: str) -> tuple[dict, str, str]:
    out, report = tmp_path / name, tmp_path / f"{name}.json"
    done = subprocess.run([EQUISA, "testgen", str(INTERVALS), "--target", TARGET, "--no-llm", "--out", str(out),
                           "--json", str(report), "--max-attempts", "1", "--mutants-per-measurement", "0",
                           *extra], capture_output=True, text=True, env=cli_env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    (written,) = out.glob("test_*.py")
    return json.loads(report.read_text()), written.read_text(), done.stdout + done.stderr


def _calls(text: str, name: str) -> list[ast.Call]:
    return [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name) and n.func.id == name]


def test_the_search_builds_longer_lists_and_lists_the_possible_bug(tmp_path, cli_env):
    report, text, printed = _testgen(tmp_path, cli_env, "searched")
    (attempt,) = report["attempts"]
    notes = attempt["deterministic"]
    assert any(n.startswith("searched inputs of 3 functions with Hypothesis under branch coverage") for n in notes)
    possible = [n for n in notes if n.startswith("possible bug, not asserted: first_gap(")]
    assert possible and all("raised IndexError" in p for p in possible), notes
    assert any(n.startswith("possible bug, not asserted: first_gap([])") for n in possible)  # the search's
    assert all(p in " ".join(printed.split()) for p in possible)  # the summary shows them

    # The suite never merges two overlapping intervals; a searched test does.
    merged_lists = [ast.literal_eval(c.args[0]) for c in _calls(text, "merge") if c.args]
    sys.path.insert(0, str(INTERVALS))
    try:
        from intervals.core import merge
    finally:
        sys.path.remove(str(INTERVALS))
    assert any(len(v) >= 2 and len(merge(v)) < len(v) for v in merged_lists), merged_lists
    for test in (n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)):
        body = ast.unparse(test)
        assert not ("first_gap" in body and "IndexError" in body), body  # listed, never asserted
    sequences = [t for t in ast.parse(text).body if isinstance(t, ast.FunctionDef)
                 and t.name.startswith("test_search_0_IntervalSet_")]
    assert any(ast.unparse(t).count("obj.") >= 3 and "len(obj)" in ast.unparse(t) for t in sequences), \
        [ast.unparse(t) for t in sequences]
    assert any(n.startswith("searched method sequences of 1 classes") for n in notes), notes
    searched = attempt["coverage"]

    _, plain_text, _ = _testgen(tmp_path, cli_env, "plain", "--input-search-examples", "0")
    plain = json.loads((tmp_path / "plain.json").read_text())["attempts"][0]
    assert not any(n.startswith("searched inputs") for n in plain["deterministic"])
    assert searched["percent"] > plain["coverage"]["percent"], (searched, plain["coverage"])
    assert "test_search_" in text and "test_search_" not in plain_text

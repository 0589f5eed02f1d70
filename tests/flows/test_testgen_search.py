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


def _first_arguments(text: str, name: str) -> list[object]:
    """The first argument of every call of ``name`` in the module's tests, a parametrized test's
    once per case of its table."""
    found: list[object] = []
    for test in (n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)):
        cases: list[dict[str, object]] = [{}]
        for decorator in test.decorator_list:
            if isinstance(decorator, ast.Call) and ast.unparse(decorator.func) == "pytest.mark.parametrize":
                names = ast.literal_eval(decorator.args[0])
                names = [names] if isinstance(names, str) else list(names)
                rows = ast.literal_eval(decorator.args[1])
                cases = [dict(zip(names, row if len(names) > 1 else [row], strict=True)) for row in rows]
        for call in (n for n in ast.walk(test) if isinstance(n, ast.Call)):
            if isinstance(call.func, ast.Name) and call.func.id == name and call.args:
                first = call.args[0]
                found += [case[first.id] for case in cases] if isinstance(first, ast.Name) \
                    else [ast.literal_eval(first)]
    return found


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
    merged_lists = _first_arguments(text, "merge")
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


def test_crosshair_adds_inputs_of_the_annotated_functions(tmp_path, cli_env):
    report, _, _ = _testgen(tmp_path, cli_env, "crosshair", "--crosshair", "--crosshair-seconds", "2")
    notes = report["attempts"][0]["deterministic"]
    (asked,) = [n for n in notes if n.startswith("asked CrossHair for inputs of 3 annotated functions")]
    assert "CrossHair failed" not in asked and " (0 inputs)" not in asked, asked


def test_crosshair_without_crosshair_tool_is_bad_input(tmp_path, monkeypatch, capsys):
    import importlib.util

    from cli.main import main

    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "crosshair" else found(name, *a))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    code = main(["testgen", str(INTERVALS), "--target", TARGET, "--no-llm", "--crosshair",
                 "--out", str(tmp_path / "out"), "--json", str(tmp_path / "r.json")])
    assert code == 3
    said = " ".join(capsys.readouterr().err.split())
    assert "--crosshair needs crosshair-tool" in said and "uv sync --extra crosshair" in said
    assert not (tmp_path / "out").exists()

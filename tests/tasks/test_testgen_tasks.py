"""The testgen tasks' I/O: coverage in a real sandbox, static analysis with the tools, the DuckDB store."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from equisa_core.errors import CoverageUnavailableError
from equisa_core.testgen.embedding import local_embedding
from tasks.llm import LLMConfig
from tasks.sandbox.contract import EXIT_GRACE_S, WRITER_EXIT_GRACE_S, RunRequest
from tasks.testgen.analysis import analyse_test_module, coverage_request, execute_coverage
from tasks.testgen.test_store import TestStore, embed_texts
from tests.conftest import venv_with_pytest

SHAPES = Path(__file__).resolve().parents[1] / "fixtures" / "shapes"
GENERATED = "tests/equisa_generated/test_gen.py"


def base() -> RunRequest:
    return RunRequest(workspace=SHAPES, workspace_digest="shapes", interpreter=sys.executable)


def test_branch_coverage_and_per_test_lines_come_back_from_the_sandbox():
    module = (
        "from shapes.geometry import countdown, square\n\n\n"
        "def test_square():\n    assert square(2) == 4\n\n\n"
        "def test_countdown():\n    assert list(countdown(2)) == [2, 1]\n"
    )
    request = coverage_request(base(), {GENERATED: module}, [GENERATED], "shapes/geometry.py")
    # the plugin writes its record at unconfigure, after the probe's end: the suite gets the long grace
    assert request.exit_grace_s == WRITER_EXIT_GRACE_S > EXIT_GRACE_S == base().exit_grace_s
    result = execute_coverage(request)
    assert result.error is None and 0 < result.percent < 100 and result.branches > 0
    assert {t.test_id.split("::")[-1] for t in result.trace.tests} == {"test_square", "test_countdown"}
    source = (SHAPES / "shapes" / "geometry.py").read_text().splitlines()
    body_of_square = next(i + 2 for i, line in enumerate(source) if line.startswith("def square("))
    assert result.line_tests[body_of_square] == (f"{GENERATED}::test_square",)
    countdown_loop = next(i + 1 for i, line in enumerate(source) if "while n > 0" in line)
    assert result.line_tests[countdown_loop] == (f"{GENERATED}::test_countdown",)
    assert (countdown_loop, countdown_loop + 1) in result.executed_branches
    assert body_of_square not in result.missing_lines and result.missing_lines


def test_a_target_no_test_imports_is_reported_not_raised():
    module = "def test_nothing():\n    assert 1 + 1 == 2\n"
    result = execute_coverage(
        coverage_request(base(), {GENERATED: module}, [GENERATED], "shapes/geometry.py")
    )
    assert result.error and result.percent == 0.0


def test_an_interpreter_without_coverage_gets_a_clear_error(tmp_path):
    python = venv_with_pytest("3.12")  # a venv with pytest only (skips, with the reason, without 3.12)
    module = "from shapes.geometry import square\n\n\ndef test_square():\n    assert square(2) == 4\n"
    request = coverage_request(
        base().model_copy(update={"interpreter": str(python)}),
        {GENERATED: module},
        [GENERATED],
        "shapes/geometry.py",
    )
    request = request.model_copy(update={"env": {**request.env, "EQUISA_COVERAGE_PATH": str(tmp_path)}})
    with pytest.raises(CoverageUnavailableError, match="cannot be imported"):
        execute_coverage(request)


def test_static_analysis_runs_ruff_and_radon_and_reports_what_it_skipped(tmp_path):
    source = "import os\n\n\ndef test_a():\n    for i in range(3):\n        if i:\n            assert i\n"
    report = analyse_test_module.fn(source, str(tmp_path))
    assert report.syntax_ok and report.tools == ("compile", "ruff", "radon")
    assert [(i.tool, i.code) for i in report.lint_issues] == [("ruff", "F401")]
    assert report.max_complexity == 4 and report.test_count == 1  # radon: 1 + for + if + assert
    assert report.skipped_tools == {"mypy": "the repository does not configure mypy"}
    broken = analyse_test_module.fn("def test_(:\n", str(tmp_path))
    assert not broken.syntax_ok and broken.syntax_error.startswith("line 1")


def test_the_store_ranks_by_cosine_in_duckdb_and_persists(tmp_path):
    codes = ["def test_a():\n    assert add(1, 2) == 3\n", "def test_b():\n    assert parse('x') is None\n"]
    vectors, made_by, problem = embed_texts(codes, None)
    assert made_by == "local" and problem is None
    with TestStore(tmp_path / "s.duckdb") as store:
        store.add("existing", [("a", codes[0]), ("b", codes[1])], vectors)
    with TestStore(tmp_path / "s.duckdb") as store:
        assert store.count() == 2
        best = store.most_similar(local_embedding("def test_c():\n    assert add(1, 2) == 3\n"), 2)
        assert [name for name, _, _ in best] == ["a", "b"] and best[0][2] == pytest.approx(1.0, abs=1e-6)


def test_embeddings_come_from_the_endpoint_or_fall_back_with_a_reason(scripted_llm):
    config = LLMConfig(base_url=scripted_llm.base_url, api_key="sk-test")
    scripted_llm.embed_with(lambda text: [float(len(text)), 1.0, 0.0])
    vectors, made_by, problem = embed_texts(["ab", "abcd"], config)
    assert vectors == [[2.0, 1.0, 0.0], [4.0, 1.0, 0.0]] and made_by == "endpoint:text-embedding-3-small"
    assert problem is None
    scripted_llm.embed_with(None)  # the server now answers 404
    vectors, made_by, problem = embed_texts(["ab"], config)
    assert made_by == "local" and len(vectors[0]) == 256 and "used local ones" in problem

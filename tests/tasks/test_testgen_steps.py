"""The seed 000 §8 pipeline's step runners (``tasks.testgen.steps``) in LLM mode against the scripted
server: redundancy rewrite, smell critic and the bounded fix loop, the store; and the same module in
deterministic mode."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from prefect.testing.utilities import prefect_test_harness

from equisa_core.testgen.machine import Dedupe, Deduped, FixSmells, SmellsFixed
from equisa_core.testgen.modules import list_tests
from equisa_core.testgen.report import PipelineNotes
from tasks.llm import LLMConfig
from tasks.run.parameters import TestgenParameters
from tasks.run.prepared_run import PreparedRun
from tasks.run.workspace import Workspace
from tasks.sandbox.contract import RunRequest
from tasks.sandbox.run_tests import sandbox_isolation
from tasks.testgen.context import TestgenContext
from tasks.testgen.steps import dedupe, fix_smells
from tasks.testgen.test_store import TestStore
from tests.scripted_llm_server import RecordedRequest, Reply

EXISTING = "def test_total():\n    assert total([1, 2]) == 3\n"
NEW = """\
from shop import total


def test_copy():
    assert total([1, 2]) == 3


def test_roulette():
    assert total([]) == 0
    assert total([1]) == 1
    assert total([1, 1]) == 2
    assert total([2, 2]) == 4
"""
REWRITTEN = "from shop import total\n\n\ndef test_negative():\n    assert total([-1, -2]) == -3\n"
FIXED = """\
from shop import total


def test_negative_r1():
    assert total([-1, -2]) == -3


def test_roulette():
    assert total([]) == 0, "empty"
    assert total([1, 1]) == 2, "two"
"""


@pytest.fixture(scope="module")
def prefect_server() -> Iterator[None]:
    """One temporary Prefect server and database (the model's calls are Prefect tasks)."""
    with prefect_test_harness(server_startup_timeout=180):
        yield


def pipeline(ctx: TestgenContext, store: TestStore, source: str) -> tuple[Deduped, SmellsFixed]:
    """The §8 steps the machine asks for on a new module: similarity, then smells; and their
    observations (with the model calls each made)."""
    deduped = dedupe(ctx, store, Dedupe(attempt=0, source=source, tests=list_tests(source),
                                         notes=PipelineNotes()))
    fixed = fix_smells(ctx, store, FixSmells(attempt=0, source=deduped.source, budget=2,
                                              notes=deduped.notes))
    return deduped, fixed


def context(tmp_path: Path, llm: bool, base_url: str = "") -> TestgenContext:
    workspace = Workspace(root=tmp_path, digest="d", source=str(tmp_path), ref=None, files=0, bytes=0)
    base = RunRequest(workspace=tmp_path, workspace_digest="d", interpreter="python3")
    prepared = PreparedRun(repo=tmp_path, workspace=workspace, interpreter_version="3", base=base,
                           sandbox=sandbox_isolation("local"))
    params = TestgenParameters(path=str(tmp_path), target="shop.py", improvement_budget=2)
    config = (
        LLMConfig(base_url=base_url, api_key="sk-test", model="gpt-4o-mini", backup_model=None, max_retries=0)
        if llm
        else None
    )
    from equisa_core.testgen.framework import FrameworkChoice

    return TestgenContext(
        prepared=prepared,
        params=params,
        target="shop.py",
        target_source="def total(xs):\n    return sum(xs)\n",
        module_path="tests/equisa_generated/test_testgen_shop.py",
        framework=FrameworkChoice(framework="pytest", reason="test"),
        baseline=None,
        use_llm=llm,
        config=config,
        out=tmp_path,
    )


def test_llm_pipeline_rewrites_the_redundant_test_and_fixes_smells_within_the_budget(
    tmp_path, prefect_server, scripted_llm
):
    critic_answers = iter(["test_roulette: assertion roulette: four bare asserts", "NO SMELLS"])

    def respond(request: RecordedRequest) -> Reply:
        prompt = request.last_user_message
        if "nearly the same as an existing test" in prompt:
            return Reply(REWRITTEN)
        if prompt.startswith("You are a strict reviewer of unit tests."):
            return Reply(next(critic_answers))
        if prompt.startswith("You are an expert Python test engineer. Rewrite the test module below"):
            return Reply(FIXED)
        return Reply("unexpected")

    scripted_llm.respond_with(respond)
    # every text embeds to the same vector: whatever is new is redundant with the stored test
    scripted_llm.embed_with(lambda text: [1.0, 0.0, 0.0])
    ctx = context(tmp_path, llm=True, base_url=scripted_llm.base_url)
    with TestStore(tmp_path / "s.duckdb") as store:
        store.add("existing", [("tests/test_shop.py::test_total", EXISTING)], [[1.0, 0.0, 0.0]])
        deduped, fixed = pipeline(ctx, store, NEW)
    result, notes = fixed.source, fixed.notes
    assert result == FIXED and notes.embeddings == "endpoint:text-embedding-3-small"
    assert [n.split(":")[0] for n in notes.redundant] == ["test_copy", "test_roulette"]
    assert all("rewritten by the model" in n for n in notes.redundant)
    assert notes.critic == ["test_roulette: assertion roulette: four bare asserts"]
    assert notes.smell_rounds == 1 and notes.smells_fixed == ["round 1: the model rewrote the module"]
    assert [c.purpose for c in deduped.calls] == ["testgen-redundant", "testgen-redundant"]
    assert [c.purpose for c in fixed.calls] == [
        "testgen-smell-critic",
        "testgen-smell-fix",
        "testgen-smell-critic",
    ]
    calls = deduped.calls + fixed.calls
    assert all(c.cost_usd and c.cost_usd > 0 for c in calls) and deduped.problems == fixed.problems == ()


def test_deterministic_pipeline_fixes_smells_itself_and_keeps_distinct_tests(tmp_path):
    ctx = context(tmp_path, llm=False)
    with TestStore(tmp_path / "s.duckdb") as store:
        from equisa_core.testgen.embedding import local_embedding

        store.add("existing", [("tests/test_shop.py::test_total", EXISTING)], [local_embedding(EXISTING)])
        deduped, fixed = pipeline(ctx, store, NEW)
    result, notes = fixed.source, fixed.notes
    assert notes.redundant == ["test_copy: similarity 1.000 to an existing test; dropped"]
    assert "def test_copy" not in result and "assert total([]) == 0, 'total([]) == 0'" in result
    assert notes.smells_found == ["test_roulette: assertion_roulette"] and notes.smell_rounds == 1
    assert deduped.calls == fixed.calls == () and deduped.problems == fixed.problems == ()

"""The multi-retrieval patcher against a real OpenAI-compatible server on 127.0.0.1 (the real client).

``run_patcher`` runs inside Prefect flows against a temporary Prefect server, so the model calls
are the real ``call_llm`` task (retries, backup model, cost). Each test has its own result storage.
The ``evaluate`` callbacks stand in for the sandboxed runs Validation does.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from prefect.settings import PREFECT_LOCAL_STORAGE_PATH, temporary_settings
from prefect.testing.utilities import prefect_test_harness

from equisa_core.common.cost import CostLedger
from equisa_core.repair.prompts import NO_ACTION_MESSAGE, QUERIES_IGNORED_NOTE
from equisa_core.repair.retrieval import python_grep
from equisa_core.validation.candidates import PatchCandidate, PatchEvaluation, PatchStatus
from tasks.llm import LLMConfig
from tasks.repair import patcher as patcher_module
from tasks.repair.patcher import (
    PatchAction,
    PatcherIssue,
    PatcherResult,
    default_search,
    ripgrep_search,
    run_patcher,
)
from tests.scripted_llm_server import Fault, RecordedRequest, Reply
from tests.tasks.test_llm import BACKUP, PRIMARY, in_flow, make_config

pytestmark = pytest.mark.integration

T = TypeVar("T")
PRIMARY_CALL = 100 * 2.0 / 1e6 + 20 * 8.0 / 1e6  # a Reply's default usage at the primary's prices
BACKUP_CALL = 100 * 0.5 / 1e6 + 20 * 1.0 / 1e6

PRICING = '''"""Prices per unit."""

PRICES = {"apple": 2, "pear": 3}


def unit_price(name):
    return PRICES[name] - 1
'''
FIXED_PRICING = PRICING.replace("PRICES[name] - 1", "PRICES[name]")
CART = '''from shop.pricing import unit_price


def total(items):
    return sum(unit_price(name) * quantity for name, quantity in items)
'''
TEST_CART = '''from shop.cart import total


def test_total():
    assert total([("apple", 2)]) == 4
'''
FAILURE = """tests/test_cart.py:5: in test_total
    assert total([("apple", 2)]) == 4
E   assert 2 == 4
E    +  where 2 = total([('apple', 2)])"""

ISSUE = PatcherIssue(
    target="shop.cart.total",
    target_file="shop/cart.py",
    source="def total(items):\n    return sum(unit_price(name) * quantity for name, quantity in items)\n",
    failing_tests=("tests/test_cart.py::test_total",),
    test_output=FAILURE,
    reflection="total multiplies each unit price by its quantity correctly; the unit price itself looks "
               "too low.\nCONFIRMED_BUGGY",
)


def patches(original: str, where: str, patched: str) -> str:
    return (f"<patches>\n<patch>\n<original_code>\n{original}</original_code>\n<code_lines_to_replace>\n"
            f"{where}\n</code_lines_to_replace>\n<patched_code>\n{patched}</patched_code>\n</patch>\n"
            "</patches>")


WRONG_PATCH = "Add the missing unit in total.\n" + patches(
    "5:    return sum(unit_price(name) * quantity for name, quantity in items)\n", "shop/cart.py:5-5",
    "    return sum((unit_price(name) + 1) * quantity for name, quantity in items) + 1\n")
STALE_PATCH = "Then pricing adds one.\n" + patches(
    "6:def unit_price(name):\n7:    return PRICES[name] + 1\n", "shop/pricing.py:6-7",
    "def unit_price(name):\n    return PRICES[name]\n")
RIGHT_PATCH = "unit_price subtracts one from every price: that is the bug.\n" + patches(
    "6:def unit_price(name):\n7:    return PRICES[name] - 1\n", "shop/pricing.py:6-7",
    "def unit_price(name):\n    return PRICES[name]\n")
STILL_FAILING_DETAIL = "tests/test_cart.py::test_total: assert 6 == 4"


@pytest.fixture(scope="module")
def prefect_server() -> Iterator[None]:
    with prefect_test_harness(server_startup_timeout=180):
        yield


@pytest.fixture(autouse=True)
def private_result_storage(request, tmp_path) -> Iterator[None]:
    if "prefect_server" not in request.fixturenames:
        yield
        return
    with temporary_settings({PREFECT_LOCAL_STORAGE_PATH: tmp_path / "prefect-results"}):
        yield


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "shop-repo"
    for relative, text in {
        "shop/__init__.py": "",
        "shop/pricing.py": PRICING,
        "shop/cart.py": CART,
        "tests/test_cart.py": TEST_CART,
    }.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


class Judge:
    """An ``evaluate`` callback: SOUND for the right fix, STILL_FAILING otherwise; records what it saw."""

    def __init__(self) -> None:
        self.seen: list[PatchCandidate] = []

    def __call__(self, candidate: PatchCandidate) -> PatchEvaluation:
        self.seen.append(candidate)
        if candidate.files == {"shop/pricing.py": FIXED_PRICING}:
            return PatchEvaluation(candidate=candidate.id, status=PatchStatus.SOUND, detail="all tests pass")
        return PatchEvaluation(candidate=candidate.id, status=PatchStatus.STILL_FAILING,
                               detail=STILL_FAILING_DETAIL, still_failing=("tests/test_cart.py::test_total",))


def answers_by_turn(*texts: str) -> Callable[[RecordedRequest], Reply]:
    """A responder answering the n-th turn (n assistant messages so far) with ``texts[n]``."""

    def respond(request: RecordedRequest) -> Reply:
        turn = sum(1 for m in request.messages if m["role"] == "assistant")
        return Reply(texts[turn])

    return respond


# --- the whole loop ------------------------------------------------------------------------------


def test_grep_file_range_wrong_patch_stale_patch_then_the_fix(prefect_server, scripted_llm, repo):
    scripted_llm.enqueue(
        Reply("The test expects 4 for two apples at 2 each, got 2: each unit costs 1. total looks right; "
              "the price comes from unit_price. Plan: read unit_price.\n<grep>unit_price</grep>"),
        Reply("I want the price table too.\n<file>shop/pricing.py:1-4</file>"),
        Reply(WRONG_PATCH),
        Reply(STALE_PATCH),
        Reply(RIGHT_PATCH),
    )
    judge = Judge()
    result = in_flow(lambda: run_patcher(make_config(scripted_llm), ISSUE, repo, judge,
                                         search=python_grep))

    assert result.stop_reason == "sound" and result.error is None
    assert result.accepted is not None and result.accepted.id == "patcher-3"
    assert result.accepted.files == {"shop/pricing.py": FIXED_PRICING}
    assert (result.accepted.generator, result.accepted.target) == ("patcher", "shop.cart.total")
    assert [c.id for c in result.candidates] == ["patcher-1", "patcher-3"] == [c.id for c in judge.seen]
    assert [(e.candidate, e.status) for e in result.evaluations] == [
        ("patcher-1", PatchStatus.STILL_FAILING),
        ("patcher-2", PatchStatus.DOES_NOT_APPLY),
        ("patcher-3", PatchStatus.SOUND),
    ]
    assert result.evaluations_used == 2
    turns = [(t.number, t.action, t.next_action, t.candidate, t.status, t.evaluated) for t in result.turns]
    assert turns == [
        (1, PatchAction.ANALYZE_ISSUE, PatchAction.RETRIEVE, None, None, False),
        (2, PatchAction.RETRIEVE, PatchAction.RETRIEVE, None, None, False),
        (3, PatchAction.RETRIEVE, PatchAction.ANALYZE_ISSUE, "patcher-1", PatchStatus.STILL_FAILING, True),
        (4, PatchAction.ANALYZE_ISSUE, PatchAction.ANALYZE_ISSUE, "patcher-2", PatchStatus.DOES_NOT_APPLY,
         False),
        (5, PatchAction.ANALYZE_ISSUE, PatchAction.DONE, "patcher-3", PatchStatus.SOUND, True),
    ]
    # unit_price: its definition (pricing.py 6-7) and its use in cart.py (import line, and total)
    assert (result.turns[0].queries, result.turns[0].snippets, result.turns[0].failed_queries) == (
        ("<grep>unit_price</grep>",), 2, ())
    assert (result.turns[1].queries, result.turns[1].snippets) == (("<file>shop/pricing.py:1-4</file>",), 1)

    first, grep_results, file_results, after_wrong, after_stale = (r.last_user_message
                                                                   for r in scripted_llm.requests)
    for evidence in ("Target Function: shop.cart.total", "File: shop/cart.py",
                     "tests/test_cart.py::test_total", "E   assert 2 == 4",
                     "the unit price itself looks too low", "<patches>", "<grep>"):
        assert evidence in first
    assert "shop/pricing.py:6-7 [HIGH]" in grep_results
    assert "6:def unit_price(name):\n7:    return PRICES[name] - 1" in grep_results
    assert "shop/cart.py:1-5 [HIGH]" in grep_results
    assert 'shop/pricing.py:1-4 [LOW] file shop/pricing.py:1-4\n1:"""Prices per unit."""' in file_results
    assert "Your patch patcher-1 was evaluated: STILL_FAILING." in after_wrong
    assert STILL_FAILING_DETAIL in after_wrong and "Evaluations left: 2." in after_wrong
    assert "Your patch patcher-2 was evaluated: DOES_NOT_APPLY." in after_stale
    assert "<original_code> is not in shop/pricing.py" in after_stale
    assert "line 7 of the file is '    return PRICES[name] - 1'" in after_stale

    # the conversation: the first message, then answer and feedback by turn, ending on the accepted answer
    assert len(result.messages) == 10 and result.messages[-1] == {"role": "assistant", "content": RIGHT_PATCH}
    assert scripted_llm.requests[-1].messages == result.messages[:-1]
    # cost: five calls on the primary model; each candidate carries the calls since the last proposal
    assert result.cost_usd == pytest.approx(5 * PRIMARY_CALL)
    assert result.cost_usd == pytest.approx(CostLedger().plus(result.calls).usd)
    assert result.candidates[0].cost_usd == pytest.approx(3 * PRIMARY_CALL)
    assert result.accepted.cost_usd == pytest.approx(PRIMARY_CALL)
    assert [c.purpose for c in result.calls] == [
        "patcher analyze_issue 1", "patcher retrieve 2", "patcher retrieve 3", "patcher analyze_issue 4",
        "patcher analyze_issue 5"]
    assert (repo / "shop" / "pricing.py").read_text() == PRICING  # the workspace is never written
    PatcherResult.model_validate_json(result.model_dump_json())  # the record serialises


def test_the_evaluation_limit_stops_a_model_that_never_gets_it_right(prefect_server, scripted_llm, repo):
    scripted_llm.respond_with(lambda request: Reply(WRONG_PATCH + "\n<grep>total</grep>"))
    judge = Judge()
    result = in_flow(lambda: run_patcher(make_config(scripted_llm), ISSUE, repo, judge, max_evaluations=2))

    assert result.stop_reason == "evaluation_limit" and result.accepted is None
    assert len(scripted_llm.requests) == 2 and len(judge.seen) == 2 and result.evaluations_used == 2
    assert [e.status for e in result.evaluations] == [PatchStatus.STILL_FAILING] * 2
    assert [t.next_action for t in result.turns] == [PatchAction.ANALYZE_ISSUE, PatchAction.DONE]
    feedback = scripted_llm.requests[1].last_user_message
    assert "Evaluations left: 1." in feedback and QUERIES_IGNORED_NOTE in feedback
    assert result.turns[0].queries == ()  # the patch was taken, the queries not run


def test_the_turn_limit_stops_a_model_that_neither_asks_nor_patches(prefect_server, scripted_llm, repo):
    scripted_llm.respond_with(lambda request: Reply("I am thinking about it."))
    result = in_flow(lambda: run_patcher(make_config(scripted_llm), ISSUE, repo, Judge(), max_turns=3))

    assert result.stop_reason == "turn_limit" and result.evaluations == [] and result.candidates == []
    assert len(scripted_llm.requests) == 3
    assert [(t.action, t.next_action) for t in result.turns] == [
        (PatchAction.ANALYZE_ISSUE, PatchAction.RETRIEVE), (PatchAction.RETRIEVE, PatchAction.RETRIEVE),
        (PatchAction.RETRIEVE, PatchAction.DONE)]
    assert scripted_llm.requests[1].last_user_message == NO_ACTION_MESSAGE


def test_a_primary_model_failing_with_500s_hands_over_to_the_backup(prefect_server, scripted_llm, repo):
    respond = answers_by_turn("<grep>unit_price</grep>", RIGHT_PATCH)
    scripted_llm.respond_with(
        lambda request: Fault.server_error(500) if request.model == PRIMARY else respond(request))
    result = in_flow(lambda: run_patcher(make_config(scripted_llm), ISSUE, repo, Judge()))

    assert result.stop_reason == "sound" and result.accepted is not None
    assert scripted_llm.models_seen() == [PRIMARY, PRIMARY, BACKUP] * 2
    assert [(c.model, c.fell_back, c.attempts) for c in result.calls] == [(BACKUP, True, 3)] * 2
    assert result.cost_usd == pytest.approx(2 * BACKUP_CALL)


def test_a_model_that_never_answers_ends_the_run_with_the_error(prefect_server, scripted_llm, repo):
    scripted_llm.respond_with(lambda request: Fault.server_error(503))
    config = make_config(scripted_llm, backup_model=None, max_retries=1)
    result = in_flow(lambda: run_patcher(config, ISSUE, repo, Judge()))

    assert result.stop_reason == "llm_error" and result.turns == [] and result.accepted is None
    assert result.error is not None and result.error.startswith("LLMUnavailableError: HTTP 503")
    [failed] = result.calls
    assert failed.error is not None and failed.attempts == 2 and result.cost_usd == 0.0


def test_limits_must_be_positive(repo):
    with pytest.raises(ValueError, match="at least 1"):
        run_patcher(LLMConfig(), ISSUE, repo, Judge(), max_evaluations=0)


# --- grep on ripgrep -----------------------------------------------------------------------------


def tree(root: Path) -> Path:
    files: dict[str, bytes] = {
        "b.py": b"needle = 1\nneedles = [needle]\n",
        "a/z.py": b"x = 1\nneedle\n",
        "a.py": b"# needle in a.py\n",
        "a/b/c.py": b"def needle():\n    return 'needle'\n",
        ".github/scripts/ci.py": b"needle()\n",
        "notes.txt": b"needle\n",
        ".git/hooks/x.py": b"needle\n",
        ".venv/lib/site.py": b"needle\n",
        "pkg/__pycache__/m.py": b"needle\n",
        "lib/site-packages/dep.py": b"needle\n",
        "tests/equisa_generated/test_gen.py": b"needle\n",
        "tests/test_b.py": b"from b import needle\n",
        "deep/tests/equisa_generated/kept.py": b"needle\n",
        "binary.py": b"needle\x00\n",
        "big.py": b"needle\n" + b"#" * (1024 * 1024) + b"\n",
        "edge.py": b"needle\n" + b"#" * (1024 * 1024 - 8) + b"\n",
        "crlf.py": b"first\r\nthe needle\r\n",
        "latin1.py": b"caf\xe9 = 'needle'\n",
        "bom.py": b"\xef\xbb\xbfneedle = 'bom'\n",
        "-dash.py": b"needle\n",
        "sp ace.py": b"needle\n",
        "\u00e9t\u00e9.py": b"needle = '\xc3\xa9'\n",
    }
    for relative, data in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_bytes(data)
    (root / "link.py").symlink_to(root / "b.py")
    (root / "linkdir").symlink_to(root / "a", target_is_directory=True)
    return root


needs_rg = pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep (rg) is not installed")


@needs_rg
@pytest.mark.parametrize("term", ["needle", "needle = ", "def needle", "'", "é", "zzz"])
def test_ripgrep_and_the_python_search_give_the_same_hits(tmp_path, monkeypatch, term):
    root = tree(tmp_path)
    expected = python_grep(root, term, 1000)

    def no_fallback(*args: object) -> None:
        raise AssertionError("ripgrep failed and the Python search stood in")

    monkeypatch.setattr(patcher_module, "python_grep", no_fallback)
    assert ripgrep_search(root, term, 1000, rg=shutil.which("rg")) == expected
    for limit in (1, 3, 7):
        assert ripgrep_search(root, term, limit, rg=shutil.which("rg")) == expected[:limit]


@needs_rg
def test_the_python_search_finds_what_the_skip_rules_allow(tmp_path):
    hits = python_grep(tree(tmp_path), "needle", 1000)
    assert sorted({h.path for h in hits}) == sorted([
        "-dash.py", ".github/scripts/ci.py", "a/b/c.py", "a/z.py", "a.py", "b.py", "bom.py", "crlf.py",
        "deep/tests/equisa_generated/kept.py", "edge.py", "latin1.py", "sp ace.py", "tests/test_b.py",
        "\u00e9t\u00e9.py"])


def test_a_missing_ripgrep_falls_back_to_the_python_search(tmp_path, monkeypatch):
    root = tree(tmp_path)
    assert ripgrep_search(root, "needle", 5, rg=str(tmp_path / "no-rg")) == python_grep(root, "needle", 5)
    monkeypatch.setattr(patcher_module.shutil, "which", lambda name: None)
    assert default_search() is python_grep

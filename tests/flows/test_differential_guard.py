"""The overfitting guard's differential test in Validation (``flows.validation``, step
``run-differential``): real Discovery, real sandboxed runs, hand-written candidates."""

from __future__ import annotations

from pathlib import Path

from prefect import flow
from prefect.settings import PREFECT_LOCAL_STORAGE_PATH, temporary_settings

from equisa_core.common.source_edit import replace_function
from equisa_core.validation.candidates import PatchCandidate, PatchEvaluation, PatchStatus
from flows.discovery import discovery
from flows.validation import validate_candidate
from tasks.discovery.suite import DiscoveryResult
from tasks.run.parameters import DiscoveryParameters
from tasks.validation.checks import ValidationContext, test_sources
from tests.conftest import small_repo

SHIPPING = '''def shipping(weight, express):
    """5 for a parcel under 10 kg, 20 from 10 kg on; express doubles it."""
    if weight > 10:  # bug: 10 kg is heavy too
        cost = 20
    else:
        cost = 5
    if express:
        cost *= 2
    return cost
'''
TESTS = '''from shipping import shipping


def test_light():
    assert shipping(3, False) == 5


def test_heavy_express():
    assert shipping(12, True) == 40


def test_ten_kilograms_is_heavy():
    assert shipping(10, False) == 20
'''
CORRECT = SHIPPING.replace("if weight > 10:  # bug: 10 kg is heavy too", "if weight >= 10:")
# Passes the three tests (the condition widened past the failure), but makes every express parcel
# heavy: shipping(3, True) becomes 40, shipping(0, True) too.
OVERFIT = SHIPPING.replace("if weight > 10:  # bug: 10 kg is heavy too", "if weight >= 10 or express:")


# Two mistakes: an empty ladder raises, and so does a score equal to the top rung (``ladder[i + 1]``
# past the end). The visible tests see only the first.
LADDER = '''def rank(score, ladder):
    """How many rungs of the sorted ``ladder`` are at or below ``score``."""
    if score > ladder[-1]:
        return len(ladder)
    for i in range(len(ladder)):
        if ladder[i] <= score < ladder[i + 1]:
            return i + 1
    return 0
'''
LADDER_TESTS = '''from ladder import rank


def test_above_the_top():
    assert rank(50, [10, 20, 30]) == 3


def test_below_the_bottom():
    assert rank(5, [10, 20, 30]) == 0


def test_between_rungs():
    assert rank(15, [10, 20, 30]) == 1


def test_an_empty_ladder():
    assert rank(7, []) == 0
'''
LADDER_HALF_FIX = LADDER.replace("    if score > ladder[-1]:", "    if not ladder:\n        return 0\n    if score > ladder[-1]:")
LADDER_FIXED = LADDER_HALF_FIX.replace("if score > ladder[-1]:", "if score >= ladder[-1]:")


def shipping_repo(tmp_path: Path, monkeypatch, module: str = "shipping", source: str = SHIPPING,
                  tests: str = TESTS) -> Path:
    """The shipping module (or ``module`` with ``source``) and its tests as a repository, with
    EQUISA's stores under ``tmp_path``."""
    for name, folder in (("EQUISA_WORKSPACES", "workspaces"), ("EQUISA_DB", "history.duckdb"),
                         ("EQUISA_ARTIFACTS", "artifacts"), ("EQUISA_SPOOL", "spool")):
        monkeypatch.setenv(name, str(tmp_path / folder))
    repo = small_repo(tmp_path / "shop")
    (repo / f"{module}.py").write_text(source)
    (repo / "tests" / f"test_{module}.py").write_text(tests)
    return repo


@flow(name="differential-guard-check")
def _validated(found: DiscoveryResult, sources: dict[str, str], module: str = "shipping",
               function: str = "shipping") -> dict[str, PatchEvaluation]:
    trace = found.trace
    target = f"{module}.{function}"
    ctx = ValidationContext(found=found, nodes={n.fqn: n for n in trace.nodes},
                            failing_sources=test_sources(found, sorted(trace.failed_tests())))
    text = (found.prepared.workspace.root / f"{module}.py").read_text(encoding="utf-8")
    verdicts = {name: validate_candidate(PatchCandidate(
        id=name, generator="mutation", target=target, description=name,
        files={f"{module}.py": replace_function(text, function, source)}), ctx)
        for name, source in sources.items()}
    # the original code's runs were made once, in the background of the first candidate's suite run
    assert list(ctx.preparing) == [target] and ctx.preparing[target].done()
    # each candidate's check run started with its suite run
    assert len(ctx.ahead) == len(sources) and all(running.done() for running in ctx.ahead)
    assert ctx.differential[target] is not None and ctx.carved[target]
    return verdicts


def test_a_patch_that_changes_behaviour_near_a_passing_call_is_overfitting_and_the_correct_one_is_sound(
        tmp_path: Path, prefect_api_url, monkeypatch):
    repo = shipping_repo(tmp_path, monkeypatch)
    with temporary_settings({PREFECT_LOCAL_STORAGE_PATH: tmp_path / "storage"}):
        found = discovery(DiscoveryParameters(path=str(repo), llm=False, testgen=False))
        verdicts = _validated(found, {"correct": CORRECT, "overfit": OVERFIT})
    correct, overfit = verdicts["correct"], verdicts["overfit"]
    assert correct.status is PatchStatus.SOUND, correct.detail
    assert correct.checks["differential inputs"].startswith("passed (same as the original on "), \
        correct.checks
    assert overfit.checks["failing tests pass"] == overfit.checks["no regressions"] == "passed"
    assert overfit.checks["carved tests"].startswith("passed"), overfit.checks  # the carved calls agree
    assert overfit.status is PatchStatus.OVERFITTING, overfit.detail
    assert "changes behaviour away from the failure" in overfit.detail
    assert "shipping(3, True): returned 10 before, returned 40 now" in overfit.detail


def test_a_check_run_made_ahead_that_failed_is_made_again_as_the_candidate_s_own(
        tmp_path: Path, prefect_api_url, monkeypatch):
    """The candidate's carved/differential run started with its suite run may fail where its own run
    would not (it runs carved tests that fail on the original too): the checks then run their own."""
    import flows.validation

    def failing(*args, **kwargs):
        raise RuntimeError("the run made ahead failed")

    monkeypatch.setattr(flows.validation, "checks_ahead", failing)
    repo = shipping_repo(tmp_path, monkeypatch)
    with temporary_settings({PREFECT_LOCAL_STORAGE_PATH: tmp_path / "storage"}):
        found = discovery(DiscoveryParameters(path=str(repo), llm=False, testgen=False))
        verdicts = _validated(found, {"correct": CORRECT, "overfit": OVERFIT})
    assert verdicts["correct"].status is PatchStatus.SOUND, verdicts["correct"].detail
    assert verdicts["overfit"].status is PatchStatus.OVERFITTING, verdicts["overfit"].detail
    assert "shipping(3, True): returned 10 before, returned 40 now" in verdicts["overfit"].detail


def test_a_half_fix_that_still_crashes_on_a_comparison_s_boundary_is_withheld_and_the_whole_fix_is_sound(
        tmp_path: Path, prefect_api_url, monkeypatch):
    """The score is compared with the ladder's rungs: the differential inputs try the first and last
    rung as the score, and on ``rank(30, [10, 20, 30])`` the half fix (the empty ladder only) still
    raises ``IndexError``, as the original did; the whole fix (both mistakes) answers there."""
    repo = shipping_repo(tmp_path, monkeypatch, "ladder", LADDER, LADDER_TESTS)
    with temporary_settings({PREFECT_LOCAL_STORAGE_PATH: tmp_path / "storage"}):
        found = discovery(DiscoveryParameters(path=str(repo), llm=False, testgen=False))
        verdicts = _validated(found, {"half": LADDER_HALF_FIX, "whole": LADDER_FIXED}, "ladder", "rank")
    half, whole = verdicts["half"], verdicts["whole"]
    assert half.checks["failing tests pass"] == half.checks["no regressions"] == "passed", half.checks
    assert half.status is PatchStatus.OVERFITTING, half.detail
    assert "rank(30, [10, 20, 30])" in half.detail and "IndexError" in half.detail, half.detail
    assert whole.status is PatchStatus.SOUND, whole.detail

"""Validation's runs on the original code for one target (``tasks.validation.checks.recorded_calls``,
``tasks.validation.target_checks.prepare_target``): the localization's recording reused, only the tests it
lacks recorded again; and a candidate's check run made ahead of the original's
(``tasks.validation.target_checks.checks_ahead``) judged as its own run would be. Real Discovery and real
sandboxed runs."""

from __future__ import annotations

from pathlib import Path

from prefect import flow
from prefect.settings import PREFECT_LOCAL_STORAGE_PATH, temporary_settings

from equisa_core.common.models import TestResult
from equisa_core.common.source_edit import replace_function
from equisa_core.testgen.carving import carved_module
from equisa_core.validation.candidates import PatchCandidate
from equisa_core.validation.checks import CarvedTestsRan, DifferentialRan, RunCarvedTests, RunDifferential
from flows.discovery import discovery
from tasks.discovery.suite import DiscoveryResult
from tasks.localization.steps import RecordedTests
from tasks.run.parameters import DiscoveryParameters
from tasks.validation.checks import CARVED_CHECK_PATH, ValidationContext, recorded_calls
from tasks.validation.target_checks import (
    TargetPlan,
    checks_ahead,
    plan_target,
    prepare_target,
    run_target_checks,
)
from tests.flows.test_differential_guard import OVERFIT, shipping_repo

TARGET = "shipping.shipping"
MARK = 99.0


def _context(found: DiscoveryResult, reused: RecordedTests | None) -> ValidationContext:
    return ValidationContext(found=found, nodes={n.fqn: n for n in found.trace.nodes},
                             localization_recorded=reused)


@flow(name="target-checks-recording")
def _recordings(found: DiscoveryResult) -> dict[str, tuple[TestResult, ...]]:
    fresh = recorded_calls(TARGET, _context(found, None))
    assert fresh is not None and len(fresh) >= 3
    # the localization's results, marked (a duration no run gives) to tell them from new ones
    marked = tuple(t.model_copy(update={"duration": MARK}) for t in fresh)
    whole = RecordedTests(functions=frozenset({TARGET, "shipping.other"}), tests=marked[::-1])
    part = RecordedTests(functions=frozenset({TARGET}), tests=marked[:1])
    elsewhere = RecordedTests(functions=frozenset({"shipping.other"}), tests=marked)
    got = {"fresh": fresh}
    for name, reused in (("whole", whole), ("part", part), ("elsewhere", elsewhere)):
        ctx = _context(found, reused)
        got[name] = recorded_calls(TARGET, ctx) or ()
        prepare_target(TARGET, ctx)
        assert ctx.carved[TARGET] and ctx.differential[TARGET] is not None, "the checks were prepared"
    return got


def test_the_localization_s_recording_is_reused_and_only_the_tests_it_lacks_run_again(
        tmp_path: Path, prefect_api_url, monkeypatch):
    repo = shipping_repo(tmp_path, monkeypatch)
    with temporary_settings({PREFECT_LOCAL_STORAGE_PATH: tmp_path / "storage"}):
        found = discovery(DiscoveryParameters(path=str(repo), llm=False, testgen=False))
        got = _recordings(found)
    fresh = got["fresh"]
    ids = [t.test_id for t in fresh]
    assert [t.duration for t in got["whole"]] == [MARK] * len(fresh), "reused whole: no run"
    assert [t.test_id for t in got["whole"]] == ids, "in the suite's order again"
    part = [t.duration for t in got["part"]]
    assert part[0] == MARK and MARK not in part[1:], "reused in part: one kept, the rest recorded"
    assert [t.test_id for t in got["part"]] == ids
    assert [t.calls for t in got["part"]] == [t.calls for t in fresh], "with the same calls"
    assert MARK not in [t.duration for t in got["elsewhere"]], "another function's recording is not used"
    assert [t.calls for t in got["elsewhere"]] == [t.calls for t in fresh]


@flow(name="target-checks-ahead")
def _ahead_and_inline(found: DiscoveryResult) -> dict[str, object]:
    ctx = _context(found, None)
    plan = plan_target(TARGET, ctx)
    assert plan.carved and plan.differential is not None
    # A carved test that does not hold on the original code (a wrong expected value): the run made
    # ahead runs it, the checks must not count it.
    wrong_code = "def test_wrong_on_the_original():\n    assert 1 == 2\n"
    wrong = plan.carved[0].model_copy(update={"name": "test_wrong_on_the_original", "code": wrong_code})
    carved = (*plan.carved, wrong)
    plan = ctx.plans[TARGET] = TargetPlan(carved=carved, differential=plan.differential,
                                          per_test_s=plan.per_test_s,
                                          modules={**plan.modules, CARVED_CHECK_PATH: carved_module(carved)})
    text = (found.prepared.workspace.root / "shipping.py").read_text(encoding="utf-8")
    candidate = PatchCandidate(id="overfit", generator="mutation", target=TARGET, description="overfit",
                               files={"shipping.py": replace_function(text, "shipping", OVERFIT)})
    ahead = checks_ahead(candidate, plan, ctx)  # before the original's run, as with a suite run
    steps = [RunCarvedTests(target=TARGET), RunDifferential(target=TARGET)]
    return {"ahead_ids": [t.test_id for t in ahead], "kept": ctx.carved_names.get(TARGET),
            "from_ahead": run_target_checks(candidate, steps, ctx, ahead),
            "inline": run_target_checks(candidate, steps, ctx), "names": ctx.carved_names[TARGET]}


def test_a_candidate_s_check_run_made_ahead_is_judged_as_its_own_run(tmp_path: Path, prefect_api_url,
                                                                    monkeypatch):
    repo = shipping_repo(tmp_path, monkeypatch)
    with temporary_settings({PREFECT_LOCAL_STORAGE_PATH: tmp_path / "storage"}):
        found = discovery(DiscoveryParameters(path=str(repo), llm=False, testgen=False))
        got = _ahead_and_inline(found)
    assert got["kept"] is None, "the run ahead needs nothing of the original's"
    assert CARVED_CHECK_PATH + "::test_wrong_on_the_original" in got["ahead_ids"]
    assert "test_wrong_on_the_original" not in got["names"] and got["names"]
    from_ahead, inline = got["from_ahead"], got["inline"]
    assert isinstance(from_ahead, list) and isinstance(inline, list)
    carved_ahead, differential_ahead = from_ahead
    carved_inline, differential_inline = inline
    assert isinstance(carved_ahead, CarvedTestsRan) and isinstance(carved_inline, CarvedTestsRan)
    assert carved_ahead.tests is not None and carved_inline.tests is not None
    outcomes = sorted((t.test_id, t.outcome) for t in carved_ahead.tests)
    assert outcomes == sorted((t.test_id, t.outcome) for t in carved_inline.tests)
    assert all(not t.test_id.endswith("test_wrong_on_the_original") for t in carved_ahead.tests)
    assert isinstance(differential_ahead, DifferentialRan) and differential_ahead.verdict is not None
    assert differential_ahead == differential_inline, "the same verdict: the overfit patch changes behaviour"
    assert differential_ahead.verdict.far_changes

"""The test-generation agent inside Discovery (``--testgen``) and the pinning rule: its tests split
ambiguity groups, but never make Validation (or the mutant screen) reject a correct fix."""

from __future__ import annotations

from pathlib import Path

from prefect import flow
from prefect.settings import PREFECT_LOCAL_STORAGE_PATH, temporary_settings

from equisa_core.common.models import TestOutcome
from equisa_core.common.source_edit import replace_function
from equisa_core.common.trace_merge import combine
from equisa_core.repair.report import RepairReport
from equisa_core.testgen.modules import keep_tests
from equisa_core.validation.candidates import PatchCandidate, PatchEvaluation, PatchStatus
from equisa_core.validation.generated_tests import TESTGEN_MODULE_PREFIX, is_testgen_test
from flows.discovery import discovery
from flows.testgen import generate_tests
from flows.validation import validate_candidate
from tasks.discovery.suite import DiscoveryResult
from tasks.run.parameters import DiscoveryParameters, TestgenParameters
from tasks.sandbox.run_tests import run_tests
from tasks.testgen.publish import GeneratedTests
from tasks.validation.checks import ValidationContext, test_sources
from tests.flows.test_localize import BUGGY, INVOICING
from tests.flows.test_repair import CORRECT, repair
from tests.integration.test_probe import tree_digest

STREAMED = Path(__file__).resolve().parents[1] / "fixtures" / "streamed"
GROUP = ("readings.stats.spread", "readings.stats.summary")


def test_testgen_splits_a_group_carving_cannot_and_its_tests_never_veto_the_fix(tmp_path, cli_env):
    """The suite passes iterators, which carving cannot rebuild: without testgen the group stays
    whole. Testgen's scratch drivers call ``spread`` alone with literal lists; one test per way of
    splitting is kept. The repair still finds and accepts the fix."""
    out = tmp_path / "repair.json"
    before = tree_digest(STREAMED)
    # No mutant screening: its fix, confirmed on the whole suite, would settle the run before Discovery.
    code, err = repair(cli_env, str(STREAMED), "--no-llm", "--testgen", "--screen-top", "0",
                       "--json", str(out))
    assert code == 0, err
    assert tree_digest(STREAMED) == before, "the user's tree must never be written"
    report = RepairReport.model_validate_json(out.read_text())
    found = report.localization.discovery
    assert found.testgen and found.group_sizes_before == (2,) and found.group_sizes_after == ()
    [first] = found.rounds
    assert first.groups == (GROUP,)
    assert first.proposed == first.testgen_proposed >= 3, "carving proposed nothing: only testgen split it"
    assert first.testgen_kept == first.kept == 1
    reasons = "\n".join(first.dropped)
    assert "test_scratch_0_summary_0: executes the whole group, so it does not split it" in reasons
    assert "splits the group as a kept test already does" in reasons
    assert found.files == (f"{TESTGEN_MODULE_PREFIX}group_0_readings_stats.py",)
    assert all(is_testgen_test(t) and "spread" in t for t in found.tests)
    assert "(1 of" in err and "testgen tests)" in err, "the CLI reports testgen's share"
    assert (report.status, report.target) == ("fixed", "readings.stats.spread")
    assert "+    return values[-1] - values[0]" in report.diff
    assert report.validation["no regressions"] == "passed"
    assert report.validation["testgen tests"].endswith("not counted either way)")


@flow(name="boundary-tests-of-applies")
def _boundary_tests_of_applies(found: DiscoveryResult, out: str) -> GeneratedTests:
    """Testgen's deterministic tests of ``applies`` on the buggy example, as Discovery asks for them."""
    return generate_tests(found.prepared, TestgenParameters(
        path=str(INVOICING), target="invoicing/discounts.py", focus=[BUGGY], llm=False, max_attempts=1,
        mutants_per_measurement=0, out=out, module_stem="pinned"))


@flow(name="pinning-check")
def _pinned_validation(found: DiscoveryResult, pinned: str, path: str) -> PatchEvaluation:
    """Validate the correct fix of ``applies`` with ``pinned`` (testgen's tests of the buggy code)
    traced into the suite at ``path``, as Discovery adds tests it keeps."""
    prepared = found.prepared
    request = prepared.base.model_copy(update={
        "overlay": {**found.overlay, path: pinned}, "tests": (path,), "only": None, "trace": True})
    checked = run_tests(request, backend="local", interpreter_version=prepared.interpreter_version)
    passed = [t for t in checked.tests if t.outcome is TestOutcome.PASSED]
    assert len(passed) == len(checked.tests) >= 2, "testgen keeps only tests that pass on the code"
    trace = combine([found.trace, checked.model_copy(update={"tests": tuple(passed), "crashed": False})],
                    [*found.trace.collected, *(t.test_id for t in passed)])
    amplified = found.model_copy(update={"trace": trace, "overlay": {**found.overlay, path: pinned}})
    nodes = {n.fqn: n for n in trace.nodes}
    ctx = ValidationContext(found=amplified, nodes=nodes,
                            failing_sources=test_sources(amplified, sorted(trace.failed_tests())))
    text = (prepared.workspace.root / "invoicing" / "discounts.py").read_text(encoding="utf-8")
    fix = PatchCandidate(id="correct", generator="llm-fix", target=BUGGY, description="orders at the minimum",
                         files={"invoicing/discounts.py": replace_function(text, "ThresholdDiscount.applies",
                                                                            CORRECT)})
    return validate_candidate(fix, ctx)


def test_testgen_tests_that_pin_the_bug_do_not_reject_the_correct_fix_of_the_invoicing_example(
    tmp_path, prefect_api_url, monkeypatch
):
    for name, folder in (("EQUISA_WORKSPACES", "workspaces"), ("EQUISA_DB", "history.duckdb"),
                         ("EQUISA_ARTIFACTS", "artifacts"), ("EQUISA_SPOOL", "spool")):
        monkeypatch.setenv(name, str(tmp_path / folder))
    with temporary_settings({PREFECT_LOCAL_STORAGE_PATH: tmp_path / "storage"}):
        found = discovery(DiscoveryParameters(path=str(INVOICING), llm=False, testgen=True, discovery_top=0))
        # Every group (discovery_top=0). Until the input search drew callables and dataclass fields
        # (issue 49, 03e1be8) testgen's tests split nothing carving had not split already (after:
        # (3, 2, 2), none kept); now one of them splits the group of three, and it is kept.
        report = found.report
        assert report.testgen and report.group_sizes_before == (3, 3, 2, 2, 2, 2, 2)
        assert report.group_sizes_after == (2, 2, 2)
        assert sum(r.testgen_proposed for r in report.rounds) > 0
        kept = sum(r.testgen_kept for r in report.rounds)
        assert kept >= 1 and len([t for t in report.tests if is_testgen_test(t)]) == kept
        # So put testgen's boundary tests of `applies` into the suite by hand: they observe the
        # buggy `False` at the minimum (a regression oracle of the bug).
        made = _boundary_tests_of_applies(found, str(tmp_path / "testgen"))
        assert made.path == f"{TESTGEN_MODULE_PREFIX}pinned.py" and made.source
        boundary = [n for n in made.report.attempts[0].tests if n.startswith("test_boundary_")]
        pinned = keep_tests(made.source, boundary)
        assert "ThresholdDiscount.applies" in pinned and "assert result is False" in pinned
        accepted = _pinned_validation(found, pinned, made.path)
        # The same tests under another name would count: the correct fix is then a "regression".
        elsewhere = _pinned_validation(found, pinned, "tests/equisa_generated/test_observed_elsewhere.py")
    assert accepted.status is PatchStatus.SOUND, accepted.detail
    assert accepted.checks["no regressions"] == "passed"
    note = accepted.checks["testgen tests"]
    assert note.endswith("testgen tests changed behaviour (not counted: they assert the buggy program's "
                         "behaviour)"), note
    changed = int(note.split()[0])
    assert changed >= 1
    assert elsewhere.status is PatchStatus.REGRESSIONS
    assert len(elsewhere.regressions) == changed

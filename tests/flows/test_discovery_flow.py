"""The Discovery loop end to end through ``equisa localize --max-inspections 0``: carved tests in
deterministic mode, the model's tests in LLM mode, checked in sandboxes, kept in the workspace copy."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from equisa_core.errors import EXIT_OK
from equisa_core.localization.steps import LocalizationReport
from tasks.sandbox.contract import RunRequest
from tests.flows.test_localize import localize
from tests.integration.test_probe import tree_digest
from tests.scripted_llm_server import Reply

AMBIGUOUS = Path(__file__).resolve().parents[1] / "fixtures" / "ambiguous"
GROUP = ("grading.scores.clamp", "grading.scores.grade", "grading.scores.letter", "grading.scores.percent")


def run_discovery(env: dict[str, str], out: Path, *args: str) -> LocalizationReport:
    before = tree_digest(AMBIGUOUS)
    code, err = localize(env, str(AMBIGUOUS), "--max-inspections", "0", "--json", str(out), *args)
    assert code == EXIT_OK, err  # no inspection: the ranking is the prior's, not converged
    assert tree_digest(AMBIGUOUS) == before, "the user's tree must never be written"
    assert "Discovery:" in err
    return LocalizationReport.model_validate_json(out.read_text())


def test_carved_tests_split_the_group_and_callers_of_the_whole_group_are_dropped(tmp_path, cli_env):
    report = run_discovery(cli_env, tmp_path / "loc.json", "--no-llm")
    found = report.discovery
    assert found is not None and found.enabled
    assert found.group_sizes_before == (4,) and found.group_sizes_after == ()
    [first] = found.rounds
    assert first.groups == (GROUP,)
    # 3 calls carved per member; grade's tests run all four members, so they split nothing.
    assert (first.proposed, first.kept) == (12, 9)
    dropped = sorted(d.split("::")[1].split(":")[0] for d in first.dropped)
    assert len(dropped) == 3, dropped
    assert all(name.startswith("test_carved_grade_returns_") for name in dropped), dropped
    assert all("does not split it" in d for d in first.dropped)
    assert found.files == ("tests/equisa_generated/test_carved_group_0.py",)
    assert found.generated == report.tests.generated == 9
    assert (report.tests.passed, report.tests.failed) == (4, 1), "the suite's own tests, counted apart"
    assert report.ambiguity_groups == ()
    assert report.inspections == () and report.stopped_because == "no inspections asked for"
    assert not (AMBIGUOUS / "tests" / "equisa_generated").exists()


def test_discovery_can_be_turned_off(tmp_path, cli_env):
    report = run_discovery(cli_env, tmp_path / "loc.json", "--no-llm", "--no-discovery")
    assert report.discovery is not None and not report.discovery.enabled
    assert report.tests.generated == 0 and report.ambiguity_groups == (GROUP,)


LLM_TESTS = '''```python
from grading.scores import clamp, grade, letter


def test_ninety_percent_is_an_a():
    assert letter(90) == "A"


def test_clamp_keeps_values_inside():
    assert clamp(5, 0, 10) == 5


def test_broken():
    assert undefined_helper(3) == 1


def test_everything_at_once():
    assert grade(100, 100) == "A"
```'''


def test_llm_tests_join_the_suite_failing_assertions_included(tmp_path, cli_env, scripted_llm):
    asked = []

    def tester(request) -> Reply:
        asked.append(request.last_user_message)
        return Reply(LLM_TESTS)

    scripted_llm.respond_with(tester)
    env = {**cli_env, "OPENAI_BASE_URL": scripted_llm.base_url, "OPENAI_API_KEY": "sk-test"}
    report = run_discovery(env, tmp_path / "loc.json", "--llm")
    assert report.mode == "llm" and len(asked) == 1
    assert "def letter(pct):" in asked[0] and "def test_exactly_ninety_percent_is_an_a" in asked[0]
    found = report.discovery
    [first] = found.rounds
    kept = {t.split("::")[1] for t in found.tests if "test_llm_group_0" in t}
    assert kept == {"test_ninety_percent_is_an_a", "test_clamp_keeps_values_inside"}
    reasons = "\n".join(first.dropped)
    assert "test_broken: broken test (failed: NameError)" in reasons
    assert "test_everything_at_once: executes the whole group" in reasons
    # The model's failing test runs letter alone: letter is now the most suspicious function.
    assert report.ranking[0].fqn == "grading.scores.letter"


def test_proposals_that_do_not_import_are_dropped_and_discovery_goes_on(monkeypatch):
    """When not one proposed module imports (the run collects nothing), ``check_tests`` reports the
    collection error and the Discovery machine keeps nothing and says why, instead of ending the
    localization with the collection error (exit 6)."""
    import tasks.discovery.proposals as proposals_module
    from equisa_core.discovery import machine
    from equisa_core.discovery.rules import DiscoveryBudget
    from equisa_core.errors import CollectionError

    carved = "tests/equisa_generated/test_carved_group_0.py"
    message = f"the test suite does not import: {carved}: E   ModuleNotFoundError: No module named 'contrib'"

    def no_module_imports(prepared, params, request):
        raise CollectionError(message)

    monkeypatch.setattr(proposals_module, "_run", no_module_imports)
    base = RunRequest(workspace=Path("."), workspace_digest="d", interpreter="python")
    proposals = {carved: machine.Proposal(group=("a", "b"), source="def test_x():\n    pass\n")}
    prepared = SimpleNamespace(base=base)
    step = machine.CheckTests(proposals=proposals, overlay={})
    observation, checked = proposals_module.check_tests(prepared, None, step)
    assert checked is None and observation.collection_error == message
    state = machine.DiscoveryState(budget=DiscoveryBudget(), scored=True, targets=(("a", "b"),),
                                   proposals=proposals)
    after = machine.record(state, observation)
    assert (after.overlay, after.kept) == ({}, ())
    assert after.rounds[-1].dropped == (f"{carved}: does not collect ({message})",)

"""``equisa localize`` end to end: deterministic mode, LLM mode against a scripted server, no bug."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import jsonschema
import pytest
from prefect import flow
from pydantic import TypeAdapter

from equisa_core.common.loop import replay
from equisa_core.errors import (
    EXIT_NOT_CONVERGED,
    EXIT_OK,
    LLMRequestError,
    NoProjectCodeError,
    NothingToLocalizeError,
)
from equisa_core.localization.bayes import CLAMP_LOW
from equisa_core.localization.machine import LocalizationObservation, LocalizationState, record
from equisa_core.localization.machine import report as report_of
from equisa_core.localization.screening_cost import FITTED_SCREEN_COST_RATIO, SCREEN_FLOOR_S
from equisa_core.localization.steps import LocalizationReport
from equisa_core.report.schema import report_schema
from flows.localize import LocalizationRun, drive_localization
from tasks.localization.steps import even_shares
from tasks.operations.task_runners import FanOutTaskRunner
from tasks.run.parameters import LocalizeParameters
from tasks.storage.history import query
from tests.conftest import FIXTURES, small_repo, venv_with_pytest
from tests.integration.test_probe import tree_digest
from tests.scripted_llm_server import Reply

ROOT = Path(__file__).resolve().parents[2]
INVOICING = ROOT / "examples" / "invoicing"
BUGGY = "invoicing.discounts.ThresholdDiscount.applies"
EQUISA = shutil.which("equisa") or str(Path(sys.executable).with_name("equisa"))


#: The loop's mechanics are tested with the hand-set likelihoods and every inspection run: on the
#: small fixtures here a one-edit fix confirmed by the whole suite settles the run, as the seed
#: table says. The default (fitted) table and the stopping rules have their own tests below.
SEED = ("--likelihoods", "seed", "--min-expected-shift", "0", "--stop-margin", "off",
        "--screen-cost-ratio", "off")
#: Every check after the trace run, whatever it costs and however decisive the answer before it.
EVERY_CHECK = ("--stop-margin", "off", "--screen-cost-ratio", "off")


def localize(env: dict[str, str], *args: str) -> tuple[int, str]:
    done = subprocess.run([EQUISA, "localize", *args], capture_output=True, text=True, env=env, timeout=900)
    return done.returncode, done.stderr


def test_mutant_screening_finds_the_fix_before_any_inspection(tmp_path, cli_env):
    """The top candidates' mutants, tried together first, find the fix of the bug; the whole suite
    then runs with it, and that confirmation converges without Discovery."""
    out = tmp_path / "screened.json"
    code, err = localize(cli_env, str(INVOICING), *SEED, "--no-llm", "--json", str(out))
    assert code == 0, err
    report = LocalizationReport.model_validate_json(out.read_text())
    assert report.converged and report.ranking[0].fqn == BUGGY
    *screened, confirmed = report.inspections
    assert {i.strategy for i in screened} == {"mutant-screening"} and all(i.signals is None for i in screened)
    # What every screened function's mutants showed is counted: the fix of the bug, no fix elsewhere.
    evidence = {i.target: i.fix_evidence for i in screened}
    assert evidence[BUGGY] == "FIX_FOUND" and len(evidence) == len(screened) > 1
    # The other functions' mutants fix nothing; some change how the failing tests fail (graded evidence).
    assert evidence[BUGGY] == "FIX_FOUND" and set(evidence.values()) - {"FIX_FOUND"} <= {"NO_FIX_FOUND",
                                                                                       "FAILURE_CHANGED"}
    found = next(i for i in screened if i.target == BUGGY)
    assert found.fix == "line 58: `>` -> `>=`" and found.prior < found.posterior < 0.9
    # No fix lowers a function, or leaves it where it is when it starts below the clamp.
    assert all(i.posterior < i.prior or i.posterior == i.prior < CLAMP_LOW
               for i in screened if i.fix_evidence == "NO_FIX_FOUND")
    assert all(i.posterior > i.prior for i in screened if i.fix_evidence == "FAILURE_CHANGED")
    assert all("none of its" in i.reasoning for i in screened if i.fix_evidence != "FIX_FOUND")
    assert (confirmed.strategy, confirmed.fix_evidence, confirmed.iteration) == (
        "fix-confirmation", "FIX_CONFIRMED", len(screened) + 1)
    # The screening's process ran the fix through the rest of the suite: no run of its own.
    assert "in the mutants' own process" in confirmed.reasoning
    # The confirmed fix settled the run before Discovery: no tests were generated.
    assert report.discovery.stopped_because.startswith("not needed") and report.tests.generated == 0


def test_a_decisive_answer_after_the_screening_ends_the_run(tmp_path, cli_env):
    """With the screening run whatever it costs, and otherwise the defaults (fitted likelihoods,
    calibrated margin), the screening's fix, confirmed by the whole suite, makes the bug lead by far
    more than the margin: the run ends there, without Discovery or an inspection. With the margin
    off, the loop goes on until its calibrated stopping rule ends it."""
    out, off = tmp_path / "fitted.json", tmp_path / "off.json"
    code, err = localize(cli_env, str(INVOICING), "--no-llm", "--screen-cost-ratio", "off", "--json",
                         str(out))
    assert code == EXIT_OK, err  # decisive, below 0.9
    report = LocalizationReport.model_validate_json(out.read_text())
    assert report.ranking[0].fqn == BUGGY and not report.converged and report.decisive_after_screening
    assert report.stopped_because.startswith("the answer after the screening is decisive")
    assert {i.strategy for i in report.inspections} == {"mutant-screening", "fix-confirmation"}
    assert report.discovery.stopped_because == "not needed: the answer after the screening was decisive"
    # The prior's answer comes first, while the screening checks it (here the prior put the bug third).
    first = next(line for line in err.splitlines() if line.startswith("First answer"))
    assert BUGGY in first and err.index("First answer") < err.index("Ranking")
    assert report.first_answer[0].fqn != BUGGY
    code, err = localize(cli_env, str(INVOICING), "--no-llm", "--stop-margin", "off", "--screen-cost-ratio",
                         "off", "--json", str(off))
    assert code == EXIT_OK, err
    without = LocalizationReport.model_validate_json(off.read_text())
    assert not without.decisive_after_screening and without.ranking[0].fqn == BUGGY
    # The loop went on past the screening, to its stopping rule (the calls recorded and compared).
    assert without.stopped_because.startswith("no inspection left is expected to move a confidence")


def test_by_default_the_screening_runs_within_its_share_of_the_trace(tmp_path, cli_env):
    """By default (the fitted ratio) the example's screening of 20 functions (about 300 mutants,
    more than a quarter of the trace) runs for that quarter (at least the floor), the leaders
    first in each shard; the functions the budget left no time for are named in the report, and their evidence
    is not counted. (Whether the bug then comes first depends on the machine's speed: measured in
    bench/first_command.py and bench/oneshot_startup.py, not here.)"""
    out = tmp_path / "budget.json"
    code, err = localize(cli_env, str(INVOICING), "--no-llm", "--json", str(out))
    assert code == EXIT_OK, err
    report = LocalizationReport.model_validate_json(out.read_text())
    cost = report.screening_cost
    ratio = FITTED_SCREEN_COST_RATIO
    assert cost is not None and cost.ratio == ratio and len(cost.functions) > 3
    assert cost.budget_s == round(max(ratio * cost.traced_s, SCREEN_FLOOR_S), 3)
    screened = {r.target for r in report.inspections if r.strategy == "mutant-screening"}
    assert screened and not screened & set(cost.left_out)
    # The leaders first: each shard (one per core) starts with the next most likely function, so
    # one of the first of them is screened (which one finishes first depends on the machine's load).
    assert screened & set(cost.functions[: os.cpu_count() or 1]), (screened, cost.functions)
    assert f"now checking it (the screening's budget: {cost.budget_s:.1f}s)" in err


def test_a_screening_whose_budget_reaches_the_bug_puts_it_first(tmp_path, cli_env):
    """With a budget of the trace's own seconds the screening reaches the bug's function, third in
    the trace's answer, whose mutant fixes the failing tests: the bug comes first."""
    out = tmp_path / "ratio1.json"
    code, err = localize(cli_env, str(INVOICING), "--no-llm", "--screen-cost-ratio", "1", "--json", str(out))
    assert code == EXIT_OK, err
    report = LocalizationReport.model_validate_json(out.read_text())
    assert BUGGY in [n.fqn for n in report.first_answer] and report.first_answer[0].fqn != BUGGY
    assert report.ranking[0].fqn == BUGGY, report.stopped_because


#: Each test of the slowed copy of the example waits this long: its 48 tests then take over two
#: seconds, and the screening's rounds more than the floor's budget, on any machine.
SLOW_TEST_S = 0.05


def test_a_screening_cut_short_by_its_budget_leaves_functions_out(tmp_path, cli_env):
    """With the least budget (the floor, half a second) the rounds are cut short: the functions whose
    mutants did not all run, and none of which fixed a test, are left out, as the report and the
    terminal say, and none of them counts as screened. The example's tests are slowed
    (``SLOW_TEST_S`` each): on a fast machine its whole screening fits in the floor."""
    slow = tmp_path / "invoicing"
    shutil.copytree(INVOICING, slow, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    (slow / "tests" / "conftest.py").write_text(
        "import time\n\nimport pytest\n\n\n@pytest.fixture(autouse=True)\ndef _slow():\n"
        f"    time.sleep({SLOW_TEST_S})\n", encoding="utf-8")
    out = tmp_path / "floor.json"
    _, err = localize(cli_env, str(slow), "--no-llm", "--screen-cost-ratio", "0.0001", "--json", str(out))
    report = LocalizationReport.model_validate_json(out.read_text())
    cost = report.screening_cost
    assert cost is not None and cost.budget_s == SCREEN_FLOOR_S and cost.left_out
    assert set(cost.left_out) <= set(cost.functions)
    screened = {r.target for r in report.inspections if r.strategy == "mutant-screening"}
    assert not screened & set(cost.left_out)
    assert cost.note() is not None and "left out: " in cost.note()
    assert "The mutant screening's budget of 0.5s" in err and f"left out: {cost.left_out[0]}" in err, err


def test_the_fitted_likelihoods_and_the_stopping_rule_end_the_run_once_nothing_would_teach_more(
        tmp_path, cli_env):
    """With every check run (no margin), the fitted likelihoods and the calibrated stopping rule
    stop the loop without the inspections that would only show a collateral failure; with the rule
    off, those inspections run."""
    out, off = tmp_path / "fitted.json", tmp_path / "off.json"
    code, err = localize(cli_env, str(INVOICING), "--no-llm", *EVERY_CHECK, "--json", str(out))
    assert code == EXIT_OK, err  # the rule stops the run before the bug reaches 0.9
    report = LocalizationReport.model_validate_json(out.read_text())
    assert report.ranking[0].fqn == BUGGY and not report.converged
    assert report.stopped_because.startswith("no inspection left is expected to move a confidence")
    deterministic = [i for i in report.inspections if i.strategy == "deterministic"]
    code, err = localize(cli_env, str(INVOICING), "--no-llm", *EVERY_CHECK,
                         "--min-expected-shift", "0", "--json", str(off))
    assert code == EXIT_OK, err  # more inspections, still below 0.9 when they stall
    without_rule = LocalizationReport.model_validate_json(off.read_text())
    assert not without_rule.converged
    assert len([i for i in without_rule.inspections if i.strategy == "deterministic"]) > len(deterministic)
    assert not without_rule.stopped_because.startswith("no inspection left")


@flow(task_runner=FanOutTaskRunner())
def _localize_in_process(params: LocalizeParameters) -> LocalizationRun:
    return drive_localization(params)


def test_a_real_run_s_observations_replay_to_its_report(tmp_path, prefect_api_url, monkeypatch):
    """The observations the driver fed the state machine, recorded again from its first state (also
    after a trip through JSON), give the run's report: every decision was the machine's."""
    monkeypatch.setenv("EQUISA_WORKSPACES", str(tmp_path / "workspaces"))
    # Without the stopping rule the loop inspects too (in batches), after the screening's fix.
    run = _localize_in_process(LocalizeParameters(path=str(INVOICING), llm=False, min_expected_shift=0.0,
                                                  stop_margin="off", screen_cost_ratio="off"))
    kinds = [observation.kind for observation in run.observations]
    assert {"traced", "screened", "inspected", "values-compared"} <= set(kinds)
    assert any(i.strategy == "deterministic" and i.batch > 1 for i in run.report.inspections)
    assert report_of(replay(run.initial, run.observations, record)) == run.report
    adapter = TypeAdapter(list[LocalizationObservation])
    saved = adapter.validate_json(adapter.dump_json(list(run.observations)))
    initial = LocalizationState.model_validate_json(run.initial.model_dump_json())
    assert report_of(replay(initial, saved, record)) == run.report


def test_screening_shares_are_about_even_in_estimated_cost():
    costs = {"a": 5.0, "b": 4.0, "c": 3.0, "d": 3.0, "e": 1.0}
    share = even_shares(costs, 2)
    loads = [sum(c for k, c in costs.items() if share[k] == s) for s in (0, 1)]
    assert sorted(loads) == [8.0, 8.0] and set(share) == set(costs)
    assert even_shares(costs, 1) == dict.fromkeys(costs, 0) and even_shares({}, 2) == {}


def test_a_timeboxed_screening_shares_its_functions_in_order_so_every_share_starts_with_a_leader():
    """Most likely first: the leader (the costliest here) alone in one share, the next ones in the
    other, where the longest-processing-time rule would put the third behind the costliest one."""
    costs = {"lead": 36.0, "second": 10.0, "third": 5.0, "fourth": 40.0}
    assert even_shares(costs, 2, in_order=True) == {"lead": 0, "second": 1, "third": 1, "fourth": 1}
    assert even_shares(costs, 2)["third"] == 0


def test_screening_evidence_that_settles_nothing_is_counted_again_after_discovery(tmp_path, cli_env):
    """Two boundaries are wrong, so no single mutant fixes both failing tests: screening finds two
    partial fixes, Discovery runs, and the partial fixes are counted again on the amplified suite's
    priors, numbered with the loop's inspections."""
    repo = small_repo(tmp_path / "grades")
    (repo / "grades.py").write_text(
        "def letter(score):\n    if score > 90:\n        return 'A'\n    if score > 80:\n        return 'B'\n"
        "    return 'C'\n\n\ndef card(scores):\n    return ''.join(letter(s) for s in scores)\n")
    (repo / "tests" / "test_grades.py").write_text(
        "from grades import card, letter\n\n\n"
        "def test_a_at_the_boundary():\n    assert letter(90) == 'A'\n\n\n"
        "def test_b_at_the_boundary():\n    assert letter(80) == 'B'\n\n\n"
        "def test_high():\n    assert letter(95) == 'A'\n\n\n"
        "def test_middle():\n    assert letter(85) == 'B'\n\n\n"
        "def test_card():\n    assert card([50, 99]) == 'CA'\n")
    out = tmp_path / "loc.json"
    code, err = localize(cli_env, str(repo), *SEED, "--no-llm", "--json", str(out))
    assert code == 0, err
    report = LocalizationReport.model_validate_json(out.read_text())
    screening = [i for i in report.inspections if i.strategy == "mutant-screening"]
    partial = [i for i in screening if i.fix_evidence == "PARTIAL_FIX_FOUND"]
    assert partial and all(i.target == "grades.letter" for i in partial)
    assert all(i.fix_evidence == "NO_FIX_FOUND" for i in screening if i.target != "grades.letter")
    assert not report.discovery.stopped_because.startswith("not needed")
    assert [i.iteration for i in report.inspections] == list(range(1, len(report.inspections) + 1))
    assert report.ranking[0].fqn == "grades.letter"
    # letter and card run in different tests: no group to split, so Discovery stopped before it
    # proposed a test, and the localize flow run is the only flow run
    stopped = "no ambiguity group of two or more left near the top of the prior"
    assert report.discovery.stopped_because == stopped
    runs = httpx.post(f"{cli_env['PREFECT_API_URL']}/flow_runs/filter", timeout=30,
                      json={"flow_runs": {"name": {"like_": str(repo)}}}).json()
    assert {r["name"] for r in runs} == {f"localize {repo}"}


def test_a_confirmed_fix_that_leads_without_converging_goes_on_without_discovery(tmp_path, cli_env):
    """Two hundred helpers share the failing test's spectrum with the buggy ``total``; only ``total`` is
    screened, so its confirmed fix leads without reaching 0.9: the loop goes on from the suite as
    it is, since tests that split the helpers' group could only tell what the fix already told."""
    repo = small_repo(tmp_path / "chain")
    helpers = [f"h{k}" for k in range(200)]
    (repo / "chain.py").write_text(
        "".join(f"def {h}(x):\n    return x\n\n\n" for h in helpers)
        + f"HELPERS = [{', '.join(helpers)}]\n\n\n"
        + "def total(x):\n    for helper in HELPERS:\n        x = helper(x)\n    return x - 1\n")
    (repo / "tests" / "test_chain.py").write_text(
        "import chain\n\n\ndef test_total():\n    assert chain.total(1) == 2\n\n\n"
        "def test_helpers():\n    assert all(h(3) == 3 for h in chain.HELPERS)\n")
    out = tmp_path / "loc.json"
    code, err = localize(cli_env, str(repo), *SEED, "--no-llm", "--screen-top", "1", "--json", str(out))
    assert code == EXIT_OK, err  # the helpers keep total below 0.9 to the end
    report = LocalizationReport.model_validate_json(out.read_text())
    assert not report.converged
    screened, confirmed, *inspected = report.inspections
    assert (screened.strategy, screened.fix_evidence) == ("mutant-screening", "FIX_FOUND")
    assert (confirmed.strategy, confirmed.fix_evidence) == ("fix-confirmation", "FIX_CONFIRMED")
    assert confirmed.target == "chain.total" and confirmed.posterior < 0.9
    assert report.discovery.stopped_because.startswith("not needed: the fix of chain.total")
    assert report.tests.generated == 0 and inspected and report.ranking[0].fqn == "chain.total"


def test_inspections_run_together_see_what_they_would_see_one_by_one(tmp_path, cli_env):
    """Deterministic inspections run ahead in one process (each patch swapped into the live
    function) give the loop the same observations as one process per inspection: the invariant
    ``net`` breaks on the large amount fails inside it (its traceback, numbered from the function's
    first line, still points into it), the others fail only through it."""
    repo = FIXTURES / "fees"
    reports = {}
    for batch in ("1", "5"):
        out = tmp_path / f"batch{batch}.json"
        code, err = localize(cli_env, str(repo), *SEED, "--no-llm", "--screen-top", "0", "--no-discovery",
                             "--inspection-batch", batch, "--json", str(out))
        assert code == 0, err
        reports[batch] = LocalizationReport.model_validate_json(out.read_text())
    alone, together = reports["1"], reports["5"]

    def seen(report: LocalizationReport) -> list[tuple]:
        return [(i.target, i.strategy, i.outcome, i.fix_evidence, i.reflection, i.invariants,
                 sorted(i.tests_run), round(i.posterior, 9)) for i in report.inspections]

    assert seen(together) == seen(alone)
    assert [(n.fqn, n.confidence) for n in together.ranking] == [(n.fqn, n.confidence) for n in alone.ranking]
    assert {i.batch for i in alone.inspections} == {1}
    assert min(i.batch for i in together.inspections if i.strategy == "deterministic") > 1
    outcomes = {i.target: i.outcome for i in together.inspections}
    assert outcomes["fees.net"] == "TARGET_ASSERTION_FAILED" and together.ranking[0].fqn == "fees.net"


def test_a_failure_that_is_flaky_is_no_fix_evidence(tmp_path, cli_env):
    """The failing tests' rerun apart runs alongside the mutant screening; the screening is judged
    only once the flaky failure (it fails only after another test) is known: it is left out, and
    the real bug's fix settles the run."""
    repo = small_repo(tmp_path / "counter")
    (repo / "counter.py").write_text(
        "seen = []\n\n\ndef remember(x):\n    seen.append(x)\n    return len(seen)\n\n\n"
        "def double(x):\n    return x * 3\n")
    (repo / "tests" / "test_counter.py").write_text(
        "from counter import double, remember\n\n\n"
        "def test_a_leaves_state():\n    assert remember(1) == 1\n\n\n"
        "def test_b_needs_a_fresh_start():\n    assert remember(2) == 1\n\n\n"
        "def test_double():\n    assert double(2) == 4\n\n\n"
        "def test_double_zero():\n    assert double(0) == 0\n")
    out = tmp_path / "loc.json"
    code, err = localize(cli_env, str(repo), *SEED, "--no-llm", "--shards", "1", "--json", str(out))
    assert code == 0, err
    report = LocalizationReport.model_validate_json(out.read_text())
    assert (report.tests.flaky, report.tests.failed) == (1, 1)
    assert report.converged and report.ranking[0].fqn == "counter.double"
    assert report.discovery.stopped_because.startswith("not needed")
    remembered = [i for i in report.inspections if i.target == "counter.remember"]
    assert all(i.fix_evidence not in ("FIX_FOUND", "PARTIAL_FIX_FOUND") for i in remembered)


def test_deterministic_mode_converges_through_a_fix_found_and_confirmed(tmp_path, cli_env):
    """Without screening, inspections run one function at a time, each with its mutants."""
    out = tmp_path / "loc.json"
    before = tree_digest(INVOICING)
    code, err = localize(cli_env, str(INVOICING), *SEED, "--no-llm", "--screen-top", "0", "--json", str(out))
    assert code == 0, err
    assert tree_digest(INVOICING) == before
    report = LocalizationReport.model_validate_json(out.read_text())
    assert report.mode == "deterministic" and "deterministic mode" in err
    assert (report.tests.failed, report.tests.passed, report.tests.flaky) == (3, 45, 0)
    assert report.tests.generated > 0 and report.discovery.group_sizes_before[0] == 3
    assert report.converged and report.ranking[0].fqn == BUGGY and report.ranking[0].confidence >= 0.9
    confidences = [node.confidence for node in report.ranking]
    assert confidences == sorted(confidences, reverse=True)
    assert abs(sum(confidences) - 1.0) < 1e-6
    assert all(n.file and not n.file.startswith("/") for n in report.ranking)
    for inspection in report.inspections:
        assert inspection.tests_run and 0.01 <= inspection.posterior <= 0.99
        assert inspection.signals.is_covered or inspection.outcome is None  # a confirmation is untraced
    found, confirmed = report.inspections[-2:]
    assert (found.target, found.fix_evidence, found.fix) == (BUGGY, "FIX_FOUND", "line 58: `>` -> `>=`")
    assert "subtotal.amount >= self.minimum.amount" in found.fix_source
    assert (confirmed.target, confirmed.fix_evidence, confirmed.outcome) == (BUGGY, "FIX_CONFIRMED", None)
    innocents = [i for i in report.inspections if i.target != BUGGY]
    assert innocents and all(i.fix_evidence in ("NO_FIX_FOUND", "FAILURE_CHANGED") and i.mutants_tried > 0
                             for i in innocents)


def _with_heartbeat(source: str, fqn: str, extra: str = "") -> str:
    """The function with the heartbeat (and ``extra``) as the first statements of its body."""
    lines = source.rstrip("\n").splitlines()
    header = next(i for i, line in enumerate(lines) if re.match(r"\s*(async\s+)?def ", line))
    while not lines[header].rstrip().endswith(":"):
        header += 1
    indent = re.match(r"\s*", lines[header + 1]).group(0)
    body = [f'{indent}print("--- INSPECTION_START: {fqn} ---")']
    if extra:
        body.append(indent + extra)
    return "\n".join(lines[: header + 1] + body + lines[header + 1:]) + "\n"


DISAMBIGUATING_TEST = """\
from invoicing.discounts import ThresholdDiscount
from invoicing.money import Money


def test_an_order_at_exactly_the_minimum_qualifies():
    rule = ThresholdDiscount.__new__(ThresholdDiscount)
    rule.minimum = Money("100.00")
    assert rule.applies(Money("100.00"))
"""


def scripted_debugger(request) -> Reply:
    """An LLM that writes inspection patches and reflections like a careful debugger would."""
    content = request.last_user_message
    if "Sample tests that execute them" in content:  # Discovery asks for disambiguating tests
        return Reply(DISAMBIGUATING_TEST)
    if content.startswith("You are a strict reviewer of unit tests."):  # testgen's smell critic
        return Reply("NO SMELLS")
    target = re.search(r"Target Function: (\S+)", content).group(1)
    if "Reflection" not in content and "Inspection Patch:" not in content:
        source = content.split("Source Code:\n", 1)[1]
        boundary = 'assert subtotal.amount != self.minimum.amount, "an order at exactly the minimum"'
        return Reply(_with_heartbeat(source, target, boundary if target == BUGGY else ""))
    verdict = "CONFIRMED_BUGGY" if target == BUGGY else "CONFIRMED_NOT_BUGGY"
    return Reply(f"The traceback shows where the failure comes from.\n{verdict}")


def test_llm_mode_converges_on_the_bug(tmp_path, cli_env, scripted_llm):
    scripted_llm.respond_with(scripted_debugger)
    env = {**cli_env, "OPENAI_BASE_URL": scripted_llm.base_url, "OPENAI_API_KEY": "sk-test",
           "EQUISA_MODEL": "scripted-debugger"}
    out = tmp_path / "loc.json"
    # The model has no known price: the run says explicitly that it has no cost cap.
    # Without Discovery the loop has to tell innocents from the bug (with it, the model's failing
    # test of `applies` alone settles it at once: tests/flows/test_discovery.py covers that path).
    code, err = localize(env, str(INVOICING), "--llm", "--no-discovery", "--max-cost", "none",
                         "--json", str(out))
    assert code == 0, err
    report = LocalizationReport.model_validate_json(out.read_text())
    assert report.mode == "llm"
    assert report.converged and report.ranking[0].fqn == BUGGY
    assert report.ranking[0].confidence >= 0.9
    last = report.inspections[-1]
    assert last.target == BUGGY and last.outcome == "TARGET_ASSERTION_FAILED" and last.strategy == "llm"
    innocents = [i for i in report.inspections if i.target != BUGGY]
    assert innocents and all(i.posterior < i.prior for i in innocents)
    assert all(i.reflection == "CONFIRMED_NOT_BUGGY" and i.reflection_by == "llm" for i in innocents)
    assert "scripted-debugger" in scripted_llm.models_seen()


def test_a_suite_without_failures_has_nothing_to_localize(tmp_path, cli_env):
    repo = small_repo(tmp_path / "fine")
    (repo / "mod.py").write_text("def ok():\n    return 1\n")
    test = "from mod import ok\n\n\ndef test_ok():\n    assert ok() == 1\n"
    (repo / "tests" / "test_ok.py").write_text(test)
    out = tmp_path / "report.json"
    code, err = localize(cli_env, str(repo), "--no-llm", "--json", str(out))
    assert code == NothingToLocalizeError.exit_code
    assert "nothing to localize" in err and "Traceback" not in err
    report = json.loads(out.read_text())  # the JSON report is written whatever the outcome
    assert report["status"] == "nothing_to_do" and report["exit_code"] == NothingToLocalizeError.exit_code
    assert report["command"] == "localize" and report["error_type"] == "NothingToLocalizeError"
    jsonschema.validate(report, report_schema("failure"))
    done = subprocess.run([EQUISA, "localize", str(tmp_path / "missing"), "--json", "-"], capture_output=True,
                          text=True, env=cli_env, timeout=300)
    assert done.returncode == 3 and json.loads(done.stdout)["status"] == "error"
    missing = json.loads(done.stdout)
    # Both runs are in the history with their outcome, the first under its flow run's id, the second
    # (stopped before Prefect started) under an id of its own; `equisa report` shows why each stopped.
    rows = {r["run_id"]: r for r in query(Path(cli_env["EQUISA_DB"]), "SELECT * FROM runs")}
    assert {(r["kind"], r["status"], r["exit_code"], r["error_type"]) for r in rows.values()} == {
        ("localize", "nothing_to_do", 20, "NothingToLocalizeError"),
        ("localize", "error", 3, "RepositoryNotFoundError")}
    assert rows[report["run_id"]]["flow_run_id"] == report["run_id"] and missing["run_id"] in rows
    assert "does not exist" in rows[missing["run_id"]]["error"]
    done = subprocess.run([EQUISA, "history", "--json", "-"], capture_output=True, text=True, env=cli_env,
                          timeout=300)
    listed = {r["run_id"]: (r["status"], r["exit_code"]) for r in json.loads(done.stdout)["runs"]}
    assert listed == {report["run_id"]: ("nothing_to_do", 20), missing["run_id"]: ("error", 3)}
    page = tmp_path / "page.html"
    done = subprocess.run([EQUISA, "report", report["run_id"], "-o", str(page)], capture_output=True,
                          text=True, env=cli_env, timeout=300)
    assert done.returncode == 0, done.stderr
    html = page.read_text()
    assert "nothing to do" in html and "NothingToLocalizeError" in html and "Ranking" not in html


def test_llm_mode_finishes_on_the_backup_model_when_30_percent_of_calls_fail(tmp_path, cli_env, scripted_llm):
    """The primary model fails every third request (HTTP 500), then goes down for good: retries and
    the backup model carry the run to the same answer, Discovery's model-written test included."""
    from tests.scripted_llm_server import Fault

    seen = {"primary": 0, "faults": 0}

    def flaky_primary(request):
        if request.model == "primary":
            seen["primary"] += 1
            if seen["primary"] % 3 == 0 or seen["primary"] > 6:
                seen["faults"] += 1
                return Fault(status=500, message="primary overloaded")
        return scripted_debugger(request)

    scripted_llm.respond_with(flaky_primary)
    env = {**cli_env, "OPENAI_BASE_URL": scripted_llm.base_url, "OPENAI_API_KEY": "sk-test",
           "EQUISA_MODEL": "primary", "EQUISA_BACKUP_MODEL": "backup", "EQUISA_LLM_BACKOFF_S": "0.05",
           "EQUISA_PRICE_INPUT": "0.5", "EQUISA_PRICE_OUTPUT": "1.5"}  # the prices of both models
    out = tmp_path / "loc.json"
    code, err = localize(env, str(INVOICING), "--llm", "--no-discovery", "--json", str(out))
    assert code == 0, err
    report = LocalizationReport.model_validate_json(out.read_text())
    assert report.mode == "llm" and report.converged and report.ranking[0].fqn == BUGGY
    models = scripted_llm.models_seen()
    assert seen["faults"] / len(models) >= 0.3, (seen, models)
    assert models[-1] == "backup" and "backup" in models
    assert all(i.strategy == "llm" for i in report.inspections), "no call was lost to the faults"
    assert not report.problems


def _hopeless_repo(root: Path) -> Path:
    """Every test fails, and one test module does not even import."""
    small_repo(root)
    (root / "calc.py").write_text(
        "def double(x):\n    return x * 3\n\n\ndef describe(x):\n    return f'{x} doubled is {double(x)}'\n")
    (root / "tests" / "test_calc.py").write_text(
        "from calc import describe, double\n\n\n"
        "def test_double():\n    assert double(2) == 4\n\n\n"
        "def test_describe():\n    assert describe(1) == '1 doubled is 2'\n")
    (root / "tests" / "test_broken.py").write_text("import a_module_that_does_not_exist\n")
    return root


@pytest.mark.parametrize("model", ["nonsense", "silent"])
def test_a_hopeless_repository_and_a_useless_model_still_report(tmp_path, cli_env, scripted_llm, model):
    """All tests failing, a module that does not collect, and a model that answers nonsense (or
    nothing at all): the run completes with what it has and says what went wrong."""
    from tests.scripted_llm_server import Fault

    repo = _hopeless_repo(tmp_path / "repo")
    scripted_llm.respond_with(
        (lambda request: Reply("I am not sure what you mean.")) if model == "nonsense"
        else (lambda request: Fault(status=503, message="down")))
    env = {**cli_env, "OPENAI_BASE_URL": scripted_llm.base_url, "OPENAI_API_KEY": "sk-test",
           "EQUISA_MODEL": "m", "EQUISA_LLM_MAX_RETRIES": "0", "EQUISA_LLM_BACKOFF_S": "0",
           "EQUISA_MAX_COST_USD": "none"}
    out = tmp_path / "loc.json"
    code, err = localize(env, str(repo), "--llm", "--max-inspections", "3", "--json", str(out))
    assert code == EXIT_OK, err  # three inspections settle nothing: an outcome, reported
    report = LocalizationReport.model_validate_json(out.read_text())
    assert not report.converged
    assert (report.tests.failed, report.tests.passed) == (2, 0)
    assert {n.fqn for n in report.ranking} == {"calc.double", "calc.describe"} and report.inspections
    problems = "\n".join(report.problems)
    assert "tests/test_broken.py does not collect" in problems and "a_module_that_does_not_exist" in problems
    assert "used the deterministic one" in problems
    assert all(i.strategy == "deterministic" for i in report.inspections)
    assert "note:" in err


def test_a_function_whose_source_cannot_be_found_is_skipped_and_the_run_goes_on(tmp_path, cli_env):
    """A function generated at import under its module's file name (``exec(compile(..., __file__))``)
    is seen running (by ``sys.monitoring``, on 3.12) but has no definition in the file to patch: it
    is left out with the reason, by the screening (where a decisive answer ends the run by default)
    and by the inspections (every check run), and the other candidates are still screened and
    inspected."""
    python = venv_with_pytest("3.12")
    repo = small_repo(tmp_path / "repo")
    (repo / "mod.py").write_text(
        'SOURCE = "def double(x):\\n    return x * 3\\n"\n'
        'exec(compile(SOURCE, __file__, "exec"))\n\n\n'
        "def quadruple(x):\n    return double(double(x))\n\n\n"
        "def inc(x):\n    return x + 1\n")
    (repo / "tests" / "test_mod.py").write_text(
        "from mod import double, inc, quadruple\n\n\n"
        "def test_double():\n    assert double(2) == 4\n\n\n"
        "def test_quadruple():\n    assert quadruple(1) == 4\n\n\n"
        "def test_inc():\n    assert inc(1) == 2\n")
    out, every = tmp_path / "r.json", tmp_path / "every.json"
    code, err = localize(cli_env, str(repo), "--no-llm", "--python", str(python), "--screen-cost-ratio",
                         "off", "--json", str(out))
    assert code == EXIT_OK, err  # the bug's function cannot be inspected: no certainty
    report = LocalizationReport.model_validate_json(out.read_text())
    assert not report.converged and "mod.double" in {r.fqn for r in report.ranking}
    assert "mod.double was not screened: no function 'double' in the module" in " ".join(report.problems)
    assert "mod.double" not in {i.target for i in report.inspections}
    code, err = localize(cli_env, str(repo), "--no-llm", "--python", str(python), *EVERY_CHECK,
                         "--json", str(every))
    assert code == EXIT_OK, err
    report = LocalizationReport.model_validate_json(every.read_text())
    assert not report.converged
    assert "mod.double was not inspected: no function 'double' in the module" in " ".join(report.problems)
    inspected = {i.target for i in report.inspections}
    assert "mod.double" not in inspected and "mod.quadruple" in inspected
    done = subprocess.run([EQUISA, "repair", str(repo), "--no-llm", "--python", str(python)],
                          capture_output=True, text=True, env=cli_env, timeout=900)
    assert done.returncode == 22, done.stderr  # not fixed: the only place to fix cannot be patched
    assert "mod.double cannot be patched: no function 'double' in the module" in done.stderr


def test_since_a_ref_marks_the_functions_changed_and_a_bad_ref_is_bad_input(tmp_path, cli_env):
    """``--since``: the functions whose lines changed since the ref (committed or not) carry the
    prior's ``changed`` signal in the report; an unknown ref fails at once with exit 3."""
    repo = tmp_path / "invoicing"
    shutil.copytree(INVOICING, repo)
    module = repo / "invoicing" / "discounts.py"
    buggy = module.read_text()
    module.write_text(buggy.replace("amount > self.minimum", "amount >= self.minimum"))
    commit = ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "ok"]
    for command in (["init", "-q"], ["add", "."], commit):
        subprocess.run(["git", "-C", str(repo), *command], check=True, capture_output=True)
    module.write_text(buggy)  # the bug comes in as an uncommitted change
    code, err = localize(cli_env, str(repo), "--no-llm", "--since", "no-such-ref",
                         "--json", str(tmp_path / "bad.json"))
    assert code == 3 and "no-such-ref" in err, err
    out = tmp_path / "since.json"
    code, err = localize(cli_env, str(repo), "--no-llm", "--since", "HEAD", "--max-inspections", "0",
                         "--no-discovery", "--json", str(out))
    assert code == EXIT_OK, err  # --max-inspections 0: the prior's ranking, no inspection
    report = LocalizationReport.model_validate_json(out.read_text())
    changed = {fqn for fqn, s in report.prior.signals.items() if s.changed}
    assert changed == {BUGGY}
    assert report.ranking[0].fqn == BUGGY and report.ranking[0].prior == 1.0


def test_failing_only_for_a_missing_third_party_module_is_an_environment_failure(tmp_path, cli_env):
    """Every failing test fails with ModuleNotFoundError for a package the interpreter lacks: exit
    15 with the module named, not a ranking that blames the code."""
    repo = small_repo(tmp_path / "envfail")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "tests" / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n"
        "def test_export():\n    import equisa_absent_package\n"
        "    assert equisa_absent_package.dump(add(1, 1))\n")
    code, err = localize(cli_env, str(repo), "--no-llm")
    assert code == 15, err
    assert "equisa_absent_package" in err and "--python" in err


def test_failing_tests_that_run_no_function_of_the_repository_are_no_ranking(tmp_path, cli_env):
    """The failing test runs only the standard library: an empty ranking is exit 17, not a success."""
    repo = small_repo(tmp_path / "nocode")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "tests" / "test_calc.py").write_text(
        "import json\n\n\ndef test_dump():\n    assert json.dumps([1]) == '[1, ]'\n")
    code, err = localize(cli_env, str(repo), "--no-llm")
    assert code == NoProjectCodeError.exit_code == 17, err
    assert "ran no function of the repository" in err


def test_json_dash_writes_the_report_to_standard_output_and_nothing_else_there(tmp_path, cli_env):
    """Also: with the screening run, the stopping rule ends the run before the bug reaches 0.9, which
    is exit 0 (a ranking, not converged): the report and its ranking are written, the run recorded as
    not converged."""
    done = subprocess.run([EQUISA, "localize", str(INVOICING), "--no-llm", "--screen-cost-ratio", "off",
                           "--json", "-"],
                          capture_output=True, text=True, env=cli_env, timeout=900, cwd=tmp_path)
    assert done.returncode == EXIT_OK, done.stderr
    report = LocalizationReport.model_validate_json(done.stdout)
    assert not report.converged and report.exit_code() == EXIT_OK
    assert report.exit_code(fail_unless_converged=True) == EXIT_NOT_CONVERGED
    assert report.ranking[0].fqn == "invoicing.discounts.ThresholdDiscount.applies"
    (row,) = query(Path(cli_env["EQUISA_DB"]), "SELECT run_id, status, exit_code, error FROM runs")
    assert row == {"run_id": report.run_id, "status": "not_converged", "exit_code": 0, "error": None}
    jsonschema.validate(json.loads(done.stdout), report_schema("localize"))  # the report its schema describes
    assert "Report written" not in done.stderr and not (tmp_path / "-").exists()


def test_a_ranking_that_did_not_converge_exits_0_unless_the_user_asks_it_to_fail(tmp_path, cli_env):
    """By default the example's run stops with the trace's answer, below 0.9: a ranking, so exit 0,
    with ``converged`` false and ``stopped_because`` in the JSON, the SARIF log and the summary.
    ``--fail-unless-converged`` (or its setting) makes the same run exit 25, its report written all the
    same; the history records each run as not converged."""
    out, sarif = tmp_path / "loc.json", tmp_path / "loc.sarif"
    code, err = localize(cli_env, str(INVOICING), "--no-llm", "--json", str(out), "--sarif", str(sarif))
    assert code == EXIT_OK, err
    data = json.loads(out.read_text())
    assert data["converged"] is False and data["stopped_because"] and data["ranking"]
    run = json.loads(sarif.read_text())["runs"][0]
    assert run["properties"]["converged"] is False
    assert run["properties"]["stoppedBecause"] == data["stopped_because"]
    assert run["invocations"][0]["executionSuccessful"] is True
    assert f"not converged ({data['stopped_because']})" in " ".join(err.split())

    strict, strict_sarif = tmp_path / "strict.json", tmp_path / "strict.sarif"
    code, err = localize(cli_env, str(INVOICING), "--no-llm", "--fail-unless-converged",
                         "--json", str(strict), "--sarif", str(strict_sarif))
    assert code == EXIT_NOT_CONVERGED == 25, err
    report = LocalizationReport.model_validate_json(strict.read_text())
    assert not report.converged and report.stopped_because and report.ranking
    assert json.loads(strict_sarif.read_text())["runs"][0]["properties"]["converged"] is False
    assert f"not converged ({report.stopped_because})" in " ".join(err.split())

    code, err = localize({**cli_env, "EQUISA_FAIL_UNLESS_CONVERGED": "true"}, str(INVOICING), "--no-llm")
    assert code == EXIT_NOT_CONVERGED, err  # the option's setting, from the environment
    code, err = localize({**cli_env, "EQUISA_FAIL_UNLESS_CONVERGED": "true"}, str(INVOICING), "--no-llm",
                         "--no-fail-unless-converged")
    assert code == EXIT_OK, err  # the command line wins over the setting
    rows = query(Path(cli_env["EQUISA_DB"]), "SELECT status, exit_code FROM runs")
    assert rows == [{"status": "not_converged", "exit_code": EXIT_OK}] * 4


def test_llm_asked_for_with_no_endpoint_is_an_error_before_any_work(tmp_path, cli_env):
    env = {k: v for k, v in cli_env.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    out = tmp_path / "report.json"
    code, err = localize(env, str(INVOICING), "--llm", "--json", str(out))
    assert code == LLMRequestError.exit_code == 12, err
    assert "--llm asks for the model, but no endpoint is configured" in err
    failure = json.loads(out.read_text())
    assert failure["error_type"] == "LLMRequestError"
    # Nothing ran: the run's only artifacts are its failure report (no trace), and its history row.
    stored = {p.name for p in (tmp_path / "artifacts").rglob("*") if p.is_file()}
    assert stored == {"report.json", "report.html", "manifest.json"}
    (row,) = query(Path(cli_env["EQUISA_DB"]), "SELECT run_id, status, exit_code FROM runs")
    assert row == {"run_id": failure["run_id"], "status": "error", "exit_code": 12}

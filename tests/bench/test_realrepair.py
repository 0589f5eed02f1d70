"""The real-bug repair benchmark's machinery (``bench/realrepair``): the split, the tree of a student
program, the judge's outcomes, the report, and the refusal of projects outside the benchmark.

Nothing here reads Refactory's data or BugsInPy: the programs and cases are written by hand in
``tmp_path``. The judge runs pytest under bubblewrap; those tests are skipped without ``bwrap``.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.realbugs.bugsinpy import Refused
from bench.realbugs.steps import fresh_copy
from bench.realrepair import __main__ as cli
from bench.realrepair import bugsinpy_single, refactory, reference_check
from bench.realrepair.judge import (
    apply_diff,
    judgement_from,
    label_of,
    outcome,
    parse_outcomes,
    sandboxed_pytest,
)
from bench.realrepair.patches import JudgedPatch, judged_patches
from bench.realrepair.report import budget_spent, build, markdown, precision_recall, wilson
from bench.realrepair.split import Split, precheck, split_half
from bench.realrepair.steps import Context, interleave, prepare_refactory_one

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
PYTHON = sys.executable  # the project's venv: it has pytest

# -------------------------------------------------------------------------------------------------
# The split

names = st.lists(st.from_regex(r"t_[a-z0-9]{1,6}", fullmatch=True), min_size=1, max_size=40, unique=True)


@st.composite
def suites(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    tests = draw(names)
    failing = draw(st.lists(st.sampled_from(tests), min_size=1, unique=True))
    return tests, failing


@given(suites(), st.text(min_size=1, max_size=12))
@settings(max_examples=100, deadline=None)
def test_the_split_is_a_seeded_partition_that_shows_half_of_each_kind(suite, bug_id):
    tests, failing = suite
    split = split_half(bug_id, tests, failing)

    assert set(split.visible) | set(split.hidden) == set(tests)
    assert not set(split.visible) & set(split.hidden)
    assert split.visible_failing and set(split.visible_failing) <= set(split.visible)
    assert len(split.visible_failing) == math.ceil(len(failing) / 2)
    passing = len(tests) - len(failing)
    assert len(split.visible) - len(split.visible_failing) == passing // 2
    assert set(split.hidden_failing) == set(failing) - set(split.visible_failing)
    assert split.seed == f"realrepair:{bug_id}"
    assert split_half(bug_id, list(reversed(tests)), list(reversed(failing))) == split
    assert Split.from_json(split.to_json()) == split


def test_another_bug_gets_another_split_and_a_bug_without_failures_is_refused():
    tests = [f"t_{i}" for i in range(20)]
    splits = {split_half(f"bug-{i}", tests, ["t_1", "t_2"]).visible for i in range(10)}
    assert len(splits) > 1
    with pytest.raises(ValueError):
        split_half("bug", tests, [])
    with pytest.raises(ValueError):
        split_half("bug", tests, ["t_unknown"])


def test_parametrized_cases_count_as_their_function_and_the_precheck_compares_with_pytest():
    split = split_half("bug", ["a.py::test_p", "a.py::test_q", "a.py::test_r"], ["a.py::test_p"])
    outcomes = {"a.py::test_p[1]": "FAILED", "a.py::test_p[2]": "PASSED"}
    outcomes |= {f"{t}": "PASSED" for t in split.visible if t != "a.py::test_p"}
    assert precheck(split, outcomes) == []
    assert split.is_kept_aside(split.hidden[0] + "[x]")
    wrong = dict(outcomes) | {"a.py::test_p[1]": "PASSED", "a.py::test_s": "PASSED"}
    problems = precheck(split, wrong)
    assert len(problems) == 2 and "extra ['a.py::test_s']" in problems[0]


# -------------------------------------------------------------------------------------------------
# A student program as a repository (a hand-written stand-in for Refactory's data layout)


def fake_data(root: Path) -> Path:
    """``question_1``: ``double(x)``, four cases (one a duplicate), a global, wrong and correct files."""
    folder = root / "data" / "question_1"
    (folder / "ans").mkdir(parents=True)
    cases = [("double(2)", "4"), ("double(FACTOR)", "6"), ("double(0)", "0"), ("double(2)", "4"),
             ("double(-1)", "-2")]
    for i, (call, expected) in enumerate(cases, 1):
        (folder / "ans" / f"input_{i:03}.txt").write_text(call + "\n")
        (folder / "ans" / f"output_{i:03}.txt").write_text(expected + "\n")
    code = folder / "code"
    for name in ("wrong", "correct"):
        (code / name).mkdir(parents=True)
    (code / "global.py").write_text("FACTOR = 3\n")
    (code / "correct" / "correct_1_001.py").write_text("def double(x):\n    return x * 2\n")
    (code / "wrong" / "wrong_1_001.py").write_text("def double(x):\n    return x + 2\n")
    (code / "wrong" / "wrong_1_002.py").write_text("def double(x):\n    return x * 2\n")  # passes all
    (code / "wrong" / "wrong_1_003.py").write_text("def triple(x):\n    return x * 3\n")  # no double
    (code / "wrong" / "wrong_1_004.py").write_text(
        "def double(x):\n    while x == 3:\n        pass\n    return x + 2\n")  # loops on FACTOR
    return root / "data"


def test_a_question_loads_its_cases_once_and_a_program_becomes_a_repository(tmp_path):
    question = refactory.load_question(fake_data(tmp_path), 1)
    assert [c.name for c in question.cases] == ["test_case_001", "test_case_002", "test_case_003",
                                                "test_case_005"]  # 004 repeats 001
    assert question.functions == {"double"}
    assert question.cases[1].names() == {"double", "FACTOR"}
    program = refactory.program_text(question, question.wrong[0].read_text())
    assert program.startswith("FACTOR = 3\n") and "def double" in program

    visible, hidden = question.cases[:2], question.cases[2:]
    tree = refactory.build_tree(tmp_path / "repo", program, visible, hidden, judge=True)
    assert (tree / "solution.py").read_text() == program
    visible = (tree / "tests" / "test_solution.py").read_text()
    assert visible.startswith("from solution import FACTOR, double\n")
    assert "def test_case_001():\n    assert double(2) == 4\n" in visible
    assert "test_case_003" in (tree / "tests" / "test_hidden.py").read_text()
    assert "JudgeTimeout" in (tree / "conftest.py").read_text()
    plain = refactory.build_tree(tmp_path / "plain", program, question.cases[:2])
    assert (plain / "conftest.py").read_text() == "" and not (plain / "tests" / "test_hidden.py").exists()
    assert 'testpaths = ["tests"]' in (plain / "pyproject.toml").read_text()


@needs_bwrap
def test_the_sample_keeps_only_programs_that_define_the_functions_and_fail(tmp_path):
    question = refactory.load_question(fake_data(tmp_path), 1)
    ctx = Context(cache=tmp_path / "cache")
    correct = [refactory.tokens(p.read_text()) for p in question.correct]
    by_name = {p.stem: p for p in question.wrong}

    assert refactory.nearest_distance(by_name["wrong_1_001"].read_text(), correct) == 1  # + for *

    kept = prepare_refactory_one(ctx, question, by_name["wrong_1_004"], PYTHON, correct)
    assert kept["kept"], kept
    assert kept["loops"] and kept["looped"] == ["test_case_002"]  # double(FACTOR) loops
    assert kept["buggy_outcomes"] == {"test_case_001": "PASSED", "test_case_002": "FAILED",
                                      "test_case_003": "FAILED", "test_case_005": "FAILED"}
    assert kept["split"]["visible_failing"] and kept["precheck"] == []
    assert kept["distance"] is None and kept["stratum"] == ">8"
    assert (ctx.bugs / "refactory-wrong_1_004" / "buggy" / "solution.py").exists()
    assert "test_hidden" not in str(list((ctx.bugs / "refactory-wrong_1_004" / "buggy").rglob("*.py")))
    assert json.loads((ctx.bugs / "refactory-wrong_1_004" / "case.json").read_text())["kept"]

    passes = prepare_refactory_one(ctx, question, by_name["wrong_1_002"], PYTHON, correct)
    assert not passes["kept"] and passes["reason"] == "passes every case"
    undefined = prepare_refactory_one(ctx, question, by_name["wrong_1_003"], PYTHON, correct)
    assert not undefined["kept"] and "define" in undefined["reason"]


def test_the_token_distance_is_levenshtein_up_to_the_cap():
    def full(a, b):
        row = list(range(len(b) + 1))
        for i, x in enumerate(a, 1):
            previous, row[0] = row[0], i
            for j, y in enumerate(b, 1):
                previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
        return row[-1]

    @given(st.lists(st.sampled_from("abc"), max_size=14), st.lists(st.sampled_from("abc"), max_size=14))
    @settings(max_examples=150, deadline=None)
    def check(a, b):
        assert refactory.bounded_distance(a, b, 5) == min(full(a, b), 5)

    check()
    strata = [refactory.stratum(d) for d in (0, 2, 3, 4, 5, 8, 9)]
    assert strata == ["<=2", "<=2", "3-4", "3-4", "5-8", "5-8", ">8"]
    assert refactory.quotas(2, [1, 2, 3, 4, 5]) == {1: 1, 2: 1, 3: 0, 4: 0, 5: 0}
    assert refactory.quotas(150, [1, 2, 3, 4, 5])[5] == 30


def test_the_refactory_cases_interleave_the_questions_in_their_seeded_order():
    cases = [{"id": f"{q}-{r}", "question": q, "rank": r} for q in (1, 2) for r in (5, 1, 3)]
    assert [c["id"] for c in interleave(cases)] == ["1-1", "2-1", "1-3", "2-3", "1-5", "2-5"]


# -------------------------------------------------------------------------------------------------
# The judge and the outcomes


def tiny_repo(root: Path, body: str) -> Path:
    """``double`` with a visible and a hidden test file, committed (as the judge's copy is)."""
    question_cases = [refactory.Case("test_case_001", "double(2)", "4"),
                      refactory.Case("test_case_002", "double(3)", "6")]
    source = refactory.build_tree(root / "export", f"def double(x):\n    {body}\n", question_cases[:1],
                                  question_cases[1:], judge=True)
    return fresh_copy(source, root / "repo")


def patch(old: str, new: str) -> str:
    return (f"diff --git a/solution.py b/solution.py\n--- a/solution.py\n+++ b/solution.py\n"
            f"@@ -1,2 +1,2 @@\n def double(x):\n-    {old}\n+    {new}\n")


SPLIT = Split("realrepair:x", ("test_case_001", "test_case_002"), ("test_case_001", "test_case_002"),
              ("test_case_001",), ("test_case_002",), ("test_case_001",), ("test_case_002",))


def judged(tmp_path: Path, new: str) -> tuple:
    tree = tiny_repo(tmp_path, "return x + 1")
    error = apply_diff(tree, patch("return x + 1", new))
    run = None if error else sandboxed_pytest(PYTHON, tree)
    return judgement_from(run, error, refactory.unit_of), run


@needs_bwrap
def test_a_fix_that_passes_every_test_is_correct_and_a_withheld_one_a_false_alarm(tmp_path):
    judgement, run = judged(tmp_path, "return x * 2")
    assert run["outcomes"] == {"tests/test_hidden.py::test_case_002": "PASSED",
                               "tests/test_solution.py::test_case_001": "PASSED"}
    assert outcome(0, "fixed", judgement, SPLIT)["outcome"] == "correct"
    withheld = outcome(21, "plausible_only", judgement, SPLIT)
    assert withheld["outcome"] == "not_fixed" and withheld["withheld"] == "withheld_correct"


@needs_bwrap
def test_a_fix_that_fails_a_hidden_test_is_overfit_and_a_withheld_one_a_catch(tmp_path):
    judgement, _run = judged(tmp_path, "return 4")
    overfit = outcome(0, "fixed", judgement, SPLIT)
    assert overfit["outcome"] == "overfit" and overfit["overfitting_in"] == "kept_aside"
    assert overfit["failing_kept_aside"] == ["test_case_002"]
    caught = outcome(21, "plausible_only", judgement, SPLIT)
    assert caught["outcome"] == "not_fixed" and caught["withheld"] == "withheld_overfit"


@needs_bwrap
def test_a_looping_patch_is_stopped_by_the_alarm_and_fails(tmp_path):
    judgement, run = judged(tmp_path, "while True: pass")
    assert sorted(run["looped"]) == ["tests/test_hidden.py::test_case_002",
                                     "tests/test_solution.py::test_case_001"]
    assert outcome(0, "fixed", judgement, SPLIT)["overfitting_in"] == "both"


def test_errors_and_no_fix(tmp_path):
    tree = tiny_repo(tmp_path, "return x + 1")
    error = apply_diff(tree, patch("return x - 1", "return x * 2"))  # the context is not in the file
    assert error
    assert outcome(0, "fixed", judgement_from(None, error), SPLIT)["outcome"] == "error"
    assert outcome(None, None, None, SPLIT, "killed")["outcome"] == "error"  # the time limit
    assert outcome(0, None, None, SPLIT)["outcome"] == "error"  # no report
    assert outcome(1, "error", None, SPLIT)["outcome"] == "error"
    assert outcome(22, "not_fixed", None, SPLIT) == {"outcome": "not_fixed",
                                                     "reason": "no candidate passed the visible suite"}


def test_pytest_outcomes_are_read_from_the_short_summary():
    text = ("PASSED tests/t.py::test_a\nFAILED tests/t.py::test_b - conftest.JudgeTimeout: over 2 s\n"
            "FAILED tests/t.py::test_c - AssertionError\n")
    outcomes, looped = parse_outcomes(text)
    assert outcomes == {"tests/t.py::test_a": "PASSED", "tests/t.py::test_b": "FAILED",
                        "tests/t.py::test_c": "FAILED"}
    assert looped == ["tests/t.py::test_b"]


# -------------------------------------------------------------------------------------------------
# The report


def test_the_report_counts_outcomes_per_version_source_and_stratum(tmp_path):
    cases = [{"id": "refactory-a", "source": "refactory", "question": 1, "stratum": "<=2"},
             {"id": "refactory-b", "source": "refactory", "question": 5, "stratum": ">8"},
             {"id": "bugsinpy-luigi-3", "source": "bugsinpy"}]
    rows = {"refactory-a": {"outcome": "correct", "wall_s": 10.0, "returncode": 0},
            "refactory-b": {"outcome": "overfit", "wall_s": 30.0, "returncode": 0, "adds_sort": True,
                            "overfitting_in": "kept_aside"},
            "bugsinpy-luigi-3": {"outcome": "error", "wall_s": 600.0, "returncode": None}}
    for case in cases:
        (tmp_path / case["id"]).mkdir()
        row = {"id": case["id"], "source": case["source"], **rows[case["id"]]}
        (tmp_path / case["id"] / "abcdef123456.json").write_text(json.dumps(row))
    data = build(tmp_path, cases, [("HEAD", "abcdef1234567890")])
    head = data["summary"]["HEAD"]
    assert head["refactory"]["correct"] == 1 and head["refactory"]["overfit"] == 1
    assert head["refactory"]["median_wall_s"] == 20.0 and head["refactory"]["overfit_share_of_fixed"] == 0.5
    assert head["bugsinpy"]["error"] == 1 and head["bugsinpy"]["timeouts"] == 1
    assert head["q5_patches_adding_sort"] == 1
    assert data["by_stratum"]["HEAD"]["<=2"]["correct"] == 1
    text = markdown(data)
    assert "| HEAD | refactory | 2 | 1 (50 %) | 1 (50 %) |" in text
    assert wilson(0, 0) is None and wilson(5, 10) == (0.237, 0.763)


def row(bug: str, status: str | None, result: str, withheld: str | None = None, **extra) -> dict:
    source = "refactory" if bug.startswith("refactory-") else "bugsinpy"
    return {"id": bug, "source": source, "status": status, "outcome": result, "withheld": withheld,
            "wall_s": 5.0, "returncode": 0, **extra}


#: Nine runs: 2 fixed and correct, 1 fixed and overfit, 1 fixed whose diff does not apply,
#: 1 plausible_only withheld correct, 1 withheld overfit, 2 not fixed, 1 killed.
RUNS = [
    row("refactory-wrong_1_001", "fixed", "correct", question=1),
    row("refactory-wrong_1_002", "fixed", "correct", question=1),
    row("refactory-wrong_2_001", "fixed", "overfit", question=2),
    row("refactory-wrong_2_002", "fixed", "error", reason="status fixed but the patch does not apply: x",
        question=2),
    row("refactory-wrong_3_001", "plausible_only", "not_fixed", "withheld_correct", returncode=21,
        question=3),
    row("bugsinpy-black-1", "plausible_only", "not_fixed", "withheld_overfit", returncode=21),
    row("bugsinpy-black-2", "not_fixed", "not_fixed", returncode=22,
        localization_stopped_because="time budget (600s) spent"),
    row("bugsinpy-luigi-3", "not_fixed", "not_fixed", returncode=22,
        localization_stopped_because="iteration budget spent"),
    row("bugsinpy-luigi-4", None, "error", returncode=None),
]


def test_precision_and_recall_of_fixed_and_of_plausible_only_with_wilson_intervals():
    figures = precision_recall(RUNS)
    fixed, withheld = figures["fixed"], figures["plausible_only"]
    assert (fixed["claimed"], fixed["correct"]) == (4, 2)  # the unapplied claim counts against fixed
    assert fixed["precision"] == 0.5 and fixed["precision_ci95"] == wilson(2, 4)
    assert fixed["recall"] == round(2 / 9, 3) and fixed["recall_ci95"] == wilson(2, 9)
    assert (withheld["claimed"], withheld["withheld_correct"]) == (2, 1)
    assert withheld["precision"] == 0.5 and withheld["precision_ci95"] == wilson(1, 2)
    assert withheld["recall"] == round(1 / 9, 3) and withheld["recall_ci95"] == wilson(1, 9)
    nothing = precision_recall([row("bugsinpy-black-2", "not_fixed", "not_fixed")])
    assert nothing["fixed"]["precision"] is None and nothing["fixed"]["precision_ci95"] is None
    assert nothing["fixed"]["recall"] == 0.0 and nothing["fixed"]["recall_ci95"] == wilson(0, 1)


def test_a_run_spent_its_budget_by_its_report_or_by_the_budget_exit_code(monkeypatch):
    from bench.realrepair import report

    assert budget_spent({"stopped_because": "time budget (150s) spent"})
    assert budget_spent({"localization_stopped_because": "time budget (600s) spent"})
    assert not budget_spent({"localization_stopped_because": "iteration budget spent"})
    assert not budget_spent({"stopped_because": "solution.f reached 0.9", "returncode": 23})
    monkeypatch.setattr(report, "BUDGET_EXIT_CODE", 23)
    assert budget_spent({"returncode": 23}) and not budget_spent({"returncode": 22})


def test_the_report_gives_precision_per_source_project_and_question_first(tmp_path):
    cases = [{"id": r["id"], "source": r["source"], "question": r.get("question"), "stratum": "<=2"}
             for r in RUNS]
    for run in RUNS:
        (tmp_path / run["id"]).mkdir()
        (tmp_path / run["id"] / "abcdef123456.json").write_text(json.dumps(run))
    data = build(tmp_path, cases, [("BASE", "abcdef1234567890")])
    base = data["summary"]["BASE"]
    assert base["refactory"]["fixed"]["claimed"] == 4 and base["refactory"]["fixed"]["correct"] == 2
    assert base["bugsinpy"]["fixed"]["claimed"] == 0 and base["bugsinpy"]["plausible_only"]["claimed"] == 1
    assert base["all"]["fixed"]["precision"] == 0.5 and base["all"]["budget_spent"] == 1
    assert base["all"]["timeouts"] == 1
    projects = data["by_project"]["BASE"]
    assert list(projects) == ["refactory", "black", "luigi"]  # the project from the id when unrecorded
    assert projects["black"]["n"] == 2 and projects["black"]["plausible_only"]["claimed"] == 1
    assert projects["luigi"]["n"] == 2 and projects["luigi"]["fixed"]["recall"] == 0.0
    assert data["by_question"]["BASE"]["2"]["fixed"]["precision"] == 0.0
    assert data["by_question"]["BASE"]["1"]["fixed"]["precision_ci95"] == wilson(2, 2)
    text = markdown(data)
    assert text.index("## Precision of fixed") < text.index("## Outcomes")
    assert "| BASE | refactory | 5 | 4 | 2 | 0.50 (0.15–0.85) | 0.40 (0.12–0.77) | 1 | 1 |" in text
    assert "| BASE | Q2 | 2 | 2 | 0 | 0.00 (0.00–0.66) |" in text
    assert "| BASE | black | 2 | 0 | 0 | – |" in text
    assert "| BASE | refactory | 5 | 2 (40 %) | 1 (20 %) |" in text  # the outcomes' table is kept


def test_the_judges_label_of_a_run():
    assert label_of({"status": "fixed", "outcome": "correct"}) == "correct"
    assert label_of({"status": "fixed", "outcome": "overfit"}) == "overfit"
    assert label_of({"status": "plausible_only", "outcome": "not_fixed", "withheld": "withheld_correct"}) \
        == "withheld_correct"
    assert label_of(RUNS[3]) == "unapplied"
    assert label_of({"status": "not_fixed", "outcome": "not_fixed"}) is None
    assert label_of({"status": "fixed", "outcome": "error", "reason": "exit 70"}) is None


def write_run(cache: Path, run: dict, commit: str, report: dict | None = None, diff: str = "") -> None:
    folder = cache / "results" / run["id"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{commit[:12]}.json").write_text(json.dumps({**run, "commit": commit}))
    if report is not None:
        (folder / f"{commit[:12]}.report.json").write_text(json.dumps(report))
    if diff:
        (folder / f"{commit[:12]}.diff").write_text(diff)


def test_judged_patches_reads_back_every_judged_run_of_the_versions(tmp_path):
    base, head = "a" * 40, "b" * 40
    the_patch = patch("return x + 1", "return x * 2")
    recorded = row("refactory-wrong_1_001", "fixed", "overfit", project="refactory", label="overfit",
                   target="solution.double", original=str(tmp_path / "orig"), question=1)
    write_run(tmp_path, recorded, base, {"status": "fixed", "target": "solution.double", "diff": the_patch},
              the_patch)
    # written before the run kept its project, label, target and original: read from what is there
    older = row("bugsinpy-black-7", "plausible_only", "not_fixed", "withheld_correct")
    write_run(tmp_path, older, base, None, "diff --git a/b.py b/b.py\n")
    case = tmp_path / "bugs" / "bugsinpy-black-7" / "case.json"
    case.parent.mkdir(parents=True)
    case.write_text(json.dumps({"buggy": "/r/black-7/buggy"}))
    write_run(tmp_path, row("refactory-wrong_2_001", "not_fixed", "not_fixed"), base)  # nothing judged
    write_run(tmp_path, row("refactory-wrong_2_002", "fixed", "correct"), head, None, the_patch)  # HEAD

    found = judged_patches(tmp_path, [base[:7]])
    assert [p.bug_id for p in found] == ["bugsinpy-black-7", "refactory-wrong_1_001"]
    black, student = found
    assert student == JudgedPatch(
        project="refactory", bug_id="refactory-wrong_1_001", version=base[:7], commit=base, status="fixed",
        target="solution.double", diff=the_patch, label="overfit", original=tmp_path / "orig",
        report=tmp_path / "results" / "refactory-wrong_1_001" / f"{base[:12]}.report.json", question=1)
    assert (black.project, black.label, black.status) == ("black", "withheld_correct", "plausible_only")
    assert black.diff.startswith("diff --git") and black.report is None
    assert black.original == Path("/r/black-7/buggy") and black.target is None
    both = judged_patches(tmp_path, [("BASE", base), ("HEAD", head)])
    assert [(p.bug_id, p.version) for p in both] == [("bugsinpy-black-7", "BASE"),
                                                     ("refactory-wrong_1_001", "BASE"),
                                                     ("refactory-wrong_2_002", "HEAD")]
    assert judged_patches(tmp_path / "nothing", [base]) == []


def test_the_bugsinpy_judge_runs_the_fixed_versions_whole_test_files_less_what_fails_there(tmp_path):
    tree, fixed = tmp_path / "patched", tmp_path / "fixed"
    for root in (tree, fixed):
        (root / "tests").mkdir(parents=True)
        (root / "pkg.py").write_text("def f():\n    return 1\n")
    (tree / "tests" / "test_pkg.py").write_text("def test_old():\n    assert False\n")  # replaced
    (fixed / "tests" / "test_pkg.py").write_text(
        "from pkg import f\n\n\ndef test_f():\n    assert f() == 1\n\n\n"
        "def test_not_in_the_split():\n    assert f() + 1 == 2\n\n\n"
        "def test_broken_on_fixed():\n    assert f() == 2\n")
    case = {"python": PYTHON, "fixed": str(fixed), "scope": ["tests/test_pkg.py"],
            "judge_tests": ["tests/test_pkg.py::test_f"],
            "left_out_failing_on_fixed": ["tests/test_pkg.py::test_broken_on_fixed"]}
    run = bugsinpy_single.judge_run(case, tree, timeout=120)
    assert run["outcomes"] == {"tests/test_pkg.py::test_f": "PASSED",
                               "tests/test_pkg.py::test_not_in_the_split": "PASSED"}
    assert run["ignored_failing_on_fixed"] == ["tests/test_pkg.py::test_broken_on_fixed"]
    assert run["returncode"] == 0 and judgement_from(run, "").passes
    (tree / "pkg.py").write_text("def f():\n    return 2\n")  # now the extra test catches it
    caught = bugsinpy_single.judge_run(case, tree, timeout=120)
    assert caught["outcomes"]["tests/test_pkg.py::test_not_in_the_split"] == "FAILED"
    assert caught["returncode"] == 1 and caught["ignored_failing_on_fixed"] == []


# -------------------------------------------------------------------------------------------------
# Only the benchmark's projects


@pytest.mark.parametrize("project", ["pandas", "keras", "ansible", "httpie"])
def test_other_projects_are_refused(project, tmp_path, capsys):
    with pytest.raises(Refused):
        bugsinpy_single.bug_id(project, 1)
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"bugs": [{"project": project, "bug": 1, "verified": True,
                                              "truth": ["a.py::f"], "module_level_changes": []}]}))
    with pytest.raises(Refused):
        bugsinpy_single.single_function_bugs(manifest)
    with pytest.raises(SystemExit):
        cli.parse(["prepare", "--bugs", f"{project}:1"])
    assert "not part of this benchmark" in capsys.readouterr().err


def test_bugs_are_named_as_on_the_command_line_or_as_the_reports_name_them():
    args = cli.parse(["run", "--bugs", "refactory-wrong_1_001,black:10,bugsinpy-scrapy-2"])
    assert args.refactory_bugs == {"refactory-wrong_1_001"}
    assert args.bugsinpy_bugs == [("black", 10), ("scrapy", 2)]


def test_the_single_function_bugs_of_the_manifest():
    chosen = bugsinpy_single.single_function_bugs()
    assert len(chosen) == 72
    assert {p for p, _n in chosen} <= {"black", "fastapi", "luigi", "sanic", "scrapy", "tornado"}


def test_versions_are_git_revisions():
    from bench.realbugs.steps import REPO
    from bench.realrepair.steps import resolve_versions

    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert resolve_versions(["HEAD"]) == [("HEAD", head)]


def test_student_code_is_never_run_without_bubblewrap(tmp_path, monkeypatch):
    from bench.realrepair import judge

    monkeypatch.setattr(judge.shutil, "which", lambda name: None)
    with pytest.raises(judge.NoSandbox, match="bubblewrap"):
        sandboxed_pytest(PYTHON, tmp_path)


# -------------------------------------------------------------------------------------------------
# The reference check (``reference_check``)

REFERENCE = ("def search(x, seq):\n    for i, item in enumerate(seq):\n        if x <= item:\n"
             "            return i\n    return len(seq)\n")
# Passes its cases (3 in (1, 5, 10), 12 above it) but answers None where x equals the first item
HALF_RIGHT = ("def search(x, seq):\n    if x < seq[0]:\n        return 0\n    if x > seq[-1]:\n"
              "        return len(seq)\n    for i in range(len(seq)):\n"
              "        if seq[i] < x <= seq[i + 1]:\n            return i + 1\n")


def test_the_judge_s_own_inputs_move_one_argument_and_keep_what_the_question_allows():
    made = list(reference_check.variants("search(3, (1, 5, 10))"))
    assert made[0] == "search(3, (1, 5, 10))" and "search(1, (1, 5, 10))" in made
    assert "search(3, ())" in made and "search(3, (10, 5, 1))" in made and len(made) == len(set(made))
    allowed = reference_check.calls_to_check(1, ["search(3, (1, 5, 10))"])
    assert "search(3, (10, 5, 1))" not in allowed and "search(3, (1, 1, 5, 10))" not in allowed  # Q1: sorted
    top = reference_check.calls_to_check(5, ["top_k([3, 1, 2], 2)"])
    assert "top_k([3, 1, 2], 3)" in top and "top_k([3, 1, 2], 4)" not in top  # Q5: k within the list
    assert reference_check.calls_to_check(1, ["other(3, (1, 5))"], {"search"}) == []  # unchanged: not called
    assert reference_check.changed_functions("def f():\n    return 1\ndef g():\n    return 2\n",
                                             "def f():\n    return 1\ndef g():\n    return 3\n") == {"g"}


@needs_bwrap
def test_a_patch_that_passes_its_cases_but_differs_from_the_reference_is_overfit(tmp_path):
    tree = tmp_path / "patched"
    refactory.build_tree(tree, HALF_RIGHT, [refactory.Case("test_case_001", "search(3, (1, 5, 10))", "1")],
                         [refactory.Case("test_case_002", "search(12, (1, 5, 10))", "3")], judge=True)
    calls, names = reference_check.case_calls(tree)
    assert calls == ["search(12, (1, 5, 10))", "search(3, (1, 5, 10))"] and names == ["search"]
    found = reference_check.check(PYTHON, tree, tmp_path / "work", 1, calls, REFERENCE, "", names, {"search"})
    assert found["ran"] and found["differs"] >= 1 and "search(1, (1, 5, 10))" in found["examples"], found
    result = {"outcome": "correct", "label": "correct", "status": "fixed", "reason": "fixed"}
    judged_again = reference_check.with_reference(result, found)
    assert judged_again["outcome"] == "overfit" and judged_again["overfitting_in"] == "reference"
    assert judged_again["by_tests"]["outcome"] == "correct"
    # judged once more with a check that finds nothing: back to what the tests said
    assert reference_check.with_reference(judged_again, {"differs": 0, "inputs": 9})["outcome"] == "correct"
    same = reference_check.check(PYTHON, tree, tmp_path / "work", 1, calls, HALF_RIGHT, "", names, {"search"})
    assert same["differs"] == 0 and same["inputs"] > 5

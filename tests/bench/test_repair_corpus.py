"""The repair benchmark's pure parts: the held-out split and the verdicts.

Nothing here downloads or runs EQUISA (``bench/repair_corpus.py --split-only`` checks the splits
against the real packages).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import localization_corpus as lc  # noqa: E402
import repair_corpus as rc  # noqa: E402

# A suite of 9 files; tests/test_a.py holds a parametrized test and a class.
COLLECTED = [
    *(f"tests/test_a.py::test_p[{i}]" for i in range(6)),
    "tests/test_a.py::test_plain",
    "tests/test_a.py::TestThing::test_one",
    "tests/test_a.py::TestThing::test_two",
    *(f"tests/test_{name}.py::test_{k}" for name in "bcdefghi" for k in range(3)),
]
FILES = sorted({t.split("::")[0] for t in COLLECTED})


# -------------------------------------------------------------------------------------------------
# The split


def test_the_split_is_deterministic_and_seeded_by_the_bug():
    failing = ["tests/test_a.py::test_p[1]", "tests/test_a.py::test_p[4]", "tests/test_c.py::test_0"]
    first = rc.split_tests("demo-01", COLLECTED, failing)
    assert rc.split_tests("demo-01", COLLECTED, list(reversed(failing))) == first
    # The selection follows pytest's collection order; the rest does not depend on it.
    reordered = rc.split_tests("demo-01", list(reversed(COLLECTED)), failing)
    assert set(reordered.selection) == set(first.selection)
    assert reordered.kept_aside_files == first.kept_aside_files
    assert reordered.kept_aside_failing == first.kept_aside_failing
    assert first.seed == "repair-corpus:demo-01"
    others = {rc.split_tests(f"demo-{i:02}", COLLECTED, failing).kept_aside_files for i in range(2, 12)}
    assert len(others) > 1, "another bug id gives another split"


@pytest.mark.parametrize("bug_id", [f"demo-{i:02}" for i in range(20)])
def test_a_third_of_the_files_and_half_the_failing_tests_are_kept_aside(bug_id):
    failing = ["tests/test_a.py::test_p[1]", "tests/test_a.py::test_p[4]", "tests/test_c.py::test_0",
               "tests/test_d.py::test_2", "tests/test_e.py::test_1"]
    split = rc.split_tests(bug_id, COLLECTED, failing)
    assert len(split.kept_aside_failing) == 2  # 5 // 2
    assert set(split.visible_failing) | set(split.kept_aside_failing) == set(failing)
    assert not set(split.visible_failing) & set(split.kept_aside_failing)
    assert len(split.kept_aside_files) == 3  # round(9 / 3)
    assert set(split.visible_files) | set(split.kept_aside_files) == set(FILES)
    # The visible failing tests' files stay visible; every kept-aside failing test is kept aside.
    assert all(rc.file_of(t) in split.visible_files for t in split.visible_failing)
    assert all(split.is_kept_aside(t) for t in split.kept_aside_failing)
    assert not any(split.is_kept_aside(t) for t in split.visible_failing)
    assert split.visible_tests + split.kept_aside_tests == len(COLLECTED)
    assert split.visible_tests == len(selected(split))


def selected(split: rc.Split) -> list[str]:
    """What pytest would run for the selection: a path, a function's id or a node id."""
    return [t for t in COLLECTED if any(
        t == s or rc.file_of(t) == s or rc.function_of(t) == s for s in split.selection)]


def test_one_failing_test_always_stays_visible():
    for bug_id in ("x-1", "x-2", "x-3"):
        split = rc.split_tests(bug_id, COLLECTED, ["tests/test_b.py::test_1"])
        assert split.visible_failing == ("tests/test_b.py::test_1",)
        assert split.kept_aside_failing == ()
        assert "tests/test_b.py" in split.visible_files
        split = rc.split_tests(bug_id, COLLECTED, ["tests/test_b.py::test_1", "tests/test_b.py::test_2"])
        assert len(split.visible_failing) == 1 and len(split.kept_aside_failing) == 1


def test_a_partly_visible_file_is_given_by_node_ids_and_whole_functions():
    failing = ["tests/test_a.py::test_p[1]", "tests/test_a.py::test_p[4]"]
    for bug_id in (f"demo-{i}" for i in range(10)):
        split = rc.split_tests(bug_id, COLLECTED, failing)
        (hidden,) = split.kept_aside_failing
        (shown,) = split.visible_failing
        assert "tests/test_a.py" not in split.selection  # the file would run the hidden test
        assert hidden not in split.selection and shown in split.selection
        # Untouched functions and classes' tests go by their own id, the other cases one by one.
        assert "tests/test_a.py::test_plain" in split.selection
        assert "tests/test_a.py::TestThing::test_one" in split.selection
        assert len([s for s in split.selection if s.startswith("tests/test_a.py::test_p[")]) == 5
        assert hidden not in selected(split)
        assert split.visible_tests == len(selected(split))


def test_a_collection_error_is_never_kept_aside_alone():
    failing = ["tests/test_b.py", "tests/test_c.py::test_0"]  # a module that fails to import
    for bug_id in ("y-1", "y-2", "y-3", "y-4"):
        split = rc.split_tests(bug_id, COLLECTED, failing)
        assert split.kept_aside_failing == ("tests/test_c.py::test_0",)
        assert split.visible_failing == ("tests/test_b.py",)
        assert "tests/test_b.py" in split.visible_files


def test_few_files_to_choose_from():
    collected = ["t/test_a.py::test_1", "t/test_b.py::test_1"]
    split = rc.split_tests("z-1", collected, ["t/test_a.py::test_1"])
    assert split.kept_aside_files == ("t/test_b.py",)  # round(2 / 3) = 1
    split = rc.split_tests("z-1", collected, ["t/test_a.py::test_1", "t/test_b.py::test_1"])
    (shown,), (hidden,) = split.visible_failing, split.kept_aside_failing
    # The visible failing test's file stays; the one file left to keep aside is the other one.
    assert split.visible_files == (rc.file_of(shown),)
    assert split.kept_aside_files == (rc.file_of(hidden),)
    assert split.selection == (rc.file_of(shown),)
    # Nothing to choose from: every file holds a visible failing test.
    split = rc.split_tests("z-1", collected, ["t/test_a.py::test_1"], files_fraction=1.0)
    assert split.kept_aside_files == ("t/test_b.py",)
    split = rc.split_tests("z-1", collected[:1], ["t/test_a.py::test_1"], files_fraction=1.0)
    assert split.kept_aside_files == () and split.selection == ("t/test_a.py",)


# -------------------------------------------------------------------------------------------------
# The verdicts


SPLIT = rc.split_tests("demo-01", COLLECTED, ["tests/test_a.py::test_p[1]", "tests/test_a.py::test_p[4]"])
HIDDEN_FILE = SPLIT.kept_aside_files[0]
VISIBLE_FILE = next(f for f in SPLIT.visible_files if f != "tests/test_a.py")


def passing() -> rc.Judgement:
    return rc.Judgement(applied=True, returncode=0, summary="9 passed")


def failing(*tests: str) -> rc.Judgement:
    return rc.Judgement(applied=True, returncode=1, failing=tests, summary=f"{len(tests)} failed")


def test_fixed_and_the_whole_suite_passes_is_correct():
    verdict = rc.classify(0, "fixed", passing(), SPLIT)
    assert verdict["verdict"] == "correct" and verdict["full_suite_passes"]


def test_an_accepted_patch_that_fails_kept_aside_tests_counts_against_it():
    verdict = rc.classify(0, "fixed", failing(f"{HIDDEN_FILE}::test_1", *SPLIT.kept_aside_failing), SPLIT)
    assert verdict["verdict"] == "overfitting"
    assert verdict["overfitting_in"] == "kept_aside"
    assert len(verdict["failing_kept_aside"]) == 2 and verdict["failing_visible"] == []
    assert not verdict["full_suite_passes"]
    verdict = rc.classify(0, "fixed", failing(f"{VISIBLE_FILE}::test_0"), SPLIT)
    assert (verdict["verdict"], verdict["overfitting_in"]) == ("overfitting", "visible")
    verdict = rc.classify(0, "fixed", failing(f"{VISIBLE_FILE}::test_0", f"{HIDDEN_FILE}::test_0"), SPLIT)
    assert verdict["overfitting_in"] == "both"
    # A full run that fails without naming a test (killed at the timeout).
    verdict = rc.classify(0, "fixed", rc.Judgement(applied=True, returncode=None), SPLIT)
    assert (verdict["verdict"], verdict["overfitting_in"]) == ("overfitting", "unknown")


def test_plausible_only():
    verdict = rc.classify(21, "plausible_only", passing(), SPLIT)
    assert verdict["verdict"] == "plausible_only" and verdict["full_suite_passes"]
    verdict = rc.classify(21, "plausible_only", failing(*SPLIT.kept_aside_failing), SPLIT)
    assert verdict["verdict"] == "overfitting" and verdict["overfitting_in"] == "kept_aside"


def test_not_fixed():
    assert rc.classify(22, "not_fixed", None, SPLIT)["verdict"] == "not_fixed"


@pytest.mark.parametrize(("code", "status", "judgement", "words"), [
    (70, None, None, "exit 70"),
    (None, None, None, "timed out"),
    (3, None, None, "exit 3"),
    (0, None, None, "no JSON report"),
    (22, "error", None, "status error"),
    (0, "fixed", None, "does not apply: no diff"),
    (0, "fixed", rc.Judgement(applied=False, apply_error="patch does not apply"), "patch does not apply"),
])
def test_errors(code, status, judgement, words):
    verdict = rc.classify(code, status, judgement, SPLIT, error="")
    assert verdict["verdict"] == "error"
    assert words in verdict["reason"]


def test_the_error_message_is_kept():
    verdict = rc.classify(70, None, None, SPLIT, error="equisa: internal error: KeyError: 'x'")
    assert verdict["reason"] == "exit 70: equisa: internal error: KeyError: 'x'"
    assert rc.error_message("noise\nequisa: internal error: boom (run with --debug)\n") == \
        "equisa: internal error: boom (run with --debug)"


def test_an_exit_code_that_contradicts_the_status_is_recorded():
    verdict = rc.classify(21, "fixed", passing(), SPLIT)
    assert verdict["verdict"] == "correct"
    assert verdict["exit_status_mismatch"] == "exit 21 with status fixed"


# -------------------------------------------------------------------------------------------------
# Ground truth and summary


BUG = lc.Bug(id="demo-01", package="demo", kind="wrong-comparison", file="demo/mod.py",
             function="demo.mod.run", original="a > 1", replacement="a >= 1")
DIFF = """\
diff --git a/demo/mod.py b/demo/mod.py
--- a/demo/mod.py
+++ b/demo/mod.py
@@ -1,2 +1,2 @@
 def run(a):
-    return a >= 1
+    return a > 1
"""


def test_ground_truth_columns():
    original = "def run(a):\n    return a > 1\n"
    facts = rc.ground_truth(BUG, "demo.mod.run", DIFF, original, original)
    assert facts["same_function"] and facts["same_file"] and facts["exact_revert"] and facts["ast_revert"]
    reformatted = "def run(a):\n    return (a > 1)  # fixed\n"
    facts = rc.ground_truth(BUG, "demo.mod.run", DIFF, original, reformatted)
    assert not facts["exact_revert"] and facts["ast_revert"]
    other = "def run(a):\n    return 1 < a\n"
    facts = rc.ground_truth(BUG, "demo.mod.helper", DIFF, original, other)
    assert facts["same_function"] is False and not facts["ast_revert"]
    assert rc.ground_truth(BUG, None, "", original, None)["same_function"] is None
    assert rc.diff_files(DIFF) == ["demo/mod.py"]


def test_summary_counts_rates_and_per_package():
    cases = [
        {"id": "a-1", "package": "a", "verdict": "correct", "equisa_status": "fixed", "candidates_tried": 4,
         "validated": 1, "wall_s": 10.0, "diff": "x", "same_function": True, "exact_revert": True,
         "ast_revert": True},
        {"id": "a-2", "package": "a", "verdict": "overfitting", "equisa_status": "fixed",
         "overfitting_in": "kept_aside", "candidates_tried": 8, "validated": 2, "wall_s": 30.0, "diff": "y",
         "same_function": False},
        {"id": "b-1", "package": "b", "verdict": "not_fixed", "equisa_status": "not_fixed",
         "candidates_tried": 20, "validated": 0, "wall_s": 50.0, "diff": ""},
        {"id": "b-2", "package": "b", "verdict": "error", "equisa_status": None, "wall_s": 2.0},
        {"id": "b-3", "package": "b", "dropped": "no failing test"},
    ]
    summary = rc.build_summary(cases)
    assert summary["cases"] == 4 and summary["dropped"] == 1
    assert summary["verdicts"]["correct"] == {"count": 1, "rate": 0.25}
    assert summary["verdicts"]["plausible_only"] == {"count": 0, "rate": 0.0}
    assert summary["fix_rate"] == 0.25
    accepted = summary["accepted_by_equisa"], summary["accepted_correct"], summary["accepted_precision"]
    assert accepted == (2, 1, 0.5)
    assert summary["overfitting_in"]["kept_aside"] == 1
    assert (summary["patches"], summary["same_function"], summary["exact_revert"]) == (2, 1, 1)
    assert summary["candidates_tried"] == {"mean": 10.67, "median": 8, "total": 32}
    assert summary["wall_s"]["median"] == 20.0
    assert summary["packages"]["a"]["verdicts"]["correct"]["rate"] == 0.5
    assert summary["packages"]["b"]["cases"] == 2

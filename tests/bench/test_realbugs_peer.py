"""FauxPy as its study ran it (``bench/realbugs/peer.py``), the study's published ranks
(``study.py``) and the rows the report adds for them (``peer_report.py``). No network."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bench.realbugs.peer import (
    FUNCTION_CSV,
    STATEMENT_CSV,
    StatementPlan,
    best_statement,
    lift,
    read_statements,
    statement_plan,
)
from bench.realbugs.report import build, markdown
from bench.realbugs.steps import tool_order
from bench.realbugs.study import compare, e_inspect, parse_published, parse_subjects, parse_truth

SOURCE = """\
import functools


def plain():
    return 1


@functools.lru_cache()
def decorated(x):
    def inner():
        return x
    return inner()


class Box:
    def method(self):
        return 2

TOP = plain()
"""


def _tree(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir(parents=True)
    (tmp_path / "pkg" / "mod.py").write_text(SOURCE)
    return tmp_path


def test_each_function_takes_its_best_statement_and_statements_outside_functions_are_dropped(tmp_path: Path):
    root = _tree(tmp_path)
    statements = [
        ("pkg/mod.py", 5, 0.2),  # plain
        ("pkg/mod.py", 8, 0.4),  # decorated's decorator line
        ("pkg/mod.py", 12, 0.3),  # decorated
        ("pkg/mod.py", 11, 0.9),  # inner, the smallest span holding it
        ("pkg/mod.py", 17, 0.2),  # Box.method
        ("pkg/mod.py", 19, 1.0),
    ]  # module level: no function
    scored = [(f.qualname, f.first_line, score) for f, score in best_statement(statements, root)]
    assert scored == [
        ("decorated.<locals>.inner", 10, 0.9),
        ("decorated", 8, 0.4),
        ("plain", 4, 0.2),
        ("Box.method", 16, 0.2),
    ]  # a tie keeps source order


def test_lift_reads_fauxpy_statement_entities_and_writes_function_entities(tmp_path: Path):
    root = _tree(tmp_path / "copy")
    out = tmp_path / "out"
    out.mkdir()
    (out / STATEMENT_CSV).write_text(
        f"Entity,Score\n{root}/pkg/mod.py::5,0.5\n{root}/pkg/mod.py::17,0.7\n{root}/pkg/gone.py::3,0.9\n"
    )
    assert read_statements(out / STATEMENT_CSV, str(root))[0] == ("pkg/mod.py", 5, 0.5)
    assert lift(out, root) == 2  # a file that is not there holds no function
    assert (out / FUNCTION_CSV).read_text().splitlines() == [
        "Entity,Score",
        "pkg/mod.py::Box.method::16::17,0.7",
        "pkg/mod.py::plain::4::5,0.5",
    ]
    assert lift(tmp_path / "nothing", root) is None


def test_the_plan_takes_the_studys_test_files_and_always_the_verified_failing_tests(tmp_path: Path):
    root = _tree(tmp_path)
    (root / "tests").mkdir()
    for name in ("test_a.py", "test_b.py"):
        (root / "tests" / name).write_text("")
    record = {
        "scope": ["tests/test_b.py"],
        "failing_targets": ["tests/test_b.py::T::test_x", "tests/test_b.py::y"],
    }
    study = {
        "setup": {
            "tests": ["tests/test_a.py", "tests/test_gone.py"],
            "src": "pkg",
            "exclude": ["env", "tests"],
        },
        "published": {"time_s": 40.0},
    }
    plan = statement_plan(record, study, root, ["tests"])
    assert plan == StatementPlan(
        ["tests/test_a.py", "tests/test_b.py"],
        "pkg",
        ["tests"],  # no env/ here
        ["tests/test_b.py::T::test_x", "tests/test_b.py::y"],
        "study",
    )
    assert plan.failing_list() == "[tests/test_b.py::T::test_x,tests/test_b.py::y]"
    slow = statement_plan(record, {**study, "published": {"time_s": 2000.0}}, root, ["tests"])
    assert slow.tests == ["tests/test_b.py"] and slow.src == "pkg" and slow.origin.startswith("scope")
    assert slow.exclude == ["tests"]
    alone = statement_plan(record, None, root, ["tests"])
    assert (alone.tests, alone.src, alone.exclude, alone.origin) == (
        ["tests/test_b.py"],
        ".",
        ["tests"],
        "scope",
    )


def test_three_tools_rotate_which_goes_first():
    assert tool_order(0) == ("equisa", "fauxpy") and tool_order(1) == ("fauxpy", "equisa")
    firsts = [tool_order(i, statement=True)[0] for i in range(4)]
    assert firsts == ["equisa", "fauxpy", "fauxpy_statement", "equisa"]
    assert sorted(tool_order(2, statement=True)) == ["equisa", "fauxpy", "fauxpy_statement"]


PUBLISHED = """\
project_name,bug_number,granularity,technique,crashing,predicate,mutable_bug,percentage_of_mutants_on_ground_truth,\
experiment_time_seconds,e_inspect,is_bug_localized,exam_score,java_exam_score,output_length,cumulative_distance,\
sv_comp_overall_score
black,1,Function,Tarantula,0,0,0,0.0,132.3,7.0,1,0.02,0.02,265,,
black,1,Function,Ochiai,0,0,0,0.0,132.3,4.0,1,0.0099,0.0099,265,,
fastapi,2,Function,Ochiai,0,0,0,0.0,7.29,100.0,0,0.65,0.65,45,,
keras,1,Function,Ochiai,0,0,0,0.0,7.29,1.0,1,0.65,0.65,45,,
"""

SUBJECTS = """\
#,PYTHON_V,BENCHMARK_NAME,BUG_NUMBER,TARGET_DIR,TEST_SUITE,EXCLUDE,TARGET_FAILING_TESTS
1001,3.8,black,1,.,"tests/test_black.py","env;
tests","tests/test_black.py::T::test_a"
2002,3.8,fastapi,2,fastapi,"tests/a.py;
tests/b.py",-,"tests/b.py::test_c"
"""


def test_the_published_extract_keeps_ochiai_rows_of_this_benchmarks_projects_only():
    published = parse_published(PUBLISHED)
    assert set(published) == {"black:1", "fastapi:2"}
    assert published["black:1"] == {
        "e_inspect": 4.0,
        "localized": True,
        "exam": 0.0099,
        "ranked": 265,
        "time_s": 132.3,
    }
    assert published["fastapi:2"]["localized"] is False
    subjects = parse_subjects(SUBJECTS)
    assert subjects["black:1"] == {
        "python": "3.8",
        "src": ".",
        "tests": ["tests/test_black.py"],
        "exclude": ["env", "tests"],
        "failing": ["tests/test_black.py::T::test_a"],
    }
    assert (
        subjects["fastapi:2"]["tests"] == ["tests/a.py", "tests/b.py"]
        and subjects["fastapi:2"]["exclude"] == []
    )
    truth = parse_truth(
        json.dumps(
            {
                "black:1": [{"FILE_NAME": "black.py", "FUNCTIONS": ["f::1::9", "g::10::12"]}],
                "keras:1": [{"FILE_NAME": "k.py", "FUNCTIONS": ["h::1::2"]}],
            }
        )
    )
    assert truth == {"black:1": ["black.py::f::1::9", "black.py::g::10::12"]}


def _their_e_inspect(start: int, tie: int, faulty: int) -> float:
    """The study's sum over binomials, written out, to check the closed form against."""
    total = sum(k * math.comb(tie - k - 1, faulty - 1) for k in range(1, tie - faulty + 1))
    return start + total / math.comb(tie, faulty)


@pytest.mark.parametrize(
    ("scores", "faulty", "expected"),
    [
        ([0.9, 0.5, 0.5, 0.5, 0.1], [False, False, True, False, False], _their_e_inspect(2, 3, 1)),  # 3.0
        ([0.5] * 5, [True, False, True, False, False], _their_e_inspect(1, 5, 2)),  # 2.0
        ([0.5] * 4 + [0.9], [False, True, True, True, False], _their_e_inspect(2, 4, 3)),
        ([0.9, 0.3], [True, False], 1.0),
        ([0.9, 0.3], [False, False], None),
    ],
)
def test_the_study_rank_rule_counts_several_fix_functions_in_a_tie(scores, faulty, expected):
    got = e_inspect(scores, faulty)
    assert got == expected if expected is None else math.isclose(got, expected)


def test_a_rank_is_compared_with_the_published_one():
    assert compare(4.0, {"e_inspect": 4.0, "localized": True}) == "same"
    assert compare(2.0, {"e_inspect": 4.0, "localized": True}) == "better"
    assert compare(6.5, {"e_inspect": 4.0, "localized": True}) == "worse"
    assert compare(None, {"e_inspect": 100.0, "localized": False}) == "same"
    assert compare(3.0, {"e_inspect": 100.0, "localized": False}) == "better"
    assert compare(None, {"e_inspect": 2.0, "localized": True}) == "worse"
    assert compare(1.0, None) == "no published rank"


def _bug(
    results: Path, name: str, equisa: list[tuple[str, float]], statement: list[tuple[str, int, float]]
) -> None:
    """EQUISA ranks functions a/b/c (b is the fix); FauxPy's function mode puts b last."""
    lines = {"a": 1, "b": 10, "c": 20}
    folder = results / name
    folder.mkdir(parents=True)
    project, bug = name.split("-")
    ranking = [
        {
            "fqn": f"pkg.mod.{n}",
            "file": "pkg/mod.py",
            "start_line": lines[n],
            "end_line": lines[n] + 2,
            "confidence": c,
        }
        for n, c in equisa
    ]
    (folder / "equisa_report.json").write_text(json.dumps({"ranking": ranking}))
    (folder / "fauxpy_Scores_Ochiai.csv").write_text(
        "Entity,Score\n/copy/pkg/mod.py::a::1::3,0.9\n/copy/pkg/mod.py::b::10::12,0.1\n"
    )
    (folder / FUNCTION_CSV).write_text(
        "Entity,Score\n"
        + "".join(f"pkg/mod.py::{n}::{first}::{first + 2},{score}\n" for n, first, score in statement)
    )
    truth = {"fqn": "pkg.mod.b", "file": "pkg/mod.py", "first_line": 10, "def_line": 10, "end_line": 12}
    (folder / "run.json").write_text(
        json.dumps(
            {
                "project": project,
                "bug": int(bug),
                "truth": {"functions": [truth]},
                "equisa": {"returncode": 0, "wall_s": 4.0},
                "fauxpy": {"returncode": 1, "wall_s": 2.0, "copy_root": "/copy"},
                "fauxpy_statement": {"returncode": 1, "wall_s": 8.0, "copy_root": "/copy"},
            }
        )
    )


def test_the_report_sets_equisa_beside_the_statement_mode_and_the_published_ranks(tmp_path: Path):
    _bug(tmp_path, "black-1", [("b", 0.9), ("a", 0.1)], [("b", 10, 0.8), ("a", 1, 0.8), ("c", 20, 0.1)])
    _bug(tmp_path, "black-2", [("a", 0.9), ("b", 0.1)], [("b", 10, 0.9), ("a", 1, 0.2)])
    _bug(tmp_path, "luigi-3", [("b", 0.9), ("a", 0.1)], [("a", 1, 0.9), ("c", 20, 0.5), ("b", 10, 0.1)])
    _bug(tmp_path, "luigi-4", [("b", 0.9), ("a", 0.1)], [("b", 10, 0.9)])  # not in the study
    study = {
        "black:1": {"published": {"e_inspect": 1.5, "localized": True, "ranked": 3}, "truth": []},
        "black:2": {"published": {"e_inspect": 2.0, "localized": True, "ranked": 2}, "truth": []},
        "luigi:3": {
            "published": {"e_inspect": 40.0, "localized": False, "ranked": 2},
            "truth": ["luigi/x.py::b::10::12"],
        },
    }
    data = build(tmp_path, [], study=study)
    assert data["tools"] == ["equisa", "fauxpy", "fauxpy_statement"]
    assert data["summary"]["total"]["fauxpy_statement"]["top1"] == 2  # luigi-4 counts in the main table
    peer = data["peer"]
    assert peer["bugs"] == ["black:1", "black:2", "luigi:3"]
    rows = peer["total"]["rows"]
    assert [rows[r]["top1"] for r in ("equisa", "fauxpy_statement", "fauxpy", "published")] == [2, 1, 0, 0]
    assert [rows[r]["top3"] for r in ("equisa", "fauxpy_statement", "fauxpy", "published")] == [3, 3, 3, 2]
    assert rows["published"]["missing"] == 1
    assert peer["total"]["lead"]["fauxpy_statement"] == {"top1": 2.0, "top3": 1.0, "top5": 1.0}
    assert peer["total"]["lead"]["published"]["top1"] is None
    assert peer["per_project"]["luigi"]["rows"]["equisa"]["bugs"] == 1
    assert peer["total"]["median_wall_ratio_equisa_over_statement"] == 0.5
    status = {item["bug"]: (item["ours"], item["status"]) for item in peer["comparison"]}
    assert status == {"black:1": (1.5, "same"), "black:2": (1.0, "better"), "luigi:3": (3.0, "better")}
    assert peer["matches"] == 1
    hints = {item["bug"]: item["hints"] for item in peer["comparison"]}
    assert hints["luigi:3"] == ["truth differs: only ours b; only theirs b", "ranked 3 here, 2 there"]
    assert hints["black:1"] == ["truth differs: only ours b; only theirs none"]
    text = markdown(data)
    assert "## The peer at its best" in text and "the same on 1 of 3 bugs" in text
    assert (
        "| **all** | FauxPy statement mode, best statement (published, e_inspect) | 3 | 0 | 2 | 2 | 1 |"
        in text
    )

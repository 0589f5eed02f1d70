"""``bench/realbugs/report.py``: ranks from the raw outputs, and EQUISA's first answer beside its
final ranking (from the same report)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.realbugs.report import build


def _node(fqn: str, confidence: float, line: int) -> dict:
    return {"fqn": fqn, "file": "pkg/mod.py", "start_line": line, "end_line": line + 2,
            "confidence": confidence}


def _bug(results: Path, name: str, ranking: list[dict], first: list[dict], cost: dict | None = None,
         returncode: int = 0) -> None:
    folder = results / name
    folder.mkdir(parents=True)
    project, bug = name.split("-")
    (folder / "equisa_report.json").write_text(json.dumps({"ranking": ranking, "first_answer": first,
                                                           "screening_cost": cost}))
    (folder / "fauxpy_Scores_Ochiai.csv").write_text("Entity,Score\n/copy/pkg/mod.py::b::10::12,0.9\n")
    truth = {"fqn": "pkg.mod.b", "file": "pkg/mod.py", "first_line": 10, "def_line": 10}
    (folder / "run.json").write_text(json.dumps({
        "project": project, "bug": int(bug), "truth": {"functions": [truth]},
        "equisa": {"returncode": returncode, "wall_s": 4.0},
        "fauxpy": {"returncode": 1, "wall_s": 2.0, "copy_root": "/copy"},
    }))


def test_the_first_answer_is_ranked_beside_the_final_ranking_and_top1_moves_are_named(tmp_path: Path):
    def a(confidence: float) -> dict:
        return _node("pkg.mod.a", confidence, 1)

    def b(confidence: float) -> dict:  # the fix's function
        return _node("pkg.mod.b", confidence, 10)

    def c(confidence: float) -> dict:
        return _node("pkg.mod.c", confidence, 20)

    _bug(tmp_path, "black-1", ranking=[b(0.9), a(0.05), c(0.05)], first=[a(0.5), b(0.3), c(0.2)])  # gained
    _bug(tmp_path, "black-2", ranking=[a(0.6), b(0.3), c(0.1)], first=[b(0.4), c(0.2), a(0.1)])  # lost
    _bug(tmp_path, "luigi-3", ranking=[b(0.5), a(0.5)], first=[b(0.5), a(0.5)])  # tied first: rank 1.5
    data = build(tmp_path, [])
    first = data["summary"]["total"]["equisa_first_answer"]
    assert first["bugs"] == 3
    assert (first["first_top1"], first["final_top1"]) == (1, 1)
    assert (first["first_top3"], first["final_top3"]) == (3, 3)
    assert first["top1_gained"] == ["black:1"] and first["top1_lost"] == ["black:2"]
    ranks = {f"{case['project']}:{case['bug']}": (case["equisa_first"]["rank"], case["equisa"]["rank"])
             for case in data["cases"]}
    assert ranks == {"black:1": (2, 1), "black:2": (1, 2), "luigi:3": (1.5, 1.5)}


def test_runs_whose_screening_budget_left_functions_out_are_counted(tmp_path: Path):
    nodes = [_node("pkg.mod.b", 0.6, 10), _node("pkg.mod.a", 0.4, 1)]
    cost = {"functions": ["pkg.mod.b", "pkg.mod.a"], "estimate_s": 3.0, "traced_s": 1.0, "ratio": 0.25,
            "floor_s": 0.5}
    _bug(tmp_path, "black-1", ranking=nodes, first=nodes, cost={**cost, "left_out": ["pkg.mod.a"]})
    every = {**cost, "left_out": ["pkg.mod.b", "pkg.mod.a"]}
    _bug(tmp_path, "black-2", ranking=nodes, first=nodes, cost=every)
    _bug(tmp_path, "black-3", ranking=nodes, first=nodes, cost={**cost, "left_out": []})
    _bug(tmp_path, "black-4", ranking=nodes, first=nodes)  # no screening
    data = build(tmp_path, [])
    assert {c["bug"]: c["equisa_screening_left_out"] for c in data["cases"]} == {
        1: (1, 2), 2: (2, 2), 3: (0, 2), 4: None}
    total = data["summary"]["total"]
    assert (total["equisa_screening_partial"], total["equisa_screening_none"]) == (2, 1)


def test_a_ranking_exits_0_or_25_as_before_and_is_no_crash(tmp_path: Path):
    """``equisa localize`` exits 0 on a ranking, converged or not; results kept from revisions that
    ended an unconverged ranking with 25 count as ranked too. Any other code is a crash."""
    nodes = [_node("pkg.mod.b", 0.6, 10), _node("pkg.mod.a", 0.4, 1)]
    for bug, code in ((1, 0), (2, 25), (3, 7)):
        _bug(tmp_path, f"black-{bug}", ranking=nodes, first=nodes, returncode=code)
    crashes = {c["bug"]: c["equisa"]["crash"] for c in build(tmp_path, [])["cases"]}
    assert crashes[1] is None and crashes[2] is None and crashes[3].startswith("exit 7")

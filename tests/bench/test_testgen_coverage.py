"""The test-generation benchmark's summary: medians over the modules both tools finished and over
all of them (a missing module counted 0), and the order check's failures counted per tool."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import testgen_coverage as tc  # noqa: E402


def _figures(coverage: float, score: float, order_failures: list[str] | None = None) -> dict:
    data = {"coverage": coverage, "mutation_score": score, "wall_s": 1.0}
    if order_failures is not None:
        data["order_failures"] = order_failures
    return data


def test_medians_over_the_modules_both_finished_and_over_all_with_missing_ones_as_zero():
    rows = [
        {"id": "a", "equisa": _figures(90, 70, []), "pynguin": _figures(80, 50, ["t::x"])},
        {"id": "b", "equisa": _figures(60, 40, ["t::y", "t::z"]), "pynguin": _figures(70, 60, [])},
        {"id": "c", "equisa": _figures(85, 65, []), "pynguin": {"error": "killed"}},
    ]
    summary = tc.summarize(rows)
    equisa, pynguin = summary["equisa"], summary["pynguin"]
    assert (equisa["median_coverage_both"], pynguin["median_coverage_both"]) == (75, 75)
    assert (equisa["median_mutation_score_both"], pynguin["median_mutation_score_both"]) == (55, 55)
    assert (equisa["median_coverage_all"], pynguin["median_coverage_all"]) == (85, 70)
    assert (equisa["order_failures"], pynguin["order_failures"]) == (2, 1)
    assert (equisa["order_checked_modules"], pynguin["order_checked_modules"]) == (3, 2)
    assert summary["equisa_vs_pynguin"]["modules"] == 2


def test_median_branch_coverage_counts_a_missing_module_as_zero():
    rows = [
        {"id": "a", "equisa": {**_figures(90, 70), "branch_coverage": 80}, "pynguin": {"error": "killed"}},
        {"id": "b", "equisa": {**_figures(60, 40), "branch_coverage": 50},
         "pynguin": {**_figures(70, 60), "branch_coverage": 66}},
    ]
    equisa, pynguin = tc.summarize(rows)["equisa"], tc.summarize(rows)["pynguin"]
    assert (equisa["median_branch_coverage_both"], pynguin["median_branch_coverage_both"]) == (50, 66)
    assert (equisa["median_branch_coverage_all"], pynguin["median_branch_coverage_all"]) == (65, 33)


def test_every_module_comes_from_a_pinned_project_and_the_ids_are_unique():
    ids = [m.id for m in tc.MODULES]
    assert len(ids) == len(set(ids)) >= 22
    folders = {p.folder: p for p in tc.projects()}
    corpus = [m for m in tc.MODULES if not m.project.startswith("examples/")]
    assert {m.project for m in corpus} <= set(folders)
    assert all(m.venv == f"{m.project}-equisa" for m in corpus)
    assert all(len(p.sha256) == 64 for p in folders.values())

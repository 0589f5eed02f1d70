"""``bench/layout_ranks.py``'s comparison of two rankings and its table (the runs themselves need
the real-bug benchmark's prepared bugs and are not run here)."""

from __future__ import annotations

import json

from bench import layout_ranks


def test_identical_rankings_are_identical_and_a_changed_one_says_where():
    before = [("pkg.mod.f", 0.5), ("pkg.mod.g", 0.25)]
    assert layout_ranks.compare(before, list(before)) == {"identical": True, "first_difference": None}
    assert layout_ranks.compare(before, [("pkg.mod.f", 0.5), ("pkg.mod.h", 0.25)]) == {
        "identical": False, "first_difference": 1}
    assert layout_ranks.compare(before, before[:1]) == {"identical": False, "first_difference": 1}


def test_the_ranking_is_read_in_the_reports_order_with_rounded_confidences(tmp_path):
    report = tmp_path / "r.json"
    report.write_text(json.dumps({"ranking": [{"fqn": "a.b", "confidence": 0.1234567891},
                                              {"fqn": "a.c", "confidence": 0.1}]}))
    assert layout_ranks.ranking_of(report) == [("a.b", 0.123457), ("a.c", 0.1)]
    assert layout_ranks.ranking_of(tmp_path / "missing.json") == []


def test_the_table_counts_the_identical_rankings():
    rows = [{"bug": "black-3", "rank_before": 1.0, "rank_after": 1.0, "ranked": 9, "identical": True,
             "first_difference": None, "exit_before": 0, "exit_after": 0},
            {"bug": "scrapy-2", "rank_before": 2.0, "rank_after": 3.0, "ranked": 5, "identical": False,
             "first_difference": 1, "exit_before": 25, "exit_after": 25}]
    text = layout_ranks.table(rows, {"before": "a" * 40, "after": "b" * 40})
    assert "| black-3 | 1.0 | 1.0 | 9 | yes | 0/0 |" in text
    assert "| scrapy-2 | 2.0 | 3.0 | 5 | no (from #1) | 25/25 |" in text
    assert text.rstrip().endswith("1 of 2 rankings identical.")

"""The provisioning benchmark's reading of a report (``bench.provisioning``)."""

from __future__ import annotations

from bench.provisioning import _rank, report_table


def test_the_truths_rank_averages_its_ties_and_is_none_when_unranked():
    report = {"ranking": [{"fqn": "a.f", "confidence": 0.5}, {"fqn": "a.g", "confidence": 0.2},
                          {"fqn": "a.h", "confidence": 0.2}]}
    assert _rank(report, {"a.f"}) == 1
    assert _rank(report, {"a.h"}) == 2.5
    assert _rank(report, {"b.x"}) is None
    assert _rank({}, {"a.f"}) is None


def test_the_table_shows_failed_builds_with_their_message_and_the_medians_of_the_built():
    built = {"id": "luigi:3",
             "cold": {"returncode": 0, "python": "3.8.18", "made_from": ["setup.py", "tox.ini"],
                      "build_s": 40.0, "wall_s": 60.0, "rank": 1, "built": True},
             "warm": {"returncode": 0, "build_s": 0.4, "wall_s": 12.0, "built": True, "reused": True}}
    failed = {"id": "black:10", "cold": {"returncode": 16, "wall_s": 30.0,
                                         "message": "building the test environment failed | a|b"}}
    table = report_table([built, failed])
    assert "| luigi:3 | 0 | 3.8.18 | setup.py, tox.ini | 40.0 | 0.4 | 60.0 | 12.0 | 1 |" in table
    assert "| black:10 | 16 | - |" in table and "a/b" in table
    assert "Built 1 of 2; median build cold 40.0 s, warm 0.40 s." in table

"""The screening's cost replay (``bench/screening_cost.py``): a run screens only where its screening
costs at most beta times its trace; its answer and its wall time follow."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import screening_cost as sc  # noqa: E402


def _run(project: str, first: float, final: float, wall: float, screening: float, estimate: float) -> sc.Run:
    return sc.Run(project=project, bug="1", first_rank=first, final_rank=final, wall_s=wall, fauxpy_s=1.0,
                  screening_s=screening, estimate_s=estimate)


def test_a_run_screens_only_where_the_screening_is_cheap_next_to_its_trace():
    cheap = _run("p", first=2.0, final=1.0, wall=3.0, screening=1.0, estimate=1.0)   # trace 2 s
    dear = _run("q", first=3.0, final=1.0, wall=6.0, screening=5.0, estimate=0.1)    # trace 1 s
    never = sc.replay([cheap, dear], 0.0, oracle=True)
    assert (never["top1"], never["screened"], never["median_ratio"]) == (0, 0, 1.5)  # (2 + 1) / 2
    half = sc.replay([cheap, dear], 0.5, oracle=True)
    assert (half["top1"], half["top3"], half["screened"], half["median_ratio"]) == (1, 2, 1, 2.0)
    # The estimate calls the dear one cheap: it screens both, and pays the whole runs.
    guessed = sc.replay([cheap, dear], 0.5, oracle=False)
    assert (guessed["top1"], guessed["screened"], guessed["median_ratio"]) == (2, 2, 4.5)


def test_the_estimate_counts_each_screened_functions_mutants_times_its_failing_tests(tmp_path):
    blob = tmp_path / "trace.json.gz"
    blob.write_bytes(gzip.compress(json.dumps({"nodes": [], "tests": [
        {"test_id": "t::fails", "outcome": "failed", "duration": 0.03},
        {"test_id": "t::passes", "outcome": "passed", "duration": 5.0}]}).encode()))
    objects = [{"key": "blobs/x.json.gz", "uri": str(blob)}]
    (tmp_path / "manifest.json").write_text(json.dumps({"objects": objects}))
    report = {"artifacts": str(tmp_path),
              "ranking": [{"fqn": "m.small", "start_line": 1, "end_line": 3},
                          {"fqn": "m.big", "start_line": 10, "end_line": 100}]}
    screened = [{"target": "m.small", "tests_run": ["t::fails", "t::passes"]},
                {"target": "m.big", "tests_run": ["t::fails"]}]
    # 3 lines: 6 mutants; 91 lines: the cap (40); each round runs the failing test (30 ms + 10 ms).
    expected = sc.SETUP_S + (6 + sc.MUTANTS_CAP) * (0.03 + sc.ROUND_TEST_S) / sc.PROCESSES
    assert abs(sc.estimate(report, screened) - expected) < 1e-9
    assert sc.estimate(report, []) == 0.0
    assert sc.estimate({"artifacts": str(tmp_path / "gone")}, screened) == float("inf")

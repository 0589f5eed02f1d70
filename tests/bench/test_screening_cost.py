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


def _machine_run(project: str, first: float, final: float, wall: float, estimate: float, traced: float,
                 after: float = 0.0) -> sc.Run:
    """A run whose report records the machine's own estimate and trace seconds (a screening of 1 s)."""
    return sc.Run(project=project, bug="1", first_rank=first, final_rank=final, wall_s=wall, fauxpy_s=1.0,
                  screening_s=1.0, estimate_s=estimate, traced_s=traced, after_s=after)


def test_runs_with_the_machines_own_estimate_compare_it_with_the_seconds_it_traced_in():
    # Traced in 1 s (start-up aside): beta 1 screens the 0.8 s estimate, not the 1.5 s one.
    cheap = _machine_run("p", first=2.0, final=1.0, wall=3.0, estimate=0.8, traced=1.0)
    dear = _machine_run("q", first=2.0, final=1.0, wall=6.0, estimate=1.5, traced=1.0, after=2.0)
    row = sc.replay([cheap, dear], 1.0, oracle=False)
    # The declined run loses its screening and what came after it: 6 - 1 - 2 = 3 s.
    assert (row["top1"], row["screened"], row["median_ratio"]) == (1, 1, 3.0)
    assert dear.reference_s == 1.0 and dear.trace_s == 3.0


def test_the_fitted_beta_keeps_the_median_within_its_bound_and_is_validated_on_the_other_projects():
    # Project a: screening pays cheaply (estimate 0.5 x trace); b: it pays but costs 3 x trace.
    runs = [_machine_run("a", first=3.0, final=1.0, wall=2.0, estimate=0.5, traced=1.0) for _ in range(3)]
    runs += [_machine_run("b", first=3.0, final=1.0, wall=2.0, estimate=3.0, traced=1.0) for _ in range(2)]
    # Screening everything: 5 Top-1 at a median of 2.0; only a's: 3 at a median of 2.0 (three of five
    # runs screen); a's alone fit a bound of 2.0, none of 1.0.
    best = sc.fit(runs, max_median_ratio=2.0)
    assert (best["top1"], best["median_ratio"]) == (5, 2.0) and best["beta"] >= 3.0
    bounded = sc.fit(runs, max_median_ratio=1.0)
    assert bounded["screened"] == 0 and bounded["median_ratio"] == 1.0
    lopo = sc.cross_validated(runs, max_median_ratio=2.0)
    # Held out, a's runs get the beta fitted on b's (which screens b's at 3.0), and b's the one fitted
    # on a's alone: the smallest beta with a's Top-1 (0.5), which declines b's.
    assert lopo["betas"]["a"] >= 3.0 and lopo["betas"]["b"] == 0.5
    assert (lopo["top1"], lopo["top3"]) == (3, 5)

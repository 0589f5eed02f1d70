"""bench/process_starts.py's pure parts: the targets read from prepared cases, and a run's kind."""

from __future__ import annotations

import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))
import process_starts  # noqa: E402


def test_a_prepared_bug_is_localized_as_the_repair_benchmark_runs_it_and_a_missing_one_is_skipped(tmp_path):
    case = {"buggy": "/cache/scrapy-1/buggy", "python": "/venvs/scrapy/bin/python",
            "selection": ["tests/test_a.py::T::test_one", "tests/test_a.py::T::test_two"]}
    (tmp_path / "bugsinpy-scrapy-1").mkdir()
    (tmp_path / "bugsinpy-scrapy-1" / "case.json").write_text(json.dumps(case))
    found, skipped = process_starts.targets(["scrapy-1", "luigi-10"], tmp_path)
    assert found == {
        "invoicing": ["examples/invoicing"],
        "scrapy-1": ["/cache/scrapy-1/buggy", "--python", "/venvs/scrapy/bin/python", "--tests",
                     "tests/test_a.py::T::test_one", "tests/test_a.py::T::test_two"],
    }
    assert skipped == ["luigi-10"]


def test_a_run_is_named_by_its_probe_options():
    shard = {"--equisa-out", "--equisa-trace", "--equisa-shard", "--equisa-serve", "--equisa-rerun-failures"}
    assert process_starts.kind_of(shard) == "trace"
    screening = {"--equisa-out", "--equisa-trace", "--equisa-mutants", "--equisa-select"}
    assert process_starts.kind_of(screening) == "mutants"
    assert process_starts.kind_of({"--equisa-out", "--equisa-record", "--equisa-select"}) == "record"
    assert process_starts.kind_of({"--equisa-out", "--equisa-select"}) == "other"

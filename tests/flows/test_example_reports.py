"""The repair reports of the four bundled examples stay what they were, timings and ids aside.

A refactoring of the loops (issue 18: state machines in the core, thin flows around them) must not
change what EQUISA decides. This runs ``equisa repair --no-llm`` on each example in ``examples/``
and compares its JSON report, normalized, with the one kept in ``tests/data/example_reports/``.

Normalized means: run ids, paths and timings dropped, floats rounded to 9 digits, and the records of
the parallel mutant screenings sorted (``comparable``). Everything else — the ranking, the
confidences, every inspection and its evidence, the candidates, the checks, the verdict and the diff
— must be equal.

When a change of behaviour is intended, regenerate the kept reports and review their diff:
``UPDATE_EXAMPLE_REPORTS=1 uv run pytest tests/flows/test_example_reports.py``.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.name for p in (ROOT / "examples").iterdir() if (p / "pyproject.toml").is_file())
KEPT = ROOT / "tests" / "data" / "example_reports"
EQUISA = shutil.which("equisa") or str(Path(sys.executable).with_name("equisa"))

#: Keys whose values change from run to run or machine to machine: timings (the screening's estimate
#: too, made of the tests' durations), ids, where things were written, the interpreter that ran the
#: suite.
VOLATILE_KEYS = frozenset({"seconds", "wall_seconds", "elapsed_s", "started", "finished", "run_id",
                           "artifacts", "flow_run_id", "created", "duration_s", "timings", "environment",
                           "traced_s", "estimate_s"})


def normalized(value: Any) -> Any:
    """``value`` without volatile keys, with floats rounded so that summation order does not show."""
    if isinstance(value, dict):
        return {k: normalized(v) for k, v in sorted(value.items()) if k not in VOLATILE_KEYS}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    if isinstance(value, float):
        return round(value, 9)
    return value


#: What a screening record says that depends on timing: the order parallel screenings finished in
#: (iteration, confidences before and after) and the tests of its shard (shards are balanced by the
#: tests' measured durations).
TIMING_DEPENDENT = ("iteration", "posterior", "prior", "tests_run")


def comparable(report: dict[str, Any]) -> Any:
    """The normalized report, with the mutant-screening records sorted by their target (and the
    functions the screening's estimate counts sorted by name).

    Screenings run in parallel, in shards balanced by measured durations, and their evidence is
    counted as each one finishes, so the order of their records, their iteration numbers, their
    tests and the confidence before and after each one vary from run to run; what each found, and
    the final confidences (a product of the same factors), do not.
    """
    report = normalized(report)
    localization = report.get("localization") or {}
    records = localization.get("inspections") or []
    screening = [r for r in records if r.get("strategy") == "mutant-screening"]
    if screening:
        others = [r for r in records if r.get("strategy") != "mutant-screening"]
        screening = sorted(({k: v for k, v in r.items() if k not in TIMING_DEPENDENT} for r in screening),
                           key=lambda r: json.dumps(r, sort_keys=True))
        localization["inspections"] = screening + others
    cost = localization.get("screening_cost")
    if cost:  # functions of equal confidence come in the order the trace's shards reported them
        cost["functions"] = sorted(cost["functions"])
    return report


def test_every_example_has_a_kept_report():
    assert EXAMPLES, "no examples found"
    assert sorted(p.stem for p in KEPT.glob("*.json")) == EXAMPLES


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_repair_report_of_each_example_is_unchanged(example, tmp_path, cli_env):
    out = tmp_path / "repair.json"
    command = [EQUISA, "repair", str(ROOT / "examples" / example), "--no-llm", "--json", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, env=cli_env, timeout=900)
    assert out.is_file(), done.stderr
    report = comparable(json.loads(out.read_text()))
    kept = KEPT / f"{example}.json"
    if os.environ.get("UPDATE_EXAMPLE_REPORTS") == "1":
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    expected = json.loads(kept.read_text())
    assert report == expected, (
        f"the repair report of examples/{example} changed (exit {done.returncode}); if intended, "
        "regenerate with UPDATE_EXAMPLE_REPORTS=1 and review the diff:\n" + json_diff(expected, report))


def json_diff(expected: Any, actual: Any, lines: int = 80) -> str:
    """The first ``lines`` lines of a unified diff between two JSON values."""
    dump = [json.dumps(v, indent=1, sort_keys=True).splitlines() for v in (expected, actual)]
    return "\n".join(list(difflib.unified_diff(*dump, "kept", "now", lineterm=""))[:lines])

"""How many calls with a known answer the evidence of a fix must check
(``equisa_core.validation.divergence.MIN_CHECKED_CALLS``), fitted on the real-bug repair benchmark's
judged patches (``bench.realrepair``) with leave-one-group-out validation: a Refactory question, or
a BugsInPy project, is held out in turn.

The patches that count are those whose verdict hangs on that count: claimed ``fixed`` (a higher
threshold would withhold them), or withheld only because too few calls were checked. Each is a
point (``checked``: the passing tests' calls and the generated calls near them, compared with the
original, and the failing tests' different calls, which the candidate passes; with no passing
test's call, the failing tests' alone; ``correct``: what the judge said). A threshold ``t`` says
``fixed`` on the points with ``checked >= t``; its score is ``correct - WRONG_COST * wrong``
(``WRONG_COST`` = 49: a precision of 0.98, issue 46's target, breaks even). The fit takes the best
score, and of equal ones the highest threshold.

    uv run python -m bench.oracle_calls_fit --versions 53ff87c [--cache ~/.cache/equisa-bench/realrepair]
        [--out bench/results/oracle_calls_fit_<date>.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.realrepair.patches import JudgedPatch, judged_patches

#: A wrong ``fixed`` costs this many correct ones: a precision of 0.98 breaks even.
WRONG_COST = 49
THRESHOLDS = tuple(range(1, 7))
#: The doubts of too few checked calls, as versions before and after the count of every check word them.
NO_PASSING_CALL = "no passing test's call of the function could be compared"
TOO_FEW_CHECKED = "the tests check only "
UNDECIDED_PREFIX = "passes the suite and every check that could run, but the evidence does not reach a fix: "
ORACLE_EVIDENCE = "the failing tests' assertions check"


@dataclass(frozen=True)
class Point:
    """One judged patch whose verdict hangs on the count of checked calls."""

    bug_id: str
    group: str  #: ``refactory-Q3``, or the BugsInPy project
    checked: int
    correct: bool


def point_of(patch: JudgedPatch) -> Point | None:
    """The patch as a point, or None when its verdict did not hang on the count of checked calls."""
    if patch.report is None or not patch.report.exists():
        return None
    report = json.loads(patch.report.read_text())
    evaluation = next((e for e in report.get("evaluations", ()) if e.get("candidate") == report.get("candidate")),
                      None)
    if evaluation is None:
        return None
    calls = evaluation.get("calls") or {}
    detail = evaluation.get("detail", "")
    doubt = detail[len(UNDECIDED_PREFIX):] if detail.startswith(UNDECIDED_PREFIX) else None
    too_few = doubt is not None and (doubt == NO_PASSING_CALL or doubt.startswith(TOO_FEW_CHECKED)
                                     or doubt.startswith(NO_PASSING_CALL + ", and the failing tests check only"))
    # another check's doubt (overfitting) would withhold it anyway; records without a status are
    # read from their evidence
    assumed = "sound" if ORACLE_EVIDENCE in evaluation.get("evidence", "") else ""
    claimed = evaluation.get("status", assumed) == "sound"
    if not (too_few or claimed):
        return None
    failing = int(calls.get("failing_inputs", calls.get("failing", 0)))
    passing = int(calls.get("recorded", 0))
    checked = failing + passing + int(calls.get("generated", 0)) if passing else failing
    group = f"refactory-Q{patch.question}" if patch.project == "refactory" else patch.project
    return Point(patch.bug_id, group, checked, patch.label in ("correct", "withheld_correct"))


def outcome(points: Sequence[Point], threshold: int) -> dict[str, int]:
    """What ``threshold`` would claim: correct and wrong ``fixed``, and correct ones withheld."""
    claimed = [p for p in points if p.checked >= threshold]
    correct = sum(p.correct for p in claimed)
    return {"claimed": len(claimed), "correct": correct, "wrong": len(claimed) - correct,
            "withheld_correct": sum(p.correct for p in points) - correct}


def fit(points: Sequence[Point]) -> int:
    """The threshold of the best score (``correct - WRONG_COST * wrong``); the highest of equals."""
    def score(t: int) -> tuple[int, int]:
        o = outcome(points, t)
        return o["correct"] - WRONG_COST * o["wrong"], t
    return max(THRESHOLDS, key=score)


def cross_validated(points: Sequence[Point]) -> dict:
    """Leave one group out: each group judged with the threshold fitted on the others."""
    groups = sorted({p.group for p in points})
    totals = {"claimed": 0, "correct": 0, "wrong": 0, "withheld_correct": 0}
    chosen = {}
    for group in groups:
        threshold = fit([p for p in points if p.group != group])
        chosen[group] = threshold
        for key, value in outcome([p for p in points if p.group == group], threshold).items():
            totals[key] += value
    return {"thresholds": chosen, **totals}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.oracle_calls_fit", description=__doc__)
    parser.add_argument("--versions", required=True, help="comma-separated commits whose runs to read")
    parser.add_argument("--cache", type=Path, default=Path("~/.cache/equisa-bench/realrepair"))
    parser.add_argument("--out", type=Path,
                        default=Path("bench/results") / f"oracle_calls_fit_{time.strftime('%Y-%m-%d')}.json")
    args = parser.parse_args(argv)
    versions = [v.strip() for v in args.versions.split(",") if v.strip()]
    points = [p for p in map(point_of, judged_patches(args.cache, versions)) if p is not None]
    if not points:
        print("oracle_calls_fit: no judged patch hangs on the count of checked calls", file=sys.stderr)
        return 2
    data = {
        "versions": versions, "wrong_cost": WRONG_COST, "points": [asdict(p) for p in points],
        "in_sample": {t: outcome(points, t) for t in THRESHOLDS}, "fitted": fit(points),
        "cross_validated": cross_validated(points),
    }
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    for t, o in data["in_sample"].items():
        print(f"t={t}: {o}")
    print(f"fitted {data['fitted']}; leave-one-group-out: {data['cross_validated']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

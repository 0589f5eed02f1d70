"""The report: outcomes per version and source, median wall times, intervals, Refactory's strata.

It reads the raw results only (``<cache>/results/<case>/<commit>.json``); no test is run.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path

from .judge import OUTCOME_LABELS, OUTCOMES
from .refactory import STRATA


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """The 95 % Wilson score interval of a proportion (None when n is 0)."""
    if n == 0:
        return None
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return round(max(0.0, centre - half), 3), round(min(1.0, centre + half), 3)


def summarize(results: Sequence[Mapping]) -> dict:
    """Counts of each outcome, the withheld split, overfitting's place, the median wall time."""
    counts = {o: sum(1 for r in results if r["outcome"] == o) for o in OUTCOMES}
    withheld = {
        w: sum(1 for r in results if r.get("withheld") == w) for w in ("withheld_correct", "withheld_overfit")
    }
    times = [r["wall_s"] for r in results if r.get("wall_s") is not None]
    claimed = counts["correct"] + counts["overfit"]
    return {
        "n": len(results),
        **counts,
        **withheld,
        "overfit_share_of_fixed": round(counts["overfit"] / claimed, 3) if claimed else None,
        "correct_ci95": wilson(counts["correct"], len(results)),
        "median_wall_s": round(statistics.median(times), 1) if times else None,
        "timeouts": sum(1 for r in results if r.get("returncode") is None),
        "overfitting_in": {
            w: sum(1 for r in results if r.get("overfitting_in") == w)
            for w in ("kept_aside", "visible", "both", "unknown")
        },
    }


def build(results_dir: Path, cases: Sequence[Mapping], versions: Sequence[tuple[str, str]]) -> dict:
    """The whole report for the kept ``cases`` and the (label, commit) ``versions``."""
    by_id = {c["id"]: c for c in cases}
    rows: list[dict] = []
    for case in cases:
        for label, commit in versions:
            path = results_dir / case["id"] / f"{commit[:12]}.json"
            if path.exists():
                row = json.loads(path.read_text())
                row["version"] = label
                rows.append(row)
    data: dict = {
        "versions": [{"label": label, "commit": commit} for label, commit in versions],
        "cases": {
            "refactory": sum(1 for c in cases if c["source"] == "refactory"),
            "bugsinpy": sum(1 for c in cases if c["source"] == "bugsinpy"),
        },
        "outcomes": OUTCOME_LABELS,
        "summary": {},
        "by_stratum": {},
        "by_question": {},
        "bugs": [],
    }
    for label, _commit in versions:
        mine = [r for r in rows if r["version"] == label]
        data["summary"][label] = {"all": summarize(mine)} | {
            source: summarize([r for r in mine if r["source"] == source])
            for source in ("refactory", "bugsinpy")
        }
        refactory_rows = [r for r in mine if r["source"] == "refactory"]
        data["by_stratum"][label] = {
            name: summarize([r for r in refactory_rows if by_id[r["id"]].get("stratum") == name])
            for name, _bound in STRATA
        }
        data["by_question"][label] = {
            str(q): summarize([r for r in refactory_rows if by_id[r["id"]].get("question") == q])
            for q in range(1, 6)
        }
        data["summary"][label]["q5_patches_adding_sort"] = sum(
            1 for r in refactory_rows if r.get("adds_sort")
        )
        data["summary"][label]["same_as_dev"] = sum(1 for r in mine if r.get("same_as_dev"))
    for row in rows:
        case = by_id[row["id"]]
        data["bugs"].append(
            {
                k: row.get(k)
                for k in (
                    "id",
                    "source",
                    "version",
                    "commit",
                    "outcome",
                    "withheld",
                    "overfitting_in",
                    "status",
                    "returncode",
                    "wall_s",
                    "reason",
                    "adds_sort",
                    "same_as_dev",
                )
            }
            | {"stratum": case.get("stratum"), "loops": case.get("loops")}
        )
    return data


def _cell(summary: Mapping, key: str) -> str:
    n = summary["n"]
    return f"{summary[key]} ({100 * summary[key] / n:.0f} %)" if n else "0"


def markdown(data: Mapping) -> str:
    """The tables: one row per version and source, then Refactory by distance stratum."""
    lines = [
        "# Real-bug repair benchmark",
        "",
        "Versions: " + ", ".join(f"{v['label']} = `{v['commit'][:10]}`" for v in data["versions"]),
        f"Prepared: {data['cases']['refactory']} Refactory programs, "
        f"{data['cases']['bugsinpy']} BugsInPy bugs.",
        "",
        "| version | source | bugs | correct | overfit | not fixed (withheld correct/overfit) | error "
        "| correct 95 % CI | median s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, per_source in data["summary"].items():
        for source in ("refactory", "bugsinpy", "all"):
            s = per_source[source]
            if not s["n"]:
                continue
            ci = s["correct_ci95"]
            lines.append(
                f"| {label} | {source} | {s['n']} | {_cell(s, 'correct')} | {_cell(s, 'overfit')} | "
                f"{_cell(s, 'not_fixed')} ({s['withheld_correct']}/{s['withheld_overfit']}) | "
                f"{_cell(s, 'error')} | {ci[0]:.2f}–{ci[1]:.2f} | {s['median_wall_s']} |"
            )
    lines += [
        "",
        "Refactory by token distance to the nearest correct program:",
        "",
        "| version | stratum | bugs | correct | overfit | not fixed | error |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, strata in data["by_stratum"].items():
        for name, s in strata.items():
            if s["n"]:
                lines.append(
                    f"| {label} | {name} | {s['n']} | {s['correct']} | {s['overfit']} | {s['not_fixed']} "
                    f"| {s['error']} |"
                )
    lines += ["", "Outcomes: " + "; ".join(f"**{k}**: {v}" for k, v in data["outcomes"].items()) + ".", ""]
    return "\n".join(lines)

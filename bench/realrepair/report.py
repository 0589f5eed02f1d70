"""The report: the precision of ``fixed`` first, then outcomes per version and source, median wall
times, intervals, Refactory's strata.

It reads the raw results only (``<cache>/results/<case>/<commit>.json``); no test is run.

**Precision and recall** (``precision_recall``), per source, per project (the BugsInPy project;
Refactory as one project, ``refactory``, and also per question), each with a 95 % Wilson interval:

- ``fixed``: precision = correct ÷ runs whose report said ``fixed`` (a claimed fix whose diff does
  not apply, or whose run then failed, counts against it); recall = correct ÷ all bugs run.
- ``plausible_only``: precision = withheld correct (the patch passes every hidden and visible test)
  ÷ runs whose report said ``plausible_only``; recall = withheld correct ÷ all bugs run. A high
  precision here is a false alarm rate: good patches that ``fixed`` did not claim.
- ``budget_spent``: runs that reached their time budget (``budget_spent``): the report's
  ``stopped_because`` says "budget", its localization stopped at its "time budget", or the exit
  code is ``judge.BUDGET_EXIT_CODE`` (when set). ``timeouts`` are the runs this bench killed.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path

from .judge import BUDGET_EXIT_CODE, OUTCOME_LABELS, OUTCOMES
from .refactory import STRATA

SOURCES = ("refactory", "bugsinpy")


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """The 95 % Wilson score interval of a proportion (None when n is 0)."""
    if n == 0:
        return None
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return round(max(0.0, centre - half), 3), round(min(1.0, centre + half), 3)


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def budget_spent(row: Mapping) -> bool:
    """Did the run reach its time budget? (see the module's docstring)"""
    if BUDGET_EXIT_CODE is not None and row.get("returncode") == BUDGET_EXIT_CODE:
        return True
    if "budget" in str(row.get("stopped_because") or "").lower():
        return True
    return "time budget" in str(row.get("localization_stopped_because") or "").lower()


def precision_recall(results: Sequence[Mapping]) -> dict:
    """Precision and recall of the ``fixed`` and the ``plausible_only`` verdicts, Wilson intervals."""
    n = len(results)
    claimed = sum(1 for r in results if r.get("status") == "fixed")
    correct = sum(1 for r in results if r.get("status") == "fixed" and r["outcome"] == "correct")
    withheld = sum(1 for r in results if r.get("status") == "plausible_only")
    good = sum(
        1 for r in results if r.get("status") == "plausible_only" and r.get("withheld") == "withheld_correct"
    )
    return {
        "fixed": {
            "claimed": claimed,
            "correct": correct,
            "precision": _ratio(correct, claimed),
            "precision_ci95": wilson(correct, claimed),
            "recall": _ratio(correct, n),
            "recall_ci95": wilson(correct, n),
        },
        "plausible_only": {
            "claimed": withheld,
            "withheld_correct": good,
            "precision": _ratio(good, withheld),
            "precision_ci95": wilson(good, withheld),
            "recall": _ratio(good, n),
            "recall_ci95": wilson(good, n),
        },
    }


def project_of(row: Mapping) -> str:
    """A result's project (older results have none: from the id, ``bugsinpy-<project>-<n>``)."""
    if row.get("project"):
        return str(row["project"])
    if row["source"] == "bugsinpy":
        return str(row["id"]).removeprefix("bugsinpy-").rpartition("-")[0]
    return str(row["source"])


def summarize(results: Sequence[Mapping]) -> dict:
    """Counts of each outcome, the withheld split, overfitting's place, the median wall time, and the
    precision and recall of ``fixed`` and ``plausible_only``."""
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
        "budget_spent": sum(1 for r in results if budget_spent(r)),
        **precision_recall(results),
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
        "by_project": {},
        "by_stratum": {},
        "by_question": {},
        "bugs": [],
    }
    for label, _commit in versions:
        mine = [r for r in rows if r["version"] == label]
        data["summary"][label] = {"all": summarize(mine)} | {
            source: summarize([r for r in mine if r["source"] == source])
            for source in SOURCES
        }
        projects = sorted({project_of(r) for r in mine}, key=lambda p: (p != "refactory", p))
        data["by_project"][label] = {p: summarize([r for r in mine if project_of(r) == p]) for p in projects}
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
                    "project",
                    "version",
                    "commit",
                    "outcome",
                    "withheld",
                    "overfitting_in",
                    "status",
                    "label",
                    "target",
                    "returncode",
                    "wall_s",
                    "stopped_because",
                    "reason",
                    "adds_sort",
                    "same_as_dev",
                )
            }
            | {
                "project": project_of(row),
                "budget_spent": budget_spent(row),
                "stratum": case.get("stratum"),
                "loops": case.get("loops"),
            }
        )
    return data


def _cell(summary: Mapping, key: str) -> str:
    n = summary["n"]
    return f"{summary[key]} ({100 * summary[key] / n:.0f} %)" if n else "0"


def _share(value: float | None, ci: Sequence[float] | None) -> str:
    """``0.83 (0.64–0.93)``, or ``–`` when nothing was claimed."""
    if value is None or ci is None:
        return "–"
    return f"{value:.2f} ({ci[0]:.2f}–{ci[1]:.2f})"


PRECISION_HEADER = [
    "| version | {what} | bugs | claimed fixed | correct | precision of fixed (95 % CI) "
    "| recall of fixed (95 % CI) | plausible_only | withheld correct | precision of plausible_only "
    "| recall of plausible_only | median s | budget spent |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
]


def _precision_row(label: str, what: str, s: Mapping) -> str:
    f, p = s["fixed"], s["plausible_only"]
    return (
        f"| {label} | {what} | {s['n']} | {f['claimed']} | {f['correct']} "
        f"| {_share(f['precision'], f['precision_ci95'])} | {_share(f['recall'], f['recall_ci95'])} "
        f"| {p['claimed']} | {p['withheld_correct']} | {_share(p['precision'], p['precision_ci95'])} "
        f"| {_share(p['recall'], p['recall_ci95'])} | {s['median_wall_s']} | {s.get('budget_spent', 0)} |"
    )


def precision_tables(data: Mapping) -> list[str]:
    """The first tables: the precision of ``fixed`` per version and source, per project, per question."""
    lines = ["## Precision of fixed", "", *(h.format(what="source") for h in PRECISION_HEADER)]
    for label, per_source in data["summary"].items():
        for source in (*SOURCES, "all"):
            if per_source[source]["n"]:
                lines.append(_precision_row(label, source, per_source[source]))
    lines += ["", "Per project (Refactory as one project):", "",
              *(h.format(what="project") for h in PRECISION_HEADER)]
    for label, projects in data.get("by_project", {}).items():
        for project, s in projects.items():
            if s["n"]:
                lines.append(_precision_row(label, project, s))
    lines += ["", "Refactory per question:", "", *(h.format(what="question") for h in PRECISION_HEADER)]
    for label, questions in data["by_question"].items():
        for question, s in questions.items():
            if s["n"]:
                lines.append(_precision_row(label, f"Q{question}", s))
    return [
        *lines,
        "",
        "Precision of fixed: correct ÷ claimed fixed; recall: correct ÷ bugs. Of plausible_only: withheld "
        "correct (the patch passes every test) ÷ plausible_only; recall: withheld correct ÷ bugs. Budget "
        "spent: runs that reached their time budget.",
        "",
    ]


def markdown(data: Mapping) -> str:
    """The tables: the precision of ``fixed`` first (per version and source, project, question), then
    one row per version and source, then Refactory by distance stratum."""
    lines = [
        "# Real-bug repair benchmark",
        "",
        "Versions: " + ", ".join(f"{v['label']} = `{v['commit'][:10]}`" for v in data["versions"]),
        f"Prepared: {data['cases']['refactory']} Refactory programs, "
        f"{data['cases']['bugsinpy']} BugsInPy bugs.",
        "",
        *precision_tables(data),
        "## Outcomes",
        "",
        "| version | source | bugs | correct | overfit | not fixed (withheld correct/overfit) | error "
        "| correct 95 % CI | median s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, per_source in data["summary"].items():
        for source in (*SOURCES, "all"):
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

"""The report step: ranks from the raw per-bug outputs only (no test is run).

Rank of a bug for a tool = the rank of the best-ranked function of the fix (truth.py), with ties
counted as the average rank of the tied group: rank = |{f: score(f) > s}| + (|{f: score(f) = s}| + 1) / 2
(scores equal within 1e-9; the group includes the function itself), so a function tied with two
others for first place has rank 2. A fix whose functions a tool did not rank at all (not covered,
or the tool crashed) is a miss: no Top-N, EXAM = 1. EXAM = rank / number of functions the tool ranked.

Matching: EQUISA's ranking entries by FQN (dotted module + qualified name) or by file and first
line (decorators included, or the ``def`` line); FauxPy's ``path::name::first::last`` entities by
file (relative to the copy it ran on) and first line (the ``def`` line or a decorator's).
"""

from __future__ import annotations

import csv
import json
import math
import statistics
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from .steps import RANKED_EXITS

from .peer import FUNCTION_CSV
from .peer_report import peer_markdown, peer_summary
from .study import e_inspect, load_study

TOOLS = ("equisa", "fauxpy", "fauxpy_statement")
LABELS = {"equisa": "EQUISA `localize --no-llm`", "fauxpy": "FauxPy 0.7 SBFL Ochiai (function)",
          "fauxpy_statement": "FauxPy 0.7 SBFL Ochiai (statement, best statement)"}
TOP_N = (1, 3, 5)
TOLERANCE = 1e-9


def average_rank(scores: Sequence[float], mine: float) -> float:
    higher = sum(1 for s in scores if s > mine + TOLERANCE)
    tied = sum(1 for s in scores if abs(s - mine) <= TOLERANCE)
    return higher + (tied + 1) / 2


def _left_out(cost: Mapping | None) -> tuple[int, int] | None:
    """(functions the screening's budget left out, functions worth screening) of a report's
    ``screening_cost``; None when it has none (reports before the budget, 2026-12-06, had no
    ``left_out``: 0 left out)."""
    if not cost:
        return None
    return len(cost.get("left_out") or ()), len(cost.get("functions") or ())


def equisa_entries(report: Mapping, key: str = "ranking") -> list[dict]:
    """EQUISA's ranked functions: the final ``ranking``, or the ``first_answer`` (the trace and the
    prior alone, its top 20 only)."""
    return [{"fqn": n["fqn"], "file": n.get("file"), "first": n.get("start_line"), "last": n.get("end_line"),
             "score": float(n["confidence"])} for n in report.get(key) or []]


def fauxpy_entries(csv_path: Path, copy_root: str) -> list[dict]:
    out = []
    with open(csv_path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            path, name, first, last = row["Entity"].rsplit("::", 3)
            rel = path[len(copy_root) + 1:] if path.startswith(copy_root + "/") else path
            out.append({"fqn": name, "file": rel, "first": int(first), "last": int(last),
                        "score": float(row["Score"])})
    return out


def is_truth(entry: Mapping, function: Mapping) -> bool:
    if entry.get("fqn") == function["fqn"]:
        return True
    return entry.get("file") == function["file"] and entry.get("first") in (function["first_line"],
                                                                             function["def_line"])


def rank_of(entries: Sequence[Mapping], truth: Sequence[Mapping]) -> tuple[float | None, str | None]:
    scores = [e["score"] for e in entries]
    best: tuple[float, str] | None = None
    for function in truth:
        for entry in entries:
            if is_truth(entry, function):
                rank = average_rank(scores, entry["score"])
                if best is None or rank < best[0]:
                    best = (rank, function["fqn"])
                break
    return best if best else (None, None)


def evaluate(run: Mapping, folder: Path) -> dict:
    """One bug's result per tool from its raw outputs."""
    truth = run["truth"]["functions"]
    out: dict = {"project": run["project"], "bug": run["bug"], "truth": [f["fqn"] for f in truth]}
    for tool in TOOLS:
        if tool not in run:  # FauxPy's statement mode: only in runs with --fauxpy-statement
            continue
        res = run.get(tool) or {}
        entries: list[dict] = []
        crash = None
        if tool == "equisa":
            path = folder / "equisa_report.json"
            if res.get("returncode") not in RANKED_EXITS:  # a ranking, converged or not, is no crash
                crash = f"exit {res.get('returncode')}: {res.get('message', '')}"
            if path.exists():
                report = json.loads(path.read_text())
                entries = equisa_entries(report)
                first = equisa_entries(report, "first_answer")  # reports since 5e3c5c0
                out["equisa_first"] = {"rank": rank_of(first, truth)[0] if first else None,
                                       "kept": len(first)}
                out["equisa_decisive_after_screening"] = bool(report.get("decisive_after_screening"))
                cost = report.get("screening_cost")  # reports since 34f5701
                out["equisa_screening_left_out"] = _left_out(cost)
        else:
            path = folder / ("fauxpy_Scores_Ochiai.csv" if tool == "fauxpy" else FUNCTION_CSV)
            if path.exists():
                entries = fauxpy_entries(path, res.get("copy_root", ""))
            else:
                crash = f"no scores (exit {res.get('returncode')}): {res.get('message', '')}"
        rank, matched = rank_of(entries, truth)
        if tool == "fauxpy_statement":  # the study's rank rule too, to set beside its published rank
            faulty = [any(is_truth(e, f) for f in truth) for e in entries]
            out["fauxpy_statement_e_inspect"] = e_inspect([e["score"] for e in entries], faulty)
            out["fauxpy_statement_suite"] = (res.get("plan") or {}).get("origin")
            out["truth_spans"] = [f"{f['file']}::{f['first_line']}::{f.get('end_line')}" for f in truth]
        ranked = len(entries)
        out[tool] = {"rank": rank, "matched": matched, "ranked": ranked,
                     "exam": (rank / ranked) if rank is not None and ranked else 1.0,
                     "wall_s": res.get("wall_s"), "returncode": res.get("returncode"), "crash": crash,
                     "input_modified": bool(res.get("input_modified"))}
    e, f = out["equisa"]["wall_s"], out["fauxpy"]["wall_s"]
    out["wall_ratio"] = (e / f) if e and f else None
    s = (out.get("fauxpy_statement") or {}).get("wall_s")
    if "fauxpy_statement" in out:
        out["wall_ratio_statement"] = (e / s) if e and s else None
    out["prefect_start"] = (run.get("equisa") or {}).get("prefect_start", "other")
    out["venv_modified"] = bool(run.get("venv_modified"))
    out["equisa_commit"] = ((run.get("equisa_from") or {}).get("commit") or "")[:10]
    out["fauxpy_outcomes_as_prepared"] = (run.get("fauxpy") or {}).get("outcomes_as_prepared")
    return out


def tools_in(cases: Sequence[Mapping]) -> tuple[str, ...]:
    """The tools every case was run with (FauxPy's statement mode only in runs that asked for it)."""
    return tuple(t for t in TOOLS if cases and all(t in c for c in cases))


def summarize(cases: Sequence[Mapping], tool: str) -> dict:
    n = len(cases)
    ranks = [c[tool]["rank"] for c in cases]
    out: dict = {"bugs": n}
    for k in TOP_N:
        out[f"top{k}"] = sum(1 for r in ranks if r is not None and r <= k)
    out["missing"] = sum(1 for r in ranks if r is None)
    exams = [c[tool]["exam"] for c in cases]
    out["mean_exam"] = round(statistics.fmean(exams), 4) if exams else None
    out["median_exam"] = round(statistics.median(exams), 4) if exams else None
    walls = [c[tool]["wall_s"] for c in cases if c[tool]["wall_s"] is not None]
    out["median_wall_s"] = round(statistics.median(walls), 2) if walls else None
    out["total_wall_s"] = round(sum(walls), 1)
    out["crashes"] = sum(1 for c in cases if c[tool]["crash"])
    out["inputs_modified"] = sum(1 for c in cases if c[tool]["input_modified"])
    return out


def build(results: Path, manifest: Sequence[Mapping], chosen: set[str] | None = None,
          study: Mapping | None = None) -> dict:
    cases = []
    for folder in sorted(p for p in results.iterdir() if (p / "run.json").exists()):
        if chosen is not None and folder.name not in chosen:
            continue
        run = json.loads((folder / "run.json").read_text())
        cases.append(evaluate(run, folder))
    cases.sort(key=lambda c: (c["project"], c["bug"]))
    projects = sorted({c["project"] for c in cases})
    summary: dict = {"total": {}, "per_project": {}}
    tools = tools_in(cases) or TOOLS[:2]
    for tool in tools:
        summary["total"][tool] = summarize(cases, tool)
    summary["total"]["equisa_first_answer"] = first_answer_summary(cases)
    summary["total"]["equisa_decisive_after_screening"] = sum(
        1 for c in cases if c.get("equisa_decisive_after_screening"))
    cut = [c["equisa_screening_left_out"] for c in cases if c.get("equisa_screening_left_out")]
    summary["total"]["equisa_screening_partial"] = sum(1 for left, worth in cut if left)
    summary["total"]["equisa_screening_none"] = sum(1 for left, worth in cut if left and left == worth)
    ratios = [c["wall_ratio"] for c in cases if c["wall_ratio"]]
    summary["total"]["median_wall_ratio_equisa_over_fauxpy"] = round(statistics.median(ratios), 2) if ratios else None
    for start in ("warm", "cold", "other"):
        mine = [c["wall_ratio"] for c in cases if c["wall_ratio"] and c.get("prefect_start") == start]
        summary["total"][f"median_wall_ratio_{start}"] = round(statistics.median(mine), 2) if mine else None
        summary["total"][f"runs_{start}"] = len(mine)
    for project in projects:
        mine = [c for c in cases if c["project"] == project]
        summary["per_project"][project] = {tool: summarize(mine, tool) for tool in tools}
        r = [c["wall_ratio"] for c in mine if c["wall_ratio"]]
        summary["per_project"][project]["median_wall_ratio_equisa_over_fauxpy"] = (
            round(statistics.median(r), 2) if r else None)
    infeasible: dict[str, int] = {}
    for record in manifest:
        if not record.get("verified"):
            reason = (record.get("reason") or "?").split(":")[0].split("(")[0].strip()
            infeasible[reason] = infeasible.get(reason, 0) + 1
    return {"generated": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "ranking_rule": __doc__.split("\n\n")[1].replace("\n", " "),
            "tools": list(tools), "summary": summary, "cases": cases,
            "peer": peer_summary(cases, study if study is not None else load_study()),
            "prepared": {"bugs": len(manifest), "verified": sum(1 for r in manifest if r.get("verified")),
                         "infeasible_reasons": infeasible,
                         "infeasible": [{"bug": r.get("id") or f"{r.get('project')}:{r.get('bug')}",
                                         "reason": (r.get("reason") or "?")[:300]}
                                        for r in manifest if not r.get("verified")]},
            "venvs_modified": sum(1 for c in cases if c["venv_modified"])}


def first_answer_summary(cases: Sequence[Mapping]) -> dict | None:
    """EQUISA's first answer (the trace and the prior alone) against its final ranking, over the
    bugs whose report keeps one: Top-N of each, and the bugs whose Top-1 the rest of the run
    gained or lost. The first answer keeps 20 functions: a truth below them is not in its Top-N."""
    mine = [c for c in cases if c.get("equisa_first", {}).get("kept")]
    if not mine:
        return None

    def top(rank: float | None, k: int) -> bool:
        return rank is not None and rank <= k

    out: dict = {"bugs": len(mine)}
    for k in TOP_N:
        out[f"first_top{k}"] = sum(1 for c in mine if top(c["equisa_first"]["rank"], k))
        out[f"final_top{k}"] = sum(1 for c in mine if top(c["equisa"]["rank"], k))
    out["top1_gained"] = [f"{c['project']}:{c['bug']}" for c in mine
                          if top(c["equisa"]["rank"], 1) and not top(c["equisa_first"]["rank"], 1)]
    out["top1_lost"] = [f"{c['project']}:{c['bug']}" for c in mine
                        if top(c["equisa_first"]["rank"], 1) and not top(c["equisa"]["rank"], 1)]
    return out


def _fmt_wall(result: Mapping) -> str:
    return f"{result['wall_s']:.1f}" if result.get("wall_s") is not None else "–"


def _fmt_rank(rank: float | None) -> str:
    if rank is None:
        return "–"
    return f"{rank:g}"


def markdown(data: Mapping) -> str:
    lines = [f"# Real-bug fault localization (BugsInPy), {data['generated']}", ""]
    lines.append(f"Verified bugs run: {data['summary']['total']['equisa']['bugs']} "
                 f"(prepared {data['prepared']['bugs']}, verified {data['prepared']['verified']}).")
    lines.append("")
    lines.append("| scope | tool | bugs | Top-1 | Top-3 | Top-5 | not ranked | mean EXAM | median wall s | crashes | inputs modified |")
    lines.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")

    tools = data.get("tools") or TOOLS[:2]

    def rows(scope: str, block: Mapping) -> None:
        for tool in tools:
            s = block[tool]
            lines.append(f"| {scope} | {LABELS[tool]} | {s['bugs']} | {s['top1']} | {s['top3']} | {s['top5']} | "
                         f"{s['missing']} | {s['mean_exam']} | {s['median_wall_s']} | {s['crashes']} | "
                         f"{s['inputs_modified']} |")

    rows("**all**", data["summary"]["total"])
    for project, block in data["summary"]["per_project"].items():
        rows(project, block)
    lines.append("")
    lines.append("Median per-bug wall ratio EQUISA / FauxPy: "
                 f"{data['summary']['total']['median_wall_ratio_equisa_over_fauxpy']} (all); " + ", ".join(
                     f"{p} {b['median_wall_ratio_equisa_over_fauxpy']}"
                     for p, b in data["summary"]["per_project"].items()))
    commits: dict[str, int] = {}
    for c in data["cases"]:
        commits[c.get("equisa_commit", "")] = commits.get(c.get("equisa_commit", ""), 0) + 1
    lines.append("EQUISA at git " + ", ".join(f"`{k}` ({v} bugs)" for k, v in sorted(commits.items())) + ".")
    lines.append("")
    total = data["summary"]["total"]
    lines.append("By the Prefect server EQUISA found: " + "; ".join(
        f"{start} {total.get(f'median_wall_ratio_{start}')} over {total.get(f'runs_{start}', 0)} bugs"
        for start in ("warm", "cold", "other") if total.get(f"runs_{start}")) +
        " (warm: the shared local server was up; cold: this command started it; other: Prefect's "
        "temporary server).")
    first = total.get("equisa_first_answer")
    if first:
        lines.append("")
        lines.append(f"EQUISA's first answer (the trace and the prior alone, kept in the same reports) on "
                     f"{first['bugs']} bugs: Top-1/3/5 {first['first_top1']}/{first['first_top3']}/"
                     f"{first['first_top5']}, against {first['final_top1']}/{first['final_top3']}/"
                     f"{first['final_top5']} for the whole run; the rest of the run put the fix first on "
                     f"{len(first['top1_gained'])} bugs ({', '.join(first['top1_gained']) or 'none'}) and "
                     f"off first on {len(first['top1_lost'])} ({', '.join(first['top1_lost']) or 'none'}).")
    if total.get("equisa_decisive_after_screening"):
        lines.append("")
        lines.append("EQUISA runs that ended once the mutant screening was in (a decisive answer, "
                     f"`--stop-margin`): {total['equisa_decisive_after_screening']} of "
                     f"{total['equisa']['bugs']}.")
    if total.get("equisa_screening_partial"):
        lines.append("")
        none = total.get("equisa_screening_none", 0)
        lines.append("EQUISA runs whose screening budget (`--screen-cost-ratio` times the trace, at least "
                     f"0.5 s) left functions out: {total['equisa_screening_partial']} of "
                     f"{total['equisa']['bugs']}; left every function out: {none}.")
    lines.append("")
    statement = "fauxpy_statement" in tools
    lines.append("| bug | truth | EQUISA rank / ranked | FauxPy rank / ranked | "
                 + ("FauxPy statement rank / ranked | " if statement else "")
                 + "EQUISA s | FauxPy s | " + ("FauxPy statement s | " if statement else "") + "notes |")
    lines.append("| --- | --- | ---: | ---: | ---: | ---: | " + ("---: | ---: | " if statement else "")
                 + "--- |")
    for c in data["cases"]:
        notes = []
        for tool in tools:
            if c[tool]["crash"]:
                notes.append(f"{tool} crash: {c[tool]['crash'][:120]}")
            if c[tool]["input_modified"]:
                notes.append(f"{tool} modified its input")
        if c.get("fauxpy_outcomes_as_prepared") is False:
            notes.append("FauxPy's run saw other outcomes than the prepare step")
        truth = ", ".join(t.split(".")[-1] if len(t) > 40 else t for t in c["truth"][:3])
        e, f, st = c["equisa"], c["fauxpy"], c.get("fauxpy_statement")
        lines.append(f"| {c['project']}:{c['bug']} | {truth} | {_fmt_rank(e['rank'])} / {e['ranked']} | "
                     f"{_fmt_rank(f['rank'])} / {f['ranked']} | "
                     + (f"{_fmt_rank(st['rank'])} / {st['ranked']} | " if statement and st else "")
                     + f"{_fmt_wall(e)} | {_fmt_wall(f)} | "
                     + (f"{_fmt_wall(st)} | " if statement and st else "")
                     + f"{'; '.join(notes).replace('|', '/')} |")
    lines.append("")
    if data.get("peer"):
        lines += peer_markdown(data["peer"])
    lines.append("Infeasible (prepare): " + ", ".join(f"{k} {v}" for k, v in
                                                      sorted(data["prepared"]["infeasible_reasons"].items(),
                                                             key=lambda kv: -kv[1])))
    lines.append("")
    if data["prepared"].get("infeasible"):
        lines.append("| infeasible bug | reason |")
        lines.append("| --- | --- |")
        for item in data["prepared"]["infeasible"]:
            reason = " ".join(item["reason"].split()).replace("|", "/")
            lines.append(f"| {item['bug']} | {reason[:200]} |")
        lines.append("")
    return "\n".join(lines)


def finite(value):
    return value if not (isinstance(value, float) and math.isinf(value)) else None

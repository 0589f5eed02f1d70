"""The peer at its best: EQUISA against FauxPy run as its study ran it, and against the study's own
published ranks, on the bugs the study and this benchmark share (``study.py``, ``peer.py``).

Rows on the common bugs: EQUISA, FauxPy statement mode (each function scored by its best
statement), FauxPy function mode, and the published ranks (their ``e_inspect``; a bug they did not
localize is a miss). The lead is EQUISA's Top-N over the peer's, twice: over the statement mode
measured here and over the published ranks; in total and per project (nothing is fitted here, so
the per-project figures are the cross-validation by project). Each statement-mode rank is set
beside the published one under the study's own rank rule (``study.e_inspect``).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from .study import compare

TOP_N = (1, 3, 5)
ROWS = ("equisa", "fauxpy_statement", "fauxpy", "published")
ROW_LABELS = {
    "equisa": "EQUISA `localize --no-llm`",
    "fauxpy_statement": "FauxPy statement mode, best statement (measured)",
    "fauxpy": "FauxPy function mode (measured)",
    "published": "FauxPy statement mode, best statement (published, e_inspect)",
}
PEERS = ("fauxpy_statement", "published")


def bug_id(case: Mapping) -> str:
    return f"{case['project']}:{case['bug']}"


def published_rank(published: Mapping | None) -> float | None:
    if not published or not published.get("localized"):
        return None
    return float(published["e_inspect"])


def row_rank(case: Mapping, row: str, study: Mapping) -> float | None:
    if row == "published":
        return published_rank(study[bug_id(case)].get("published"))
    return (case.get(row) or {}).get("rank")


def tops(ranks: Sequence[float | None]) -> dict:
    out: dict = {"bugs": len(ranks)}
    for k in TOP_N:
        out[f"top{k}"] = sum(1 for r in ranks if r is not None and r <= k)
    out["missing"] = sum(1 for r in ranks if r is None)
    return out


def lead(mine: Mapping, peer: Mapping) -> dict:
    """EQUISA's Top-N over the peer's (None where the peer has none)."""
    return {
        f"top{k}": round(mine[f"top{k}"] / peer[f"top{k}"], 2) if peer[f"top{k}"] else None for k in TOP_N
    }


def block(cases: Sequence[Mapping], study: Mapping) -> dict:
    rows = {
        row: tops([row_rank(c, row, study) for c in cases])
        for row in ROWS
        if row == "published" or all(row in c for c in cases)
    }
    out: dict = {
        "rows": rows,
        "lead": {peer: lead(rows["equisa"], rows[peer]) for peer in PEERS if peer in rows},
    }
    ratios = [c["wall_ratio_statement"] for c in cases if c.get("wall_ratio_statement")]
    out["median_wall_ratio_equisa_over_statement"] = round(statistics.median(ratios), 2) if ratios else None
    if all("fauxpy_statement" in c for c in cases):
        out["statement_e_inspect"] = tops([c.get("fauxpy_statement_e_inspect") for c in cases])
    return out


def comparison(case: Mapping, entry: Mapping) -> dict:
    ours = case.get("fauxpy_statement_e_inspect")
    published = entry.get("published") or {}
    statement = case.get("fauxpy_statement") or {}
    return {
        "bug": bug_id(case),
        "ours": ours,
        "ours_ranked": statement.get("ranked"),
        "published": published_rank(published),
        "published_ranked": published.get("ranked"),
        "status": compare(ours, published),
        "our_truth": case["truth"],
        "their_truth": entry.get("truth", []),
        "crash": statement.get("crash"),
    }


def hints(case: Mapping, item: Mapping) -> list[str]:
    """What differs between the two runs, as far as the outputs tell: the fix's functions (by file
    and line span), how many functions were ranked, the test files, a crash."""
    out = []
    ours = dict(zip(case.get("truth_spans") or [], case["truth"], strict=False))
    theirs = {_span(t): t.split("::")[1] for t in item["their_truth"]}
    only_ours = [name.rsplit(".", 1)[-1] for span, name in ours.items() if span not in theirs]
    only_theirs = [name for span, name in theirs.items() if span not in ours]
    if ours and (only_ours or only_theirs):
        out.append(f"truth differs: only ours {', '.join(only_ours) or 'none'}; "
                   f"only theirs {', '.join(only_theirs) or 'none'}")
    if item["ours_ranked"] != item["published_ranked"]:
        out.append(f"ranked {item['ours_ranked']} here, {item['published_ranked']} there")
    suite = case.get("fauxpy_statement_suite")
    if suite and suite != "study":
        out.append("test files: " + suite)
    if item.get("crash"):
        out.append("crash: " + item["crash"][:100])
    return out


def _span(truth: str) -> str:
    """Their ``file::name::first::last`` as ``file::first::last``."""
    file, _, first, last = truth.rsplit("::", 3)
    return f"{file}::{first}::{last}"


def peer_summary(cases: Sequence[Mapping], study: Mapping) -> dict | None:
    """None when no case is one the study ran too."""
    common = [c for c in cases if bug_id(c) in study]
    if not common:
        return None
    out: dict = {"bugs": [bug_id(c) for c in common], "total": block(common, study), "per_project": {}}
    for project in sorted({c["project"] for c in common}):
        out["per_project"][project] = block([c for c in common if c["project"] == project], study)
    if all("fauxpy_statement" in c for c in common):
        out["comparison"] = [comparison(c, study[bug_id(c)]) for c in common]
        for case, item in zip(common, out["comparison"], strict=True):
            item["hints"] = hints(case, item)
        out["matches"] = sum(1 for item in out["comparison"] if item["status"] == "same")
    return out


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"


def _lead_text(lead_block: Mapping) -> str:
    return "/".join(_fmt(lead_block[f"top{k}"]) for k in TOP_N)


def peer_markdown(peer: Mapping) -> list[str]:
    lines = [
        "## The peer at its best: the bugs the FauxPy study ran too",
        "",
        f"{len(peer['bugs'])} bugs. Published: Ochiai at function granularity from statement scores, "
        "`e_inspect` of atom-sw/fauxpy-experiments (`bench/data/fauxpy_study.json`).",
        "",
        "| scope | row | bugs | Top-1 | Top-3 | Top-5 | not ranked |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    scopes = [("**all**", peer["total"]), *peer["per_project"].items()]
    for scope, part in scopes:
        for row, s in part["rows"].items():
            lines.append(
                f"| {scope} | {ROW_LABELS[row]} | {s['bugs']} | {s['top1']} | {s['top3']} | "
                f"{s['top5']} | {s['missing']} |"
            )
    lines += [
        "",
        "The lead, EQUISA's Top-1/3/5 over the peer's (per project: nothing is fitted here, so "
        "these are the leave-one-project-out figures):",
        "",
        "| scope | over statement mode (measured) | over published | median wall ratio EQUISA / statement |",
        "| --- | --- | --- | ---: |",
    ]
    for scope, part in scopes:
        leads = part["lead"]
        lines.append(
            f"| {scope} | {_lead_text(leads['fauxpy_statement']) if 'fauxpy_statement' in leads else '–'} | "
            f"{_lead_text(leads['published'])} | "
            f"{_fmt(part['median_wall_ratio_equisa_over_statement'])} |"
        )
    if peer.get("comparison"):
        lines += _comparison_lines(peer)
    lines.append("")
    return lines


def _comparison_lines(peer: Mapping) -> list[str]:
    e = peer["total"].get("statement_e_inspect") or {}
    lines = [
        "",
        f"Statement mode here against the published ranks, both by the study's rank rule "
        f"(`e_inspect`): the same on {peer['matches']} of {len(peer['comparison'])} bugs; "
        f"Top-1/3/5 by that rule {e.get('top1')}/{e.get('top3')}/{e.get('top5')}.",
        "",
        "| bug | ours (e_inspect) / ranked | published / ranked | | our truth | their truth "
        "| what differs |",
        "| --- | ---: | ---: | --- | --- | --- | --- |",
    ]
    for item in peer["comparison"]:
        theirs = ", ".join(t.split("::")[1] for t in item["their_truth"][:3])
        ours = ", ".join(t.split(".")[-1] for t in item["our_truth"][:3])
        lines.append(
            f"| {item['bug']} | {_fmt(item['ours'])} / {item['ours_ranked']} | "
            f"{_fmt(item['published'])} / {item['published_ranked']} | {item['status']} | {ours} | "
            f"{theirs} | "
            f"{'; '.join(item.get('hints', [])).replace('|', '/')} |"
        )
    return lines

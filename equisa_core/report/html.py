"""The HTML report of a trace, localize or repair run: one file, inline CSS and SVG, no script.

Sections: the verdict; the ranking; each node's confidence over the Bayesian iterations (replayed
by ``equisa_core.localization.confidence_history``); the ambiguity groups before and after Discovery; the
inspections; the diff; the validation checks. Everything shown comes from the report's JSON, so
a stored ``report.json`` can be rendered again later.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from equisa_core.localization.confidence_history import confidence_history
from equisa_core.localization.steps import InspectionRecord, RankedNode
from equisa_core.report.svg import confidence_plot

__all__ = ["render_report"]

_TOP = 15
_FORMULAS = ("tarantula", "ochiai", "dstar")
_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 6px} h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #ddd}
.meta{color:#555;font-size:13px} .badge{display:inline-block;padding:3px 10px;border-radius:12px;
color:#fff;font-weight:600} .fixed,.converged,.traced{background:#2e7d32} .plausible_only{background:#ef6c00}
.not_fixed,.not_converged,.error,.crashed{background:#c62828}
table{border-collapse:collapse;font-size:13px} td,th{border:1px solid #ddd;padding:4px 8px;text-align:left;
max-width:460px;overflow-wrap:anywhere}
th{background:#f0f0f0} td.num{text-align:right;font-variant-numeric:tabular-nums}
.bar{display:inline-block;height:10px;background:#1f77b4;vertical-align:middle}
pre.diff{background:#f7f7f7;border:1px solid #ddd;padding:8px;font-size:12px;overflow-x:auto}
.add{background:#e6ffec;color:#116329} .del{background:#ffebe9;color:#82071e} .hunk{color:#0550ae}
ul.problems li{color:#8a4b00} .group{font-family:monospace;font-size:12px}
"""


def render_report(kind: str, report: Mapping[str, Any], run_id: str = "", repository: str = "") -> str:
    """The report of one run (``kind``: trace, localize, repair or testgen) as a self-contained HTML page."""
    localization = report.get("localization") if kind == "repair" else report if kind == "localize" else None
    status = _status(kind, report, localization)
    title = f"EQUISA {kind} — {repository or report.get('repository', '')}"
    body = [f"<h1>{escape(title)}</h1>",
            f'<p><span class="badge {escape(status)}">{escape(status.replace("_", " "))}</span> '
            f'<span class="meta">run {escape(run_id)}</span></p>', _summary(kind, report, localization)]
    if kind == "testgen":
        body += ["<h2>Attempts</h2>", _attempts(report.get("attempts") or ())]
    elif localization:
        ranking = [RankedNode.model_validate(n) for n in localization.get("ranking", ())]
        inspections = [InspectionRecord.model_validate(i) for i in localization.get("inspections", ())]
        body += ["<h2>Ranking</h2>", _ranking(ranking),
                 "<h2>Confidence over the Bayesian iterations</h2>",
                 confidence_plot(confidence_history(ranking, inspections)),
                 "<h2>Ambiguity groups</h2>", _groups(localization),
                 "<h2>Inspections</h2>", _inspections(inspections)]
    else:
        body += ["<h2>Ranking (spectrum scores)</h2>", _trace_ranking(report.get("nodes", ())),
                 "<h2>Ambiguity groups</h2>", _group_list(report.get("ambiguity_groups", ()))]
    if kind == "repair":
        body += ["<h2>Patch</h2>", _diff(str(report.get("diff") or "")),
                 "<h2>Validation checks</h2>", _checks(report.get("validation") or {}),
                 "<h2>Candidates validated</h2>", _evaluations(report.get("evaluations") or ())]
    problems = report.get("problems") or ()
    if problems:
        body += ["<h2>Notes</h2>", '<ul class="problems">'
                 + "".join(f"<li>{escape(str(p))}</li>" for p in problems) + "</ul>"]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def _status(kind: str, report: Mapping[str, Any], localization: Mapping[str, Any] | None) -> str:
    if kind == "testgen":
        return "generated" if report.get("best_attempt") is not None else "nothing_generated"
    if kind == "repair":
        return str(report.get("status", "error"))
    if kind == "localize":
        return "converged" if (localization or {}).get("converged") else "not_converged"
    return "crashed" if report.get("crashed") else "traced"


def _attempts(attempts: Any) -> str:
    """One row per testgen attempt: tests, coverage, mutation score, reliability, the router's decision."""
    rows = []
    for a in attempts:
        mutation = a.get("mutation_score")
        level = (a.get("post_reliability") or {}).get("level", "-")
        rows.append(
            f"<tr><td>{escape(str(a.get('attempt')))}</td><td>{escape(str(a.get('origin')))}</td>"
            f"<td>{len(a.get('tests', ()))} ({escape(str(a.get('tests_passed')))} pass)</td>"
            f"<td>{float((a.get('critique') or {}).get('coverage', 0.0)):.2f}%</td>"
            f"<td>{'-' if mutation is None else f'{float(mutation):.1f}%'}</td>"
            f"<td>{escape(str(level))}</td>"
            f"<td>{escape(str(a.get('decision')))}: {escape(str(a.get('decision_reason')))}</td></tr>")
    head = ("<tr><th>attempt</th><th>origin</th><th>tests</th><th>coverage</th><th>mutation score</th>"
            "<th>reliability</th><th>router</th></tr>")
    return f"<table>{head}{''.join(rows)}</table>" if rows else "<p>no attempt</p>"


def _summary(kind: str, report: Mapping[str, Any], localization: Mapping[str, Any] | None) -> str:
    rows: list[tuple[str, str]] = []
    if kind == "repair":
        rows += [("target", str(report.get("target") or "-")),
                 ("patch from", str(report.get("generator") or "-")),
                 ("candidates tried", str(report.get("candidates_tried", 0))),
                 ("returns to Discovery", str(report.get("relocalizations", 0)))]
    if localization:
        tests = localization.get("tests") or {}
        rows += [("mode", str(localization.get("mode"))),
                 ("stopped because", str(localization.get("stopped_because"))),
                 ("tests", f"{tests.get('failed', 0)} failing, {tests.get('passed', 0)} passing, "
                           f"{tests.get('flaky', 0)} flaky, {tests.get('generated', 0)} generated"),
                 ("inspections", str(len(localization.get("inspections", ()))))]
    if kind == "testgen":
        baseline = report.get("baseline") or {}
        rows += [("target", str(report.get("target"))), ("mode", str(report.get("mode"))),
                 ("framework", str(report.get("framework"))),
                 ("existing tests' coverage", f"{baseline.get('percent', 0.0):.2f}%" if baseline else "-"),
                 ("best attempt", str(report.get("best_attempt", "-"))),
                 ("module", str(report.get("output") or "-")),
                 ("stopped because", str(report.get("stopped_because"))),
                 ("LLM cost", f"${float(report.get('cost_usd') or 0.0):.4f}")]
    elif kind != "trace":
        rows.append(("LLM cost", f"${float((report.get('cost') or {}).get('usd', 0.0)):.4f}"))
    else:
        s = report.get("summary") or {}
        rows += [("tests", f"{s.get('total', 0)}: {s.get('passed', 0)} passed, {s.get('failed', 0)} failed, "
                           f"{s.get('error', 0)} errors, {s.get('skipped', 0)} skipped"),
                 ("tracer", f"{report.get('backend')} ({report.get('backend_reason')})")]
    sandbox = report.get("sandbox") or (localization or {}).get("sandbox")
    if sandbox:
        confined = "files confined" if sandbox.get("confines_files") else "files NOT confined"
        rows.append(("sandbox", f"{sandbox.get('backend')}: {sandbox.get('level')}, {confined} "
                                f"({sandbox.get('reason')})"))
    cells = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows)
    return f"<table>{cells}</table>"


def _ranking(ranking: Sequence[RankedNode]) -> str:
    head = "<tr><th>#</th><th>function</th><th>location</th><th>suspiciousness</th><th>confidence</th></tr>"
    rows = [
        f"<tr><td class=num>{i}</td><td>{escape(n.fqn)}</td><td>{escape(f'{n.file}:{n.start_line}')}</td>"
        f"<td class=num>{n.suspiciousness:.3f}</td><td class=num>{n.confidence:.3f} "
        f'<span class="bar" style="width:{round(80 * n.confidence)}px"></span></td></tr>'
        for i, n in enumerate(ranking[:_TOP], 1)
    ]
    return f"<table>{head}{''.join(rows)}</table>" if rows else "<p>No functions ranked.</p>"


def _trace_ranking(nodes: Sequence[Mapping[str, Any]]) -> str:
    head = ("<tr><th>#</th><th>function</th><th>location</th><th>fail</th><th>pass</th>"
            "<th>tarantula</th><th>ochiai</th><th>dstar</th></tr>")
    rows = [
        f"<tr><td class=num>{i}</td><td>{escape(str(n['fqn']))}</td>"
        f"<td>{escape(str(n.get('file')))}:{n.get('start_line')}</td>"
        f"<td class=num>{n.get('failed_s')}</td><td class=num>{n.get('passed_s')}</td>"
        + "".join(f"<td class=num>{float(n.get(k) or 0.0):.3f}</td>" for k in _FORMULAS)
        + "</tr>"
        for i, n in enumerate(nodes[:_TOP], 1)
    ]
    return f"<table>{head}{''.join(rows)}</table>" if rows else "<p>No functions scored.</p>"


def _group_list(groups: Sequence[Sequence[str]]) -> str:
    if not groups:
        return "<p>None: every suspicious function has its own spectrum.</p>"
    items = "".join(f'<li class="group">{len(g)}: {escape(", ".join(g))}</li>' for g in groups[:20])
    more = f"<p>… and {len(groups) - 20} more.</p>" if len(groups) > 20 else ""
    return f"<ul>{items}</ul>{more}"


def _groups(localization: Mapping[str, Any]) -> str:
    found = localization.get("discovery") or {}
    before = [tuple(g) for r in found.get("rounds", ()) for g in r.get("groups", ())]
    sizes_before = list(found.get("group_sizes_before", ()))
    sizes_after = list(found.get("group_sizes_after", ()))
    parts = [f"<p>Before disambiguation: group sizes {escape(str(sizes_before or 'none'))}; after: "
             f"{escape(str(sizes_after or 'none'))} "
             f"({escape(str(found.get('stopped_because') or 'Discovery off'))}; "
             f"{found.get('generated', 0)} generated tests kept).</p>"]
    if before:
        parts += ["<h3>Groups tests were generated for (before)</h3>", _group_list(before)]
    parts += ["<h3>Groups after disambiguation</h3>", _group_list(localization.get("ambiguity_groups", ()))]
    return "".join(parts)


def _inspections(inspections: Sequence[InspectionRecord]) -> str:
    if not inspections:
        return "<p>No inspections.</p>"
    head = ("<tr><th>#</th><th>target</th><th>strategy</th><th>outcome</th><th>fix evidence</th>"
            "<th>confidence</th><th>reasoning</th></tr>")
    rows = [
        f"<tr><td class=num>{r.iteration}</td><td>{escape(r.target)}</td><td>{escape(r.strategy)}</td>"
        f"<td>{escape(str(r.outcome.value) if r.outcome else '-')}</td>"
        f"<td>{escape(str(r.fix_evidence.value) if r.fix_evidence else '-')}</td>"
        f"<td class=num>{r.prior:.3f} → {r.posterior:.3f}</td><td>{escape(r.reasoning[:300])}</td></tr>"
        for r in inspections
    ]
    return f"<table>{head}{''.join(rows)}</table>"


def _diff(diff: str) -> str:
    if not diff:
        return "<p>No patch was accepted.</p>"
    lines = []
    for line in diff.splitlines():
        kind = ("hunk" if line.startswith("@@")
                else "add" if line.startswith("+") and not line.startswith("+++")
                else "del" if line.startswith("-") and not line.startswith("---") else "")
        lines.append(f'<span class="{kind}">{escape(line)}</span>' if kind else escape(line))
    return '<pre class="diff">' + "\n".join(lines) + "</pre>"


def _checks(checks: Mapping[str, str]) -> str:
    if not checks:
        return "<p>No patch was validated in full.</p>"
    rows = "".join(f"<tr><td>{escape(k)}</td><td>{'✅ ' if v == 'passed' else '❌ '}{escape(v)}</td></tr>"
                   for k, v in checks.items())
    return f"<table><tr><th>check</th><th>result</th></tr>{rows}</table>"


def _evaluations(evaluations: Sequence[Mapping[str, Any]]) -> str:
    if not evaluations:
        return "<p>None.</p>"
    rows = "".join(f"<tr><td>{escape(str(e.get('candidate')))}</td><td>{escape(str(e.get('status')))}</td>"
                   f"<td>{escape(str(e.get('detail', ''))[:300])}</td></tr>" for e in evaluations)
    return f"<table><tr><th>candidate</th><th>status</th><th>detail</th></tr>{rows}</table>"

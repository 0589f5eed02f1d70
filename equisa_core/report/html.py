"""The HTML report of a trace, localize or repair run: one file, inline CSS and SVG, no script.

Sections: the verdict; the ranking; each node's confidence over the Bayesian iterations (replayed
by ``equisa_core.localization.confidence_history``); the ambiguity groups before and after Discovery; the
inspections; the diff; the validation checks. Everything shown comes from the report's JSON, so
a stored ``report.json`` can be rendered again later.

The markup lives in jinja2 templates next to this module (``templates/report.html.j2``, its
sections in ``templates/sections.html.j2``, the style in ``templates/report.css``), rendered with
autoescaping on; this module only picks and formats the values they show.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from equisa_core.errors import exit_code_meanings
from equisa_core.localization.confidence_history import confidence_history
from equisa_core.localization.steps import InspectionRecord, RankedNode
from equisa_core.report.outcome import is_failure, run_outcome
from equisa_core.report.svg import confidence_plot

__all__ = ["render_report"]

_TOP = 15
_FORMULAS = ("tarantula", "ochiai", "dstar")
_TEMPLATES = Environment(
    loader=PackageLoader("equisa_core.report", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


def render_report(kind: str, report: Mapping[str, Any], run_id: str = "", repository: str = "") -> str:
    """The report of one run (``kind``: trace, localize, repair or testgen) as a self-contained HTML page;
    a run that stopped before its report existed (a ``FailureReport``) gets a page saying why."""
    if is_failure(report):
        return _failure_page(kind, report, run_id, repository)
    localization = report.get("localization") if kind == "repair" else report if kind == "localize" else None
    values: dict[str, Any] = dict(
        kind=kind, report=report, localization=localization, run_id=run_id, top=_TOP,
        title=f"EQUISA {kind} — {repository or report.get('repository', '')}",
        status=_status(kind, report, localization), summary=_summary(kind, report, localization),
        problems=[str(p) for p in report.get("problems") or ()],
    )
    if kind == "testgen":
        values["attempts"] = [_attempt(a) for a in report.get("attempts") or ()]
    elif localization:
        ranking = [RankedNode.model_validate(n) for n in localization.get("ranking", ())]
        inspections = [InspectionRecord.model_validate(i) for i in localization.get("inspections", ())]
        values.update(ranking=ranking, inspections=inspections, discovery=_discovery(localization),
                      groups_after=localization.get("ambiguity_groups", ()),
                      plot=Markup(confidence_plot(confidence_history(ranking, inspections))))
    else:
        values.update(trace_nodes=[_trace_node(n) for n in report.get("nodes", ())[:_TOP]],
                      trace_groups=report.get("ambiguity_groups", ()))
    if kind == "repair":
        values["diff_lines"] = _diff_lines(str(report.get("diff") or ""))
    return _TEMPLATES.get_template("report.html.j2").render(values)


def _status(kind: str, report: Mapping[str, Any], localization: Mapping[str, Any] | None) -> str:
    return run_outcome(kind, report).status


def _failure_page(kind: str, report: Mapping[str, Any], run_id: str, repository: str) -> str:
    """The page of a run that stopped before its report existed: the outcome, the exit code and its
    meaning, the error's type and message."""
    outcome = run_outcome(kind, report)
    meaning = exit_code_meanings().get(outcome.exit_code, "")
    summary = [("command", f"equisa {kind}"),
               ("exit code", f"{outcome.exit_code}" + (f" ({meaning})" if meaning else "")),
               ("error type", str(outcome.error_type)), ("message", str(outcome.error))]
    return _TEMPLATES.get_template("report.html.j2").render(dict(
        kind=kind, report=report, localization=None, run_id=run_id, top=_TOP, failure=True,
        title=f"EQUISA {kind} — {repository or report.get('repository', '')}", status=outcome.status,
        summary=summary, problems=[str(p) for p in report.get("problems") or ()]))


def _attempt(attempt: Mapping[str, Any]) -> dict[str, str]:
    """One testgen attempt's row: tests, coverage, mutation score, reliability, the router's decision."""
    mutation = attempt.get("mutation_score")
    return dict(
        attempt=str(attempt.get("attempt")), origin=str(attempt.get("origin")),
        tests=str(len(attempt.get("tests", ()))), tests_passed=str(attempt.get("tests_passed")),
        coverage=f"{float((attempt.get('critique') or {}).get('coverage', 0.0)):.2f}%",
        mutation="-" if mutation is None else f"{float(mutation):.1f}%",
        reliability=str((attempt.get("post_reliability") or {}).get("level", "-")),
        decision=str(attempt.get("decision")), decision_reason=str(attempt.get("decision_reason")),
    )


def _summary(
    kind: str, report: Mapping[str, Any], localization: Mapping[str, Any] | None
) -> list[tuple[str, str]]:
    """The rows of the table under the verdict: what ran, how it stopped, what it cost, the sandbox."""
    rows = _repair_rows(report) if kind == "repair" else []
    if localization:
        rows += _localization_rows(localization)
    if kind == "testgen":
        rows += _testgen_rows(report)
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
    return rows


def _repair_rows(report: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [("target", str(report.get("target") or "-")),
            ("patch from", str(report.get("generator") or "-")),
            ("candidates tried", str(report.get("candidates_tried", 0))),
            ("returns to Discovery", str(report.get("relocalizations", 0)))]


def _localization_rows(localization: Mapping[str, Any]) -> list[tuple[str, str]]:
    tests = localization.get("tests") or {}
    return [("mode", str(localization.get("mode"))),
            ("stopped because", str(localization.get("stopped_because"))),
            ("tests", f"{tests.get('failed', 0)} failing, {tests.get('passed', 0)} passing, "
                      f"{tests.get('flaky', 0)} flaky, {tests.get('generated', 0)} generated"),
            ("inspections", str(len(localization.get("inspections", ()))))]


def _testgen_rows(report: Mapping[str, Any]) -> list[tuple[str, str]]:
    baseline = report.get("baseline") or {}
    return [("target", str(report.get("target"))), ("mode", str(report.get("mode"))),
            ("framework", str(report.get("framework"))),
            ("existing tests' coverage", f"{baseline.get('percent', 0.0):.2f}%" if baseline else "-"),
            ("best attempt", str(report.get("best_attempt", "-"))),
            ("module", str(report.get("output") or "-")),
            ("stopped because", str(report.get("stopped_because"))),
            ("LLM cost", f"${float(report.get('cost_usd') or 0.0):.4f}")]


def _trace_node(node: Mapping[str, Any]) -> dict[str, Any]:
    """One row of a trace's ranking: the function, where it is, its spectrum and its three scores."""
    return dict(fqn=str(node["fqn"]), location=f"{node.get('file')}:{node.get('start_line')}",
                failed_s=str(node.get("failed_s")), passed_s=str(node.get("passed_s")),
                scores=[f"{float(node.get(k) or 0.0):.3f}" for k in _FORMULAS])


def _discovery(localization: Mapping[str, Any]) -> dict[str, Any]:
    """What Discovery did to the ambiguity groups: sizes before and after, the groups it worked on."""
    found = localization.get("discovery") or {}
    return dict(sizes_before=list(found.get("group_sizes_before", ())),
                sizes_after=list(found.get("group_sizes_after", ())),
                stopped_because=found.get("stopped_because"), generated=found.get("generated", 0),
                before=[tuple(g) for r in found.get("rounds", ()) for g in r.get("groups", ())])


def _diff_lines(diff: str) -> list[tuple[str, str]]:
    """Each line of a unified diff with its class: ``hunk``, ``add``, ``del`` or ``""`` (context)."""
    return [("hunk" if line.startswith("@@")
             else "add" if line.startswith("+") and not line.startswith("+++")
             else "del" if line.startswith("-") and not line.startswith("---") else "", line)
            for line in diff.splitlines()]

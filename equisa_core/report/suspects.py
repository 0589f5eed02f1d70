"""The suspects the machine outputs for CI show (SARIF results, workflow annotations, the Markdown
summary): the ranking's functions, each with its rank, confidence, location and a one-line summary
of the evidence, and the unified diff's hunks as line replacements. Pure: reports in, values out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from equisa_core.localization.steps import InspectionRecord, LocalizationReport, RankedNode
from equisa_core.repair.report import RepairReport

__all__ = [
    "MIN_CONFIDENCE",
    "TOP_SUSPECTS",
    "Replacement",
    "Suspect",
    "evidence_line",
    "localization_of",
    "replacements",
    "suspects",
]

#: A function is reported (a SARIF result, an annotation) when its confidence reaches this; the
#: confidences of a ranking sum to at most 1, so at most 1 / MIN_CONFIDENCE functions are.
MIN_CONFIDENCE = 0.1
#: The functions the Markdown summary lists, whatever their confidence.
TOP_SUSPECTS = 5

_HUNK = re.compile(r"^@@ -(?P<start>\d+)(?:,(?P<count>\d+))? \+\d+(?:,(?P<new_count>\d+))? @@")


@dataclass(frozen=True)
class Suspect:
    """One function of the ranking as CI shows it: ``rank`` is 1 for the most confident."""

    rank: int
    fqn: str
    file: str | None
    start_line: int | None
    end_line: int | None
    confidence: float
    suspiciousness: float
    evidence: str
    patched: bool = False


@dataclass(frozen=True)
class Replacement:
    """Lines ``start_line`` .. ``start_line + deleted - 1`` of ``path`` (1-based, in the original
    file; ``deleted`` 0: an insertion before ``start_line``) replaced by ``inserted`` (whole lines,
    each ending in a newline)."""

    path: str
    start_line: int
    deleted: int
    inserted: str


def localization_of(report: LocalizationReport | RepairReport) -> LocalizationReport | None:
    """The localization behind a report: the report itself, or a repair's own (None when it stopped
    before localizing)."""
    return report if isinstance(report, LocalizationReport) else report.localization


def suspects(report: LocalizationReport | RepairReport, min_confidence: float = MIN_CONFIDENCE,
             limit: int | None = None) -> list[Suspect]:
    """The ranking's functions whose confidence reaches ``min_confidence``, best first (at most
    ``limit``); a repair's patched function is always one of them when its patch is verified
    (``fixed``), as the function its fix is attached to."""
    localization = localization_of(report)
    if localization is None:
        return []
    target = report.target if isinstance(report, RepairReport) and report.status == "fixed" else None
    chosen = [
        _suspect(rank, node, localization.inspections, node.fqn == target)
        for rank, node in enumerate(localization.ranking, start=1)
        if node.confidence >= min_confidence or node.fqn == target
    ]
    return chosen if limit is None else chosen[:limit]


def evidence_line(node: RankedNode, inspections: Sequence[InspectionRecord]) -> str:
    """One line on why ``node`` is suspected: its Tarantula score, then what the inspections and
    mutants of it showed (a fix confirmed by the whole suite, a fixing mutant, the last outcome)."""
    own = [i for i in inspections if i.target == node.fqn]
    fix = _fix_clause(own)
    parts = [f"Tarantula {node.suspiciousness:.2f}", *([fix] if fix is not None else [])]
    parts.append(_inspections_clause(own, show_last=fix is None))
    return "; ".join(parts)


def _fix_clause(own: Sequence[InspectionRecord]) -> str | None:
    """What the inspections of one function say of a fix: one confirmed by the whole suite, else a
    mutant that makes its failing tests pass; None when they found neither."""
    confirmed = next((i for i in own if i.fix_evidence == "FIX_CONFIRMED"), None)
    found = next((i for i in own if i.fix_evidence == "FIX_FOUND" and i.fix), None)
    fix = (confirmed and confirmed.fix) or (found and found.fix)
    if confirmed is not None:
        return f"a one-edit fix{f' ({fix})' if fix else ''} passes the whole suite"
    if found is not None:
        return f"a mutant ({fix}) makes its failing tests pass"
    return None


def _inspections_clause(own: Sequence[InspectionRecord], show_last: bool) -> str:
    """How many inspections one function had, with the last one's outcome when ``show_last``."""
    if not own:
        return "not inspected"
    last = own[-1]
    seen = last.fix_evidence or (last.outcome.value if last.outcome else None) or last.reflection
    count = f"{len(own)} inspection{'s' if len(own) > 1 else ''}"
    return count + (f", last: {seen}" if seen and show_last else "")


def replacements(diff: str) -> list[Replacement]:
    """The changed lines of a unified diff as replacements of the original files' lines: each run of
    removed and added lines in a hunk is one (context lines are left as they are)."""
    found: list[Replacement] = []
    path = ""
    line = old_left = new_left = 0  # the original's line number; the hunk's lines still to come
    deleted: list[str] = []
    inserted: list[str] = []

    def flush() -> None:
        if deleted or inserted:
            found.append(Replacement(path, line - len(deleted), len(deleted),
                                     "".join(text + "\n" for text in inserted)))
            deleted.clear()
            inserted.clear()

    for text in diff.splitlines():
        if old_left or new_left:  # inside a hunk
            if text.startswith("\\"):  # "\ No newline at end of file"
                continue
            kind, body = text[:1], text[1:]
            if kind == "-":
                deleted.append(body)
                line, old_left = line + 1, old_left - 1
            elif kind == "+":
                inserted.append(body)
                new_left -= 1
            else:  # context (an empty line is a context line whose space was stripped)
                flush()
                line, old_left, new_left = line + 1, old_left - 1, new_left - 1
            continue
        flush()
        hunk = _HUNK.match(text)
        if text.startswith("+++ "):
            path = _diff_path(text[4:])
        elif hunk:
            old_left = int(hunk.group("count") or 1)
            new_left = int(hunk.group("new_count") or 1)
            # An empty old range ("-5,0") names the line after which the hunk's lines go.
            line = int(hunk.group("start")) + (1 if old_left == 0 else 0)
    flush()
    return found


def _suspect(rank: int, node: RankedNode, inspections: Sequence[InspectionRecord], patched: bool) -> Suspect:
    return Suspect(rank=rank, fqn=node.fqn, file=node.file, start_line=node.start_line,
                   end_line=node.end_line, confidence=node.confidence, suspiciousness=node.suspiciousness,
                   evidence=evidence_line(node, inspections), patched=patched)


def _diff_path(name: str) -> str:
    """``b/pkg/mod.py`` (possibly quoted, possibly followed by a tab) -> ``pkg/mod.py``."""
    name = name.split("\t", 1)[0].strip()
    if len(name) > 1 and name[0] == name[-1] == '"':
        name = name[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape").encode(
            "latin-1").decode("utf-8", "replace")
    return name[2:] if name.startswith(("a/", "b/")) else name

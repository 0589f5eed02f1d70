"""The judged patches of the real-bug repair benchmark, for a later fit (``bench/patch_pattern_fit.py``).

Every run of ``bench.realrepair run`` leaves in ``<cache>/results/<bug id>/``:

- ``<commit[:12]>.json``: the run's record: ``project`` (BugsInPy project, or ``refactory``),
  ``status``, ``target``, the judge's ``label`` (``judge.label_of``), ``original`` (the folder
  holding the original file texts the run repaired), the outcome and wall time;
- ``<commit[:12]>.report.json``: EQUISA's whole JSON report (``diff``, ``target``, the evidence);
- ``<commit[:12]>.diff``: the reported diff.

``judged_patches(cache, versions)`` reads them back, one ``JudgedPatch`` per run whose patch the
judge labelled (status ``fixed`` or ``plausible_only``)::

    from bench.realrepair import judged_patches
    for patch in judged_patches(Path("~/.cache/equisa-bench/realrepair").expanduser(), ["2db407d"]):
        patch.label, patch.diff, patch.original / "solution.py"

Results written before these fields existed are read too: the project from the bug's id, the label
from the outcome, the target and diff from the kept report or diff, the original from the case.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .judge import label_of
from .report import project_of

_COMMIT = re.compile(r"[0-9a-f]{7,40}")


@dataclass(frozen=True)
class JudgedPatch:
    """One run's judged patch."""

    project: str  #: BugsInPy project, or ``refactory``
    bug_id: str  #: ``refactory-wrong_1_415``, ``bugsinpy-black-10``
    version: str  #: the version as asked for (a commit, or a label's)
    commit: str  #: the full commit of the EQUISA version that ran
    status: str  #: ``fixed`` or ``plausible_only``
    target: str | None  #: the function the patch changes (the report's ``target``)
    diff: str  #: the patch, ``git apply``-able on ``original``
    label: str  #: ``correct``, ``overfit``, ``withheld_correct``, ``withheld_overfit`` or ``unapplied``
    original: Path | None  #: the folder holding the original file texts (the buggy tree)
    report: Path | None  #: EQUISA's JSON report of the run, when kept
    question: int | None = None  #: Refactory's question


def _wanted(versions: Sequence[str | tuple[str, str]]) -> list[tuple[str, str]]:
    """(name, commit or commit prefix) of each version: a commit (7 to 40 hex digits), a (label,
    commit) pair as ``steps.resolve_versions`` gives, or a git revision (resolved here)."""
    out: list[tuple[str, str]] = []
    for version in versions:
        if isinstance(version, tuple):
            out.append((version[0], version[1]))
        elif _COMMIT.fullmatch(version):
            out.append((version, version))
        else:
            from .steps import resolve_versions  # git, only for names such as HEAD or BASE

            out += resolve_versions([version])
    return out


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _original(cache: Path, row: Mapping) -> Path | None:
    if row.get("original"):
        return Path(row["original"])
    case = _read(cache / "bugs" / row["id"] / "case.json") or {}
    if case.get("buggy"):
        return Path(case["buggy"])
    folder = cache / "bugs" / row["id"] / "buggy"
    return folder if folder.exists() else None


def judged_patches(cache: Path | str, versions: Sequence[str | tuple[str, str]]) -> list[JudgedPatch]:
    """Every judged patch of ``versions`` in the benchmark's ``cache`` (``~/.cache/equisa-bench/
    realrepair``), by bug id then version. A run without a judged patch (``not_fixed``, an error, the
    time limit) is left out; so is one whose diff was not kept."""
    cache = Path(cache).expanduser()
    results = cache / "results"
    patches: list[JudgedPatch] = []
    if not results.exists():
        return patches
    wanted = _wanted(versions)
    for folder in sorted(p for p in results.iterdir() if p.is_dir()):
        for name, commit in wanted:
            for path in sorted(folder.glob(f"{commit[:12]}*.json")):
                if path.name.endswith(".report.json"):
                    continue
                row = _read(path)
                if not row or row.get("status") not in ("fixed", "plausible_only"):
                    continue
                label = row.get("label") or label_of(row)
                stem = path.name.removesuffix(".json")
                report_path = folder / f"{stem}.report.json"
                report = _read(report_path) if report_path.exists() else None
                diff_path = folder / f"{stem}.diff"
                diff = (report or {}).get("diff") or (diff_path.read_text() if diff_path.exists() else "")
                if label is None or not diff:
                    continue
                patches.append(
                    JudgedPatch(
                        project=project_of(row),
                        bug_id=row["id"],
                        version=name,
                        commit=row.get("commit", commit),
                        status=row["status"],
                        target=row.get("target") or (report or {}).get("target"),
                        diff=diff,
                        label=label,
                        original=_original(cache, row),
                        report=report_path if report is not None else None,
                        question=row.get("question"),
                    )
                )
    return patches

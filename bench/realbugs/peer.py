"""FauxPy as its authors ran it: statement granularity, the bug's own failing tests, best statement.

The study (``study.py``) ran FauxPy's SBFL at statement granularity with ``--failing-list`` (only
the bug's target tests count as failing; other failing tests are left out) and scored a function
by the best score of its statements (their ``csv_score_function_granularity_manager.py``: "the
suspiciousness score for a method is defined as the maximum score of its statements"; a
statement belongs to the smallest function span, decorators included, that holds it; statements
outside every function are dropped). Functions are named as ``truth.py`` names them
(``Class.method``, ``outer.<locals>.inner``), so the report matches them as it matches FauxPy's
function-granularity output.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .truth import Function, functions_of

#: The raw statement scores and the function scores lifted from them, in the bug's result folder.
STATEMENT_CSV = "fauxpy_statement_Scores_Ochiai.csv"
FUNCTION_CSV = "fauxpy_statement_functions.csv"
#: The study's test files are left for the benchmark's own (the failing tests' files) where its
#: published run took longer than this: tornado:5 and :6 took 2002 s and 1777 s there, past the
#: run step's 1800 s limit per tool on this benchmark's two cores.
STUDY_SUITE_MAX_S = 600.0


@dataclass(frozen=True)
class StatementPlan:
    """What the statement-mode run is given: test files, ``--src``, ``--exclude``, failing tests."""

    tests: list[str]
    src: str
    exclude: list[str]
    failing: list[str]
    origin: str  # "study": the study's test files; "scope": the benchmark's own

    def failing_list(self) -> str:
        """FauxPy's ``--failing-list`` value, as the study's scripts wrote it: ``[a,b]``."""
        return "[" + ",".join(self.failing) + "]"


def statement_plan(
    record: Mapping, study: Mapping | None, root: Path, exclude_default: Sequence[str]
) -> StatementPlan:
    """The study's test files (those present in ``root``), ``--src`` and ``--exclude`` when the
    study ran this bug (and took at most ``STUDY_SUITE_MAX_S``), else the benchmark's scope with
    ``--src .``; the failing tests are always the ones the prepare step verified."""
    failing = list(record.get("failing_targets") or record.get("target_tests") or [])
    setup = (study or {}).get("setup")
    slow = ((study or {}).get("published") or {}).get("time_s", 0) > STUDY_SUITE_MAX_S
    if setup and slow:
        exclude = [path for path in setup.get("exclude") or [] if (root / path).exists()]
        return StatementPlan(
            list(record["scope"]),
            setup.get("src") or ".",
            exclude,
            failing,
            "scope (the study's suite took over STUDY_SUITE_MAX_S)",
        )
    if setup:
        tests = [t for t in setup.get("tests", []) if (root / t).exists()]
        for own in dict.fromkeys(node.split("::")[0] for node in failing):  # never without them
            if own not in tests:
                tests.append(own)
        # FauxPy refuses an --exclude path that is not there: the study's ``env`` was the
        # BugsInPy venv inside the checkout, which this benchmark keeps elsewhere.
        exclude = [path for path in setup.get("exclude") or [] if (root / path).exists()]
        return StatementPlan(tests, setup.get("src") or ".", exclude, failing, "study")
    return StatementPlan(list(record["scope"]), ".", list(exclude_default), failing, "scope")


def read_statements(csv_path: Path, copy_root: str) -> list[tuple[str, int, float]]:
    """(file relative to the copy, line, score) of FauxPy's statement entities ``path::line``."""
    out = []
    with open(csv_path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            path, line = row["Entity"].rsplit("::", 1)
            rel = path[len(copy_root) + 1 :] if path.startswith(copy_root + "/") else path
            out.append((rel, int(line), float(row["Score"])))
    return out


def smallest(functions: Sequence[Function], line: int) -> Function | None:
    """The study's choice: the function of smallest span (decorators included) holding ``line``;
    the first such one in source order on a tie."""
    best = None
    for function in functions:
        if function.contains(line) and (best is None or _span(function) < _span(best)):
            best = function
    return best


def _span(function: Function) -> int:
    return function.end_line - function.first_line + 1


def best_statement(statements: Sequence[tuple[str, int, float]], root: Path) -> list[tuple[Function, float]]:
    """Each function scored by its best statement, highest first (ties: file, then line)."""
    defs: dict[str, list[Function]] = {}
    scores: dict[Function, float] = {}
    for file, line, score in statements:
        if file not in defs:
            defs[file] = _functions(root / file, file)
        function = smallest(defs[file], line)
        if function is not None and score > scores.get(function, float("-inf")):
            scores[function] = score
    return sorted(scores.items(), key=lambda item: (-item[1], item[0].file, item[0].first_line))


def _functions(path: Path, file: str) -> list[Function]:
    try:
        return functions_of(path.read_text(encoding="utf-8", errors="replace"), file)
    except (OSError, SyntaxError, ValueError):
        return []


def write_functions(scored: Sequence[tuple[Function, float]], dest: Path) -> None:
    """FauxPy's function CSV format (``file::name::first::last``), so the report reads it alike."""
    with open(dest, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Entity", "Score"])
        for function, score in scored:
            writer.writerow(
                [
                    f"{function.file}::{function.qualname}::{function.first_line}::{function.end_line}",
                    repr(score),
                ]
            )


def lift(out: Path, copy_root: Path) -> int | None:
    """Read ``STATEMENT_CSV`` in ``out``, write ``FUNCTION_CSV``; the number of functions."""
    source = out / STATEMENT_CSV
    if not source.exists():
        return None
    scored = best_statement(read_statements(source, str(copy_root)), copy_root)
    write_functions(scored, out / FUNCTION_CSV)
    return len(scored)

"""``equisa history``: what the DuckDB history says about past runs.

It answers a maintainer's morning questions: the runs of a repository, the fix rate per
repository, the functions that keep being blamed, the LLM spend per day; ``--json OUT`` writes the
same answers as JSON. It only reads (in a shared turn, see ``tasks/history.py``).
"""

from __future__ import annotations

import argparse
import json
from datetime import date, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from equisa_core.errors import EXIT_OK, InputError
from equisa_core.history.record import repo_id
from equisa_core.operations.storage import resolve_db

__all__ = ["register", "history_answers"]

_RUNS = """
SELECT r.run_id, p.path AS repository, r.kind, r.status, r.target, r.mode, r.finished_at, r.cost_usd,
       r.tests_failed, r.tests_passed, r.parent_flow_run_id, r.artifacts
FROM runs r JOIN repositories p USING (repo_id)
WHERE (? IS NULL OR r.repo_id = ?)
ORDER BY r.finished_at DESC LIMIT ?"""
_FIX_RATE = """
SELECT p.path AS repository, count(*) AS repairs,
       count(*) FILTER (WHERE r.status = 'fixed') AS fixed,
       count(*) FILTER (WHERE r.status = 'plausible_only') AS plausible_only,
       round(count(*) FILTER (WHERE r.status = 'fixed') / count(*), 4) AS fix_rate,
       max(r.finished_at) AS last_run
FROM runs r JOIN repositories p USING (repo_id)
WHERE r.kind = 'repair' AND (? IS NULL OR r.repo_id = ?)
GROUP BY p.path ORDER BY fix_rate ASC, repairs DESC"""
_BLAMED = """
SELECT p.path AS repository, r.target AS function, count(*) AS runs,
       count(*) FILTER (WHERE r.status = 'fixed') AS fixed, max(r.finished_at) AS last_blamed
FROM runs r JOIN repositories p USING (repo_id)
WHERE r.target IS NOT NULL AND r.kind IN ('localize', 'repair') AND (? IS NULL OR r.repo_id = ?)
GROUP BY p.path, r.target HAVING count(*) >= ?
ORDER BY runs DESC, last_blamed DESC LIMIT ?"""
_SPEND = """
WITH per_run AS (
    SELECT CAST(r.finished_at AS DATE) AS day, r.cost_usd, r.run_id FROM runs r
    WHERE r.kind <> 'trace' AND r.finished_at >= current_date - CAST(? AS INTEGER)
      AND (? IS NULL OR r.repo_id = ?)),
calls AS (
    SELECT CAST(c.called_at AS DATE) AS day, count(*) AS calls, sum(c.input_tokens) AS input_tokens,
           sum(c.output_tokens) AS output_tokens
    FROM llm_calls c JOIN per_run USING (run_id) GROUP BY 1)
SELECT per_run.day, round(sum(per_run.cost_usd), 6) AS usd, count(*) AS runs,
       coalesce(any_value(calls.calls), 0) AS calls,
       coalesce(any_value(calls.input_tokens), 0) AS input_tokens,
       coalesce(any_value(calls.output_tokens), 0) AS output_tokens
FROM per_run LEFT JOIN calls USING (day) GROUP BY per_run.day ORDER BY per_run.day DESC"""


def register(commands: Any) -> None:
    """Add ``equisa history``."""
    parser = commands.add_parser(
        "history", help="past runs from the DuckDB history: runs, fix rates, blamed functions, LLM spend",
        description="Read the history of recorded runs: the runs of a repository, the fix rate per "
        "repository, the functions that keep being blamed and the LLM spend per day.",
    )
    parser.add_argument("repository", nargs="?", type=Path,
                        help="only this repository (its folder; default: every repository)")
    parser.add_argument("--db", metavar="FILE", help="DuckDB history (default: EQUISA_DB, else "
                                                     "~/.local/share/equisa/history.duckdb)")
    parser.add_argument("--limit", type=int, default=20, metavar="N", help="runs listed (default 20)")
    parser.add_argument("--days", type=int, default=30, metavar="N",
                        help="days of LLM spend shown (default 30)")
    parser.add_argument("--min-blamed", type=int, default=2, metavar="N",
                        help="runs a function must be blamed in to be listed (default 2)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the answers as JSON here")
    parser.set_defaults(handler=_history_command)


def history_answers(db: Path, repository: Path | None, limit: int = 20, days: int = 30,
                    min_blamed: int = 2) -> dict[str, Any]:
    """The four answers, as plain data (what ``--json`` writes)."""
    from tasks.history import query, spooled_runs

    rid = repo_id(str(repository.resolve())) if repository is not None else None
    return {
        "db": str(db),
        "repository": str(repository.resolve()) if repository is not None else None,
        "runs": query(db, _RUNS, [rid, rid, limit]),
        "fix_rate": query(db, _FIX_RATE, [rid, rid]),
        "blamed": query(db, _BLAMED, [rid, rid, min_blamed, limit]),
        "llm_spend_per_day": query(db, _SPEND, [days, rid, rid]),
        "spooled_runs": len(spooled_runs(db)),
    }


def _history_command(args: argparse.Namespace, console: Console) -> int:
    for name in ("limit", "days", "min_blamed"):
        if getattr(args, name) < 1:
            raise InputError(f"--{name.replace('_', '-')} must be at least 1")
    if args.repository is not None and not args.repository.is_dir():
        raise InputError(f"{args.repository} is not a folder")
    db = resolve_db(args.db)
    answers = history_answers(db, args.repository, args.limit, args.days, args.min_blamed)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(answers, indent=2, default=_plain) + "\n", encoding="utf-8")
    _print(answers, console, db)
    if args.json:
        console.print(f"Answers written to {args.json}")
    return EXIT_OK


def _plain(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def _print(answers: dict[str, Any], console: Console, db: Path) -> None:
    if not db.exists():
        console.print(f"No history yet at {db}: runs are recorded there as they finish.", highlight=False)
    if answers["spooled_runs"]:
        console.print(f"[yellow]note:[/] {answers['spooled_runs']} runs wait in the spool; `equisa flush` "
                      "writes them to the history", highlight=False)
    _table(console, "Runs (newest first)", answers["runs"],
           ("finished_at", "kind", "status", "target", "cost_usd", "repository", "run_id"))
    _table(console, "Fix rate per repository (repair runs)", answers["fix_rate"],
           ("repository", "repairs", "fixed", "plausible_only", "fix_rate", "last_run"))
    _table(console, "Functions that keep being blamed", answers["blamed"],
           ("function", "runs", "fixed", "last_blamed", "repository"))
    _table(console, "LLM spend per day", answers["llm_spend_per_day"],
           ("day", "usd", "runs", "calls", "input_tokens", "output_tokens"))


def _table(console: Console, title: str, rows: list[dict[str, Any]], columns: tuple[str, ...]) -> None:
    if not rows:
        console.print(f"{title}: none", highlight=False)
        return
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(_cell(row.get(c)) for c in columns))
    console.print(table)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)

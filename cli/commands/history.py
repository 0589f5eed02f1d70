"""``equisa history``: what the DuckDB history says about past runs (``cli/history_answers.py``).

It answers a maintainer's morning questions: the runs of a repository, the fix rate per
repository, the functions that keep being blamed, the LLM spend per day; ``--json OUT`` writes the
same answers as JSON.
"""

from __future__ import annotations

import argparse
from datetime import date, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from equisa_core.errors import EXIT_OK, InputError
from equisa_core.operations.storage import resolve_db

__all__ = ["register"]


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


def _history_command(args: argparse.Namespace, console: Console) -> int:
    from cli.flow_runs import show, write_json
    from cli.history_answers import history_answers
    from equisa_core.report.console import history_summary

    for name in ("limit", "days", "min_blamed"):
        if getattr(args, name) < 1:
            raise InputError(f"--{name.replace('_', '-')} must be at least 1")
    if args.repository is not None and not args.repository.is_dir():
        raise InputError(f"{args.repository} is not a folder")
    db = resolve_db(args.db)
    answers = history_answers(db, args.repository, args.limit, args.days, args.min_blamed)
    write_json(args.json, answers, default=_plain)
    show(console, history_summary(answers, db.exists()))
    if args.json:
        console.print(f"Answers written to {args.json}")
    return EXIT_OK


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime | date) else str(value)

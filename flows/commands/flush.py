"""``equisa flush``: write what waits in the local spool — artifacts to their store, runs to the history.

Runs spool what they cannot write (S3 down, credentials rejected, bucket missing, a history file
that is corrupt, newer or locked) and finish anyway. This command empties the spool, and says
exactly why when it cannot: exit 40 (store unreachable), 41 (credentials), 42 (no such bucket),
43 (history unusable). Whatever is not written stays in the spool for the next attempt; later
runs that reach the same store or history also flush it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from equisa_core.errors import EXIT_OK
from equisa_core.operations.storage import resolve_artifacts, resolve_db, resolve_spool

__all__ = ["register", "flush_everything"]


def register(commands: Any) -> None:
    """Add ``equisa flush``."""
    parser = commands.add_parser(
        "flush", help="upload spooled artifacts and write spooled runs to the history",
        description="Write what waits in the local spool (EQUISA_SPOOL): artifacts to their store, "
        "runs to the DuckDB history. By default every spooled destination; --artifacts or --db "
        "restrict it to one.",
    )
    parser.add_argument("--artifacts", metavar="FOLDER|s3://BUCKET/PREFIX",
                        help="flush only the artifacts spooled for this store")
    parser.add_argument("--db", metavar="FILE", help="flush only the runs spooled for this history file")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write what was flushed as JSON here")
    parser.set_defaults(handler=_flush_command)


def flush_everything(artifacts: str | None, db: str | None) -> dict[str, Any]:
    """Flush the spooled artifacts and runs (all, or only the named destinations)."""
    from tasks.artifacts import flush_spool
    from tasks.history import ingest_spool, spooled_databases

    only = resolve_artifacts(artifacts) if artifacts else None
    stores = flush_spool(only=only)
    databases = [resolve_db(db)] if db else spooled_databases()
    runs = [ingest_spool(path) for path in databases]
    return {"spool": str(resolve_spool()), "artifacts": [r.model_dump() for r in stores],
            "history": [r.model_dump() for r in runs]}


def _flush_command(args: argparse.Namespace, console: Console) -> int:
    result = flush_everything(args.artifacts, args.db)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    rows = [("artifacts", r["destination"], r["uploaded"], r["remaining"], r["error"])
            for r in result["artifacts"]]
    rows += [("history", r["db"], r["ingested"], r["remaining"], r["error"]) for r in result["history"]]
    if not rows:
        console.print(f"Nothing waits in the spool ({result['spool']}).", highlight=False)
    else:
        table = Table(title=f"Flushed from {result['spool']}", title_justify="left")
        for column in ("what", "destination", "written", "still waiting", "error"):
            table.add_column(column, overflow="fold")
        for what, where, done, left, error in rows:
            table.add_row(what, where, str(done), str(left), error or "-")
        console.print(table)
    failures = [r for r in [*result["artifacts"], *result["history"]] if r["error"]]
    for failure in failures:
        console.print(f"[bold red]equisa:[/] {failure['error']}", highlight=False, soft_wrap=True)
    return failures[0]["exit_code"] if failures else EXIT_OK

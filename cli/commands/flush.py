"""``equisa flush``: write what waits in the local spool — artifacts to their store, runs to the history.

Runs spool what they cannot write (S3 down, credentials rejected, bucket missing, a history file
that is corrupt, newer or locked) and finish anyway. This command empties the spool
(``cli/spool_flush.py``), and says exactly why when it cannot: exit 40 (store unreachable), 41
(credentials), 42 (no such bucket), 43 (history unusable). Whatever is not written stays in the
spool for the next attempt; later runs that reach the same store or history also flush it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from equisa_core.errors import EXIT_OK

__all__ = ["register"]


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


def _flush_command(args: argparse.Namespace, console: Console) -> int:
    from cli.flow_runs import show, write_json
    from cli.spool_flush import flush_everything
    from equisa_core.report.console import flush_summary

    result = flush_everything(args.artifacts, args.db)
    write_json(args.json, result)
    show(console, flush_summary(result))
    failures = [r for r in [*result["artifacts"], *result["history"]] if r["error"]]
    return failures[0]["exit_code"] if failures else EXIT_OK

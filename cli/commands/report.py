"""``equisa report RUN_ID``: the HTML report of a recorded run, fetched from wherever it was stored
(``cli/run_report.py``). Exit 44 when no recorded run has that id."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from equisa_core.errors import EXIT_OK
from equisa_core.operations.storage import resolve_db

__all__ = ["register"]


def register(commands: Any) -> None:
    """Add ``equisa report``."""
    parser = commands.add_parser(
        "report", help="write the HTML report of a recorded run",
        description="Fetch a recorded run's report from its artifact store and write it as one "
        "self-contained HTML file.",
    )
    parser.add_argument("run_id", metavar="RUN_ID", help="the run id (printed at the end of every run)")
    parser.add_argument("--db", metavar="FILE", help="DuckDB history (default: EQUISA_DB)")
    parser.add_argument("-o", "--output", type=Path, metavar="OUT",
                        help="where to write the HTML (default: equisa-<RUN_ID>.html)")
    parser.set_defaults(handler=_report_command)


def _report_command(args: argparse.Namespace, console: Console) -> int:
    from cli.run_report import recorded_report_html

    html = recorded_report_html(resolve_db(args.db), args.run_id)
    out = args.output or Path(f"equisa-{args.run_id}.html")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html, encoding="utf-8")
    console.print(f"Report of run {args.run_id} written to {out}", highlight=False)
    return EXIT_OK

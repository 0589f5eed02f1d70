"""``equisa report RUN_ID``: the HTML report of a recorded run, fetched from wherever it was stored.

The run is looked up in the history (its kind, repository and artifact folder), its
``report.json`` is read from the store (or from the spool if it was never uploaded), and the HTML
is rendered again locally. Exit 44 when no recorded run has that id.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console

from equisa_core.errors import EXIT_OK, RunNotFoundError
from equisa_core.operations.storage import parse_location, resolve_db, run_key
from equisa_core.report import render_report

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
    from tasks.artifacts import ArtifactStore
    from tasks.history import query

    db = resolve_db(args.db)
    rows = query(db, "SELECT r.kind, r.artifacts, p.path FROM runs r JOIN repositories p USING (repo_id) "
                     "WHERE r.run_id = ?", [args.run_id])
    if not rows or not rows[0]["artifacts"]:
        raise RunNotFoundError(f"no recorded run {args.run_id!r} in {db}")
    folder = str(rows[0]["artifacts"])
    suffix = f"/runs/{args.run_id}"
    root = folder[: -len(suffix)] if folder.endswith(suffix) else folder
    store = ArtifactStore(parse_location(root))
    report = json.loads(store.get(run_key(args.run_id, "report.json")))
    html = render_report(rows[0]["kind"], report, run_id=args.run_id, repository=rows[0]["path"])
    out = args.output or Path(f"equisa-{args.run_id}.html")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html, encoding="utf-8")
    console.print(f"Report of run {args.run_id} written to {out}", highlight=False)
    return EXIT_OK

"""The HTML report of a recorded run, made again: the run is looked up in the history, its
``report.json`` read from its artifact store (or from the spool if it was never uploaded), and the
HTML rendered locally (``equisa report``)."""

from __future__ import annotations

import json
from pathlib import Path

from cli.history_answers import recorded_run
from equisa_core.operations.storage import parse_location, run_key
from equisa_core.report import render_report
from tasks.storage.artifacts import ArtifactStore

__all__ = ["recorded_report_html"]


def recorded_report_html(db: Path, run_id: str) -> str:
    """The self-contained HTML report of the run ``run_id`` of the history ``db``."""
    run = recorded_run(db, run_id)
    folder = str(run["artifacts"])
    suffix = f"/runs/{run_id}"
    root = folder[: -len(suffix)] if folder.endswith(suffix) else folder
    store = ArtifactStore(parse_location(root))
    report = json.loads(store.get(run_key(run_id, "report.json")))
    return render_report(run["kind"], report, run_id=run_id, repository=run["path"])

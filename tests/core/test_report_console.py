"""What the commands print is made without printing (``equisa_core/report/console.py``)."""

from __future__ import annotations

from rich.console import Console

from equisa_core.errors import RepositoryNotFoundError
from equisa_core.operations.batch import BatchSummary, RepositoryResult
from equisa_core.report.console import (
    Printed,
    batch_summary,
    duration,
    error_line,
    flush_summary,
    history_summary,
)


def _text(printed: list[Printed]) -> str:
    console = Console(width=200, record=True, color_system=None)
    for item in printed:
        console.print(item.content, highlight=item.highlight, soft_wrap=item.soft_wrap)
    return console.export_text()


def test_durations_read_as_a_person_says_them() -> None:
    assert [duration(s) for s in (1800, 90, 7200, 150, 120)] == ["30 min", "90 s", "2 h", "150 s", "2 min"]


def test_an_error_is_one_line_and_a_bug_says_so() -> None:
    missing = RepositoryNotFoundError("no [such] folder")
    assert _text([error_line(missing)]).strip() == "equisa: no [such] folder"
    assert "internal error: ValueError: x" in _text([error_line(ValueError("x"))])


def test_tables_of_a_batch_the_history_and_the_spool() -> None:
    result = RepositoryResult(name="shop", source="/shop", status="fixed", target="m.f", seconds=2.0)
    summary = BatchSummary(results=(result,), counts={"fixed": 1}, seconds=3.0, reports_dir="/r")
    assert "shop" in _text(batch_summary(summary)) and "Reports in /r" in _text(batch_summary(summary))
    answers = {"db": "/h.duckdb", "spooled_runs": 2, "runs": [], "fix_rate": [], "blamed": [],
               "llm_spend_per_day": [{"day": "2026-01-01", "usd": 0.5}]}
    shown = _text(history_summary(answers, db_exists=False))
    assert "No history yet at /h.duckdb" in shown and "2 runs wait in the spool" in shown
    assert "Runs (newest first): none" in shown and "0.5" in shown
    assert _text(flush_summary({"spool": "/s", "artifacts": [], "history": []})).strip() == \
        "Nothing waits in the spool (/s)."

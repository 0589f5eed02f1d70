"""What the DuckDB history says about past runs: the answers of ``equisa history`` (the runs of a
repository with their outcome and exit code, failed ones included; the fix rate per repository over
the repairs that ran to their verdict, the functions that keep being blamed, the LLM spend per day)
and where a recorded run's artifacts are (``equisa report``). It only reads, in a shared turn
(``tasks/storage/history.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from equisa_core.errors import RunNotFoundError
from equisa_core.history.record import repo_id
from tasks.storage.history import query, spooled_runs

__all__ = ["history_answers", "recorded_run"]

_RUNS = """
SELECT r.run_id, p.path AS repository, r.kind, r.status, r.exit_code, r.target, r.mode, r.finished_at,
       r.cost_usd, r.tests_failed, r.tests_passed, r.parent_flow_run_id, r.artifacts, r.error_type, r.error
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
WHERE r.kind = 'repair' AND r.status NOT IN ('error', 'nothing_to_do', 'interrupted')
  AND (? IS NULL OR r.repo_id = ?)
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


def history_answers(db: Path, repository: Path | None, limit: int = 20, days: int = 30,
                    min_blamed: int = 2) -> dict[str, Any]:
    """The four answers, as plain data (what ``equisa history --json`` writes)."""
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


def recorded_run(db: Path, run_id: str) -> dict[str, Any]:
    """The kind, artifact folder (``artifacts``) and repository (``path``) of the recorded run ``run_id``;
    raises ``RunNotFoundError`` (exit 44) when the history has no such run with artifacts."""
    rows = query(db, "SELECT r.kind, r.artifacts, p.path FROM runs r JOIN repositories p USING (repo_id) "
                     "WHERE r.run_id = ?", [run_id])
    if not rows or not rows[0]["artifacts"]:
        raise RunNotFoundError(f"no recorded run {run_id!r} in {db}")
    return rows[0]

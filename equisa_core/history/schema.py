"""The DuckDB schema of the history, as numbered migrations. Pure text.

``schema_version`` holds one row per applied migration. A file whose highest version is above
``SCHEMA_VERSION`` was written by a newer EQUISA and is refused (never downgraded). Tables carry
no primary keys: a run's rows are replaced as a whole (delete by ``run_id``, insert, in one
transaction), which is what makes ingesting a spooled run twice harmless.
"""

from __future__ import annotations

__all__ = ["SCHEMA_VERSION", "MIGRATIONS", "TABLES"]

_V1 = (
    """CREATE TABLE repositories (
        repo_id VARCHAR NOT NULL,      -- sha256 of the absolute path, first 16 hex digits
        path VARCHAR NOT NULL,
        name VARCHAR NOT NULL,
        first_seen TIMESTAMP NOT NULL)""",
    """CREATE TABLE runs (
        run_id VARCHAR NOT NULL,       -- the Prefect flow run id of the run
        repo_id VARCHAR NOT NULL,
        kind VARCHAR NOT NULL,         -- trace, localize, repair, testgen
        status VARCHAR,                -- repair: fixed, plausible_only, not_fixed; else converged/...;
                                       -- a failed run: error, nothing_to_do, interrupted (version 2)
        mode VARCHAR,                  -- llm, deterministic
        target VARCHAR,                -- the blamed function (repair's target, localize's top node)
        converged BOOLEAN,
        stopped_because VARCHAR,
        started_at TIMESTAMP,
        finished_at TIMESTAMP NOT NULL,
        cost_usd DOUBLE,
        tests_passed INTEGER,
        tests_failed INTEGER,
        flow_run_id VARCHAR,
        parent_flow_run_id VARCHAR,
        artifacts VARCHAR,             -- URI of runs/<run_id>/ in the artifact store
        problems VARCHAR[])""",
    """CREATE TABLE tests (
        repo_id VARCHAR NOT NULL, test_id VARCHAR NOT NULL, generated BOOLEAN, first_seen TIMESTAMP)""",
    """CREATE TABLE test_results (
        run_id VARCHAR NOT NULL, test_id VARCHAR NOT NULL, outcome VARCHAR NOT NULL, duration_s DOUBLE,
        exception_type VARCHAR, flaky BOOLEAN)""",
    """CREATE TABLE nodes (
        run_id VARCHAR NOT NULL, fqn VARCHAR NOT NULL, file VARCHAR, start_line INTEGER, end_line INTEGER,
        rank INTEGER, tarantula DOUBLE, ochiai DOUBLE, dstar DOUBLE, confidence DOUBLE)""",
    """CREATE TABLE node_scores (
        run_id VARCHAR NOT NULL, iteration INTEGER NOT NULL, fqn VARCHAR NOT NULL,
        confidence DOUBLE NOT NULL)""",
    """CREATE TABLE inspections (
        run_id VARCHAR NOT NULL, iteration INTEGER NOT NULL, target VARCHAR NOT NULL, strategy VARCHAR,
        outcome VARCHAR, reflection VARCHAR, reflection_by VARCHAR, prior DOUBLE, posterior DOUBLE,
        fix_evidence VARCHAR, fix VARCHAR, mutants_tried INTEGER, tests_run INTEGER, reasoning VARCHAR)""",
    """CREATE TABLE patches (
        run_id VARCHAR NOT NULL, candidate VARCHAR NOT NULL, status VARCHAR NOT NULL, detail VARCHAR,
        accepted BOOLEAN NOT NULL, target VARCHAR, diff VARCHAR)""",
    """CREATE TABLE validations (
        run_id VARCHAR NOT NULL, candidate VARCHAR NOT NULL, check_name VARCHAR NOT NULL, result VARCHAR)""",
    """CREATE TABLE llm_calls (
        run_id VARCHAR NOT NULL, called_at TIMESTAMP NOT NULL, purpose VARCHAR, model VARCHAR,
        input_tokens INTEGER, output_tokens INTEGER, cost_usd DOUBLE, latency_s DOUBLE, error VARCHAR)""",
    """CREATE TABLE testgen_attempts (
        run_id VARCHAR NOT NULL, round INTEGER NOT NULL, groups VARCHAR[], proposed INTEGER, kept INTEGER,
        dropped VARCHAR[])""",
)

#: Version 2: every run is recorded, whatever its outcome: the command's exit code for it, and the error
#: that stopped a failed run. Rows written before are left NULL there (what those runs exited with
#: was not kept).
_V2 = (
    "ALTER TABLE runs ADD COLUMN exit_code INTEGER",  # 0, or the outcome's or error's code (docs/exit-codes)
    "ALTER TABLE runs ADD COLUMN error_type VARCHAR",  # the error's class, for a failed run
    "ALTER TABLE runs ADD COLUMN error VARCHAR",  # the message the user saw
)

#: (version, statements) in order; each migration runs in one transaction.
MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = ((1, _V1), (2, _V2))
SCHEMA_VERSION = MIGRATIONS[-1][0]

#: Column order of each table that holds a run's rows (what ``rows_for_run`` fills).
TABLES: dict[str, tuple[str, ...]] = {
    "runs": ("run_id", "repo_id", "kind", "status", "mode", "target", "converged", "stopped_because",
             "started_at", "finished_at", "cost_usd", "tests_passed", "tests_failed", "flow_run_id",
             "parent_flow_run_id", "artifacts", "problems", "exit_code", "error_type", "error"),
    "test_results": ("run_id", "test_id", "outcome", "duration_s", "exception_type", "flaky"),
    "nodes": ("run_id", "fqn", "file", "start_line", "end_line", "rank", "tarantula", "ochiai", "dstar",
              "confidence"),
    "node_scores": ("run_id", "iteration", "fqn", "confidence"),
    "inspections": ("run_id", "iteration", "target", "strategy", "outcome", "reflection", "reflection_by",
                    "prior", "posterior", "fix_evidence", "fix", "mutants_tried", "tests_run", "reasoning"),
    "patches": ("run_id", "candidate", "status", "detail", "accepted", "target", "diff"),
    "validations": ("run_id", "candidate", "check_name", "result"),
    "llm_calls": ("run_id", "called_at", "purpose", "model", "input_tokens", "output_tokens", "cost_usd",
                  "latency_s", "error"),
    "testgen_attempts": ("run_id", "round", "groups", "proposed", "kept", "dropped"),
}

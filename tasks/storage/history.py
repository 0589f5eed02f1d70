"""The DuckDB history: who writes, how concurrent runs take turns, and the spool of unwritten runs.

DuckDB lets one process open a file for writing at a time (a second gets ``IOException ...
Conflicting lock``), and keeping a writer open for a whole run would block every other run. So
each run writes once, at its end, in one short transaction, and writers take turns through an
OS file lock next to the database (``<db>.lock``, ``flock``: held per open file, so it also
orders threads of one process, e.g. child flow runs of a batch)::

    take flock(<db>.lock, exclusive)  (wait with backoff, up to EQUISA_DB_LOCK_TIMEOUT_S, 120 s)
      connect; migrate if the schema is older; refuse a newer or corrupt file
      ingest runs waiting in the spool; BEGIN; delete this run's rows; insert them; COMMIT
      close
    release

Readers (``equisa history``) take the lock shared and open the file read-only. A process that
is not EQUISA (the duckdb shell, say) holding the file is waited out the same way: a
``Conflicting lock`` is retried until the same deadline. When the history cannot be written —
corrupt file, newer schema, lock never free — the run's record (``RunRecord`` JSON) goes to the
spool (``<spool>/history/<db id>/runs/<run_id>.json``), the run finishes with a note, and the
next writer or ``equisa flush`` ingests it. Rows are replaced per run, so ingesting twice is harmless.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    retry_if_exception_type,
    wait_exponential,
)

from equisa_core.errors import HistoryError
from equisa_core.history import MIGRATIONS, SCHEMA_VERSION, TABLES, RunRecord, rows_for_run
from equisa_core.history.record import repo_id
from equisa_core.operations.storage import resolve_spool, sha256_hex

__all__ = ["IngestResult", "write_run", "record_history", "ingest_spool", "query", "spooled_runs",
           "recorded_durations",
           "spooled_databases",
           "schema_version", "lock_timeout_s"]

_DEFAULT_LOCK_TIMEOUT_S = 120.0


class IngestResult(BaseModel):
    """What one ingestion of spooled runs did."""

    model_config = ConfigDict(frozen=True)

    db: str
    ingested: int
    remaining: int
    error: str | None = None
    exit_code: int | None = None


def lock_timeout_s() -> float:
    """How long a writer waits for its turn (``EQUISA_DB_LOCK_TIMEOUT_S``, default 120 s)."""
    try:
        return max(0.1, float(os.environ.get("EQUISA_DB_LOCK_TIMEOUT_S", _DEFAULT_LOCK_TIMEOUT_S)))
    except ValueError:
        return _DEFAULT_LOCK_TIMEOUT_S


@contextmanager
def _turn(db: Path, exclusive: bool, deadline: float) -> Iterator[None]:
    """Hold ``<db>.lock`` (exclusive for writers, shared for readers) until the block ends."""
    try:
        db.parent.mkdir(parents=True, exist_ok=True)
        handle = open(db.with_name(db.name + ".lock"), "a+b")  # closed in the finally below
    except OSError as error:
        raise HistoryError(f"cannot use the history folder {db.parent}: {error.strerror or error}") from None
    mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    # A local syscall: poll often, hand over quickly.
    taking = Retrying(retry=retry_if_exception_type(BlockingIOError), stop=_past(deadline),
                      wait=_jittered_backoff(first_s=0.02, max_s=0.05), reraise=True)
    try:
        try:
            taking(fcntl.flock, handle, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            raise HistoryError(
                f"the history {db} stayed locked by another writer for over "
                f"{lock_timeout_s():g}s (EQUISA_DB_LOCK_TIMEOUT_S)") from None
        yield
    finally:
        handle.close()  # closing releases the flock


def _connect(db: Path, read_only: bool, deadline: float) -> Any:
    """A DuckDB connection; waits out other processes' locks, translates every other failure."""
    import duckdb

    def held_by_another_process(error: BaseException) -> bool:
        return isinstance(error, duckdb.Error) and "lock" in str(error).lower()

    connecting = Retrying(retry=retry_if_exception(held_by_another_process), stop=_past(deadline),
                          wait=_jittered_backoff(first_s=0.05, max_s=1.0), reraise=True)
    try:
        return connecting(duckdb.connect, str(db), read_only=read_only)
    except duckdb.Error as error:
        raise HistoryError(_unusable(db, str(error))) from None


def _past(deadline: float) -> Callable[[RetryCallState], bool]:
    """A tenacity stop condition: the monotonic clock is past ``deadline``."""
    return lambda _state: time.monotonic() > deadline


def _jittered_backoff(first_s: float, max_s: float) -> Callable[[RetryCallState], float]:
    """A tenacity wait: pauses that double from ``first_s`` up to ``max_s``, each scaled by a random
    factor in [0.5, 1.5) so that waiting writers do not retry in step."""
    exponential = wait_exponential(multiplier=first_s, max=max_s)
    return lambda state: exponential(state) * (0.5 + random.random())


@contextmanager
def _session(db: Path, exclusive: bool, deadline: float) -> Iterator[Any]:
    """A connection in this process's turn (writers alone, readers shared), closed at the end;
    any failure but a HistoryError becomes one that says the file is unusable."""
    with _turn(db, exclusive=exclusive, deadline=deadline):
        connection = _connect(db, read_only=not exclusive, deadline=deadline)
        try:
            yield connection
        except HistoryError:
            raise
        except Exception as error:
            raise HistoryError(_unusable(db, f"{type(error).__name__}: {error}")) from None
        finally:
            connection.close()


def _unusable(db: Path, text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else "unknown error"
    if "lock" in first.lower():
        return f"the history {db} is locked by another process: {first}"
    return (f"the history {db} is not a usable DuckDB file ({first}); move it aside or point "
            "EQUISA_DB / --db at another file")


def schema_version(connection: Any) -> int:
    """The highest applied migration (0 for an empty file)."""
    present = connection.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_version'").fetchone()[0]
    if not present:
        return 0
    return int(connection.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()[0])


def _migrate(connection: Any, db: Path) -> None:
    """Apply the missing migrations, each in one transaction; refuse a newer schema."""
    current = schema_version(connection)
    if current > SCHEMA_VERSION:
        raise HistoryError(f"the history {db} has schema version {current}, newer than this EQUISA's "
                           f"{SCHEMA_VERSION}: upgrade EQUISA or use another file (EQUISA_DB / --db)")
    for version, statements in MIGRATIONS:
        if version <= current:
            continue
        connection.execute("BEGIN TRANSACTION")
        try:
            if version == 1:
                connection.execute("CREATE TABLE IF NOT EXISTS schema_version "
                                   "(version INTEGER NOT NULL, applied_at TIMESTAMP NOT NULL)")
            for statement in statements:
                connection.execute(statement)
            connection.execute("INSERT INTO schema_version VALUES (?, current_timestamp)", [version])
            connection.execute("COMMIT")
        except Exception:
            connection.execute("ROLLBACK")
            raise


def _insert(connection: Any, record: RunRecord) -> None:
    """Replace the run's rows in one transaction."""
    rows = rows_for_run(record)
    repo, path, name = rows.repository
    finished = rows.tables["runs"][0][9]  # naive UTC, as in the runs table
    connection.execute("BEGIN TRANSACTION")
    try:
        for table in TABLES:
            connection.execute(f"DELETE FROM {table} WHERE run_id = ?", [record.run_id])
        connection.execute(
            "INSERT INTO repositories SELECT ?, ?, ?, ? WHERE NOT EXISTS "
            "(SELECT 1 FROM repositories WHERE repo_id = ?)", [repo, path, name, finished, repo])
        if rows.tests:
            known = {r[0] for r in connection.execute(
                "SELECT test_id FROM tests WHERE repo_id = ?", [repo]).fetchall()}
            new = [(repo, t, g, finished) for t, g in rows.tests if t not in known]
            if new:
                connection.executemany("INSERT INTO tests VALUES (?, ?, ?, ?)", new)
        for table, columns in TABLES.items():
            _insert_rows(connection, table, columns, rows.tables.get(table) or [])
        connection.execute("COMMIT")
    except Exception:
        connection.execute("ROLLBACK")
        raise


#: Rows per INSERT statement: one multi-row VALUES statement is several times faster in DuckDB than
#: ``executemany``, which runs one statement per row.
_ROWS_PER_STATEMENT = 256


def _insert_rows(connection: Any, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    one = "(" + ", ".join("?" for _ in columns) + ")"
    for start in range(0, len(rows), _ROWS_PER_STATEMENT):
        chunk = rows[start:start + _ROWS_PER_STATEMENT]
        statement = f"INSERT INTO {table} ({', '.join(columns)}) VALUES " + ", ".join([one] * len(chunk))
        connection.execute(statement, [value for row in chunk for value in row])


def _spool_dir(db: Path, spool: Path | None) -> Path:
    return (spool or resolve_spool()) / "history" / sha256_hex(str(db).encode())[:16]


def spooled_runs(db: Path, spool: Path | None = None) -> list[Path]:
    """Records waiting in the spool for ``db``."""
    folder = _spool_dir(db, spool) / "runs"
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def _spool(db: Path, record: RunRecord, spool: Path | None) -> Path:
    from tasks.storage.artifacts import _atomic_write

    folder = _spool_dir(db, spool)
    if not (folder / "destination.json").exists():
        _atomic_write(folder / "destination.json", json.dumps({"db": str(db)}).encode())
    path = folder / "runs" / f"{record.run_id}.json"
    _atomic_write(path, record.model_dump_json().encode())
    return path


def _ingest_locked(connection: Any, db: Path, spool: Path | None) -> int:
    done = 0
    for path in spooled_runs(db, spool):
        try:
            waiting = RunRecord.model_validate_json(path.read_bytes())
        except (OSError, ValueError):
            continue  # unreadable: left for a person to look at
        _insert(connection, waiting)
        path.unlink()
        done += 1
    return done


def write_run(db: Path, record: RunRecord | None, spool: Path | None = None,
              timeout_s: float | None = None) -> int:
    """Write one run (and any spooled ones) in this writer's turn; returns the spooled runs ingested.

    Raises HistoryError when the file is corrupt, newer, or stays locked past the timeout.
    """
    deadline = time.monotonic() + (lock_timeout_s() if timeout_s is None else timeout_s)
    with _session(db, exclusive=True, deadline=deadline) as connection:
        _migrate(connection, db)
        ingested = _ingest_locked(connection, db, spool)
        if record is not None:
            _insert(connection, record)
        return ingested


def record_history(record: RunRecord, db: Path, spool: Path | None = None,
                   timeout_s: float | None = None) -> str | None:
    """Write the run (waiting at most ``timeout_s`` for its turn, default ``lock_timeout_s``); if the
    history cannot take it, spool it and return why (a note for the report)."""
    try:
        write_run(db, record, spool, timeout_s)
        return None
    except HistoryError as error:
        path = _spool(db, record, spool)
        return f"history not written ({error.message}); the run waits in {path} for `equisa flush`"


def ingest_spool(db: Path, spool: Path | None = None) -> IngestResult:
    """Ingest the runs waiting in the spool for ``db`` (``equisa flush``)."""
    waiting = len(spooled_runs(db, spool))
    if not waiting:
        return IngestResult(db=str(db), ingested=0, remaining=0)
    try:
        done = write_run(db, None, spool)
    except HistoryError as error:
        return IngestResult(db=str(db), ingested=0, remaining=waiting, error=error.message,
                            exit_code=error.exit_code)
    return IngestResult(db=str(db), ingested=done, remaining=len(spooled_runs(db, spool)))


def query(db: Path, sql: str, parameters: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """Rows of a read-only query, as dicts, in a shared turn (migrating an older file first)."""
    if not db.exists():
        return []
    deadline = time.monotonic() + lock_timeout_s()
    with _session(db, exclusive=False, deadline=deadline) as connection:
        version = schema_version(connection)
        if version > SCHEMA_VERSION:
            raise HistoryError(f"the history {db} has schema version {version}, newer than this "
                               f"EQUISA's {SCHEMA_VERSION}: upgrade EQUISA or use another file")
        if version == SCHEMA_VERSION:
            cursor = connection.execute(sql, list(parameters))
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    write_run(db, None)  # an older (or empty) schema: migrate in a writer's turn, then read
    return query(db, sql, parameters)


#: A test's typical duration in the repository's recorded runs: the median of the runs where it
#: passed or failed (not those where it was stopped at its time limit).
_DURATIONS_SQL = """
    SELECT r.test_id, median(r.duration_s) AS duration_s
    FROM test_results r JOIN runs USING (run_id)
    WHERE runs.repo_id = ? AND r.duration_s IS NOT NULL AND r.outcome IN ('passed', 'failed')
      AND coalesce(r.exception_type, '') <> ?
    GROUP BY r.test_id"""


def recorded_durations(db: Path, repository: str, timed_out: str) -> dict[str, float]:
    """Test id -> its median duration in the recorded runs of ``repository`` (its absolute path), the
    runs where its exception was ``timed_out`` left out; empty when the history cannot be read."""
    try:
        rows = query(db, _DURATIONS_SQL, (repo_id(repository), timed_out))
    except Exception:  # the history is a hint here: a locked, corrupt or newer file gives none
        return {}
    return {str(row["test_id"]): float(row["duration_s"]) for row in rows}


def spooled_databases(spool: Path | None = None) -> list[Path]:
    """Every history file with runs waiting in the spool."""
    root = (spool or resolve_spool()) / "history"
    found = []
    for folder in sorted(root.iterdir()) if root.is_dir() else ():
        try:
            db = Path(json.loads((folder / "destination.json").read_text(encoding="utf-8"))["db"])
        except (OSError, ValueError, KeyError):
            continue
        if spooled_runs(db, spool):
            found.append(db)
    return found

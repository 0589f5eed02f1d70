"""The DuckDB history on disk: one writer at a time (eight processes at once), migrations, bad files."""

from __future__ import annotations

import fcntl
import gzip
import json
import subprocess
import sys
import textwrap
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from equisa_core.errors import HistoryError
from equisa_core.history import SCHEMA_VERSION, RunRecord, rows_for_run
from tasks.storage.history import ingest_spool, query, record_history, spooled_runs, write_run

pytestmark = pytest.mark.integration

REPAIR = Path(__file__).parents[1] / "data" / "repair_invoicing.json"
ROOT = Path(__file__).parents[2]


def _record(run_id: str, repository: str = "/repos/invoicing", **changes) -> RunRecord:
    values = dict(run_id=run_id, kind="repair", repository=repository, report=json.loads(REPAIR.read_text()),
                  finished_at=datetime.now(UTC))
    values.update(changes)
    return RunRecord(**values)


def _count(db: Path, table: str) -> int:
    return query(db, f"SELECT count(*) AS n FROM {table}")[0]["n"]


def test_a_run_is_written_once_and_rewriting_it_replaces_its_rows(tmp_path):
    db = tmp_path / "history.duckdb"
    record = _record("r1")
    write_run(db, record, spool=tmp_path / "spool")
    write_run(db, record, spool=tmp_path / "spool")  # e.g. a spooled copy ingested again
    expected = rows_for_run(record)
    for table, rows in expected.tables.items():
        assert _count(db, table) == len(rows), table
    assert _count(db, "repositories") == 1
    assert query(db, "SELECT max(version) AS v FROM schema_version")[0]["v"] == SCHEMA_VERSION


WRITER = textwrap.dedent("""
    import json, sys, time
    from datetime import UTC, datetime
    from pathlib import Path
    from equisa_core.history import RunRecord
    from tasks.storage.history import write_run

    db, spool, start, index, runs, data = sys.argv[1:]
    report = json.loads(Path(data).read_text())
    while not Path(start).exists():   # every writer starts at the same moment
        time.sleep(0.005)
    for n in range(int(runs)):
        record = RunRecord(run_id=f"w{index}-{n}", kind="repair", repository=f"/repos/r{int(index) % 3}",
                           report=report, finished_at=datetime.now(UTC))
        write_run(Path(db), record, Path(spool))
""")


def test_eight_concurrent_writer_processes_take_turns_without_lock_errors(tmp_path):
    db, spool, start = tmp_path / "history.duckdb", tmp_path / "spool", tmp_path / "go"
    runs_each = 3
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(db), str(spool), str(start), str(i),
                                 str(runs_each), str(REPAIR)], cwd=ROOT, stderr=subprocess.PIPE, text=True)
               for i in range(8)]
    time.sleep(1.0)  # let every interpreter import and wait at the start line
    start.touch()
    errors = [(w.wait(timeout=300), w.stderr.read()) for w in writers]
    assert all(code == 0 for code, _ in errors), [e for _, e in errors if e]
    assert not any("Conflicting lock" in e for _, e in errors)
    per_run = rows_for_run(_record("x")).tables
    assert _count(db, "runs") == 8 * runs_each
    ids = {r["run_id"] for r in query(db, "SELECT run_id FROM runs")}
    assert ids == {f"w{i}-{n}" for i in range(8) for n in range(runs_each)}
    for table, rows in per_run.items():
        assert _count(db, table) == 8 * runs_each * len(rows), table
    assert _count(db, "repositories") == 3
    assert not spooled_runs(db, spool)


def test_threads_of_one_process_take_turns_too(tmp_path):
    """Child flow runs of a batch record from threads of one process."""
    db = tmp_path / "history.duckdb"
    failures: list[BaseException] = []

    def write(index: int) -> None:
        try:
            write_run(db, _record(f"t{index}"), spool=tmp_path / "spool")
        except BaseException as error:  # collected and asserted below
            failures.append(error)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not failures
    assert _count(db, "runs") == 8


def test_a_writer_waits_out_another_process_holding_the_file(tmp_path):
    db = tmp_path / "history.duckdb"
    write_run(db, _record("first"))
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import duckdb, sys, time
        connection = duckdb.connect({str(db)!r})
        print("holding", flush=True)
        time.sleep(2.5)
        connection.close()
    """)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "holding"
    started = time.monotonic()
    write_run(db, _record("second"))
    assert time.monotonic() - started > 1.0  # it waited for the other process, then wrote
    holder.wait(timeout=30)
    assert _count(db, "runs") == 2


def test_a_lock_held_too_long_spools_the_run_which_a_flush_writes_later(tmp_path, monkeypatch):
    db, spool = tmp_path / "history.duckdb", tmp_path / "spool"
    write_run(db, _record("first"))
    monkeypatch.setenv("EQUISA_DB_LOCK_TIMEOUT_S", "0.5")
    blocker = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import duckdb, time
        connection = duckdb.connect({str(db)!r})
        print("holding", flush=True)
        time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert blocker.stdout.readline().strip() == "holding"
        problem = record_history(_record("late"), db, spool)
        assert problem is not None and "locked" in problem and "equisa flush" in problem
        assert [p.name for p in spooled_runs(db, spool)] == ["late.json"]
    finally:
        blocker.kill()
        blocker.wait(timeout=10)
    result = ingest_spool(db, spool)
    assert (result.ingested, result.remaining, result.error) == (1, 0, None)
    assert {r["run_id"] for r in query(db, "SELECT run_id FROM runs")} == {"first", "late"}


def test_a_writer_gives_up_on_the_turn_lock_at_the_timeout_with_a_history_error(tmp_path, monkeypatch):
    db = tmp_path / "history.duckdb"
    write_run(db, _record("first"))
    monkeypatch.setenv("EQUISA_DB_LOCK_TIMEOUT_S", "0.3")
    with open(db.with_name(db.name + ".lock"), "a+b") as other_writer:  # another open file: another turn
        fcntl.flock(other_writer, fcntl.LOCK_EX)
        started = time.monotonic()
        with pytest.raises(HistoryError, match=r"stayed locked by another writer for over 0.3s "
                                               r"\(EQUISA_DB_LOCK_TIMEOUT_S\)"):
            write_run(db, _record("second"))
        assert 0.3 <= time.monotonic() - started < 5.0
    write_run(db, _record("second"))  # the lock released, the next writer takes its turn at once
    assert _count(db, "runs") == 2


def test_a_corrupt_file_is_refused_clearly_and_nothing_is_lost(tmp_path):
    db, spool = tmp_path / "history.duckdb", tmp_path / "spool"
    db.write_bytes(b"this is not a database\n" * 200)
    problem = record_history(_record("r1"), db, spool)
    assert problem is not None and "not a usable DuckDB file" in problem
    with pytest.raises(HistoryError) as refused:
        query(db, "SELECT 1")
    assert refused.value.exit_code == 43 and str(db) in refused.value.message
    failed = ingest_spool(db, spool)
    assert (failed.ingested, failed.remaining, failed.exit_code) == (0, 1, 43)
    db.rename(tmp_path / "corrupt.duckdb")  # what the message tells people to do
    assert ingest_spool(db, spool).ingested == 1
    assert _count(db, "runs") == 1


def test_a_file_of_a_newer_schema_is_refused_and_never_downgraded(tmp_path):
    db, spool = tmp_path / "history.duckdb", tmp_path / "spool"
    write_run(db, _record("r1"))
    connection = duckdb.connect(str(db))
    connection.execute("INSERT INTO schema_version VALUES (?, current_timestamp)", [SCHEMA_VERSION + 1])
    connection.close()
    problem = record_history(_record("r2"), db, spool)
    assert problem is not None and f"schema version {SCHEMA_VERSION + 1}, newer" in problem
    with pytest.raises(HistoryError, match="newer than this EQUISA"):
        query(db, "SELECT count(*) FROM runs")
    assert len(spooled_runs(db, spool)) == 1
    connection = duckdb.connect(str(db), read_only=True)
    assert connection.execute("SELECT count(*) FROM runs").fetchone()[0] == 1  # untouched
    connection.close()


def test_an_empty_file_from_an_older_equisa_is_migrated_when_read(tmp_path):
    db = tmp_path / "history.duckdb"
    duckdb.connect(str(db)).close()  # a DuckDB file with no schema yet (version 0)
    assert query(db, "SELECT count(*) AS n FROM runs") == [{"n": 0}]
    assert query(db, "SELECT max(version) AS v FROM schema_version")[0]["v"] == SCHEMA_VERSION


def test_history_answers_what_a_maintainer_asks(tmp_path):
    from cli.history_answers import history_answers

    db = tmp_path / "history.duckdb"
    a, b = tmp_path / "repo-a", tmp_path / "repo-b"
    a.mkdir()
    b.mkdir()
    base = json.loads(REPAIR.read_text())
    runs = [(a, "fixed", "m.f", 0.25), (a, "not_fixed", "m.f", 0.5), (a, "fixed", "m.f", 0.0),
            (a, "plausible_only", "m.g", 0.0), (b, "not_fixed", "n.h", 1.0)]
    for index, (repo, status, target, usd) in enumerate(runs):
        report = {**base, "status": status, "target": target, "cost": {"usd": usd}}
        write_run(db, _record(f"r{index}", repository=str(repo), report=report))
    answers = history_answers(db, None)
    rates = {Path(r["repository"]).name: (r["repairs"], r["fixed"], r["plausible_only"], r["fix_rate"])
             for r in answers["fix_rate"]}
    assert rates == {"repo-a": (4, 2, 1, 0.5), "repo-b": (1, 0, 0, 0.0)}
    assert [(r["function"], r["runs"], r["fixed"]) for r in answers["blamed"]] == [("m.f", 3, 2)]
    (today,) = answers["llm_spend_per_day"]
    assert (today["usd"], today["runs"]) == (1.75, 5)
    only_b = history_answers(db, b)
    assert [r["run_id"] for r in only_b["runs"]] == ["r4"] and only_b["blamed"] == []
    assert [r["run_id"] for r in history_answers(db, a, limit=2)["runs"]] == ["r3", "r2"]


#: A history written by the release before schema version 2 (EQUISA 47e545b, DuckDB 2.0.0): a repair
#: run (tests/data/repair_invoicing.json) and a localize run (its localization) of /repos/invoicing.
SCHEMA_1_FILE = Path(__file__).parents[1] / "data" / "history_schema_1.duckdb.gz"


def _schema_1_history(tmp_path: Path) -> Path:
    db = tmp_path / "history.duckdb"
    db.write_bytes(gzip.decompress(SCHEMA_1_FILE.read_bytes()))
    return db


def test_a_history_of_schema_1_opens_its_runs_are_kept_and_new_runs_get_their_exit_code(tmp_path):
    from cli.history_answers import history_answers

    db = _schema_1_history(tmp_path)
    connection = duckdb.connect(str(db), read_only=True)
    assert connection.execute("SELECT max(version) FROM schema_version").fetchone()[0] == 1
    connection.close()
    # Reading migrates it (in a writer's turn); the old runs keep what they had, with no exit code.
    old = {r["run_id"]: r for r in history_answers(db, None)["runs"]}
    assert {k: (r["kind"], r["status"], r["exit_code"], r["error"]) for k, r in old.items()} == {
        "v1-repair": ("repair", "fixed", None, None), "v1-localize": ("localize", "converged", None, None)}
    assert query(db, "SELECT max(version) AS v FROM schema_version")[0]["v"] == SCHEMA_VERSION == 2
    failure = {"schema_version": "1.0", "command": "localize", "status": "error", "exit_code": 6,
               "error_type": "CollectionError", "error": "the test suite does not import"}
    write_run(db, _record("r-failed", kind="localize", report=failure))
    rows = {r["run_id"]: r for r in history_answers(db, None)["runs"]}
    assert (rows["r-failed"]["status"], rows["r-failed"]["exit_code"], rows["r-failed"]["error_type"]) == (
        "error", 6, "CollectionError")
    assert _count(db, "inspections") == 2 * len(json.loads(REPAIR.read_text())["localization"]["inspections"])


def test_every_outcome_becomes_its_status_and_exit_code(tmp_path):
    """Runs that ended with their report, and runs a failure report stands for, side by side."""
    base = json.loads(REPAIR.read_text())
    localization = base["localization"]
    reports = {
        "fixed": ("repair", base), "plausible": ("repair", {**base, "status": "plausible_only"}),
        "not-fixed": ("repair", {**base, "status": "not_fixed"}),
        "converged": ("localize", localization),
        "not-converged": ("localize", {**localization, "converged": False}),
        "nothing": ("localize", {"schema_version": "1.0", "command": "localize", "status": "nothing_to_do",
                                 "exit_code": 20, "error_type": "NothingToLocalizeError",
                                 "error": "nothing to localize: every test passes"}),
        "stopped": ("repair", {"schema_version": "1.0", "command": "repair", "status": "interrupted",
                               "exit_code": 130, "error_type": "KeyboardInterrupt",
                               "error": "interrupted (Ctrl-C)"}),
    }
    db = tmp_path / "history.duckdb"
    for run_id, (kind, report) in reports.items():
        write_run(db, _record(run_id, kind=kind, report=report))
    rows = {r["run_id"]: (r["status"], r["exit_code"], r["error_type"], r["target"], r["tests_failed"])
            for r in query(db, "SELECT * FROM runs")}
    failing, bug = localization["tests"]["failed"], base["target"]
    assert rows == {
        "fixed": ("fixed", 0, None, bug, failing), "plausible": ("plausible_only", 21, None, bug, failing),
        "not-fixed": ("not_fixed", 22, None, bug, failing),
        "converged": ("converged", 0, None, localization["ranking"][0]["fqn"], failing),
        "not-converged": ("not_converged", 0, None, None, failing),  # a ranking: exit 0
        "nothing": ("nothing_to_do", 20, "NothingToLocalizeError", None, None),
        "stopped": ("interrupted", 130, "KeyboardInterrupt", None, None),
    }
    # The fix rate counts the repairs that reached a verdict; an interrupted one is not a failed repair.
    from cli.history_answers import history_answers

    (repo,) = history_answers(db, None)["fix_rate"]
    assert (repo["repairs"], repo["fixed"], repo["plausible_only"]) == (3, 1, 1)

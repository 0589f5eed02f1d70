"""The shared Prefect server's first database, already migrated: a fresh server need not build it.

A Prefect server that finds no database makes one by running every Alembic migration of its
version, about 10 s of CPU on the machines EQUISA runs on, and the first ``equisa`` command on a
machine waits for it (issue 47: the README's first command). The database it ends with is the
same for every machine, so it is made once per Prefect version and committed, gzipped (16 KB), as
``tasks/prefect_server/database_seed/prefect-<version>.db.gz``. ``seed_database`` puts it where
the server will look (``<PREFECT_HOME>/prefect.db``) before the server starts, only when no
database is there yet and only for the Prefect version it was made with; any other case leaves
the server to migrate as before. The server still checks the revision at start-up and finds
nothing to do.

Made again (after a Prefect upgrade; a test checks that the installed version has its seed and that
a server started on it migrates nothing) with::

    uv run python -m tasks.prefect_server.database_seed

Why not Prefect's own ``create_all``: Prefect creates its SQLite database through the migrations
only, and a schema made another way could differ from what later migrations expect.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import sqlite3
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

__all__ = ["DATABASE_NAME", "SEED_FOLDER", "database_revision", "make_seed", "seed_database", "seed_path"]

#: The file name of the database under ``PREFECT_HOME`` (Prefect's default connection URL).
DATABASE_NAME = "prefect.db"
#: Where the committed seeds are.
SEED_FOLDER = Path(__file__).with_name("database_seed")


def seed_path(prefect_version: str) -> Path:
    """The seed made with Prefect ``prefect_version`` (it may not exist)."""
    return SEED_FOLDER / f"prefect-{prefect_version}.db.gz"


def seed_database(home: Path, prefect_version: str) -> bool:
    """Put the seed of ``prefect_version`` at ``home/prefect.db`` when there is no database there yet
    and such a seed exists; True when it was put. Written to a temporary file first and renamed, so
    a server never opens half a database."""
    target = home / DATABASE_NAME
    seed = seed_path(prefect_version)
    if target.exists() or not seed.is_file():
        return False
    home.mkdir(parents=True, exist_ok=True)
    handle, scratch = tempfile.mkstemp(dir=home, prefix=".prefect-seed-", suffix=".db")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(gzip.decompress(seed.read_bytes()))
        os.replace(scratch, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(scratch)
        raise
    return True


def database_revision(path: Path) -> str | None:
    """The Alembic revision a Prefect database is at (None when it has none)."""
    with contextlib.closing(sqlite3.connect(path)) as connection:
        try:
            row = connection.execute("SELECT version_num FROM alembic_version").fetchone()
        except sqlite3.OperationalError:  # no alembic_version table: not migrated
            return None
    return str(row[0]) if row else None


def make_seed(python: str = sys.executable) -> Path:
    """Migrate a new database with the installed Prefect (``prefect server database upgrade``, run by
    ``python`` with its own empty ``PREFECT_HOME``), compact it and write it gzipped as the seed of
    that Prefect version; the older seeds are removed. Returns the seed's path."""
    prefect_version = version("prefect")
    with tempfile.TemporaryDirectory(prefix="equisa-prefect-seed-") as scratch:
        home = Path(scratch)
        env = {name: value for name, value in os.environ.items() if not name.startswith("PREFECT_")}
        env.update({"PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"})
        subprocess.run([python, "-m", "prefect", "server", "database", "upgrade", "-y"], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        database = home / DATABASE_NAME
        with contextlib.closing(sqlite3.connect(database)) as connection:
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # all of it in the main file
            connection.execute("VACUUM")
        data = gzip.compress(database.read_bytes(), compresslevel=9, mtime=0)
    SEED_FOLDER.mkdir(exist_ok=True)
    for old in SEED_FOLDER.glob("prefect-*.db.gz"):
        old.unlink()
    path = seed_path(prefect_version)
    path.write_bytes(data)
    return path


if __name__ == "__main__":
    print(make_seed())

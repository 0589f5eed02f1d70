"""The shared Prefect server's seed database (``tasks.prefect_server.database_seed``): one for the
installed Prefect, at its last migration, put only where no database is."""

from __future__ import annotations

import gzip
from importlib.metadata import version
from pathlib import Path

import prefect.server.database
from alembic.config import Config
from alembic.script import ScriptDirectory

from tasks.prefect_server.database_seed import DATABASE_NAME, database_revision, seed_database, seed_path

REGENERATE = "uv run python -m tasks.prefect_server.database_seed"


def sqlite_heads() -> list[str]:
    """The heads of the installed Prefect's SQLite migrations (read from its scripts, none run)."""
    migrations = Path(prefect.server.database.__file__).with_name("_migrations")
    config = Config()
    config.set_main_option("script_location", str(migrations))
    config.set_main_option("version_locations", str(migrations / "versions" / "sqlite"))
    return list(ScriptDirectory.from_config(config).get_heads())


def seed_revision(tmp_path: Path) -> str | None:
    unpacked = tmp_path / "unpacked.db"
    unpacked.write_bytes(gzip.decompress(seed_path(version("prefect")).read_bytes()))
    return database_revision(unpacked)


def test_the_installed_prefect_has_a_seed_at_its_last_migration(tmp_path):
    assert seed_path(version("prefect")).is_file(), f"no seed for Prefect {version('prefect')}: {REGENERATE}"
    assert [seed_revision(tmp_path)] == sqlite_heads(), f"the seed is not at the last migration: {REGENERATE}"


def test_the_seed_is_put_only_where_no_database_is(tmp_path):
    home = tmp_path / "home"
    assert seed_database(home, version("prefect"))
    assert database_revision(home / DATABASE_NAME) == seed_revision(tmp_path)
    assert [p.name for p in home.iterdir()] == [DATABASE_NAME]  # no scratch file left
    (home / DATABASE_NAME).write_bytes(b"the user's")
    assert not seed_database(home, version("prefect"))
    assert (home / DATABASE_NAME).read_bytes() == b"the user's"


def test_no_seed_for_another_prefect_version_leaves_the_server_to_migrate(tmp_path):
    assert not seed_database(tmp_path, "0.0.1")
    assert not (tmp_path / DATABASE_NAME).exists()

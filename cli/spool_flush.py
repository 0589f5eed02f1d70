"""Empty the local spool (``equisa flush``): spooled artifacts to their store, spooled runs to the
DuckDB history. Whatever is not written stays in the spool for the next attempt."""

from __future__ import annotations

from typing import Any

from equisa_core.operations.storage import resolve_artifacts, resolve_db, resolve_spool
from tasks.storage.artifacts import flush_spool
from tasks.storage.history import ingest_spool, spooled_databases

__all__ = ["flush_everything"]


def flush_everything(artifacts: str | None, db: str | None) -> dict[str, Any]:
    """Flush the spooled artifacts and runs (all, or only the named destinations), as plain data."""
    only = resolve_artifacts(artifacts) if artifacts else None
    stores = flush_spool(only=only)
    databases = [resolve_db(db)] if db else spooled_databases()
    runs = [ingest_spool(path) for path in databases]
    return {"spool": str(resolve_spool()), "artifacts": [r.model_dump() for r in stores],
            "history": [r.model_dump() for r in runs]}

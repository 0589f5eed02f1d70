"""The run history: its versioned schema, the record of one run and the rows it becomes. Pure.

The DuckDB I/O (who writes, locking, the spool of rows) is in ``tasks/storage/history.py``.
"""

from equisa_core.history.record import LLMCallRecord, RunRecord, rows_for_run
from equisa_core.history.schema import MIGRATIONS, SCHEMA_VERSION, TABLES

__all__ = ["LLMCallRecord", "RunRecord", "rows_for_run", "MIGRATIONS", "SCHEMA_VERSION", "TABLES"]

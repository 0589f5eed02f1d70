"""Flow tests run against Prefect's test harness (``prefect_api_url``, in ``tests/conftest.py``: a
real, temporary Prefect server and database, shared with the task tests that run inside flows).

The CLI is run as the real ``equisa`` console script in a subprocess, pointed at that server.
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture
def cli_env(prefect_api_url, tmp_path) -> dict[str, str]:
    """Environment for an ``equisa`` subprocess: the test server, private caches and storage."""
    env = dict(os.environ)
    env.update({
        "PREFECT_API_URL": prefect_api_url,
        "PREFECT_HOME": str(tmp_path / "prefect-home"),
        "PREFECT_LOCAL_STORAGE_PATH": str(tmp_path / "prefect-storage"),
        "EQUISA_WORKSPACES": str(tmp_path / "workspaces"),
        "EQUISA_DB": str(tmp_path / "history.duckdb"),
        "EQUISA_ARTIFACTS": str(tmp_path / "artifacts"),
        "EQUISA_SPOOL": str(tmp_path / "spool"),
        "COLUMNS": "200",
    })
    return env

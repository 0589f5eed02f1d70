"""Flow tests run against Prefect's test harness: a real, temporary Prefect server and database.

The CLI is run as the real ``equisa`` console script in a subprocess, pointed at that server.
"""

from __future__ import annotations

import os

import pytest
from prefect.settings import get_current_settings
from prefect.testing.utilities import prefect_test_harness


@pytest.fixture(scope="session")
def prefect_api_url(tmp_path_factory) -> str:
    """One temporary Prefect server for the whole session (starting one takes seconds)."""
    with prefect_test_harness(server_startup_timeout=180):
        yield str(get_current_settings().api.url)


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

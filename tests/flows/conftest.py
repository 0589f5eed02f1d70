"""Flow tests run against Prefect's test harness (``prefect_api_url``, in ``tests/conftest.py``: a
real, temporary Prefect server and database, shared with the task tests that run inside flows).

The CLI is run as the real ``equisa`` console script in a subprocess, pointed at that server.
"""

from __future__ import annotations

import os

import pytest

from cli.flow_runs import PREFECT_DEFAULTS
from tasks.prefect_server.log_routing import logging_environment

#: What ``set_prefect_defaults`` writes into the environment of the process that runs a command.
COMMAND_SET_VARIABLES = frozenset({*PREFECT_DEFAULTS, *logging_environment(verbose=False)})


@pytest.fixture
def cli_env(prefect_api_url, tmp_path) -> dict[str, str]:
    """Environment for an ``equisa`` subprocess: the test server, private caches and storage."""
    # A command run in this process (``cli.main.main``) set Prefect's defaults in its environment
    # (``set_prefect_defaults``): a subprocess starts from what a user's shell would hold.
    env = {k: v for k, v in os.environ.items() if k not in COMMAND_SET_VARIABLES}
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

"""Flow and task logs reach the Prefect server at INFO; the terminal stays quiet unless ``--verbose``.

``equisa trace`` runs as the real console script against the test harness's server; the run's logs
are read back through Prefect's client.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from uuid import UUID

from tasks.prefect_server.log_routing import QUIET_CONFIG, prefect_default_config, quiet_config, render
from tests.conftest import FIXTURES

EQUISA = shutil.which("equisa") or str(Path(sys.executable).with_name("equisa"))


def test_the_committed_config_is_the_installed_prefects_made_quiet():
    assert QUIET_CONFIG.read_text(encoding="utf-8") == render(quiet_config(prefect_default_config()))
    config = quiet_config(prefect_default_config())
    assert config["loggers"]["prefect"]["propagate"] is False
    assert config["handlers"]["prefect_console"]["level"] == "CRITICAL"
    assert config["root"]["handlers"] == ["console"]  # other libraries' warnings still reach the terminal


async def _logs(run_id: str) -> list:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    async with get_client() as client:
        return await client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[UUID(run_id)])))


def _logs_once_stored(run_id: str, within_s: float = 30.0) -> list:
    """The run's logs once its last line is stored: the server writes the batches it receives in the
    background, so a busy machine may show them a moment after the command ended."""
    deadline = time.monotonic() + within_s
    while True:
        logs = asyncio.run(_logs(run_id))
        if any("Finished in state" in log.message for log in logs) or time.monotonic() > deadline:
            return logs
        time.sleep(0.5)


def _trace(cli_env: dict[str, str], repo: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([EQUISA, *extra, "trace", str(repo), "--json", str(out)], env=cli_env,
                          capture_output=True, text=True, timeout=600)


def test_info_logs_reach_the_server_and_not_the_terminal(tmp_path, cli_env):
    repo = shutil.copytree(FIXTURES / "fees", tmp_path / "fees")
    quiet = _trace(cli_env, repo, tmp_path / "quiet.json")
    assert quiet.returncode == 0, quiet.stderr
    assert "| INFO" not in quiet.stderr and "Finished in state" not in quiet.stderr, quiet.stderr
    run_id = json.loads((tmp_path / "quiet.json").read_text())["run_id"]
    logs = _logs_once_stored(run_id)
    assert any(log.level == 20 and "Finished in state Completed" in log.message for log in logs), logs
    assert all(log.level >= 20 for log in logs)  # INFO and above: no DEBUG on the server either

    verbose = _trace(cli_env, repo, tmp_path / "verbose.json", "--verbose")
    assert "| INFO" in verbose.stderr and "Finished in state" in verbose.stderr, verbose.stderr

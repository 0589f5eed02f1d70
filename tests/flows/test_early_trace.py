"""The trace a command starts beside the Prefect server's start (issue 48; ``tasks.run.early_trace``,
``tasks.sandbox.early_runs``): its sandboxed runs start before the server is ready, and the flow's
``run-tests`` tasks adopt them instead of starting their own."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from tasks.prefect_server import server
from tasks.sandbox import early_runs
from tasks.sandbox.contract import RunRequest
from tasks.sandbox.local_backend import LaunchedRun, LocalSandbox

ROOT = Path(__file__).resolve().parents[2]
INVOICING = ROOT / "examples" / "invoicing"
#: How long the stand-in for a starting server keeps the command waiting.
SLOW_START_S = 4.0


def _is_trace_shard(request: RunRequest) -> bool:
    return request.trace and not request.mutants and request.only is None and not request.overlay


@pytest.mark.parametrize("command", ["localize", "repair"])
def test_a_cold_command_traces_while_the_server_starts_and_its_flow_adopts_the_runs(
        command, tmp_path, prefect_api_url, monkeypatch):
    from cli.main import main

    launches: list[tuple[float, RunRequest]] = []
    ready: list[float] = []
    launch = LocalSandbox.launch

    def recorded_launch(self: LocalSandbox, request: RunRequest, serves: bool = False) -> LaunchedRun:
        launches.append((time.monotonic(), request))
        return launch(self, request, serves)

    def slow_server(options: object = None) -> server.Connection:
        time.sleep(SLOW_START_S)  # a shared server starting on a busy machine
        ready.append(time.monotonic())
        return server.Connection(kind="configured", api_url=prefect_api_url)

    monkeypatch.setattr(LocalSandbox, "launch", recorded_launch)
    monkeypatch.setattr(server, "connect", slow_server)
    out = tmp_path / "report.json"
    extra = ["--max-validations", "1"] if command == "repair" else []
    code = main([command, str(INVOICING), "--no-llm", "--no-cache", "--json", str(out), *extra])
    assert code in (0, 25), out.read_text() if out.exists() else code

    shards = [(at, r) for at, r in launches if _is_trace_shard(r)]
    before = [r for at, r in shards if at < ready[0]]
    assert before, f"no trace shard started before the server was ready: {launches}"
    assert len(shards) == len(before), "the flow started the trace's shards again instead of adopting them"
    assert early_runs.waiting() == 0
    assert json.loads(out.read_text())["run_id"]


def test_a_run_is_adopted_only_by_its_own_request_whatever_its_serve_owner(tmp_path, monkeypatch):
    process = subprocess.Popen(["sleep", "60"], start_new_session=True)
    (tmp_path / "run").mkdir()
    try:
        launched = LaunchedRun(folder=tmp_path / "run", process=process,
                               log_file=open(tmp_path / "log", "wb"), cgroup=_NoCgroup(),
                               isolation=LocalSandbox().isolation(), started=time.monotonic())
        request = RunRequest(workspace=tmp_path, workspace_digest="d", interpreter="python", shard=(0, 2))
        monkeypatch.setattr(LocalSandbox, "launch", lambda self, request, serves=False: launched)
        early_runs.start(LocalSandbox(), request)
        assert early_runs.adopt(LocalSandbox(), request.model_copy(update={"shard": (1, 2)})) is None
        adopted = early_runs.adopt(LocalSandbox(), request.model_copy(update={"serve_owner": "loop-1"}))
        assert adopted is not None and adopted.launched is launched
        assert early_runs.adopt(LocalSandbox(), request) is None, "adopted once"
        assert early_runs.take_head_start(since=time.monotonic() + 1) == 0, "adopted before: not this run's"
        assert early_runs.adopt(LocalSandbox(), request) is None
        early_runs.start(LocalSandbox(), request)
        assert early_runs.adopt(LocalSandbox(), request) is not None
        assert 0 <= early_runs.take_head_start(since=0) < 5 and early_runs.take_head_start(since=0) == 0

        early_runs.start(LocalSandbox(), request)
        assert early_runs.waiting() == 1 and early_runs.discard() == 1
        assert process.poll() is not None, "a run no task adopted is ended"
    finally:
        process.kill()
        process.wait()


class _NoCgroup:
    path = None

    def kill_all(self) -> None:
        pass

    def remove(self) -> None:
        pass

"""The Dask task runner: a suite traced with its sandboxed shards on a local Dask cluster."""

from __future__ import annotations

from pathlib import Path

import pytest
from distributed import Client, get_task_stream
from prefect.settings import PREFECT_LOCAL_STORAGE_PATH, temporary_settings

from equisa_core.errors import TaskRunnerError
from flows.trace import trace_suite
from tasks.operations.task_runners import RunnerChoice, build_task_runner, runner_choice, shared_cluster
from tasks.run.parameters import TraceParameters

GRADEBOOK = Path(__file__).resolve().parents[2] / "examples" / "gradebook"


def test_trace_fans_out_over_a_local_dask_cluster(prefect_api_url, tmp_path, monkeypatch):
    for name, folder in (("EQUISA_WORKSPACES", "workspaces"), ("EQUISA_DB", "history.duckdb"),
                         ("EQUISA_ARTIFACTS", "artifacts"), ("EQUISA_SPOOL", "spool")):
        monkeypatch.setenv(name, str(tmp_path / folder))
    params = TraceParameters(path=str(GRADEBOOK), shards=2, no_cache=True)
    with temporary_settings({PREFECT_LOCAL_STORAGE_PATH: tmp_path / "storage"}):
        with shared_cluster(RunnerChoice(kind="dask", workers=2)) as choice:
            assert choice.address and choice.address.startswith("tcp://127.0.0.1:")
            assert runner_choice().address == choice.address  # every flow run in here sees the cluster
            with Client(choice.address) as client, get_task_stream(client) as stream:
                report = trace_suite(params)
    assert (report.summary.total, report.summary.failed) == (10, 2)
    assert "gradebook.grades.letter" in {n.fqn for n in report.nodes if n.failed_s == 2}
    ran = [task for task in stream.data if task["key"].startswith("run_tests")]
    # 2 shards, each re-running its failing tests apart itself (in a fork): no third run
    assert len(ran) == 2, [task["key"] for task in stream.data]
    assert len({task["worker"] for task in ran}) == 2, "both Dask workers ran sandboxed test runs"
    assert runner_choice().kind == "threads"  # the environment is restored afterwards


def test_runner_choice_from_the_environment():
    assert runner_choice({}) == RunnerChoice()
    choice = runner_choice({"EQUISA_TASK_RUNNER": "Dask", "EQUISA_TASK_RUNNER_ADDRESS": "tcp://10.0.0.5:8786"})
    assert (choice.kind, choice.address) == ("dask", "tcp://10.0.0.5:8786")
    assert type(build_task_runner(choice)).__name__ == "DaskTaskRunner"
    with pytest.raises(TaskRunnerError):
        runner_choice({"EQUISA_TASK_RUNNER": "spark"})
    with pytest.raises(TaskRunnerError):
        runner_choice({"EQUISA_TASK_RUNNER_WORKERS": "0"})
    try:
        import prefect_ray  # noqa: F401
    except ImportError:
        with pytest.raises(TaskRunnerError, match="needs prefect-ray"):
            build_task_runner(RunnerChoice(kind="ray"))

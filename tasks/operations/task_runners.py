"""The fan-out task runner: threads (default), Dask, or Ray, chosen per flow run from the environment.

The flows that fan tasks out (``trace-suite``, ``discovery``, ``localize``, ``repair``) declare
``task_runner=FanOutTaskRunner()``. Prefect enters ``flow.task_runner.duplicate()`` for every run
of a flow, so ``FanOutTaskRunner.duplicate`` is the one place the choice is made, at run time,
from these variables (a work pool's job variables, the CLI's ``--task-runner`` or a shell):

- ``EQUISA_TASK_RUNNER``: ``threads`` (default: a thread pool in the flow's process), ``dask``
  (prefect-dask) or ``ray`` (prefect-ray, when installed);
- ``EQUISA_TASK_RUNNER_ADDRESS``: the Dask scheduler (``tcp://host:8786``) or Ray cluster
  (``ray://host:10001``) to send tasks to; without it, ``dask`` means one local cluster;
- ``EQUISA_TASK_RUNNER_WORKERS``: thread-pool size, or worker processes of a local Dask cluster.

A local Dask cluster is started once per command or top-level flow run (``shared_cluster``) and
every nested flow run sends its tasks there: letting each nested flow start its own cluster would
cost seconds per flow run. No scheduler of EQUISA's own: Prefect and Dask/Ray do the scheduling.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Literal

from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from equisa_core.errors import TaskRunnerError

__all__ = [
    "RunnerChoice",
    "FanOutTaskRunner",
    "runner_choice",
    "choose_runner",
    "build_task_runner",
    "shared_cluster",
    "RUNNER_ENV",
    "ADDRESS_ENV",
    "WORKERS_ENV",
]

RUNNER_ENV = "EQUISA_TASK_RUNNER"
ADDRESS_ENV = "EQUISA_TASK_RUNNER_ADDRESS"
WORKERS_ENV = "EQUISA_TASK_RUNNER_WORKERS"


class RunnerChoice(BaseModel):
    """Which task runner fans a flow's tasks out, and where."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["threads", "dask", "ray"] = "threads"
    address: str | None = Field(None, description="Dask scheduler or Ray cluster address; None: local.")
    workers: int | None = Field(None, ge=1, description="Threads, or local Dask worker processes.")


def runner_choice(env: Mapping[str, str] | None = None) -> RunnerChoice:
    """The choice the environment makes (``EQUISA_TASK_RUNNER`` and friends); raises on bad values."""
    env = os.environ if env is None else env
    kind = (env.get(RUNNER_ENV) or "threads").strip().lower()
    workers = (env.get(WORKERS_ENV) or "").strip()
    try:
        address = (env.get(ADDRESS_ENV) or "").strip() or None
        return RunnerChoice.model_validate(
            {"kind": kind, "address": address, "workers": int(workers) if workers else None})
    except (ValidationError, ValueError):
        raise TaskRunnerError(
            f"{RUNNER_ENV}={kind!r} {WORKERS_ENV}={workers!r}: the runner must be threads, dask or ray "
            "and the workers a positive number") from None


def choose_runner(kind: str | None, address: str | None, workers: int | None) -> RunnerChoice:
    """Put the choice of a command line (``--task-runner`` and friends; None: not given) into the
    environment every flow run reads; bad values fail here, before Prefect starts."""
    for name, value in ((RUNNER_ENV, kind), (ADDRESS_ENV, address), (WORKERS_ENV, workers)):
        if value is not None:
            os.environ[name] = str(value)
    return runner_choice()


def build_task_runner(choice: RunnerChoice) -> TaskRunner:
    """A fresh task runner for one flow run."""
    if choice.kind == "threads":
        return ThreadPoolTaskRunner(max_workers=choice.workers)
    if choice.kind == "dask":
        from prefect_dask import DaskTaskRunner

        if choice.address:
            return DaskTaskRunner(address=choice.address)
        return DaskTaskRunner(cluster_kwargs=_local_cluster_kwargs(choice.workers))
    try:  # imported by name: prefect-ray is an optional extra, often absent where mypy runs
        ray_runner: Callable[..., TaskRunner] = importlib.import_module("prefect_ray").RayTaskRunner
    except (ImportError, AttributeError):
        raise TaskRunnerError("the ray task runner needs prefect-ray: `uv pip install prefect-ray` "
                              "(or choose threads or dask)") from None
    return ray_runner(address=choice.address) if choice.address else ray_runner()


class FanOutTaskRunner(ThreadPoolTaskRunner):
    """A flow's task runner that becomes, for each flow run, the runner ``runner_choice`` selects."""

    def duplicate(self) -> TaskRunner:  # type: ignore[override]  # becomes another runner on purpose
        """Prefect calls this once per flow run; the environment decides what it gets."""
        return build_task_runner(runner_choice())


@contextmanager
def shared_cluster(choice: RunnerChoice | None = None) -> Iterator[RunnerChoice]:
    """For ``dask`` without an address: one local cluster, announced to every flow run started inside.

    Yields the effective choice (with the local scheduler's address); other choices pass through.
    The variables are restored and the cluster closed on exit.
    """
    choice = runner_choice() if choice is None else choice
    if choice.kind != "dask" or choice.address:
        yield choice
        return
    try:
        from distributed import LocalCluster
    except ImportError:  # pragma: no cover - prefect-dask depends on distributed
        raise TaskRunnerError("the dask task runner needs prefect-dask and distributed") from None
    saved = {name: os.environ.get(name) for name in (RUNNER_ENV, ADDRESS_ENV)}
    with LocalCluster(**_local_cluster_kwargs(choice.workers)) as cluster:
        os.environ[RUNNER_ENV] = "dask"
        os.environ[ADDRESS_ENV] = cluster.scheduler_address
        try:
            yield choice.model_copy(update={"address": cluster.scheduler_address})
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def _local_cluster_kwargs(workers: int | None) -> dict[str, Any]:
    """A local cluster of worker processes (one thread each: a task mostly waits on its sandbox),
    bound to 127.0.0.1 with no dashboard, so nothing listens beyond the machine."""
    count = workers or os.cpu_count() or 1
    return {"n_workers": count, "threads_per_worker": 1, "processes": True, "host": "127.0.0.1",
            "dashboard_address": None}

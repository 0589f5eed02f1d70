"""The ``batch`` flow: every repository of a repositories file repaired, a few at a time, then a summary.

Control flow only. The file is read and validated first (a bad file fails the batch before any
work, naming the entry and key). Each repository is then one ``resume-or-repair`` task whose run is the
repository's own child flow run (``repair-repository``, which runs ``repair``); at most
``concurrency`` of them run at once (a thread pool of that size: each mostly waits on sandboxes,
whose own fan-out goes to the configured task runner). A repository's failure is recorded as its
row and never stops the others. At the end a table artifact summarizes every repository.

With a work pool (``work_pool``), each repository is instead a run of the repair deployment on that
pool (``run_deployment``), so the pool's workers, on any number of machines, share the batch under
the pool's limits. The batch watches the runs to their end through the state machine of
``equisa_core.operations.scaleout``: a run lost with its worker (``Crashed``) runs again, and what
cannot finish is reported with the reason. There is no resume cache on a pool.

In this process, re-runs resume: a finished repository (fixed, plausible only, not fixed, nothing to fix) is a
cached ``resume-or-repair`` result, keyed by the entry and the content digest of its snapshot, so a
re-run of the same file over unchanged code skips it; failed ones run again, and underneath
every sandboxed test run is cached too.
"""

from __future__ import annotations

import time
from pathlib import Path

from prefect import flow, task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import INPUTS, TASK_SOURCE
from prefect.task_runners import ThreadPoolTaskRunner

from equisa_core.operations import scaleout
from equisa_core.operations.batch import (
    BatchSummary,
    RepositoryEntry,
    RepositoryResult,
    summarize,
    with_model_overrides,
)
from flows.repository import repair_repository
from tasks.operations.batch_io import default_reports_dir, read_repositories
from tasks.operations.batch_results import RepositoryFailed, result_of, snapshot_digest
from tasks.operations.deployment_runs import (
    POLL_S,
    cancel_run,
    check_repair_deployment,
    poll_runs,
    submit_repository,
)
from tasks.operations.task_runners import shared_cluster
from tasks.run.parameters import BatchParameters, RepositoryRunParameters

__all__ = ["batch"]

#: Part of ``resume-or-repair``'s cache key: bump it when what a cached result means changes.
_RESULT_VERSION = "1"


@task(name="resume-or-repair", task_run_name="repair {entry.source}",
      cache_policy=(INPUTS + TASK_SOURCE) - "reports_dir", persist_result=True)
def repair_one(entry: RepositoryEntry, digest: str, reports_dir: str, no_cache: bool,
               version: str = _RESULT_VERSION) -> RepositoryResult:
    """One repository as a child flow run; raises (so nothing is cached) when that run failed."""
    params = RepositoryRunParameters(entry=entry, reports_dir=reports_dir, no_cache=no_cache)
    state = repair_repository(params, return_state=True)
    result = state.result(raise_on_failure=False)
    if not isinstance(result, RepositoryResult):
        raise RuntimeError(state.message or f"the repository's run ended {state.type.value.lower()}")
    if state.is_failed():
        raise RepositoryFailed(result)
    return result


@flow(name="batch", flow_run_name="batch {params.repositories_file}", log_prints=True)
def batch(params: BatchParameters) -> BatchSummary:
    """Repair every repository of a repositories file, ``concurrency`` at a time here, or as deployment
    runs on ``work_pool``, and summarize."""
    started = time.monotonic()
    entries = with_model_overrides(read_repositories(params.repositories_file), params.max_cost_usd,
                                   params.price_input, params.price_output)
    reports = str(Path(params.reports_dir) if params.reports_dir else default_reports_dir())
    if params.work_pool:
        print(f"{len(entries)} repositories as runs of {params.deployment} on work pool {params.work_pool}; "
              f"reports in {reports}")
        results = _on_work_pool(params, entries, reports)
    else:
        print(f"{len(entries)} repositories, {params.concurrency} at a time; reports in {reports}")
        results = _in_process(params, entries, reports)
    summary = summarize(results, round(time.monotonic() - started, 3), reports)
    counts = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in summary.counts.items() if n)
    create_table_artifact(table=summary.table_rows(), key="batch-summary",
                          description=f"{len(results)} repositories: {counts}")
    print(f"batch done in {summary.seconds:.1f}s: {counts}")
    return summary


def _in_process(params: BatchParameters, entries: list[RepositoryEntry],
                reports: str) -> list[RepositoryResult]:
    """Each repository as a child flow run here, ``concurrency`` at a time, resuming from cache."""
    runner = repair_one.with_options(refresh_cache=params.no_cache or None)
    with shared_cluster(), ThreadPoolTaskRunner(max_workers=params.concurrency) as pool:
        digests = [pool.submit(snapshot_digest, {"entry": e}) for e in entries]
        futures = [pool.submit(runner, {"entry": e, "digest": d, "reports_dir": reports,
                                        "no_cache": params.no_cache})
                   for e, d in zip(entries, digests, strict=True)]
        results = []
        for entry, future in zip(entries, futures, strict=True):
            future.wait()
            results.append(result_of(entry, future.state))
    return results


def _on_work_pool(params: BatchParameters, entries: list[RepositoryEntry],
                  reports: str) -> list[RepositoryResult]:
    """Each repository as a run of the repair deployment on the work pool, driven by ``scaleout``."""
    assert params.work_pool is not None
    check_repair_deployment(params.deployment, params.work_pool)
    state = scaleout.initial_state(entries, params.crash_retries, params.run_timeout_s)
    while scaleout.verdict(state) is None:
        for step in scaleout.next_steps(state):
            if isinstance(step, scaleout.Submit):
                repo = state.repositories[step.index]
                if repo.attempts:
                    print(f"{repo.entry.label}: run again ({repo.attempts[-1].outcome})")
                run_id = submit_repository(params.deployment, repo.entry, reports, params.no_cache)
                state = scaleout.record(state, scaleout.Submitted(index=step.index, flow_run_id=run_id,
                                                                  now=time.monotonic()))
            else:
                cancel_run(step.flow_run_id)
                state = scaleout.record(state, scaleout.Cancelled(flow_run_id=step.flow_run_id))
        if scaleout.watched(state):
            time.sleep(POLL_S)
            state = scaleout.record(state, scaleout.Polled(runs=poll_runs(scaleout.watched(state)),
                                                           now=time.monotonic()))
    return scaleout.results(state)

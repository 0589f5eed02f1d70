"""The ``batch`` flow: every repository of a repositories file repaired, a few at a time, then a summary.

Control flow only. The file is read and validated first (a bad file fails the batch before any
work, naming the entry and key). Each repository is then one ``resume-or-repair`` task whose run is the
repository's own child flow run (``repair-repository``, which runs ``repair``); at most
``concurrency`` of them run at once (a thread pool of that size: each mostly waits on sandboxes,
whose own fan-out goes to the configured task runner). A repository's failure is recorded as its
row and never stops the others. At the end a table artifact summarizes every repository.

Re-runs resume: a finished repository (fixed, plausible only, not fixed, nothing to fix) is a
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
from prefect.states import State
from prefect.task_runners import ThreadPoolTaskRunner
from pydantic import ConfigDict, Field

from equisa_core.common.options import BatchOptions
from equisa_core.errors import EXIT_INTERNAL
from equisa_core.operations.batch import BatchSummary, RepositoryEntry, RepositoryResult, is_remote, summarize
from flows.repository import RepositoryRunParameters, repair_repository
from tasks.batch_io import default_reports_dir, read_repositories
from tasks.prepare import snapshot_workspace
from tasks.task_runners import shared_cluster

__all__ = ["BatchParameters", "batch"]

#: Part of ``resume-or-repair``'s cache key: bump it when what a cached result means changes.
_RESULT_VERSION = "1"


class BatchParameters(BatchOptions):
    """Parameters of a batch: the repositories file, how many run at once, where reports go."""

    model_config = ConfigDict(extra="forbid")

    repositories_file: str = Field(
        description="YAML file listing the repositories (see equisa_core.operations.batch).")


@task(name="snapshot-repository", retries=1, retry_delay_seconds=2, cache_policy=None)
def snapshot_digest(entry: RepositoryEntry) -> str:
    """The content digest of the repository as the repair will see it (the resume cache's key)."""
    if is_remote(entry.source) or entry.ref:
        return snapshot_workspace.fn(entry.source, entry.ref).digest
    path = Path(entry.source)
    if not path.is_dir():  # reported by the repository's own run; here it only must not match a cache
        return f"missing:{time.time_ns()}"
    return snapshot_workspace.fn(entry.source).digest


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


class RepositoryFailed(Exception):
    """A repository's run failed; carries its result so the summary shows what happened."""

    def __init__(self, result: RepositoryResult) -> None:
        super().__init__(result.error or "failed")
        self.result = result


@flow(name="batch", flow_run_name="batch {params.repositories_file}", log_prints=True)
def batch(params: BatchParameters) -> BatchSummary:
    """Repair every repository of a repositories file, ``concurrency`` at a time, and summarize."""
    started = time.monotonic()
    entries: list[RepositoryEntry] = read_repositories(params.repositories_file)
    reports = str(Path(params.reports_dir) if params.reports_dir else default_reports_dir())
    print(f"{len(entries)} repositories, {params.concurrency} at a time; reports in {reports}")
    runner = repair_one.with_options(refresh_cache=params.no_cache or None)
    with shared_cluster(), ThreadPoolTaskRunner(max_workers=params.concurrency) as pool:
        digests = [pool.submit(snapshot_digest, {"entry": e}) for e in entries]
        futures = [pool.submit(runner, {"entry": e, "digest": d, "reports_dir": reports,
                                        "no_cache": params.no_cache})
                   for e, d in zip(entries, digests, strict=True)]
        results = []
        for entry, future in zip(entries, futures, strict=True):
            future.wait()
            results.append(_result(entry, future.state))
    summary = summarize(results, round(time.monotonic() - started, 3), reports)
    counts = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in summary.counts.items() if n)
    create_table_artifact(table=summary.table_rows(), key="batch-summary",
                          description=f"{len(results)} repositories: {counts}")
    print(f"batch done in {summary.seconds:.1f}s: {counts}")
    return summary


def _result(entry: RepositoryEntry, state: State) -> RepositoryResult:
    """The repository's result from its task's final state; a crash becomes an ``error`` row."""
    try:
        value = state.result(raise_on_failure=False)
    except Exception as error:  # the result itself is unreadable (lost storage, say)
        value = error
    if isinstance(value, RepositoryResult):
        return value
    if isinstance(value, RepositoryFailed):
        return value.result
    reason = f"{type(value).__name__}: {value}" if isinstance(value, BaseException) else (
        state.message or f"ended {state.type.value.lower()}")
    return RepositoryResult(name=entry.label, source=entry.source, ref=entry.ref, status="error",
                            error=reason, exit_code=EXIT_INTERNAL)

"""A batch's per-repository results: the snapshot digest that keys the resume cache, a repository's
result read from its run's final state (a crash becomes an ``error`` row), the JSON report
written per repository, and its markdown artifact (``publish_result``).
"""

from __future__ import annotations

import time
from pathlib import Path

from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.states import State
from pydantic import BaseModel

from equisa_core.errors import EXIT_INTERNAL
from equisa_core.operations.batch import RepositoryEntry, RepositoryResult, is_remote
from equisa_core.repair.report import RepairReport
from tasks.run.preparation import snapshot_workspace

__all__ = ["snapshot_digest", "RepositoryFailed", "result_of", "FullReport", "result_fields",
           "publish_result", "RESULT_ROW_KEY"]

#: The key of the table artifact that holds a repository's result as data (one row): a batch on a work
#: pool reads it back from the server (``tasks/operations/deployment_runs.py``).
RESULT_ROW_KEY = "repository-result-row"


@task(name="snapshot-repository", retries=1, retry_delay_seconds=2, cache_policy=None)
def snapshot_digest(entry: RepositoryEntry) -> str:
    """The content digest of the repository as the repair will see it (the resume cache's key)."""
    if is_remote(entry.source) or entry.ref:
        return snapshot_workspace.fn(entry.source, entry.ref).digest
    path = Path(entry.source)
    if not path.is_dir():  # reported by the repository's own run; here it only must not match a cache
        return f"missing:{time.time_ns()}"
    return snapshot_workspace.fn(entry.source).digest


class RepositoryFailed(Exception):
    """A repository's run failed; carries its result so the summary shows what happened."""

    def __init__(self, result: RepositoryResult) -> None:
        super().__init__(result.error or "failed")
        self.result = result


def result_of(entry: RepositoryEntry, state: State) -> RepositoryResult:
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


class FullReport(BaseModel):
    """The JSON report of one repository: the summary row and the whole repair report."""

    result: RepositoryResult
    repair: RepairReport | None


def result_fields(report: RepairReport, entry: RepositoryEntry) -> dict:
    """A repository's result row from its repair report (a note when CI saw other failing tests)."""
    failing = report.localization.tests.failed if report.localization is not None else 0
    problems = list(report.problems)
    if entry.failing_tests and failing != len(entry.failing_tests):
        problems.append(f"CI reported {len(entry.failing_tests)} failing test(s); this run saw {failing} "
                        "fail (a flaky test, a different environment, or a selection that differs)")
    return dict(status=report.status, target=report.target, diff=report.diff, failing_tests=failing,
                candidates_tried=report.candidates_tried,
                exit_code=report.exit_code,
                problems=tuple(problems))


def publish_result(result: RepositoryResult) -> None:
    """The Prefect artifacts of one repository's result: markdown to read, and one table row as data."""
    lines = [f"## {result.name}: **{result.status}**", "",
             f"- source: `{result.source}`" + (f" at `{result.ref}`" if result.ref else "")]
    if result.ci_run_url:
        lines.append(f"- CI run: {result.ci_run_url}")
    if result.ci_failing_tests:
        lines.append(f"- failing in CI: {', '.join(f'`{t}`' for t in result.ci_failing_tests)}")
    if result.target:
        lines.append(f"- target: `{result.target}`")
    if result.error:
        lines.append(f"- error: {result.error}")
    if result.published is not None:
        lines.append(f"- fix branch: `{result.published.branch}` on {result.published.remote}")
        if result.published.pull_request_url:
            lines.append(f"- pull request ({result.published.pull_request}): "
                         f"{result.published.pull_request_url}")
    if result.report_path:
        lines.append(f"- report: `{result.report_path}`")
    if result.diff:
        lines += ["", "```diff", result.diff.rstrip(), "```"]
    create_markdown_artifact(markdown="\n".join(lines) + "\n", key="repository-result",
                             description=f"{result.name}: {result.status}")
    create_table_artifact(table=[result.model_dump(mode="json")], key=RESULT_ROW_KEY,
                          description=f"{result.name}: {result.status} (the result as data)")

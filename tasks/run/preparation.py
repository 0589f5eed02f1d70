"""Prefect tasks that prepare a run: the workspace snapshot and the interpreter check."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from equisa_core.common.sandbox_policy import SandboxIsolation
from equisa_core.errors import RepositoryNotFoundError
from tasks.run.interpreter import PROVISION, Interpreter, resolve_interpreter
from tasks.run.workspace import Workspace, WorkspaceError, snapshot

if TYPE_CHECKING:
    from prefect.client.schemas.objects import State

__all__ = ["check_repository", "preflight", "snapshot_workspace", "check_interpreter"]


def check_repository(path: Path) -> Path:
    """Return the resolved repository path, or raise ``RepositoryNotFoundError``."""
    if not path.exists():
        raise RepositoryNotFoundError(f"repository path {path} does not exist")
    if not path.is_dir():
        raise RepositoryNotFoundError(f"repository path {path} is not a directory")
    return path.resolve()


def preflight(path: Path, artifacts: str | None, since: str | None, sandbox: str, allow_weak_sandbox: bool,
              generated_code: str | None) -> SandboxIsolation:
    """A command's checks before Prefect starts: the repository exists, the artifact location parses,
    ``since`` names a ref (exit 3) and ``sandbox`` may run ``generated_code`` (the code a run executes
    untrusted, if any). Returns the sandbox's isolation."""
    from equisa_core.common.sandbox_policy import require_confinement
    from equisa_core.operations.storage import resolve_artifacts
    from tasks.sandbox.run_tests import sandbox_isolation

    check_repository(path)
    resolve_artifacts(artifacts)
    if since:
        from tasks.run.git_changes import changed_lines

        changed_lines(path, since)
    isolation = sandbox_isolation(sandbox, allow_weak_sandbox)
    if generated_code:
        require_confinement(isolation, generated_code)
    return isolation


def _workspace_fault(task: object, task_run: object, state: State[Any]) -> bool:
    """Retry only faults of the machine (disk, git), never bad input (path, URL, ref)."""
    try:
        state.result(raise_on_failure=True)
    except WorkspaceError:
        return True
    except Exception:
        return False
    return False


@task(name="snapshot-workspace", cache_policy=NO_CACHE, retries=1, retry_delay_seconds=2,
      retry_condition_fn=_workspace_fault)
def snapshot_workspace(source: str, ref: str | None = None) -> Workspace:
    """A content-hashed read-only snapshot of the repository (hashing is the cache check)."""
    return snapshot(source, ref)


@task(name="check-interpreter", cache_policy=NO_CACHE)
def check_interpreter(repo: Path, python: str | None, provision: bool = PROVISION,
                      environments: str | None = None) -> Interpreter:
    """The interpreter that runs the suite (built with uv when ``provision`` says so and none is
    given), checked: exists, Python 3.8+, pytest importable."""
    folder = Path(environments).expanduser() if environments else None
    return resolve_interpreter(repo, python, provision, folder)

"""``equisa deploy``'s work: make the work pool if it is missing, then ``prefect deploy`` EQUISA's
deployments (``deployments/prefect.yaml``) with Prefect's own CLI, so the file means the same either way."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from equisa_core.errors import DeployError

__all__ = ["checked_spec", "deploy", "ensure_work_pool", "project_root", "work_pool"]


def project_root() -> Path:
    """EQUISA's folder: the one that holds ``deployments/prefect.yaml`` and the flows' entrypoints."""
    return Path(__file__).resolve().parents[1]


def ensure_work_pool(name: str, pool_type: str) -> bool:
    """Create the work pool ``name`` unless it exists; returns whether it was created."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        try:
            pool = client.read_work_pool(name)
        except ObjectNotFound:
            client.create_work_pool(WorkPoolCreate(name=name, type=pool_type))
            return True
        if pool.type != pool_type:
            raise DeployError(f"work pool {name} exists with type {pool.type}, not {pool_type}")
        return False


def checked_spec() -> Path:
    """``deployments/prefect.yaml``, once a Prefect server to deploy to is configured and the file exists."""
    from prefect.settings import get_current_settings

    if not get_current_settings().api.url:
        raise DeployError("no Prefect server: set PREFECT_API_URL to the server to deploy to")
    spec = project_root() / "deployments" / "prefect.yaml"
    if not spec.is_file():
        raise DeployError(f"{spec} is missing")
    return spec


def work_pool(pool: str, pool_type: str) -> bool:
    """``ensure_work_pool``, with any failure but a ``DeployError`` of its own said as one."""
    try:
        return ensure_work_pool(pool, pool_type)
    except DeployError:
        raise
    except Exception as error:
        raise DeployError(f"could not read or create work pool {pool}: {error}") from None


def deploy(spec: Path, pool: str, names: list[str]) -> None:
    """``prefect deploy`` the deployments ``names`` of ``spec`` (none: all) to ``pool``; raises
    ``DeployError`` with the tail of Prefect's output when it fails."""
    which = [f"--name={n}" for n in names] or ["--all"]
    command = [sys.executable, "-m", "prefect", "--no-prompt", "deploy", *which, "--prefect-file", str(spec),
               "--pool", pool]
    done = subprocess.run(command, cwd=project_root(), env=dict(os.environ), capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-12:]
        raise DeployError("prefect deploy failed:\n" + "\n".join(tail))

"""``equisa deploy``: make the work pool if it is missing, then ``prefect deploy --all`` EQUISA's deployments.

It is a convenience over the two documented Prefect commands (README, "Deployments"); it runs
Prefect's own CLI for the deploy itself, so ``deployments/prefect.yaml`` means the same either way.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from equisa_core.errors import EXIT_OK, DeployError

__all__ = ["register", "project_root", "ensure_work_pool"]


def register(commands: Any) -> None:
    """Add ``equisa deploy``."""
    parser = commands.add_parser(
        "deploy", help="create the work pool and deploy deployments/prefect.yaml (nightly batch, CI repair)",
        description="Create the process work pool if it does not exist, then run `prefect deploy --all "
        "--prefect-file deployments/prefect.yaml` from EQUISA's folder against PREFECT_API_URL.",
    )
    parser.add_argument("--pool", default="equisa-process",
                        help="work pool to create if missing and deploy to (default equisa-process)")
    parser.add_argument("--pool-type", default="process", choices=("process", "docker"),
                        help="type of the work pool when it is created (docker workers need prefect-docker)")
    parser.add_argument("--name", action="append", default=[], metavar="DEPLOYMENT",
                        help="deploy only this deployment (repeatable; default: all)")
    parser.set_defaults(handler=_deploy_command)


def project_root() -> Path:
    """EQUISA's folder: the one that holds ``deployments/prefect.yaml`` and the flows' entrypoints."""
    return Path(__file__).resolve().parents[2]


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


def _deploy_command(args: argparse.Namespace, console: Console) -> int:
    from prefect.settings import get_current_settings

    if not get_current_settings().api.url:
        raise DeployError("no Prefect server: set PREFECT_API_URL to the server to deploy to")
    root = project_root()
    spec = root / "deployments" / "prefect.yaml"
    if not spec.is_file():
        raise DeployError(f"{spec} is missing")
    try:
        created = ensure_work_pool(args.pool, args.pool_type)
    except DeployError:
        raise
    except Exception as error:
        raise DeployError(f"could not read or create work pool {args.pool}: {error}") from None
    console.print(f"Work pool {args.pool} ({args.pool_type}) " + ("created" if created else "exists"),
                  highlight=False)
    which = [f"--name={n}" for n in args.name] or ["--all"]
    command = [sys.executable, "-m", "prefect", "--no-prompt", "deploy", *which, "--prefect-file", str(spec),
               "--pool", args.pool]
    done = subprocess.run(command, cwd=root, env=dict(os.environ), capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-12:]
        raise DeployError("prefect deploy failed:\n" + "\n".join(tail))
    console.print(f"Deployed {', '.join(args.name) or 'every deployment'} of {spec} to pool {args.pool}; "
                  f"start workers with: prefect worker start --pool {args.pool}", highlight=False,
                  soft_wrap=True)
    return EXIT_OK

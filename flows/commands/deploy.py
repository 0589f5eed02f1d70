"""``equisa deploy``: make the work pool if it is missing, then ``prefect deploy --all`` EQUISA's deployments.

It is a convenience over the two documented Prefect commands (README, "Deployments"); the work is
in ``tasks/deploy.py``.
"""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from equisa_core.errors import EXIT_OK

__all__ = ["register"]


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


def _deploy_command(args: argparse.Namespace, console: Console) -> int:
    from tasks.deploy import checked_spec, deploy, work_pool

    spec = checked_spec()
    created = work_pool(args.pool, args.pool_type)
    console.print(f"Work pool {args.pool} ({args.pool_type}) " + ("created" if created else "exists"),
                  highlight=False)
    deploy(spec, args.pool, args.name)
    console.print(f"Deployed {', '.join(args.name) or 'every deployment'} of {spec} to pool {args.pool}; "
                  f"start workers with: prefect worker start --pool {args.pool}", highlight=False,
                  soft_wrap=True)
    return EXIT_OK

"""``equisa deploy``: make the work pool if it is missing, then ``prefect deploy --all`` EQUISA's deployments.

It is a convenience over the two documented Prefect commands (docs/deployments.md); the work is
in ``cli/deployment_setup.py``.
"""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from cli.options import add_model_options, parameters_from
from equisa_core.common.options import DeployOptions
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
    add_model_options(parser, DeployOptions)
    parser.set_defaults(handler=_deploy_command, option_models=(DeployOptions,))


def _deploy_command(args: argparse.Namespace, console: Console) -> int:
    from cli.deployment_setup import (
        CI_AUTOMATION,
        UNRESPONSIVE_AUTOMATION,
        checked_spec,
        ci_automation,
        deploy,
        unresponsive_automation,
        work_pool,
    )

    options = DeployOptions(**parameters_from(args, DeployOptions))
    spec = checked_spec()
    created = work_pool(args.pool, args.pool_type)
    console.print(f"Work pool {args.pool} ({args.pool_type}) " + ("created" if created else "exists"),
                  highlight=False)
    deploy(spec, args.pool, args.name, options)
    console.print(f"Deployed {', '.join(args.name) or 'every deployment'} of {spec} to pool {args.pool} "
                  f"(nightly batch: {options.schedule_cron}, {options.schedule_timezone}); start workers "
                  f"with: prefect worker start --pool {args.pool}", highlight=False, soft_wrap=True)
    unresponsive_automation(options.unresponsive_after_s)
    console.print(f"Automation {UNRESPONSIVE_AUTOMATION}: an EQUISA run silent for "
                  f"{options.unresponsive_after_s:g} s is marked crashed", highlight=False, soft_wrap=True)
    expects = ci_automation()
    if expects:
        console.print(f"Automation {CI_AUTOMATION}: on {expects}, a run of repair-on-ci-failure",
                      highlight=False, soft_wrap=True)
    return EXIT_OK

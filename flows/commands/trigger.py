"""``equisa trigger``: a CI job reports a failure; the ``repair-on-ci-failure`` deployment repairs it.

It posts one event (``equisa.ci.failed``: repository, ref, failing tests, CI run URL) to the
Prefect server's events API (``tasks/ci_trigger.py``); exit code 53 when it did not arrive.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from equisa_core.common.options import ForgeOptions
from equisa_core.errors import EXIT_OK
from tasks.cli_options import SPELLING, Option, add_model_options, parameters_from

__all__ = ["register"]

#: The publishing options as the repair run the event starts reads them: the worker pushes, with the
#: token of its own environment.
TRIGGER_SPELLING: dict[str, Option] = {
    **SPELLING[ForgeOptions],
    "push": Option("the repair pushes its accepted patch as one commit to a branch equisa/fix-<short sha> "
                   "of the repository (for a git URL: to that URL; for a folder: to --remote)", switch=True),
    "open_pr": Option("the repair also opens a pull request for the fix branch, or comments on the open "
                      "one, with the token in the worker's GITHUB_TOKEN or EQUISA_FORGE_TOKEN (implies "
                      "--push)", switch=True),
}


def register(commands: Any) -> None:
    """Add ``equisa trigger``."""
    parser = commands.add_parser(
        "trigger", help="post a CI-failure event that starts the repair-on-ci-failure deployment",
        description="Post an equisa.ci.failed event (repository, ref, failing tests, CI run URL) to the "
        "Prefect server at PREFECT_API_URL, authenticated with PREFECT_API_AUTH_STRING or PREFECT_API_KEY. "
        "In GitHub Actions and GitLab CI the repository, ref and run URL default to the job's own.",
    )
    parser.add_argument("--repository", metavar="URL_OR_PATH",
                        help="git URL (or a folder on the workers' machines) of the failing repository "
                             "(default: the CI job's repository)")
    parser.add_argument("--ref", help="commit, branch or tag that failed (default: the CI job's commit)")
    parser.add_argument("--failing-tests", nargs="*", default=[], metavar="TEST",
                        help="pytest node ids that failed")
    parser.add_argument("--ci-run-url", metavar="URL", help="link to the failed CI run (default: the job's)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--llm", dest="llm", action="store_true", default=None,
                      help="ask the repair to use the model (default: when the workers have one)")
    mode.add_argument("--no-llm", dest="llm", action="store_false", help="deterministic repair only")
    parser.add_argument("--api-url", metavar="URL", help="Prefect API (default: PREFECT_API_URL)")
    parser.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                        help="how long to wait for the server (default 30)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the posted event here")
    add_model_options(parser, ForgeOptions, spelling=TRIGGER_SPELLING)
    parser.set_defaults(handler=_trigger_command)


def _trigger_command(args: argparse.Namespace, console: Console) -> int:
    from tasks.ci_trigger import trigger_repair
    from tasks.cli_run import write_json

    publish = ForgeOptions(**parameters_from(args, ForgeOptions))
    api_url, event = trigger_repair(args.api_url, args.repository, args.ref, args.failing_tests,
                                    args.ci_run_url, args.llm, args.timeout, publish)
    write_json(args.json, event)
    payload = event["payload"]
    console.print(f"Posted {event['event']} for [bold]{payload['repository']}[/]"
                  + (f" at {payload['ref']}" if payload["ref"] else "")
                  + f" ({len(args.failing_tests)} failing tests) to {api_url} · event {event['id']}"
                  + (" · the fix will be pushed" + (" with a pull request" if publish.open_pr else "")
                     if publish.publishing else ""),
                  highlight=False, soft_wrap=True)
    return EXIT_OK

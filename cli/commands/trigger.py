"""``equisa trigger``: a CI job reports a failure; the ``repair-on-ci-failure`` deployment repairs it.

It posts one event (``equisa.ci.failed``: repository, ref, failing tests, CI run URL) to the
Prefect server's events API (``tasks/operations/ci_trigger.py``); exit code 53 when it did not arrive.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from cli.options import SPELLING, Option, add_deprecated_flag, add_model_options, parameters_from
from equisa_core.common.options import EndpointOptions, ForgeOptions
from equisa_core.errors import EXIT_OK

__all__ = ["register", "REQUEST_TIMEOUT_S"]

#: Seconds ``equisa trigger`` waits for the Prefect server to take the event.
REQUEST_TIMEOUT_S = 30.0

#: The publishing options as the repair run the event starts reads them: the worker pushes, with the
#: token of its own environment.
TRIGGER_SPELLING: dict[str, Option] = {
    **SPELLING[ForgeOptions],
    "push": Option("the repair pushes its accepted patch as one commit to a branch equisa/fix-<short sha> "
                   "of the repository (for a git URL: to that URL; for a folder: to --remote)", switch=True),
    "open_pr": Option("the repair also opens a pull request for the fix branch, or comments on the open "
                      "one, with the token in the worker's GITHUB_TOKEN or EQUISA_FORGE_TOKEN (implies "
                      "--push)", switch=True),
    "allow_plausible": Option("the repair also publishes a plausible-only patch (it passes the suite but "
                              "failed the anti-overfitting checks), marked as plausible only and why",
                              switch=True),
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
    llm = Option("ask the repair to use the model (default: when the workers have one)",
                 off_help="deterministic repair only")
    add_model_options(parser, EndpointOptions, spelling={"llm": llm})
    parser.add_argument("--api-url", metavar="URL", help="Prefect API (default: PREFECT_API_URL)")
    parser.add_argument("--request-timeout", type=float, default=REQUEST_TIMEOUT_S, metavar="SECONDS",
                        help=f"how long to wait for the Prefect server to take the event "
                             f"(default {REQUEST_TIMEOUT_S:g})")
    add_deprecated_flag(parser, "--timeout", "--request-timeout", dest="request_timeout", type=float,
                        metavar="SECONDS")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the posted event here")
    add_model_options(parser, ForgeOptions, spelling=TRIGGER_SPELLING)
    # The model's options (--llm, --max-cost, the prices) also come from EQUISA_* variables; they
    # travel in the event to the repair-on-ci-failure run.
    parser.set_defaults(handler=_trigger_command, option_models=(EndpointOptions,))


def _trigger_command(args: argparse.Namespace, console: Console) -> int:
    from cli.flow_runs import write_json
    from tasks.operations.ci_trigger import trigger_repair

    model = EndpointOptions(**parameters_from(args, EndpointOptions))
    publish = ForgeOptions(**parameters_from(args, ForgeOptions))
    api_url, event = trigger_repair(args.api_url, args.repository, args.ref, args.failing_tests,
                                    args.ci_run_url, model, args.request_timeout, publish)
    write_json(args.json, event)
    payload = event["payload"]
    console.print(f"Posted {event['event']} for [bold]{payload['repository']}[/]"
                  + (f" at {payload['ref']}" if payload["ref"] else "")
                  + f" ({len(args.failing_tests)} failing tests) to {api_url} · event {event['id']}"
                  + (" · the fix will be pushed" + (" with a pull request" if publish.open_pr else "")
                     if publish.publishing else ""),
                  highlight=False, soft_wrap=True)
    return EXIT_OK

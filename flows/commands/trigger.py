"""``equisa trigger``: a CI job reports a failure; the ``repair-on-ci-failure`` deployment repairs it.

It posts one event (``equisa.ci.failed``: repository, ref, failing tests, CI run URL) to the
Prefect server's events API (``POST {PREFECT_API_URL}/events``), authenticated the way Prefect's
own client is: ``PREFECT_API_AUTH_STRING`` (a self-hosted server's basic auth) or
``PREFECT_API_KEY`` (Prefect Cloud, bearer). Posting directly, rather than through
``prefect.events.emit_event``, is deliberate: ``emit_event`` sends in the background and drops
errors, and a CI job must know that its event arrived (exit code 53 when it did not).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
from pathlib import Path
from typing import Any

from rich.console import Console

from equisa_core.errors import EXIT_OK, TriggerError

__all__ = ["register", "post_event", "auth_headers"]


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
    parser.set_defaults(handler=_trigger_command)


def auth_headers(auth_string: str | None, api_key: str | None) -> dict[str, str]:
    """The Authorization header Prefect's client sends: basic for an auth string, else bearer."""
    if auth_string:
        return {"Authorization": "Basic " + base64.b64encode(auth_string.encode()).decode()}
    if api_key:
        return {"Authorization": f"Bearer {api_key}"}
    return {}


def post_event(api_url: str, event: dict[str, Any], headers: dict[str, str], timeout: float) -> None:
    """POST one event to ``{api_url}/events``; raises ``TriggerError`` unless the server took it."""
    import httpx

    url = api_url.rstrip("/") + "/events"
    try:
        response = httpx.post(url, json=[event], headers=headers, timeout=timeout)
    except httpx.HTTPError as error:
        raise TriggerError(f"could not reach the Prefect server at {api_url}: {error}") from None
    if response.status_code in (401, 403):
        raise TriggerError(f"the Prefect server at {api_url} refused the credentials "
                           f"(HTTP {response.status_code}); set PREFECT_API_AUTH_STRING or PREFECT_API_KEY")
    if response.status_code >= 300:
        raise TriggerError(f"the Prefect server at {api_url} did not take the event: "
                           f"HTTP {response.status_code} {response.text[:300]}")


def _trigger_command(args: argparse.Namespace, console: Console) -> int:
    from prefect.settings import get_current_settings

    from equisa_core.operations.ci_event import ci_context, ci_failure_event

    settings = get_current_settings()
    api_url = args.api_url or (str(settings.api.url) if settings.api.url else "")
    if not api_url:
        raise TriggerError("no Prefect server: set PREFECT_API_URL (or pass --api-url) to the server "
                           "the repair-on-ci-failure deployment lives on")
    context = ci_context(os.environ)
    repository = args.repository or context["repository"]
    if not repository:
        raise TriggerError("no repository: pass --repository (outside GitHub Actions or GitLab CI)")
    auth = settings.api.auth_string.get_secret_value() if settings.api.auth_string else None
    key = settings.api.key.get_secret_value() if settings.api.key else None
    event = ci_failure_event(repository, args.ref or context["ref"], args.failing_tests,
                             args.ci_run_url or context["ci_run_url"], args.llm)
    post_event(api_url, event, auth_headers(auth, key), args.timeout)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(event, indent=2) + "\n", encoding="utf-8")
    payload = event["payload"]
    console.print(f"Posted {event['event']} for [bold]{repository}[/]"
                  + (f" at {payload['ref']}" if payload["ref"] else "")
                  + f" ({len(args.failing_tests)} failing tests) to {api_url} · event {event['id']}",
                  highlight=False, soft_wrap=True)
    return EXIT_OK

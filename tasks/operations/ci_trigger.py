"""``equisa trigger``'s work: post one ``equisa.ci.failed`` event to the Prefect server's events API.

It posts to ``POST {PREFECT_API_URL}/events``, authenticated the way Prefect's own client is:
``PREFECT_API_AUTH_STRING`` (a self-hosted server's basic auth) or ``PREFECT_API_KEY`` (Prefect
Cloud, bearer). Posting directly, rather than through ``prefect.events.emit_event``, is deliberate:
``emit_event`` sends in the background and drops errors, and a CI job must know that its event
arrived (exit code 53 when it did not).
"""

from __future__ import annotations

import base64
import os
from typing import Any

from equisa_core.common.options import EndpointOptions, ForgeOptions
from equisa_core.errors import TriggerError
from equisa_core.operations.ci_event import ci_context, ci_failure_event

__all__ = ["auth_headers", "post_event", "trigger_repair"]


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


def trigger_repair(api_url: str | None, repository: str | None, ref: str | None, failing_tests: list[str],
                   ci_run_url: str | None, model: EndpointOptions, timeout: float,
                   publish: ForgeOptions | None = None) -> tuple[str, dict[str, Any]]:
    """Post the CI failure (the CI job's own repository, ref and run URL where not given, the
    repair's ``model`` options: LLM on/off, cost cap, prices, and ``publish``: what the repair does
    with a fix) to ``api_url`` (None: ``PREFECT_API_URL``), waiting ``timeout`` seconds for the
    server; returns the API's address and the event posted."""
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    api_url = api_url or (str(settings.api.url) if settings.api.url else "")
    if not api_url:
        raise TriggerError("no Prefect server: set PREFECT_API_URL (or pass --api-url) to the server "
                           "the repair-on-ci-failure deployment lives on")
    context = ci_context(os.environ)
    repository = repository or context["repository"]
    if not repository:
        raise TriggerError("no repository: pass --repository (outside GitHub Actions or GitLab CI)")
    auth = settings.api.auth_string.get_secret_value() if settings.api.auth_string else None
    key = settings.api.key.get_secret_value() if settings.api.key else None
    event = ci_failure_event(repository, ref or context["ref"], failing_tests,
                             ci_run_url or context["ci_run_url"], model.llm, model.max_cost_usd,
                             model.price_input, model.price_output, publish=publish)
    post_event(api_url, event, auth_headers(auth, key), timeout)
    return api_url, event

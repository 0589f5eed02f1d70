"""The CI-failure event ``equisa trigger`` posts, and what a CI job's environment says about its run.

The open-source Prefect server has no webhooks, so a CI job posts this event itself; the
``repair-on-ci-failure`` deployment's trigger (``deployments/prefect.yaml``) matches its name and
resource and turns the payload into the ``repair-repository`` flow's parameters.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from equisa_core.common.options import ForgeOptions

__all__ = ["CI_FAILED_EVENT", "RESOURCE_PREFIX", "ci_failure_event", "ci_context", "resource_id"]

#: The event name the deployment trigger expects.
CI_FAILED_EVENT = "equisa.ci.failed"
#: Resource ids of repositories: ``equisa.repository.<repository, with unsafe characters as '-'>``.
RESOURCE_PREFIX = "equisa.repository."


def resource_id(repository: str) -> str:
    """The event's resource id for ``repository`` (a URL or a path)."""
    bare = re.sub(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", "", repository.strip()).removesuffix(".git").strip("/")
    return RESOURCE_PREFIX + (re.sub(r"[^A-Za-z0-9._/-]+", "-", bare) or "unknown")


def ci_failure_event(repository: str, ref: str | None, failing_tests: Sequence[str], ci_run_url: str | None,
                     llm: bool | None = None, max_cost_usd: float | str | None = None,
                     price_input: float | None = None, price_output: float | None = None,
                     occurred: datetime | None = None, event_id: str | None = None,
                     publish: ForgeOptions | None = None) -> dict[str, Any]:
    """The event as the Prefect events API takes it (one element of the POSTed list); ``max_cost_usd``
    (USD, or ``none``: no cap; None: the repair's default) and the prices go to the repair's entry.

    Every payload key is present (``None`` when unknown) because the trigger's templates read each one;
    ``publish`` (what to do with a fix: ``--push``, ``--open-pr``) is always a whole ``ForgeOptions``.
    """
    return {
        "id": event_id or str(uuid.uuid4()),
        "occurred": (occurred or datetime.now(UTC)).isoformat(),
        "event": CI_FAILED_EVENT,
        "resource": {"prefect.resource.id": resource_id(repository), "prefect.resource.name": repository},
        "related": [],
        "payload": {
            "repository": repository,
            "ref": ref or None,
            "failing_tests": list(failing_tests),
            "ci_run_url": ci_run_url or None,
            "llm": llm,
            "max_cost_usd": max_cost_usd,
            "price_input": price_input,
            "price_output": price_output,
            "publish": (publish or ForgeOptions()).model_dump(),
        },
    }


def ci_context(env: Mapping[str, str]) -> dict[str, str | None]:
    """Repository, ref and run URL as GitHub Actions or GitLab CI describe the running job (else None)."""
    if env.get("GITHUB_ACTIONS") == "true" or env.get("GITHUB_REPOSITORY"):
        server = env.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
        repo = env.get("GITHUB_REPOSITORY")
        run = env.get("GITHUB_RUN_ID")
        return {"repository": f"{server}/{repo}.git" if repo else None, "ref": env.get("GITHUB_SHA"),
                "ci_run_url": f"{server}/{repo}/actions/runs/{run}" if repo and run else None}
    if env.get("GITLAB_CI") == "true" or env.get("CI_PROJECT_URL"):
        project = env.get("CI_PROJECT_URL")
        return {"repository": f"{project}.git" if project else None, "ref": env.get("CI_COMMIT_SHA"),
                "ci_run_url": env.get("CI_JOB_URL") or env.get("CI_PIPELINE_URL")}
    return {"repository": None, "ref": None, "ci_run_url": None}

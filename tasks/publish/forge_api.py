"""``--open-pr``: a pull request for a pushed fix branch, through the forge's REST API (httpx).

``open_pull_request`` posts ``POST /repos/{owner}/{repo}/pulls``; when the forge says a pull request
for the branch is already open (GitHub: 422 "A pull request already exists", Gitea: 409) it finds
that one (``GET .../pulls?head=OWNER:BRANCH&state=open``) and comments on it instead
(``POST .../issues/{number}/comments``). The body is a parameter: any Markdown the caller made.

The token comes from the environment (``TOKEN_VARIABLES``). A connection that cannot be made and the
forge's 502/503/504 are retried (tenacity); a request that was sent but not answered in time is not
(a pull request may have been opened), and neither is a refusal. Errors: ``ForgeAuthError`` (no token,
401, 403), ``ForgeTimeoutError`` (no answer in time, unreachable), ``ForgeError`` (404, 422, others).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from equisa_core.common.options import ForgeKind
from equisa_core.errors import ForgeAuthError, ForgeError, ForgeTimeoutError
from equisa_core.operations.forge import (
    TOKEN_VARIABLES,
    ForgeRepository,
    api_error,
    is_existing_pull_request,
)

__all__ = ["ForgeAPI", "PullRequest", "forge_token", "open_pull_request"]

#: Attempts at a request whose connection fails or that the forge answers 502, 503 or 504.
ATTEMPTS = 3
_RETRIED_STATUSES = frozenset({502, 503, 504})


class PullRequest(BaseModel):
    """The pull request of a fix branch: opened now, or already open and commented on."""

    model_config = ConfigDict(frozen=True)

    action: Literal["opened", "commented"]
    number: int
    url: str
    comment_url: str | None = None


def forge_token(env: Mapping[str, str] | None = None) -> str:
    """The forge's token from the environment (``TOKEN_VARIABLES``, first set first)."""
    env = os.environ if env is None else env
    for name in TOKEN_VARIABLES:
        if env.get(name, "").strip():
            return env[name].strip()
    raise ForgeAuthError(f"--open-pr needs a token: set {' or '.join(reversed(TOKEN_VARIABLES))} "
                         "(in GitHub Actions: `GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}`, with "
                         "`pull-requests: write`)")


class _Unanswered(Exception):
    """A retryable failure: no connection, or a 502/503/504 from the forge."""

    def __init__(self, message: str, response: httpx.Response | None = None) -> None:
        super().__init__(message)
        self.response = response


class ForgeAPI:
    """A forge's REST API for one repository: requests with the token, errors translated."""

    def __init__(self, api: str, repository: ForgeRepository, token: str, kind: ForgeKind, timeout: float,
                 transport: httpx.BaseTransport | None = None) -> None:
        scheme = "token" if kind == "gitea" else "Bearer"
        self.api, self.repository = api.rstrip("/"), repository
        self.client = httpx.Client(
            base_url=self.api, timeout=timeout, transport=transport,
            headers={"Authorization": f"{scheme} {token}", "Accept": "application/vnd.github+json",
                     "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "equisa"})

    def __enter__(self) -> ForgeAPI:
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()

    @property
    def prefix(self) -> str:
        """The repository's path under the API: ``/repos/OWNER/NAME``."""
        return f"/repos/{self.repository.owner}/{self.repository.name}"

    def send(self, method: str, path: str, what: str, **kwargs: Any) -> httpx.Response:
        """One request (retried while it cannot connect or the forge is unavailable); its response,
        whatever its status. ``what`` names the step in error messages."""
        try:
            for attempt in Retrying(retry=retry_if_exception_type(_Unanswered),
                                    stop=stop_after_attempt(ATTEMPTS),
                                    wait=wait_exponential(multiplier=0.5, max=4), reraise=True):
                with attempt:
                    return self._once(method, path, **kwargs)
        except _Unanswered as error:
            if error.response is not None:
                raise api_error(error.response.status_code, _json(error.response), what, self.api,
                                self.repository) from None
            raise ForgeTimeoutError(f"{what}: cannot reach the forge's API at {self.api} ({error})") from None
        except httpx.TimeoutException:
            raise ForgeTimeoutError(f"{what}: the forge's API at {self.api} did not answer within "
                                    f"{self.client.timeout.read:g} s (--forge-timeout)") from None
        except httpx.HTTPError as error:
            raise ForgeError(f"{what}: the request to {self.api} failed: {error}") from None
        raise AssertionError("unreachable: tenacity re-raises")

    def _once(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self.client.request(method, path, **kwargs)
        except httpx.ConnectError as error:
            raise _Unanswered(str(error) or type(error).__name__) from None
        if response.status_code in _RETRIED_STATUSES:
            raise _Unanswered(f"HTTP {response.status_code}", response)
        return response

    def expect(self, method: str, path: str, what: str, **kwargs: Any) -> Any:
        """``send``; the answer's JSON when the status is 2xx, else the translated error."""
        response = self.send(method, path, what, **kwargs)
        if not response.is_success:
            raise api_error(response.status_code, _json(response), what, self.api, self.repository)
        return _json(response)


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text


def _field(payload: Any, name: str, what: str) -> Any:
    if not isinstance(payload, dict) or payload.get(name) in (None, ""):
        raise ForgeError(f"{what}: the forge's answer has no {name!r}")
    return payload[name]


def open_pull_request(forge: ForgeAPI, branch: str, base: str | None, title: str, body: str) -> PullRequest:
    """Open a pull request of ``branch`` into ``base`` (None: the repository's default branch) with
    ``body`` (Markdown); when one is already open for ``branch``, comment ``body`` on it instead."""
    if base is None:
        what = f"reading {forge.repository.slug}"
        base = str(_field(forge.expect("GET", forge.prefix, what), "default_branch", what))
    what = f"opening the pull request of {branch}"
    response = forge.send("POST", f"{forge.prefix}/pulls", what,
                          json={"title": title, "head": branch, "base": base, "body": body})
    if response.is_success:
        created = _json(response)
        return PullRequest(action="opened", number=int(_field(created, "number", what)),
                           url=str(_field(created, "html_url", what)))
    if not is_existing_pull_request(response.status_code, _json(response)):
        raise api_error(response.status_code, _json(response), what, forge.api, forge.repository)
    existing = _open_pull_request_of(forge, branch)
    what = f"commenting on pull request #{existing['number']}"
    comment = forge.expect("POST", f"{forge.prefix}/issues/{existing['number']}/comments", what,
                           json={"body": body})
    comment_url = comment.get("html_url") if isinstance(comment, dict) else None
    return PullRequest(action="commented", number=int(existing["number"]), url=str(existing.get("html_url")),
                       comment_url=str(comment_url) if comment_url else None)


def _open_pull_request_of(forge: ForgeAPI, branch: str) -> dict[str, Any]:
    """The open pull request whose head is ``branch`` (GitHub filters by ``head``; Gitea lists all)."""
    what = f"finding the open pull request of {branch}"
    found = forge.expect("GET", f"{forge.prefix}/pulls", what,
                         params={"head": f"{forge.repository.owner}:{branch}", "state": "open",
                                 "per_page": 100})
    for pull in found if isinstance(found, list) else ():
        head = pull.get("head") if isinstance(pull, dict) else None
        if isinstance(head, dict) and head.get("ref") == branch and pull.get("number") is not None:
            return dict(pull)
    raise ForgeError(f"{what}: the forge says one already exists, but lists no open pull request of it")

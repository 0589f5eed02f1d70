"""Publishing a verified fix, the pure part: the branch's name and commit message, the forge repository a
remote's URL names, the forge's REST endpoints, and what the forge's answers mean.

``tasks/publish/git_push.py`` builds the commit and pushes it; ``tasks/publish/forge_api.py`` speaks to the API with
these. GitHub's REST API (github.com, GitHub Enterprise at ``https://HOST/api/v3``) and Gitea's
(``https://HOST/api/v1``) share the endpoints used here: ``POST /repos/{owner}/{repo}/pulls``,
``GET /repos/{owner}/{repo}/pulls`` and ``POST /repos/{owner}/{repo}/issues/{number}/comments``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.options import GITHUB_API, ForgeKind
from equisa_core.errors import ForgeAuthError, ForgeError

__all__ = [
    "FIX_BRANCH_PREFIX",
    "TOKEN_VARIABLES",
    "ForgeRepository",
    "PublishedFix",
    "api_base",
    "api_error",
    "api_reason",
    "commit_message",
    "fix_branch",
    "is_existing_pull_request",
    "plausible_notice",
    "publish_refusal",
    "pull_request_title",
    "repository_of",
]

#: A fix branch is ``equisa/fix-<short sha of the commit the run repaired>``.
FIX_BRANCH_PREFIX = "equisa/fix-"
#: Where the forge's token is read from, first found first.
TOKEN_VARIABLES = ("EQUISA_FORGE_TOKEN", "GITHUB_TOKEN")


class ForgeRepository(BaseModel):
    """A repository on a forge, as its remote's URL names it (``host`` is empty for a local path)."""

    model_config = ConfigDict(frozen=True)

    host: str = ""
    owner: str
    name: str

    @property
    def slug(self) -> str:
        """``owner/name``."""
        return f"{self.owner}/{self.name}"


class PublishedFix(BaseModel):
    """What ``--push`` and ``--open-pr`` did with an accepted patch (recorded in the repair report)."""

    model_config = ConfigDict(frozen=True)

    branch: str = Field(description="The pushed branch, equisa/fix-<short sha>.")
    commit: str = Field(description="The commit holding the patch (its parent is base_commit).")
    base_commit: str = Field(description="The commit the run repaired.")
    remote: str = Field(description="The git remote (or URL) the branch was pushed to.")
    pull_request: Literal["opened", "commented"] | None = Field(
        None, description="opened: a new pull request; commented: one was already open for the branch.")
    pull_request_url: str | None = Field(None, description="The pull request's page.")
    pull_request_number: int | None = None
    comment_url: str | None = Field(None, description="The comment's page, when one was posted.")


def fix_branch(short_sha: str) -> str:
    """The fix branch of the commit whose short sha is ``short_sha``: ``equisa/fix-<short sha>``."""
    return FIX_BRANCH_PREFIX + short_sha


def commit_message(target: str | None, plausible: bool = False) -> str:
    """The fix commit's message: a subject naming the patched function, then where it comes from
    (``plausible``: a plausible-only patch, published with ``--allow-plausible``, says it is not verified)."""
    if plausible:
        subject = f"Plausible fix of {target}" if target else "Plausible fix of the failing tests"
        return (f"{subject} (plausible only)\n\nPLAUSIBLE ONLY: the failing tests pass and no passing test "
                "fails, but the patch failed `equisa repair`'s anti-overfitting checks (or was not fully "
                "validated); review it before merging. Published with --allow-plausible.\n")
    subject = f"Fix {target}" if target else "Fix the failing tests"
    return (f"{subject}\n\nThe patch `equisa repair` verified: the failing tests pass, no passing test "
            "fails, and the anti-overfitting checks pass.\n")


def pull_request_title(target: str | None, plausible: bool = False) -> str:
    """The pull request's title (``plausible``: it says plausible only)."""
    if plausible:
        return (f"EQUISA: plausible fix of {target} (plausible only, not verified)" if target
                else "EQUISA: plausible fix of the failing tests (plausible only, not verified)")
    return f"EQUISA: fix {target}" if target else "EQUISA: fix the failing tests"


def publish_refusal(status: str, has_diff: bool, allow_plausible: bool) -> str | None:
    """Why a repair's outcome is not published (``--push``, ``--open-pr``), or None when it is: only a
    ``fixed`` patch is, and a ``plausible_only`` one with ``allow_plausible`` (``--allow-plausible``)."""
    if not has_diff:
        return f"nothing pushed: no patch was accepted ({status})"
    if status == "fixed" or (status == "plausible_only" and allow_plausible):
        return None
    if status == "plausible_only":
        return ("nothing pushed: the patch is plausible only (it passes the suite but failed the "
                "anti-overfitting checks); --allow-plausible publishes it, marked as plausible only")
    return f"nothing pushed: no patch was accepted ({status})"


def plausible_notice(checks: Mapping[str, str], details: Sequence[str]) -> str:
    """The Markdown that opens a plausible-only pull request's body: that it is plausible only, and
    why: the reported patch's checks that did not pass and its evaluation's detail."""
    failed = [f"- **{name}**: {result}" for name, result in checks.items() if result != "passed"]
    why = [f"- {detail}" for detail in details if detail]
    lines = ["> **Plausible only — not a verified fix.** The failing tests pass and no passing test fails, "
             "but the patch did not pass every check of `equisa repair`; it was published because "
             "`--allow-plausible` was given. Review it as a suggestion, not a fix.", ""]
    if failed:
        lines += ["Checks it did not pass:", "", *failed, ""]
    if why:
        lines += ["Why:", "", *why, ""]
    return "\n".join(lines) + "\n"


_SCP_LIKE = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>[^/].*)$")


def repository_of(remote_url: str) -> ForgeRepository:
    """Owner and name from a remote's URL: ``https://HOST/OWNER/NAME(.git)``, ``git@HOST:OWNER/NAME.git``,
    ``ssh://git@HOST[:PORT]/OWNER/NAME.git``, or a local path or ``file://`` URL ending ``OWNER/NAME(.git)``
    (no host). Raises ``ForgeError`` when the URL names no owner and name."""
    url = remote_url.strip()
    host, path = "", url
    if "://" in url:
        rest = url.split("://", 1)[1]
        netloc, _, path = rest.partition("/")
        host = "" if url.startswith("file://") else netloc.rsplit("@", 1)[-1].split(":", 1)[0]
    elif (scp := _SCP_LIKE.match(url)) and not url.startswith(("/", ".")):
        host, path = scp["host"], scp["path"]
    parts = [part for part in path.split("/") if part]
    if len(parts) < 2:
        raise ForgeError(f"cannot tell the forge's owner and repository from the remote URL {url!r} "
                         "(expected .../OWNER/REPOSITORY)")
    return ForgeRepository(host=host, owner=parts[-2], name=parts[-1].removesuffix(".git"))


def api_base(kind: ForgeKind, given: str | None, repository: ForgeRepository,
             env: Mapping[str, str] | None = None) -> str:
    """The forge's REST API base, without a trailing slash: ``given`` (``--forge-api``); else for github
    ``GITHUB_API_URL`` (set by GitHub Actions, Enterprise included), else ``GITHUB_API`` for github.com
    or a local remote and ``https://HOST/api/v3`` for another host; for gitea ``https://HOST/api/v1``."""
    if given:
        return given.rstrip("/")
    host = repository.host
    if kind == "github":
        configured = (env or {}).get("GITHUB_API_URL")
        if configured:
            return configured.rstrip("/")
        return GITHUB_API if host in ("", "github.com", "www.github.com") else f"https://{host}/api/v3"
    if not host:
        raise ForgeError("a gitea remote with no host (a local path): pass --forge-api https://HOST/api/v1")
    return f"https://{host}/api/v1"


def is_existing_pull_request(status: int, payload: Any) -> bool:
    """Whether a refused ``POST .../pulls`` says a pull request for the branch is already open: GitHub's
    422 "A pull request already exists for OWNER:BRANCH.", Gitea's 409."""
    if status == 409:
        return True
    return status == 422 and "already exists" in api_reason(payload).lower()


def api_reason(payload: Any) -> str:
    """The forge's reason in an error answer: its ``message`` and the ``errors``' messages."""
    if not isinstance(payload, dict):
        return str(payload or "").strip()[:300]
    parts = [str(payload.get("message") or "").strip()]
    for item in payload.get("errors") or ():
        if isinstance(item, dict):
            parts.append(str(item.get("message") or item.get("code") or "").strip())
        else:
            parts.append(str(item).strip())
    return "; ".join(part for part in parts if part)


def api_error(status: int, payload: Any, what: str, api: str, repository: ForgeRepository) -> ForgeError:
    """The error of a refused request (``what``: what it tried, e.g. "opening the pull request"): 401
    and 403 refuse the token, 404 names no repository this token sees, others give the forge's reason."""
    reason = api_reason(payload)
    said = f": {reason}" if reason else ""
    if status in (401, 403):
        return ForgeAuthError(f"{what}: the forge at {api} refused the token (HTTP {status}{said}); set "
                              f"{' or '.join(TOKEN_VARIABLES)} to a token that may write pull requests of "
                              f"{repository.slug}")
    if status == 404:
        return ForgeError(f"{what}: HTTP 404 from {api}: no repository {repository.slug} there, or the "
                          "token cannot see it (is --forge-api the right API base?)")
    return ForgeError(f"{what}: the forge at {api} answered HTTP {status}{said}")

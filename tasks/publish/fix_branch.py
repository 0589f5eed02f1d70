"""``--push`` and ``--open-pr`` after a repair: the accepted patch pushed as a fix branch, then a pull
request opened for it (or a comment on the open one). ``equisa repair`` and the ``repair-repository``
flow (the deployment ``equisa trigger`` starts) both call ``publish_fix``.

Only a ``fixed`` report is published, and a ``plausible_only`` one with ``--allow-plausible``
(``publish_refusal``: the callers put the refusal in the report's ``problems`` and on the console; its
commit, title and body then say plainly it is plausible only, and why). The pull request's body is the
caller's (``open_fix_pull_request`` takes it as text).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from equisa_core.common.options import ForgeOptions
from equisa_core.errors import PushError
from equisa_core.operations.batch import is_remote
from equisa_core.operations.forge import (
    PublishedFix,
    api_base,
    commit_message,
    plausible_notice,
    publish_refusal,
    pull_request_title,
    repository_of,
)
from equisa_core.repair.report import RepairReport
from tasks.publish.forge_api import ForgeAPI, PullRequest, forge_token, open_pull_request
from tasks.publish.git_push import cloned, push_fix_branch, remote_url

__all__ = ["check_publishable", "open_fix_pull_request", "publish_fix", "publish_fix_step", "refusal_of"]


def check_publishable(folder: Path, options: ForgeOptions) -> None:
    """Before a run that is to publish ``folder``'s fix: it is in a git work tree with the remote, and
    with ``open_pr`` a token is set (else the errors ``publish_fix`` would raise at the end)."""
    remote_url(folder, options.remote)
    if options.open_pr:
        forge_token()


def publish_fix(source: str, ref: str | None, report: RepairReport, options: ForgeOptions, body: str,
                say: Callable[[str], None] = print) -> PublishedFix:
    """Push ``report``'s patch (``fixed``, or ``plausible_only`` with ``options.allow_plausible``) as
    ``equisa/fix-<short sha>`` and, with ``options.open_pr``, open the pull request with ``body``;
    ``say`` hears each step done.

    ``source`` is what was repaired: a folder of a git work tree (at ``ref``, None: as it is, on HEAD,
    pushed to ``options.remote``) or a git URL (at ``ref``, None: its HEAD; pushed to that URL)."""
    refused = refusal_of(report, options)
    if refused is not None:  # the callers ask first; this is a last guard, a clear error (exit 60)
        raise PushError(refused)
    plausible = report.status != "fixed"
    if plausible:
        body = plausible_notice(report.validation, [e.detail for e in report.evaluations
                                                    if e.candidate == report.candidate]) + "\n" + body
    token = forge_token() if options.open_pr else None  # no token: stop before pushing anything
    message = commit_message(report.target, plausible)
    if is_remote(source):
        with cloned(source, ref) as (clone, commit):
            pushed = push_fix_branch(clone, report.diff, "origin", message, base=commit)
        url, remote, head_branch = source, _without_credentials(source), None
    else:
        folder = Path(source)
        pushed = push_fix_branch(folder, report.diff, options.remote, message, base=ref)
        url, remote = remote_url(folder, options.remote), options.remote
        head_branch = _current_branch(folder) if ref is None else None
    say(f"Pushed {pushed.branch} (commit {pushed.commit[:12]} on {pushed.base_commit[:12]}) to {remote}")
    published = PublishedFix(branch=pushed.branch, commit=pushed.commit, base_commit=pushed.base_commit,
                             remote=remote)
    if token is None:
        return published
    pull = open_fix_pull_request(url, pushed.branch, options.pr_base or head_branch, options, token,
                                 pull_request_title(report.target, plausible), body)
    say(f"Pull request {pull.action}: {pull.url}" + (f" (comment {pull.comment_url})" if pull.comment_url
                                                      else ""))
    return published.model_copy(update={"pull_request": pull.action, "pull_request_url": pull.url,
                                        "pull_request_number": pull.number, "comment_url": pull.comment_url})


def refusal_of(report: RepairReport, options: ForgeOptions) -> str | None:
    """Why ``report`` is not published with ``options`` (``publish_refusal``), or None when it is."""
    return publish_refusal(report.status, bool(report.diff), options.allow_plausible)


@task(name="publish-fix", cache_policy=NO_CACHE)
def publish_fix_step(source: str, ref: str | None, report: RepairReport, options: ForgeOptions,
                     body: str) -> PublishedFix:
    """``publish_fix`` as a task of the ``repair-repository`` flow (its steps go to the flow's log)."""
    return publish_fix(source, ref, report, options, body)


def open_fix_pull_request(remote: str, branch: str, base: str | None, options: ForgeOptions, token: str,
                          title: str, body: str) -> PullRequest:
    """The pull request of ``branch`` into ``base`` (None: the default branch) on the forge that the
    remote's URL ``remote`` names, with ``body`` as its Markdown (or its comment's, when one is open)."""
    repository = repository_of(remote)
    api = api_base(options.forge, options.forge_api, repository, os.environ)
    with ForgeAPI(api, repository, token, options.forge, options.forge_timeout_s) as forge:
        return open_pull_request(forge, branch, base, title, body)


def _current_branch(folder: Path) -> str | None:
    """The branch checked out in ``folder``'s work tree (None when HEAD is detached)."""
    done = subprocess.run(["git", "symbolic-ref", "--quiet", "--short", "HEAD"], cwd=folder,
                          capture_output=True, text=True, timeout=60)
    return done.stdout.strip() or None if done.returncode == 0 else None


def _without_credentials(url: str) -> str:
    """``url`` without a user or token before its host."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest.split("/", 1)[0]:
        return url
    return f"{scheme}://{rest.split('@', 1)[1]}"

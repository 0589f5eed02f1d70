"""``equisa repair --push --open-pr`` end to end: the real console script repairs a git copy of the
invoicing example, pushes the fix branch to a bare repository made here (real git) and opens the pull
request on a forge API scripted on 127.0.0.1; a refused token, a missing token or remote, and an
outcome that is not fixed; and the ``repair-repository`` flow's publishing (what ``equisa trigger``
asks of the deployment)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

from equisa_core.common.options import ForgeOptions
from equisa_core.operations.batch import RepositoryEntry, RepositoryResult
from equisa_core.repair.report import RepairReport
from flows.repository import _published
from tests.conftest import small_repo
from tests.flows.test_localize import INVOICING
from tests.flows.test_repair import EQUISA
from tests.forge_server import Answer
from tests.integration.test_probe import tree_digest
from tests.tasks.test_git_push import DIFF, git, project_with_origin

PULLS = "/api/v3/repos/acme/invoicing/pulls"
PR_URL = "https://github.com/acme/invoicing/pull/12"


def invoicing_with_origin(tmp_path: Path) -> tuple[Path, Path]:
    """A git copy of the invoicing example on branch main whose origin is ``.../acme/invoicing.git``."""
    bare = tmp_path / "remotes" / "acme" / "invoicing.git"
    bare.mkdir(parents=True)
    git(bare, "init", "-q", "--bare")
    project = tmp_path / "invoicing"
    shutil.copytree(INVOICING, project)
    git(project, "init", "-q", "-b", "main")
    git(project, "add", ".")
    git(project, "commit", "-qm", "start")
    git(project, "remote", "add", "origin", str(bare))
    return project, bare


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EQUISA, "repair", *args], capture_output=True, text=True, env=env, timeout=900)


def test_a_fixed_run_pushes_its_branch_and_opens_the_pull_request(tmp_path, cli_env, forge_api):
    project, bare = invoicing_with_origin(tmp_path)
    forge_api.on("POST", PULLS, Answer(201, {"number": 12, "html_url": PR_URL}))
    before, head = tree_digest(project), git(project, "rev-parse", "HEAD")
    out = tmp_path / "repair.json"
    env = {**cli_env, "GITHUB_TOKEN": "ghs_test"}
    done = run(env, str(project), "--no-llm", "--open-pr", "--forge-api", forge_api.url, "--json", str(out))
    assert done.returncode == 0, done.stderr
    report = RepairReport.model_validate_json(out.read_text())
    short = git(project, "rev-parse", "--short", "HEAD")
    published = report.published
    assert published is not None and published.branch == f"equisa/fix-{short}"
    assert (published.pull_request, published.pull_request_url, published.pull_request_number) == (
        "opened", PR_URL, 12)
    assert f"Pull request: {PR_URL}" in done.stderr and f"Pushed {published.branch}" in done.stderr
    # One commit on top of HEAD, holding the accepted patch; the user's tree and branch untouched.
    assert git(bare, "rev-list", f"{head}..{published.branch}").split() == [published.commit]
    pushed_diff = git(bare, "diff", head, published.branch)
    assert "+        return subtotal.amount >= self.minimum.amount" in pushed_diff
    assert git(bare, "diff", "--name-only", head, published.branch).split() == re.findall(
        r"^\+\+\+ b/(.+)$", report.diff, re.M)
    assert tree_digest(project) == before and git(project, "rev-parse", "HEAD") == head
    assert git(project, "symbolic-ref", "--short", "HEAD") == "main"
    assert git(project, "status", "--porcelain") == ""
    (request,) = forge_api.requests("POST", PULLS)
    assert request.headers["Authorization"] == "Bearer ghs_test"
    assert request.body["head"] == published.branch and request.body["base"] == "main"
    assert "invoicing.discounts.ThresholdDiscount.applies" in request.body["body"]
    assert "+        return subtotal.amount >= self.minimum.amount" in request.body["body"]

    # The same run with a refused token: the branch is pushed again, the pull request is exit 62, and the
    # JSON still holds the repair's report.
    forge_api.on("POST", PULLS, Answer(401, {"message": "Bad credentials"}))
    done = run(env, str(project), "--no-llm", "--open-pr", "--forge-api", forge_api.url, "--json", str(out))
    assert done.returncode == 62, done.stderr
    assert "refused the token (HTTP 401: Bad credentials)" in done.stderr
    assert "Pushed equisa/fix-" in done.stderr
    assert json.loads(out.read_text())["status"] == "fixed"


def test_missing_token_or_remote_stop_before_any_work(tmp_path, cli_env):
    project, bare = invoicing_with_origin(tmp_path)
    env = {k: v for k, v in cli_env.items() if k not in ("GITHUB_TOKEN", "EQUISA_FORGE_TOKEN")}
    done = run(env, str(project), "--no-llm", "--open-pr")
    assert done.returncode == 62 and "needs a token: set GITHUB_TOKEN or EQUISA_FORGE_TOKEN" in done.stderr
    assert "Repairing" not in done.stderr
    done = run(env, str(project), "--no-llm", "--push", "--remote", "upstream")
    assert done.returncode == 60 and "has no remote 'upstream'" in done.stderr
    assert git(bare, "for-each-ref") == ""


def test_an_outcome_that_is_not_fixed_pushes_nothing_and_says_so(tmp_path, cli_env):
    repo = small_repo(tmp_path / "hard")
    (repo / "stats.py").write_text(
        "def spread(values):\n    # bug: should be max(values) - min(values)\n"
        "    return values[-1] - values[0]\n")
    (repo / "tests" / "test_stats.py").write_text(
        "from stats import spread\n\n\n"
        "def test_spread_sorted():\n    assert spread([1, 2, 5]) == 4\n\n\n"
        "def test_spread_unsorted():\n    assert spread([5, 1, 3]) == 4\n")
    bare = tmp_path / "remotes" / "acme" / "hard.git"
    bare.mkdir(parents=True)
    git(bare, "init", "-q", "--bare")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "start")
    git(repo, "remote", "add", "origin", str(bare))
    done = run(cli_env, str(repo), "--no-llm", "--push")
    assert done.returncode == 22, done.stderr
    assert "Nothing pushed: no patch was accepted (not_fixed)." in done.stderr
    assert git(bare, "for-each-ref") == ""


def test_the_repository_flow_publishes_what_its_entry_asks(tmp_path, prefect_api_url, forge_api, monkeypatch):
    """The deployment ``equisa trigger --push --open-pr`` starts: a fixed repair of the entry's folder
    pushes the branch and comments on the open pull request; a failure to publish is the run's error."""
    project, bare = project_with_origin(tmp_path)
    monkeypatch.setenv("EQUISA_FORGE_TOKEN", "worker-token")
    pulls = "/api/v3/repos/acme/shop/pulls"
    forge_api.on("POST", pulls, Answer(422, {"message": "Validation Failed",
                                             "errors": [{"message": "A pull request already exists"}]}))
    forge_api.on("GET", pulls, Answer(200, [{"number": 3, "html_url": "https://h/pull/3",
                                             "head": {"ref": "equisa/fix-" + git(project, "rev-parse",
                                                                                 "--short", "HEAD")}}]))
    forge_api.on("POST", "/api/v3/repos/acme/shop/issues/3/comments",
                 Answer(201, {"html_url": "https://h/c/1"}))
    entry = RepositoryEntry(source=str(project), publish=ForgeOptions(open_pr=True, forge_api=forge_api.url))
    report = RepairReport(status="fixed", mode="deterministic", target="shop.calc.total", diff=DIFF)
    result = RepositoryResult(name="shop", source=str(project), status="fixed", target="shop.calc.total")
    report, result = _published(entry, report, result)
    assert report.published == result.published and result.status == "fixed"
    assert (result.published.pull_request, result.published.comment_url) == ("commented", "https://h/c/1")
    (comment,) = forge_api.requests("POST", "/api/v3/repos/acme/shop/issues/3/comments")
    assert "`shop.calc.total`" in comment.body["body"]
    assert git(bare, "rev-parse", f"refs/heads/{result.published.branch}") == result.published.commit

    forge_api.on("POST", pulls, Answer(404, {"message": "Not Found"}))
    report, result = _published(entry, report.model_copy(update={"published": None}),
                                result.model_copy(update={"published": None}))
    assert (result.status, result.exit_code) == ("error", 61) and "fixed, but not published" in result.error


def test_a_plausible_only_outcome_is_refused_unless_allow_plausible(tmp_path, prefect_api_url, forge_api,
                                                                     monkeypatch):
    """``--open-pr`` publishes only a fixed report: a plausible-only one is refused with a clear problem
    (no traceback, nothing pushed); ``--allow-plausible`` pushes it, its pull request saying plainly
    that it is plausible only and why (the checks it failed)."""
    from equisa_core.validation.candidates import PatchEvaluation, PatchStatus

    project, bare = project_with_origin(tmp_path)
    monkeypatch.setenv("EQUISA_FORGE_TOKEN", "worker-token")
    pulls = "/api/v3/repos/acme/shop/pulls"
    forge_api.on("POST", pulls, Answer(201, {"number": 5, "html_url": "https://h/pull/5"}))
    why = "returns the literal 42 of the failing test's expected value"
    report = RepairReport(
        status="plausible_only", mode="deterministic", target="shop.calc.total", diff=DIFF, candidate="c1",
        validation={"failing tests pass": "passed", "overfitting detectors": why},
        evaluations=(PatchEvaluation(candidate="c1", status=PatchStatus.OVERFITTING, detail=why),))
    result = RepositoryResult(name="shop", source=str(project), status="plausible_only", target="shop.calc.total")

    entry = RepositoryEntry(source=str(project), publish=ForgeOptions(open_pr=True, forge_api=forge_api.url))
    refused, refused_result = _published(entry, report, result)
    assert refused.published is None and refused_result.status == "plausible_only"
    assert any("plausible only" in p and "--allow-plausible" in p for p in refused.problems)
    assert git(bare, "for-each-ref", "refs/heads/equisa") == "" and forge_api.requests("POST", pulls) == []

    allowed = entry.model_copy(update={"publish": entry.publish.model_copy(update={"allow_plausible": True})})
    published, published_result = _published(allowed, report, result)
    assert published.published is not None and published_result.published == published.published
    assert published.published.pull_request_url == "https://h/pull/5"
    (opened,) = forge_api.requests("POST", pulls)
    assert "plausible only" in opened.body["title"].lower()
    assert "Plausible only" in opened.body["body"] and why in opened.body["body"]
    commit = published.published.commit
    assert "plausible only" in git(bare, "log", "-1", "--format=%B", commit).lower()


def test_the_command_line_refuses_a_plausible_patch_without_a_traceback(tmp_path, forge_api, monkeypatch):
    """``equisa repair --push`` on a plausible-only outcome: a line on the console, a problem in the
    report, no push; the option is wired through the command line and the trigger's parameters."""
    import argparse
    import io

    from rich.console import Console

    from cli.main import _publish, build_parser
    from equisa_core.operations.ci_event import ci_failure_event

    project, bare = project_with_origin(tmp_path)
    args = build_parser().parse_args(["repair", str(project), "--push"])
    assert args.allow_plausible is False
    assert build_parser().parse_args(["repair", str(project), "--push", "--allow-plausible"]).allow_plausible
    trigger = build_parser().parse_args(["trigger", "--repository", str(project), "--allow-plausible"])
    assert trigger.allow_plausible is True
    event = ci_failure_event(str(project), None, [], None, None, 2.0, None, None,
                             publish=ForgeOptions(push=True, allow_plausible=True))
    assert event["payload"]["publish"]["allow_plausible"] is True
    report = RepairReport(status="plausible_only", mode="deterministic", target="shop.calc.total", diff=DIFF)
    out = io.StringIO()
    shown = _publish(argparse.Namespace(path=project, json=None), report, ForgeOptions(push=True),
                     Console(file=out, width=200))
    assert "Nothing pushed: the patch is plausible only" in out.getvalue()
    assert shown.published is None and shown.problems and "--allow-plausible" in shown.problems[-1]
    assert git(bare, "for-each-ref", "refs/heads/equisa") == ""

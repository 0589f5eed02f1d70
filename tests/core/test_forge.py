"""Publishing a fix, the pure part: the forge repository a remote names, the API base, the branch,
what a refusal means, the pull request's body; and an event's ``publish`` reaching the run's entry."""

from __future__ import annotations

import pytest

from equisa_core.common.options import GITHUB_API, ForgeOptions
from equisa_core.errors import ForgeAuthError, ForgeError
from equisa_core.operations.batch import RepositoryEntry
from equisa_core.operations.ci_event import ci_failure_event
from equisa_core.operations.forge import (
    ForgeRepository,
    api_base,
    api_error,
    fix_branch,
    is_existing_pull_request,
    repository_of,
)
from equisa_core.repair.report import RepairReport
from equisa_core.report.markdown import render_markdown


@pytest.mark.parametrize(("url", "expected"), [
    ("https://github.com/acme/shop.git", ("github.com", "acme", "shop")),
    ("https://x-access-token:ghs_secret@github.com/acme/shop", ("github.com", "acme", "shop")),
    ("git@github.com:acme/shop.git", ("github.com", "acme", "shop")),
    ("ssh://git@git.example.com:2222/acme/shop.git", ("git.example.com", "acme", "shop")),
    ("http://127.0.0.1:3000/acme/shop.git", ("127.0.0.1", "acme", "shop")),
    ("/srv/git/acme/shop.git", ("", "acme", "shop")),
    ("file:///srv/git/acme/shop.git", ("", "acme", "shop")),
])
def test_owner_and_repository_come_from_the_remote_url(url, expected):
    repository = repository_of(url)
    assert (repository.host, repository.owner, repository.name) == expected
    assert repository.slug == f"{expected[1]}/{expected[2]}"


def test_a_remote_url_without_owner_and_name_is_a_forge_error():
    with pytest.raises(ForgeError, match="OWNER/REPOSITORY"):
        repository_of("https://github.com/shop")


def test_api_base_per_forge_kind():
    github = ForgeRepository(host="github.com", owner="a", name="b")
    enterprise = ForgeRepository(host="ghe.example.com", owner="a", name="b")
    gitea = ForgeRepository(host="git.example.com", owner="a", name="b")
    assert api_base("github", None, github) == GITHUB_API
    assert api_base("github", None, enterprise) == "https://ghe.example.com/api/v3"
    assert api_base("github", None, enterprise, {"GITHUB_API_URL": "https://ghe.example.com/api/v3/"}) == (
        "https://ghe.example.com/api/v3")
    assert api_base("gitea", None, gitea) == "https://git.example.com/api/v1"
    assert api_base("github", "http://127.0.0.1:8080/api/", github) == "http://127.0.0.1:8080/api"
    with pytest.raises(ForgeError, match="--forge-api"):
        api_base("gitea", None, ForgeRepository(owner="a", name="b"))


def test_branch_and_what_refusals_mean():
    assert fix_branch("1a2b3c4") == "equisa/fix-1a2b3c4"
    exists = {"message": "Validation Failed", "errors": [
        {"resource": "PullRequest", "code": "custom", "message": "A pull request already exists for a:b."}]}
    assert is_existing_pull_request(422, exists) and is_existing_pull_request(409, {"message": "x"})
    assert not is_existing_pull_request(422, {"message": "Validation Failed",
                                              "errors": [{"code": "invalid", "field": "base"}]})
    repository = ForgeRepository(owner="acme", name="shop")
    refused = api_error(401, {"message": "Bad credentials"}, "opening", "https://api", repository)
    assert isinstance(refused, ForgeAuthError) and refused.exit_code == 62
    assert "Bad credentials" in refused.message and "GITHUB_TOKEN" in refused.message
    missing = api_error(404, {"message": "Not Found"}, "opening", "https://api", repository)
    assert type(missing) is ForgeError and missing.exit_code == 61
    assert "no repository acme/shop" in missing.message


def test_the_pull_request_body_has_the_outcome_the_function_the_checks_and_the_diff():
    diff = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    report = RepairReport(status="fixed", mode="deterministic", target="m.f", diff=diff,
                          validation={"failing tests pass": "passed", "no regressions": "passed"})
    body = render_markdown(report)
    assert "EQUISA repair: fixed" in body and "`m.f`" in body
    assert "| no regressions | passed |" in body and f"```diff\n{diff}```" in body


def test_an_events_publish_options_reach_the_runs_entry():
    publish = ForgeOptions(push=True, open_pr=True, forge="gitea", forge_api="https://git.example.com/api/v1")
    payload = ci_failure_event("https://git.example.com/a/b.git", "abc", [], None, publish=publish)["payload"]
    entry = RepositoryEntry(source=payload["repository"], ref=payload["ref"], publish=payload["publish"])
    assert entry.publish == publish and entry.publish.publishing
    assert RepositoryEntry(source="x", publish=None).publish == ForgeOptions()
    assert not ForgeOptions().publishing and ForgeOptions(open_pr=True).publishing

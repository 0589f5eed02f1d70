"""``--open-pr``'s REST calls against a forge API on 127.0.0.1 scripted by each test: a pull request
opened (201), a refused token (401), an existing pull request commented on (422, Gitea's 409), other
refusals (404, 422), a forge too slow to answer, a missing token, and a retried 503."""

from __future__ import annotations

import time

import pytest

from equisa_core.common.options import ForgeOptions
from equisa_core.errors import ForgeAuthError, ForgeError, ForgeTimeoutError
from tasks.publish.fix_branch import open_fix_pull_request
from tasks.publish.forge_api import forge_token
from tests.forge_server import Answer

REMOTE = "https://github.com/acme/shop.git"
PULLS = "/api/v3/repos/acme/shop/pulls"
BODY = "**EQUISA: fixed**\n\n```diff\n-a\n+b\n```\n"
EXISTS = {"message": "Validation Failed", "errors": [
    {"resource": "PullRequest", "code": "custom",
     "message": "A pull request already exists for acme:equisa/fix-abc1234."}]}


def _open(api, base: str | None = "main", **options):
    return open_fix_pull_request(REMOTE, "equisa/fix-abc1234", base,
                                 ForgeOptions(forge_api=api.url, **options), "t0ken", "EQUISA: fix m.f", BODY)


def test_a_new_pull_request_is_opened_with_the_body(forge_api):
    forge_api.on("POST", PULLS, Answer(201, {"number": 7, "html_url": "https://github.com/acme/shop/pull/7"}))
    pull = _open(forge_api)
    assert (pull.action, pull.number, pull.url) == ("opened", 7, "https://github.com/acme/shop/pull/7")
    (request,) = forge_api.received
    assert request.headers["Authorization"] == "Bearer t0ken"
    assert request.body == {"title": "EQUISA: fix m.f", "head": "equisa/fix-abc1234", "base": "main",
                            "body": BODY}


def test_without_a_base_the_repositorys_default_branch_is_the_base(forge_api):
    forge_api.on("GET", "/api/v3/repos/acme/shop", Answer(200, {"default_branch": "trunk"}))
    forge_api.on("POST", PULLS, Answer(201, {"number": 8, "html_url": "https://h/pull/8"}))
    assert _open(forge_api, base=None).number == 8
    assert forge_api.requests("POST", PULLS)[0].body["base"] == "trunk"


def test_a_refused_token_is_exit_62_with_what_to_set(forge_api):
    forge_api.on("POST", PULLS, Answer(401, {"message": "Bad credentials"}))
    with pytest.raises(ForgeAuthError) as refused:
        _open(forge_api)
    assert refused.value.exit_code == 62
    assert "refused the token (HTTP 401: Bad credentials)" in refused.value.message
    assert "GITHUB_TOKEN" in refused.value.message and len(forge_api.received) == 1


def test_an_existing_pull_request_gets_a_comment(forge_api):
    forge_api.on("POST", PULLS, Answer(422, EXISTS))
    forge_api.on("GET", PULLS, Answer(200, [
        {"number": 3, "html_url": "https://h/pull/3", "head": {"ref": "someone-else"}},
        {"number": 5, "html_url": "https://h/pull/5", "head": {"ref": "equisa/fix-abc1234"}}]))
    forge_api.on("POST", "/api/v3/repos/acme/shop/issues/5/comments",
                 Answer(201, {"id": 1, "html_url": "https://h/pull/5#issuecomment-1"}))
    pull = _open(forge_api)
    assert (pull.action, pull.number, pull.url, pull.comment_url) == (
        "commented", 5, "https://h/pull/5", "https://h/pull/5#issuecomment-1")
    (listed,) = forge_api.requests("GET", PULLS)
    assert "head=acme%3Aequisa%2Ffix-abc1234" in listed.path and "state=open" in listed.path
    assert forge_api.requests("POST", "/api/v3/repos/acme/shop/issues/5/comments")[0].body == {"body": BODY}


def test_gitea_says_409_for_an_existing_pull_request_and_takes_a_token_header(forge_api):
    forge_api.on("POST", PULLS, Answer(409, {"message": "pull request already exists for these targets"}))
    forge_api.on("GET", PULLS, Answer(200, [{"number": 2, "html_url": "https://g/pulls/2",
                                             "head": {"ref": "equisa/fix-abc1234"}}]))
    forge_api.on("POST", "/api/v3/repos/acme/shop/issues/2/comments", Answer(201, {"id": 9}))
    pull = _open(forge_api, forge="gitea")
    assert (pull.action, pull.number, pull.comment_url) == ("commented", 2, None)
    assert forge_api.received[0].headers["Authorization"] == "token t0ken"


@pytest.mark.parametrize(("answer", "said"), [
    (Answer(404, {"message": "Not Found"}), "HTTP 404 from http://127.0.0.1"),
    (Answer(422, {"message": "Validation Failed", "errors": [{"message": "base: invalid branch"}]}),
     "answered HTTP 422: Validation Failed; base: invalid branch"),
])
def test_other_refusals_are_exit_61_with_the_forges_reason(forge_api, answer, said):
    forge_api.on("POST", PULLS, answer)
    with pytest.raises(ForgeError) as refused:
        _open(forge_api)
    assert type(refused.value) is ForgeError and refused.value.exit_code == 61
    assert said in refused.value.message
    assert "opening the pull request of equisa/fix-abc1234" in refused.value.message
    assert not forge_api.requests("GET", PULLS), "no comment unless a pull request already exists"


def test_a_forge_that_does_not_answer_in_time_is_exit_63_without_a_retry(forge_api):
    forge_api.on("POST", PULLS, Answer(201, {"number": 1, "html_url": "u"}, delay=3))
    started = time.monotonic()
    with pytest.raises(ForgeTimeoutError) as late:
        _open(forge_api, forge_timeout_s=0.5)
    assert time.monotonic() - started < 2.5
    assert late.value.exit_code == 63
    assert "did not answer within 0.5 s (--forge-timeout)" in late.value.message
    assert len(forge_api.received) == 1, "a request that may have opened a pull request is not sent again"


def test_an_unavailable_forge_is_asked_again(forge_api):
    forge_api.on("POST", PULLS, Answer(503, {"message": "busy"}), Answer(201, {"number": 4, "html_url": "u"}))
    assert _open(forge_api).number == 4 and len(forge_api.received) == 2


def test_the_token_comes_from_the_environment_and_its_absence_is_exit_62():
    assert forge_token({"GITHUB_TOKEN": "gh", "EQUISA_FORGE_TOKEN": "own"}) == "own"
    assert forge_token({"GITHUB_TOKEN": "gh"}) == "gh"
    with pytest.raises(ForgeAuthError) as missing:
        forge_token({"GITHUB_TOKEN": " "})
    assert missing.value.exit_code == 62 and "set GITHUB_TOKEN or EQUISA_FORGE_TOKEN" in missing.value.message

"""The CI-failure event and the CI job's own description of itself."""

from __future__ import annotations

from datetime import UTC, datetime

from equisa_core.common.options import ForgeOptions
from equisa_core.operations.ci_event import CI_FAILED_EVENT, ci_context, ci_failure_event, resource_id


def test_event_carries_every_payload_key_the_trigger_reads():
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    event = ci_failure_event("https://github.com/acme/shop.git", "abc123", ["tests/test_a.py::test_x"],
                             "https://github.com/acme/shop/actions/runs/7", None, occurred=when,
                             event_id="e1")
    assert event["event"] == CI_FAILED_EVENT and event["id"] == "e1"
    assert event["occurred"] == "2026-01-02T03:04:05+00:00"
    assert event["resource"]["prefect.resource.id"] == "equisa.repository.github.com/acme/shop"
    assert event["payload"] == {"repository": "https://github.com/acme/shop.git", "ref": "abc123",
                                "failing_tests": ["tests/test_a.py::test_x"],
                                "ci_run_url": "https://github.com/acme/shop/actions/runs/7", "llm": None,
                                "max_cost_usd": None, "price_input": None, "price_output": None,
                                "publish": ForgeOptions().model_dump()}
    assert event["payload"]["publish"]["push"] is False, "nothing is pushed unless asked"


def test_resource_ids_are_safe_for_any_source():
    assert resource_id("/srv/my repo/") == "equisa.repository.srv/my-repo"
    assert resource_id("git@host:a/b.git") == "equisa.repository.git-host-a/b"


def test_github_actions_and_gitlab_ci_context():
    github = ci_context({"GITHUB_ACTIONS": "true", "GITHUB_SERVER_URL": "https://github.com",
                         "GITHUB_REPOSITORY": "acme/shop", "GITHUB_SHA": "abc", "GITHUB_RUN_ID": "42"})
    assert github == {"repository": "https://github.com/acme/shop.git", "ref": "abc",
                      "ci_run_url": "https://github.com/acme/shop/actions/runs/42"}
    gitlab = ci_context({"GITLAB_CI": "true", "CI_PROJECT_URL": "https://gitlab.example.com/acme/shop",
                         "CI_COMMIT_SHA": "def", "CI_JOB_URL": "https://gitlab.example.com/acme/shop/-/jobs/9"})
    assert gitlab == {"repository": "https://gitlab.example.com/acme/shop.git", "ref": "def",
                      "ci_run_url": "https://gitlab.example.com/acme/shop/-/jobs/9"}
    assert ci_context({}) == {"repository": None, "ref": None, "ci_run_url": None}

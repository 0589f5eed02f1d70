"""``equisa trigger`` against a real HTTP server on 127.0.0.1 that checks credentials like Prefect's.

The end-to-end path (a Prefect server's automation turning the event into a flow run) is in
``tests/integration/test_deployments.py``; here: the request, both kinds of credentials, and the
exit code 53 for every way the event can fail to arrive.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from equisa_core.common.options import ForgeOptions
from equisa_core.operations.batch import RepositoryEntry
from equisa_core.operations.ci_event import CI_FAILED_EVENT

EQUISA = shutil.which("equisa") or str(Path(sys.executable).with_name("equisa"))
AUTH_STRING = "admin:s3cret"


class _EventsAPI(BaseHTTPRequestHandler):
    """``POST /api/events``: 204 with the right Authorization header, else 401 (as Prefect's server)."""

    received: list[tuple[str, list]] = []
    expected = ""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path != "/api/events":
            self.send_response(404)
        elif self.headers.get("Authorization") != self.expected:
            self.send_response(401)
        else:
            type(self).received.append((self.headers["Authorization"], json.loads(body)))
            self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def events_api():
    _EventsAPI.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EventsAPI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/api", _EventsAPI
    finally:
        server.shutdown()
        server.server_close()


def _env(api_url: str | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PREFECT_", "GITHUB_", "GITLAB_", "CI_"))}
    if api_url:
        env["PREFECT_API_URL"] = api_url
    env.update(extra)
    return env


def _trigger(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([EQUISA, "trigger", *args], env=env, capture_output=True, text=True, timeout=120)


def test_posts_the_event_with_the_server_auth_string(events_api, tmp_path):
    api, handler = events_api
    handler.expected = "Basic " + base64.b64encode(AUTH_STRING.encode()).decode()
    out = tmp_path / "event.json"
    done = _trigger(_env(api, PREFECT_API_AUTH_STRING=AUTH_STRING), "--repository",
                    "https://git.example.com/acme/shop.git", "--ref", "abc123", "--failing-tests",
                    "tests/test_a.py::test_x", "tests/test_b.py::test_y", "--ci-run-url",
                    "https://ci.example.com/runs/7", "--no-llm", "--max-cost", "0.5", "--price-input", "0.1",
                    "--price-output", "0.4", "--json", str(out))
    assert done.returncode == 0, done.stderr
    ((_, events),) = handler.received
    (event,) = events
    assert event["event"] == CI_FAILED_EVENT and event == json.loads(out.read_text())
    assert event["payload"] == {"repository": "https://git.example.com/acme/shop.git", "ref": "abc123",
                                "failing_tests": ["tests/test_a.py::test_x", "tests/test_b.py::test_y"],
                                "ci_run_url": "https://ci.example.com/runs/7", "llm": False,
                                "max_cost_usd": 0.5, "price_input": 0.1, "price_output": 0.4,
                                "publish": ForgeOptions().model_dump()}
    assert "Posted equisa.ci.failed" in done.stderr and "pushed" not in done.stderr
    # the payload is the repair's entry, as the repair-on-ci-failure trigger's template renders it
    entry = RepositoryEntry(**{k: event["payload"][k] for k in ("ref", "failing_tests", "ci_run_url", "llm",
                                                                "price_input", "price_output")},
                            source=event["payload"]["repository"],
                            budgets={"max_cost_usd": event["payload"]["max_cost_usd"]})
    assert (entry.budgets.max_cost_usd, entry.price_input, entry.price_output) == (0.5, 0.1, 0.4)


def test_push_and_open_pr_ask_the_repair_run_to_publish_its_fix(events_api):
    api, handler = events_api
    handler.expected = "Bearer pnu_testkey"
    done = _trigger(_env(api, PREFECT_API_KEY="pnu_testkey"), "--repository", "https://git.example.com/a/b.git",
                    "--push", "--open-pr", "--forge", "gitea", "--pr-base", "develop")
    assert done.returncode == 0, done.stderr
    publish = handler.received[0][1][0]["payload"]["publish"]
    assert publish == ForgeOptions(push=True, open_pr=True, forge="gitea", pr_base="develop").model_dump()
    assert "the fix will be pushed with a pull request" in done.stderr


def test_github_actions_defaults_and_an_api_key(events_api):
    api, handler = events_api
    handler.expected = "Bearer pnu_testkey"
    env = _env(api, PREFECT_API_KEY="pnu_testkey", GITHUB_ACTIONS="true", GITHUB_REPOSITORY="acme/shop",
               GITHUB_SERVER_URL="https://github.com", GITHUB_SHA="f00d", GITHUB_RUN_ID="99")
    done = _trigger(env, "--failing-tests", "tests/test_a.py::test_x")
    assert done.returncode == 0, done.stderr
    payload = handler.received[0][1][0]["payload"]
    assert (payload["repository"], payload["ref"], payload["ci_run_url"], payload["llm"]) == (
        "https://github.com/acme/shop.git", "f00d", "https://github.com/acme/shop/actions/runs/99", None)
    assert payload["max_cost_usd"] == 2.0  # EndpointOptions' default: the one cap, wherever the repair runs


def test_refused_credentials_exit_53(events_api):
    api, handler = events_api
    handler.expected = "Basic " + base64.b64encode(AUTH_STRING.encode()).decode()
    done = _trigger(_env(api, PREFECT_API_AUTH_STRING="admin:wrong"), "--repository", "/srv/app")
    assert done.returncode == 53 and "refused the credentials (HTTP 401)" in done.stderr
    assert not handler.received


def test_no_server_or_no_repository_exit_53():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = _trigger(_env(f"http://127.0.0.1:{port}/api"), "--repository", "/srv/app",
                    "--request-timeout", "5")
    assert done.returncode == 53 and "could not reach the Prefect server" in done.stderr
    done = _trigger(_env(None), "--repository", "/srv/app")
    assert done.returncode == 53 and "set PREFECT_API_URL" in done.stderr
    done = _trigger(_env(f"http://127.0.0.1:{port}/api"))
    assert done.returncode == 53 and "no repository" in done.stderr

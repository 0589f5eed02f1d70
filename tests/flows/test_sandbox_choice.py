"""The sandbox as a user meets it: no silent downgrade, one warning, the level in the report.

Each test runs the real ``equisa`` command with the local isolation pinned: bubblewrap hidden from
PATH (the util-linux fallback runs, as on a machine without bubblewrap), or the weak
``network-only`` level named through ``EQUISA_LOCAL_ISOLATION``.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from tests.conftest import FIXTURES
from tests.flows.test_cli import EQUISA
from tests.sandbox_levels import path_without

SHAPES = FIXTURES / "shapes"


def equisa(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EQUISA, *args], capture_output=True, text=True, env=env, timeout=900)


@pytest.fixture
def weak_env(cli_env):
    """The local sandbox can only give network and PID namespaces here."""
    return {**cli_env, "EQUISA_LOCAL_ISOLATION": "network-only"}


def test_generated_code_is_refused_at_once_where_files_are_not_confined(weak_env, tmp_path):
    for command in ("localize", "repair"):
        started = time.monotonic()
        done = equisa(weak_env, command, str(SHAPES), "--no-llm", "--json", str(tmp_path / "r.json"))
        assert done.returncode == 14, done.stderr
        assert "refusing to run generated tests, inspection patches and fixes" in done.stderr
        assert "isolation network-only" in done.stderr and "--allow-weak-sandbox" in done.stderr
        assert "Traceback" not in done.stderr
        refused = json.loads((tmp_path / "r.json").read_text())  # the JSON says why the run stopped
        assert (refused["status"], refused["exit_code"]) == ("error", 14)
        assert refused["error_type"] == "WeakSandboxError"
        assert time.monotonic() - started < 60  # refused before any Prefect server or sandbox start
    done = equisa(weak_env, "testgen", str(SHAPES), "--target", "shapes/geometry.py", "--no-llm")
    assert done.returncode == 14 and "refusing to run generated tests" in done.stderr, done.stderr


def test_the_users_own_suite_runs_with_one_warning_and_the_report_says_how(weak_env, tmp_path):
    out = tmp_path / "trace.json"
    done = equisa(weak_env, "trace", str(SHAPES), "--json", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("does not confine file writes") == 1
    sandbox = json.loads(out.read_text())["sandbox"]
    assert sandbox == {"backend": "local", "level": "network-only", "weak_allowed": False,
                       "reason": "network and PID namespaces only", "confines_files": False}


def test_allow_weak_sandbox_runs_generated_code_and_the_report_records_it(weak_env, tmp_path):
    out = tmp_path / "localize.json"
    done = equisa(weak_env, "localize", str(SHAPES), "--no-llm", "--allow-weak-sandbox",
                  "--max-inspections", "2", "--no-discovery", "--json", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("does not confine file writes") == 1
    report = json.loads(out.read_text())
    assert report["sandbox"]["level"] == "network-only" and report["sandbox"]["weak_allowed"] is True
    assert sum(i["mutants_tried"] for i in report["inspections"]) > 0  # generated code ran


def test_sandbox_none_is_an_explicit_choice(cli_env, tmp_path):
    out = tmp_path / "trace.json"
    done = equisa(cli_env, "trace", str(SHAPES), "--sandbox", "none", "--json", str(out))
    assert done.returncode == 0, done.stderr
    assert "in the none sandbox (none)" in done.stderr
    assert done.stderr.count("does not confine file writes") == 1
    sandbox = json.loads(out.read_text())["sandbox"]
    assert (sandbox["backend"], sandbox["level"], sandbox["weak_allowed"]) == ("none", "none", True)


def test_without_bubblewrap_repair_runs_confined_by_the_util_linux_fallback(cli_env, tmp_path):
    env = {**cli_env, "PATH": path_without("bwrap", tmp_path / "bin")}
    out = tmp_path / "repair.json"
    done = equisa(env, "repair", str(SHAPES), "--no-llm", "--json", str(out))
    assert done.returncode in (0, 21, 22), done.stderr
    assert "(sandbox local: unshare)" in done.stderr and "warning" not in done.stderr
    report = json.loads(out.read_text())
    assert report["sandbox"]["level"] == "unshare" and report["sandbox"]["confines_files"] is True
    assert report["sandbox"]["reason"].startswith("bwrap: bwrap not found")
    assert report["candidates_tried"] > 0  # generated fixes ran in the fallback sandbox


def test_a_batch_stops_before_any_work_unless_its_entries_accept_weak_isolation(weak_env, tmp_path):
    repositories = tmp_path / "repositories.yaml"
    repositories.write_text(
        "defaults: {llm: false}\n"
        f"repositories:\n  - source: {SHAPES}\n    name: accepted\n    allow_weak_sandbox: true\n"
        f"  - source: {SHAPES}\n    name: refused\n")
    done = equisa(weak_env, "batch", str(repositories))
    assert done.returncode == 14, done.stderr
    assert "refusing to run generated code for refused:" in done.stderr
    assert "allow_weak_sandbox: true in an entry" in done.stderr and "accepted" not in done.stderr

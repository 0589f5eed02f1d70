"""The shared local Prefect server (``tasks/prefect_server/server.py``): real servers, real ``equisa``
subprocesses, each test in its own temporary data folder and Prefect home.

Every server here is started by the test (through ``equisa``) in ``tmp_path`` and stopped at the
end through its recorded process group; the other processes a test starts are ended by pid.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from importlib.metadata import version
from pathlib import Path

import pytest

from tasks.prefect_server.database_seed import DATABASE_NAME, database_revision, seed_path
from tasks.prefect_server.server import ServerState, server_options, stop_server
from tasks.prefect_server.watchdog import STATE_FILE, acquire_lease, group_alive, process_marker
from tests.conftest import FIXTURES

pytestmark = pytest.mark.integration

EQUISA = shutil.which("equisa") or str(Path(sys.executable).with_name("equisa"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
SHAPES = FIXTURES / "shapes"
UI_LINE = re.compile(r"Prefect UI: (http://127\.0\.0\.1:\d+)(.*)")


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    """An ``equisa`` environment with no Prefect API configured: no ``PREFECT_*`` or
    ``EQUISA_PREFECT_*`` from outside, a private data folder, Prefect home, caches and storage."""
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith(("PREFECT_", "EQUISA_PREFECT_"))}
    environ.update({
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "PREFECT_HOME": str(tmp_path / "client-prefect"),
        "EQUISA_WORKSPACES": str(tmp_path / "workspaces"),
        "EQUISA_DB": str(tmp_path / "history.duckdb"),
        "EQUISA_ARTIFACTS": str(tmp_path / "artifacts"),
        "EQUISA_SPOOL": str(tmp_path / "spool"),
        "COLUMNS": "200",
    })
    yield environ
    stop_server(server_options({"XDG_DATA_HOME": environ["XDG_DATA_HOME"]}))  # whatever is left


def folder(env: dict[str, str]) -> Path:
    return server_options({"XDG_DATA_HOME": env["XDG_DATA_HOME"]}).folder


def state(env: dict[str, str]) -> ServerState | None:
    path = folder(env) / STATE_FILE
    return ServerState.model_validate_json(path.read_text()) if path.exists() else None


def equisa(env: dict[str, str], *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([EQUISA, *args], capture_output=True, text=True, env=env, timeout=timeout)


def watchdogs(data_folder: Path) -> list[int]:
    """The pids of the watchdogs running for this folder (from ``/proc``)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"tasks.prefect_server.watchdog" in cmdline and str(data_folder).encode() in cmdline:
                found.append(int(proc.name))
    return found


def flow_run_names(url: str) -> list[str]:
    request = urllib.request.Request(f"{url}/api/flow_runs/filter", data=b'{"limit": 50}',
                                     headers={"Content-Type": "application/json"})
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=30) as answer:
        return [run["name"] for run in json.load(answer)]


def wait_for(condition, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def test_the_first_flow_command_starts_the_server_and_the_next_reuses_it(env):
    first = equisa(env, "trace", str(SHAPES), "--sandbox", "none")
    assert first.returncode == 0, first.stderr
    url, note = UI_LINE.search(first.stderr).groups()
    assert "local server started" in note and "30 min" in note
    assert first.stderr.count("Prefect UI:") == 1
    started = state(env)
    assert started.url == url and started.prefect_version
    assert watchdogs(folder(env)) == [started.pid]
    # It began on the committed seed database, already at the last migration: none was run.
    assert started.seeded
    seed = folder(env) / "seed.db"
    seed.write_bytes(gzip.decompress(seed_path(started.prefect_version).read_bytes()))
    assert database_revision(folder(env) / "home" / DATABASE_NAME) == database_revision(seed) is not None

    second = equisa(env, "trace", str(SHAPES), "--sandbox", "none")
    assert second.returncode == 0, second.stderr
    assert UI_LINE.search(second.stderr).groups() == (url, "")  # reused: no "started"
    assert state(env) == started  # same watchdog, port and start time: nothing was spawned
    assert watchdogs(folder(env)) == [started.pid]
    # Both runs are in the shared server's history (what its UI shows), not in a temporary one.
    assert flow_run_names(url).count(f"trace {SHAPES}") == 2
    # Their API clients were given the one-certificate bundle (``_plain_http_ca_file``).
    assert (folder(env) / "plain-http-ca.pem").read_text().count("BEGIN CERTIFICATE") == 1
    assert not list((folder(env) / "clients").iterdir())  # both commands gave their lease back

    stopped = equisa(env, "server", "stop", timeout=120)
    assert stopped.returncode == 0 and f"Stopped the shared Prefect server at {url}" in stopped.stderr
    assert state(env) is None and not group_alive(started.pid)
    assert "No shared Prefect server is running" in equisa(env, "server", "status").stderr


def block_type_slugs(url: str) -> list[str]:
    request = urllib.request.Request(f"{url}/api/block_types/filter", data=b"{}",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=30) as answer:
        return [block_type["slug"] for block_type in json.load(answer)]


def test_the_shared_server_registers_no_block_types_at_start_and_a_saved_block_still_loads(env):
    started = equisa(env, "trace", str(SHAPES), "--sandbox", "none")
    assert started.returncode == 0, started.stderr
    url = UI_LINE.search(started.stderr).group(1)
    # Neither Prefect's own block types nor the installed collections' (prefect-aws) were registered:
    # the collections were not even imported, which is what the server's start saves.
    assert block_type_slugs(url) == []
    client = {**env, "PREFECT_API_URL": f"{url}/api"}
    script = ("from prefect_aws import AwsCredentials\n"
              "AwsCredentials(aws_access_key_id='key-1', region_name='eu-west-3').save('equisa-test')\n"
              "print(AwsCredentials.load('equisa-test').aws_access_key_id)\n")
    saved = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=client,
                           timeout=300)
    assert saved.returncode == 0, saved.stderr
    assert saved.stdout.split()[-1] == "key-1"
    assert "aws-credentials" in block_type_slugs(url)  # Block.save registered its own type


def stale_record(env: dict[str, str], pid: int, marker: str) -> int:
    """Write a record naming ``pid`` on a port where nothing answers; returns the port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    folder(env).mkdir(parents=True, exist_ok=True)
    stale = ServerState(pid=pid, marker=marker, port=port, prefect_version=version("prefect"),
                        idle_s=60, started_at=0)
    (folder(env) / STATE_FILE).write_text(stale.model_dump_json())
    return port


def test_a_record_of_a_dead_server_is_cleaned_and_a_new_server_started(env):
    ended = subprocess.Popen(["true"])
    ended.wait()
    port = stale_record(env, ended.pid, "1")
    started = equisa(env, "server", "start", timeout=300)
    assert started.returncode == 0, started.stderr
    assert "(started," in started.stderr
    fresh = state(env)
    assert fresh.pid != ended.pid and fresh.port != port
    assert watchdogs(folder(env)) == [fresh.pid]


def test_a_stale_record_ends_only_a_process_that_is_still_the_recorded_one(env):
    """A recorded watchdog that still runs (same start marker) but does not answer is ended, with
    its group; a live process that only has a recorded pid (another start marker) is left alone.
    The new server here cannot start (its port is taken): the record is gone all the same."""
    hung = subprocess.Popen(["sleep", "300"], start_new_session=True)
    bystander = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            env["EQUISA_PREFECT_PORT"] = str(taken.getsockname()[1])
            for pid, marker in ((hung.pid, process_marker(hung.pid)), (bystander.pid, "1")):
                stale_record(env, pid, marker)
                assert equisa(env, "server", "start", timeout=300).returncode == 55
                assert state(env) is None
        assert hung.wait(timeout=30) == -signal.SIGTERM
        assert bystander.poll() is None
    finally:
        for process in (hung, bystander):
            if process.poll() is None:
                os.kill(process.pid, signal.SIGKILL)
                process.wait()


def test_two_commands_starting_at_once_share_one_server(env):
    starting = [subprocess.Popen([EQUISA, "server", "start"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    outputs = [p.communicate(timeout=300)[1] for p in starting]
    assert [p.returncode for p in starting] == [0, 0], outputs
    pids = {int(re.search(r"pid (\d+)", out).group(1)) for out in outputs}
    assert len(pids) == 1
    assert sorted("started" in out for out in outputs) == [False, True]
    assert watchdogs(folder(env)) == [state(env).pid] == list(pids)


def test_an_idle_server_stops_itself_but_not_while_a_command_holds_a_lease(env):
    env["EQUISA_PREFECT_IDLE_S"] = "1"
    assert equisa(env, "server", "start", timeout=300).returncode == 0
    started = state(env)
    command = subprocess.Popen(["sleep", "300"])  # stands for a long equisa run
    try:
        acquire_lease(folder(env), command.pid)
        time.sleep(4)
        assert state(env) == started and group_alive(started.pid)
        os.kill(command.pid, signal.SIGKILL)
        command.wait()
        assert wait_for(lambda: state(env) is None and not group_alive(started.pid), timeout=60)
        assert "idle for 1 s, stopping the server" in (folder(env) / "server.log").read_text()
    finally:
        if command.poll() is None:
            os.kill(command.pid, signal.SIGKILL)
            command.wait()


def test_opting_out_keeps_the_temporary_server(env):
    env["EQUISA_PREFECT_SERVER"] = "ephemeral"
    done = equisa(env, "trace", str(SHAPES), "--sandbox", "none")
    assert done.returncode == 0, done.stderr
    assert "Prefect UI" not in done.stderr and "temporary Prefect server" not in done.stderr
    assert not (folder(env) / STATE_FILE).exists()


def test_a_configured_api_is_used_unchanged(env, prefect_api_url):
    env["PREFECT_API_URL"] = prefect_api_url
    done = equisa(env, "trace", str(SHAPES), "--sandbox", "none")
    assert done.returncode == 0, done.stderr
    assert "Prefect UI" not in done.stderr
    assert not (folder(env) / STATE_FILE).exists()


def test_a_server_that_cannot_start_falls_back_with_one_warning(env):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        env["EQUISA_PREFECT_PORT"] = str(taken.getsockname()[1])
        done = equisa(env, "trace", str(SHAPES), "--sandbox", "none")
        failed = equisa(env, "server", "start", timeout=300)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "warning:" in line and "Prefect" in line]
    assert len(warnings) == 1 and "temporary Prefect server" in warnings[0], done.stderr
    assert "did not start" in warnings[0] and "Prefect UI" not in done.stderr
    assert not (folder(env) / STATE_FILE).exists() and watchdogs(folder(env)) == []
    assert failed.returncode == 55 and "equisa: the local Prefect server did not start" in failed.stderr


def test_bad_settings_are_input_errors_and_stop_without_a_server(env):
    env["EQUISA_PREFECT_SERVER"] = "always"
    done = equisa(env, "trace", str(SHAPES), "--sandbox", "none")
    assert done.returncode == 3 and "EQUISA_PREFECT_SERVER='always'" in done.stderr
    del env["EQUISA_PREFECT_SERVER"]
    assert "No shared Prefect server was running" in equisa(env, "server", "stop").stderr


def test_the_shared_servers_clients_get_a_one_certificate_bundle_unless_the_user_chose_one(tmp_path):
    """Prefect's API clients build an SSL context from this bundle even for the plain-HTTP shared
    server: one certificate instead of certifi's whole bundle; a bundle the user set is kept."""
    from tasks.prefect_server.server import CA_FILE_SETTING, _point_prefect_at

    environ: dict[str, str] = {}
    _point_prefect_at("http://127.0.0.1:1/api", environ, tmp_path)
    bundle = Path(environ[CA_FILE_SETTING])
    assert environ["PREFECT_API_URL"] == "http://127.0.0.1:1/api" and bundle.parent == tmp_path
    assert bundle.read_text().count("BEGIN CERTIFICATE") == 1 == bundle.read_text().count("END CERTIFICATE")
    import ssl

    ssl.create_default_context(cafile=str(bundle))  # a bundle Prefect can load
    again: dict[str, str] = {}
    _point_prefect_at("http://127.0.0.1:1/api", again, tmp_path)
    assert again[CA_FILE_SETTING] == str(bundle)  # made once, then reused
    chosen = {CA_FILE_SETTING: "/etc/ssl/mine.pem"}
    _point_prefect_at("http://127.0.0.1:1/api", chosen, tmp_path)
    assert chosen[CA_FILE_SETTING] == "/etc/ssl/mine.pem"


def test_the_server_environment_gives_the_ui_this_servers_address(tmp_path):
    from tasks.prefect_server.server import server_environment

    env = server_environment({"PREFECT_UI_API_URL": "http://elsewhere/api", "PATH": "/bin"}, tmp_path, 4321)
    assert env["PREFECT_UI_API_URL"] == "http://127.0.0.1:4321/api"
    assert env["PREFECT_UI_URL"] == "http://127.0.0.1:4321"
    assert (env["PREFECT_SERVER_API_HOST"], env["PREFECT_SERVER_API_PORT"]) == ("127.0.0.1", "4321")
    assert env["PATH"] == "/bin" and env["PREFECT_HOME"] == str(tmp_path / "home")


def _get_json(url: str) -> dict:
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(url, timeout=30) as answer:
        return json.load(answer)


def _flow_run_id(url: str, name: str) -> str:
    request = urllib.request.Request(f"{url}/api/flow_runs/filter", data=b'{"limit": 50}',
                                     headers={"Content-Type": "application/json"})
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=30) as answer:
        return next(run["id"] for run in json.load(answer) if run["name"] == name)


def _chromium(playwright):
    """Headless Chromium: the machine's, else Playwright's own (installed here if missing)."""
    from playwright.sync_api import Error

    try:
        if CHROMIUM:
            return playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        subprocess.run([sys.executable, "-m", "playwright", "install", "chromium"], capture_output=True,
                       timeout=900)
        return playwright.chromium.launch(args=["--no-sandbox"])
    except Error as error:
        pytest.skip(f"headless Chromium cannot run on this machine: {error}")


def test_the_printed_ui_address_shows_the_servers_runs_in_a_browser(env):
    """The address ``equisa`` prints: its ``/ui-settings`` name the API on the same port, and the UI,
    opened in headless Chromium, connects to it and shows the run the command just made."""
    from playwright.sync_api import sync_playwright

    done = equisa(env, "trace", str(SHAPES), "--sandbox", "none")
    assert done.returncode == 0, done.stderr
    url = UI_LINE.search(done.stderr).group(1)
    assert _get_json(f"{url}/ui-settings")["api_url"] == f"{url}/api"

    name = f"trace {SHAPES}"
    run_id = _flow_run_id(url, name)
    failed: list[str] = []
    with sync_playwright() as playwright:
        browser = _chromium(playwright)
        try:
            page = browser.new_page()
            page.on("requestfailed", lambda request: failed.append(request.url))
            page.goto(f"{url}/runs", wait_until="domcontentloaded", timeout=120_000)
            page.get_by_text(name).first.wait_for(timeout=120_000)  # the runs list, read from the API
            page.goto(f"{url}/runs/flow-run/{run_id}", wait_until="domcontentloaded", timeout=120_000)
            page.get_by_text(name).first.wait_for(timeout=120_000)
            shown = page.content()
        finally:
            browser.close()
    assert "Can't connect to Server API" not in shown
    assert not [u for u in failed if ":4200/" in u], failed

"""The shared local Prefect server: started on first use, reused by later commands, stopped when idle.

Prefect's temporary (ephemeral) server costs every one-shot ``equisa`` command several seconds
of start-up, and its UI and run history vanish with the command. When no Prefect API is
configured, commands that run flows use one local server instead::

    connect()                           in an ``equisa`` command, before its flow runs
      ├─ PREFECT_API_URL configured      (environment, profile, prefect.toml...): used unchanged
      ├─ EQUISA_PREFECT_SERVER=ephemeral  Prefect's temporary server, as before
      └─ shared (the default), under the folder's lock:
           a healthy server recorded in server.json ──▶ reuse it (no start-up cost)
           none, or a stale record ──▶ clean it, seed a new database (``database_seed``: already
             migrated), start ``prefect server start --host 127.0.0.1 --port N`` under the
             watchdog (``tasks/prefect_server/watchdog.py``), wait for /api/health
           then: lease for this command, PREFECT_API_URL for this process
      on failure (port taken, start-up timeout): Prefect's temporary server, and a ``problem``

The server has its own ``PREFECT_HOME`` and database under ``<data home>/prefect/home`` (the
user's Prefect profile, database and settings are not read or written) and binds 127.0.0.1 only.
Its watchdog stops it once no command has used it for ``EQUISA_PREFECT_IDLE_S`` seconds;
``equisa server status|start|stop`` show, warm and end it.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.errors import InputError, PrefectServerError
from equisa_core.operations.storage import _data_home  # the one definition of EQUISA's data folder
from tasks.prefect_server.database_seed import seed_database
from tasks.prefect_server.watchdog import (
    LOG_FILE,
    STATE_FILE,
    LockTimeout,
    acquire_lease,
    group_alive,
    is_same_process,
    last_used,
    live_leases,
    locked,
    process_marker,
    release_lease,
    touch,
)

__all__ = [
    "MODE_ENV",
    "IDLE_ENV",
    "STARTUP_ENV",
    "PORT_ENV",
    "DEFAULT_IDLE_S",
    "DEFAULT_STARTUP_S",
    "ServerOptions",
    "ServerState",
    "ServerStatus",
    "Connection",
    "server_options",
    "connect",
    "ensure_server",
    "server_status",
    "stop_server",
    "server_environment",
    "refresh_prefect_settings",
]

#: ``shared`` (the default): the shared local server; ``ephemeral``: Prefect's temporary server.
MODE_ENV = "EQUISA_PREFECT_SERVER"
#: Seconds without any command using it after which the shared server stops itself.
IDLE_ENV = "EQUISA_PREFECT_IDLE_S"
#: Seconds a command waits for a new shared server to answer before it falls back.
STARTUP_ENV = "EQUISA_PREFECT_STARTUP_S"
#: The port of the shared server (default 0: a free port chosen at start).
PORT_ENV = "EQUISA_PREFECT_PORT"
DEFAULT_MODE = "shared"
DEFAULT_IDLE_S = 1800.0
#: A fresh server takes ~8 s on an idle 2-core machine, much longer on a busy one.
DEFAULT_STARTUP_S = 120.0
HOST = "127.0.0.1"
#: Where ``python -m tasks.prefect_server.watchdog`` imports from (the folder that holds ``tasks``).
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]
#: Seconds a server gets to end after SIGTERM before its group is killed.
_STOP_WAIT_S = 20.0


class ServerOptions(BaseModel):
    """How ``equisa`` commands get their Prefect server (from ``EQUISA_PREFECT_*``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["shared", "ephemeral"] = DEFAULT_MODE
    """``shared``: the shared local server; ``ephemeral``: Prefect's temporary server per command."""
    folder: Path
    """The shared server's state, lock, log, leases and ``PREFECT_HOME``."""
    idle_s: float = Field(default=DEFAULT_IDLE_S, gt=0)
    """A server nobody used for this long stops itself (fixed when it starts)."""
    startup_s: float = Field(default=DEFAULT_STARTUP_S, gt=0)
    """How long a command waits for a new server's health endpoint before falling back."""
    port: int = Field(default=0, ge=0, le=65535)
    """The port to bind on 127.0.0.1; 0 picks a free one."""


class ServerState(BaseModel):
    """The record of a running shared server (``server.json``)."""

    model_config = ConfigDict(extra="ignore")

    pid: int
    """The watchdog: the server's session leader and process group."""
    marker: str
    """The watchdog's start marker (``process_marker``): guards against a reused pid."""
    port: int
    prefect_version: str
    idle_s: float
    started_at: float
    seeded: bool = False
    """Whether it began on the committed, already migrated database (``database_seed``)."""

    @property
    def url(self) -> str:
        """The UI's address."""
        return f"http://{HOST}:{self.port}"

    @property
    def api_url(self) -> str:
        """The value of ``PREFECT_API_URL`` for this server."""
        return f"{self.url}/api"


class ServerStatus(BaseModel):
    """What ``equisa server status`` shows."""

    folder: str
    state: ServerState | None
    running: bool
    healthy: bool
    last_used: float | None
    clients: list[int]
    """The pids of the running commands that use the server."""
    log: str


class Connection(BaseModel):
    """Which Prefect server this command's flows run against, and how it was found."""

    kind: Literal["configured", "shared", "ephemeral"]
    """``configured``: the user's PREFECT_API_URL; ``shared``: the shared local server;
    ``ephemeral``: Prefect's temporary server (chosen, or the fallback when ``problem`` is set)."""
    api_url: str | None = None
    ui_url: str | None = None
    started: bool = False
    """This command started the shared server (it was not running)."""
    pid: int | None = None
    idle_s: float | None = None
    """The shared server stops after this many seconds unused."""
    problem: str | None = None
    """Why the shared server could not be used (the run goes on with the temporary server)."""


def server_options(env: Mapping[str, str] | None = None) -> ServerOptions:
    """The options from ``EQUISA_PREFECT_SERVER``, ``_IDLE_S``, ``_STARTUP_S``, ``_PORT``, the data home."""
    env = os.environ if env is None else env
    mode = env.get(MODE_ENV, "").strip().lower() or DEFAULT_MODE
    if mode not in ("shared", "ephemeral"):
        raise InputError(f"{MODE_ENV}={env[MODE_ENV]!r}: expected 'shared' or 'ephemeral'")
    return ServerOptions(
        mode=mode, folder=_data_home(env) / "prefect",
        idle_s=_number(env, IDLE_ENV, DEFAULT_IDLE_S, float, minimum=0.1),
        startup_s=_number(env, STARTUP_ENV, DEFAULT_STARTUP_S, float, minimum=1),
        port=_number(env, PORT_ENV, 0, int, minimum=0, maximum=65535),
    )


def connect(options: ServerOptions | None = None) -> Connection:
    """Point this process's flow runs at a Prefect server: the configured one, else (unless opted
    out) the shared local server, started if needed; else Prefect's temporary server.

    Sets ``PREFECT_API_URL`` in ``os.environ`` for the shared server and holds a lease on it until
    the process exits. Never raises because the server could not start: see ``Connection.problem``.
    """
    options = server_options() if options is None else options
    configured = _configured_api_url(os.environ)
    if configured:
        return Connection(kind="configured", api_url=configured)
    if options.mode == "ephemeral":
        return Connection(kind="ephemeral")
    try:
        state, started = ensure_server(options)
    except PrefectServerError as error:
        return Connection(kind="ephemeral", problem=error.message)
    _point_prefect_at(state.api_url, os.environ, options.folder)
    return Connection(kind="shared", api_url=state.api_url, ui_url=state.url, started=started, pid=state.pid,
                      idle_s=state.idle_s)


def ensure_server(options: ServerOptions) -> tuple[ServerState, bool]:
    """The shared server, reused if a healthy one is recorded, else started (True); this process
    holds a lease on it until it exits. Raises ``PrefectServerError`` when it cannot start."""
    folder = options.folder
    try:
        with locked(folder, timeout=options.startup_s + _STOP_WAIT_S):
            state = _read_state(folder)
            if state is not None and _usable(state, folder):
                touch(folder)
                _lease(folder)
                return state, False
            if state is not None:  # stale: dead, unhealthy or of another Prefect version
                _terminate(state)
                _forget(folder)
            state = _start(options)
            _lease(folder)
            return state, True
    except LockTimeout as error:
        raise PrefectServerError(f"another command kept the local Prefect server's lock ({error})") from None
    except OSError as error:  # the data folder is not writable, no free port, ...
        raise PrefectServerError(f"the local Prefect server could not start ({type(error).__name__}: "
                                 f"{error})") from None


def server_status(options: ServerOptions) -> ServerStatus:
    """The shared server's record, whether it runs and answers, when it was last used, by whom."""
    folder = options.folder
    state = _read_state(folder)
    running = state is not None and is_same_process(state.pid, state.marker)
    return ServerStatus(
        folder=str(folder), state=state, running=running,
        healthy=running and _healthy(state.url),
        last_used=last_used(folder) if state else None,
        clients=live_leases(folder) if folder.is_dir() else [],
        log=str(folder / LOG_FILE),
    )


def stop_server(options: ServerOptions) -> ServerState | None:
    """Stop the shared server (its whole process group) and remove its record; returns the
    record, or None when none was recorded."""
    folder = options.folder
    if not (folder / STATE_FILE).exists():
        return None
    with locked(folder, timeout=options.startup_s + _STOP_WAIT_S):
        state = _read_state(folder)
        if state is not None:
            _terminate(state)
        _forget(folder)
        return state


def server_environment(environ: Mapping[str, str], folder: Path, port: int) -> dict[str, str]:
    """The server's environment: the user's without any ``PREFECT_*`` setting, its own home, and its
    address on ``port``.

    ``prefect server start --port`` binds the port but leaves the UI's settings at Prefect's default
    address (``/ui-settings`` would send the browser to ``127.0.0.1:4200/api``): the UI's API URL, the
    UI's own URL and the server's host and port name this server.

    Block types are not registered at start (``PREFECT_API_BLOCKS_REGISTER_ON_START``, and the
    memoizing wrapper that would import every installed collection before reading that setting):
    it cost about 2.3 s of the cold start's 7.5 s of CPU (``bench/README.md``, "The first
    command"). Nothing EQUISA runs needs them there: ``Block.save`` registers its own type."""
    url = f"http://{HOST}:{port}"
    env = {name: value for name, value in environ.items() if not name.startswith("PREFECT_")}
    env.update({
        "PREFECT_HOME": str(folder / "home"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "PREFECT_SERVER_API_HOST": HOST,
        "PREFECT_SERVER_API_PORT": str(port),
        "PREFECT_UI_API_URL": f"{url}/api",
        "PREFECT_UI_URL": url,
        "PREFECT_API_BLOCKS_REGISTER_ON_START": "false",
        "PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION": "false",
    })
    return env


def _start(options: ServerOptions) -> ServerState:
    """Start the watchdog and its server in a new session; wait for the health endpoint."""
    folder = options.folder
    port = options.port or _free_port()
    command = [sys.executable, "-m", "prefect", "server", "start", "--host", HOST, "--port", str(port)]
    watchdog = [sys.executable, "-m", "tasks.prefect_server.watchdog", "--folder", str(folder),
                "--idle", repr(options.idle_s), "--", *command]
    (folder / "home").mkdir(parents=True, exist_ok=True)
    prefect_version = _prefect_version()
    seeded = seed_database(folder / "home", prefect_version)  # a new server's database, migrated
    with open(folder / LOG_FILE, "wb") as log:
        process = subprocess.Popen(
            watchdog, cwd=_PACKAGE_ROOT, env=server_environment(os.environ, folder, port),
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    state = ServerState(pid=process.pid, marker=process_marker(process.pid) or "alive", port=port,
                        prefect_version=prefect_version, idle_s=options.idle_s, started_at=time.time(),
                        seeded=seeded)
    _write_state(folder, state)
    deadline = time.monotonic() + options.startup_s
    while not _healthy(state.url, timeout=1.0):
        if process.poll() is not None or time.monotonic() > deadline:
            reason = (f"it exited: {_last_line(folder / LOG_FILE)}" if process.poll() is not None
                      else f"no answer from {state.url}/api/health in {options.startup_s:g} s")
            _terminate(state)
            _forget(folder)
            raise PrefectServerError(f"the local Prefect server did not start ({reason}; log: "
                               f"{folder / LOG_FILE})")
        time.sleep(0.1)
    return state


def _lease(folder: Path) -> None:
    """Hold a lease for this process; it ends, and the server counts as used, when it exits."""
    acquire_lease(folder)
    atexit.register(release_lease, folder)


def _usable(state: ServerState, folder: Path) -> bool:
    """Alive, answering, and of this Prefect version (a server other commands still use is kept)."""
    if not is_same_process(state.pid, state.marker):
        return False
    if state.prefect_version != _prefect_version() and not live_leases(folder):
        return False
    return any(_healthy(state.url, timeout=timeout) for timeout in (2.0, 5.0, 10.0))


def _terminate(state: ServerState) -> None:
    """End the server's process group: SIGTERM, then SIGKILL. Only when the group is ours: the
    watchdog still runs with its recorded marker, or it died and its group (the server) is left
    (a process group id is not reused while the group has members)."""
    pgid = state.pid
    if pgid <= 1:
        return
    if not (is_same_process(pgid, state.marker) or (process_marker(pgid) is None and group_alive(pgid))):
        return
    for signum, wait in ((signal.SIGTERM, _STOP_WAIT_S), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signum)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):  # reap it when this process started it
                os.waitpid(pgid, os.WNOHANG)
            if not group_alive(pgid):
                return
            time.sleep(0.05)


def _configured_api_url(environ: Mapping[str, str]) -> str | None:
    """The Prefect API the user configured (environment, profile, ``prefect.toml``...), or None."""
    if environ.get("PREFECT_API_URL"):
        return environ["PREFECT_API_URL"]
    from prefect.settings import get_current_settings

    url = get_current_settings().api.url
    return str(url) if url else None


def _point_prefect_at(api_url: str, environ: MutableMapping[str, str], folder: Path) -> None:
    """Set ``PREFECT_API_URL`` (and, unless the user chose one, a CA file: ``_plain_http_ca_file``),
    and have Prefect's already-read settings pick them up."""
    environ["PREFECT_API_URL"] = api_url
    if not environ.get(CA_FILE_SETTING):
        ca_file = _plain_http_ca_file(folder)
        if ca_file is not None:
            environ[CA_FILE_SETTING] = str(ca_file)
    if "prefect.context" in sys.modules:
        refresh_prefect_settings()


#: Prefect's setting of the CA bundle its API clients verify a server with.
CA_FILE_SETTING = "PREFECT_API_SSL_CERT_FILE"
#: The one-certificate bundle given to Prefect for the shared server (``_plain_http_ca_file``).
_PLAIN_HTTP_CA = "plain-http-ca.pem"
_PEM_END = "-----END CERTIFICATE-----"


def _plain_http_ca_file(folder: Path) -> Path | None:
    """A CA bundle of one certificate (certifi's first), for the shared server's API clients.

    Prefect builds each API client an SSL context from its CA bundle (certifi's 140-odd
    certificates: about 15 ms each, three clients a command) even for a plain ``http://`` server,
    which uses none of it: the shared server is HTTP on 127.0.0.1. With a one-certificate bundle the
    context costs 0.3 ms (measured on a one-shot ``localize``: about 55 ms a command). None when
    certifi's bundle cannot be read (Prefect then reads it itself, as before)."""
    target = folder / _PLAIN_HTTP_CA
    if target.exists():
        return target
    try:
        import certifi

        bundle = Path(certifi.where()).read_text(encoding="ascii")
        first = bundle[:bundle.index(_PEM_END) + len(_PEM_END)]
        first = first[first.index("-----BEGIN CERTIFICATE-----"):] + "\n"
        staging = target.with_name(f"{target.name}.{os.getpid()}")
        staging.write_text(first, encoding="ascii")
        os.replace(staging, target)  # whole, for commands reading it beside this one
    except (ImportError, OSError, ValueError):
        return None
    return target


def refresh_prefect_settings() -> None:
    """Have Prefect read its settings again (the environment, profile, ``prefect.toml`` and ``.env``
    of the working directory), after they changed in a process that imported it."""
    import prefect.context

    refresh = getattr(prefect.context, "refresh_global_settings_context", None)
    if refresh is not None:
        refresh()
    else:  # Prefect before 3.6
        prefect.context.GLOBAL_SETTINGS_CONTEXT = prefect.context.root_settings_context()


def _healthy(url: str, timeout: float = 2.0) -> bool:
    """Does ``{url}/api/health`` answer 200 (directly: no proxy for 127.0.0.1)?"""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"{url}/api/health", timeout=timeout) as response:
            return response.status == 200
    except (OSError, ValueError):
        return False


def _read_state(folder: Path) -> ServerState | None:
    try:
        return ServerState.model_validate_json((folder / STATE_FILE).read_text())
    except FileNotFoundError:
        return None
    except ValueError:  # a torn or foreign file: as if there were none (a start replaces it)
        return None


def _write_state(folder: Path, state: ServerState) -> None:
    partial = folder / f"{STATE_FILE}.{os.getpid()}"
    partial.write_text(json.dumps(state.model_dump(), indent=2) + "\n")
    partial.replace(folder / STATE_FILE)


def _forget(folder: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (folder / STATE_FILE).unlink()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def _prefect_version() -> str:
    from importlib.metadata import version

    return version("prefect")


def _last_line(log: Path) -> str:
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    return lines[-1][:200] if lines else "no output"


def _number(env: Mapping[str, str], name: str, default: float, kind: type, minimum: float,
            maximum: float | None = None):
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = kind(text)
    except ValueError:
        raise InputError(f"{name}={text!r} is not a number") from None
    if value < minimum or (maximum is not None and value > maximum):
        raise InputError(f"{name}={text!r} is out of range")
    return value

"""The warm worker: ``equisa`` commands served by a process that has already imported EQUISA and
Prefect, so that a one-shot command does not pay their ~2-3 s of imports every time.

    equisa ARGS (cli/launcher.py: the standard library only, ~50 ms)
      ├─ EQUISA_WARM=0, --verbose, or no fork/AF_UNIX here: the command runs in this process
      └─ connect to <runtime dir>/<fingerprint>.sock (a worker of the same code and environment)
           none answers ──▶ under <fingerprint>.lock start ``python -c BOOT`` (detached, its log
             beside the socket) and wait until it listens; it cannot start ──▶ in this process
           send the arguments, the working directory, the environment and the terminal's
             stdin/stdout/stderr (passed as file descriptors: colours, widths and pipes are the
             command's own, as in a process of its own)
           worker: fork ──▶ child: takes the streams, environment and directory, re-reads
             Prefect's settings, runs ``cli.main.run`` and exits with its code
           receive the child's pid (Ctrl-C, SIGTERM and SIGHUP are passed on to it), then its code

The worker imports only; it runs no command itself, starts no thread and opens no connection, so
every child starts from the same fresh state (forking a process with threads is unsafe: it checks
that it has none). The *fingerprint* names the socket: the interpreter, ``sys.path`` and its
folders' modification times, the modification times of EQUISA's source files, and the
environment variables read at import (``IMPORT_ENV_PREFIXES``); any change gives another socket,
so a worker never serves code or settings other than the client's. A worker nobody used for
``EQUISA_WARM_IDLE_S`` seconds (default ``DEFAULT_IDLE_S``) exits; ``stop_workers`` (``equisa server
stop``) ends them all, each once its commands under way have ended.
The runtime folder (``$XDG_RUNTIME_DIR``, else ``$TMPDIR`` or /tmp, then ``equisa-warm-<uid>``) is
the user's own (mode 0700, checked), and a worker serves only clients of its own user id.

This module is imported by the launcher: its top level uses the standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import stat
import struct
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

__all__ = [
    "WARM_ENV",
    "IDLE_ENV",
    "DEFAULT_IDLE_S",
    "WarmUnavailable",
    "forward",
    "serve",
    "fingerprint",
    "runtime_folder",
    "running_workers",
    "stop_workers",
]

#: ``0`` (or ``off``, ``false``, ``no``) runs every command in its own process, as before.
WARM_ENV = "EQUISA_WARM"
#: Seconds without a command after which a worker exits.
IDLE_ENV = "EQUISA_WARM_IDLE_S"
DEFAULT_IDLE_S = 900.0
#: How long a command waits for a new worker to listen before it runs in its own process.
STARTUP_S = 120.0
#: Environment variables a worker's imports may read (Prefect reads its settings, its logging
#: configuration and ``PREFECT_HOME`` at import; Python its path and locale at start).
IMPORT_ENV_PREFIXES = ("PREFECT_", "EQUISA_", "PYTHON", "LC_", "XDG_")
IMPORT_ENV_NAMES = frozenset({"LANG", "LANGUAGE", "HOME", "TMPDIR", "VIRTUAL_ENV", "PATH"})
#: The settings of the warm worker itself, which do not change what it imports.
_OWN_SETTINGS = frozenset({WARM_ENV, IDLE_ENV})
#: The folder that holds ``cli``, ``flows``, ``tasks`` and ``equisa_core``.
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent
_SOURCE_PACKAGES = ("cli", "flows", "tasks", "equisa_core")
#: The modules a worker imports ahead of its commands: the CLI and every flow and what a run of a
#: flow command imports on its way (measured with ``sys.modules`` after an in-process ``localize``).
PRELOAD = (
    "cli.main", "flows.trace", "flows.localize", "flows.repair", "flows.testgen", "flows.discovery",
    "flows.validation", "tasks.prefect_server.server", "cli.settings", "tasks.llm", "tasks.storage.record",
    "tasks.publish.ci_outputs", "tasks.run.interpreter", "equisa_core.report.console", "prefect.client.orchestration",
    "prefect.artifacts", "prefect.futures", "prefect.task_runners",
    # What a flow's first call imports (its engine, and fastapi's encoder for its parameters), and
    # the task modules a run imports on its way (measured: about 0.2 s a command).
    "prefect.engine", "prefect.flow_engine", "prefect.task_engine", "prefect.utilities.visualization",
    "prefect.concurrency.context", "prefect.concurrency.v1.context", "prefect.concurrency.services",
    "prefect._internal.control_listener", "prefect._internal.attempt_control",
    "prefect.telemetry.run_telemetry", "fastapi.encoders", "pydantic.color", "rich._emoji_codes",
    "encodings.idna", "http.cookies", "tasks.storage.artifacts", "cli.progress", "tasks.sandbox.local_backend",
)
#: Bytes of the request's length, sent with the client's file descriptors.
_HEADER = struct.Struct("!Q")
_BOOT = ("import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
         "from cli.warm_worker import boot; boot(sys.argv[2:])")
_STOP_WAIT_S = 10.0
#: The longest path of a Unix socket that every system takes (Linux 107 bytes, macOS 103).
_SOCKET_PATH_MAX = 103


class WarmUnavailable(OSError):
    """No worker can serve this command (the caller runs it in its own process)."""


def enabled(env: Mapping[str, str]) -> bool:
    """Is the warm worker wanted (``EQUISA_WARM``) and possible on this system (fork, AF_UNIX,
    passing file descriptors)?"""
    wanted = env.get(WARM_ENV, "1").strip().lower() not in ("0", "off", "false", "no")
    return wanted and hasattr(os, "fork") and hasattr(socket, "AF_UNIX") and hasattr(socket, "send_fds")


def idle_seconds(env: Mapping[str, str]) -> float:
    """``EQUISA_WARM_IDLE_S``, or the default when unset or not a positive number."""
    try:
        value = float(env.get(IDLE_ENV, ""))
    except ValueError:
        return DEFAULT_IDLE_S
    return value if value > 0 else DEFAULT_IDLE_S


def runtime_folder(env: Mapping[str, str]) -> Path:
    """The user's folder of worker sockets, logs and locks (created 0700; refused when another
    user owns it or others may enter it)."""
    base = env.get("XDG_RUNTIME_DIR") or env.get("TMPDIR") or "/tmp"
    folder = Path(base) / f"equisa-warm-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = folder.lstat()
    except OSError as error:
        raise WarmUnavailable(f"cannot use {folder}: {error}") from error
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
        raise WarmUnavailable(f"{folder} is not a private folder of this user")
    return folder


def fingerprint(env: Mapping[str, str]) -> str:
    """What a worker's imports depend on, hashed: interpreter, import path (and its folders'
    modification times, which an install or removal changes), EQUISA's source files' modification
    times, and the environment read at import."""
    digest = hashlib.sha256()

    def add(*parts: object) -> None:
        for part in parts:
            digest.update(repr(part).encode("utf-8", "surrogateescape") + b"\0")

    add(sys.executable, sys.version, os.getuid())
    for entry in sys.path:
        add(entry, _mtime(Path(entry or ".")))
    for package in _SOURCE_PACKAGES:
        for folder, _dirs, files in sorted(os.walk(_PACKAGE_ROOT / package)):
            add(folder, _mtime(Path(folder)),
                *sorted((name, _mtime(Path(folder) / name)) for name in files if name.endswith(".py")))
    for name in sorted(env):
        if name not in _OWN_SETTINGS and (name in IMPORT_ENV_NAMES or name.startswith(IMPORT_ENV_PREFIXES)):
            add(name, env[name])
    return digest.hexdigest()[:24]


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return -1


# --- the client ------------------------------------------------------------------------------


def forward(argv: Sequence[str], env: Mapping[str, str] | None = None) -> int:
    """Run ``equisa argv`` in a warm worker (started if none runs) and return its exit code.

    Raises ``WarmUnavailable`` before anything was sent when no worker can take the command (the
    caller then runs it itself); once sent, the command is the worker's, and a worker that dies
    before saying its code gives ``EXIT_INTERNAL`` with a message."""
    env = os.environ if env is None else env
    if not enabled(env):
        raise WarmUnavailable(f"{WARM_ENV} is off, or this system cannot pass file descriptors")
    folder = runtime_folder(env)
    name = fingerprint(env)
    if len(os.fsencode(folder / f"{name}.sock.{2**22}")) > _SOCKET_PATH_MAX:
        raise WarmUnavailable(f"{folder} is too deep for a socket's path")
    connection = _connect(folder / f"{name}.sock") or _start_worker(folder, name, env)
    with connection:
        request = json.dumps({"argv": list(argv), "cwd": os.getcwd(), "env": dict(env),
                              "argv0": sys.argv[0]}).encode("utf-8", "surrogateescape")
        try:
            socket.send_fds(connection, [_HEADER.pack(len(request))], [0, 1, 2])
            connection.sendall(request)
        except OSError as error:
            raise WarmUnavailable(f"the worker did not take the command: {error}") from error
        return _follow(connection, folder / f"{name}.log")


def _connect(path: Path) -> socket.socket | None:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.connect(str(path))
    except OSError:  # none listens there (missing, or a stale socket file)
        client.close()
        return None
    return client


def _start_worker(folder: Path, name: str, env: Mapping[str, str]) -> socket.socket:
    """Start a worker for ``name`` (one at a time: others wait on the lock, then find it) and
    connect to it."""
    import fcntl
    import subprocess

    path = folder / f"{name}.sock"
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = _connect(path)
        if found is not None:
            return found
        with open(folder / f"{name}.log", "ab") as log:
            worker = subprocess.Popen(
                [sys.executable, "-c", _BOOT, json.dumps(sys.path), str(path), str(idle_seconds(env))],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=dict(env),
                start_new_session=True, close_fds=True,
            )
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            found = _connect(path)
            if found is not None:
                return found
            if worker.poll() is not None:
                raise WarmUnavailable(f"the warm worker exited with {worker.returncode} while starting "
                                      f"(see {folder / f'{name}.log'})")
            time.sleep(0.02)
        raise WarmUnavailable(f"the warm worker did not listen within {STARTUP_S:.0f} s")


def _follow(connection: socket.socket, log: Path) -> int:
    """Read the worker's answers (the child's pid, then its exit code), passing signals on."""
    from equisa_core.errors import EXIT_INTERNAL

    child: list[int] = []
    pending: list[int] = []

    def pass_on(signum: int, _frame: object) -> None:
        if child:
            os.kill(child[0], signum)
        else:
            pending.append(signum)

    previous = {sig: signal.signal(sig, pass_on) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        with connection.makefile("rb") as answers:
            for line in answers:
                answer = json.loads(line)
                if "pid" in answer:
                    child.append(int(answer["pid"]))
                    for signum in pending:
                        os.kill(child[0], signum)
                elif "exit" in answer:
                    return int(answer["exit"])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print(f"equisa: the warm worker ended before the command did (see {log}; "
          f"{WARM_ENV}=0 runs commands in their own process)", file=sys.stderr)
    return EXIT_INTERNAL


# --- the worker ------------------------------------------------------------------------------


class _Request(NamedTuple):
    """A command a child runs: what the client sent, and its streams."""

    argv: list[str]
    argv0: str
    cwd: str
    env: dict[str, str]
    fds: list[int]


def boot(args: Sequence[str]) -> None:
    """The worker process's entry (``_BOOT``): ``serve``, and in a child, the command."""
    path, idle = Path(args[0]), float(args[1])
    request = serve(path, idle)
    if request is not None:  # a child: serve returned here after fork
        sys.exit(_run_command(request))  # ``run``'s exit handler ends it without the teardown


def serve(path: Path, idle_s: float) -> _Request | None:
    """Import the CLI and the flows, listen on ``path`` and fork a child per command until idle
    for ``idle_s`` seconds (or SIGTERM). Returns None in the worker when it ends, and the request
    in each child (whose stack then unwinds out of the loop, to run the command)."""
    import select

    _preload()
    worker = os.getpid()
    listener, mine = _listen(path, worker, idle_s)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    stopping: list[int] = []
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda signum, _frame: stopping.append(signum))
    children: dict[int, socket.socket] = {}
    last_used = time.monotonic()
    listening = True
    try:
        while listening or children:
            if listening and (stopping or _idle(children, last_used, idle_s)):
                listening = False  # no new command; those under way still get their codes sent
                _stop_listening(listener, path, mine)
                continue
            waited = None if children or not listening else max(0.0, last_used + idle_s - time.monotonic())
            watched: list[socket.socket | int] = [listener, wake_read] if listening else [wake_read]
            ready, _, _ = select.select(watched, [], [], waited)
            if wake_read in ready:
                _drain(wake_read)
            if _reap(children):
                last_used = time.monotonic()
            if listening and listener in ready and not stopping:
                served = len(children)
                request = _accept(listener, children)
                if request is not None:  # in the child
                    for fd in (wake_read, wake_write):
                        os.close(fd)
                    listener.close()
                    return request
                if len(children) > served:  # not a mere look (``running_workers``)
                    last_used = time.monotonic()
    finally:
        if os.getpid() == worker and listening:
            _stop_listening(listener, path, mine)
    return None


def _preload() -> None:
    """Import the CLI, the flows and every sub-command's module, as a command would; refuse to go on
    when the imports started threads (a fork would copy them half-way)."""
    import importlib
    import threading

    from cli.flow_runs import set_prefect_defaults

    set_prefect_defaults(verbose=False)  # as cli.main.main does before its imports
    for module in PRELOAD:
        importlib.import_module(module)
    from cli.main import build_parser

    build_parser()  # imports every sub-command's module
    if threading.active_count() > 1:
        raise SystemExit(f"warm worker: the imports started threads ({threading.enumerate()}); "
                         "forking would be unsafe")


def _listen(path: Path, worker: int, idle_s: float) -> tuple[socket.socket, int]:
    """A socket listening at ``path`` (and its record beside it), with the inode that marks it ours."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    staging = path.with_name(f"{path.name}.{worker}")
    listener.bind(str(staging))
    os.chmod(staging, 0o600)
    listener.listen(16)
    os.replace(staging, path)  # listening before it has its name: a client that finds it is served
    mine = path.stat().st_ino
    (path.with_suffix(".json")).write_text(json.dumps({"pid": worker, "started_at": time.time(),
                                                       "python": sys.executable, "idle_s": idle_s}))
    return listener, mine


def _idle(children: dict[int, socket.socket], last_used: float, idle_s: float) -> bool:
    """Whether the worker has served no command for ``idle_s`` seconds and has none under way."""
    return not children and time.monotonic() >= last_used + idle_s


def _stop_listening(listener: socket.socket, path: Path, inode: int) -> None:
    """Close the socket, and remove its file and record unless a newer worker has taken the name."""
    listener.close()
    try:
        if path.stat().st_ino == inode:
            path.unlink()
            path.with_suffix(".json").unlink(missing_ok=True)
    except OSError:  # already gone
        pass


def _drain(fd: int) -> None:
    while True:
        try:
            if not os.read(fd, 512):
                return
        except BlockingIOError:
            return


def _reap(children: dict[int, socket.socket]) -> bool:
    """Collect the children that ended and send each one's code to its client."""
    reaped = False
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        connection = children.pop(pid, None)
        if connection is None:
            continue
        code = os.waitstatus_to_exitcode(status)
        try:
            connection.sendall(json.dumps({"exit": code if code >= 0 else 128 - code}).encode() + b"\n")
        except OSError:  # the client is gone
            pass
        connection.close()
        reaped = True
    return reaped


def _accept(listener: socket.socket, children: dict[int, socket.socket]) -> _Request | None:
    """Take one command: check the client's user, read its request, fork. Returns the request in
    the child, None in the worker (a bad request is dropped with its connection)."""
    connection, _ = listener.accept()
    try:
        if hasattr(socket, "SO_PEERCRED"):
            _pid, uid, _gid = struct.unpack("3i", connection.getsockopt(
                socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
            if uid != os.getuid():
                raise ConnectionRefusedError(f"a client of user {uid}")
        connection.settimeout(10.0)
        header, fds, _flags, _address = socket.recv_fds(connection, _HEADER.size, 3)
        if not header and not fds:  # a look (``running_workers``): connected, then hung up
            connection.close()
            return None
        header += _read_exactly(connection, _HEADER.size - len(header))
        (length,) = _HEADER.unpack(header)
        body = json.loads(_read_exactly(connection, length).decode("utf-8", "surrogateescape"))
        request = _Request(argv=[str(a) for a in body["argv"]], argv0=str(body["argv0"]),
                           cwd=str(body["cwd"]), env={str(k): str(v) for k, v in body["env"].items()},
                           fds=list(fds))
        if len(request.fds) != 3:
            raise ConnectionError(f"expected 3 streams, got {len(request.fds)}")
        connection.settimeout(None)
    except (OSError, ValueError, KeyError, struct.error) as error:
        print(f"warm worker: request dropped: {error}", file=sys.stderr, flush=True)
        connection.close()
        return None
    pid = os.fork()
    if pid == 0:
        connection.close()
        for other in children.values():
            other.close()
        children.clear()
        return request
    for fd in request.fds:
        os.close(fd)
    children[pid] = connection
    try:
        connection.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    except OSError:  # the client is gone; the command still runs, as it would have
        pass
    return None


def _read_exactly(connection: socket.socket, size: int) -> bytes:
    chunks = []
    while size > 0:
        chunk = connection.recv(size)
        if not chunk:
            raise ConnectionError("the client hung up mid-request")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _run_command(request: _Request) -> int:
    """In a child: become the client's process (streams, environment, directory) and run the
    command as ``equisa`` would (``cli.main.run``, whose exit skips the interpreter's teardown)."""
    import tempfile

    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in enumerate(request.fds):
        os.dup2(fd, target)
        os.close(fd)
    sys.stdin = open(0, encoding=sys.stdin.encoding, errors=sys.stdin.errors, closefd=False)
    for number, name in ((1, "stdout"), (2, "stderr")):
        stream = getattr(sys, name)
        setattr(sys, name, open(number, "w", encoding=stream.encoding, errors=stream.errors,
                                buffering=1 if os.isatty(number) else -1, closefd=False))
    os.environ.clear()
    os.environ.update(request.env)
    os.chdir(request.cwd)
    tempfile.tempdir = None  # found again from the client's TMPDIR
    sys.argv = [request.argv0, *request.argv]
    from tasks.prefect_server.server import refresh_prefect_settings

    refresh_prefect_settings()  # the client's settings (and its working directory's files)
    from cli.main import run

    return run()


# --- seeing and stopping workers ---------------------------------------------------------------


def running_workers(env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The user's workers that answer: each one's record (pid, start time, interpreter, idle
    seconds) and socket."""
    env = os.environ if env is None else env
    try:
        folder = runtime_folder(env)
    except WarmUnavailable:
        return []
    found = []
    for record in sorted(folder.glob("*.json")):
        sock = record.with_suffix(".sock")
        connection = _connect(sock)
        if connection is None:
            continue
        connection.close()
        try:
            found.append({**json.loads(record.read_text()), "socket": str(sock)})
        except (OSError, ValueError):
            continue
    return found


def stop_workers(env: Mapping[str, str] | None = None) -> list[int]:
    """End the user's workers (SIGTERM): each stops taking commands at once, and exits when those
    under way have ended (the one serving this command too). The pids stopped."""
    stopped = []
    for worker in running_workers(env):
        try:
            os.kill(int(worker["pid"]), signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            continue
        stopped.append(int(worker["pid"]))
    from tasks.prefect_server.watchdog import group_alive  # a worker leads its own group (start_new_session)

    deadline = time.monotonic() + _STOP_WAIT_S
    for pid in stopped:
        while pid != os.getppid() and time.monotonic() < deadline and group_alive(pid):
            time.sleep(0.05)
    return stopped

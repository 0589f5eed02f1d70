"""The shared Prefect server's watchdog, and the files it shares with ``equisa`` commands.

``tasks/prefect_server/server.py`` starts ``python -m tasks.prefect_server.watchdog --folder F --idle S -- CMD``
as a detached session leader; the watchdog runs ``CMD`` (``prefect server start ...``) in its own
process group and stops it when the server has been idle for ``S`` seconds, or when the server
exits on its own. ``equisa server stop`` ends the whole group with one signal.

The folder ``F`` (``<data home>/prefect`` by default) holds::

    server.json     the state: the watchdog's pid (= the process group) and start marker, port, ...
                    its modification time is the last use: commands touch it at start and end
    server.lock     an exclusive ``fcntl`` lock: starting, reusing and stopping take turns on it
    server.log      the server's output (the last start only)
    clients/<pid>   one lease per running ``equisa`` command (the file holds the process's start
                    marker): the server is never idle while a live command holds a lease
    home/           the server's own ``PREFECT_HOME`` and database

Only the standard library is imported: the watchdog is a small long-lived process.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = [
    "STATE_FILE",
    "LOCK_FILE",
    "LOG_FILE",
    "CLIENTS_DIR",
    "LockTimeout",
    "locked",
    "process_marker",
    "is_same_process",
    "group_alive",
    "acquire_lease",
    "release_lease",
    "live_leases",
    "last_used",
    "touch",
    "main",
]

STATE_FILE = "server.json"
LOCK_FILE = "server.lock"
LOG_FILE = "server.log"
CLIENTS_DIR = "clients"
#: Seconds a stopping server gets after SIGTERM before the group is killed.
_STOP_GRACE_S = 15.0
#: The longest pause between two idle checks (shorter when the idle time is short).
_MAX_CHECK_INTERVAL_S = 15.0


class LockTimeout(Exception):
    """The state lock stayed taken for the whole wait (another command is starting a server)."""


@contextlib.contextmanager
def locked(folder: Path, timeout: float | None = None) -> Iterator[None]:
    """Hold the folder's exclusive lock; wait at most ``timeout`` seconds (None: forever, 0: once).

    ``fcntl.flock`` locks die with their process, so a killed command never leaves it taken.
    """
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if deadline is None else fcntl.LOCK_NB))
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockTimeout(f"{folder / LOCK_FILE} stayed locked for {timeout:g} s") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def process_marker(pid: int) -> str | None:
    """What tells this process apart from a later one with the same pid (its start time in clock
    ticks since boot, from ``/proc``), ``"alive"`` where there is no ``/proc``, None when dead."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        if Path("/proc/self/stat").exists():
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return "alive"
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()
    if fields and fields[0] == "Z":  # a zombie has ended; only its exit status waits to be read
        return None
    return fields[19] if len(fields) > 19 else "alive"


def is_same_process(pid: int, marker: str) -> bool:
    """Is process ``pid`` alive and the one whose ``process_marker`` was ``marker``?"""
    return process_marker(pid) == marker


def group_alive(pgid: int) -> bool:
    """Is any process of process group ``pgid`` left (zombies of our own children included)?"""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def acquire_lease(folder: Path, pid: int | None = None) -> Path:
    """Record that process ``pid`` (default: this one) uses the server; returns the lease file."""
    pid = os.getpid() if pid is None else pid
    clients = folder / CLIENTS_DIR
    clients.mkdir(parents=True, exist_ok=True)
    lease = clients / str(pid)
    lease.write_text(process_marker(pid) or "alive")
    return lease


def release_lease(folder: Path, pid: int | None = None) -> None:
    """Remove process ``pid``'s lease (default: this one's) and touch the state: the last use."""
    with contextlib.suppress(FileNotFoundError):
        (folder / CLIENTS_DIR / str(os.getpid() if pid is None else pid)).unlink()
    touch(folder)


def live_leases(folder: Path) -> list[int]:
    """The pids of the commands that hold a lease and still run; stale leases are removed."""
    alive = []
    for lease in sorted((folder / CLIENTS_DIR).glob("*")):
        try:
            pid, marker = int(lease.name), lease.read_text().strip()
        except (ValueError, OSError):
            continue
        if is_same_process(pid, marker):
            alive.append(pid)
        else:
            with contextlib.suppress(FileNotFoundError):
                lease.unlink()
    return alive


def last_used(folder: Path) -> float | None:
    """When a command last used the server (the state file's modification time), or None."""
    try:
        return (folder / STATE_FILE).stat().st_mtime
    except FileNotFoundError:
        return None


def touch(folder: Path) -> None:
    """Mark the server as used now (if there is one)."""
    with contextlib.suppress(FileNotFoundError):
        os.utime(folder / STATE_FILE)


def _names_me(folder: Path) -> bool:
    """Does the state file name this watchdog (and not a newer server's)?"""
    try:
        text = (folder / STATE_FILE).read_text()
    except FileNotFoundError:
        return False
    try:
        return json.loads(text).get("pid") == os.getpid()
    except ValueError:
        return False


def _forget_me(folder: Path) -> None:
    if _names_me(folder):
        with contextlib.suppress(FileNotFoundError):
            (folder / STATE_FILE).unlink()


def _end(child: subprocess.Popen) -> None:
    """Stop the server: SIGTERM, then SIGKILL after the grace period."""
    if child.poll() is None:
        child.terminate()
        try:
            child.wait(_STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _is_idle(folder: Path, idle_s: float) -> bool:
    used = last_used(folder)
    return used is not None and time.time() - used >= idle_s and not live_leases(folder)


def supervise(folder: Path, idle_s: float, command: Sequence[str]) -> int:
    """Run ``command`` until it exits, this process is signalled, or it has been idle ``idle_s``."""
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda *_: stop.set())
    child = subprocess.Popen(list(command), cwd=folder, stdin=subprocess.DEVNULL)
    exited = threading.Event()
    threading.Thread(target=lambda: (child.wait(), exited.set(), stop.set()), daemon=True).start()
    interval = min(max(idle_s / 4, 0.2), _MAX_CHECK_INTERVAL_S)
    while True:
        stop.wait(interval)
        if exited.is_set():  # the server ended on its own: a command starting it may hold the lock
            print(f"equisa watchdog: the server exited ({child.returncode})", file=sys.stderr, flush=True)
            with contextlib.suppress(LockTimeout), locked(folder, timeout=1):
                _forget_me(folder)
            return 1
        if stop.is_set():  # ``equisa server stop`` holds the lock and removes the state itself
            _end(child)
            with contextlib.suppress(LockTimeout), locked(folder, timeout=0):
                _forget_me(folder)
            return 0
        try:
            with locked(folder, timeout=0):
                if not _names_me(folder):  # replaced or stopped: end quietly
                    _end(child)
                    return 0
                if _is_idle(folder, idle_s):
                    print(f"equisa watchdog: idle for {idle_s:g} s, stopping the server",
                          file=sys.stderr, flush=True)
                    _forget_me(folder)
                    _end(child)  # still under the lock: no new server shares the database meanwhile
                    return 0
        except LockTimeout:  # a command is starting or reusing the server: not idle
            continue


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tasks.prefect_server.watchdog --folder F --idle S -- COMMAND...``"""
    parser = argparse.ArgumentParser(prog="python -m tasks.prefect_server.watchdog", description=__doc__)
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--idle", type=float, required=True, metavar="SECONDS")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no server command after --")
    return supervise(args.folder, args.idle, command)


if __name__ == "__main__":
    sys.exit(main())

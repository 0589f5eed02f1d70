"""``equisa server status|start|stop``: the shared local Prefect server that flow commands use.

Commands that run flows start it on first use when no Prefect API is configured (see
``tasks/prefect_server/server.py``); it stops itself after ``EQUISA_PREFECT_IDLE_S`` seconds unused.
These sub-commands show it, start it ahead of a series of runs, and end it; ``status`` and ``stop``
also show and end the user's warm workers (``cli/warm_worker.py``), which serve commands with
EQUISA and Prefect imported already.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from equisa_core.errors import EXIT_OK

__all__ = ["register"]


def register(commands: Any) -> None:
    """Add ``equisa server`` and its three actions."""
    parser = commands.add_parser(
        "server", help="show, start or stop the shared local Prefect server",
        description="Flow commands use a shared local Prefect server (its UI keeps the run history) "
        "when no PREFECT_API_URL is configured and EQUISA_PREFECT_SERVER is not 'ephemeral'; it "
        "starts on first use and stops itself after EQUISA_PREFECT_IDLE_S seconds unused (default "
        "1800).",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    status = actions.add_parser("status", help="whether it runs, its UI's address, when it was last used")
    status.add_argument("--json", type=Path, metavar="OUT", help="write the status as JSON here")
    actions.add_parser("start", help="start it now (or reuse it) and print its UI's address")
    actions.add_parser("stop", help="stop it (and its watchdog), and the warm workers")
    parser.set_defaults(handler=_server_command)


def _server_command(args: argparse.Namespace, console: Console) -> int:
    from cli.flow_runs import write_json
    from cli.warm_worker import running_workers, stop_workers
    from tasks.prefect_server.server import ensure_server, server_options, server_status, stop_server

    options = server_options()
    if args.action == "start":
        with console.status("starting the local Prefect server"):
            state, started = ensure_server(options.model_copy(update={"mode": "shared"}))
        console.print(f"Prefect UI: {state.url} ({'started' if started else 'already running'}, "
                      f"pid {state.pid}, stops after {state.idle_s:g} s unused)", highlight=False)
    elif args.action == "stop":
        stopped = stop_server(options)
        console.print("No shared Prefect server was running." if stopped is None else f"Stopped the shared "
                      f"Prefect server at {stopped.url} (pid {stopped.pid}).", highlight=False)
        workers = stop_workers()  # this command's own worker ends once the command has
        if workers:
            console.print(f"Stopped {len(workers)} warm worker(s) (pid {', '.join(map(str, workers))}).",
                          highlight=False)
    else:
        status = server_status(options)
        write_json(args.json, status.model_dump(mode="json"))
        for worker in running_workers():
            console.print(f"Warm worker: pid {worker['pid']} · {worker['python']} · exits after "
                          f"{worker['idle_s']:g} s unused · {worker['socket']}", highlight=False,
                          soft_wrap=True)
        if status.state is None or not status.running:
            console.print(f"No shared Prefect server is running (folder {status.folder}).", highlight=False)
            return EXIT_OK
        state, idle = status.state, time.time() - status.last_used if status.last_used else 0.0
        users = f"{len(status.clients)} command(s) using it" if status.clients else \
            f"idle {idle:.0f} s of {state.idle_s:g} s"
        health = "healthy" if status.healthy else "NOT answering"
        version = state.prefect_version
        console.print(f"Prefect UI: {state.url} · {health} · pid {state.pid} · Prefect {version} · {users} · "
                      f"log {status.log}", highlight=False, soft_wrap=True)
    return EXIT_OK

"""The command line's run plumbing: Prefect's settings and server for a command's flow runs, a flow
run from a parsed command line, and how a command's results leave it (printed, written as JSON).

``cli/main.py`` and ``cli/commands/`` parse, call these and the flows, and print.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from rich.console import Console

from cli.options import parameters_from
from equisa_core.errors import EquisaError
from equisa_core.report.failure import FailureReport, failure_report

if TYPE_CHECKING:
    from equisa_core.report.console import Printed

__all__ = ["PREFECT_DEFAULTS", "connect_prefect", "print_error", "run_flow", "set_prefect_defaults", "show",
           "write_json", "announce_written", "STDOUT", "write_failure_report", "record_failure"]

#: Prefect settings for a laptop run with no server configured; the user's own settings win.
#: (Flows run on the shared local server, see ``connect_prefect``; these serve the fallback.)
PREFECT_DEFAULTS = {
    # The embedded (ephemeral) server can take a while to start on a busy 2-core machine.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
}


def set_prefect_defaults(verbose: bool) -> None:
    """``PREFECT_DEFAULTS`` and the logging settings (``tasks.prefect_server.log_routing``: flow and task logs to
    the Prefect UI at INFO, Prefect's own logs on the terminal only with ``--verbose``) in the
    environment where the user set nothing. Failures reach the user as one line from EQUISA."""
    from tasks.prefect_server.log_routing import logging_environment

    for name, value in {**PREFECT_DEFAULTS, **logging_environment(verbose)}.items():
        os.environ.setdefault(name, value)


def print_error(error: BaseException, debug: bool, console: Console) -> None:
    """The one line a command's error ends with (``error_line``), or a bug's traceback under ``--debug``."""
    from equisa_core.report.console import error_line

    if debug and not isinstance(error, EquisaError | KeyboardInterrupt):
        traceback.print_exception(error)
    else:
        show(console, [error_line(error)])


def show(console: Console, printed: Iterable[Printed]) -> None:
    """Print what ``equisa_core.report.console`` made of a report; a table that needs more than the
    console's width (its names are never cut, see ``name_column``) is printed as wide as it needs."""
    for item in printed:
        with _wide_enough(console, item.content):
            console.print(item.content, highlight=item.highlight, soft_wrap=item.soft_wrap)


@contextmanager
def _wide_enough(console: Console, content: Any) -> Iterator[None]:
    """``console`` at least as wide as ``content``'s narrowest rendering, while the block runs."""
    from rich.measure import Measurement
    from rich.table import Table

    need = (Measurement.get(console, console.options.update_width(10_000), content).minimum
            if isinstance(content, Table) else 0)
    if need <= console.width:
        yield
        return
    width = console.width
    console.width = need
    try:
        yield
    finally:
        console.width = width


def connect_prefect(console: Console) -> None:
    """Before a command's first flow run: use the configured Prefect API, else the shared local
    server (started on first use, ``tasks/prefect_server/server.py``) and print its UI's address once,
    else Prefect's temporary server, with one warning line when the shared one could not start."""
    from cli.progress import status
    from equisa_core.report.console import duration
    from tasks.prefect_server.server import connect

    with status(console, "connecting to the local Prefect server"):
        connection = connect()
    if connection.problem:
        console.print(f"[yellow]warning:[/] {connection.problem}; this run uses a temporary Prefect "
                      "server", highlight=False, soft_wrap=True)
    elif connection.kind == "shared":
        started = f" (local server started; it stops after {duration(connection.idle_s)} unused)"
        console.print(f"Prefect UI: {connection.ui_url}{started if connection.started else ''}",
                      highlight=False, soft_wrap=True)


def run_flow(args: argparse.Namespace, console: Console, model: type[BaseModel], header: Callable[[str], str],
             label: str, flow: Callable[[Any], Any], **values: Any) -> Any:
    """Check the command line before Prefect starts (``tasks.run.preparation.preflight``), print ``header`` of
    the sandbox's isolation level; return the report of ``flow`` run on ``model``'s parameters."""
    from cli.progress import run_with_progress
    from equisa_core.common.sandbox_policy import weak_isolation_warning
    from tasks.run.preparation import preflight

    isolation = preflight(args.path, args.artifacts, getattr(args, "since", None), args.sandbox,
                          args.allow_weak_sandbox, getattr(model, "generated_code", None))
    params = model(**{**parameters_from(args, model), "path": str(args.path), **values})
    warning = weak_isolation_warning(isolation)
    if warning and not args.verbose:  # with --verbose the flow's own log line says it
        console.print(f"[yellow]warning:[/] {warning}", highlight=False, soft_wrap=True)
    console.print(header(isolation.level.value), highlight=False, soft_wrap=True)
    _connect_beside_trace(console, flow, params)
    return run_with_progress(console, label, flow, params)


#: The flows whose first sandboxed runs are the suite's trace, which needs no Prefect server.
TRACING_FLOWS = frozenset({"trace-suite", "localize", "repair"})


def _connect_beside_trace(console: Console, flow: Callable[[Any], Any], params: BaseModel) -> None:
    """``connect_prefect``, and for a flow that starts by tracing the suite, its shards' sandboxed
    runs started meanwhile (``tasks.run.early_trace``) for its ``run-tests`` tasks to adopt: the
    trace runs while the Prefect server starts (6.8 s of a 20 s first command, issue 48), not after.

    The server is waited for in a thread and the runs start in this one: the local sandbox's
    ``bwrap --die-with-parent`` ends a run when the *thread* that started it ends."""
    if getattr(flow, "name", None) not in TRACING_FLOWS:
        connect_prefect(console)
        return
    from tasks.run.early_trace import start_early_trace

    failed: list[BaseException] = []

    def connecting() -> None:
        try:
            connect_prefect(console)
        except BaseException as error:  # raised here, in the command's thread
            failed.append(error)

    waiting = threading.Thread(target=connecting, name="connect-prefect", daemon=True)
    waiting.start()
    start_early_trace(params)
    waiting.join()
    if failed:
        raise failed[0]


#: ``--json -``: the report goes to standard output (everything else the command prints goes to
#: standard error).
STDOUT = Path("-")
#: The ``--json`` targets this process has written (a failure's report never replaces a report).
_WRITTEN: set[Path] = set()


def write_failure_report(path: Path | None, failure: FailureReport) -> None:
    """Write ``failure`` to ``path`` (``--json``) unless the command wrote its report there."""
    if path and path not in _WRITTEN:
        write_json(path, failure)


def record_failure(command: str, args: argparse.Namespace, error: BaseException) -> FailureReport:
    """The failure report of the ``command`` that ``error`` stopped, the run recorded in the history
    (``tasks.storage.record.record_failed_run``) unless a flow recorded it already; never raises."""
    from tasks.storage.record import record_failed_run, recorded_run_id

    recorded = recorded_run_id(error)
    failure = failure_report(command, error)
    if recorded is not None:  # by the flow that failed (or the run that ended before the error)
        return failure.model_copy(update={"run_id": recorded})
    path = getattr(args, "path", None)
    if path is None:
        return failure
    return record_failed_run(command, error, path, getattr(args, "artifacts", None),
                             getattr(args, "db", None))


def write_json(path: Path | None, data: BaseModel | dict[str, Any], **dumps: Any) -> None:
    """Write ``data`` (a report, or plain data with ``json.dumps``' options ``dumps``) to ``path``
    (``--json``; ``-``: standard output), unless None."""
    if path:
        text = (data.model_dump_json(indent=2) if isinstance(data, BaseModel)
                else json.dumps(data, indent=2, **dumps))
        _WRITTEN.add(path)
        if path == STDOUT:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")


def announce_written(console: Console, path: Path | None, what: str = "Report") -> None:
    """Say where ``--json`` wrote ``what`` (nothing for none, or for standard output)."""
    if path and path != STDOUT:
        console.print(f"{what} written to {path}", highlight=False, soft_wrap=True)

"""``equisa batch FILE``: repair every repository of a repositories file, a few at a time."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from equisa_core.common.options import BatchOptions, default_of
from equisa_core.errors import EXIT_BATCH_FAILURES, EXIT_OK

__all__ = ["register", "add_runner_options", "apply_runner_options"]


def register(commands: Any) -> None:
    """Add ``equisa batch``."""
    parser = commands.add_parser(
        "batch", help="repair many repositories listed in a YAML file, N at a time, with a summary",
        description="Run the repair flow for every repository of a repositories file (folders or git "
        "URLs, refs, interpreters, test selections, LLM on/off, budgets), each as its own child flow "
        "run, at most --concurrency at once. One repository's failure never stops the others. "
        "A re-run over unchanged repositories resumes from cache.",
    )
    parser.add_argument("file", type=Path, help="the repositories file (YAML; see the README)")
    parser.add_argument("--concurrency", type=_positive_int, default=default_of(BatchOptions, "concurrency"),
                        metavar="N", help="repositories repaired at the same time (default %(default)s)")
    parser.add_argument("--reports", type=Path, metavar="DIR",
                        help="folder of the per-repository JSON reports (default: EQUISA_REPORTS, "
                             "else ~/.cache/equisa/reports)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the batch summary here")
    parser.add_argument("--no-cache", action="store_true", help="repair every repository again")
    add_runner_options(parser)
    parser.set_defaults(handler=_batch_command)


def add_runner_options(parser: argparse.ArgumentParser) -> None:
    """``--task-runner``, ``--task-runner-address`` and ``--workers`` (the fan-out's task runner)."""
    parser.add_argument("--task-runner", choices=("threads", "dask", "ray"),
                        help="where sandboxed test runs fan out: threads in this process (default), "
                             "dask (a local cluster, or --task-runner-address) or ray (needs prefect-ray)")
    parser.add_argument("--task-runner-address", metavar="ADDRESS",
                        help="Dask scheduler (tcp://host:8786) or Ray cluster (ray://host:10001)")
    parser.add_argument("--workers", type=_positive_int, metavar="N",
                        help="threads, or local Dask worker processes (default: the number of cores)")


def apply_runner_options(args: argparse.Namespace) -> None:
    """Put the runner options into the environment every flow run reads (``tasks.task_runners``)."""
    from tasks.task_runners import ADDRESS_ENV, RUNNER_ENV, WORKERS_ENV, runner_choice

    for name, value in ((RUNNER_ENV, args.task_runner), (ADDRESS_ENV, args.task_runner_address),
                        (WORKERS_ENV, args.workers)):
        if value is not None:
            os.environ[name] = str(value)
    runner_choice()  # bad values fail here, before Prefect starts


def _batch_command(args: argparse.Namespace, console: Console) -> int:
    from flows.batch import batch
    from tasks.batch_io import load_repositories
    from tasks.parameters import BatchParameters
    from tasks.task_runners import shared_cluster

    apply_runner_options(args)
    entries = load_repositories(args.file)  # a bad file fails here, with exit code 50
    _check_sandboxes(entries)
    console.print(f"Repairing {len(entries)} repositories from [bold]{args.file}[/], "
                  f"{args.concurrency} at a time", highlight=False)
    params = BatchParameters(repositories_file=str(args.file.resolve()), concurrency=args.concurrency,
                             reports_dir=str(args.reports.resolve()) if args.reports else None,
                             no_cache=args.no_cache)
    with shared_cluster() as choice:
        if choice.kind != "threads":
            console.print(f"Task runner: {choice.kind} at {choice.address or 'a new local cluster'}",
                          highlight=False)
        with console.status("repairing (watch each repository in the Prefect UI)"):
            summary = batch(params)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(summary.model_dump_json(indent=2) + "\n", encoding="utf-8")
    print_summary(summary, console)
    if args.json:
        console.print(f"Summary written to {args.json}")
    return EXIT_BATCH_FAILURES if summary.counts.get("error") else EXIT_OK


def _check_sandboxes(entries: Any) -> None:
    """Stop before any work (exit 14) when a repository would run generated code where this
    machine's sandbox cannot confine file writes and its entry does not accept that."""
    from equisa_core.common.sandbox_policy import require_confinement
    from tasks.run_tests import sandbox_isolation

    refused = [e.label for e in entries if e.sandbox == "local" and not e.allow_weak_sandbox]
    if refused:
        require_confinement(sandbox_isolation("local"), f"generated code for {', '.join(refused)}",
                            remedy="allow_weak_sandbox: true in an entry runs its repair anyway")


def print_summary(summary: Any, console: Console) -> None:
    """The batch summary as a table, with the reports folder."""
    table = Table(title=f"Batch: {len(summary.results)} repositories in {summary.seconds:.1f}s",
                  title_justify="left")
    for column in ("repository", "status", "target", "seconds", "note"):
        table.add_column(column, overflow="fold", no_wrap=column in ("status", "seconds"))
    colours = {"fixed": "green", "plausible_only": "yellow", "error": "red"}
    for r in summary.results:
        colour = colours.get(r.status, "white")
        table.add_row(r.name, f"[{colour}]{r.status}[/]", r.target or "", f"{r.seconds:.1f}",
                      r.error or "")
    console.print(table)
    if summary.reports_dir:
        console.print(f"Reports in {summary.reports_dir}", highlight=False, soft_wrap=True)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value

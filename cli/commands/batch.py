"""``equisa batch FILE``: repair every repository of a repositories file, a few at a time."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from cli.options import add_ci_outputs, add_model_options, parameters_from
from equisa_core.common.options import BatchOptions
from equisa_core.errors import EXIT_BATCH_FAILURES, EXIT_OK

__all__ = ["register"]


def register(commands: Any) -> None:
    """Add ``equisa batch``."""
    parser = commands.add_parser(
        "batch", help="repair many repositories listed in a YAML file, N at a time, with a summary",
        description="Run the repair flow for every repository of a repositories file (folders or git "
        "URLs, refs, interpreters, test selections, LLM on/off, budgets), each as its own child flow "
        "run, at most --concurrency at once. One repository's failure never stops the others. "
        "A re-run over unchanged repositories resumes from cache.",
    )
    parser.add_argument("file", type=Path, help="the repositories file (YAML; see docs/commands/batch.md)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the batch summary here")
    add_ci_outputs(parser, markdown_only=True)
    add_model_options(parser, BatchOptions)
    parser.add_argument("--task-runner", choices=("threads", "dask", "ray"),
                        help="where sandboxed test runs fan out: threads in this process (default), "
                             "dask (a local cluster, or --task-runner-address) or ray (needs prefect-ray)")
    parser.add_argument("--task-runner-address", metavar="ADDRESS",
                        help="Dask scheduler (tcp://host:8786) or Ray cluster (ray://host:10001)")
    parser.add_argument("--workers", type=_positive_int, metavar="N",
                        help="threads, or local Dask worker processes (default: the number of cores)")
    parser.set_defaults(handler=_batch_command, option_models=(BatchOptions,))


def _batch_command(args: argparse.Namespace, console: Console) -> int:
    from cli.flow_runs import show, write_json
    from cli.progress import status
    from equisa_core.operations.batch import with_model_overrides
    from equisa_core.report.console import batch_summary
    from flows.batch import batch
    from tasks.operations.batch_io import check_models, check_sandboxes, load_repositories
    from tasks.operations.task_runners import choose_runner, shared_cluster
    from tasks.publish.ci_outputs import write_batch_outputs
    from tasks.run.parameters import BatchParameters

    choose_runner(args.task_runner, args.task_runner_address, args.workers)
    notes: list[str] = []
    entries = load_repositories(args.file, notes)  # a bad file fails here, with exit code 50
    for note in notes:
        console.print(f"[yellow]warning:[/] {note}", highlight=False, soft_wrap=True)
    entries = with_model_overrides(entries, args.max_cost, args.price_input, args.price_output)
    check_sandboxes(entries)
    check_models(entries)
    where = (f"as runs of {args.deployment} on work pool {args.work_pool}" if args.work_pool
             else f"{args.concurrency} at a time")
    console.print(f"Repairing {len(entries)} repositories from [bold]{args.file}[/], {where}",
                  highlight=False)
    params = BatchParameters(**{**parameters_from(args, BatchParameters),
                                "repositories_file": str(args.file.resolve()),
                                "reports_dir": str(Path(args.reports).resolve()) if args.reports else None,
                                "max_cost_usd": args.max_cost, "price_input": args.price_input,
                                "price_output": args.price_output})
    with shared_cluster() as choice:
        if choice.kind != "threads":
            console.print(f"Task runner: {choice.kind} at {choice.address or 'a new local cluster'}",
                          highlight=False)
        with status(console, "repairing (watch each repository in the Prefect UI)"):
            summary = batch(params)
    write_json(args.json, summary)
    show(console, batch_summary(summary))
    if args.json:
        console.print(f"Summary written to {args.json}")
    write_batch_outputs(summary, console, markdown=args.markdown)
    return EXIT_BATCH_FAILURES if summary.counts.get("error") else EXIT_OK


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value

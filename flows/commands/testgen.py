"""``equisa testgen PATH --target FILE``: generate tests for one file (seed 001 loop, seed 000 §8)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from equisa_core.common.options import EndpointOptions, TestgenOptions, default_of
from equisa_core.errors import EXIT_OK

__all__ = ["register"]


def register(commands: Any) -> None:
    """Add the ``testgen`` sub-command."""
    from flows.cli import RUN_OPTIONS, _add_run_options, _count
    from flows.cli_options import add_model_options

    parser = commands.add_parser(
        "testgen",
        help="generate tests for one file: coverage and mutation feedback, reliability levels",
        description="Generate a test module for --target with the seed-001 loop (generator, static analysis, "
        "reliability, sandboxed coverage and mutation score, supervisor, router, enhancer). The tests go to "
        "--out (never into PATH); --json writes the report of every attempt.",
    )
    _add_run_options(parser)
    parser.add_argument(
        "--target", required=True, metavar="FILE", help="the file under test, relative to PATH"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--llm", dest="llm", action="store_true", default=None, help="use the model (needs an endpoint)"
    )
    mode.add_argument("--no-llm", dest="llm", action="store_false", help="deterministic mode only")
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="output folder (default: ./equisa-testgen, or ~/.cache/equisa/testgen/NAME when "
                        "that would be inside PATH)")
    loop = TestgenOptions
    parser.add_argument("--max-iterations", type=_iterations, default=default_of(loop, "max_iterations"),
                        metavar="N", help="attempts in all, attempt 0 included (1-20, default %(default)s)")
    parser.add_argument("--coverage-target", type=_percent, default=default_of(loop, "coverage_target"),
                        metavar="PCT", help=f"default {default_of(loop, 'coverage_target'):g}")
    parser.add_argument("--mutation-target", type=_percent, default=default_of(loop, "mutation_target"),
                        metavar="PCT", help=f"default {default_of(loop, 'mutation_target'):g}")
    parser.add_argument("--max-mutants", type=_count, default=default_of(loop, "max_mutants"), metavar="N",
                        help="mutants per measurement, 0 for none (default %(default)s)")
    add_model_options(parser, TestgenOptions)
    parser.set_defaults(handler=_testgen_command,
                        option_models=(*RUN_OPTIONS, EndpointOptions, TestgenOptions))


def _testgen_command(args: argparse.Namespace, console: Console) -> int:
    from equisa_core.operations.storage import resolve_artifacts
    from flows.cli import _print_stored, _run_with_progress, _write_json, check_sandbox
    from flows.cli_options import parameters_from
    from flows.testgen import TestgenParameters, testgen
    from tasks.prepare import check_repository

    check_repository(args.path)
    resolve_artifacts(args.artifacts)  # a malformed location fails now, not after the run
    out = args.out or _default_out(Path(args.path))
    params = TestgenParameters(**{**parameters_from(args, TestgenParameters), "path": str(args.path),
                                  "out": str(out.resolve())})
    level = check_sandbox(args, console, TestgenParameters.generated_code)
    console.print(f"Generating tests for [bold]{args.target}[/] in {args.path} (sandbox {args.sandbox}: "
                  f"{level})", highlight=False)
    report = _run_with_progress(console, "measuring the existing tests, then generating", testgen, params)
    if args.json:
        _write_json(args.json, report)
    _print(report, console)
    _print_stored(report, console)
    if args.json:
        console.print(f"Report written to {args.json}")
    return EXIT_OK


def _percent(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 100.0:
        raise argparse.ArgumentTypeError(f"must be a percentage between 0 and 100, got {text}")
    return value


def _iterations(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 20:
        raise argparse.ArgumentTypeError(f"must be between 1 and 20, got {value}")
    return value


def _default_out(path: Path) -> Path:
    """``./equisa-testgen``, unless that is inside PATH (the user's tree is written only when asked):
    then ``~/.cache/equisa/testgen/<PATH's name>``."""
    here = Path("equisa-testgen").resolve()
    if here.is_relative_to(path.resolve()):
        return Path.home() / ".cache" / "equisa" / "testgen" / path.resolve().name
    return here


def _print(report: Any, console: Console) -> None:
    base = report.baseline
    console.print(
        f"{report.mode} mode · framework {report.framework} · baseline coverage "
        f"{f'{base.percent:.2f}%' if base else '-'} · stopped: {report.stopped_because or '-'} · "
        f"cost ${report.cost_usd:.4f}",
        highlight=False,
    )
    table = Table(title="Attempts", title_justify="left")
    for column in (
        "#",
        "origin",
        "tests",
        "passed",
        "coverage",
        "with existing",
        "mutation",
        "pre",
        "post",
        "router",
    ):
        table.add_column(column, overflow="fold")
    for a in report.attempts:
        table.add_row(
            str(a.attempt),
            a.origin,
            str(len(a.tests)),
            str(a.tests_passed),
            f"{a.coverage.percent:.2f}%" if a.coverage else "-",
            f"{a.combined_coverage.percent:.2f}%" if a.combined_coverage else "-",
            f"{a.mutation_score:.2f}%" if a.mutation_score is not None else "-",
            a.pre_reliability.level,
            a.post_reliability.level,
            f"{a.decision} ({a.decision_reason})",
        )
    console.print(table)
    if report.output:
        console.print(f"Tests written to {report.output} (attempt {report.best_attempt})", highlight=False)
    else:
        console.print("No test module was kept.")
    for problem in report.problems:
        console.print(f"[yellow]note:[/] {problem}", highlight=False, soft_wrap=True)

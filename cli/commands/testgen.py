"""``equisa testgen PATH --target FILE``: generate tests for one file (seed 001 loop, seed 000 §8)."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path
from typing import Any

from rich.console import Console

from cli.options import RUN_OPTIONS, Option, add_run_options
from equisa_core.common.options import EndpointOptions, TestgenOptions
from equisa_core.errors import EXIT_OK, ConfigurationError
from tasks.sandbox.scratch import cache_folder

__all__ = ["register"]


def register(commands: Any) -> None:
    """Add the ``testgen`` sub-command."""
    parser = commands.add_parser(
        "testgen",
        help="generate tests for one file: coverage and mutation feedback, reliability levels",
        description="Generate a test module for --target with the seed-001 loop (generator, static analysis, "
        "reliability, sandboxed coverage and mutation score, supervisor, router, enhancer). The tests go to "
        "--out (never into PATH); --json writes the report of every attempt.",
    )
    parser.add_argument("--target", required=True, metavar="FILE",
                        help="the file under test, relative to PATH")
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="output folder (default: ./equisa-testgen, or ~/.cache/equisa/testgen/NAME when "
                        "that would be inside PATH)")
    llm = Option("use the model (needs an endpoint)", off_help="deterministic mode only")
    add_run_options(parser, EndpointOptions, TestgenOptions, spelling={"llm": llm})
    parser.set_defaults(handler=_testgen_command,
                        option_models=(*RUN_OPTIONS, EndpointOptions, TestgenOptions), uses_model=True)


def _testgen_command(args: argparse.Namespace, console: Console) -> int:
    from cli.flow_runs import announce_written, run_flow, show, write_json
    from equisa_core.report.console import stored, testgen_summary
    from flows.testgen import testgen
    from tasks.run.parameters import TestgenParameters

    if getattr(args, "crosshair", False) and importlib.util.find_spec("crosshair") is None:
        raise ConfigurationError("--crosshair needs crosshair-tool in EQUISA's environment (the 'crosshair' "
                                 "extra: uv sync --extra crosshair, or pip install 'equisa[crosshair]')")
    out = args.out or _default_out(Path(args.path))
    report = run_flow(args, console, TestgenParameters,
                      lambda level: f"Generating tests for [bold]{args.target}[/] in {args.path} "
                      f"(sandbox {args.sandbox}: {level})",
                      "measuring the existing tests, then generating", testgen, out=str(out.resolve()))
    write_json(args.json, report)
    show(console, [*testgen_summary(report), *stored(report)])
    announce_written(console, args.json)
    return EXIT_OK


def _default_out(path: Path) -> Path:
    """``./equisa-testgen``, unless that is inside PATH (the user's tree is written only when asked):
    then ``$XDG_CACHE_HOME/equisa/testgen/<PATH's name>`` (else under ``~/.cache``)."""
    here = Path("equisa-testgen").resolve()
    if here.is_relative_to(path.resolve()):
        return cache_folder("testgen") / path.resolve().name
    return here

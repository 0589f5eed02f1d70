"""``equisa doctor [PATH]``: whether this machine and the repository at PATH have what a run needs.

One line per check (``cli/machine_checks.py``): the interpreter and the environment a run would use, the
sandbox (local isolation, Docker), the Prefect server, the artifact store, the DuckDB history and the
model endpoint. Exit 0 when every needed part is present, 18 (``DoctorError``) when one is missing.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from equisa_core.errors import EXIT_OK, DoctorError

__all__ = ["register"]

#: How each status is shown.
_STATUS_MARKUP = {"ok": "[green]ok     [/]", "warning": "[yellow]warning[/]",
                  "missing": "[bold red]missing[/]"}


def register(commands: Any) -> None:
    """Add ``equisa doctor``."""
    from cli.machine_checks import DoctorOptions
    from cli.options import SPELLING, add_model_options
    from equisa_core.common.options import SandboxOptions, StorageOptions

    parser = commands.add_parser(
        "doctor", help="check the interpreter, sandbox, Prefect server, storage and model a run would use",
        description="Check, for this machine and the repository at PATH, what a run would use: the "
        "interpreter and its environment (not built here), the sandbox (local isolation, Docker), the "
        "Prefect server, the artifact store, the DuckDB history and the model endpoint (one one-token "
        "call, when configured). Exits 0 when every needed part is present, 18 when one is missing.",
    )
    parser.add_argument("path", type=Path, nargs="?", default=Path("."),
                        help="the repository's root folder (default: the current folder)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the checks as JSON here (-: standard "
                        "output)")
    spelling = {**SPELLING[SandboxOptions], **SPELLING[StorageOptions]}
    add_model_options(parser, DoctorOptions, spelling=spelling)
    parser.set_defaults(handler=_doctor_command, option_models=(DoctorOptions,))


def _doctor_command(args: argparse.Namespace, console: Console) -> int:
    from cli.flow_runs import write_json
    from cli.machine_checks import Check, DoctorOptions, diagnose
    from cli.options import parameters_from
    from tasks.run.preparation import check_repository

    repo = check_repository(Path(args.path))
    options = DoctorOptions(**parameters_from(args, DoctorOptions))
    console.print(f"Checking what a run of [bold]{escape(str(repo))}[/] would use", highlight=False)

    def show(check: Check) -> None:
        fix = f" [dim]→[/] {escape(check.fix)}" if check.fix else ""
        console.print(f"{_STATUS_MARKUP[check.status]}  {check.name:<11} {escape(check.found)}{fix}",
                      highlight=False, soft_wrap=True)

    report = diagnose(repo, options, on_check=show)
    write_json(args.json, report)
    if report.missing:
        raise DoctorError(f"{len(report.missing)} needed part(s) missing: {', '.join(report.missing)} (each "
                          "line marked missing says what to do)")
    warnings = sum(check.status == "warning" for check in report.checks)
    console.print("Every needed part is present" + (f" ({warnings} warning(s))." if warnings else "."),
                  highlight=False)
    return EXIT_OK

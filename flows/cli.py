"""The ``equisa`` command line: parses arguments, calls flows and tasks, prints results.

Exit codes: ``main`` turns the error that ends a command into its code (``exit_code_for``); the
codes and their meanings are those of ``equisa_core.errors`` (README.md's table is generated from it).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from equisa_core.common.options import (
    DiscoveryOptions,
    EndpointOptions,
    LocalizationOptions,
    SandboxOptions,
    StorageOptions,
    ValidationOptions,
    default_of,
)
from equisa_core.discovery.trace_report import TraceReport
from equisa_core.errors import (
    EXIT_OK,
    EquisaError,
    SuiteCrashedError,
    exit_code_for,
)
from equisa_core.operations.storage import resolve_artifacts
from flows.cli_options import add_model_options, given_options, parameters_from

__all__ = ["main", "build_parser", "check_sandbox", "connect_prefect"]

_TOP_NODES = 10
#: The option models of each command that runs the suite: its settings may also come from the
#: environment and the target's ``[tool.equisa]`` (``flows/settings.py``).
RUN_OPTIONS: tuple[type[BaseModel], ...] = (SandboxOptions, StorageOptions)
LOCALIZE_OPTIONS = (*RUN_OPTIONS, EndpointOptions, DiscoveryOptions, LocalizationOptions)
#: Prefect settings for a laptop run with no server configured; the user's own settings win.
#: (Flows run on the shared local server, see ``connect_prefect``; these serve the fallback.)
_PREFECT_DEFAULTS = {
    # The embedded (ephemeral) server can take a while to start on a busy 2-core machine.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    # Failures reach the user as one line from EQUISA; Prefect's own logs (with tracebacks)
    # stay in the Prefect UI unless --verbose.
    "PREFECT_LOGGING_LEVEL": "CRITICAL",
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every ``equisa`` sub-command."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        own_version = version("equisa")
    except PackageNotFoundError:  # running from a source tree that was never installed
        own_version = "unknown"
    parser = argparse.ArgumentParser(
        prog="equisa", description="Automated debugging and repair of Python code."
    )
    parser.add_argument("--version", action="version", version=f"equisa {own_version}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    parser.add_argument("--verbose", action="store_true", help="show Prefect's flow and task logs")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    trace = commands.add_parser(
        "trace", help="run a repository's suite under the probe and score every function",
        description="Run the suite once with the probe; write outcomes, coverage, edges, "
        "Tarantula/Ochiai/DStar scores and ambiguity groups.",
    )
    _add_run_options(trace)
    trace.set_defaults(handler=_trace_command, option_models=RUN_OPTIONS)

    localize = commands.add_parser(
        "localize", help="find the buggy function: trace, then Bayesian inspection until 0.9",
        description="Trace the suite, then inspect the most suspicious functions with inspection "
        "patches in sandboxes, updating confidences until one reaches 0.9 or the budget runs out.",
    )
    _add_run_options(localize)
    _add_localize_options(localize)
    add_model_options(localize, DiscoveryOptions, LocalizationOptions)
    localize.set_defaults(handler=_localize_command, option_models=LOCALIZE_OPTIONS)

    repair = commands.add_parser(
        "repair", help="find the bug and a verified patch: Discovery, Localization, Validation",
        description="Localize the bug, generate patch candidates and validate them in sandboxes "
        "(failing tests pass, no regressions, no overfitting). The user's tree is written only "
        "with --apply, after acceptance.",
    )
    _add_run_options(repair)
    _add_localize_options(repair)
    repair.add_argument("--diff", type=Path, metavar="OUT", help="write the accepted patch (a git diff) here")
    repair.add_argument("--apply", action="store_true",
                        help="write the accepted patch to PATH (refused on a dirty git tree)")
    repair.add_argument("--max-validations", type=_positive_int, metavar="N",
                        default=default_of(ValidationOptions, "max_validations"),
                        help="candidates validated in full before giving up (default %(default)s)")
    add_model_options(repair, DiscoveryOptions, LocalizationOptions, ValidationOptions)
    repair.set_defaults(handler=_repair_command, option_models=(*LOCALIZE_OPTIONS, ValidationOptions))
    _register_extra_commands(commands)
    return parser


def _register_extra_commands(commands: Any) -> None:
    """Add the sub-commands that live in ``flows/commands/`` (one module each).

    Each module defines ``register(commands)``, which adds its parser and sets ``handler`` (a
    function ``(args, console) -> exit code``); they are registered in module-name order.
    """
    import importlib
    import pkgutil

    import flows.commands as package

    for module_info in sorted(pkgutil.iter_modules(package.__path__), key=lambda info: info.name):
        if module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package.__name__}.{module_info.name}")
        module.register(commands)


def _add_localize_options(command: argparse.ArgumentParser) -> None:
    """Options of the commands that localize (``localize`` and ``repair``)."""
    mode = command.add_mutually_exclusive_group()
    mode.add_argument("--llm", dest="llm", action="store_true", default=None,
                      help="use the model at OPENAI_BASE_URL (default: when one is configured)")
    mode.add_argument("--no-llm", dest="llm", action="store_false", help="deterministic mode only")
    loop = LocalizationOptions
    command.add_argument("--max-iterations", type=_count, default=default_of(loop, "max_iterations"),
                         metavar="N",
                         help="inspections before giving up (default %(default)s; 0: rank after Discovery)")
    command.add_argument("--screen-top", type=_count, default=default_of(loop, "screen_top"), metavar="N",
                         help="in deterministic mode, try the mutants of the N most suspicious functions "
                              "together before inspecting (default %(default)s; 0: off)")
    command.add_argument("--screen-budget", type=_positive_float, default=default_of(loop, "screen_budget_s"),
                         metavar="SECONDS",
                         help="estimated test time the screening may spend: mutants x failing tests' "
                              "durations, summed over the screened functions; also the wall-clock limit "
                              "of each screening process's mutant rounds "
                              f"(default {_g(loop, 'screen_budget_s')})")
    command.add_argument("--inspection-batch", type=_positive_int, metavar="N",
                         default=default_of(loop, "inspection_batch"),
                         help="in deterministic mode, run the next N inspections together in one sandbox "
                              "process (default %(default)s; 1: one process per inspection)")
    command.add_argument("--inspection-budget", type=_positive_float, metavar="SECONDS",
                         default=default_of(loop, "inspection_budget_s"),
                         help="in deterministic mode, the wall-clock limit of each inspection batch's "
                              f"mutant rounds; the mutants left are not run (default "
                              f"{_g(loop, 'inspection_budget_s')})")
    command.add_argument("--likelihoods", choices=("fitted", "seed"), default=default_of(loop, "likelihoods"),
                         help="in deterministic mode, the likelihoods evidence counts with: fitted on the "
                              "real-bug benchmark, or the hand-set seed table (default %(default)s)")
    command.add_argument("--min-expected-shift", type=_probability, metavar="P",
                         default=default_of(loop, "min_expected_shift"),
                         help="in deterministic mode, run a screening or inspection only when "
                         "it is expected to move its function's confidence by P, and stop when none is "
                         f"(default {_g(loop, 'min_expected_shift')}; 0: off)")
    command.add_argument("--since", metavar="REF",
                         help="a git ref: functions changed since it (committed or not) count as more "
                              "suspicious, as in a CI run on a pull request (default: no such signal)")
    found = DiscoveryOptions
    command.add_argument("--discovery", dest="discovery", action=argparse.BooleanOptionalAction,
                         default=default_of(found, "discovery"),
                         help="generate tests that split ambiguity groups "
                              f"(default: {_on(found, 'discovery')})")
    command.add_argument("--discovery-top", type=_count, metavar="N",
                         default=default_of(found, "discovery_top"),
                         help="split only the ambiguity groups that hold one of the prior's N best "
                              "functions (default %(default)s; 0: every group)")
    command.add_argument("--testgen", dest="testgen", action=argparse.BooleanOptionalAction,
                         default=default_of(found, "testgen"), help="Discovery also asks the test-generation "
                         "agent for tests of each group (deterministic, one attempt; default: "
                         f"{_on(found, 'testgen')})")
    command.add_argument("--max-generated-tests", type=_count, metavar="N",
                         default=default_of(found, "discovery_max_tests"),
                         help="generated tests Discovery may keep (default %(default)s)")


def _add_run_options(command: argparse.ArgumentParser) -> None:
    """Options every command that runs the suite shares."""
    trace = command
    trace.add_argument("path", type=Path, help="the repository's root folder")
    trace.add_argument("--python", metavar="INTERPRETER",
                       help="interpreter that runs the suite (default: the repository's .venv, "
                            "else EQUISA's own)")
    trace.add_argument("--tests", nargs="+", default=[], metavar="TEST",
                       help="pytest node ids or paths to run (default: the whole suite)")
    trace.add_argument("--json", type=Path, metavar="OUT", help="write the full report here")
    trace.add_argument("--sandbox", choices=("local", "docker", "none"),
                       default=default_of(SandboxOptions, "sandbox"),
                       help="where tests run: local (the strongest isolation here: bubblewrap, else "
                            "util-linux namespaces), docker, or none (a plain subprocess; generated "
                            "code runs unconfined) (default %(default)s)")
    trace.add_argument("--allow-weak-sandbox", action="store_true",
                       help="run generated tests, inspection patches and fixes even where the local "
                            "sandbox cannot confine file writes (default: refuse, exit 14)")
    trace.add_argument("--docker-image", metavar="IMAGE", help="image for --sandbox docker")
    trace.add_argument("--shards", type=_positive_int, metavar="N",
                       help="parallel shards (default: the number of cores)")
    trace.add_argument("--no-cache", action="store_true", help="run again even if cached")
    trace.add_argument("--timeout", type=float, default=default_of(SandboxOptions, "wall_clock_s"),
                       metavar="SECONDS",
                       help=f"wall-clock limit per shard (default {_g(SandboxOptions, 'wall_clock_s')})")
    trace.add_argument("--test-timeout", type=float, default=default_of(SandboxOptions, "test_timeout_s"),
                       metavar="SECONDS",
                       help=f"limit per test (default {_g(SandboxOptions, 'test_timeout_s')})")
    add_storage_options(trace)


def add_storage_options(command: argparse.ArgumentParser) -> None:
    """``--artifacts`` and ``--db``: where runs are recorded (every command has them)."""
    command.add_argument("--artifacts", metavar="FOLDER|s3://BUCKET/PREFIX",
                         help="artifact store (default: EQUISA_ARTIFACTS, else "
                              "~/.local/share/equisa/artifacts)")
    command.add_argument("--db", metavar="FILE",
                         help="DuckDB history (default: EQUISA_DB, else "
                              "~/.local/share/equisa/history.duckdb)")


def check_sandbox(args: argparse.Namespace, console: Console, generated_code: str | None) -> str:
    """Fail fast, before Prefect starts, when the command would run generated code unconfined;
    print the one warning when files are not confined. Returns the isolation level's name."""
    from equisa_core.common.sandbox_policy import require_confinement, weak_isolation_warning
    from tasks.run_tests import sandbox_isolation

    isolation = sandbox_isolation(args.sandbox, args.allow_weak_sandbox)
    if generated_code:
        require_confinement(isolation, generated_code)
    warning = weak_isolation_warning(isolation)
    if warning and not args.verbose:  # with --verbose the flow's own log line says it
        console.print(f"[yellow]warning:[/] {warning}", highlight=False, soft_wrap=True)
    return isolation.level.value


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``equisa`` console script; returns the process exit code."""
    args = build_parser().parse_args(argv)
    console = Console(stderr=True)
    for name, value in _PREFECT_DEFAULTS.items():
        if not (args.verbose and name == "PREFECT_LOGGING_LEVEL"):
            os.environ.setdefault(name, value)
    try:
        if getattr(args, "option_models", None):
            from flows.settings import apply_settings

            apply_settings(args, given_options(build_parser(), argv))
        return args.handler(args, console)
    except (Exception, KeyboardInterrupt) as error:
        _print_error(error, args.debug, console)
        return exit_code_for(error)


def _print_error(error: BaseException, debug: bool, console: Console) -> None:
    """The one line a command's error ends with: its message for an ``EquisaError``, else (a bug)
    its type and text, or the whole traceback under ``--debug``."""
    if isinstance(error, EquisaError):
        console.print(f"[bold red]equisa:[/] {escape(error.message)}", highlight=False, soft_wrap=True)
    elif isinstance(error, KeyboardInterrupt):
        console.print("[bold red]equisa:[/] interrupted")
    elif debug:
        traceback.print_exception(error)
    else:
        console.print(
            f"[bold red]equisa: internal error:[/] {type(error).__name__}: {error} "
            "(run with --debug for the traceback)", highlight=False, soft_wrap=True,
        )


def connect_prefect(console: Console) -> None:
    """Before a command's first flow run: use the configured Prefect API, else the shared local
    server (started on first use, ``tasks/prefect_server.py``) and print its UI's address once,
    else Prefect's temporary server, with one warning line when the shared one could not start."""
    from tasks.prefect_server import connect

    with console.status("connecting to the local Prefect server"):
        connection = connect()
    if connection.problem:
        console.print(f"[yellow]warning:[/] {connection.problem}; this run uses a temporary Prefect "
                      "server", highlight=False, soft_wrap=True)
    elif connection.kind == "shared":
        started = f" (local server started; it stops after {_duration(connection.idle_s)} unused)"
        console.print(f"Prefect UI: {connection.ui_url}{started if connection.started else ''}",
                      highlight=False, soft_wrap=True)


def _duration(seconds: float) -> str:
    """``1800`` -> ``30 min``, ``90`` -> ``90 s``, ``7200`` -> ``2 h``."""
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    if seconds >= 120 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


def _trace_command(args: argparse.Namespace, console: Console) -> int:
    from flows.trace import trace_suite
    from tasks.parameters import TraceParameters
    from tasks.prepare import check_repository

    check_repository(args.path)  # fail fast, before Prefect starts
    resolve_artifacts(args.artifacts)
    level = check_sandbox(args, console, TraceParameters.generated_code)

    params = TraceParameters(**{**parameters_from(args, TraceParameters), "path": str(args.path)})
    console.print(f"Tracing [bold]{args.path}[/] in the {args.sandbox} sandbox ({level})", highlight=False)
    report = _run_with_progress(console, "starting (snapshot, interpreter, Prefect)", trace_suite, params)
    if args.json:
        _write_json(args.json, report)
    _print_report(report, console)
    _print_stored(report, console)
    if args.json:
        console.print(f"Report written to {args.json}")
    if report.crashed:
        raise SuiteCrashedError(
            f"the suite's interpreter died ({report.crash_reason}) while running "
            f"{report.crashed_in or 'the suite'}; the {report.summary.total} outcomes recorded "
            "before are kept"
        )
    return EXIT_OK


def _localize_arguments(args: argparse.Namespace, model: type[BaseModel]) -> dict[str, Any]:
    """The parameters of ``localize`` or ``repair`` (``model``), from the command line, checked."""
    from tasks.prepare import check_repository

    check_repository(args.path)
    resolve_artifacts(args.artifacts)  # a malformed location fails now, not after the run
    if args.since:
        from tasks.git_changes import changed_lines

        changed_lines(args.path, args.since)  # an unknown ref fails now (exit 3), not after the trace
    return {**parameters_from(args, model), "path": str(args.path)}


def _localize_command(args: argparse.Namespace, console: Console) -> int:
    from flows.localize import localize
    from tasks.parameters import LocalizeParameters

    params = LocalizeParameters(**_localize_arguments(args, LocalizeParameters))
    level = check_sandbox(args, console, LocalizeParameters.generated_code)
    console.print(f"Localizing the bug in [bold]{args.path}[/] (sandbox {args.sandbox}: {level})",
                  highlight=False)
    report = _run_with_progress(console, "tracing the suite, then inspecting candidates", localize, params)
    if args.json:
        _write_json(args.json, report)
    _print_localization(report, console)
    _print_stored(report, console)
    if args.json:
        console.print(f"Report written to {args.json}")
    return EXIT_OK


def _print_localization(report: Any, console: Console) -> None:
    verdict = "converged" if report.converged else "not converged"
    console.print(
        f"{report.mode} mode · {verdict} ({report.stopped_because}) · {len(report.inspections)} "
        f"inspections · {report.tests.failed} failing, {report.tests.passed} passing, "
        f"{report.tests.flaky} flaky tests", highlight=False,
    )
    if report.discovery is not None and not report.discovery.enabled:
        console.print("Discovery: off, no tests generated", highlight=False)
    elif report.discovery is not None:
        found = report.discovery
        testgen = ""
        if found.testgen:
            proposed = sum(r.testgen_proposed for r in found.rounds)
            testgen = f" ({sum(r.testgen_kept for r in found.rounds)} of {proposed} testgen tests)"
        console.print(
            f"Discovery: {found.generated} generated tests kept{testgen}; ambiguity groups "
            f"{list(found.group_sizes_before) or 'none'} -> {list(found.group_sizes_after) or 'none'} "
            f"({found.stopped_because})", highlight=False,
        )
    table = Table(title="Ranking (top 10)", title_justify="left")
    table.add_column("function", overflow="fold", ratio=1)
    for column in ("line", "suspiciousness", "confidence"):
        table.add_column(column, justify="right", no_wrap=True)
    for node in report.ranking[:_TOP_NODES]:
        table.add_row(node.fqn, str(node.start_line), f"{node.suspiciousness:.3f}", f"{node.confidence:.3f}")
    console.print(table)
    for problem in report.problems:
        console.print(f"[yellow]note:[/] {problem}", highlight=False, soft_wrap=True)


def _repair_command(args: argparse.Namespace, console: Console) -> int:
    from flows.repair import repair
    from tasks.parameters import RepairParameters

    params = RepairParameters(**_localize_arguments(args, RepairParameters))
    level = check_sandbox(args, console, RepairParameters.generated_code)
    console.print(f"Repairing [bold]{args.path}[/] (sandbox {args.sandbox}: {level})", highlight=False)
    report = _run_with_progress(console, "localizing the bug, then validating patches", repair, params)
    if report.localization is not None:
        _print_localization(report.localization, console)
    if args.apply and report.status == "fixed":
        report = report.model_copy(update={"applied": _apply(args.path, report)})
    if args.json:
        _write_json(args.json, report)
    if args.diff and report.diff:
        args.diff.parent.mkdir(parents=True, exist_ok=True)
        args.diff.write_text(report.diff, encoding="utf-8")
    _print_repair(report, console)
    _print_stored(report, console)
    if args.apply and report.status != "fixed":
        console.print("Nothing applied: no patch was accepted.")
    if args.json:
        console.print(f"Report written to {args.json}")
    if args.diff and report.diff:
        console.print(f"Patch written to {args.diff} (apply with: git -C {args.path} apply "
                      f"{args.diff.resolve()})", highlight=False, soft_wrap=True)
    return report.exit_code


def _apply(path: Path, report: Any) -> bool:
    """Write the accepted patch to the user's tree (``--apply``); raises when refused."""
    from tasks.apply import apply_patch

    apply_patch(path, report.diff, report.patched_files, report.original_files)
    return True


def _print_repair(report: Any, console: Console) -> None:
    colour = {"fixed": "green", "plausible_only": "yellow"}.get(report.status, "red")
    console.print(
        f"[bold {colour}]{report.status}[/] · target {report.target or '-'} · "
        f"{report.candidates_tried} candidates tried · {len(report.evaluations)} validated"
        + (" · applied" if report.applied else ""), highlight=False,
    )
    if report.validation:
        table = Table(title="Validation of the patch", title_justify="left")
        table.add_column("check", no_wrap=True)
        table.add_column("result", overflow="fold", ratio=1)
        for check, result in report.validation.items():
            table.add_row(check, result)
        console.print(table)
    if report.diff:
        from rich.syntax import Syntax

        console.print(Syntax(report.diff, "diff", theme="ansi_dark", background_color="default"))
    for problem in report.problems:
        if report.localization is None or problem not in report.localization.problems:
            console.print(f"[yellow]note:[/] {problem}", highlight=False, soft_wrap=True)


def _print_stored(report: Any, console: Console) -> None:
    """Where the run was recorded (its HTML report), and the storage notes of a trace run."""
    if isinstance(report, TraceReport):
        for problem in report.problems:
            console.print(f"[yellow]note:[/] {problem}", highlight=False, soft_wrap=True)
    if report.artifacts:
        console.print(f"Run {report.run_id} recorded: {report.artifacts}/report.html", highlight=False,
                      soft_wrap=True)


def _run_with_progress(console: Console, label: str, run: Callable[[Any], Any], params: Any) -> Any:
    """Run a flow while a spinner counts the tests the probe reports, in every sandbox."""
    from tasks.run_tests import register_progress, unregister_progress

    connect_prefect(console)
    counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        job = progress.add_task(label, total=None)

        def on_record(record: dict) -> None:
            if record.get("kind") == "stage":  # a flow says what it is doing (report_progress)
                progress.update(job, description=str(record.get("text", "")))
                return
            if record.get("kind") == "note":  # a line that stays above the spinner
                progress.console.print(str(record.get("text", "")), highlight=False, soft_wrap=True)
                return
            if record.get("kind") != "test":
                return
            counts[record["outcome"]] = counts.get(record["outcome"], 0) + 1
            done = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
            progress.update(job, description=f"running tests: {done}")

        key = uuid.uuid4().hex
        register_progress(key, on_record)
        try:
            with _without_heartbeats():
                return run(params.model_copy(update={"progress_key": key}))
        finally:
            unregister_progress(key)


@contextmanager
def _without_heartbeats() -> Iterator[None]:
    """A one-shot command's flow runs send no heartbeats, unless the user configured them.

    Prefect 3.9 sends a flow-run heartbeat every 180 s from a thread that sleeps in one-second
    steps, and joins it when the flow run ends: each flow run of a command ended up to a second
    late (measured: 1.2 s of a 3.9 s ``localize``). Heartbeats let a server mark a crashed
    worker's runs; a one-shot command is in the user's foreground, and its process's exit says it
    all. Deployments served by workers keep Prefect's default.
    """
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, get_current_settings, temporary_settings

    # Set by the environment or a profile: the user's choice.
    if "heartbeat_frequency" in get_current_settings().flows.model_fields_set:
        yield
        return

    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield


def _write_json(path: Path, report: BaseModel) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")


def _g(model: type[BaseModel], field: str) -> str:
    """The default of ``model``'s ``field`` as a help line shows it (``300``, ``0.05``)."""
    return f"{default_of(model, field):g}"


def _on(model: type[BaseModel], field: str) -> str:
    """A switch's default as a help line shows it: ``on`` or ``off``."""
    return "on" if default_of(model, field) else "off"


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _probability(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _print_report(report: TraceReport, console: Console) -> None:
    s = report.summary
    console.print(
        f"{s.total} tests: {s.passed} passed, {s.failed} failed, {s.error} errors, "
        f"{s.skipped} skipped{f' ({len(report.flaky)} flaky)' if report.flaky else ''} · "
        f"{len(report.nodes)} functions · {len(report.edges)} edges · "
        f"tracer {report.backend} ({report.backend_reason})", highlight=False,
    )
    table = Table(title=f"Most suspicious functions (top {_TOP_NODES})", title_justify="left")
    table.add_column("function", overflow="fold", ratio=1)
    for column in ("line", "fail", "pass", "tarantula", "ochiai", "dstar"):
        table.add_column(column, justify="right", no_wrap=True)
    for node in report.nodes[:_TOP_NODES]:
        table.add_row(
            node.fqn, str(node.start_line), str(node.failed_s), str(node.passed_s),
            f"{node.tarantula:.3f}", f"{node.ochiai:.3f}", f"{node.dstar:.3f}",
        )
    console.print(table)
    if report.ambiguity_groups:
        largest = report.ambiguity_groups[0]
        console.print(
            f"{len(report.ambiguity_groups)} ambiguity groups; largest has {len(largest)} "
            f"functions: {', '.join(largest[:5])}{' …' if len(largest) > 5 else ''}",
            highlight=False,
        )


if __name__ == "__main__":
    sys.exit(main())

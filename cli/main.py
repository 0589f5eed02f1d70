"""The ``equisa`` command line: parses arguments, calls flows and tasks, prints results.

Exit codes: ``main`` turns the error that ends a command into its code (``exit_code_for``); the
codes and their meanings are those of ``equisa_core.errors`` (docs/exit-codes.md's table is generated
from it).
Options come from the option models (``cli/options.py``), what is printed from
``equisa_core/report/console.py``; running a flow, printing and writing JSON are ``cli/flow_runs.py``'s.
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from cli.flow_runs import (
    announce_written,
    print_error,
    record_failure,
    run_flow,
    set_prefect_defaults,
    show,
    write_failure_report,
    write_json,
)
from cli.options import (
    DEPRECATIONS,
    RUN_OPTIONS,
    add_ci_outputs,
    add_run_options,
    given_options,
    parameters_from,
)
from equisa_core.common import options
from equisa_core.errors import EXIT_OK, SuiteCrashedError, exit_code_for

if TYPE_CHECKING:
    from equisa_core.repair.report import RepairReport

__all__ = ["main", "run", "build_parser"]

LOCALIZE_OPTIONS = (*RUN_OPTIONS, options.EndpointOptions, options.DiscoveryOptions,
                    options.LocalizationOptions)


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
    add_run_options(trace)
    trace.set_defaults(handler=_trace_command, option_models=RUN_OPTIONS)

    localize = commands.add_parser(
        "localize", help="find the buggy function: trace, then Bayesian inspection until 0.9",
        description="Trace the suite, then inspect the most suspicious functions with inspection "
        "patches in sandboxes, updating confidences until one reaches 0.9 or the budget runs out. "
        "Exits 0 with a ranking, converged or not (the report's converged and stopped_because say "
        "which); --fail-unless-converged makes not converged 25 (26: the time budget stopped it).",
    )
    add_run_options(localize, *LOCALIZE_OPTIONS[2:], options.ConvergenceOptions)
    add_ci_outputs(localize)
    localize.set_defaults(handler=_localize_command, uses_model=True,
                          option_models=(*LOCALIZE_OPTIONS, options.ConvergenceOptions))

    repair = commands.add_parser(
        "repair", help="find the bug and a verified patch: Discovery, Localization, Validation",
        description="Localize the bug, generate patch candidates and validate them in sandboxes "
        "(failing tests pass, no regressions, no overfitting). The user's tree is written only "
        "with --apply, after acceptance.",
    )
    repair.add_argument("--diff", type=Path, metavar="OUT", help="write the accepted patch (a git diff) here")
    repair.add_argument("--apply", action="store_true",
                        help="write the accepted patch to PATH (refused on a dirty git tree)")
    # A repair's own localization defaults first: the first model that has a field gives its option.
    add_run_options(repair, options.RepairLocalizationOptions, *LOCALIZE_OPTIONS[2:],
                    options.ValidationOptions, options.ForgeOptions)
    add_ci_outputs(repair)
    # ... and last among the settings' models, where the last model that has a field gives its type.
    repair.set_defaults(handler=_repair_command, uses_model=True, option_models=(
        *LOCALIZE_OPTIONS, options.RepairLocalizationOptions, options.ValidationOptions))
    _register_extra_commands(commands)
    return parser


def _register_extra_commands(commands: Any) -> None:
    """Add the sub-commands that live in ``cli/commands/`` (one module each, in name order).

    Each module defines ``register(commands)``, which adds its parser and sets ``handler`` (a
    function ``(args, console) -> exit code``).
    """
    import importlib
    import pkgutil

    import cli.commands as package

    for module_info in sorted(pkgutil.iter_modules(package.__path__), key=lambda info: info.name):
        if not module_info.name.startswith("_"):
            importlib.import_module(f"{package.__name__}.{module_info.name}").register(commands)


#: The exit code ``run`` hands to ``_exit_without_teardown`` (None: exit the usual way).
_EXIT_CODE: list[int] = []
#: The commands whose --json holds a report (when one stops with an error, a FailureReport) and whose
#: every run is recorded in the history.
REPORTING_COMMANDS = frozenset({"trace", "localize", "repair", "testgen"})


def run() -> int:
    """The ``equisa`` console script: ``main``, then an exit that skips the interpreter's teardown.

    Tearing down a process that has imported Prefect (clearing some 1,200 modules and their
    objects) takes about half a second after the command's work is done, and nothing in it is the
    user's. Every exit handler still runs: ``_exit_without_teardown`` is registered before any
    other, so it runs after them all (Prefect's log and event drains, logging's flush, temporary
    folders' removal), flushes the output and ends the process with ``main``'s code; the same for
    argparse's exit (``--help``, ``--version``, a usage error), with its code."""
    atexit.register(_exit_without_teardown)
    try:
        code = main()
    except SystemExit as ended:
        code = _code_of(ended)
    _EXIT_CODE.append(code)
    return code


def _code_of(ended: SystemExit) -> int:
    """The process exit code ``SystemExit`` stands for (a message is printed, and means 1)."""
    if ended.code is None or isinstance(ended.code, int):
        return ended.code or 0
    print(ended.code, file=sys.stderr)
    return 1


def _exit_without_teardown() -> None:
    if not _EXIT_CODE:  # main did not return (an exception is on its way out): the usual exit
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed, or a broken pipe: nothing more can be written
            pass
    os._exit(_EXIT_CODE[-1])


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``equisa`` console script; returns the process exit code."""
    args = build_parser().parse_args(argv)
    console = Console(stderr=True)
    set_prefect_defaults(args.verbose)
    _start_interpreter_check(args)
    _warn(console, getattr(args, DEPRECATIONS, None) or [])
    try:
        if getattr(args, "option_models", None):
            from cli.settings import apply_settings

            _warn(console, apply_settings(args, given_options(build_parser(), argv)))
        if getattr(args, "uses_model", False):  # before any work: the model must be usable as configured
            from tasks.llm import choose_llm_mode

            choose_llm_mode(options.EndpointOptions(**parameters_from(args, options.EndpointOptions)))
        return args.handler(args, console)
    except (Exception, KeyboardInterrupt) as error:
        print_error(error, args.debug, console)
        if args.command in REPORTING_COMMANDS:  # every run is recorded, whatever its outcome
            failure = record_failure(args.command, args, error)
            write_failure_report(getattr(args, "json", None), failure)
            if hasattr(args, "sarif"):  # localize and repair: CI still finds its files
                _write_failure_ci_outputs(args, failure, console)
            if failure.artifacts:
                from equisa_core.report.console import stored

                show(console, stored(failure))
        return exit_code_for(error)


def _warn(console: Console, notes: Sequence[str]) -> None:
    """Print each warning (an old spelling of an option or a setting, say) on standard error."""
    for note in notes:
        console.print(f"[yellow]warning:[/] {note}", highlight=False, soft_wrap=True)


def _start_interpreter_check(args: argparse.Namespace) -> None:
    """For a command that runs a repository's suite on this machine, start checking its interpreter
    now, while the command's flow is imported (``tasks.run.interpreter.start_check``)."""
    path = getattr(args, "path", None)
    if path is not None and hasattr(args, "python") and getattr(args, "sandbox", "local") != "docker":
        from tasks.run.interpreter import PROVISION, start_check

        start_check(Path(path).resolve(), args.python, getattr(args, "provision", PROVISION))


def _trace_command(args: argparse.Namespace, console: Console) -> int:
    from equisa_core.report import console as shown
    from flows.trace import trace_suite
    from tasks.run.parameters import TraceParameters

    report = run_flow(args, console, TraceParameters,
                      lambda level: f"Tracing [bold]{args.path}[/] in the {args.sandbox} sandbox ({level})",
                      "starting (snapshot, interpreter, Prefect)", trace_suite)
    write_json(args.json, report)
    show(console, [*shown.trace_summary(report), *shown.stored(report)])
    announce_written(console, args.json)
    if report.crashed:  # recorded already, as a crashed run (exit 7)
        from tasks.storage.record import mark_recorded

        raise mark_recorded(SuiteCrashedError(
            f"the suite's interpreter died ({report.crash_reason}) while running "
            f"{report.crashed_in or 'the suite'}; the {report.summary.total} outcomes recorded "
            "before are kept"
        ), report.run_id)
    return EXIT_OK


def _localize_command(args: argparse.Namespace, console: Console) -> int:
    from equisa_core.report import console as shown
    from flows.localize import localize
    from tasks.run.parameters import LocalizeParameters

    report = run_flow(args, console, LocalizeParameters,
                      lambda level: f"Localizing the bug in [bold]{args.path}[/] (sandbox {args.sandbox}: "
                      f"{level})",
                      "tracing the suite, then inspecting candidates", localize)
    write_json(args.json, report)
    show(console, [*shown.localization_summary(report), *shown.stored(report)])
    announce_written(console, args.json)
    _write_ci_outputs(args, report, console)
    # 0 for a ranking, converged or not; 25 (26: the time budget) when not, under --fail-unless-converged
    return report.exit_code(fail_unless_converged=args.fail_unless_converged)


def _repair_command(args: argparse.Namespace, console: Console) -> int:
    from equisa_core.report import console as shown
    from flows.repair import repair
    from tasks.run.parameters import RepairParameters

    forge = options.ForgeOptions(**parameters_from(args, options.ForgeOptions))
    if forge.publishing:  # a missing remote or token is known before the run, not after it
        from tasks.publish.fix_branch import check_publishable

        check_publishable(args.path, forge)
    report = run_flow(args, console, RepairParameters,
                      lambda level: f"Repairing [bold]{args.path}[/] (sandbox {args.sandbox}: {level})",
                      "localizing the bug, then validating patches", repair)
    if report.localization is not None:
        show(console, shown.localization_summary(report.localization))
    if forge.publishing:  # before --apply: the fix commit goes on HEAD, from a clean tree
        report = _publish(args, report, forge, console)
    if args.apply and report.status == "fixed":
        from tasks.publish.apply import apply_patch
        from tasks.storage.record import mark_recorded

        try:
            apply_patch(args.path, report.diff, report.patched_files, report.original_files)
        except Exception as refused:  # the run is recorded (fixed); --apply's refusal is the exit (23, 24)
            mark_recorded(refused, report.run_id)
            raise
        report = report.model_copy(update={"applied": True})
    write_json(args.json, report)  # after --apply, which the report records
    if args.diff and report.diff:
        args.diff.parent.mkdir(parents=True, exist_ok=True)
        args.diff.write_text(report.diff, encoding="utf-8")
    show(console, [*shown.repair_summary(report), *shown.stored(report)])
    if args.apply and report.status != "fixed":
        console.print("Nothing applied: no patch was accepted.")
    if report.published is not None and report.published.pull_request_url:
        console.print(f"Pull request: {report.published.pull_request_url}", highlight=False, soft_wrap=True)
    announce_written(console, args.json)
    if args.diff and report.diff:
        console.print(f"Patch written to {args.diff} (apply with: git -C {args.path} apply "
                      f"{args.diff.resolve()})", highlight=False, soft_wrap=True)
    _write_ci_outputs(args, report, console)
    return report.exit_code


def _write_ci_outputs(args: argparse.Namespace, report: Any, console: Console) -> None:
    """``--sarif``, ``--markdown``, and under GitHub Actions the annotations and the step summary."""
    from cli.flow_runs import STDOUT
    from tasks.publish.ci_outputs import write_ci_outputs

    write_ci_outputs(report, args.path, console, sarif=args.sarif, markdown=args.markdown,
                     json_to_stdout=args.json == STDOUT)


def _write_failure_ci_outputs(args: argparse.Namespace, failure: Any, console: Console) -> None:
    """``--sarif``, ``--markdown`` and GitHub Actions' outputs of a command that stopped early."""
    from cli.flow_runs import STDOUT
    from tasks.publish.ci_outputs import write_failure_outputs

    write_failure_outputs(failure, console, sarif=args.sarif, markdown=args.markdown,
                          json_to_stdout=getattr(args, "json", None) == STDOUT)


def _publish(args: argparse.Namespace, report: RepairReport, forge: options.ForgeOptions,
             console: Console) -> RepairReport:
    """``--push`` / ``--open-pr``: publish a fixed report's patch (a plausible-only one with
    ``--allow-plausible``; ``tasks.publish.fix_branch``), or say why nothing is pushed (on the console and in
    the report's ``problems``). When publishing fails, the report is written (``--json``) before the
    error ends the command."""
    from equisa_core.errors import ForgeError, PushError
    from equisa_core.report.markdown import render_markdown
    from tasks.publish.fix_branch import publish_fix, refusal_of

    refused = refusal_of(report, forge)
    if refused is not None:  # an outcome, said on the console and in the report; not an error
        console.print(f"{refused[:1].upper()}{refused[1:]}.", highlight=False, soft_wrap=True)
        return report.model_copy(update={"problems": (*report.problems, refused)})
    try:
        published = publish_fix(str(args.path), None, report, forge, render_markdown(report),
                                 say=lambda line: console.print(line, highlight=False, soft_wrap=True))
    except (PushError, ForgeError):
        write_json(args.json, report)
        raise
    return report.model_copy(update={"published": published})


if __name__ == "__main__":
    sys.exit(run())

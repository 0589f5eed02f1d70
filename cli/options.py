"""The command line's options and the option models (``equisa_core.common.options``), kept as one.

Every option that sets a field of an option model is made from that field by ``add_model_options``:
its default is the field's and its value is checked against the field's type and bounds (a bad one
is a usage error, exit 2). ``SPELLING`` holds how an option is spelt where it is not ``--field-name``
with the field's description as its help: its flag, its metavar, its help line, and the old spellings
that still work for one release (hidden from ``--help``; each use is noted in the parsed arguments'
``deprecated_spellings``, which the command prints as a warning). ``parameters_from``
reads a parsed command line back into field values; ``given_options`` tells which options were written.
"""

from __future__ import annotations

import argparse
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from equisa_core.common.options import (
    FIRST_RUN_TIMEOUT_S,
    NEW_TEST_TIMEOUT_S,
    TIMEOUT_CAP_S,
    TIMEOUT_FACTOR,
    TIMEOUT_SLACK_S,
    BatchOptions,
    ConvergenceOptions,
    DiscoveryOptions,
    EndpointOptions,
    ForgeOptions,
    LocalizationOptions,
    SandboxOptions,
    StorageOptions,
    TestgenOptions,
    ValidationOptions,
    default_of,
)

__all__ = [
    "OPTION_FIELDS",
    "Option",
    "RUN_OPTIONS",
    "SPELLING",
    "add_ci_outputs",
    "add_model_options",
    "add_run_options",
    "add_deprecated_flag",
    "DEPRECATIONS",
    "field_of",
    "field_type",
    "given_options",
    "option_fields",
    "parameters_from",
]

#: The option models of each command that runs the suite: its settings may also come from the
#: environment and the target's ``[tool.equisa]`` (``cli/settings.py``).
RUN_OPTIONS: tuple[type[BaseModel], ...] = (SandboxOptions, StorageOptions)


@dataclass(frozen=True)
class Option:
    """How the option of a field is spelt: ``help`` (``{default}`` is the field's default as help lines
    show it), ``flag`` (default ``--field-name``), ``metavar``; ``switch``: a plain ``store_true`` flag
    rather than ``--x/--no-x``; ``off_help``: ``--x`` and ``--no-x`` as two exclusive flags (default None);
    ``old``: former flags of the field, accepted with a warning for one release."""

    help: str
    flag: str | None = None
    metavar: str | None = None
    switch: bool = False
    off_help: str | None = None
    old: tuple[str, ...] = ()


#: The options spelt otherwise than the field's ``--field-name`` and description, by model and field.
SPELLING: dict[type[BaseModel], dict[str, Option]] = {
    SandboxOptions: {
        "python": Option("interpreter that runs the suite (default: the repository's .venv, else "
                         "$VIRTUAL_ENV's, else one built with uv from what the repository declares, else "
                         "EQUISA's own)", metavar="INTERPRETER"),
        "provision": Option("build the suite's environment with uv from the repository's pyproject.toml, "
                            "lock, requirements, setup.py/setup.cfg and tox.ini when no interpreter is given "
                            "(default: {default})", off_help="use EQUISA's own interpreter instead"),
        "environments": Option("folder of the built environments (default: ~/.cache/equisa/environments)",
                               metavar="FOLDER"),
        "test_env": Option("a variable the suite needs in the sandbox (repeatable; names that look like "
                           "secrets are dropped)", metavar="KEY=VALUE"),
        "sandbox": Option("where tests run: local (the strongest isolation here: bubblewrap, else "
                          "util-linux namespaces), docker, or none (a plain subprocess; generated code "
                          "runs unconfined) (default {default})"),
        "allow_weak_sandbox": Option("run generated tests, inspection patches and fixes even where the "
                                     "local sandbox cannot confine file writes (default: refuse, exit 14)",
                                     switch=True),
        "docker_image": Option("image for --sandbox docker", metavar="IMAGE"),
        "shards": Option("parallel shards (default: the number of cores)", metavar="N"),
        "no_cache": Option("run again even if cached", switch=True),
        "shard_timeout_s": Option("wall-clock limit of one shard's run of the suite; the shard is killed "
                                  "then (default {default})", flag="--shard-timeout", metavar="SECONDS",
                                  old=("--timeout",)),
        "test_timeout_s": Option(
            f"limit per test: auto (each test's own: {TIMEOUT_FACTOR:g}x its duration in the first run "
            f"+ {TIMEOUT_SLACK_S:g}s, at most {TIMEOUT_CAP_S:g}s; in the first run "
            f"{FIRST_RUN_TIMEOUT_S:g}s, or from the history's durations; {NEW_TEST_TIMEOUT_S:g}s for a "
            "generated test), or SECONDS for every test "
            "(default {default})",
            flag="--test-timeout", metavar="auto|SECONDS"),
    },
    StorageOptions: {
        "artifacts": Option("artifact store (default: EQUISA_ARTIFACTS, else "
                            "~/.local/share/equisa/artifacts)", metavar="FOLDER|s3://BUCKET/PREFIX"),
        "db": Option("DuckDB history (default: EQUISA_DB, else ~/.local/share/equisa/history.duckdb)",
                     metavar="FILE"),
    },
    EndpointOptions: {
        "llm": Option("use the model at OPENAI_BASE_URL (default: when one is configured)",
                      off_help="deterministic mode only"),
        "max_cost_usd": Option("LLM spend in USD at which the run stops asking the model, or none: no cap "
                               "(default {default}); a model the price table does not know then needs "
                               "--price-input and --price-output",
                               flag="--max-cost", metavar="USD|none", old=("--max-cost-usd",)),
        "price_input": Option("USD per million input tokens of a model the price table does not know "
                              "(the primary and the backup model)", metavar="USD"),
        "price_output": Option("USD per million output tokens of a model the price table does not know",
                               metavar="USD"),
    },
    DiscoveryOptions: {
        "discovery": Option("generate tests that split ambiguity groups (default: {default})"),
        "max_generated_tests": Option("generated tests Discovery may keep (default {default})", metavar="N"),
        "discovery_top": Option("split only the ambiguity groups that hold one of the prior's N best "
                                "functions (default {default}; 0: every group)", metavar="N"),
        "testgen": Option("Discovery also asks the test-generation agent for tests of each group "
                          "(deterministic, one attempt; default: {default})"),
    },
    LocalizationOptions: {
        "max_inspections": Option("inspections before giving up (default {default}; 0: rank after "
                                  "Discovery)", metavar="N", old=("--max-iterations",)),
        "mutants_per_inspection": Option("mutants tried per inspected function (default {default})",
                                         metavar="N", old=("--max-mutants",)),
        "screen_top": Option("in deterministic mode, try the mutants of the N most suspicious functions "
                             "together before inspecting (default {default}; 0: off)", metavar="N"),
        "screen_budget_s": Option(
            "estimated test time the screening may spend: mutants x failing tests' durations, summed over "
            "the screened functions; also the wall-clock limit of each screening process's mutant rounds "
            "(default {default})", flag="--screen-budget", metavar="SECONDS"),
        "inspection_batch": Option("in deterministic mode, run the next N inspections together in one "
                                   "sandbox process (default {default}; 1: one process per inspection)",
                                   metavar="N"),
        "inspection_budget_s": Option(
            "in deterministic mode, the wall-clock limit of each inspection batch's mutant rounds; the "
            "mutants left are not run (default {default})", flag="--inspection-budget", metavar="SECONDS"),
        "likelihoods": Option("in deterministic mode, the likelihoods evidence counts with: fitted on the "
                              "real-bug benchmark, or the hand-set seed table (default {default})"),
        "min_expected_shift": Option(
            "in deterministic mode, run a screening or inspection only when it is expected to move its "
            "function's confidence by P, and stop when none is (default {default}; 0: off)", metavar="P"),
        "stop_margin": Option(
            "in deterministic mode, end the run once the mutant screening is in when the leader's "
            "confidence is at least MARGIN times the runner-up's; below it Discovery and the inspections "
            "go on; off: they always do (default {default})", metavar="MARGIN|off"),
        "screen_cost_ratio": Option(
            "in deterministic mode, give the mutant screening RATIO times the seconds the trace took (at "
            "least 0.5 s), the most suspicious functions first; the functions it leaves no time for are "
            "left out (the report's screening_cost.left_out); off: screen every function whole "
            "(default {default})", metavar="RATIO|off"),
        "since": Option("a git ref: functions changed since it (committed or not) count as more "
                        "suspicious, as in a CI run on a pull request (default: no such signal)",
                        metavar="REF"),
    },
    ConvergenceOptions: {
        "fail_unless_converged": Option(
            "exit 25 when no function reached the confidence threshold, 26 when the time budget "
            "(--max-seconds) stopped the run, instead of 0; the ranking and report are written all the "
            "same (default {default}: a ranking exits 0, converged or not)"),
    },
    ValidationOptions: {
        "max_validations": Option("candidates validated in full before giving up (default {default})",
                                  metavar="N"),
        "fix_prior": Option("the search order's prior over fix patterns: size (the smaller edit first), "
                            "fitted (bundled) or a prior's JSON file (default {default})",
                            metavar="size|fitted|FILE"),
        "search_seconds": Option("seconds the deterministic search screens candidates per round, best "
                                 "first (default {default})", metavar="SECONDS"),
    },
    TestgenOptions: {
        "max_attempts": Option("attempts in all, attempt 0 included (1-20, default {default})",
                               metavar="N", old=("--max-iterations",)),
        "coverage_target": Option("default {default}", metavar="PCT"),
        "mutation_target": Option("default {default}", metavar="PCT"),
        "mutants_per_measurement": Option("mutants of the target file per measurement, 0 for none "
                                          "(default {default})", metavar="N", old=("--max-mutants",)),
    },
    ForgeOptions: {
        "push": Option("push the accepted patch as one commit on top of HEAD to a branch equisa/fix-<short "
                       "sha> of --remote (the working tree and branch are not touched; a not-fixed run pushes "
                       "nothing, a plausible-only one only with --allow-plausible)", switch=True),
        "remote": Option("the git remote the fix branch goes to (default {default})", metavar="NAME"),
        "open_pr": Option("also open a pull request for the fix branch (or comment on the open one) through "
                          "the forge's REST API, with the token in GITHUB_TOKEN or EQUISA_FORGE_TOKEN "
                          "(implies --push)", switch=True),
        "forge": Option("the forge's kind (default {default})"),
        "forge_api": Option("the forge's REST API base (default: GITHUB_API_URL, else https://api.github.com "
                            "for github.com, https://HOST/api/v3 for another GitHub host, "
                            "https://HOST/api/v1 for gitea)", metavar="URL"),
        "pr_base": Option("the branch the pull request targets (default: the branch checked out, else the "
                          "repository's default branch)", metavar="BRANCH"),
        "forge_timeout_s": Option("seconds to wait for each answer of the forge's API (default {default})",
                                  flag="--forge-timeout", metavar="SECONDS"),
        "allow_plausible": Option("with --push/--open-pr, also publish a plausible-only patch (it passes the "
                                  "suite but failed the anti-overfitting checks); its commit and pull "
                                  "request say plainly it is plausible only, and why", switch=True),
    },
    BatchOptions: {
        "concurrency": Option("repositories repaired at the same time (default {default})", metavar="N"),
        "reports_dir": Option("folder of the per-repository JSON reports (default: EQUISA_REPORTS, else "
                              "~/.cache/equisa/reports)", flag="--reports", metavar="DIR"),
        "no_cache": Option("repair every repository again", switch=True),
        "max_cost_usd": Option("LLM spend in USD of each repository's run, or none: no cap; over the "
                               "file's budgets.max_cost_usd (default: the file's, else 2)",
                               flag="--max-cost", metavar="USD|none"),
        "price_input": Option("USD per million input tokens of a model the price table does not know, "
                              "over the file's price_input", metavar="USD"),
        "price_output": Option("USD per million output tokens of a model the price table does not know, "
                               "over the file's price_output", metavar="USD"),
    },
}

#: Options whose ``dest`` differs from the field they set: ``--shard-timeout`` sets ``shard_timeout_s``, ...
OPTION_FIELDS: dict[str, str] = {
    **{option.flag[2:].replace("-", "_"): field for spelt in SPELLING.values()
       for field, option in spelt.items() if option.flag},
    "file": "repositories_file",
}


def field_of(dest: str) -> str:
    """The model field an option's ``dest`` sets."""
    return OPTION_FIELDS.get(dest, dest)


def option_fields(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The options (and positionals) of ``parser`` by the field each sets; of two options that set one
    field (``--llm``, ``--no-llm``), the first, whose default argparse keeps."""
    found: dict[str, argparse.Action] = {}
    for action in parser._actions:
        if action.dest not in (argparse.SUPPRESS, "help"):
            found.setdefault(field_of(action.dest), action)
    return found


def add_model_options(parser: argparse.ArgumentParser, *models: type[BaseModel],
                      spelling: Mapping[str, Option] | None = None) -> None:
    """Add an option for every field of ``models`` that no option of ``parser`` sets yet.

    Its default is the field's, its value is checked against the field's type and bounds; its flag,
    metavar and help come from ``spelling`` (this command's own), else ``SPELLING``, else the field:
    ``--field-name`` with the field's description.
    """
    taken = set(option_fields(parser))
    for model in models:
        for name in model.model_fields:
            if name not in taken:
                taken.add(name)
                option = (spelling or {}).get(name) or SPELLING.get(model, {}).get(name)
                _add_field_option(parser, model, name, option)


def add_run_options(command: argparse.ArgumentParser, *models: type[BaseModel],
                    spelling: Mapping[str, Option] | None = None) -> None:
    """PATH, ``--tests``, ``--json`` and the options of ``RUN_OPTIONS`` and ``models`` (``spelling``: as
    ``add_model_options``)."""
    command.add_argument("path", type=Path, help="the repository's root folder")
    command.add_argument("--tests", nargs="+", default=[], metavar="TEST",
                         help="pytest node ids or paths to run (default: the whole suite)")
    command.add_argument("--json", type=Path, metavar="OUT",
                         help="write the full report here (-: standard output)")
    add_model_options(command, *RUN_OPTIONS, *models, spelling=spelling)


def add_ci_outputs(command: argparse.ArgumentParser, markdown_only: bool = False) -> None:
    """``--sarif`` and ``--markdown``, the report's files for CI (``tasks/publish/ci_outputs.py``); only
    ``--markdown`` with ``markdown_only`` (a batch's summary has no locations)."""
    if not markdown_only:
        command.add_argument("--sarif", type=Path, metavar="FILE",
                             help="write the suspects (and a verified patch as their fix) as SARIF 2.1.0 "
                                  "here")
    command.add_argument("--markdown", type=Path, metavar="FILE",
                         help="write a summary for a pull-request comment here (under GitHub Actions it also "
                              "goes to $GITHUB_STEP_SUMMARY)")


def _add_field_option(parser: argparse.ArgumentParser, model: type[BaseModel], name: str,
                      option: Option | None) -> None:
    """The option of ``model``'s field ``name``, spelt as ``option`` says (None: from the field)."""
    field = model.model_fields[name]
    default = default_of(model, name)
    if option is None:
        described = (field.description or name).rstrip(".")
        option = Option(f"{described[:1].lower()}{described[1:]} (default: {{default}})")
    flag = option.flag or "--" + name.replace("_", "-")
    dest = flag[2:].replace("-", "_")
    help_text = option.help.replace("{default}", _shown(default))
    choices = _choices(field.annotation)
    if option.off_help is not None:
        pair = parser.add_mutually_exclusive_group()
        pair.add_argument(flag, dest=dest, action="store_true", default=default, help=help_text)
        pair.add_argument("--no-" + flag[2:], dest=dest, action="store_false", help=option.off_help)
    elif option.switch:
        parser.add_argument(flag, dest=dest, action="store_true", help=help_text)
    elif field.annotation in (bool, bool | None):
        parser.add_argument(flag, dest=dest, action=argparse.BooleanOptionalAction, default=default,
                            help=help_text)
    elif choices:
        parser.add_argument(flag, dest=dest, choices=choices, default=default, help=help_text)
    elif field.annotation in (dict[str, str], "dict[str, str]"):  # repeated KEY=VALUE
        parser.add_argument(flag, dest=dest, action=_KeyValues, default=default,
                            metavar=option.metavar or "KEY=VALUE", help=help_text)
    else:
        parser.add_argument(flag, dest=dest, type=field_type(model, name), default=default,
                            metavar=option.metavar or _metavar(name, field.annotation), help=help_text)
    for old in option.old:  # after the option itself, whose default argparse keeps
        add_deprecated_flag(parser, old, flag, dest=dest, type=field_type(model, name),
                            metavar=option.metavar or _metavar(name, field.annotation))


def parameters_from(args: argparse.Namespace, model: type[BaseModel],
                    given: Iterable[str] | None = None) -> dict[str, Any]:
    """The values of ``model``'s fields on the command line ``args``, by field name.

    ``given``: only the options with these ``dest`` (those the user wrote); None: every option.
    """
    chosen = set(given) if given is not None else None
    return {field_of(dest): value for dest, value in vars(args).items()
            if field_of(dest) in model.model_fields and (chosen is None or dest in chosen)}


def given_options(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> set[str]:
    """The ``dest`` of the options ``argv`` writes (not those left to their defaults).

    ``parser`` (a fresh one: its defaults are cleared) parses ``argv`` again with no defaults.
    """
    _clear_defaults(parser)
    return set(vars(parser.parse_args(argv)))


def _clear_defaults(parser: argparse.ArgumentParser) -> None:
    """No option of ``parser`` or of its sub-commands has a default any more."""
    parser._defaults.clear()
    for action in parser._actions:
        action.default = argparse.SUPPRESS
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                _clear_defaults(command)


def _choices(annotation: Any) -> tuple[str, ...]:
    """The values of a ``Literal`` of strings (also inside ``| None``); empty for any other type (a
    number or ``auto``, say: the field's type checks the value)."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [arg for arg in get_args(annotation) if arg is not type(None)]
        if not all(get_origin(arg) is Literal for arg in args):
            return ()
        return tuple(c for arg in args for c in _choices(arg))
    if get_origin(annotation) is Literal:
        return tuple(str(value) for value in get_args(annotation))
    return ()


#: Where the command puts the notes of the old spellings it was given (``argparse.Namespace`` attribute).
DEPRECATIONS = "deprecated_spellings"


def add_deprecated_flag(parser: argparse.ArgumentParser, old: str, new: str, **kwargs: Any) -> None:
    """Accept ``old`` as ``new`` was (``kwargs``: ``dest``, ``type``, ...), hidden from ``--help``; each
    use notes a warning naming ``new`` in the arguments' ``deprecated_spellings``."""
    parser.add_argument(old, action=_Deprecated, replacement=new, help=argparse.SUPPRESS,
                        default=argparse.SUPPRESS, **kwargs)


class _Deprecated(argparse.Action):
    """An old spelling of an option: stores its value as the new one would, and notes a warning."""

    def __init__(self, option_strings: Sequence[str], dest: str, replacement: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.replacement = replacement

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        notes = list(getattr(namespace, DEPRECATIONS, None) or [])
        note = (f"{option_string} is deprecated and will be removed in the next release: "
                f"use {self.replacement}")
        if note not in notes:
            setattr(namespace, DEPRECATIONS, [*notes, note])


class _KeyValues(argparse.Action):
    """A repeatable ``KEY=VALUE`` option that makes a mapping (a new one each time: the default is
    never changed)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        key, equals, value = str(values).partition("=")
        if not equals or not key.strip():
            parser.error(f"argument {option_string}: {values!r} is not KEY=VALUE")
        setattr(namespace, self.dest, {**(getattr(namespace, self.dest, None) or {}), key.strip(): value})


def field_type(model: type[BaseModel], name: str) -> Callable[[str], Any]:
    """An argparse ``type`` that checks a value as ``model``'s field ``name`` would."""
    field = model.model_fields[name]
    blank = model.model_construct()

    def parse(text: str) -> Any:
        try:
            return getattr(model.__pydantic_validator__.validate_assignment(blank, name, text), name)
        except ValidationError as error:
            raise argparse.ArgumentTypeError(error.errors()[0]["msg"]) from None

    parse.__name__ = getattr(field.annotation, "__name__", name)
    return parse


def _metavar(name: str, annotation: Any) -> str:
    """How a generated option's value is shown: ``SECONDS``, ``USD``, ``N`` or ``VALUE``."""
    if name.endswith(("_s", "_seconds")):
        return "SECONDS"
    if name.endswith("_usd"):
        return "USD"
    return "N" if annotation is int else "VALUE"


def _shown(default: Any) -> str:
    """A default as a help line shows it: ``300``, ``on``/``off``, ``none``."""
    if isinstance(default, bool):
        return "on" if default else "off"
    if isinstance(default, float):
        return f"{default:g}"
    return "none" if default is None else str(default)

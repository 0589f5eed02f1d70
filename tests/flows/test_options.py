"""The command line and the option models agree: every field of a command's parameters has an option
with a help line, and the option's default is the field's (``equisa_core.common.options``)."""

from __future__ import annotations

import argparse

import pytest
from pydantic import BaseModel

from cli.main import build_parser, main
from cli.options import DEPRECATIONS, field_of, given_options, option_fields, parameters_from
from cli.settings import SETTING_MODELS
from equisa_core.common.options import BatchOptions, cost_cap, default_of
from tasks.run.parameters import (
    BatchParameters,
    LocalizeParameters,
    RepairParameters,
    TestgenParameters,
    TraceParameters,
)

#: Each command that runs a flow, and the parameters it builds from its options.
COMMANDS: dict[str, type[BaseModel]] = {
    "trace": TraceParameters,
    "localize": LocalizeParameters,
    "repair": RepairParameters,
    "testgen": TestgenParameters,
    "batch": BatchParameters,
}

#: Fields no user sets: the driver's own plumbing, or inputs only another flow passes.
NOT_OPTIONS = {
    "rerun_failures",  # only the inspections' own suite runs turn it off
    "focus",  # testgen's callers inside Discovery name the functions
    "specification",  # ... and the tests that show the intended behaviour
    "module_stem",  # ... and the generated module's name
}


def _command(name: str) -> argparse.ArgumentParser:
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return commands.choices[name]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_field_has_an_option_with_help_and_the_models_default(command: str) -> None:
    model = COMMANDS[command]
    options = option_fields(_command(command))
    missing = sorted(set(model.model_fields) - NOT_OPTIONS - set(options))
    assert not missing, f"{command}: fields without an option: {missing}"
    for name in set(model.model_fields) - NOT_OPTIONS:
        action = options[name]
        assert action.help and action.help.strip(), f"{command} {action.option_strings}: no help line"
        if model.model_fields[name].is_required():
            continue
        assert action.default == default_of(model, name), (
            f"{command} {action.option_strings or name}: default {action.default!r}, "
            f"the model's {default_of(model, name)!r}")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_default_command_line_gives_the_models_defaults(command: str) -> None:
    argv = {"batch": [command, "repositories.yaml"], "testgen": [command, ".", "--target", "m.py"]}
    args = build_parser().parse_args(argv.get(command, [command, "."]))
    model = COMMANDS[command]
    values = parameters_from(args, model)
    built = model(**{k: str(v) if k in ("path", "repositories_file") else v for k, v in values.items()})
    assert built == model(**{k: getattr(built, k) for k in ("path", "repositories_file", "target")
                             if k in model.model_fields})


def test_a_budget_without_a_hand_written_option_is_set_from_the_command_line() -> None:
    args = build_parser().parse_args(["repair", ".", "--max-cost", "0.5", "--no-mutation-evidence",
                                      "--repair-top", "2"])
    params = RepairParameters(**{**parameters_from(args, RepairParameters), "path": "."})
    assert (params.max_cost_usd, params.mutation_evidence, params.repair_top) == (0.5, False, 2)


@pytest.mark.parametrize("argv", [
    ["repair", ".", "--max-cost", "-1"],
    ["repair", ".", "--repair-top", "x"],
    ["testgen", ".", "--target", "m.py", "--improvement-budget", "-2"],
])
def test_a_value_out_of_its_fields_bounds_is_a_usage_error(argv: list[str],
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(argv)
    assert stopped.value.code == 2
    assert argv[-2] in capsys.readouterr().err


# --- one name, one meaning -----------------------------------------------------------------------------

#: Fields that two option models share because they mean the same: ``no_cache`` (run again, whatever
#: is cached) and the model's cost cap and prices (batch: for every repository, over the file's).
SAME_MEANING = {"no_cache", "max_cost_usd", "price_input", "price_output"}


def _commands() -> dict[str, argparse.ArgumentParser]:
    """Every sub-command's parser, by name."""
    found = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(found.choices)


def _flags(parser: argparse.ArgumentParser, hidden: bool) -> dict[str, str]:
    """``parser``'s flags (the visible ones, or the hidden old spellings) -> the ``dest`` each sets."""
    return {flag: action.dest for action in parser._actions for flag in action.option_strings
            if (action.help == argparse.SUPPRESS) == hidden and action.dest != "help"}


def test_every_command_is_audited() -> None:
    assert set(_commands()) == {"trace", "localize", "repair", "testgen", "batch", "trigger", "deploy",
                                "history", "report", "flush", "server", "doctor"}


def test_one_flag_never_means_two_things_across_commands() -> None:
    meanings: dict[str, dict[str, set[str]]] = {}  # flag -> field it sets -> commands
    for name, parser in _commands().items():
        for flag, dest in _flags(parser, hidden=False).items():
            meanings.setdefault(flag, {}).setdefault(field_of(dest), set()).add(name)
    twice = {flag: fields for flag, fields in meanings.items() if len(fields) > 1}
    assert not twice, f"one flag sets different fields in different commands: {twice}"
    # ... and a field is one option's in every command: no two flags set it
    flags_of: dict[str, set[str]] = {}
    for flag, fields in meanings.items():
        for field in fields:
            if flag.startswith("--"):  # a short alias (-o for --output) is the same option
                flags_of.setdefault(field, set()).add(flag.removeprefix("--no-").removeprefix("--"))
    assert {f: s for f, s in flags_of.items() if len(s) > 1} == {}


def test_one_setting_name_is_one_option_models_field() -> None:
    """A key of ``[tool.equisa]``, an ``EQUISA_*`` variable and a flag name one meaning: no field name is
    declared by two option models (but those that mean the same)."""
    owners: dict[str, list[str]] = {}
    for model in (*SETTING_MODELS, BatchOptions):
        for name in model.model_fields:
            owners.setdefault(name, []).append(model.__name__)
    shared = {name: models for name, models in owners.items() if len(models) > 1}
    assert set(shared) <= SAME_MEANING, shared


#: The commands that run a repository's suite.
RUNS = ("trace", "localize", "repair", "testgen")


def test_the_old_spellings_are_hidden_and_name_their_replacement() -> None:
    old = {(name, flag): field_of(dest) for name, parser in _commands().items()
           for flag, dest in _flags(parser, hidden=True).items()}
    assert old == {
        **{(command, "--timeout"): "shard_timeout_s" for command in RUNS},
        ("trigger", "--timeout"): "request_timeout",
        ("localize", "--max-iterations"): "max_inspections",
        ("repair", "--max-iterations"): "max_inspections",
        ("testgen", "--max-iterations"): "max_attempts",
        ("localize", "--max-mutants"): "mutants_per_inspection",
        ("repair", "--max-mutants"): "mutants_per_inspection",
        ("testgen", "--max-mutants"): "mutants_per_measurement",
        **{(command, "--max-cost-usd"): "max_cost_usd" for command in (*RUNS[1:], "trigger")},
    }


@pytest.mark.parametrize(("argv", "dest", "value", "replacement"), [
    (["trace", ".", "--timeout", "90"], "shard_timeout", 90.0, "--shard-timeout"),
    (["localize", ".", "--max-iterations", "4"], "max_inspections", 4, "--max-inspections"),
    (["repair", ".", "--max-mutants", "7"], "mutants_per_inspection", 7, "--mutants-per-inspection"),
    (["testgen", ".", "--target", "m.py", "--max-iterations", "2"], "max_attempts", 2, "--max-attempts"),
    (["testgen", ".", "--target", "m.py", "--max-mutants", "0"], "mutants_per_measurement", 0,
     "--mutants-per-measurement"),
    (["repair", ".", "--max-cost-usd", "0.5"], "max_cost", 0.5, "--max-cost"),
    (["trigger", "--timeout", "5"], "request_timeout", 5.0, "--request-timeout"),
])
def test_an_old_spelling_still_works_and_warns_naming_the_new_one(argv: list[str], dest: str, value: object,
                                                                  replacement: str) -> None:
    args = build_parser().parse_args(argv)
    assert getattr(args, dest) == value
    old = argv[-2]
    assert getattr(args, DEPRECATIONS) == [
        f"{old} is deprecated and will be removed in the next release: use {replacement}"]
    new = build_parser().parse_args([*argv[:-2], replacement, argv[-1]])
    assert getattr(new, dest) == value and not getattr(new, DEPRECATIONS, None)
    # the old spelling's value counts as written: the settings do not overwrite it
    assert dest in given_options(build_parser(), argv)


def test_an_old_flag_prints_one_warning_on_stderr(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing"
    code = main(["trace", str(missing), "--timeout", "60", "--sandbox", "none"])
    assert code == 3  # the path is missing: bad input, after the warning
    err = capsys.readouterr().err
    assert err.count("--timeout is deprecated") == 1 and "use --shard-timeout" in err


@pytest.mark.parametrize("cap", ["none", "0", "2.5"])
def test_the_cost_cap_is_usd_or_none(cap: str) -> None:
    args = build_parser().parse_args(["localize", ".", "--max-cost", cap])
    assert args.max_cost == (cap if cap == "none" else float(cap))
    params = LocalizeParameters(**{**parameters_from(args, LocalizeParameters), "path": "."})
    assert cost_cap(params.max_cost_usd) == (None if cap == "none" else float(cap))


@pytest.mark.parametrize("command", ["localize", "repair", "testgen", "batch", "trigger"])
def test_every_command_that_can_call_a_model_takes_the_cap_and_the_prices(command: str) -> None:
    flags = _flags(_commands()[command], hidden=False)
    assert {flags["--max-cost"], flags["--price-input"], flags["--price-output"]} == {
        "max_cost", "price_input", "price_output"}
    assert "--max-cost" not in _flags(_commands()["trace"], hidden=False)  # trace asks no model

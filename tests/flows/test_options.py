"""The command line and the option models agree: every field of a command's parameters has an option
with a help line, and the option's default is the field's (``equisa_core.common.options``)."""

from __future__ import annotations

import argparse

import pytest
from pydantic import BaseModel

from equisa_core.common.options import default_of
from flows.cli import build_parser
from tasks.cli_options import option_fields, parameters_from
from tasks.parameters import (
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

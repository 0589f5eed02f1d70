"""The command line's options and the option models (``equisa_core.common.options``), kept as one.

An option sets the model field of its ``dest`` (``OPTION_FIELDS`` names the few whose option is
spelt otherwise); its default is the field's. ``add_model_options`` adds an option for every field of
a model that has no hand-written one, with the field's description as its help; ``parameters_from``
reads a parsed command line back into field values.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from equisa_core.common.options import default_of

__all__ = [
    "OPTION_FIELDS",
    "add_model_options",
    "field_of",
    "given_options",
    "option_fields",
    "parameters_from",
]

#: Options whose ``dest`` differs from the field they set: ``--timeout`` sets ``wall_clock_s``, ...
OPTION_FIELDS: dict[str, str] = {
    "timeout": "wall_clock_s",
    "test_timeout": "test_timeout_s",
    "screen_budget": "screen_budget_s",
    "inspection_budget": "inspection_budget_s",
    "max_generated_tests": "discovery_max_tests",
    "reports": "reports_dir",
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


def add_model_options(parser: argparse.ArgumentParser, *models: type[BaseModel]) -> None:
    """Add ``--field-name`` for every field of ``models`` that no option of ``parser`` sets yet.

    The option's default is the field's, its help the field's description, and its value is
    checked against the field's type and bounds (a bad one is a usage error, exit 2).
    """
    taken = set(option_fields(parser))
    for model in models:
        for name, field in model.model_fields.items():
            if name in taken:
                continue
            taken.add(name)
            flag = "--" + name.replace("_", "-")
            default = default_of(model, name)
            described = (field.description or name).rstrip(".")
            help_text = f"{described[:1].lower()}{described[1:]} (default: {_shown(default)})"
            if field.annotation in (bool, bool | None):
                parser.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction, default=default,
                                    help=help_text)
            else:
                metavar = _metavar(name, field.annotation)
                parser.add_argument(flag, dest=name, type=_field_parser(model, name), default=default,
                                    metavar=metavar, help=help_text)


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


def _field_parser(model: type[BaseModel], name: str) -> Callable[[str], Any]:
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

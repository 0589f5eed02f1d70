"""Where an option's value comes from: the command line, then the environment (``EQUISA_<FIELD>``),
then ``[tool.equisa]`` in the target repository's ``pyproject.toml``, then the option model's default.

pydantic-settings reads the environment and the table (read once, given to an ``InitSettingsSource``);
the models are those of ``equisa_core.common.options``. A key of ``[tool.equisa]`` that is no option of
any command, or a value an option refuses, is bad input (``ConfigurationError``, exit 3). A renamed
setting's old key (``RENAMED_SETTINGS``), in the table or as ``EQUISA_<OLD>``, still sets the new field
when the new name is not given, with a warning, for one release.
"""

from __future__ import annotations

import argparse
import os
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError, create_model
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from cli.options import OPTION_FIELDS
from equisa_core.common import options
from equisa_core.errors import ConfigurationError

__all__ = ["ENV_PREFIX", "TABLE", "apply_settings", "configured_values", "known_settings"]

ENV_PREFIX = "EQUISA_"
#: The table of the target's ``pyproject.toml`` that holds its settings.
TABLE = ("tool", "equisa")


#: The option models whose fields ``[tool.equisa]`` may set.
SETTING_MODELS: tuple[type[BaseModel], ...] = (
    options.SandboxOptions, options.StorageOptions, options.EndpointOptions, options.DiscoveryOptions,
    options.LocalizationOptions, options.ConvergenceOptions, options.ValidationOptions,
    options.TestgenOptions)


def known_settings() -> frozenset[str]:
    """Every key ``[tool.equisa]`` may hold: the fields of every option model, and the old keys of
    renamed ones (still read, with a warning)."""
    renamed = {old for model in SETTING_MODELS for old in options.RENAMED_SETTINGS.get(model, {})}
    return frozenset({name for model in SETTING_MODELS for name in model.model_fields} | renamed)


def configured_values(models: Iterable[type[BaseModel]], repository: Path | None,
                      warnings: list[str] | None = None) -> dict[str, Any]:
    """The values the environment and ``repository``'s ``[tool.equisa]`` give the fields of
    ``models`` (the environment wins); fields neither sets are left out. With no ``repository``
    (a command with no one target, such as ``batch``) only the environment counts. An old key of a
    renamed setting sets its new field (unless the new one is set in the same place) and appends a
    warning naming the replacement to ``warnings``."""
    models = tuple(models)
    pyproject = repository / "pyproject.toml" if repository is not None else Path("pyproject.toml")
    table = _table(pyproject) if repository is not None else {}
    unknown = sorted(set(table) - known_settings())
    if unknown:
        raise ConfigurationError(f"{pyproject}: [tool.equisa] has no setting {', '.join(unknown)} "
                                 "(see docs/configuration.md, Options)")
    notes: list[str] = []
    table, old_env = _renamed(models, table, pyproject, notes)
    settings = _settings_class(models, table, old_env)
    try:
        values = settings()
    except ValidationError as error:
        raise ConfigurationError(f"invalid setting: {_describe(error, pyproject)}") from None
    if warnings is not None:
        warnings.extend(notes)
    return values.model_dump(include=values.model_fields_set)


def apply_settings(args: argparse.Namespace, given: Iterable[str]) -> list[str]:
    """Fill the options of ``args`` the user did not write (``given``: the ``dest`` of those they did)
    from the environment and the target's ``[tool.equisa]``; a command with no target (``batch``: each
    repository has its own) takes the environment only. Returns the warnings about old keys.

    A command's parser names the option models its options set (``set_defaults(option_models=...)``).
    """
    models = getattr(args, "option_models", None)
    if not models:
        return []
    target = getattr(args, "path", None)
    dests = {field: dest for dest, field in OPTION_FIELDS.items()}
    written = set(given)
    notes: list[str] = []
    for field, value in configured_values(models, Path(target) if target is not None else None,
                                          notes).items():
        dest = dests.get(field, field)
        if dest not in written and hasattr(args, dest):
            setattr(args, dest, value)
    return notes


def _renamed(models: tuple[type[BaseModel], ...], table: dict[str, Any], pyproject: Path,
             notes: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """``table`` with the old keys of ``models``' renamed settings under their new names, and the
    values of the old ``EQUISA_*`` variables by new field (each only where the new name is not set
    in the same place); a note naming the replacement for each old name used."""
    table = dict(table)
    old_env: dict[str, str] = {}
    olds = sorted({old for model in models for old in options.RENAMED_SETTINGS.get(model, {})})
    for old in olds:
        new = options.renamed_setting(old, models)
        assert new is not None  # every old key of these models has a new field among them
        if old in table:
            table.setdefault(new, table.pop(old))
            notes.append(f"{old} in {pyproject}'s [tool.equisa] is deprecated and will be removed in the "
                         f"next release: use {new}")
        variable, replacement = f"{ENV_PREFIX}{old.upper()}", f"{ENV_PREFIX}{new.upper()}"
        if variable in os.environ:
            if replacement not in os.environ:
                old_env[new] = os.environ[variable]
            notes.append(f"{variable} is deprecated and will be removed in the next release: "
                         f"use {replacement}")
    return table, old_env


def _settings_class(models: tuple[type[BaseModel], ...], table: dict[str, Any],
                    old_env: dict[str, str]) -> type[BaseSettings]:
    """A settings class with the fields of ``models``, read from the environment, then the old
    variables of renamed settings (``old_env``), then ``table``."""
    fields: dict[str, Any] = {name: (field.annotation, field) for model in models
                              for name, field in model.model_fields.items()}

    class _Sources(BaseSettings):
        model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

        @classmethod
        def settings_customise_sources(
            cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            return (EnvSettingsSource(settings_cls), InitSettingsSource(settings_cls, init_kwargs=old_env),
                    InitSettingsSource(settings_cls, init_kwargs=table))

    return create_model("EquisaSettings", __base__=_Sources, **fields)


def _table(pyproject: Path) -> dict[str, Any]:
    """``[tool.equisa]`` of ``pyproject`` (empty when the file or the table is missing)."""
    if not pyproject.is_file():
        return {}
    try:
        table: Any = tomllib.loads(pyproject.read_bytes().decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigurationError(f"{pyproject} is not valid TOML: {error}") from None
    for key in TABLE:
        table = table.get(key, {}) if isinstance(table, dict) else None
    if not isinstance(table, dict):
        raise ConfigurationError(f"{pyproject}: [tool.equisa] must be a table")
    return table


def _describe(error: ValidationError, pyproject: Path) -> str:
    """``EQUISA_SANDBOX: Input should be 'local', 'docker' or 'none' (got 'vm')``, one per bad value,
    each named where it was set: the variable when it is set, else the key of ``[tool.equisa]``."""
    described = []
    for item in error.errors():
        name = str(item["loc"][0]) if item["loc"] else "?"
        variable = f"{ENV_PREFIX}{name.upper()}"
        where = variable if variable in os.environ else f"{name} in {pyproject}'s [tool.equisa]"
        described.append(f"{where}: {item['msg']} (got {item['input']!r})")
    return "; ".join(described)

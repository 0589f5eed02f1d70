"""A batch over many repositories: the repositories file's schema, per-repository results, summaries.

The repositories file is YAML (read in ``tasks/operations/batch_io.py``; this module only validates the parsed
data, since ``equisa_core`` imports no YAML library):

.. code-block:: yaml

    defaults:            # optional: merged under every entry (an entry's own keys win)
      llm: false
      budgets: {max_inspections: 8}
    repositories:
      - source: ../examples/invoicing     # a folder (relative to this file) ...
      - name: billing
        source: https://git.example.com/acme/billing.git   # ... or a git URL
        ref: main
        python: /opt/venvs/billing/bin/python
        tests: [tests/unit]
        budgets: {max_seconds: 600, max_cost_usd: 0.5}
        publish: {push: true, open_pr: true}   # a fix: branch equisa/fix-<sha>, pull request

Every key is checked (unknown keys are errors, so a typo never silently does nothing), and errors
name the entry and the key: ``repositories[2].budgets.max_inspections: ...``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from equisa_core.common.options import (
    CostCap,
    DiscoveryOptions,
    EndpointOptions,
    ForgeOptions,
    LocalizationOptions,
    PerTestLimit,
    SandboxKind,
    SandboxOptions,
    ValidationOptions,
    default_of,
    renamed_setting,
)
from equisa_core.errors import RepositoriesFileError
from equisa_core.operations.forge import PublishedFix

__all__ = [
    "Budgets",
    "RepositoryEntry",
    "RepositoriesFile",
    "RepositoryResult",
    "BatchSummary",
    "RepositoryStatus",
    "parse_repositories",
    "is_remote",
    "summarize",
    "renamed_keys",
    "with_model_overrides",
    "RENAMED_BUDGETS",
]

RepositoryStatus = Literal["fixed", "plausible_only", "not_fixed", "nothing_to_fix", "error"]

#: ``scheme://...`` or scp-like ``user@host:path``: a git remote, not a local folder.
_REMOTE = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://|[\w.-]+@[\w.-]+:)")


def is_remote(source: str) -> bool:
    """Whether ``source`` names a git remote (URL or ``user@host:path``) rather than a local folder."""
    return bool(_REMOTE.match(source))


#: The budgets' keys renamed so that one name has one meaning everywhere: old key -> new key (read, with
#: a warning from ``renamed_keys``, for one release).
RENAMED_BUDGETS: dict[str, str] = {
    old: renamed_setting(old, (SandboxOptions, LocalizationOptions)) or old
    for old in ("max_iterations", "wall_clock_s")
}


class Budgets(BaseModel):
    """Limits of one repository's repair run (the ``repair`` flow's budgets)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_inspections: int = Field(default_of(LocalizationOptions, "max_inspections"), ge=0,
                                 description="Localization inspections before giving up.")
    max_validations: int = Field(default_of(ValidationOptions, "max_validations"), ge=1,
                                 description="Patch candidates validated in full.")
    max_seconds: float = Field(default_of(LocalizationOptions, "max_seconds"), gt=0,
                               description="Wall time of the localization loop.")
    max_cost_usd: CostCap = Field(default_of(EndpointOptions, "max_cost_usd"),
                                  description="LLM spend (USD) before giving up; 'none': no cap.")
    max_generated_tests: int = Field(default_of(DiscoveryOptions, "max_generated_tests"), ge=0,
                                     description="Tests Discovery may generate and keep.")
    test_timeout_s: PerTestLimit = Field(default_of(SandboxOptions, "test_timeout_s"),
                                         description="Limit per test: seconds, or auto (from its duration).")
    shard_timeout_s: float = Field(default_of(SandboxOptions, "shard_timeout_s"), gt=0,
                                   description="Wall-clock limit of one shard's run of the suite.")

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        """The old keys (``RENAMED_BUDGETS``) set the new ones, unless those are given too; a missing
        cost cap (an event template's empty value) is the default."""
        if not isinstance(data, Mapping):
            return data
        data = _new_keys(data)
        if data.get("max_cost_usd", 0) in (None, ""):
            data.pop("max_cost_usd")
        return data


def _new_keys(budgets: Mapping[str, Any]) -> dict[str, Any]:
    """``budgets`` with each old key (``RENAMED_BUDGETS``) as its new one (a new key given too wins)."""
    renamed = {key: value for key, value in budgets.items() if key not in RENAMED_BUDGETS}
    for old, new in RENAMED_BUDGETS.items():
        if old in budgets:
            renamed.setdefault(new, budgets[old])
    return renamed


class RepositoryEntry(BaseModel):
    """One repository of a batch (also the parameters of a ``repair-repository`` run)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str = Field(min_length=1, description="A local folder or a git URL.")
    name: str | None = Field(None, description="Shown in summaries; default: the source's last part.")
    ref: str | None = Field(None, description="Branch, tag or commit; default: the folder as it is, "
                                              "or the remote's HEAD.")
    python: str | None = Field(None, description="Interpreter (a prepared virtualenv's python) that runs "
                                                 "the suite; default: the repository's .venv, else EQUISA's.")
    tests: tuple[str, ...] = Field((), description="pytest paths or node ids to run; empty: the whole suite.")
    failing_tests: tuple[str, ...] = Field((), description="Tests CI saw failing (reported, and checked).")
    ci_run_url: str | None = Field(None, description="The CI run that failed, for the report.")
    llm: bool | None = Field(default_of(EndpointOptions, "llm"),
                             description="Use the model; None: when an endpoint is configured.")
    sandbox: SandboxKind = Field(
        default_of(SandboxOptions, "sandbox"),
        description="local: the strongest isolation the worker has; docker; none: a plain subprocess.")
    allow_weak_sandbox: bool = Field(default_of(SandboxOptions, "allow_weak_sandbox"),
                                     description="Repair even where the local sandbox cannot confine "
                                                 "file writes (otherwise the run fails with exit 14).")
    docker_image: str | None = None
    price_input: float | None = Field(
        default_of(EndpointOptions, "price_input"), ge=0,
        description="USD per million input tokens of a model the price table does not know.")
    price_output: float | None = Field(
        default_of(EndpointOptions, "price_output"), ge=0,
        description="USD per million output tokens of a model the price table does not know.")
    budgets: Budgets = Field(default_factory=Budgets)
    publish: ForgeOptions = Field(default_factory=ForgeOptions,
                                  description="What to do with a fix: push a branch, open a pull request.")

    @field_validator("tests", "failing_tests", mode="before")
    @classmethod
    def _split_words(cls, value: Any) -> Any:
        """A CI job may pass a test list as one whitespace- or comma-separated string."""
        if isinstance(value, str):
            return tuple(word for word in re.split(r"[\s,]+", value) if word)
        return value

    @field_validator("publish", mode="before")
    @classmethod
    def _none_is_default(cls, value: Any) -> Any:
        """An event from before ``publish`` existed renders it as nothing: publish nothing."""
        return ForgeOptions() if value is None or value == "" else value

    @field_validator("ref", "python", "ci_run_url", "name", "docker_image", "price_input", "price_output",
                     mode="before")
    @classmethod
    def _empty_is_none(cls, value: Any) -> Any:
        """An event template renders a missing value as an empty string: that means "not given"."""
        return None if isinstance(value, str) and not value.strip() else value

    @property
    def label(self) -> str:
        """The entry's name, else the last part of its source without ``.git``."""
        if self.name:
            return self.name
        last = re.split(r"[/:]", self.source.rstrip("/"))[-1]
        return last.removesuffix(".git") or self.source

    def resolved(self, base: PurePath) -> RepositoryEntry:
        """The entry with a relative local ``source`` made relative to ``base`` (the file's folder)."""
        if is_remote(self.source) or PurePath(self.source).is_absolute():
            return self
        return self.model_copy(update={"source": str(base / self.source)})


class RepositoriesFile(BaseModel):
    """The repositories file: optional defaults and a non-empty list of repositories."""

    model_config = ConfigDict(extra="forbid")

    defaults: dict[str, Any] = Field(default_factory=dict, description="Keys merged under every entry.")
    repositories: list[RepositoryEntry] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _merge_defaults(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        defaults = data.get("defaults") or {}
        entries = data.get("repositories")
        if not isinstance(defaults, Mapping) or not isinstance(entries, list):
            return data
        merged = []
        for entry in entries:
            if isinstance(entry, str):  # a bare folder or URL
                entry = {"source": entry}
            if isinstance(entry, Mapping) and isinstance(entry.get("budgets") or {}, Mapping):
                budgets = {**_new_keys(_mapping(defaults.get("budgets"))),
                           **_new_keys(_mapping(entry.get("budgets")))}
                entry = {**defaults, **entry, **({"budgets": budgets} if budgets else {})}
            merged.append(entry)
        return {**data, "repositories": merged}

    @model_validator(mode="after")
    def _unique_names(self) -> RepositoriesFile:
        seen: dict[str, int] = {}
        for index, entry in enumerate(self.repositories):
            if entry.label in seen:
                raise ValueError(f"repositories[{index}] and repositories[{seen[entry.label]}] are both "
                                 f"named {entry.label!r}; give one a distinct `name`")
            seen[entry.label] = index
        return self


def parse_repositories(data: Any, base: PurePath, origin: str = "repositories file") -> list[RepositoryEntry]:
    """Validate parsed YAML ``data`` into entries whose relative folders are resolved against ``base``.

    Raises ``RepositoriesFileError`` naming each bad entry and key.
    """
    if data is None:
        raise RepositoriesFileError(f"{origin} is empty; it needs a `repositories:` list")
    if isinstance(data, list):  # a bare list of entries is accepted too
        data = {"repositories": data}
    if not isinstance(data, Mapping):
        raise RepositoriesFileError(f"{origin} must be a mapping with a `repositories:` list, "
                                    f"not a {type(data).__name__}")
    try:
        parsed = RepositoriesFile.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(_problem(e) for e in error.errors()[:8])
        more = f" (and {error.error_count() - 8} more)" if error.error_count() > 8 else ""
        raise RepositoriesFileError(f"{origin} is invalid: {problems}{more}") from None
    return [entry.resolved(base) for entry in parsed.repositories]


def with_model_overrides(entries: Sequence[RepositoryEntry], max_cost_usd: CostCap | None,
                         price_input: float | None, price_output: float | None) -> list[RepositoryEntry]:
    """``entries`` with the cost cap and prices given for the whole batch (None: each entry's own)."""
    changed = []
    for entry in entries:
        update: dict[str, Any] = {key: value for key, value in
                                  (("price_input", price_input), ("price_output", price_output))
                                  if value is not None}
        if max_cost_usd is not None:
            update["budgets"] = entry.budgets.model_copy(update={"max_cost_usd": max_cost_usd})
        changed.append(entry.model_copy(update=update) if update else entry)
    return changed


def _mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a mapping, else an empty one (a wrong type is reported by validation)."""
    return value if isinstance(value, Mapping) else {}


def renamed_keys(data: Any) -> list[str]:
    """A warning for each renamed budget key (``RENAMED_BUDGETS``) that parsed ``data`` still uses,
    naming where and the key that replaces it."""
    if isinstance(data, list):
        data = {"repositories": data}
    if not isinstance(data, Mapping):
        return []
    places: list[tuple[str, Any]] = [("defaults", data.get("defaults"))]
    entries = data.get("repositories")
    places += [(f"repositories[{index}]", entry) for index, entry in enumerate(entries or [])
               if isinstance(entries, list)]
    found = []
    for where, part in places:
        budgets = part.get("budgets") if isinstance(part, Mapping) else None
        for old, new in RENAMED_BUDGETS.items():
            if isinstance(budgets, Mapping) and old in budgets:
                found.append(f"{where}.budgets.{old} is deprecated and will be removed in the next "
                             f"release: use {new}")
    return found


def _problem(error: Mapping[str, Any]) -> str:
    location = ""
    for part in error.get("loc", ()):
        location += f"[{part}]" if isinstance(part, int) else (f".{part}" if location else str(part))
    message = str(error.get("msg", "invalid"))
    if error.get("type") == "extra_forbidden":
        message = "unknown key"
    return f"{location or 'file'}: {message}"


class RepositoryResult(BaseModel):
    """What one repository's run came to, as the batch summary shows it."""

    model_config = ConfigDict(frozen=True)

    name: str
    source: str
    ref: str | None = None
    status: RepositoryStatus
    target: str | None = Field(None, description="The function patched (or the top suspect).")
    diff: str = ""
    failing_tests: int = 0
    ci_failing_tests: tuple[str, ...] = ()
    ci_run_url: str | None = None
    candidates_tried: int = 0
    seconds: float = Field(0.0, description="Wall time of the repository's run.")
    error: str | None = None
    exit_code: int = 0
    report_path: str | None = None
    flow_run_id: str | None = None
    problems: tuple[str, ...] = ()
    published: PublishedFix | None = Field(None, description="The fix branch and pull request (publish).")


class BatchSummary(BaseModel):
    """The batch's results, one per repository in file order, with counts per status."""

    results: tuple[RepositoryResult, ...]
    counts: dict[str, int]
    seconds: float
    reports_dir: str | None = None

    def table_rows(self) -> list[dict[str, Any]]:
        """Rows of the summary table artifact (one per repository)."""
        return [
            {"repository": r.name, "ref": r.ref or "", "status": r.status, "target": r.target or "",
             "failing tests": r.failing_tests, "candidates": r.candidates_tried,
             "seconds": round(r.seconds, 1), "note": (r.error or "")[:200]}
            for r in self.results
        ]


def summarize(results: Sequence[RepositoryResult], seconds: float,
              reports_dir: str | None = None) -> BatchSummary:
    """The batch summary: results in order and the count of each status (every status listed)."""
    counts = {status: 0 for status in ("fixed", "plausible_only", "not_fixed", "nothing_to_fix", "error")}
    for result in results:
        counts[result.status] += 1
    return BatchSummary(results=tuple(results), counts=counts, seconds=seconds, reports_dir=reports_dir)

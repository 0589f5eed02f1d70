"""Prefect tasks of a batch's input and output: the repositories file and the per-repository reports."""

from __future__ import annotations

import os
import re
from pathlib import Path

import yaml
from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel

from equisa_core.errors import RepositoriesFileError
from equisa_core.operations.batch import RepositoryEntry, parse_repositories, renamed_keys
from tasks.sandbox.scratch import cache_folder

__all__ = ["read_repositories", "load_repositories", "write_report", "default_reports_dir", "check_sandboxes",
           "check_models"]


def load_repositories(path: Path, warnings: list[str] | None = None) -> list[RepositoryEntry]:
    """Read and validate a repositories file; relative folders are taken from the file's own folder.
    The old keys it still uses (``renamed_keys``) are appended to ``warnings``.

    Raises ``RepositoriesFileError`` (exit code 50) with the file, the entry and the key at fault.
    """
    if not path.is_file():
        raise RepositoriesFileError(f"repositories file {path} does not exist or is not a file")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise RepositoriesFileError(f"repositories file {path} cannot be read: {error}") from None
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        at = f" (line {where.line + 1}, column {where.column + 1})" if where is not None else ""
        raise RepositoriesFileError(f"repositories file {path} is not valid YAML{at}: "
                                    f"{getattr(error, 'problem', None) or error}") from None
    entries = parse_repositories(data, path.resolve().parent, origin=f"repositories file {path}")
    if warnings is not None:
        warnings.extend(f"{path}: {note}" for note in renamed_keys(data))
    return entries


@task(name="read-repositories", cache_policy=NO_CACHE)
def read_repositories(path: str) -> list[RepositoryEntry]:
    """The validated entries of the repositories file at ``path`` (its old keys are logged as warnings)."""
    from prefect import get_run_logger

    notes: list[str] = []
    entries = load_repositories(Path(path), notes)
    for note in notes:
        get_run_logger().warning(note)
    return entries


def default_reports_dir() -> Path:
    """Where reports go when no folder is given: ``EQUISA_REPORTS``, else ``$XDG_CACHE_HOME/equisa/reports``
    (``~/.cache/equisa/reports`` without it)."""
    configured = os.environ.get("EQUISA_REPORTS")
    return Path(configured) if configured else cache_folder("reports")


@task(name="write-report", cache_policy=NO_CACHE, retries=1, retry_delay_seconds=1)
def write_report(folder: str, name: str, report: BaseModel) -> str:
    """Write ``report`` as ``<folder>/<name>.json`` (written whole, then renamed); returns the path."""
    target_dir = Path(folder)
    target_dir.mkdir(parents=True, exist_ok=True)
    safe = re.sub(r"[^\w.-]+", "_", name).strip("._") or "repository"
    target = target_dir / f"{safe}.json"
    partial = target.with_suffix(f".json.{os.getpid()}.part")
    partial.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    partial.replace(target)
    return str(target)


def check_sandboxes(entries: list[RepositoryEntry]) -> None:
    """Stop before any work (exit 14) when a repository would run generated code where this
    machine's sandbox cannot confine file writes and its entry does not accept that."""
    from equisa_core.common.sandbox_policy import require_confinement
    from tasks.sandbox.run_tests import sandbox_isolation

    refused = [e.label for e in entries if e.sandbox == "local" and not e.allow_weak_sandbox]
    if refused:
        require_confinement(sandbox_isolation("local"), f"generated code for {', '.join(refused)}",
                            remedy="allow_weak_sandbox: true in an entry runs its repair anyway")


def check_models(entries: list[RepositoryEntry]) -> None:
    """Stop before any work (exit 12) when a repository would use a model (its ``llm``, or an endpoint
    configured here) whose spending its cost cap cannot follow (``tasks.llm.priced_config``), or
    with no endpoint when its entry asks for the model."""
    from equisa_core.common.options import EndpointOptions
    from equisa_core.errors import LLMRequestError
    from tasks.llm import choose_llm_mode

    for entry in entries:
        try:
            choose_llm_mode(EndpointOptions(llm=entry.llm, max_cost_usd=entry.budgets.max_cost_usd,
                                            price_input=entry.price_input, price_output=entry.price_output))
        except LLMRequestError as error:
            raise LLMRequestError(f"{entry.label}: {error.message}") from None

"""``equisa doctor``: whether this machine and one repository have what a run needs, checked without
running one.

Each check is a plain function that returns a ``Check``: its status, what it found and, when it is not
``ok``, what to do. The statuses:

- ``ok``: present and working (or not configured where that is fine: no model is deterministic mode);
- ``warning``: absent or weak, but a run does not need it as configured (no Docker engine without
  ``--sandbox docker``, a local sandbox that cannot confine file writes);
- ``missing``: a run needs it and it is absent or broken; ``equisa doctor`` then exits 18
  (``DoctorError``).

What a run needs: an interpreter that runs with pytest importable (or an environment uv can build: uv
found and an interpreter ``requires-python`` admits), a sandbox (local isolation of any level; a Docker
engine and its image only with ``--sandbox docker``), a usable artifact store and DuckDB history, and
whatever the user configured: a ``PREFECT_API_URL`` and a model endpoint that answer. No Prefect server
(commands start one) and no model (deterministic mode) are fine. Nothing here builds an environment,
starts a server, migrates the history or stores anything (a scratch file in the artifact folder
is made and removed at once).
"""

from __future__ import annotations

import functools
import os
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, create_model

from equisa_core.common.options import SandboxOptions, StorageOptions
from equisa_core.errors import EnvironmentBuildError, EquisaError, HistoryError, InterpreterError

__all__ = ["Check", "DoctorOptions", "DoctorReport", "Status", "check_artifacts", "check_docker",
           "check_environment", "check_history", "check_interpreter", "check_isolation", "check_model",
           "check_prefect", "diagnose"]

Status = Literal["ok", "warning", "missing"]

#: Seconds a network check (Docker engine, Prefect's health endpoint, S3) waits for an answer.
NETWORK_TIMEOUT_S = 5.0
#: Seconds the model gets for its one-token answer (a local server may first load the model).
MODEL_TIMEOUT_S = 20.0
#: Seconds the history's lock is waited for before the file counts as locked.
HISTORY_TIMEOUT_S = 5.0

#: The run options that choose what doctor checks, taken as they are from the option models.
DOCTOR_FIELDS: dict[type[BaseModel], tuple[str, ...]] = {
    SandboxOptions: ("python", "provision", "environments", "sandbox", "allow_weak_sandbox", "docker_image"),
    StorageOptions: ("artifacts", "db"),
}

#: ``equisa doctor``'s options: the fields of ``DOCTOR_FIELDS``, with their types, defaults and help.
_DOCTOR_FIELDS: dict[str, Any] = {name: (model.model_fields[name].annotation, model.model_fields[name])
                                   for model, names in DOCTOR_FIELDS.items() for name in names}
DoctorOptions: type[BaseModel] = create_model(
    "DoctorOptions", __doc__="The options of the run commands that choose what ``equisa doctor`` checks.",
    **_DOCTOR_FIELDS)


class Check(BaseModel):
    """One line of the doctor's answer."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="What was checked: interpreter, environment, isolation, docker, prefect, "
                                  "artifacts, history, model.")
    status: Status
    found: str = Field(description="What was found, in one line.")
    fix: str | None = Field(None, description="What to do, in one line (for a warning or a missing part).")
    needed: bool = Field(description="Whether a run as configured needs this part: only a needed part "
                                     "can be missing.")


class DoctorReport(BaseModel):
    """Every check of one ``equisa doctor`` run."""

    model_config = ConfigDict(frozen=True)

    repository: str
    checks: list[Check]

    @computed_field  # type: ignore[prop-decorator]  # mypy does not know pydantic's decorator on a property
    @property
    def missing(self) -> list[str]:
        """The needed parts that are missing (empty: a run has what it needs)."""
        return [check.name for check in self.checks if check.status == "missing"]

    @computed_field  # type: ignore[prop-decorator]  # mypy does not know pydantic's decorator on a property
    @property
    def ok(self) -> bool:
        """Whether every needed part is present."""
        return not self.missing


def _ok(name: str, found: str, needed: bool = True) -> Check:
    return Check(name=name, status="ok", found=found, needed=needed)


def _problem(name: str, found: str, fix: str, needed: bool) -> Check:
    """``missing`` when ``needed``, else ``warning``."""
    return Check(name=name, status="missing" if needed else "warning", found=found, fix=fix, needed=needed)


# --- the interpreter and its environment ---------------------------------------------------------


@dataclass(frozen=True)
class _Plan:
    """The environment a run would build with uv: from what, with which interpreter, cached or not."""

    made_from: tuple[str, ...]
    root: Path
    python: str | None = None
    version: str | None = None
    cached: Path | None = None
    problem: str | None = None

    def describe(self) -> str:
        """``an environment built with uv from pyproject.toml, uv.lock``."""
        return f"an environment built with uv from {', '.join(self.made_from) or 'nothing declared'}"


@functools.cache
def _plan(repo: Path, environments: str | None) -> _Plan:
    """What ``tasks.run.environments.provisioned`` would do for ``repo``, without doing it."""
    from tasks.run.environments import MARKER, build_candidates, default_environments, read_declared

    declared = read_declared(repo)
    root = Path(environments).expanduser() if environments else default_environments()
    made_from = tuple(declared.inputs)
    try:
        candidates = build_candidates(repo, declared)
    except EnvironmentBuildError as error:
        return _Plan(made_from=made_from, root=root, problem=error.message)
    for candidate in candidates:  # as ``provisioned``: a finished one of any admitted interpreter
        folder = root / candidate.digest
        if (folder / MARKER).is_file():
            return _Plan(made_from=made_from, root=root, python=str(folder / "bin" / "python"),
                         version=candidate.version, cached=folder)
    return _Plan(made_from=made_from, root=root, python=candidates[0].python, version=candidates[0].version)


def _chosen_interpreter(repo: Path, python: str | None, provision: bool) -> tuple[str, str] | None:
    """The interpreter a run would pick and why (None: an environment would be built); raises
    ``InterpreterError`` when ``--python`` names none."""
    from tasks.run.interpreter import _chosen

    return _chosen(repo, python, provision)


def check_interpreter(repo: Path, python: str | None = None, provision: bool = True,
                      environments: str | None = None, sandbox: str = "local") -> Check:
    """The interpreter that would run the suite: it runs, is Python 3.8+ and imports pytest (an
    environment not built yet counts when an interpreter here may build it)."""
    from tasks.run.interpreter import resolve_interpreter

    name = "interpreter"
    if sandbox == "docker":
        return _ok(name, f"`{python or 'python3'}` in the Docker image (not checked here: see docker)")
    fix = ("give an interpreter that has pytest: --python PATH (or `PATH -m pip install pytest`), or "
           "leave --python out")
    try:
        chosen = _chosen_interpreter(repo, python, provision)
        if chosen is not None:
            found = resolve_interpreter(repo, python, provision)
            return _ok(name, f"{found.path}: Python {found.version}, pytest {found.pytest_version} "
                             f"({found.chosen_because})")
    except InterpreterError as error:
        return _problem(name, error.message, fix, needed=True)
    plan = _plan(repo, environments)
    if plan.problem:
        return _problem(name, plan.problem, "install a Python that the project's requires-python admits, or "
                        "give one with --python", needed=True)
    if plan.cached is None:
        return _ok(name, f"Python {plan.version} ({plan.python}) for {plan.describe()}: not built yet, "
                         "the first run builds it")
    try:
        found = resolve_interpreter(repo, plan.python, provision)
    except InterpreterError as error:
        return _problem(name, f"the cached environment does not work: {error.message}",
                        f"remove {plan.cached} (the next run builds it again)", needed=True)
    return _ok(name, f"{found.path}: Python {found.version}, pytest {found.pytest_version} "
                     f"({plan.describe()}, cached)")


def check_environment(repo: Path, python: str | None = None, provision: bool = True,
                      environments: str | None = None, sandbox: str = "local") -> Check:
    """Whether the suite's environment would be built with uv, from what, whether a built one is
    cached, and whether uv is found (needed only to build one)."""
    from tasks.run.environments import find_uv

    name = "environment"
    try:
        uv: str | None = find_uv()
    except EnvironmentBuildError:
        uv = None
    uv_found = f"uv {uv}" if uv else "uv not found"
    if sandbox == "docker":
        return _ok(name, f"none built: --sandbox docker runs the image's interpreter ({uv_found})",
                   needed=False)
    try:
        chosen = _chosen_interpreter(repo, python, provision)
    except InterpreterError:
        chosen = ("", "given with --python")
    if chosen is not None:
        return _ok(name, f"none built: the interpreter is {chosen[1]} ({uv_found})", needed=False)
    plan = _plan(repo, environments)
    if plan.problem:
        return _problem(name, f"{plan.describe()} cannot be built: no interpreter fits ({uv_found})",
                        "install a Python that the project's requires-python admits, or give --python",
                        needed=True)
    if plan.cached is not None:
        return _ok(name, f"{plan.describe()} (Python {plan.version}) is cached in {plan.cached}: reused "
                         f"({uv_found})")
    if uv is None:
        return _problem(name, f"{plan.describe()} (Python {plan.version}) is to be built, but uv is not "
                              "found", "pip install uv, or give --python, or --no-provision", needed=True)
    return _ok(name, f"{plan.describe()} (Python {plan.version}) is not cached under {plan.root}: the "
                     f"first run builds it with {uv} (network needed then)")


# --- the sandbox ---------------------------------------------------------------------------------


def check_isolation(sandbox: str = "local", allow_weak_sandbox: bool = False) -> Check:
    """The local sandbox's isolation here (``tasks.sandbox.isolation.detect_isolation``): any level runs the
    suite; one that cannot confine file writes is a warning (runs that execute generated code refuse it
    without ``--allow-weak-sandbox``)."""
    from equisa_core.common.sandbox_policy import SandboxIsolation
    from tasks.sandbox.contract import SandboxInfrastructureError
    from tasks.sandbox.isolation import detect_isolation

    name = "isolation"
    needed = sandbox == "local"
    try:
        detected = detect_isolation()
    except SandboxInfrastructureError as error:
        return _problem(name, error.message, "unset EQUISA_LOCAL_ISOLATION (the strongest level that works "
                        "is then used) or make the level it names work", needed=needed)
    found = f"local sandbox: {detected.level.value} ({detected.reason})"
    if sandbox != "local":
        return _ok(name, f"not used (--sandbox {sandbox}); {found}", needed=False)
    isolation = SandboxIsolation(backend="local", level=detected.level, reason=detected.reason)
    if isolation.confines_files or allow_weak_sandbox:
        accepted = "" if isolation.confines_files else "; weak isolation accepted (--allow-weak-sandbox)"
        return _ok(name, found + accepted)
    return Check(name=name, status="warning", needed=True,
                 found=found + ": file writes are not confined, so runs of generated code refuse (exit 14)",
                 fix="install bubblewrap (apt-get install bubblewrap) or enable unprivileged user "
                     "namespaces; or accept it with --allow-weak-sandbox")


def check_docker(sandbox: str = "local", docker_image: str | None = None) -> Check:
    """Whether a Docker engine answers (short timeout) and holds the sandbox's image; needed only with
    ``--sandbox docker``."""
    import docker.errors
    import requests

    from tasks.sandbox.contract import SandboxInfrastructureError
    from tasks.sandbox.docker_backend import DockerSandbox

    name = "docker"
    needed = sandbox == "docker"
    unneeded = "" if needed else " (needed only for --sandbox docker)"
    backend = DockerSandbox(image=docker_image, api_timeout_s=int(NETWORK_TIMEOUT_S))
    try:
        client = backend.client()
    except SandboxInfrastructureError as error:
        return _problem(name, f"{error.message}{unneeded}",
                        "start a Docker engine or point DOCKER_HOST at one" +
                        (", or use --sandbox local" if needed else ""), needed=needed)
    try:
        version = client.version().get("Version", "?")
        where = client.api.base_url
        try:
            client.images.get(backend.image)
        except docker.errors.ImageNotFound:
            return _problem(name, f"engine {version} at {where} answers, but the image {backend.image} is "
                            f"missing{unneeded}",
                            f"build it: python -m tasks.sandbox.docker_image --name {backend.image}", needed=needed)
        return _ok(name, f"engine {version} at {where}; image {backend.image} present", needed=needed)
    except (docker.errors.DockerException, requests.RequestException) as error:
        return _problem(name, f"the Docker engine failed: {type(error).__name__}: {error}{unneeded}",
                        "check the engine (docker info)", needed=needed)
    finally:
        client.close()


# --- the Prefect server --------------------------------------------------------------------------


def check_prefect() -> Check:
    """The Prefect API a command's flows would use: a configured ``PREFECT_API_URL`` must answer
    ``/health`` (the user chose it, and commands use it unchanged); else the shared local server's
    state: none running is fine (commands start it)."""
    import httpx
    from prefect.settings import get_current_settings

    from tasks.operations.ci_trigger import auth_headers
    from tasks.prefect_server.server import _configured_api_url, server_options, server_status

    name = "prefect"
    configured = _configured_api_url(os.environ)
    if configured:
        settings = get_current_settings().api
        headers = auth_headers(settings.auth_string.get_secret_value() if settings.auth_string else None,
                               settings.key.get_secret_value() if settings.key else None)
        fix = ("start that server, fix PREFECT_API_URL, or unset it (commands then start a local server)")
        try:
            answer = httpx.get(configured.rstrip("/") + "/health", headers=headers, timeout=NETWORK_TIMEOUT_S)
        except httpx.HTTPError as error:
            return _problem(name, f"PREFECT_API_URL {configured} does not answer: {type(error).__name__}: "
                                  f"{error}", fix, needed=True)
        if answer.status_code in (401, 403):
            return _problem(name, f"PREFECT_API_URL {configured} refused the credentials (HTTP "
                                  f"{answer.status_code})", "set PREFECT_API_KEY or PREFECT_API_AUTH_STRING",
                            needed=True)
        if answer.status_code != 200:
            return _problem(name, f"PREFECT_API_URL {configured}/health answered HTTP {answer.status_code}",
                            fix, needed=True)
        return _ok(name, f"PREFECT_API_URL {configured} answers")
    try:
        options = server_options()
    except EquisaError as error:
        return _problem(name, error.message, "unset EQUISA_PREFECT_* or fix its value", needed=True)
    if options.mode == "ephemeral":
        return _ok(name, "none configured: EQUISA_PREFECT_SERVER=ephemeral, each command starts Prefect's "
                         "temporary server", needed=False)
    status = server_status(options)
    if status.state is not None and status.healthy:
        return _ok(name, f"the shared local server at {status.state.url} answers (pid {status.state.pid})",
                   needed=False)
    return _ok(name, f"no server running: commands start the shared local server ({options.folder}) on "
                     "first use", needed=False)


# --- storage -------------------------------------------------------------------------------------


def _writable_folder(folder: Path) -> str | None:
    """Why files cannot be written in ``folder`` (None when they can): a file is made and removed
    there; a folder not made yet is judged by its nearest existing parent."""
    if folder.exists():
        if not folder.is_dir():
            return f"{folder} is not a folder"
        try:
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".equisa-doctor-"):
                return None
        except OSError as error:
            return f"cannot write in {folder}: {error.strerror or error}"
    parent = next((p for p in folder.parents if p.exists()), None)
    if parent is None or not parent.is_dir():
        return f"{folder} cannot be made: {parent} is not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{folder} cannot be made: {parent} is not writable"
    return None


def _within(seconds: float, work: Callable[[], None]) -> BaseException | None:
    """Run ``work`` in a daemon thread; the exception it raised, a ``TimeoutError`` when it did not end
    within ``seconds`` (the thread is left to die with the process), or None."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            work()
            outcome.append(None)
        except BaseException as error:  # handed to the caller
            outcome.append(error)

    worker = threading.Thread(target=run, name="equisa-doctor-check", daemon=True)
    worker.start()
    worker.join(seconds)
    return outcome[0] if outcome else TimeoutError(f"no answer within {seconds:g} s")


def check_artifacts(artifacts: str | None = None) -> Check:
    """The artifact store (``--artifacts``, ``EQUISA_ARTIFACTS``, the default folder): a folder files can
    be written in, or an S3 bucket that answers ``HeadBucket`` with the credentials given."""
    from equisa_core.operations.storage import resolve_artifacts
    from tasks.storage.artifacts import ArtifactStore, _endpoint

    name = "artifacts"
    try:
        location = resolve_artifacts(artifacts)
    except EquisaError as error:
        return _problem(name, error.message, "give a folder or s3://BUCKET/PREFIX (--artifacts, "
                        "EQUISA_ARTIFACTS)", needed=True)
    if location.kind == "local":
        folder = Path(location.folder or ".")
        problem = _writable_folder(folder)
        if problem:
            return _problem(name, problem, "point --artifacts / EQUISA_ARTIFACTS at a writable folder",
                            needed=True)
        return _ok(name, f"folder {folder}" + ("" if folder.exists() else " (made at the first run)"))
    endpoint = _endpoint() or "AWS"
    store = ArtifactStore(location)
    # botocore retries with its own timeouts; the doctor waits NETWORK_TIMEOUT_S for them, twice over.
    failure = _within(2 * NETWORK_TIMEOUT_S, store.check)
    if failure is None:
        return _ok(name, f"{location.uri()} (endpoint {endpoint}): the bucket answers")
    message = failure.message if isinstance(failure, EquisaError) else f"{type(failure).__name__}: {failure}"
    if isinstance(failure, TimeoutError):
        message = f"{location.uri()} (endpoint {endpoint}): {message}"
    return _problem(name, message, "start or fix the S3 endpoint (AWS_ENDPOINT_URL), its credentials and "
                    "bucket, or use a local folder: --artifacts FOLDER (runs spool what S3 does not take)",
                    needed=True)


def check_history(db: str | None = None) -> Check:
    """The DuckDB history (``--db``, ``EQUISA_DB``, the default file): opened read-only when it exists, its
    schema no newer than this EQUISA's; else its folder must let a run make it."""
    from equisa_core.history import SCHEMA_VERSION
    from equisa_core.operations.storage import resolve_db
    from tasks.storage.history import _session, schema_version

    name = "history"
    path = resolve_db(db)
    fix = "move the file aside, or point --db / EQUISA_DB at another file"
    if not path.exists():
        problem = _writable_folder(path.parent)
        if problem:
            return _problem(name, problem, "point --db / EQUISA_DB at a file in a writable folder",
                            needed=True)
        return _ok(name, f"{path} (made at the first run)")
    if path.is_dir():
        return _problem(name, f"{path} is a folder, not a DuckDB file", fix, needed=True)
    try:
        with _session(path, exclusive=False, deadline=time.monotonic() + HISTORY_TIMEOUT_S) as connection:
            version = schema_version(connection)
            runs = (connection.execute("SELECT count(*) FROM runs").fetchone()[0]
                    if 0 < version <= SCHEMA_VERSION else None)
    except HistoryError as error:
        return _problem(name, error.message, fix, needed=True)
    if version > SCHEMA_VERSION:
        newer = f"{path} has schema version {version}, newer than this EQUISA's {SCHEMA_VERSION}"
        return _problem(name, newer, "upgrade EQUISA, or point --db / EQUISA_DB at another file", needed=True)
    if version < SCHEMA_VERSION:
        return _ok(name, f"{path}: schema version {version}, migrated to {SCHEMA_VERSION} by the next run")
    return _ok(name, f"{path}: schema version {version}, {runs} run(s) recorded")


# --- the model -----------------------------------------------------------------------------------


def check_model() -> Check:
    """The model endpoint (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``EQUISA_MODEL``), when one is
    configured: one chat completion of at most one token, with a short timeout. None configured is
    deterministic mode (fine); one configured that fails is missing (the user asked for it)."""
    import openai

    from tasks.llm import LLMConfig, llm_available

    name = "model"
    if not llm_available():
        return _ok(name, "not configured (no OPENAI_BASE_URL or OPENAI_API_KEY): deterministic mode only",
                   needed=False)
    fix = "fix OPENAI_BASE_URL, OPENAI_API_KEY or EQUISA_MODEL, or unset them (or run with --no-llm)"
    try:
        config = LLMConfig.from_env(timeout_s=MODEL_TIMEOUT_S)
    except (EquisaError, ValueError) as error:
        return _problem(name, f"the model's settings are unusable: {error}", fix, needed=True)
    where = config.base_url or "the OpenAI API"
    messages: list[Any] = [{"role": "user", "content": "Say OK."}]
    try:
        with openai.OpenAI(base_url=config.base_url, api_key=config.api_key.get_secret_value() or "EMPTY",
                           timeout=config.timeout_s, max_retries=0) as client:
            try:
                client.chat.completions.create(model=config.model, messages=messages, max_tokens=1)
            except openai.BadRequestError as error:  # newer models take max_completion_tokens only
                if "max_tokens" not in str(error):
                    raise
                client.chat.completions.create(model=config.model, messages=messages, max_completion_tokens=1)
    except openai.APITimeoutError:
        return _problem(name, f"model {config.model!r} at {where} did not answer within "
                              f"{config.timeout_s:g} s", fix, needed=True)
    except openai.APIConnectionError as error:
        return _problem(name, f"cannot reach {where}: {error.__cause__ or error}", fix, needed=True)
    except openai.APIStatusError as error:
        return _problem(name, f"HTTP {error.status_code} from {where} for model {config.model!r}: "
                              f"{error.message}", fix, needed=True)
    except (openai.OpenAIError, ValueError) as error:
        return _problem(name, f"the request to {where} for model {config.model!r} failed: {error}", fix,
                        needed=True)
    return _ok(name, f"model {config.model!r} at {where} answers")


# --- all of them ---------------------------------------------------------------------------------


def diagnose(repo: Path, options: BaseModel, on_check: Callable[[Check], None] | None = None) -> DoctorReport:
    """Every check, in order, for ``repo`` and the ``DoctorOptions`` ``options``; ``on_check`` is called
    with each as it is done. A check that fails unexpectedly is reported as missing, not raised."""
    values = options.model_dump()
    python, provision, environments = values["python"], values["provision"], values["environments"]
    sandbox = values["sandbox"]
    steps: list[tuple[str, Callable[[], Check]]] = [
        ("interpreter", lambda: check_interpreter(repo, python, provision, environments, sandbox)),
        ("environment", lambda: check_environment(repo, python, provision, environments, sandbox)),
        ("isolation", lambda: check_isolation(sandbox, values["allow_weak_sandbox"])),
        ("docker", lambda: check_docker(sandbox, values["docker_image"])),
        ("prefect", check_prefect),
        ("artifacts", lambda: check_artifacts(values["artifacts"])),
        ("history", lambda: check_history(values["db"])),
        ("model", check_model),
    ]
    checks = []
    for name, step in steps:
        try:
            check = step()
        except Exception as error:  # a bug or an unforeseen failure: said on its line, the others still run
            check = Check(name=name, status="missing", needed=True,
                          found=f"the check failed: {type(error).__name__}: {error}",
                          fix="a bug in equisa doctor: please report it with this line")
        checks.append(check)
        if on_check is not None:
            on_check(check)
    return DoctorReport(repository=str(repo), checks=checks)

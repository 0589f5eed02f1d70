"""Test environments built with uv from what a repository declares (``equisa_core.environment``).

When no interpreter is given (``--python``, a venv inside the repository, ``$VIRTUAL_ENV``),
``provisioned`` builds one: a venv of an interpreter of this machine that the project admits
(chosen as below), holding

- with ``uv.lock`` and a ``[project]``: the lock (``uv sync --frozen``, every extra and group);
- otherwise: the project installed editable with its test extras, the requirement files, the test
  dependency groups and tox's ``deps``, with ``poetry.lock``'s versions as constraints;
- and pytest, whatever was declared: no release uploaded after the declaring files were last
  committed (``equisa_core.environment.declared.pytest_cutoff``; the newest without git history).

The interpreter is the best of this machine's that ``requires-python`` admits
(``equisa_core.environment.declared.python_preference``: the versions the project's classifiers
name first, else the newest; EQUISA's own when nothing says). When the install
fails, it is tried again with the build back-ends an older project's unpinned ``build-system``
still works with (``LEGACY_BUILD_CONSTRAINTS``), then one requirement at a time, those that do not
install left out (requirement files, groups and tox's ``deps`` may pin what no resolver satisfies
together, as pip's old resolver let them), then on the next older interpreter
(``MAX_PYTHON_ATTEMPTS``).

The project is installed from a private copy of its declaring files and sources kept inside the
environment (``PROJECT_COPY``): building never writes into the user's tree (a setuptools build
writes ``*.egg-info`` next to the sources). What runs is still the sandbox's copy: its import
roots come first on ``PYTHONPATH`` (``tasks.sandbox.local_backend``).

Environments are cached under ``environments`` by the hash of the declaring files, the Python
version and ``RECIPE`` (``DeclaredEnvironment.digest``): a reuse only reads a marker file, a change
to any declaring file builds another. Builds of one environment are serialised by a lock file;
a failed build leaves nothing behind. The network is used by uv here only; the suite's runs stay
offline in the sandbox.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from equisa_core.environment.declared import (
    DECLARATION_FILES,
    DeclaredEnvironment,
    declared_environment,
    pytest_cutoff,
    python_preference,
)
from equisa_core.errors import EnvironmentBuildError
from equisa_core.probe import MIN_PYTHON
from tasks.sandbox.scratch import cache_folder

__all__ = ["RECIPE", "MARKER", "MAX_PYTHON_ATTEMPTS", "LEGACY_BUILD_CONSTRAINTS", "PROJECT_COPY",
           "Candidate", "Provisioned", "build_candidates", "default_environments",
           "find_uv", "machine_pythons", "provisioned", "read_declared"]

#: Bumped whenever the build's steps change: environments built otherwise are not reused.
RECIPE = "equisa-environment-1"
#: The file a finished build writes last, inside the environment.
MARKER = "equisa-environment.json"
#: The private copy of the project the environment installs (editable) from.
PROJECT_COPY = "equisa-project"
#: Folders never copied into the project's private copy.
_NOT_COPIED = shutil.ignore_patterns(".git", ".hg", ".venv", "venv", ".tox", ".nox", "node_modules",
                                     "__pycache__", "*.pyc", ".mypy_cache", ".pytest_cache", ".ruff_cache",
                                     "build", "dist", "*.egg-info")
#: Interpreters a build tries, best first, before it gives up.
MAX_PYTHON_ATTEMPTS = 3
#: Build back-ends an older project's unpinned ``build-system`` still works with, tried when the
#: first install fails: setuptools before the removal of ``pkg_resources``' import path in build
#: environments and of ``setup.py test``, flit before it dropped ``[tool.flit.metadata]``.
LEGACY_BUILD_CONSTRAINTS = ("setuptools<70", "flit_core<4")
#: The environments this process built (a command prepares its run more than once).
_BUILT_HERE: dict[Path, Provisioned] = {}
#: uv's output kept in an error message.
_ERROR_TAIL_CHARS = 2000


class Provisioned(BaseModel):
    """A built environment: its interpreter, how it was made, and whether it was reused."""

    model_config = ConfigDict(frozen=True)

    python: str
    python_version: str
    folder: str
    digest: str
    reused: bool
    seconds: float
    made_from: tuple[str, ...]
    steps: tuple[str, ...]

    def describe(self) -> str:
        """One line for the report: which environment ran and how it was made."""
        how = "reused" if self.reused else f"built in {self.seconds:.1f} s"
        return (f"an environment built with uv from {', '.join(self.made_from)} "
                f"(Python {self.python_version}, {how}; {self.folder})")


def default_environments() -> Path:
    """``$XDG_CACHE_HOME/equisa/environments``, else ``~/.cache/equisa/environments``."""
    return cache_folder("environments")


def read_declared(repo: Path) -> DeclaredEnvironment:
    """What ``repo``'s files declare (``equisa_core.environment.declared``)."""
    names = [name for name in DECLARATION_FILES if (repo / name).is_file()]
    names += [p.name for p in repo.glob("requirements*.txt") if p.is_file()]
    if (repo / "requirements").is_dir():
        names += [f"requirements/{p.name}" for p in (repo / "requirements").glob("*.txt") if p.is_file()]
    files = {name: (repo / name).read_text(encoding="utf-8", errors="replace") for name in sorted(set(names))}
    declared = declared_environment(files)
    # tox may name requirement files elsewhere: they are inputs too.
    extra = [f for f in declared.requirement_files if f not in files and (repo / f).is_file()]
    if extra:
        files.update({f: (repo / f).read_text(encoding="utf-8", errors="replace") for f in extra})
        declared = declared_environment(files)
    return declared


def find_uv() -> str:
    """The ``uv`` executable: on PATH, else beside EQUISA's interpreter (installed with EQUISA)."""
    found = shutil.which("uv") or shutil.which("uv", path=str(Path(sys.executable).parent))
    if found is None:
        raise EnvironmentBuildError("uv is not installed: it builds the suite's environment "
                                    "(pip install uv), or give --python, or --no-provision")
    return found


def _version_of(python: str) -> tuple[int, int, int] | None:
    try:
        done = subprocess.run([python, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", done.stdout.strip())
    return (int(match[1]), int(match[2]), int(match[3])) if done.returncode == 0 and match else None


@cache
def machine_pythons() -> dict[tuple[int, int, int], str]:
    """The CPython interpreters of this machine, by version: EQUISA's own, pyenv's, and the
    ``python3.X`` commands on PATH (the first found of each version). Found once per process:
    each is started to read its version, and a command prepares its run more than once."""
    candidates = [sys.executable]
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    if pyenv.is_dir():
        candidates += [str(p / "bin" / "python") for p in sorted(pyenv.iterdir())
                       if (p / "bin" / "python").exists()]
    for minor in range(MIN_PYTHON[1], 20):
        found = shutil.which(f"python3.{minor}")
        if found and "/.pyenv/shims/" not in found:
            candidates.append(found)
    pythons: dict[tuple[int, int, int], str] = {}
    for candidate in candidates:
        version = _version_of(candidate)
        if version and version[:2] >= MIN_PYTHON and version not in pythons:
            pythons[version] = candidate
    return pythons


def _admitted_pythons(declared: DeclaredEnvironment) -> list[tuple[str, str]]:
    """The interpreters here to build on, best first (``declared.python_preference``); raises
    ``EnvironmentBuildError`` when ``requires-python`` admits none."""
    pythons = dict(machine_pythons())
    own = (sys.version_info.major, sys.version_info.minor, sys.version_info.micro)
    pythons.setdefault(own, sys.executable)
    chosen = python_preference(sorted(pythons), declared, own)
    if not chosen:
        shown = ", ".join(".".join(map(str, v)) for v in sorted(pythons)) or "none"
        raise EnvironmentBuildError(f"no interpreter here satisfies requires-python "
                                    f"{declared.requires_python!r} (found: {shown}); give one with --python")
    return [(pythons[v], ".".join(map(str, v))) for v in chosen]


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (fcntl: one environment built once, even by parallel runs; the
    standard library's lock is all this needs, so no lock package)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(words: list[str], env: dict[str, str], cwd: Path | None = None) -> None:
    done = subprocess.run(words, capture_output=True, text=True, env=env, cwd=cwd, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        message = (done.stderr or done.stdout).strip()[-_ERROR_TAIL_CHARS:]
        raise EnvironmentBuildError(f"building the test environment failed: `{' '.join(words[1:4])} ...` "
                                    f"exited {done.returncode}:\n{message}")


def _target(folder: Path, cutoff: dt.date | None) -> list[str]:
    """``uv pip install``'s options for the venv ``folder``, pytest uploaded by ``cutoff``."""
    words = ["--python", str(folder / "bin" / "python")]
    if cutoff is not None:
        words += ["--exclude-newer-package", f"pytest={cutoff.isoformat()}"]
    return words


def _build_steps(uv: str, repo_copy: Path, folder: Path, declared: DeclaredEnvironment,
                 cutoff: dt.date | None) -> list[list[str]]:
    """The uv commands that fill the venv ``folder`` (already made); pytest uploaded by ``cutoff``.

    Installs compile bytecode (``--compile-bytecode``, pip's default, not uv's): every sandboxed run
    has ``PYTHONDONTWRITEBYTECODE``, so without it each run compiled again every module it imports
    from the environment, pytest's included (about 0.75 s of CPU for pytest and its plugins alone)."""
    target = _target(folder, cutoff)
    if declared.uv_lock:
        return [[uv, "sync", "--frozen", "--all-extras", "--all-groups", "--compile-bytecode", "--project",
                 str(repo_copy)],
                [uv, "pip", "install", "--compile-bytecode", *target, "pytest"]]
    words = [uv, "pip", "install", "--compile-bytecode", *target]
    if declared.installable:
        extras = f"[{','.join(declared.extras)}]" if declared.extras else ""
        words += ["-e", f"{repo_copy}{extras}"]
    for name in declared.requirement_files:
        words += ["-r", str(repo_copy / name)]
    words += [*declared.requirements, "pytest"]
    if declared.constraints:
        constraints = folder / "equisa-constraints.txt"
        constraints.write_text("".join(f"{pin}\n" for pin in declared.constraints), encoding="utf-8")
        words += ["-c", str(constraints)]
    return [words]


def provisioned(repo: Path, environments: Path | None = None) -> Provisioned:
    """The environment of ``repo``'s tests, built (or reused) under ``environments``; raises
    ``EnvironmentBuildError`` when uv fails or no interpreter fits ``requires-python``.

    A finished environment of any admitted interpreter is reused (the best first). Otherwise the
    build tries the admitted interpreters best first (``python_preference``), at most
    ``MAX_PYTHON_ATTEMPTS`` of them: an older project's pinned dependencies often have no build for
    the newest Python."""
    started = time.monotonic()
    declared = read_declared(repo)
    root = environments or default_environments()
    candidates = build_candidates(repo, declared)
    for candidate in candidates:
        if (root / candidate.digest) in _BUILT_HERE:
            return _BUILT_HERE[root / candidate.digest]  # this command built it: say so, not "reused"
        marker = root / candidate.digest / MARKER
        if marker.is_file():
            return _reused(root / candidate.digest, candidate.version, candidate.digest, started)
    failures = []
    for candidate in candidates[:MAX_PYTHON_ATTEMPTS]:
        try:
            return _built(repo, root, candidate, declared, started)
        except EnvironmentBuildError as error:
            failures.append(f"with Python {candidate.version}: {error}")
    raise EnvironmentBuildError("\n".join(failures))


def _reused(folder: Path, version: str, digest: str, started: float) -> Provisioned:
    made = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    return Provisioned(python=str(folder / "bin" / "python"), python_version=version, folder=str(folder),
                       digest=digest, reused=True, seconds=time.monotonic() - started,
                       made_from=tuple(made.get("made_from", ())), steps=tuple(made.get("steps", ())))


@dataclass(frozen=True)
class Candidate:
    """An interpreter an environment may be built on: its path and version, the newest pytest for
    it (``pytest_cutoff``) and the environment's cache key."""

    python: str
    version: str
    cutoff: dt.date | None
    digest: str


def build_candidates(repo: Path, declared: DeclaredEnvironment) -> list[Candidate]:
    """The environments ``provisioned`` would reuse or build for ``repo``, best first; raises
    ``EnvironmentBuildError`` when ``requires-python`` admits no interpreter here."""
    declared_on = _declared_on(repo, declared)
    candidates = []
    for python, version in _admitted_pythons(declared):
        major, minor, micro = (int(n) for n in version.split("."))
        cutoff = pytest_cutoff(declared_on, (major, minor, micro))
        recipe = RECIPE if cutoff is None else f"{RECIPE}; pytest uploaded by {cutoff}"
        candidates.append(Candidate(python, version, cutoff, declared.digest(version, recipe)))
    return candidates


def _declared_on(repo: Path, declared: DeclaredEnvironment) -> dt.date | None:
    """The day the declaring files were last committed (git), None outside git or when untracked."""
    if not declared.inputs:
        return None
    try:
        done = subprocess.run(["git", "-C", str(repo), "log", "-1", "--format=%cs", "--", *declared.inputs],
                              capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    try:
        return dt.date.fromisoformat(done.stdout.strip()) if done.returncode == 0 else None
    except ValueError:
        return None


def _built(repo: Path, root: Path, candidate: Candidate, declared: DeclaredEnvironment,
           started: float) -> Provisioned:
    """Build ``candidate``'s environment (or reuse it, when a parallel run built it meanwhile)."""
    version, digest = candidate.version, candidate.digest
    folder = root / digest
    with _locked(root / f"{digest}.lock"):
        if (folder / MARKER).is_file():
            return _reused(folder, version, digest, started)
        shutil.rmtree(folder, ignore_errors=True)  # a build that died half-way
        try:
            steps = _build(repo, folder, candidate, declared)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        made_from = tuple(declared.inputs) or ("nothing declared: pytest only",)
        (folder / MARKER).write_text(json.dumps({"recipe": RECIPE, "python": version, "made_from": made_from,
                                                 "inputs": declared.inputs, "steps": steps}, indent=2),
                                     encoding="utf-8")
    built = Provisioned(python=str(folder / "bin" / "python"), python_version=version, folder=str(folder),
                        digest=digest, reused=False, seconds=time.monotonic() - started, made_from=made_from,
                        steps=tuple(steps))
    _BUILT_HERE[folder] = built
    return built


def _build(repo: Path, folder: Path, candidate: Candidate, declared: DeclaredEnvironment) -> list[str]:
    """Make the venv and install into it; when that fails, once more with the legacy build
    back-ends (``LEGACY_BUILD_CONSTRAINTS``), then, for an installable project, one requirement at
    a time (``_install_one_by_one``). Returns the steps that succeeded."""
    uv = find_uv()
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")}
    env.update({"UV_PYTHON_DOWNLOADS": "never", "UV_NO_PROGRESS": "1"})
    _run([uv, "venv", "--quiet", "--python", candidate.python, str(folder)], env)
    repo_copy = folder / PROJECT_COPY
    shutil.copytree(repo, repo_copy, ignore=_NOT_COPIED, symlinks=True)
    try:
        return _install(uv, repo_copy, folder, declared, candidate.cutoff, env, legacy=False)
    except EnvironmentBuildError as first:
        try:
            return _install(uv, repo_copy, folder, declared, candidate.cutoff, env, legacy=True)
        except EnvironmentBuildError:
            pinned_beside = declared.requirements or declared.requirement_files
            if not (declared.installable and not declared.uv_lock and pinned_beside):
                raise first from None  # the first message names what the project itself asks for
        try:
            return _install_one_by_one(uv, repo_copy, folder, declared, candidate.cutoff, env)
        except EnvironmentBuildError:
            raise first from None


def _install_one_by_one(uv: str, repo_copy: Path, folder: Path, declared: DeclaredEnvironment,
                        cutoff: dt.date | None, env: dict[str, str]) -> list[str]:
    """The project with its test extras, then each further requirement (tox's ``deps``, groups, the
    requirement files' lines) on its own, as pip's old resolver installed them: pins that no resolver
    satisfies together, or a dependency that no longer builds, are left out and listed in the steps."""
    alone = declared.model_copy(update={"requirements": (), "requirement_files": ()})
    steps = _install(uv, repo_copy, folder, alone, cutoff, env, legacy=True)
    env = _legacy_env(folder, env)
    left_out = []
    for requirement in [*declared.requirements, *_file_requirements(repo_copy, declared.requirement_files)]:
        words = [uv, "pip", "install", *_target(folder, cutoff), requirement]
        try:
            _run(words, env, cwd=repo_copy)
        except EnvironmentBuildError:
            left_out.append(requirement)
        else:
            steps.append(" ".join(words[1:]))
    if left_out:
        steps.append(f"left out, as they did not install beside the project: {', '.join(left_out)}")
    return steps


def _file_requirements(repo_copy: Path, names: tuple[str, ...]) -> list[str]:
    """The requirement lines of the files ``names`` (options, includes and editables aside)."""
    found = []
    for name in names:
        for line in (repo_copy / name).read_text(encoding="utf-8", errors="replace").splitlines():
            line = line.split(" #")[0].strip()
            if line and not line.startswith(("#", "-")):
                found.append(line)
    return found


def _legacy_env(folder: Path, env: dict[str, str]) -> dict[str, str]:
    """``env`` with ``LEGACY_BUILD_CONSTRAINTS`` on the build back-ends."""
    constraints = folder / "equisa-build-constraints.txt"
    constraints.write_text("".join(f"{c}\n" for c in LEGACY_BUILD_CONSTRAINTS), encoding="utf-8")
    return {**env, "UV_BUILD_CONSTRAINT": str(constraints)}


def _install(uv: str, repo_copy: Path, folder: Path, declared: DeclaredEnvironment, cutoff: dt.date | None,
             env: dict[str, str], legacy: bool) -> list[str]:
    """Run the build's steps; ``legacy``: with ``LEGACY_BUILD_CONSTRAINTS`` on the build back-ends."""
    if legacy:
        env = _legacy_env(folder, env)
    steps = _build_steps(uv, repo_copy, folder, declared, cutoff)
    for words in steps:
        step_env = {**env, "UV_PROJECT_ENVIRONMENT": str(folder)} if words[1] == "sync" else env
        _run(words, step_env, cwd=repo_copy)
    return [" ".join(words[1:]) for words in steps]

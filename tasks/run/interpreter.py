"""Finds and checks the interpreter that runs a repository's suite (which is not EQUISA's).

The first that applies: ``--python``; a virtualenv inside the repository (``.venv``, ``venv``,
``env``); ``$VIRTUAL_ENV``; an environment built with uv from what the repository declares
(``tasks.run.environments``, unless ``provision`` is off); EQUISA's own interpreter.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from equisa_core.common.options import SandboxOptions, default_of
from equisa_core.environment import SuiteEnvironment
from equisa_core.errors import InterpreterError
from equisa_core.probe import MIN_PYTHON
from tasks.run.environments import Provisioned, provisioned, read_declared
from tasks.sandbox.contract import own_interpreter_environment

__all__ = ["PROVISION", "Interpreter", "resolve_interpreter", "start_check"]

_PROBE_SCRIPT = (
    "import sys; print('%d.%d.%d' % sys.version_info[:3]);\n"
    "try:\n import pytest; print(pytest.__version__)\n"
    "except Exception as e:\n print('!' + type(e).__name__)"
)
#: EQUISA's own interpreter's check also runs one trivial test as a sandboxed run would (plugins off),
#: writing the bytecode of pytest's modules into EQUISA's own environment: the sandboxed runs write
#: none (``PYTHONDONTWRITEBYTECODE``) and EQUISA's own processes never import pytest, so on a fresh
#: install every run compiled pytest again, about 0.75 s of CPU each (bench/README.md, "The first
#: command"). It runs beside the command's own imports, in a temporary folder, and only while pytest
#: has no bytecode yet (``_pytest_compiled``).
_WARM_SCRIPT = _PROBE_SCRIPT + (
    "\nelse:\n"
    " import contextlib, io, os, tempfile\n"
    " with tempfile.TemporaryDirectory() as folder:\n"
    "  with open(os.path.join(folder, 'test_equisa_warm.py'), 'w') as test:\n"
    "   test.write('def test_warm():\\n    assert True\\n')\n"
    "  with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
    "   pytest.main([folder, '-q', '-p', 'no:cacheprovider', '--rootdir', folder])\n"
)
#: Whether an environment is built when no interpreter is given: the option's default.
PROVISION: bool = default_of(SandboxOptions, "provision")
#: Virtualenv folders looked for inside the repository when no interpreter is named.
_REPO_VENVS = (".venv", "venv", "env")


class Interpreter(BaseModel):
    """A checked interpreter: its path, version, pytest version and why it was chosen."""

    model_config = ConfigDict(frozen=True)

    path: str
    version: str
    pytest_version: str
    chosen_because: str
    provisioned: Provisioned | None = None

    def environment(self) -> SuiteEnvironment:
        """What the reports say about it."""
        built = self.provisioned
        return SuiteEnvironment(interpreter=self.path, python_version=self.version,
                                chosen_because=self.chosen_because, built=built is not None,
                                reused=bool(built and built.reused),
                                build_seconds=round(built.seconds, 2) if built else None,
                                made_from=built.made_from if built else ())


#: Checks started early (``start_check``), by interpreter path, for ``resolve_interpreter`` to read.
_STARTED: dict[str, subprocess.Popen[str]] = {}
#: Interpreters resolved with ``remember``, by ``resolve_interpreter``'s arguments, for its next call.
_REMEMBERED: dict[tuple[Path, str | None, bool, Path | None], Interpreter] = {}


def _chosen(repo: Path, python: str | None, provision: bool) -> tuple[str, str] | None:
    """The interpreter's path and why it was chosen, in the module docstring's order; None when an
    environment is to be built."""
    if python:
        return _locate(python), "given with --python"
    for name in _REPO_VENVS:
        candidate = repo / name / "bin" / "python"
        if candidate.exists():
            return str(candidate), f"the repository's virtualenv {name}/"
    active = os.environ.get("VIRTUAL_ENV")
    if active and (Path(active) / "bin" / "python").exists():
        return str(Path(active) / "bin" / "python"), f"the active virtualenv $VIRTUAL_ENV ({active})"
    if not provision:
        return sys.executable, "EQUISA's own interpreter (no --python, no venv, provisioning off)"
    if not read_declared(repo).declares_anything:
        return sys.executable, ("EQUISA's own interpreter (no --python, no venv, and the repository "
                                "declares no environment)")
    return None


def _check(path: str) -> subprocess.Popen[str]:
    """Start the interpreter's check: its version and pytest's on stdout. Nothing is written into an
    environment EQUISA does not own; in its own, pytest's bytecode is, until it exists (``_WARM_SCRIPT``)."""
    own = own_interpreter_environment(path)
    if own:
        env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"} | own
    else:
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    script = _WARM_SCRIPT if own and not _pytest_compiled() else _PROBE_SCRIPT
    return subprocess.Popen([path, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)


def _pytest_compiled() -> bool:
    """Whether this interpreter's pytest has its bytecode already (``_pytest/main.py``'s, where this
    process would look for it); False when the check's bytecode would go elsewhere
    (``PYTHONPYCACHEPREFIX`` set since this process started)."""
    if os.environ.get("PYTHONPYCACHEPREFIX") != sys.pycache_prefix:
        return False
    spec = importlib.util.find_spec("_pytest")
    folders = list(spec.submodule_search_locations or ()) if spec is not None else []
    if not folders:
        return False
    try:
        return Path(importlib.util.cache_from_source(str(Path(folders[0]) / "main.py"))).is_file()
    except (NotImplementedError, ValueError):
        return False


def start_check(repo: Path, python: str | None, provision: bool = PROVISION) -> None:
    """Start checking the interpreter ``resolve_interpreter`` will pick, in the background: the
    command line calls this before its slow imports, so that the check (an interpreter start and
    a pytest import) costs no time of its own. Any error is left for ``resolve_interpreter``."""
    try:
        chosen = _chosen(repo, python, provision)
        if chosen is not None and chosen[0] not in _STARTED:
            _STARTED[chosen[0]] = _check(chosen[0])
    except (OSError, InterpreterError):
        pass


def resolve_interpreter(repo: Path, python: str | None, provision: bool = PROVISION,
                        environments: Path | None = None, remember: bool = False) -> Interpreter:
    """Pick the interpreter (the module docstring's order; ``provision``: build an environment
    under ``environments`` rather than use EQUISA's own) and check it (reading the check
    ``start_check`` started, if it did). ``remember``: the answer is also kept for the next call
    with the same arguments, which takes it instead of checking again (the command line's early
    trace, ``tasks.run.early_trace``, resolves it before the flow's own check, seconds later).

    Raises ``InterpreterError`` when it does not exist, does not run, is older than 3.8 or
    cannot import pytest; ``EnvironmentBuildError`` when the environment cannot be built.
    """
    asked = (repo, python, provision, environments)
    if not remember and (known := _REMEMBERED.pop(asked, None)) is not None:
        return known
    interpreter = _resolve(repo, python, provision, environments)
    if remember:
        _REMEMBERED[asked] = interpreter
    return interpreter


def _resolve(repo: Path, python: str | None, provision: bool, environments: Path | None) -> Interpreter:
    chosen = _chosen(repo, python, provision)
    built = None
    if chosen is None:
        built = provisioned(repo, environments)
        chosen = built.python, built.describe()
    path, because = chosen
    try:
        process = _STARTED.pop(path, None) or _check(path)
        try:
            stdout, stderr = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise
    except (OSError, subprocess.TimeoutExpired) as error:
        raise InterpreterError(f"interpreter {path} does not run: {error}") from None
    done = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    lines = done.stdout.split()
    if done.returncode != 0 or not lines:
        raise InterpreterError(f"interpreter {path} does not run: {done.stderr.strip()[-300:]}")
    version = lines[0]
    if tuple(int(p) for p in version.split(".")[:2]) < MIN_PYTHON:
        raise InterpreterError(
            f"interpreter {path} is Python {version}; EQUISA needs Python "
            f"{MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer"
        )
    if len(lines) < 2 or lines[1].startswith("!"):
        raise InterpreterError(
            f"pytest is not importable by {path} (Python {version}); install it there: "
            f"{path} -m pip install pytest"
        )
    return Interpreter(path=path, version=version, pytest_version=lines[1], chosen_because=because,
                       provisioned=built)


def _locate(python: str) -> str:
    if os.sep in python or python.startswith("."):
        candidate = Path(python).expanduser()
        if not candidate.exists():
            raise InterpreterError(f"interpreter {python} does not exist")
        return str(candidate.absolute())
    found = shutil.which(python)
    if found is None:
        raise InterpreterError(f"interpreter {python} is not on PATH")
    return found

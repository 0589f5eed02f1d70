"""Shared fixtures: paths to the fixture suites and per-Python virtualenvs with pytest."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.forge_server import forge_api  # noqa: F401  (a scripted forge REST API)
from tests.s3_servers import moto_s3, rclone_s3  # noqa: F401  (S3 servers on 127.0.0.1)
from tests.scripted_llm_server import scripted_llm_fixture  # noqa: F401  (the ``scripted_llm`` fixture)

FIXTURES = Path(__file__).parent / "fixtures"
PYENV_VERSIONS = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
VENV_CACHE = Path(os.environ.get("EQUISA_TEST_VENVS", Path.home() / ".cache" / "equisa-test-venvs"))


def small_repo(root: Path) -> Path:
    """An empty repository for a test to write a module and its tests into: ``root`` with a
    ``tests/`` folder and an empty ``conftest.py`` (so pytest puts ``root`` on the import path)."""
    (root / "tests").mkdir(parents=True)
    (root / "conftest.py").write_text("")
    return root


def find_python(minor: str) -> Path | None:
    """The newest pyenv interpreter of version ``minor`` (e.g. '3.8'), or None."""
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == minor:
        return Path(sys.executable)
    candidates = sorted(
        (p for p in PYENV_VERSIONS.glob(f"{minor}.*") if (p / "bin" / "python").exists()),
        key=lambda p: tuple(int(x) for x in p.name.split(".") if x.isdigit()),
    )
    if candidates:
        return candidates[-1] / "bin" / "python"
    found = shutil.which(f"python{minor}")
    return Path(found) if found else None


def venv_with_pytest(minor: str) -> Path:
    """A cached virtualenv of Python ``minor`` with pytest; skips the test if impossible."""
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == minor:
        return Path(sys.executable)
    base = find_python(minor)
    if base is None:
        pytest.skip(f"Python {minor} is not installed on this machine (looked in {PYENV_VERSIONS})")
    venv = VENV_CACHE / minor
    python = venv / "bin" / "python"
    if not python.exists() or subprocess.run([python, "-c", "import pytest"]).returncode != 0:
        uv = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
        subprocess.run([uv, "venv", "-q", "--clear", "-p", str(base), str(venv)], check=True)
        subprocess.run([uv, "pip", "install", "-q", "--python", str(python), "pytest"], check=True)
    return python


@pytest.fixture(scope="session", autouse=True)
def no_warm_worker(tmp_path_factory: pytest.TempPathFactory) -> None:
    """``equisa`` subprocesses run in their own process, as before the warm worker: a worker per
    test's environment would outlive the test by ``EQUISA_WARM_IDLE_S``. The worker's own tests
    (``tests/flows/test_warm_worker.py``) turn it on, in a runtime folder of their own. The runtime
    folder is the session's, so that ``equisa server stop`` in a test never ends the user's workers."""
    os.environ["EQUISA_WARM"] = "0"
    runtime = tmp_path_factory.mktemp("run")
    runtime.chmod(0o700)
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(scope="session", autouse=True)
def private_run_storage(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Runs the tests make are recorded in a private history, store and spool, never the user's."""
    root = tmp_path_factory.mktemp("equisa-data")
    for name, value in (("EQUISA_DB", root / "history.duckdb"), ("EQUISA_ARTIFACTS", root / "artifacts"),
                        ("EQUISA_SPOOL", root / "spool")):
        os.environ.setdefault(name, str(value))


@pytest.fixture(scope="session", autouse=True)
def no_shared_prefect_server() -> None:
    """Flows run on the test harness's server (``tests/flows/conftest.py``) or Prefect's temporary
    one, never on the shared local server in the user's data folder: the tests that exercise that
    server (``tests/flows/test_prefect_server.py``) start their own in a temporary folder."""
    os.environ["EQUISA_PREFECT_SERVER"] = "ephemeral"


@pytest.fixture(scope="session")
def prefect_api_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One temporary Prefect server (Prefect's test harness) for the whole session, started when a
    test first asks for it (starting one takes seconds)."""
    from prefect.settings import get_current_settings
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield str(get_current_settings().api.url)

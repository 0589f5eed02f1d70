"""The suite's environment, end to end through the ``equisa`` command: built with uv from what a
src-layout repository declares (a real package from the registry) and reused; a user environment
holding an editable install of the original tree; and the builds that cannot succeed (exit 16).

These tests install from the package registry (uv's cache makes the second build local)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from equisa_core.errors import EnvironmentBuildError, NoProjectCodeError
from tasks.run.environments import machine_pythons
from tests.integration.test_probe import tree_digest

EQUISA = shutil.which("equisa") or str(Path(sys.executable).with_name("equisa"))
UV = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))

PYPROJECT = """[project]
name = "chunks"
version = "0.1.0"
requires-python = "{requires}"
dependencies = [{dependencies}]

[project.optional-dependencies]
test = ["pytest>=7"]

[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"
"""
MODULE = '''from more_itertools import chunked


def pages(items, size):
    """The items in pages of ``size``."""
    return [list(page) for page in chunked(items, size)]


def last_page(items, size):
    """The last page of the items."""
    return pages(items, size)[0]
'''
TESTS = '''from chunks import last_page, pages


def test_pages():
    assert pages([1, 2, 3], 2) == [[1, 2], [3]]


def test_one_page():
    assert last_page([1, 2], 2) == [1, 2]


def test_two_pages():
    assert last_page([1, 2, 3], 2) == [3]
'''
#: The same module without the registry's package.
MODULE_ALONE = MODULE.replace("from more_itertools import chunked\n", "").replace(
    "[list(page) for page in chunked(items, size)]",
    "[items[i:i + size] for i in range(0, len(items), size)]")


def src_layout(root: Path, dependencies: str = '"more-itertools>=10"', requires: str = ">=3.8") -> Path:
    """A src-layout project (``src/chunks``) that needs a package from the registry; its bug: the
    first page for the last."""
    (root / "src" / "chunks").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT.format(dependencies=dependencies, requires=requires))
    (root / "src" / "chunks" / "__init__.py").write_text(MODULE)
    (root / "tests" / "test_chunks.py").write_text(TESTS)
    return root


@pytest.fixture
def provisioning_env(cli_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """``cli_env`` as a user's shell without an active virtualenv, its environments in ``tmp_path``."""
    env = {k: v for k, v in cli_env.items() if k != "VIRTUAL_ENV"}
    env["EQUISA_ENVIRONMENTS"] = str(tmp_path / "environments")
    return env


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EQUISA, *args], capture_output=True, text=True, env=env, timeout=900)


def test_a_src_layout_project_is_localized_in_an_environment_built_once_then_reused(tmp_path,
                                                                                   provisioning_env):
    repo = src_layout(tmp_path / "chunks")
    before = tree_digest(repo)
    reports = []
    for name in ("cold", "warm"):
        out = tmp_path / f"{name}.json"
        done = run(provisioning_env, "localize", str(repo), "--no-llm", "--json", str(out))
        assert done.returncode == 0, done.stderr
        reports.append(json.loads(out.read_text()))
    for report in reports:
        assert report["ranking"][0]["fqn"] == "chunks.last_page"
        assert report["environment"]["built"] and report["environment"]["made_from"] == ["pyproject.toml"]
        assert report["environment"]["interpreter"].startswith(provisioning_env["EQUISA_ENVIRONMENTS"])
    assert [r["environment"]["reused"] for r in reports] == [False, True]
    assert reports[0]["environment"]["interpreter"] == reports[1]["environment"]["interpreter"]
    assert tree_digest(repo) == before  # the build wrote nothing into the user's tree
    # The build compiled the environment's bytecode, pytest's included: the sandboxed runs write none.
    venv = Path(reports[0]["environment"]["interpreter"]).parent.parent
    assert list(venv.glob("lib/python*/site-packages/_pytest/__pycache__/*.pyc"))
    assert list(venv.glob("lib/python*/site-packages/more_itertools/__pycache__/*.pyc"))

    # a change to a declaring file builds another environment
    (repo / "requirements-dev.txt").write_text("pytest>=7\n")
    out = tmp_path / "changed.json"
    done = run(provisioning_env, "localize", str(repo), "--no-llm", "--json", str(out))
    assert done.returncode == 0, done.stderr
    changed = json.loads(out.read_text())["environment"]
    assert not changed["reused"] and changed["interpreter"] != reports[0]["environment"]["interpreter"]
    assert changed["made_from"] == ["pyproject.toml", "requirements-dev.txt"]


def test_an_editable_install_of_the_original_tree_does_not_defeat_the_copy(tmp_path, cli_env):
    repo = src_layout(tmp_path / "chunks")
    venv = tmp_path / "user-venv"
    subprocess.run([UV, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    subprocess.run([UV, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"),
                    "-e", str(repo), "pytest"], check=True, capture_output=True)
    before = tree_digest(repo)
    env = {**cli_env, "VIRTUAL_ENV": str(venv)}
    out, diff = tmp_path / "repair.json", tmp_path / "fix.diff"
    done = run(env, "repair", str(repo), "--no-llm", "--json", str(out), "--diff", str(diff))
    # Whether the guard then withholds the fix (exit 21) is not this test's concern: the patch passed
    # the suite, so the tests ran against the patched copy, not the tree the install points at.
    assert done.returncode in (0, 21), done.stderr
    report = json.loads(out.read_text())
    assert report["environment"]["chosen_because"].startswith("the active virtualenv $VIRTUAL_ENV")
    assert report["status"] in ("fixed", "plausible_only") and report["target"] == "chunks.last_page"
    assert "+    return pages(items, size)[-1]" in report["diff"].splitlines()
    # validated on the sandbox's copy: the original, which the editable install points at, is unchanged
    assert tree_digest(repo) == before


def test_a_dependency_the_registry_does_not_have_exits_16_with_uvs_message(tmp_path, provisioning_env):
    repo = src_layout(tmp_path / "chunks", dependencies='"equisa-no-such-package-5b1d7e"')
    done = run(provisioning_env, "localize", str(repo), "--no-llm")
    assert done.returncode == EnvironmentBuildError.exit_code, done.stderr
    assert "building the test environment failed" in done.stderr
    assert "equisa-no-such-package-5b1d7e" in done.stderr
    assert not list((tmp_path / "environments").glob("*/bin"))  # nothing half-built is kept


def test_no_interpreter_for_the_required_python_exits_16_and_no_provision_uses_equisas_own(tmp_path,
                                                                                          provisioning_env):
    repo = src_layout(tmp_path / "chunks", dependencies="", requires=">=4")
    (repo / "src" / "chunks" / "__init__.py").write_text(MODULE_ALONE)
    done = run(provisioning_env, "localize", str(repo), "--no-llm")
    assert done.returncode == EnvironmentBuildError.exit_code, done.stderr
    assert "no interpreter here satisfies requires-python '>=4'" in done.stderr

    out = tmp_path / "own.json"
    done = run(provisioning_env, "localize", str(repo), "--no-llm", "--no-provision", "--json", str(out))
    environment = json.loads(out.read_text())["environment"]
    assert environment["chosen_because"].startswith("EQUISA's own interpreter") and not environment["built"]


def test_a_build_that_fails_on_the_newest_python_is_tried_on_the_next(tmp_path, provisioning_env):
    versions = sorted({v[:2] for v in machine_pythons()}, reverse=True)
    if len(versions) < 2:
        pytest.skip("this machine has one Python minor version: there is no older one to fall back to")
    newest = ".".join(map(str, versions[0]))
    missing_there = f'"equisa-no-such-package-5b1d7e; python_version >= \'{newest}\'", "more-itertools>=10"'
    repo = src_layout(tmp_path / "chunks", dependencies=missing_there)
    out = tmp_path / "fallback.json"
    done = run(provisioning_env, "localize", str(repo), "--no-llm", "--json", str(out))
    assert done.returncode == 0, done.stderr
    environment = json.loads(out.read_text())["environment"]
    older = ".".join(map(str, versions[1])) + "."
    assert environment["built"] and environment["python_version"].startswith(older)


def test_variables_the_suite_needs_reach_the_sandbox_from_the_command_line_or_the_settings(tmp_path,
                                                                                          cli_env):
    repo = tmp_path / "shop"
    (repo / "tests").mkdir(parents=True)
    (repo / "conftest.py").write_text("")
    (repo / "shop.py").write_text(
        "import os\n\n\ndef mode():\n    return os.environ.get('SHOP_MODE', 'off')\n\n\n"
        "def token():\n    return os.environ.get('SHOP_TOKEN', 'none')\n")
    (repo / "tests" / "test_shop.py").write_text(
        "from shop import mode, token\n\n\ndef test_mode():\n    assert mode() == 'strict'\n\n\n"
        "def test_no_secret():\n    assert token() == 'none'\n")

    def summary(*options: str) -> dict:
        out = tmp_path / "trace.json"
        done = run(cli_env, "trace", str(repo), "--json", str(out), *options)
        assert done.returncode == 0, done.stderr
        return json.loads(out.read_text())["summary"]

    assert summary()["failed"] == 1
    assert summary("--test-env", "SHOP_MODE=strict", "--test-env", "SHOP_TOKEN=abc")["failed"] == 0
    (repo / "pyproject.toml").write_text('[tool.equisa]\ntest_env = {SHOP_MODE = "strict"}\n')
    assert summary("--no-provision")["failed"] == 0
    done = run(cli_env, "trace", str(repo), "--test-env", "SHOP_MODE")
    assert done.returncode == 2 and "'SHOP_MODE' is not KEY=VALUE" in done.stderr


UNITTEST_BASE = '''import unittest


class PagedTestCase(unittest.TestCase):
    """As an older project's async test base does: it wraps the test method when built."""

    def __init__(self, methodName="runTest"):
        super().__init__(methodName)
        self.wrapped = getattr(self, methodName)
'''
UNITTEST_TESTS = '''from chunks import last_page, pages
from tests.base import PagedTestCase


class PagesTest(PagedTestCase):
    def test_pages(self):
        self.assertEqual(pages([1, 2, 3], 2), [[1, 2], [3]])

    def test_one_page(self):
        self.assertEqual(last_page([1, 2], 2), [1, 2])

    def test_two_pages(self):
        self.assertEqual(last_page([1, 2, 3], 2), [3])
'''


def commit_all(repo: Path, date: str) -> None:
    """``repo`` as a clone whose one commit was made on ``date``."""
    dated = {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@localhost",
           "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "--all"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "older", "--no-verify"], check=True,
                   env={**os.environ, **dated})


def test_an_older_projects_suite_runs_under_the_pytest_of_its_time(tmp_path, provisioning_env):
    """pytest 8.2 builds each unittest case at collection with ``runTest``, which an older base class
    that wraps its test method cannot take: the suite then does not collect. The build takes the
    pytest of the day the declaring files were committed (no older than its Python allows)."""
    if (3, 11) not in {v[:2] for v in machine_pythons()}:
        pytest.skip("the test pins the project to Python 3.11, which this machine lacks")
    repo = src_layout(tmp_path / "chunks")
    pyproject = (repo / "pyproject.toml").read_text().replace(
        'dependencies = [', 'classifiers = ["Programming Language :: Python :: 3.11"]\ndependencies = [')
    (repo / "pyproject.toml").write_text(pyproject)
    (repo / "tests" / "__init__.py").write_text("")
    (repo / "tests" / "base.py").write_text(UNITTEST_BASE)
    (repo / "tests" / "test_chunks.py").write_text(UNITTEST_TESTS)
    commit_all(repo, "2021-03-01T12:00:00+00:00")
    out = tmp_path / "old.json"
    done = run(provisioning_env, "localize", str(repo), "--no-llm", "--json", str(out))
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["ranking"][0]["fqn"] == "chunks.last_page"
    python = report["environment"]["interpreter"]
    version = subprocess.run([python, "-c", "import pytest; print(pytest.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    # Python 3.11 came out on 2022-10-24: the newest pytest half a year later (7.3.x), not the newest
    assert tuple(int(n) for n in version.split(".")[:2]) == (7, 3), version
    marker = json.loads((Path(python).parent.parent / "equisa-environment.json").read_text())
    assert any("--exclude-newer-package pytest=2023-04-25" in step for step in marker["steps"])


def test_requirements_no_resolver_can_satisfy_together_are_installed_one_by_one(tmp_path,
                                                                                        provisioning_env):
    repo = src_layout(tmp_path / "chunks")
    # pip's old resolver let a project pin two versions of one package in its requirements
    # and named a package that is gone from the registry
    (repo / "requirements-dev.txt").write_text(
        "more-itertools==10.1.0\nequisa-no-such-package-5b1d7e\nmore-itertools==10.2.0  # newer\n")
    out = tmp_path / "alone.json"
    done = run(provisioning_env, "localize", str(repo), "--no-llm", "--json", str(out))
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["ranking"][0]["fqn"] == "chunks.last_page"
    python = Path(report["environment"]["interpreter"])
    steps = json.loads((python.parent.parent / "equisa-environment.json").read_text())["steps"]
    # the project with its test extras, then each pin on its own; the second cannot join the first
    assert "-e " in steps[0] and "[test]" in steps[0] and "requirements-dev" not in steps[0]
    assert steps[1].endswith(" more-itertools==10.1.0") and steps[2].endswith(" more-itertools==10.2.0")
    assert steps[3] == "left out, as they did not install beside the project: equisa-no-such-package-5b1d7e"
    version = subprocess.run([str(python), "-c", "import more_itertools; print(more_itertools.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert version == "10.2.0"  # the last one installed, as pip's old resolver left it


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A folder outside ``/tmp``, which the local sandbox replaces with its own: a user's tree (in
    their home, say) stays visible, read-only, to the suite."""
    base = Path("/var/tmp")
    if not (base.is_dir() and os.access(base, os.W_OK)):
        pytest.skip("/var/tmp is not writable here: no place outside /tmp for a user's tree")
    folder = Path(tempfile.mkdtemp(prefix="equisa-user-tree-", dir=base))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_package_imported_from_the_original_tree_is_named_and_is_exit_17(tmp_path, outside_tmp, cli_env):
    """A layout EQUISA does not know (``lib/chunks``, importable only through the user's ``.pth``
    that points at the original tree): the suite runs the original, and the run says so."""
    repo = outside_tmp / "chunks"
    (repo / "lib" / "chunks").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "lib" / "chunks" / "__init__.py").write_text(MODULE_ALONE)
    (repo / "tests" / "test_chunks.py").write_text(TESTS)
    venv = tmp_path / "user-venv"
    subprocess.run([UV, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    subprocess.run([UV, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), "pytest"],
                   check=True, capture_output=True)
    site = next((venv / "lib").glob("python*/site-packages"))
    (site / "chunks-original.pth").write_text(f"{repo / 'lib'}\n")
    out = tmp_path / "elsewhere.json"
    done = run({**cli_env, "VIRTUAL_ENV": str(venv)}, "localize", str(repo), "--no-llm", "--json", str(out))
    assert done.returncode == NoProjectCodeError.exit_code, done.stderr
    original = (repo / "lib" / "chunks" / "__init__.py").resolve()
    assert f"the suite imported chunks from {original}, not the sandbox's copy" in done.stderr
    assert json.loads(out.read_text())["exit_code"] == NoProjectCodeError.exit_code

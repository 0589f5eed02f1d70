"""What a repository declares about its test environment (``equisa_core.environment.declared``)."""

from __future__ import annotations

import datetime as dt

from equisa_core.environment.declared import (
    PYTEST_CATCH_UP,
    PYTHON_RELEASED,
    declared_environment,
    is_test_group,
    pytest_cutoff,
    python_preference,
    requirement_files,
)

PEP621 = """
[project]
name = "shop"
requires-python = ">=3.9,<3.13"
dependencies = ["attrs>=23"]

[project.optional-dependencies]
test = ["pytest-mock"]
docs = ["sphinx"]
dev = ["ruff"]

[dependency-groups]
lint = ["ruff"]
testing = ["hypothesis>=6", {include-group = "fixtures"}]
fixtures = ["faker", {include-group = "testing"}]

[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"
"""


def test_a_pep621_project_installs_itself_with_its_test_extras_and_groups():
    declared = declared_environment({"pyproject.toml": PEP621})
    assert declared.installable and declared.requires_python == ">=3.9,<3.13"
    assert declared.extras == ("test", "dev")
    # include-group is followed, and the cycle back to "testing" is cut
    assert declared.requirements == ("hypothesis>=6", "faker")
    assert not declared.uv_lock and declared.declares_anything


def test_a_uv_lock_with_a_project_is_synced_and_without_one_is_not():
    assert declared_environment({"pyproject.toml": PEP621, "uv.lock": "version = 1\n"}).uv_lock
    tool_only = "[tool.ruff]\nline-length = 100\n"
    declared = declared_environment({"pyproject.toml": tool_only, "uv.lock": "version = 1\n"})
    assert not declared.uv_lock and not declared.installable


def test_poetry_test_groups_are_installed_at_the_locked_versions():
    pyproject = """
[tool.poetry]
name = "shop"
[tool.poetry.dependencies]
python = "^3.9"
[tool.poetry.group.test.dependencies]
pytest-cov = "^4"
[tool.poetry.group.docs.dependencies]
mkdocs = "*"
[tool.poetry.dev-dependencies]
black = "*"
[build-system]
requires = ["poetry-core"]
build-backend = "poetry.core.masonry.api"
"""
    lock = ('[[package]]\nname = "pytest-cov"\nversion = "4.1.0"\n\n'
            '[[package]]\nname = "black"\nversion = "23.1.0"\n')
    declared = declared_environment({"pyproject.toml": pyproject, "poetry.lock": lock})
    assert declared.installable
    assert declared.requirements == ("black", "pytest-cov")
    assert declared.constraints == ("pytest-cov==4.1.0", "black==23.1.0")


def test_setup_py_is_read_without_running_it_and_setup_cfg_too():
    setup_py = ("import os\nfrom setuptools import setup\nos.system('echo never run')\n"
                "setup(name='shop', python_requires='>=3.8', install_requires=['six'],\n"
                "      extras_require={'tests': ['mock'], 'speed': ['ujson']}, version=os.environ['V'])\n")
    declared = declared_environment({"setup.py": setup_py})
    assert declared.installable and declared.requires_python == ">=3.8" and declared.extras == ("tests",)
    setup_cfg = ("[metadata]\nname = shop\n[options]\npython_requires = >=3.10\n"
                 "[options.extras_require]\ntesting = pytest-xdist\n")
    declared = declared_environment({"setup.cfg": setup_cfg})
    assert declared.installable and declared.requires_python == ">=3.10" and declared.extras == ("testing",)


def test_tox_deps_and_the_requirement_files_they_name():
    tox = ("[tox]\nenvlist = py311\n[testenv]\ndeps =\n    pytest>=7  # the runner\n"
           "    -r{toxinidir}/requirements/test.txt\n"
           "    {env:EXTRA_DEP:}\n    .\ncommands = pytest\n")
    files = {"tox.ini": tox, "requirements/test.txt": "freezegun\n", "requirements-docs.txt": "sphinx\n"}
    declared = declared_environment(files)
    assert declared.requirements == ("pytest>=7",)
    assert declared.requirement_files == ("requirements/test.txt",)
    assert not declared.installable


def test_requirement_files_leave_documentation_out():
    names = ["requirements.txt", "requirements-dev.txt", "requirements-docs.txt", "requirements/ci.txt",
             "docs/requirements.txt", "setup.py"]
    assert requirement_files(names) == ["requirements-dev.txt", "requirements.txt", "requirements/ci.txt"]


def test_test_groups_by_name():
    assert all(map(is_test_group, ["test", "tests", "Testing", "unit-test", "dev"]))
    assert not any(map(is_test_group, ["docs", "lint", "speed"]))


def test_a_file_that_does_not_parse_is_an_input_that_declares_nothing():
    declared = declared_environment({"pyproject.toml": "[project\nname=", "setup.cfg": "no section line\n"})
    assert declared.declares_anything and not declared.installable and declared.requires_python is None


def test_the_digest_changes_with_any_input_and_the_python_version():
    one = declared_environment({"requirements.txt": "six\n"})
    other = declared_environment({"requirements.txt": "six==1.16.0\n"})
    again = declared_environment({"requirements.txt": "six\n"})
    assert one.digest("3.11.7", "r1") == again.digest("3.11.7", "r1")
    assert len({one.digest("3.11.7", "r1"), other.digest("3.11.7", "r1"), one.digest("3.12.1", "r1"),
                one.digest("3.11.7", "r2")}) == 4
    assert not declared_environment({}).declares_anything


def test_flits_own_table_and_toxs_factor_lines():
    pyproject = ('[build-system]\nrequires = ["flit"]\nbuild-backend = "flit.buildapi"\n'
                 '[tool.flit.metadata]\nmodule = "shop"\nrequires-python = ">=3.6"\n'
                 '[tool.flit.metadata.requires-extra]\ntest = ["pytest"]\ndoc = ["mkdocs"]\n')
    tox = "[testenv]\ndeps =\n    mock\n    py3: pycurl>=7.19\n    cdh,hdp: snakebite>=2.5\n    !py27: trio\n"
    declared = declared_environment({"pyproject.toml": pyproject, "tox.ini": tox})
    assert declared.installable and declared.requires_python == ">=3.6" and declared.extras == ("test",)
    assert declared.requirements == ("mock",)


def test_the_python_to_build_on_prefers_the_versions_the_classifiers_name():
    available = [(3, 8, 18), (3, 9, 18), (3, 11, 7), (3, 12, 1), (3, 13, 0)]
    own = (3, 11, 7)
    tested = declared_environment({"setup.py": (
        "from setuptools import setup\nsetup(name='shop', python_requires='>=3.6', classifiers=[\n"
        "    'Programming Language :: Python :: 3.6', 'Programming Language :: Python :: 3.8'])\n")})
    assert tested.classifier_versions == ("3.6", "3.8")
    assert python_preference(available, tested, own)[:3] == [(3, 8, 18), (3, 9, 18), (3, 11, 7)]
    old = declared_environment({"setup.cfg": "[metadata]\nname = shop\nclassifiers =\n"
                                             "    Programming Language :: Python :: 3.7\n"})
    assert python_preference(available, old, own)[0] == (3, 8, 18)  # the nearest to what it names
    bounded = declared_environment({"pyproject.toml": ('[project]\nname = "x"\n'
                                                       'requires-python = ">=3.9,<3.13"\n')})
    assert python_preference(available, bounded, own) == [(3, 12, 1), (3, 11, 7), (3, 9, 18)]
    silent = declared_environment({"requirements.txt": "six\n"})
    assert python_preference(available, silent, own)[:2] == [own, (3, 13, 0)]
    assert python_preference(available, declared_environment({"pyproject.toml": (
        '[project]\nname = "x"\nrequires-python = ">=4"\n')}), own) == []


def test_pytest_is_of_the_projects_time_but_never_older_than_its_python_allows():
    old = dt.date(2018, 11, 2)
    assert pytest_cutoff(old, (3, 8, 18)) == dt.date(2019, 10, 14) + PYTEST_CATCH_UP
    assert pytest_cutoff(dt.date(2024, 6, 1), (3, 8, 18)) == dt.date(2024, 6, 1)
    assert pytest_cutoff(dt.date(2024, 6, 1), (3, 13, 1)) == dt.date(2024, 10, 7) + PYTEST_CATCH_UP
    # a Python newer than the table: at least the newest release known
    assert pytest_cutoff(old, (3, 99, 0)) == max(PYTHON_RELEASED.values()) + PYTEST_CATCH_UP
    assert pytest_cutoff(None, (3, 8, 18)) is None  # no date (no git history): the newest pytest

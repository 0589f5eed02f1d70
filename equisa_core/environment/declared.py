"""What a repository declares about the environment its tests need, read from its files. Pure.

The files, in the order a build uses them (``DECLARATION_FILES``, ``requirement_files``):

- ``uv.lock`` with a PEP 621 ``[project]``: the lock is the environment (``uv sync --frozen``);
- ``pyproject.toml``: the project itself (installable when it has ``[project]`` or a
  ``[build-system]``), ``requires-python``, its test extras (``[project.optional-dependencies]``,
  or flit's older ``[tool.flit.metadata] requires-extra``) and test dependency groups (PEP 735
  ``[dependency-groups]``, ``include-group`` resolved), and Poetry's test groups
  (``[tool.poetry.group.<g>.dependencies]``, ``[tool.poetry.dev-dependencies]``);
- ``poetry.lock``: every locked version, as constraints;
- ``requirements*.txt`` and ``requirements/*.txt`` (documentation requirements aside);
- ``setup.py`` / ``setup.cfg``: installable; ``python_requires`` and the test extras;
- ``tox.ini``: the ``deps`` of ``[testenv]``.

A *test* extra or group is one whose name holds ``test`` or is one of ``TEST_GROUP_NAMES``.
Nothing here runs or imports the repository's code: ``setup.py`` is read with ``ast``.
"""

from __future__ import annotations

import ast
import configparser
import datetime as dt
import hashlib
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DECLARATION_FILES", "PYTEST_CATCH_UP", "PYTHON_RELEASED", "TEST_GROUP_NAMES",
           "DeclaredEnvironment", "declared_environment", "is_test_group", "pytest_cutoff",
           "python_preference", "requirement_files"]

#: The files at the repository's root that declare its environment (with ``requirement_files``).
DECLARATION_FILES = ("pyproject.toml", "uv.lock", "poetry.lock", "setup.py", "setup.cfg", "tox.ini")
#: Extras and groups installed for the tests besides those whose name holds ``test``.
TEST_GROUP_NAMES = frozenset({"dev", "develop", "development"})
#: When each Python release came out (python.org): a pytest much older than its interpreter may not run.
PYTHON_RELEASED: dict[tuple[int, int], dt.date] = {
    (3, 8): dt.date(2019, 10, 14), (3, 9): dt.date(2020, 10, 5), (3, 10): dt.date(2021, 10, 4),
    (3, 11): dt.date(2022, 10, 24), (3, 12): dt.date(2023, 10, 2), (3, 13): dt.date(2024, 10, 7),
    (3, 14): dt.date(2025, 10, 7),
}
#: How long after a Python release pytest is taken to support it well (pytest's releases of the half
#: year after a Python's release carry the fixes for it).
PYTEST_CATCH_UP = dt.timedelta(days=183)


class DeclaredEnvironment(BaseModel):
    """The environment a repository's files ask for, as a build needs it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    inputs: dict[str, str] = Field(default_factory=dict, description="Declaring file -> sha256 of its text.")
    requires_python: str | None = Field(None, description="The Python versions the project supports.")
    classifier_versions: tuple[str, ...] = Field(
        (), description="The Python versions its trove classifiers name, e.g. 3.8 (those it was tested on).")
    installable: bool = Field(False, description="The project itself can be installed (pip install -e).")
    extras: tuple[str, ...] = Field((), description="Test extras of the project, to install with it.")
    requirements: tuple[str, ...] = Field((), description="Requirement strings of test groups and tox.")
    requirement_files: tuple[str, ...] = Field((), description="requirements*.txt files, relative.")
    constraints: tuple[str, ...] = Field((), description="Pins from poetry.lock (name==version).")
    uv_lock: bool = Field(False, description="uv.lock and a [project]: sync the lock.")

    @property
    def declares_anything(self) -> bool:
        """Whether any declaring file was found."""
        return bool(self.inputs)

    def digest(self, python_version: str, recipe: str) -> str:
        """The cache key of the environment built from these inputs with ``python_version``."""
        text = "\n".join([recipe, python_version, *(f"{k}={v}" for k, v in sorted(self.inputs.items()))])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def is_test_group(name: str) -> bool:
    """Whether an extra or a dependency group is for the tests."""
    lowered = name.lower()
    return "test" in lowered or lowered in TEST_GROUP_NAMES


def requirement_files(names: list[str]) -> list[str]:
    """Of the repository's relative file names, the requirement files a build installs, sorted:
    ``requirements*.txt`` at the root and ``requirements/*.txt``, documentation's aside."""
    found = [n for n in names if re.fullmatch(r"requirements[^/]*\.txt|requirements/[^/]+\.txt", n)]
    return sorted(n for n in found if "doc" not in n.lower())


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def declared_environment(files: Mapping[str, str]) -> DeclaredEnvironment:
    """The declared environment, from the text of each declaring file present (by relative name:
    those of ``DECLARATION_FILES`` and ``requirement_files``). Files that do not parse count as
    inputs (their change rebuilds) but declare nothing."""
    parsed = _ParsedDeclarations.of(files)
    tox_requirements, tox_files = _tox_deps(files.get("tox.ini"))
    names = list(files)
    return DeclaredEnvironment(
        inputs={name: _sha(text) for name, text in sorted(files.items())},
        requires_python=parsed.requires_python(),
        classifier_versions=_classifier_versions(parsed.classifiers()),
        installable=parsed.installable(),
        extras=tuple(dict.fromkeys(parsed.test_extras())),
        requirements=tuple(dict.fromkeys([*parsed.test_requirements(), *tox_requirements])),
        requirement_files=tuple(dict.fromkeys([*requirement_files(names),
                                               *(f for f in tox_files if f in files)])),
        constraints=tuple(_poetry_pins(files.get("poetry.lock"))),
        uv_lock="uv.lock" in files and parsed.project is not None,
    )


@dataclass(frozen=True)
class _ParsedDeclarations:
    """The project metadata files, parsed once: ``pyproject.toml`` (with its PEP 621 ``[project]``
    and flit's ``[tool.flit.metadata]``), ``setup.cfg`` and the ``setup(...)`` keywords of
    ``setup.py``. Each question below reads them in that order of precedence."""

    pyproject: dict[str, Any]
    project: dict[str, Any] | None
    flit: dict[str, Any]
    setup_cfg: configparser.ConfigParser | None
    setup_py: str | None
    setup_keywords: dict[str, object]

    @classmethod
    def of(cls, files: Mapping[str, str]) -> _ParsedDeclarations:
        """Parse the metadata files among ``files`` (by relative name)."""
        pyproject = _toml(files.get("pyproject.toml"))
        project = pyproject.get("project") if isinstance(pyproject.get("project"), dict) else None
        setup_py = files.get("setup.py")
        return cls(pyproject=pyproject, project=project, flit=_flit_metadata(pyproject),
                   setup_cfg=_ini(files.get("setup.cfg")), setup_py=setup_py,
                   setup_keywords=_setup_keywords(setup_py) if setup_py is not None else {})

    def requires_python(self) -> str | None:
        """The first ``requires-python`` / ``python_requires`` declared."""
        candidates = (
            _string(self.project.get("requires-python")) if self.project is not None else None,
            _string(self.flit.get("requires-python")),
            _option(self.setup_cfg, "options", "python_requires") if self.setup_cfg is not None else None,
            _string(self.setup_keywords.get("python_requires")),
        )
        return next((c for c in candidates if c), None)

    def test_extras(self) -> list[str]:
        """The names of the test extras, in file order (duplicates kept)."""
        extras = _test_names(self.project.get("optional-dependencies") if self.project is not None else None)
        extras += _test_names(self.flit.get("requires-extra"))
        if self.setup_cfg is not None and self.setup_cfg.has_section("options.extras_require"):
            extras += _test_names(self.setup_cfg.options("options.extras_require"))
        extras += _test_names(self.setup_keywords.get("extras_require"))
        return extras

    def test_requirements(self) -> list[str]:
        """The requirements of PEP 735 test groups, then Poetry's test dependencies."""
        groups = self.pyproject.get("dependency-groups")
        found: list[str] = []
        if isinstance(groups, dict):
            for name in groups:
                if is_test_group(name):
                    found += _group_requirements(groups, name, set())
        return found + _poetry_test_requirements(self.pyproject)

    def classifiers(self) -> list[str]:
        """The trove classifiers of ``[project]``, flit, ``setup.py`` and ``setup.cfg``."""
        cfg = (self.setup_cfg and _option(self.setup_cfg, "metadata", "classifiers")) or ""
        return [*_strings(self.project.get("classifiers") if self.project else None),
                *_strings(self.flit.get("classifiers")),
                *_strings(self.setup_keywords.get("classifiers")),
                *cfg.splitlines()]

    def installable(self) -> bool:
        """Whether the project itself can be installed."""
        return (self.project is not None or "build-system" in self.pyproject or self.setup_py is not None
                or self.setup_cfg is not None and self.setup_cfg.has_section("metadata"))


def _test_names(names: object) -> list[str]:
    """Of an extras table (or list of names), the names of the test extras."""
    if not isinstance(names, dict | list):
        return []
    return [str(name) for name in names if is_test_group(str(name))]


def _classifier_versions(classifiers: list[str]) -> tuple[str, ...]:
    """The Python versions the classifiers name, sorted by version."""
    return tuple(sorted({m[1] for c in classifiers if (m := _PYTHON_CLASSIFIER.fullmatch(c.strip()))},
                        key=lambda v: tuple(map(int, v.split(".")))))


_PYTHON_CLASSIFIER = re.compile(r"Programming Language :: Python :: (3\.\d+)")


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list | tuple) else []


def python_preference(available: list[tuple[int, int, int]], declared: DeclaredEnvironment,
                      own: tuple[int, int, int]) -> list[tuple[int, int, int]]:
    """The interpreters to build on, best first, of those ``available`` that ``requires-python``
    admits (all of them when it says nothing or cannot be read):

    - with trove classifiers naming Python versions, those versions first (newest first), then the
      others by their distance from the newest one named (the project was tested there; a newer
      Python may have dropped what its pinned dependencies need, such as ``distutils``);
    - otherwise, with a ``requires-python``, the newest first;
    - with neither, ``own`` (EQUISA's) first, then the newest first.
    """
    admitted = list(available)
    if declared.requires_python:
        try:
            allowed = SpecifierSet(declared.requires_python)
            admitted = [v for v in available if allowed.contains(".".join(map(str, v)), prereleases=True)]
        except InvalidSpecifier:
            pass
    newest_first = sorted(admitted, reverse=True)
    listed = {tuple(map(int, v.split("."))) for v in declared.classifier_versions}
    if listed:
        top = max(listed)
        def rank(v: tuple[int, int, int]) -> tuple[bool, int, int, int]:
            unlisted = v[:2] not in listed
            return unlisted, abs(v[1] - top[1]) if unlisted else 0, -v[1], -v[2]
        return sorted(newest_first, key=rank)
    if declared.requires_python or own not in admitted:
        return newest_first
    return [own, *(v for v in newest_first if v != own)]


def pytest_cutoff(declared_on: dt.date | None, python: tuple[int, int, int]) -> dt.date | None:
    """The newest upload date of the pytest to install for a project whose declaring files were
    last changed on ``declared_on``: that day, or, when it is older, the day ``PYTEST_CATCH_UP``
    after ``python``'s release; None (the newest pytest) when the date is unknown.

    An older project's suite was written for the pytest of its time: later releases broke what it
    relied on (pytest 8.2 builds every ``unittest.TestCase`` at collection with ``runTest``, which
    a test case class with its own ``__init__`` may lack). A project's own pin of pytest was
    satisfiable on that day, so the cutoff never conflicts with it.
    """
    if declared_on is None:
        return None
    newest_known = max(PYTHON_RELEASED)
    released = PYTHON_RELEASED.get(min(python[:2], newest_known))
    if released is not None and released + PYTEST_CATCH_UP > declared_on:
        return released + PYTEST_CATCH_UP
    return declared_on


def _toml(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def _ini(text: str | None) -> configparser.ConfigParser | None:
    if text is None:
        return None
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    return parser


def _option(parser: configparser.ConfigParser, section: str, option: str) -> str | None:
    return parser.get(section, option, fallback=None) or None


def _string(value: object) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def _group_requirements(groups: dict[str, Any], name: str, seen: set[str]) -> list[str]:
    """A PEP 735 group's requirements, its ``include-group`` entries expanded (cycles cut)."""
    if name in seen or not isinstance(groups.get(name), list):
        return []
    seen.add(name)
    found: list[str] = []
    for entry in groups[name]:
        if isinstance(entry, str):
            found.append(entry)
        elif isinstance(entry, dict) and isinstance(entry.get("include-group"), str):
            found += _group_requirements(groups, entry["include-group"], seen)
    return found


def _poetry_test_requirements(pyproject: dict[str, Any]) -> list[str]:
    """The names of Poetry's test dependencies (their versions come from poetry.lock, if any)."""
    poetry = pyproject.get("tool", {}).get("poetry", {}) if isinstance(pyproject.get("tool"), dict) else {}
    if not isinstance(poetry, dict):
        return []
    tables = []
    if isinstance(poetry.get("dev-dependencies"), dict):
        tables.append(poetry["dev-dependencies"])
    groups = poetry.get("group")
    if isinstance(groups, dict):
        tables += [g["dependencies"] for name, g in groups.items()
                   if is_test_group(name) and isinstance(g, dict) and isinstance(g.get("dependencies"), dict)]
    return [name for table in tables for name in table if name.lower() != "python"]


def _flit_metadata(pyproject: dict[str, Any]) -> dict[str, Any]:
    """Flit's own table (``[tool.flit.metadata]``, before flit took PEP 621's ``[project]``)."""
    tool = pyproject.get("tool")
    flit = tool.get("flit") if isinstance(tool, dict) else None
    metadata = flit.get("metadata") if isinstance(flit, dict) else None
    return metadata if isinstance(metadata, dict) else {}


def _poetry_pins(text: str | None) -> list[str]:
    lock = _toml(text)
    packages = lock.get("package")
    if not isinstance(packages, list):
        return []
    return [f"{p['name']}=={p['version']}" for p in packages
            if isinstance(p, dict) and isinstance(p.get("name"), str) and isinstance(p.get("version"), str)]


def _setup_keywords(text: str) -> dict[str, object]:
    """The literal keyword arguments of the ``setup(...)`` call in ``setup.py`` (others left out)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "setup":
            found: dict[str, object] = {}
            for keyword in node.keywords:
                try:
                    if keyword.arg:
                        found[keyword.arg] = ast.literal_eval(keyword.value)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    continue
            return found
    return {}


#: A tox ``deps`` line for some environments only: ``py3: ...``, ``cdh,hdp: ...``, ``!py27: ...``.
_FACTOR = re.compile(r"^!?[\w.-]+(\s*,\s*!?[\w.-]+)*\s*:\s")


def _tox_deps(text: str | None) -> tuple[list[str], list[str]]:
    """``[testenv] deps``: the requirement lines, and the requirement files they name with ``-r``
    (relative to the root). Left out: lines with tox substitutions other than ``{toxinidir}``, and
    those of some environments only (``py3: pycurl``, ``cdh,hdp: snakebite``: tox's factors)."""
    parser = _ini(text)
    deps = _option(parser, "testenv", "deps") if parser is not None else None
    requirements: list[str] = []
    files: list[str] = []
    for raw in (deps or "").splitlines():
        line = raw.split("#", 1)[0].strip().replace("{toxinidir}/", "")
        if not line or line in (".", "-e .", "-e.") or _FACTOR.match(line):
            continue
        if line.startswith("-r"):
            files.append(line[2:].strip())
        elif "{" not in line and not line.startswith("-"):
            requirements.append(line)
    return requirements, files

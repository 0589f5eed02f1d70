"""Which test framework a repository uses: Django, unittest or pytest (seed 001, "framework rules").

The generator's and the enhancer's framework rules depend on it. The evidence is read from the
repository's own files (passed in as text, so this stays pure), strongest first:

1. Django: ``manage.py`` at the root, a dependency on ``django`` in the packaging files, or test
   modules importing ``django.test``;
2. pytest: test modules that import ``pytest`` or define top-level ``test_`` functions (pytest-only
   style), a ``conftest.py``, or a ``[tool.pytest.ini_options]`` / ``[pytest]`` / ``[tool:pytest]``
   section;
3. unittest: test modules whose tests are all ``unittest.TestCase`` classes;
4. no evidence: pytest (EQUISA runs every suite under pytest anyway).

When unittest classes and pytest-style tests are both present, the majority of test modules wins
(ties go to pytest, which runs both).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["Framework", "FrameworkChoice", "detect_framework"]

Framework = Literal["pytest", "unittest", "django"]

_DJANGO_DEPENDENCY = re.compile(r"""(^|["'\s,\[])django([<>=!~ \]"',;]|$)""", re.IGNORECASE | re.MULTILINE)
_PYTEST_SECTION = re.compile(r"^\[(tool\.pytest\.ini_options|pytest|tool:pytest)\]", re.MULTILINE)
_PACKAGING = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "requirements.txt",
    "requirements-dev.txt",
    "Pipfile",
)


class FrameworkChoice(BaseModel):
    """The framework generated tests must use, and the evidence for it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    framework: Framework
    reason: str


def _module_style(text: str) -> tuple[bool, bool, bool]:
    """(imports django.test, pytest style, unittest style) of one test module; unparsable: none."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False, False, False
    django = pytest_style = unittest_style = False
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            django |= node.module.startswith("django.test")
            pytest_style |= node.module.split(".")[0] == "pytest"
        elif isinstance(node, ast.Import):
            django |= any(a.name.startswith("django.test") for a in node.names)
            pytest_style |= any(a.name.split(".")[0] == "pytest" for a in node.names)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            pytest_style = True
        elif isinstance(node, ast.ClassDef):
            bases = {ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases}
            if bases & {"TestCase", "SimpleTestCase", "TransactionTestCase", "IsolatedAsyncioTestCase"}:
                unittest_style = True
    return django, pytest_style, unittest_style


def detect_framework(files: Mapping[str, str]) -> FrameworkChoice:
    """The framework of a repository from its files (relative '/'-path -> text; test modules,
    ``conftest.py`` files and packaging files are enough). See the module docstring for the rules.
    """
    names = {path.rsplit("/", 1)[-1] for path in files}
    packaging = "\n".join(text for path, text in files.items() if path in _PACKAGING)
    styles = {path: _module_style(text) for path, text in files.items() if _is_test_module(path)}
    if "manage.py" in files:
        return FrameworkChoice(framework="django", reason="manage.py at the repository root")
    if any(django for django, _, _ in styles.values()):
        return FrameworkChoice(framework="django", reason="test modules import django.test")
    if _DJANGO_DEPENDENCY.search(packaging):
        return FrameworkChoice(framework="django", reason="the packaging files depend on django")
    pytest_modules = sum(1 for _, p, _ in styles.values() if p)
    unittest_modules = sum(1 for _, p, u in styles.values() if u and not p)
    if unittest_modules > pytest_modules:
        return FrameworkChoice(
            framework="unittest",
            reason=f"{unittest_modules} test modules use unittest.TestCase only, "
            f"{pytest_modules} pytest style",
        )
    if pytest_modules:
        return FrameworkChoice(framework="pytest", reason=f"{pytest_modules} test modules use pytest style")
    if "conftest.py" in names or _PYTEST_SECTION.search(
        "\n".join(files.get(p, "") for p in _PACKAGING) + "\n" + files.get("pytest.ini", "")
    ):
        return FrameworkChoice(
            framework="pytest", reason="pytest is configured (conftest.py or an ini section)"
        )
    return FrameworkChoice(framework="pytest", reason="no test framework evidence; pytest runs every style")


def _is_test_module(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))

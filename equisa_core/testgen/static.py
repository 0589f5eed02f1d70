"""Static analysis results of a generated test module, as values (seed 001: syntax, lint, complexity).

The tools run in ``tasks/testgen_static.py`` (ruff and mypy are processes; radon computes the
cyclomatic complexity); this module holds what is pure: the syntax check, the readers of ruff's
and mypy's machine output, and the ``StaticReport`` every later stage reads.
"""

from __future__ import annotations

import ast
import json
import re
import warnings

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["LintIssue", "StaticReport", "syntax_check", "count_tests", "parse_ruff_json", "parse_mypy_output"]

_MYPY_LINE = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+)(?::\d+)?: error: (?P<message>.*?)(?:  \[(?P<code>[\w-]+)\])?$"
)


class LintIssue(BaseModel):
    """One finding of a lint or type checker."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tool: str = Field(description="'ruff' or 'mypy'.")
    code: str = Field(description="The rule, e.g. 'F401'; '' when the tool gives none.")
    line: int = Field(ge=0)
    message: str


class StaticReport(BaseModel):
    """What static analysis found in one test module."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    syntax_ok: bool
    syntax_error: str | None = None
    lint_issues: tuple[LintIssue, ...] = ()
    tools: tuple[str, ...] = Field(default=(), description="The tools that ran, e.g. ('ruff', 'radon').")
    skipped_tools: dict[str, str] = Field(default_factory=dict, description="Tool -> why it did not run.")
    test_count: int = Field(default=0, ge=0, description="Test functions and methods.")
    max_complexity: int = Field(
        default=0, ge=0, description="Highest cyclomatic complexity of a test (radon)."
    )
    mean_complexity: float = Field(default=0.0, ge=0)

    @property
    def lint_issue_count(self) -> int:
        """Number of lint and type issues."""
        return len(self.lint_issues)


def syntax_check(source: str) -> tuple[bool, str | None]:
    """(True, None) when ``source`` parses and compiles, else (False, 'line N: message')."""
    try:
        with warnings.catch_warnings(action="ignore"):
            compile(source, "<generated test>", "exec", dont_inherit=True)
    except SyntaxError as error:
        return False, f"line {error.lineno}: {error.msg}"
    except ValueError as error:  # null bytes
        return False, str(error)
    return True, None


def count_tests(source: str) -> int:
    """Test functions (``test*`` at module level) and test methods (``test*`` in ``Test*`` classes
    or TestCase subclasses); 0 when ``source`` does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return 0
    count = 0
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            count += 1
        elif isinstance(node, ast.ClassDef):
            count += sum(
                1
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name.startswith("test")
            )
    return count


def parse_ruff_json(text: str) -> list[LintIssue]:
    """Issues from ``ruff check --output-format json`` output; empty for empty output."""
    if not text.strip():
        return []
    items = json.loads(text)
    return [
        LintIssue(
            tool="ruff",
            code=item.get("code") or "",
            line=(item.get("location") or {}).get("row", 0),
            message=item.get("message", ""),
        )
        for item in items
    ]


def parse_mypy_output(text: str) -> list[LintIssue]:
    """Errors from mypy's default output (``file:line: error: message  [code]``); notes are ignored."""
    issues = []
    for line in text.splitlines():
        match = _MYPY_LINE.match(line.strip())
        if match:
            issues.append(
                LintIssue(
                    tool="mypy", code=match["code"] or "", line=int(match["line"]), message=match["message"]
                )
            )
    return issues

"""How a localize or repair report reaches CI: ``--sarif`` and ``--markdown`` files, and under GitHub
Actions (``GITHUB_ACTIONS=true``) workflow-command annotations on standard output (standard error
when ``--json -`` holds standard output) and the Markdown appended to ``$GITHUB_STEP_SUMMARY``.

What is written is made by ``equisa_core.report`` (``sarif``, ``markdown``, ``github``); this module
finds the repository's root the paths are relative to, and writes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from rich.console import Console

from equisa_core.localization.steps import LocalizationReport
from equisa_core.operations.batch import BatchSummary
from equisa_core.repair.report import RepairReport
from equisa_core.report.failure import FailureReport
from equisa_core.report.github import github_annotations, workflow_command
from equisa_core.report.markdown import render_batch_markdown, render_failure_markdown, render_markdown
from equisa_core.report.sarif import render_failure_sarif, render_sarif

__all__ = ["in_github_actions", "repository_prefix", "write_batch_outputs", "write_ci_outputs",
           "write_failure_outputs"]


def in_github_actions(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this process runs in a GitHub Actions job (``GITHUB_ACTIONS=true``)."""
    return (os.environ if environ is None else environ).get("GITHUB_ACTIONS") == "true"


def repository_prefix(path: Path, environ: Mapping[str, str] | None = None) -> str:
    """The analysed folder ``path`` relative to its repository's root, with a final ``/`` (``""`` at
    the root): the root is ``$GITHUB_WORKSPACE`` when ``path`` is inside it, else its git work tree's
    top, else ``path`` itself."""
    environ = os.environ if environ is None else environ
    folder = path.resolve()
    roots = [Path(environ["GITHUB_WORKSPACE"]).resolve()] if environ.get("GITHUB_WORKSPACE") else []
    roots.append(_git_toplevel(folder) or folder)
    for root in roots:
        if folder.is_relative_to(root):
            relative = folder.relative_to(root).as_posix()
            return "" if relative == "." else relative + "/"
    return ""


def write_ci_outputs(report: LocalizationReport | RepairReport, path: Path, console: Console,
                     sarif: Path | None = None, markdown: Path | None = None, json_to_stdout: bool = False,
                     environ: Mapping[str, str] | None = None) -> None:
    """Write ``report`` (of the repository folder ``path``) as SARIF to ``sarif`` and Markdown to
    ``markdown`` (each unless None, saying so on ``console``); under GitHub Actions, also print its
    annotations (on standard error when ``json_to_stdout``) and append its Markdown to the step
    summary."""
    environ = os.environ if environ is None else environ
    github = in_github_actions(environ)
    if not (sarif or markdown or github):
        return
    prefix = repository_prefix(path, environ)
    text = render_markdown(report)
    if sarif:
        log = render_sarif(report, prefix=prefix, tool_version=_own_version())
        _write(sarif, json.dumps(log, indent=2) + "\n")
        console.print(f"SARIF written to {sarif}", highlight=False, soft_wrap=True)
    if markdown:
        _write(markdown, text)
        console.print(f"Markdown summary written to {markdown}", highlight=False, soft_wrap=True)
    if github:
        stream = sys.stderr if json_to_stdout else sys.stdout
        for command in github_annotations(report, prefix):
            stream.write(command + "\n")
        stream.flush()
        _append_step_summary(text, environ)


def write_failure_outputs(failure: FailureReport, console: Console, sarif: Path | None = None,
                          markdown: Path | None = None, json_to_stdout: bool = False,
                          environ: Mapping[str, str] | None = None) -> None:
    """The same outputs for a command that stopped before its report existed: a SARIF log with no
    result and the invocation's exit code and message (a CI step that uploads it finds a file), the
    Markdown of what stopped it, and under GitHub Actions one annotation and the step summary."""
    environ = os.environ if environ is None else environ
    github = in_github_actions(environ)
    text = render_failure_markdown(failure)
    if sarif:
        _write(sarif, json.dumps(render_failure_sarif(failure, tool_version=_own_version()), indent=2) + "\n")
        console.print(f"SARIF written to {sarif}", highlight=False, soft_wrap=True)
    if markdown:
        _write(markdown, text)
        console.print(f"Markdown summary written to {markdown}", highlight=False, soft_wrap=True)
    if github:
        level = "notice" if failure.status == "nothing_to_do" else "error"
        stream = sys.stderr if json_to_stdout else sys.stdout
        stream.write(workflow_command(level, failure.error, {"title": f"equisa {failure.command}"}) + "\n")
        stream.flush()
        _append_step_summary(text, environ)


def write_batch_outputs(summary: BatchSummary, console: Console, markdown: Path | None = None,
                        environ: Mapping[str, str] | None = None) -> None:
    """Write a batch's summary as Markdown to ``markdown`` (unless None) and, under GitHub Actions,
    append it to the step summary."""
    environ = os.environ if environ is None else environ
    if not (markdown or in_github_actions(environ)):
        return
    text = render_batch_markdown(summary)
    if markdown:
        _write(markdown, text)
        console.print(f"Markdown summary written to {markdown}", highlight=False, soft_wrap=True)
    if in_github_actions(environ):
        _append_step_summary(text, environ)


def _append_step_summary(text: str, environ: Mapping[str, str]) -> None:
    """Append ``text`` to the file ``$GITHUB_STEP_SUMMARY`` names (nothing when it is unset)."""
    target = environ.get("GITHUB_STEP_SUMMARY")
    if target:
        with open(target, "a", encoding="utf-8") as summary:
            summary.write(text if text.endswith("\n") else text + "\n")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _git_toplevel(folder: Path) -> Path | None:
    """The top of the git work tree holding ``folder``, or None (not in one, or no git)."""
    try:
        done = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=folder, capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return Path(done.stdout.strip()).resolve() if done.returncode == 0 and done.stdout.strip() else None


def _own_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("equisa")
    except PackageNotFoundError:  # a source tree that was never installed
        return "unknown"

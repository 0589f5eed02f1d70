"""Writing an accepted patch to the user's tree: the only code in EQUISA that does (``--apply``).

In a git work tree the diff goes through ``git apply`` (after ``git apply --check``), so what lands
is exactly the reported diff, and a tree with uncommitted changes under the repository folder is
refused (the user could not tell our change from theirs). Outside git, each file is written only
if it still holds the text the run saw; otherwise nothing is written.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

from equisa_core.errors import ApplyRefusedError, PatchApplyError

__all__ = ["apply_patch"]


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def _toplevel(repo: Path) -> Path | None:
    try:
        done = _git(["rev-parse", "--show-toplevel"], repo)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return Path(done.stdout.strip()).resolve() if done.returncode == 0 else None


def apply_patch(repo: Path, diff: str, files: Mapping[str, str], originals: Mapping[str, str]) -> str:
    """Write the patch to ``repo``; returns how ('git apply' or 'files'). Raises on refusal.

    ``diff`` is relative to ``repo``; ``files`` maps the same paths to their new text and
    ``originals`` to the text the run saw (used outside git).
    """
    repo = repo.resolve()
    top = _toplevel(repo)
    if top is not None:
        dirty = _git(["status", "--porcelain", "--", "."], repo).stdout.strip()
        if dirty:
            first = dirty.splitlines()[0]
            raise ApplyRefusedError(
                f"refusing to apply: the git tree under {repo} has uncommitted changes ({first.strip()}"
                f"{' ...' if len(dirty.splitlines()) > 1 else ''}); commit or stash them first")
        where = repo.relative_to(top).as_posix()
        options = [f"--directory={where}"] if where != "." else []
        check = subprocess.run(["git", "apply", "--check", *options, "-"], cwd=top, input=diff, text=True,
                               capture_output=True, timeout=120)
        if check.returncode != 0:
            raise PatchApplyError(f"the patch does not apply: {check.stderr.strip().splitlines()[-1:]}")
        done = subprocess.run(["git", "apply", *options, "-"], cwd=top, input=diff, text=True,
                              capture_output=True, timeout=120)
        if done.returncode != 0:
            raise PatchApplyError(f"git apply failed: {done.stderr.strip()}")
        return "git apply"
    changed = sorted(p for p, text in originals.items() if _read(repo / p) != text)
    if changed:
        raise ApplyRefusedError(f"refusing to apply: {', '.join(changed)} changed since the run")
    for path, text in sorted(files.items()):
        with open(repo / path, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
    return "files"


def _read(path: Path) -> str | None:
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read()
    except OSError:
        return None

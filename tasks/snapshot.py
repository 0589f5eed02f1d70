"""A throwaway copy of a repository, so that running its suite never writes into the user's tree."""

from __future__ import annotations

import shutil
from pathlib import Path

__all__ = ["IGNORED_NAMES", "copy_repository"]

#: Never copied: version control, virtualenvs, caches and build output.
IGNORED_NAMES = frozenset({
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__", ".pytest_cache",
    ".mypy_cache", ".ruff_cache", "node_modules", ".eggs", "build", "dist", ".coverage",
})


def copy_repository(repo: Path, destination: Path) -> Path:
    """Copy ``repo`` to ``destination`` without what ``IGNORED_NAMES`` lists; return the copy.

    Symlinks are copied as links, so a link pointing outside the repository is not followed.
    """
    def ignore(_folder: str, names: list[str]) -> set[str]:
        return {n for n in names if n in IGNORED_NAMES or n.endswith((".pyc", ".egg-info"))}

    shutil.copytree(repo, destination, symlinks=True, ignore=ignore)
    return destination

"""The real-bug benchmark runs each tool on a copy of the bug's checkout that is a git repository
holding every exported file, as a user's clone does (``bench/realbugs/steps.py``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bench.realbugs.steps import fresh_copy, tree_digest


def _export(root: Path) -> Path:
    """A checkout as ``git archive`` leaves it: no ``.git``, and a ``.gitignore`` that names a
    file the project tracks all the same (luigi's ``test/contrib/*`` helpers)."""
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "test").mkdir()
    (root / "test" / "helper.py").write_text("HELPER = 1\n")
    (root / ".gitignore").write_text("test/helper.py\n__pycache__/\n")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "stale.pyc").write_bytes(b"\0")
    return root


def test_the_copy_is_a_repository_that_tracks_every_exported_file(tmp_path: Path) -> None:
    copy = fresh_copy(_export(tmp_path / "export"), tmp_path / "work" / "copy")

    tracked = subprocess.run(["git", "-C", str(copy), "ls-files"], capture_output=True, text=True,
                             check=True).stdout.split()
    assert sorted(tracked) == [".gitignore", "pkg/__init__.py", "test/helper.py"]
    status = subprocess.run(["git", "-C", str(copy), "status", "--porcelain"], capture_output=True,
                            text=True, check=True).stdout
    assert status == ""


def test_git_bookkeeping_is_not_a_modified_input(tmp_path: Path) -> None:
    copy = fresh_copy(_export(tmp_path / "export"), tmp_path / "copy")
    before = tree_digest(copy)
    subprocess.run(["git", "-C", str(copy), "status"], capture_output=True, check=True)  # refreshes .git/index
    assert tree_digest(copy) == before
    (copy / "pkg" / "__init__.py").write_text("X = 1\n")
    assert tree_digest(copy) != before

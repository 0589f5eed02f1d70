"""``changed_lines``: what ``git diff`` says changed since a ref, on real repositories on disk."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from equisa_core.errors import InputError
from tasks.run.git_changes import changed_lines


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("def f():\n    return 1\n\n\ndef g():\n    return 2\n")
    (root / "notes.txt").write_text("x\n")
    git(root, "init", "-q")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "0")
    git(root, "add", ".")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base")
    return root


def test_committed_and_uncommitted_changes_count(repo):
    (repo / "pkg" / "a.py").write_text("def f():\n    return 1\n\n\ndef g():\n    return 3\n")
    (repo / "notes.txt").write_text("y\n")  # not Python: not counted
    assert changed_lines(repo, "HEAD") == {"pkg/a.py": {6}}
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "g")
    (repo / "pkg" / "b.py").write_text("X = 1\n")
    git(repo, "add", "pkg/b.py")
    assert changed_lines(repo, "HEAD~1") == {"pkg/a.py": {6}, "pkg/b.py": {1}}


def test_a_deletion_marks_the_line_after_it(repo):
    (repo / "pkg" / "a.py").write_text("def f():\n    return 1\n\n\ndef g():\n")
    assert changed_lines(repo, "HEAD") == {"pkg/a.py": {5}}


def test_an_unknown_ref_or_no_repository_is_bad_input(repo, tmp_path):
    with pytest.raises(InputError, match="no-such-ref"):
        changed_lines(repo, "no-such-ref")
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(InputError, match="git diff failed"):
        changed_lines(plain, "HEAD")

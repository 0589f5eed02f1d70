"""``--apply``'s writer: git apply in git trees (refusing dirty ones), checked writes elsewhere."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from equisa_core.common.source_edit import unified_diff
from equisa_core.errors import ApplyRefusedError, PatchApplyError
from tasks.publish.apply import apply_patch

BEFORE = "def f(x):\n    return x > 1\n"
AFTER = "def f(x):\n    return x >= 1\n"
DIFF = unified_diff("pkg/mod.py", BEFORE, AFTER)


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _repo(root: Path, subfolder: str = "") -> Path:
    project = root / subfolder if subfolder else root
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "mod.py").write_text(BEFORE)
    _git(root, "init", "-q")
    _git(root, "-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    _git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "start")
    return project


@pytest.mark.parametrize("subfolder", ["", "examples/project"])
def test_git_apply_in_a_clean_tree_and_in_a_subfolder_of_one(tmp_path, subfolder):
    project = _repo(tmp_path, subfolder)
    how = apply_patch(project, DIFF, {"pkg/mod.py": AFTER}, {"pkg/mod.py": BEFORE})
    assert how == "git apply"
    assert (project / "pkg" / "mod.py").read_text() == AFTER
    assert "return x >= 1" in _git(tmp_path, "diff")


def test_a_dirty_git_tree_is_refused_and_left_alone(tmp_path):
    project = _repo(tmp_path)
    (project / "notes.txt").write_text("work in progress\n")
    with pytest.raises(ApplyRefusedError, match="uncommitted changes") as info:
        apply_patch(project, DIFF, {"pkg/mod.py": AFTER}, {"pkg/mod.py": BEFORE})
    assert info.value.exit_code == 23
    assert (project / "pkg" / "mod.py").read_text() == BEFORE


def test_a_diff_that_no_longer_applies_is_an_error(tmp_path):
    project = _repo(tmp_path)
    (project / "pkg" / "mod.py").write_text("def f(x):\n    return x < 1\n")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "moved on")
    with pytest.raises(PatchApplyError) as info:
        apply_patch(project, DIFF, {"pkg/mod.py": AFTER}, {"pkg/mod.py": BEFORE})
    assert info.value.exit_code == 24
    assert (project / "pkg" / "mod.py").read_text() == "def f(x):\n    return x < 1\n"


def test_outside_git_files_are_written_only_if_unchanged_since_the_run(tmp_path):
    (tmp_path / "pkg").mkdir()
    target = tmp_path / "pkg" / "mod.py"
    target.write_text(BEFORE)
    assert apply_patch(tmp_path, DIFF, {"pkg/mod.py": AFTER}, {"pkg/mod.py": BEFORE}) == "files"
    assert target.read_text() == AFTER
    target.write_text("edited meanwhile\n")
    with pytest.raises(ApplyRefusedError, match="changed since the run"):
        apply_patch(tmp_path, DIFF, {"pkg/mod.py": AFTER}, {"pkg/mod.py": BEFORE})
    assert target.read_text() == "edited meanwhile\n"

"""``--push`` with real git: the fix branch goes to a bare repository made by the test, holds exactly one
commit on top of the repaired HEAD with the patch, and the user's working tree, index and branch are
untouched. Refusals (uncommitted changes, no remote, no git tree, a patch that does not apply) are
exit 60 and push nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from equisa_core.errors import PushError
from tasks.publish.git_push import cloned, push_fix_branch
from tests.integration.test_probe import tree_digest

ORIGINAL = "def total(items):\n    return sum(items) - 1\n"
FIXED = "def total(items):\n    return sum(items)\n"
DIFF = ("diff --git a/shop/calc.py b/shop/calc.py\n--- a/shop/calc.py\n+++ b/shop/calc.py\n"
        "@@ -1,2 +1,2 @@\n def total(items):\n-    return sum(items) - 1\n+    return sum(items)\n")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=u@example.com", "-c", "user.name=User", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


def project_with_origin(tmp_path: Path) -> tuple[Path, Path]:
    """A git work tree (branch main, one commit) whose origin is a bare repository ``.../acme/shop.git``."""
    bare = tmp_path / "remotes" / "acme" / "shop.git"
    bare.mkdir(parents=True)
    git(bare, "init", "-q", "--bare")
    project = tmp_path / "shop"
    (project / "shop").mkdir(parents=True)
    (project / "shop" / "calc.py").write_text(ORIGINAL)
    (project / "README").write_text("shop\n")
    git(project, "init", "-q", "-b", "main")
    git(project, "add", ".")
    git(project, "commit", "-qm", "start")
    git(project, "remote", "add", "origin", str(bare))
    git(project, "push", "-q", "origin", "main")
    return project, bare


def state_of(project: Path) -> tuple[str, str, str, str, str]:
    """What the user sees: the branch, HEAD, the status, the index and the branches."""
    return (git(project, "symbolic-ref", "HEAD"), git(project, "rev-parse", "HEAD"),
            git(project, "status", "--porcelain", "--untracked-files=all"), git(project, "ls-files", "-s"),
            git(project, "branch", "--list"))


def test_the_branch_holds_one_commit_with_the_patch_on_head_and_the_tree_is_untouched(tmp_path):
    project, bare = project_with_origin(tmp_path)
    (project / "junit.xml").write_text("<testsuite/>")  # an untracked file (a CI report) does not matter
    before, digest = state_of(project), tree_digest(project)
    head = git(project, "rev-parse", "HEAD")
    pushed = push_fix_branch(project, DIFF, "origin", "Fix shop.calc.total\n\nVerified.\n")
    short = git(project, "rev-parse", "--short", "HEAD")
    assert pushed.branch == f"equisa/fix-{short}" and pushed.base_commit == head
    assert git(bare, "rev-parse", f"refs/heads/{pushed.branch}") == pushed.commit
    assert git(bare, "rev-list", f"{head}..{pushed.branch}").split() == [pushed.commit]
    assert git(bare, "rev-parse", f"{pushed.commit}^") == head
    assert git(bare, "show", f"{pushed.branch}:shop/calc.py") + "\n" == FIXED
    assert git(bare, "diff", "--name-only", head, pushed.branch) == "shop/calc.py"
    assert git(bare, "log", "-1", "--format=%s", pushed.branch) == "Fix shop.calc.total"
    assert state_of(project) == before and (project / "shop" / "calc.py").read_text() == ORIGINAL
    assert tree_digest(project) == digest, "nothing under the work tree, .git included, was written"
    # A run of the same commit again replaces the branch (it is EQUISA's own).
    again = push_fix_branch(project, DIFF, "origin", "Fix again\n")
    assert again.branch == pushed.branch
    assert git(bare, "rev-parse", f"refs/heads/{again.branch}") == again.commit


def test_a_repository_in_a_subfolder_and_a_machine_without_a_git_identity(tmp_path, monkeypatch):
    project, bare = project_with_origin(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.gitconfig: no user.name, no user.email
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(name, raising=False)
    sub_diff = DIFF.replace("shop/calc.py", "calc.py")  # relative to the repaired folder
    pushed = push_fix_branch(project / "shop", sub_diff, "origin", "Fix\n")
    assert git(bare, "show", f"{pushed.branch}:shop/calc.py") + "\n" == FIXED
    assert git(bare, "log", "-1", "--format=%an <%ae>", pushed.branch) == (
        "EQUISA <equisa@users.noreply.localhost>")


def test_uncommitted_changes_are_refused_and_nothing_is_pushed(tmp_path):
    project, bare = project_with_origin(tmp_path)
    (project / "README").write_text("changed\n")
    with pytest.raises(PushError, match="uncommitted changes .*README") as refused:
        push_fix_branch(project, DIFF, "origin", "Fix\n")
    assert refused.value.exit_code == 60
    assert git(bare, "for-each-ref", "--format=%(refname)") == "refs/heads/main"


@pytest.mark.parametrize(("setup", "said"), [
    ("no remote", "has no remote 'upstream'"),
    ("no git", "is not in a git work tree"),
    ("stale patch", "the patch does not apply to"),
])
def test_refusals_are_exit_60(tmp_path, setup, said):
    project, bare = project_with_origin(tmp_path)
    remote, diff, where = "origin", DIFF, project
    if setup == "no remote":
        remote = "upstream"
    elif setup == "no git":
        where = tmp_path / "plain"
        where.mkdir()
    else:
        (project / "shop" / "calc.py").write_text("def total(items):\n    return 0\n")
        git(project, "commit", "-qam", "rewritten since the run")
    with pytest.raises(PushError, match=said) as refused:
        push_fix_branch(where, diff, remote, "Fix\n")
    assert refused.value.exit_code == 60
    assert git(bare, "for-each-ref", "--format=%(refname)") == "refs/heads/main"


def test_a_git_url_is_pushed_from_a_fresh_clone_at_the_ref(tmp_path):
    project, bare = project_with_origin(tmp_path)
    first = git(project, "rev-parse", "HEAD")
    (project / "README").write_text("later\n")
    git(project, "commit", "-qam", "later")
    git(project, "push", "-q", "origin", "main")
    with cloned(bare.as_uri(), first) as (clone, commit):
        assert commit == first
        pushed = push_fix_branch(clone, DIFF, "origin", "Fix\n", base=commit)
    assert git(bare, "rev-parse", f"{pushed.commit}^") == first
    assert git(bare, "show", f"{pushed.branch}:README") == "shop"

"""``--push``: the verified patch as one commit on a branch ``equisa/fix-<short sha>`` of a git remote.

The commit is built in a temporary index (``GIT_INDEX_FILE``): ``read-tree`` of the base commit,
``apply --cached`` of the diff, ``write-tree``, ``commit-tree`` with the base as parent; then
``git push REMOTE +COMMIT:refs/heads/BRANCH``. The user's working tree, index, HEAD and branches are
never touched, nor anything under ``.git``: the new objects go to a scratch object store that
reads the repository's as an alternate. The branch is EQUISA's own: a later run of the same commit
replaces it.

Repaired as it is (``base`` None), the folder's git tree must hold no uncommitted change to tracked
files, since the verified patch was made on the files as they are and the commit goes on HEAD;
untracked files (a ``.venv``, a JUnit report) do not matter. A run of a git URL pushes from a
fresh clone (``cloned``) to that URL.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from equisa_core.errors import PushError
from equisa_core.operations.forge import fix_branch

__all__ = ["COMMITTER", "PushedBranch", "cloned", "push_fix_branch", "remote_url"]

#: The author and committer of a fix commit where git has no identity configured (a CI machine).
COMMITTER = ("EQUISA", "equisa@users.noreply.localhost")
#: The longest a git command of a push may take, in seconds (a push over a slow network included).
GIT_TIMEOUT_S = 300


class PushedBranch(BaseModel):
    """A pushed fix branch: its name, its one commit and that commit's parent."""

    model_config = ConfigDict(frozen=True)

    branch: str
    commit: str
    base_commit: str
    remote: str


def _git(args: list[str], cwd: Path, *, stdin: str | None = None,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_S, env={**(env or os.environ), "GIT_OPTIONAL_LOCKS": "0"})
    except FileNotFoundError:
        raise PushError("git is not installed") from None
    except subprocess.TimeoutExpired:
        raise PushError(f"git {args[0]} took more than {GIT_TIMEOUT_S} s") from None


def _checked(args: list[str], cwd: Path, why: str, *, stdin: str | None = None,
             env: dict[str, str] | None = None) -> str:
    """Run git; its output, or ``PushError`` saying ``why`` with git's last line."""
    done = _git(args, cwd, stdin=stdin, env=env)
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise PushError(f"{why}: {said[-1] if said else f'git {args[0]} failed'}")
    return done.stdout.strip()


def remote_url(repo: Path, remote: str, push: bool = False) -> str:
    """The fetch URL (``push``: the push URL) of ``repo``'s ``remote``; ``PushError`` when there is no
    such remote."""
    done = _git(["remote", "get-url", *(["--push"] if push else []), remote], repo)
    if done.returncode != 0 and "not a git repository" in done.stderr:
        raise PushError(f"{repo} is not in a git work tree: --push needs one")
    if done.returncode != 0:
        raise PushError(f"the git repository at {repo} has no remote {remote!r} (--remote names one)")
    return done.stdout.strip()


def push_fix_branch(repo: Path, diff: str, remote: str, message: str,
                    base: str | None = None) -> PushedBranch:
    """Commit ``diff`` (relative to ``repo``, a folder of a git work tree) on ``base`` (None: HEAD, whose
    tree must be clean where tracked) and push it to ``remote`` as ``equisa/fix-<short sha of base>``."""
    repo = repo.resolve()
    done = _git(["rev-parse", "--show-toplevel"], repo)
    if done.returncode != 0:
        raise PushError(f"{repo} is not in a git work tree: --push needs one")
    top = Path(done.stdout.strip()).resolve()
    if base is None:
        dirty = _checked(["status", "--porcelain", "--untracked-files=no", "--", "."], repo,
                         "cannot read the tree's status").splitlines()
        if dirty:
            raise PushError(f"refusing to push: the git tree under {repo} has uncommitted changes "
                            f"({dirty[0].strip()}{' ...' if len(dirty) > 1 else ''}); the patch was verified "
                            "on them, not on HEAD: commit or stash them first")
    base_commit = _checked(["rev-parse", "--verify", f"{base or 'HEAD'}^{{commit}}"], repo,
                           f"no commit {base or 'HEAD'} to build the fix on")
    short = _checked(["rev-parse", "--short", base_commit], repo, "cannot shorten the commit's sha")
    push_url = remote_url(repo, remote, push=True)
    where = repo.relative_to(top).as_posix()
    directory = [f"--directory={where}"] if where != "." else []
    objects = Path(_checked(["rev-parse", "--git-path", "objects"], top, "cannot find the object store"))
    branch = fix_branch(short)
    with tempfile.TemporaryDirectory(prefix="equisa-push-") as scratch:
        # The new index and objects live in the scratch folder; the repository's objects are read from
        # its store as an alternate, so nothing under .git is written.
        (Path(scratch) / "objects").mkdir()
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(scratch) / "index"),
               "GIT_OBJECT_DIRECTORY": str(Path(scratch) / "objects"),
               "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(objects if objects.is_absolute() else top / objects),
               **_identity(top)}
        _checked(["read-tree", base_commit], top, "cannot read the base commit's tree", env=env)
        _checked(["apply", "--cached", *directory, "-"], top, f"the patch does not apply to {short}",
                 stdin=diff, env=env)
        tree = _checked(["write-tree"], top, "cannot write the patched tree", env=env)
        commit = _checked(["commit-tree", tree, "-p", base_commit, "-F", "-"], top, "cannot make the commit",
                          stdin=message, env=env)
        # To the remote's URL, not its name: no remote-tracking branch is made for an object that the
        # repository's own store does not hold.
        _checked(["push", "--quiet", push_url, f"+{commit}:refs/heads/{branch}"], top,
                 f"cannot push {branch} to {remote}", env=env)
    return PushedBranch(branch=branch, commit=commit, base_commit=base_commit, remote=remote)


def _identity(repo: Path) -> dict[str, str]:
    """``GIT_AUTHOR_*`` and ``GIT_COMMITTER_*`` set to ``COMMITTER`` where git has no identity here."""
    if _git(["var", "GIT_COMMITTER_IDENT"], repo).returncode == 0 and (
            _git(["var", "GIT_AUTHOR_IDENT"], repo).returncode == 0):
        return {}
    name, email = COMMITTER
    return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email}


@contextmanager
def cloned(url: str, ref: str | None) -> Iterator[tuple[Path, str]]:
    """A temporary clone of ``url`` without a checkout, and the commit of ``ref`` (None: the remote's
    HEAD) in it, fetched when the clone lacks it; its remote ``origin`` is ``url``."""
    with tempfile.TemporaryDirectory(prefix="equisa-push-clone-") as scratch:
        clone = Path(scratch) / "clone"
        _checked(["clone", "--quiet", "--no-checkout", "--", url, str(clone)], Path(scratch),
                 f"cannot clone {url} to push the fix")
        wanted = ref or "HEAD"
        found = _git(["rev-parse", "--verify", "--quiet", f"{wanted}^{{commit}}"], clone)
        if found.returncode != 0:
            _checked(["fetch", "--quiet", "origin", wanted], clone, f"no commit {wanted} in {url}")
            wanted = "FETCH_HEAD"
        yield clone, _checked(["rev-parse", "--verify", f"{wanted}^{{commit}}"], clone, f"no commit {wanted}")

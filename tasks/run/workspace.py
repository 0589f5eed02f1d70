"""Workspaces: content-hashed, read-only snapshots of a repository, so nothing ever writes the user's tree.

``snapshot(source, ref)`` takes a local folder (a git work tree or not), a local bare repository or
a git URL, and returns a ``Workspace``: a read-only folder under the cache named by the sha256 of
its content. What goes in:

- a git work tree with no ``ref``: what git considers part of the tree, as it is on disk (tracked
  files plus untracked-but-not-ignored ones, uncommitted changes included; deleted files skipped);
- a git work tree with a ``ref``, a bare repository or a URL: the tracked files of a clone checked
  out at ``ref`` (default ``HEAD``);
- a folder outside git: every file its ``.gitignore`` files do not ignore;
- never: virtualenvs (any folder holding ``pyvenv.cfg``), VCS folders, caches, ``*.pyc``,
  ``*.egg-info`` (``SKIPPED_NAMES``).

Symlinks are kept (their target is part of the digest) only when they point inside the repository
by a relative path; others are skipped with a warning, so a snapshot never leads back out.

Only read-only git commands run in the source (``ls-files``, ``rev-parse``, ``check-ignore``,
``ls-remote``, ``clone`` from it), with ``GIT_OPTIONAL_LOCKS=0`` so git does not even refresh the
index. A snapshot is built in a ``.tmp-*`` sibling of its final folder, made read-only, then renamed
into place: a concurrent or killed snapshot never leaves a half-built ``<digest>/`` behind, and
later snapshots sweep the leftovers of dead processes.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import posixpath
import re
import shutil
import socket
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.errors import (  # CloneError, RefNotFoundError and WorkspaceError are re-exported
    CloneError,
    EquisaError,
    InputError,
    RefNotFoundError,
    RepositoryNotFoundError,
    WorkspaceError,
)

__all__ = [
    "SKIPPED_NAMES",
    "CloneError",
    "RefNotFoundError",
    "Workspace",
    "WorkspaceError",
    "default_cache_dir",
    "snapshot",
]

log = logging.getLogger(__name__)

#: Files and folders never part of a workspace, wherever they are (besides ``*.pyc``,
#: ``*.egg-info`` and virtualenvs).
SKIPPED_NAMES = frozenset({
    ".git", ".hg", ".svn", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox",
    ".nox", "node_modules", ".eggs",
})

_CACHE_ENV = "EQUISA_WORKSPACES"
#: Bumped when the digest's definition changes, so old snapshots are never reused wrongly.
_DIGEST_VERSION = b"equisa-workspace/1\0"
_CHUNK = 1024 * 1024
_TMP_PREFIX = ".tmp-"
#: Variables that would point git at another repository than the one asked for (git's own
#: ``rev-parse --local-env-vars`` less the configuration ones, which CI uses to pass credentials).
_GIT_LOCATION_VARS = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX", "GIT_GRAFT_FILE",
    "GIT_IMPLICIT_WORK_TREE", "GIT_INTERNAL_SUPER_PREFIX", "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE", "GIT_SHALLOW_FILE",
)
#: For commands that could run hooks (clone, checkout): the user's hooks have no business here.
_NO_HOOKS = ("-c", "core.hooksPath=/dev/null")
_FULL_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
#: Looks like a URL (``scheme://``) or scp-like ssh (``user@host:path``).
_URL = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://|[\w.-]+@[\w.-]+:)")


class Workspace(BaseModel):
    """A read-only, content-addressed snapshot of a repository."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    root: Path = Field(description="The read-only snapshot folder, named by the digest.")
    digest: str = Field(description="sha256 (hex) of the content: paths, exec bits, file hashes, links.")
    source: str = Field(description="The URL as given, or the local folder as an absolute path.")
    ref: str | None = Field(description="The ref asked for; None: the work tree as it is on disk.")
    files: int = Field(description="Number of files and symlinks in the snapshot.")
    bytes: int = Field(description="Total size of the files' content.")


class _Entry(NamedTuple):
    """One file of a tree: relative '/'-path, kind ('file', 'exec' or 'link'), content hash or link
    target, and size in bytes."""

    path: str
    kind: str
    payload: str
    size: int


def default_cache_dir() -> Path:
    """``$EQUISA_WORKSPACES`` if set, else ``~/.cache/equisa/workspaces``."""
    configured = os.environ.get(_CACHE_ENV)
    return Path(configured).expanduser() if configured else Path.home() / ".cache/equisa/workspaces"


def snapshot(source: str | Path, ref: str | None = None, cache_dir: Path | None = None) -> Workspace:
    """A content-hashed, read-only snapshot of ``source`` at ``ref``; reused when it already exists.

    ``source`` is a local folder, a local bare repository or a git URL (``https://``, ``ssh://``,
    ``git@host:path``, ``file://``). ``ref`` is a branch, tag or commit (default: the work tree on
    disk for a local work tree, ``HEAD`` otherwise).
    """
    cache = (cache_dir or default_cache_dir()).expanduser().absolute()
    if isinstance(source, str) and _URL.match(source):
        _prepare_cache(cache)
        return _snapshot_clone(source, source, ref, "", cache)

    folder = Path(source).expanduser()
    if not folder.exists():
        raise RepositoryNotFoundError(f"repository {str(source)!r} does not exist")
    if not folder.is_dir():
        raise RepositoryNotFoundError(f"repository {str(source)!r} is not a directory")
    folder = folder.resolve()
    if cache.resolve() == folder or cache.resolve().is_relative_to(folder):
        raise InputError(f"the workspace cache {cache} is inside the repository {folder}; choose another")
    _prepare_cache(cache)

    kind, location, prefix = _classify(folder)
    if kind == "worktree" and ref is None:
        return _publish(folder, _list_worktree(folder, tracked_only=False), cache, str(folder), ref)
    if kind == "plain":
        if ref is not None:
            raise InputError(f"{folder} is not a git repository, so ref {ref!r} cannot be checked out")
        with _temporary(cache) as scratch:
            return _publish(folder, _list_plain(folder, scratch), cache, str(folder), ref)
    if ref is not None:
        # Resolve the ref here, in the source's own namespace (remote-tracking branches, reflog),
        # then fetch just that commit.
        commit = _resolve(location, ref)
        if commit is None:
            raise RefNotFoundError(f"ref {ref!r} does not exist in {folder}")
        return _snapshot_clone(location.as_uri(), str(folder), commit, prefix, cache, shown_ref=ref)
    return _snapshot_clone(location.as_uri(), str(folder), ref, prefix, cache)


# -- sources ------------------------------------------------------------------------------------


def _classify(folder: Path) -> tuple[str, Path, str]:
    """('worktree', top level, prefix of folder), ('bare', git dir, '') or ('plain', folder, '')."""
    try:
        out = _git("rev-parse", "--is-inside-work-tree", "--absolute-git-dir", "--show-prefix",
                   cwd=folder)
    except subprocess.CalledProcessError as exc:
        if b"not a git repository" in exc.stderr:
            return "plain", folder, ""
        raise InputError(f"cannot read {folder} with git: {_git_message(exc)}") from exc
    inside, git_dir, prefix = ([os.fsdecode(line) for line in out.splitlines()] + ["", "", ""])[:3]
    if inside != "true":
        return "bare", Path(git_dir), ""
    if prefix and _ignored_by_parent(folder):
        # A folder that its enclosing repository ignores is not part of it: take it as a plain one.
        return "plain", folder, ""
    with _git_errors(lambda msg: InputError(f"cannot read {folder} with git: {msg}")):
        top = os.fsdecode(_git("rev-parse", "--show-toplevel", cwd=folder)).strip()
    return "worktree", Path(top), prefix


def _ignored_by_parent(folder: Path) -> bool:
    try:
        _git("check-ignore", "-q", "--no-index", "--", ".", cwd=folder)
    except subprocess.CalledProcessError:
        return False
    return True


def _list_worktree(folder: Path, tracked_only: bool) -> list[str]:
    """Relative paths git lists in the work tree at ``folder`` (and in nested repositories)."""
    args = ["ls-files", "-z", "--cached"]
    if not tracked_only:
        args += ["--others", "--exclude-standard"]
    with _git_errors(lambda msg: InputError(f"cannot list the files of {folder}: {msg}")):
        out = _git(*args, cwd=folder)
    return _expand_nested(folder, _split_z(out), tracked_only)


def _list_plain(folder: Path, scratch: Path) -> list[str]:
    """Relative paths of the files in a folder outside git that its ``.gitignore`` files keep.

    git itself does the matching, through an empty repository whose work tree is ``folder``:
    gitignore semantics (negation, anchoring, ``**``, per-folder files, the user's global excludes)
    are subtle, no dependency of EQUISA implements them, and git is the reference implementation.
    The empty repository lives in the cache, never in ``folder``.
    """
    git_dir = scratch / "empty.git"
    with _git_errors(lambda msg: WorkspaceError(f"cannot make an empty git repository: {msg}")):
        _git("init", "-q", "--bare", str(git_dir))
    with _git_errors(lambda msg: InputError(f"cannot list the files of {folder}: {msg}")):
        out = _git("-c", "core.quotepath=off", f"--git-dir={git_dir}", f"--work-tree={folder}",
                   "ls-files", "-z", "--others", "--exclude-standard", cwd=folder)
    return _expand_nested(folder, _split_z(out), tracked_only=False)


def _expand_nested(folder: Path, names: Iterable[str], tracked_only: bool) -> list[str]:
    """Replace folders git lists as one entry (submodules, nested repositories) by their files."""
    result: list[str] = []
    for name in dict.fromkeys(names):  # unmerged paths are listed once per stage
        rel = name.rstrip("/")
        path = folder / rel
        if name.endswith("/") or (path.is_dir() and not path.is_symlink()):
            if _skipped_name(rel.split("/")):
                continue
            if (path / ".git").exists():
                result += [f"{rel}/{sub}" for sub in _list_worktree(path, tracked_only)]
            else:
                log.debug("skipping %s: a submodule that is not checked out", path)
            continue
        result.append(rel)
    return result


def _snapshot_clone(url: str, source: str, ref: str | None, prefix: str, cache: Path,
                    shown_ref: str | None = None) -> Workspace:
    """Clone ``url`` at ``ref`` into the cache's scratch space and snapshot its tracked files."""
    shown_ref = shown_ref or ref
    with _temporary(cache) as scratch:
        clone = scratch / "clone"
        _clone(url, ref, clone, shown=source)
        root = clone / prefix if prefix else clone
        if not root.is_dir():  # the folder does not exist at that ref
            raise RefNotFoundError(f"{prefix.rstrip('/')!r} does not exist in {source} at {shown_ref!r}")
        return _publish(root, _list_worktree(root, tracked_only=True), cache, source, shown_ref)


def _clone(url: str, ref: str | None, dest: Path, shown: str) -> None:
    """Clone ``url`` into ``dest`` checked out at ``ref``.

    Branches and tags: a shallow clone. A full SHA or an advertised ref outside branches and tags
    (``refs/pull/1/head``): a shallow fetch of just that commit, where the server allows it. Anything
    else (abbreviated SHAs, ``main~2``): a full clone, then a checkout.
    """
    def cannot_clone(reason: str) -> CloneError:
        return CloneError(f"cannot clone {shown}: {reason}")

    with _git_errors(cannot_clone):
        listing = _git("ls-remote", "--", url)
    refs = {os.fsdecode(line.split(b"\t", 1)[-1]) for line in listing.splitlines()}
    short = ref.removeprefix("refs/heads/").removeprefix("refs/tags/") if ref else None
    if ref is None or ref == "HEAD" or f"refs/heads/{short}" in refs or f"refs/tags/{short}" in refs:
        branch = ["--branch", short] if short and ref != "HEAD" else []
        with _git_errors(cannot_clone):
            _git(*_NO_HOOKS, "clone", "-q", "--depth", "1", *branch, "--", url, str(dest))
        return
    if (_FULL_SHA.match(ref) or ref in refs) and _fetch_one(url, ref, dest):
        return
    _remove(dest)
    with _git_errors(cannot_clone):
        _git(*_NO_HOOKS, "clone", "-q", "--no-checkout", "--", url, str(dest))
    commit = _resolve(dest, ref)
    if commit is None:
        raise RefNotFoundError(f"ref {ref!r} does not exist in {shown}")
    _checkout(dest, commit, shown)


def _fetch_one(url: str, ref: str, dest: Path) -> bool:
    """Fetch only the commit ``ref`` names (depth 1) into a new repository at ``dest``; checkout."""
    try:
        _git("init", "-q", str(dest))
        _git("fetch", "-q", "--depth", "1", "--", url, ref, cwd=dest)
    except subprocess.CalledProcessError:
        return False
    _checkout(dest, "FETCH_HEAD", url)
    return True


def _resolve(repo: Path, ref: str) -> str | None:
    """The full SHA of the commit ``ref`` names in ``repo`` (read-only), or None."""
    try:
        out = _git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}", cwd=repo)
    except subprocess.CalledProcessError:
        return None
    return os.fsdecode(out).strip()


def _checkout(repo: Path, commit: str, shown: str) -> None:
    with _git_errors(lambda msg: WorkspaceError(f"cannot check out {commit} of {shown}: {msg}")):
        _git(*_NO_HOOKS, "-c", "advice.detachedHead=false", "checkout", "-q", "-f", "--detach", commit,
             cwd=repo)


# -- hashing and publishing ---------------------------------------------------------------------


def _publish(root: Path, names: list[str], cache: Path, source: str, ref: str | None) -> Workspace:
    """Hash the files of ``root``; reuse ``cache/<digest>`` or build it atomically."""
    entries = _scan(root, _kept(root, names))
    digest = _digest(entries)
    final = cache / digest
    if not final.is_dir():
        with _temporary(cache) as building:
            entries = _build(root, entries, building)
            digest = _digest(entries)  # the truth, should a file have changed since it was hashed
            final = cache / digest
            _freeze(building)
            try:
                os.rename(building, final)
            except OSError:
                if not final.is_dir():
                    raise WorkspaceError(f"cannot create the snapshot folder {final}") from None
                log.debug("snapshot %s was made concurrently; keeping that one", digest)
        log.info("snapshot of %s: %s (%d files)", source, final, len(entries))
    else:
        log.info("snapshot of %s: reusing %s", source, final)
    if not entries:
        log.warning("snapshot of %s is empty", source)
    return Workspace(root=final, digest=digest, source=source, ref=ref, files=len(entries),
                     bytes=sum(entry.size for entry in entries))


def _kept(root: Path, names: Iterable[str]) -> list[str]:
    """``names`` without skipped names, ``*.pyc``, virtualenvs and paths below a symlink."""
    blocked: dict[str, bool] = {}
    kept = []
    for name in names:
        parts = name.split("/")
        if _skipped_name(parts) or parts[-1].endswith(".pyc"):
            continue
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if folder not in blocked:
                path = root / folder
                blocked[folder] = path.is_symlink() or (path / "pyvenv.cfg").exists()
            if blocked[folder]:
                break
        else:
            kept.append(name)
    return kept


def _skipped_name(parts: list[str]) -> bool:
    return any(part in SKIPPED_NAMES or part.endswith(".egg-info") for part in parts)


def _scan(root: Path, names: Iterable[str]) -> list[_Entry]:
    """One entry per regular file or inside-pointing symlink, sorted by path."""
    real_root = os.path.realpath(root)
    entries = []
    for name in names:
        path = root / name
        try:
            mode = path.lstat().st_mode
        except FileNotFoundError:  # deleted but still tracked
            continue
        if stat.S_ISLNK(mode):
            target = _inside_target(real_root, path, name)
            if target is not None:
                entries.append(_Entry(name, "link", target, 0))
        elif stat.S_ISREG(mode):
            hashed = _copy_and_hash(path, None)
            if hashed is not None:
                entries.append(_Entry(name, *hashed))
        else:
            log.warning("skipping %s: not a regular file or symlink", path)
    return sorted(entries, key=lambda entry: os.fsencode(entry.path))


def _inside_target(real_root: str, link: Path, name: str) -> str | None:
    """The link's target if it is relative and stays inside the repository, else None (warned)."""
    target = os.readlink(link)
    lexical = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
    real = os.path.realpath(link)
    inside = real == real_root or real.startswith(real_root + os.sep)
    if os.path.isabs(target) or lexical == ".." or lexical.startswith("../") or not inside:
        log.warning("skipping symlink %s -> %s: it points outside the repository", name, target)
        return None
    return target


def _copy_and_hash(source: Path, dest: Path | None) -> tuple[str, str, int] | None:
    """(kind, sha256, size) of the regular file ``source``, copied to ``dest`` (read-only) if given.

    The file is opened without following symlinks; None if it vanished or is no longer regular.
    """
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # replaced by a symlink since it was listed
            return None
        raise InputError(f"cannot read {source}: {exc.strerror}") from exc
    with open(fd, "rb") as reader:
        info = os.fstat(reader.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None
        executable = bool(info.st_mode & stat.S_IXUSR)
        sha, size = hashlib.sha256(), 0
        with contextlib.ExitStack() as stack:
            writer = stack.enter_context(open(dest, "xb")) if dest is not None else None
            buffer = bytearray(_CHUNK)
            view = memoryview(buffer)
            while count := reader.readinto(buffer):
                sha.update(view[:count])
                if writer is not None:
                    writer.write(view[:count])
                size += count
            if writer is not None:
                os.fchmod(writer.fileno(), 0o555 if executable else 0o444)
    return ("exec" if executable else "file"), sha.hexdigest(), size


def _digest(entries: Iterable[_Entry]) -> str:
    """sha256 over (path, kind, content hash or link target) of the sorted entries, NUL-separated."""
    sha = hashlib.sha256(_DIGEST_VERSION)
    for entry in entries:
        for field in (entry.path, entry.kind, entry.payload):
            sha.update(os.fsencode(field) + b"\0")
    return sha.hexdigest()


def _build(root: Path, entries: list[_Entry], dest: Path) -> list[_Entry]:
    """Copy ``entries`` from ``root`` into ``dest``; return them as copied (hashed again)."""
    made: set[Path] = set()
    built = []
    try:
        for entry in entries:
            target = dest / entry.path
            if target.parent not in made:
                target.parent.mkdir(parents=True, exist_ok=True)
                made.add(target.parent)
            if entry.kind == "link":
                os.symlink(entry.payload, target)
                built.append(entry)
                continue
            copied = _copy_and_hash(root / entry.path, target)
            if copied is None:
                log.warning("skipping %s: it changed while the snapshot was made", entry.path)
                with contextlib.suppress(FileNotFoundError):
                    target.unlink()
                continue
            built.append(_Entry(entry.path, *copied))
    except OSError as exc:
        raise WorkspaceError(f"cannot write the snapshot in {dest.parent}: {exc}") from exc
    return built


def _freeze(folder: Path) -> None:
    """Remove write permission from every folder (files are made read-only as they are copied)."""
    for path, _dirs, _files in os.walk(folder, topdown=False):
        os.chmod(path, 0o555)


# -- cache scratch space ------------------------------------------------------------------------


def _prepare_cache(cache: Path) -> None:
    """Create the cache and remove the scratch folders of dead snapshot processes on this host."""
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WorkspaceError(f"cannot create the workspace cache {cache}: {exc.strerror}") from exc
    for child in cache.iterdir():
        owner = _scratch_owner(child.name)
        if owner is not None and owner != os.getpid() and not _alive(owner):
            _remove(child)


def _host_tag() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _scratch_owner(name: str) -> int | None:
    """The pid that made scratch folder ``name`` on this host, else None."""
    if not name.startswith(_TMP_PREFIX):
        return None
    parts = name[len(_TMP_PREFIX):].split("-")
    if len(parts) != 3 or parts[0] != _host_tag() or not parts[1].isdigit():
        return None
    return int(parts[1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, as another user's
        pass
    return True


@contextlib.contextmanager
def _temporary(cache: Path) -> Iterator[Path]:
    """A scratch folder in the cache (same file system, so a rename publishes), removed after."""
    try:
        path = Path(tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{_host_tag()}-{os.getpid()}-", dir=cache))
    except OSError as exc:
        raise WorkspaceError(f"cannot write in the workspace cache {cache}: {exc.strerror}") from exc
    try:
        yield path
    finally:
        _remove(path)


def _remove(path: Path) -> None:
    """Delete a (possibly read-only) tree; missing is fine."""
    if not path.exists():
        return
    for folder, _dirs, _files in os.walk(path):
        with contextlib.suppress(OSError):
            os.chmod(folder, 0o700)
    shutil.rmtree(path, ignore_errors=True)


# -- git ----------------------------------------------------------------------------------------


def _git(*args: str, cwd: Path | None = None) -> bytes:
    """Run ``git args`` and return its stdout; ``CalledProcessError`` on failure.

    Optional locks are off (no index refresh), fsmonitor hooks are off, prompts are off, messages
    are in English and variables that would redirect git to another repository are dropped.
    """
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCATION_VARS}
    env.update({"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"})
    if "GIT_SSH_COMMAND" not in env and "GIT_SSH" not in env:
        env["GIT_SSH_COMMAND"] = "ssh -o BatchMode=yes"
    try:
        done = subprocess.run(["git", "-c", "core.fsmonitor=false", *args], cwd=cwd, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, check=True)
    except FileNotFoundError as exc:
        raise WorkspaceError("git is not installed (or not on PATH); snapshots need it") from exc
    return done.stdout


@contextlib.contextmanager
def _git_errors(make: Callable[[str], EquisaError]) -> Iterator[None]:
    """Translate a failed git command into ``make(<git's one-line reason>)``."""
    try:
        yield
    except subprocess.CalledProcessError as exc:
        raise make(_git_message(exc)) from exc


def _git_message(exc: subprocess.CalledProcessError) -> str:
    """git's reason for failing, on one line."""
    lines = [line.strip() for line in os.fsdecode(exc.stderr or b"").splitlines() if line.strip()]
    for line in lines:
        for prefix in ("fatal: ", "error: "):
            if line.startswith(prefix):
                return line.removeprefix(prefix)
    return lines[-1] if lines else f"git exited with status {exc.returncode}"


def _split_z(out: bytes) -> list[str]:
    return [os.fsdecode(name) for name in out.split(b"\0") if name]

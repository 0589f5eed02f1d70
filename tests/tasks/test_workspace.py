"""Workspace snapshots, against real git repositories made in tmp_path."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import tasks.run.workspace as workspace_module
from equisa_core.errors import InputError, RepositoryNotFoundError
from tasks.run.workspace import CloneError, RefNotFoundError, Workspace, snapshot

PROJECT = Path(workspace_module.__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def isolated_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Git sees only a known configuration, never the machine's."""
    config = tmp_path_factory.mktemp("gitconfig") / "config"
    config.write_text("[user]\n\tname = T\n\temail = t@example.com\n[init]\n\tdefaultBranch = main\n"
                      "[commit]\n\tgpgsign = false\n[tag]\n\tgpgsign = false\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[Path]:
    """A fresh workspace cache, removed afterwards (its snapshots are read-only)."""
    path = tmp_path / "cache"
    yield path
    for folder, _dirs, _files in os.walk(path):
        os.chmod(folder, 0o700)
    shutil.rmtree(path, ignore_errors=True)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def make_repo(path: Path, files: dict[str, str | bytes]) -> Path:
    """A git repository at ``path`` with ``files`` committed on main."""
    path.mkdir(parents=True)
    git(path, "init", "-q")
    write(path, files)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "first")
    return path


def contents(root: Path) -> dict[str, bytes | str]:
    """relative path -> bytes (files) or 'link:<target>' (symlinks), for everything under root."""
    found: dict[str, bytes | str] = {}
    for folder, dirs, files in os.walk(root):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = Path(folder, name)
            rel = path.relative_to(root).as_posix()
            found[rel] = f"link:{os.readlink(path)}" if path.is_symlink() else path.read_bytes()
    return found


def tree_state(root: Path) -> dict[str, tuple]:
    """Every path under root (``.git`` included) with its mode, mtime and content hash."""
    state: dict[str, tuple] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                payload: str = os.readlink(path)
            elif stat.S_ISREG(info.st_mode):
                payload = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                payload = ""
            state[path.relative_to(root).as_posix()] = (info.st_mode, info.st_mtime_ns, payload)
    info = root.lstat()
    state["."] = (info.st_mode, info.st_mtime_ns, "")
    return state


# -- what goes in -------------------------------------------------------------------------------


def test_work_tree_takes_tracked_untracked_and_uncommitted_files(tmp_path: Path, cache: Path) -> None:
    repo = make_repo(tmp_path / "repo", {
        ".gitignore": "*.log\nbuild/\n",
        "pkg/__init__.py": "",
        "pkg/core.py": "def f():\n    return 1\n",
        "gone.py": "x = 1\n",
        "tests/test_core.py": "from pkg.core import f\n",
    })
    (repo / "pkg/core.py").write_text("def f():\n    return 2\n")  # uncommitted change
    (repo / "gone.py").unlink()  # deleted but still tracked
    write(repo, {
        "pkg/new.py": "y = 2\n",  # untracked
        "debug.log": "ignored",
        "build/lib/pkg/core.py": "ignored",
        "env/pyvenv.cfg": "home = /usr\n",  # a virtualenv git does not ignore
        "env/lib/site.py": "venv",
        "pkg/__pycache__/core.cpython-311.pyc": b"\0",
        "stray.pyc": b"\0",
        ".pytest_cache/v/x": "cache",
        ".mypy_cache/x": "cache",
        "pkg.egg-info/PKG-INFO": "meta",
        "node_modules/x.js": "js",
    })

    ws = snapshot(repo, cache_dir=cache)

    assert isinstance(ws, Workspace)
    assert ws.root == cache / ws.digest and ws.source == str(repo.resolve()) and ws.ref is None
    assert contents(ws.root) == {
        ".gitignore": b"*.log\nbuild/\n",
        "pkg/__init__.py": b"",
        "pkg/core.py": b"def f():\n    return 2\n",
        "pkg/new.py": b"y = 2\n",
        "tests/test_core.py": b"from pkg.core import f\n",
    }
    assert ws.files == 5
    assert ws.bytes == sum(len(c) for c in contents(ws.root).values())


def test_virtualenv_and_caches_skipped_even_when_tracked(tmp_path: Path, cache: Path) -> None:
    repo = make_repo(tmp_path / "repo", {
        "a.py": "a",
        ".venv/pyvenv.cfg": "home = /usr\n",
        ".venv/lib/x.py": "venv",
        "pkg/__pycache__/a.cpython-311.pyc": b"\0",
        ".tox/log": "tox",
    })
    assert set(contents(snapshot(repo, cache_dir=cache).root)) == {"a.py"}


def test_nested_repository_included_with_its_own_ignores(tmp_path: Path, cache: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.py": "a"})
    make_repo(repo / "vendor/lib", {"lib.py": "lib", ".gitignore": "*.tmp\n"})
    write(repo, {"vendor/lib/scratch.tmp": "no", "vendor/lib/extra.py": "extra"})
    assert set(contents(snapshot(repo, cache_dir=cache).root)) == {
        "a.py", "vendor/lib/lib.py", "vendor/lib/.gitignore", "vendor/lib/extra.py",
    }


def test_plain_folder_honors_gitignore_files(tmp_path: Path, cache: Path) -> None:
    folder = tmp_path / "plain"
    write(folder, {
        ".gitignore": "*.log\n!keep.log\n/data/\n",
        "a.py": "a",
        "run.log": "no",
        "keep.log": "yes",
        "data/big.csv": "no",
        "sub/.gitignore": "generated_*\n",
        "sub/b.py": "b",
        "sub/generated_c.py": "no",
        "sub/data/ok.csv": "anchored pattern: only the top data/ is ignored",
        "venv/pyvenv.cfg": "home = /usr\n",
        "venv/lib/x.py": "no",
        "__pycache__/a.cpython-311.pyc": b"\0",
        ".ruff_cache/x": "no",
        ".eggs/x": "no",
    })
    before = tree_state(folder)

    ws = snapshot(folder, cache_dir=cache)

    assert set(contents(ws.root)) == {".gitignore", "a.py", "keep.log", "sub/.gitignore", "sub/b.py",
                                      "sub/data/ok.csv"}
    assert tree_state(folder) == before  # in particular, no .git was made in it


def test_folder_ignored_by_its_enclosing_repository_is_taken_as_plain(tmp_path: Path, cache: Path) -> None:
    repo = make_repo(tmp_path / "repo", {".gitignore": "scratch/\n", "a.py": "a"})
    write(repo, {"scratch/s.py": "s", "scratch/.gitignore": "*.out\n", "scratch/x.out": "no"})
    assert set(contents(snapshot(repo / "scratch", cache_dir=cache).root)) == {"s.py", ".gitignore"}


def test_subfolder_of_a_work_tree(tmp_path: Path, cache: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.py": "a", "sub/b.py": "b"})
    (repo / "sub/b.py").write_text("b2")
    assert contents(snapshot(repo / "sub", cache_dir=cache).root) == {"b.py": b"b2"}
    assert contents(snapshot(repo / "sub", ref="HEAD", cache_dir=cache).root) == {"b.py": b"b"}


def test_git_variables_of_the_caller_do_not_redirect_git(tmp_path: Path, cache: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    other = make_repo(tmp_path / "other", {"other.py": "o"})
    repo = make_repo(tmp_path / "repo", {"a.py": "a"})
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git/index"))
    assert set(contents(snapshot(repo, cache_dir=cache).root)) == {"a.py"}


# -- digest and cache ---------------------------------------------------------------------------


def test_digest_stable_and_changed_by_one_byte_or_one_exec_bit(tmp_path: Path, cache: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.py": "value = 1\n", "run.sh": "echo\n"})
    first = snapshot(repo, cache_dir=cache)
    built_at = first.root.stat().st_ctime_ns
    second = snapshot(repo, cache_dir=cache)
    assert second == first
    assert second.root.stat().st_ctime_ns == built_at  # reused, not rebuilt

    (repo / "a.py").write_text("value = 2\n")
    changed = snapshot(repo, cache_dir=cache)
    assert changed.digest != first.digest
    assert (changed.root / "a.py").read_text() == "value = 2\n"
    assert first.root.is_dir()  # the old snapshot is still there, untouched

    (repo / "run.sh").chmod(0o755)
    executable = snapshot(repo, cache_dir=cache)
    assert executable.digest != changed.digest
    assert (executable.root / "run.sh").stat().st_mode & stat.S_IXUSR


def test_same_content_same_digest_whatever_the_source(tmp_path: Path, cache: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.py": "a", "pkg/b.py": "b", "c.py": "a"})
    plain = tmp_path / "plain"
    write(plain, {"a.py": "a", "pkg/b.py": "b", "c.py": "a"})
    digests = {
        snapshot(repo, cache_dir=cache).digest,
        snapshot(repo, ref="HEAD", cache_dir=cache).digest,
        snapshot(repo.as_uri(), cache_dir=cache).digest,
        snapshot(plain, cache_dir=cache).digest,
    }
    assert len(digests) == 1


def test_file_changed_while_snapshotting_gets_the_digest_of_what_was_copied(
        tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo", {"a.py": "before"})
    real_build = workspace_module._build

    def build_after_an_edit(root: Path, entries: list, dest: Path) -> list:
        (repo / "a.py").write_text("after")  # between hashing and copying
        return real_build(root, entries, dest)

    monkeypatch.setattr(workspace_module, "_build", build_after_an_edit)
    ws = snapshot(repo, cache_dir=cache)
    monkeypatch.undo()
    assert (ws.root / "a.py").read_text() == "after"
    assert snapshot(repo, cache_dir=cache) == ws


def test_snapshot_is_read_only(tmp_path: Path, cache: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.py": "a", "pkg/b.py": "b", "tool.sh": "echo"})
    (repo / "tool.sh").chmod(0o755)
    ws = snapshot(repo, cache_dir=cache)
    paths = [ws.root, *ws.root.rglob("*")]
    assert len(paths) == 5
    for path in paths:
        assert path.stat().st_mode & 0o222 == 0, path
    assert (ws.root / "tool.sh").stat().st_mode & 0o111 == 0o111
    if os.geteuid() != 0:  # root ignores permissions
        with pytest.raises(PermissionError):
            (ws.root / "a.py").write_text("changed")
        with pytest.raises(PermissionError):
            (ws.root / "new.py").write_text("new")


def test_cache_dir_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo", {"a.py": "a"})
    monkeypatch.setenv("EQUISA_WORKSPACES", str(tmp_path / "from-env"))
    assert snapshot(repo).root.parent == tmp_path / "from-env"


def test_concurrent_snapshots_of_the_same_content_agree(tmp_path: Path, cache: Path) -> None:
    repo = make_repo(tmp_path / "repo", {f"m{i}.py": f"x = {i}\n" * 200 for i in range(200)})
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: snapshot(repo, cache_dir=cache), range(4)))
    assert len({ws.root for ws in results}) == 1
    assert contents(results[0].root) == {f"m{i}.py": f"x = {i}\n".encode() * 200 for i in range(200)}
    assert [p.name for p in cache.iterdir()] == [results[0].digest]  # no scratch folder left


# -- git URLs and refs --------------------------------------------------------------------------


@pytest.fixture
def history(tmp_path: Path) -> dict[str, str]:
    """A repository with a tag, a branch and two commits on main; returns names -> values."""
    repo = make_repo(tmp_path / "origin", {"version.txt": "one"})
    first = git(repo, "rev-parse", "HEAD")
    git(repo, "tag", "v1")
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, {"version.txt": "feature", "feature.py": "f"})
    git(repo, "commit", "-qam", "feature")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "feature file")
    git(repo, "checkout", "-q", "main")
    write(repo, {"version.txt": "two"})
    git(repo, "commit", "-qam", "second")
    return {"url": repo.as_uri(), "path": str(repo), "first": first}


@pytest.mark.parametrize(("ref", "expected"), [
    (None, "two"),
    ("HEAD", "two"),
    ("main", "two"),
    ("feature", "feature"),
    ("refs/heads/feature", "feature"),
    ("v1", "one"),
    ("first", "one"),  # the full commit SHA
    ("first7", "one"),  # an abbreviated SHA
    ("main~1", "one"),
])
def test_git_url_at_a_ref(history: dict[str, str], cache: Path, ref: str | None, expected: str) -> None:
    if ref == "first":
        ref = history["first"]
    elif ref == "first7":
        ref = history["first"][:7]
    ws = snapshot(history["url"], ref=ref, cache_dir=cache)
    assert (ws.root / "version.txt").read_text() == expected
    assert (ws.root / "feature.py").exists() == (expected == "feature")
    assert ws.source == history["url"] and ws.ref == ref
    assert not (ws.root / ".git").exists()
    assert [p.name for p in cache.iterdir()] == [ws.digest]  # the clone is gone


def test_ref_outside_branches_and_tags(history: dict[str, str], cache: Path) -> None:
    """A pull-request ref and a commit reachable only from it, by URL and from the local work tree."""
    origin = Path(history["path"])
    git(origin, "checkout", "-q", "-b", "pr")
    write(origin, {"version.txt": "pull request"})
    git(origin, "commit", "-qam", "pr")
    pr_commit = git(origin, "rev-parse", "HEAD")
    git(origin, "update-ref", "refs/pull/1/head", pr_commit)
    git(origin, "checkout", "-q", "main")
    git(origin, "branch", "-q", "-D", "pr")
    for source in (history["url"], history["path"]):
        for ref in ("refs/pull/1/head", pr_commit):
            ws = snapshot(source, ref=ref, cache_dir=cache)
            assert (ws.root / "version.txt").read_text() == "pull request", (source, ref)
            assert ws.ref == ref


def test_url_takes_tracked_files_only(history: dict[str, str], cache: Path) -> None:
    write(Path(history["path"]), {"untracked.py": "u", "version.txt": "dirty"})
    ws = snapshot(history["url"], cache_dir=cache)
    assert contents(ws.root) == {"version.txt": b"two"}


def test_local_work_tree_at_a_ref_and_local_bare_repository(history: dict[str, str], tmp_path: Path,
                                                             cache: Path) -> None:
    origin = Path(history["path"])
    (origin / "version.txt").write_text("uncommitted")
    assert (snapshot(origin, cache_dir=cache).root / "version.txt").read_text() == "uncommitted"
    assert (snapshot(origin, ref="v1", cache_dir=cache).root / "version.txt").read_text() == "one"
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(origin), str(bare))
    assert (snapshot(bare, cache_dir=cache).root / "version.txt").read_text() == "two"
    assert (snapshot(str(bare), ref="feature", cache_dir=cache).root / "feature.py").exists()


# -- errors -------------------------------------------------------------------------------------


def _one_line(error: pytest.ExceptionInfo[InputError]) -> str:
    message = str(error.value)
    assert "\n" not in message and message
    assert error.value.exit_code == InputError.exit_code
    return message


def test_missing_path_and_file_path(tmp_path: Path, cache: Path) -> None:
    with pytest.raises(RepositoryNotFoundError) as error:
        snapshot(tmp_path / "nowhere", cache_dir=cache)
    assert "does not exist" in _one_line(error)
    (tmp_path / "file.py").write_text("x")
    with pytest.raises(RepositoryNotFoundError) as error:
        snapshot(tmp_path / "file.py", cache_dir=cache)
    assert "not a directory" in _one_line(error)


@pytest.mark.parametrize("url", ["file:///nowhere/at/all.git", "https://127.0.0.1:9/nothing.git"])
def test_url_that_cannot_be_cloned(url: str, cache: Path) -> None:
    with pytest.raises(CloneError) as error:
        snapshot(url, cache_dir=cache)
    message = _one_line(error)
    assert message.startswith(f"cannot clone {url}: ")
    assert isinstance(error.value, RepositoryNotFoundError)
    assert [p.name for p in cache.iterdir()] == []


def test_ref_that_does_not_exist(history: dict[str, str], cache: Path) -> None:
    for source in (history["url"], history["path"]):
        with pytest.raises(RefNotFoundError) as error:
            snapshot(source, ref="no-such-branch", cache_dir=cache)
        assert _one_line(error) == f"ref 'no-such-branch' does not exist in {source}"
    with pytest.raises(RefNotFoundError):
        snapshot(history["url"], ref="0" * 40, cache_dir=cache)
    assert [p.name for p in cache.iterdir()] == []


def test_ref_on_a_plain_folder_and_cache_inside_the_repository(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    write(folder, {"a.py": "a"})
    with pytest.raises(InputError) as error:
        snapshot(folder, ref="main", cache_dir=tmp_path / "cache")
    assert "is not a git repository" in _one_line(error)
    with pytest.raises(InputError) as error:
        snapshot(folder, cache_dir=folder / ".cache")
    assert "inside the repository" in _one_line(error)
    assert not (folder / ".cache").exists()


# -- symlinks -----------------------------------------------------------------------------------


def test_symlinks_inside_kept_outside_skipped(tmp_path: Path, cache: Path,
                                              caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "outside.txt").write_text("secret")
    repo = make_repo(tmp_path / "repo", {"pkg/real.py": "real", "data/d.txt": "d"})
    os.symlink("real.py", repo / "pkg/alias.py")
    os.symlink("../data", repo / "pkg/data")
    os.symlink("../outside.txt", repo / "escape.txt")
    os.symlink(str(tmp_path / "outside.txt"), repo / "absolute.txt")
    os.symlink(str(repo / "pkg/real.py"), repo / "absolute_inside.py")  # would lead back to the source
    os.symlink("escape.txt", repo / "chain.txt")  # inside, but resolves outside
    os.symlink("missing.py", repo / "dangling.py")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "links")

    with caplog.at_level(logging.WARNING, logger="tasks.run.workspace"):
        ws = snapshot(repo, cache_dir=cache)

    assert contents(ws.root) == {
        "pkg/real.py": b"real",
        "data/d.txt": b"d",
        "pkg/alias.py": "link:real.py",
        "pkg/data": "link:../data",
        "dangling.py": "link:missing.py",
    }
    assert (ws.root / "pkg/alias.py").read_text() == "real"
    assert (ws.root / "pkg/data/d.txt").read_text() == "d"
    skipped = {name for name in ("escape.txt", "absolute.txt", "absolute_inside.py", "chain.txt")
               if name in caplog.text}
    assert skipped == {"escape.txt", "absolute.txt", "absolute_inside.py", "chain.txt"}

    os.unlink(repo / "pkg/alias.py")
    os.symlink("../data/d.txt", repo / "pkg/alias.py")
    assert snapshot(repo, cache_dir=cache).digest != ws.digest  # the link target is in the digest


# -- the source tree is never written -----------------------------------------------------------


def test_source_tree_byte_identical_after_snapshots(history: dict[str, str], cache: Path) -> None:
    origin = Path(history["path"])
    write(origin, {"version.txt": "dirty", "untracked.py": "u", "ignored/.gitignore": "*\n"})
    index = origin / ".git/index"
    index_mtime = index.stat().st_mtime_ns
    before = tree_state(origin)

    snapshot(origin, cache_dir=cache)
    snapshot(origin, cache_dir=cache)
    snapshot(origin, ref="feature", cache_dir=cache)
    snapshot(origin, ref=history["first"], cache_dir=cache)
    snapshot(history["url"], ref="v1", cache_dir=cache)
    with pytest.raises(RefNotFoundError):
        snapshot(origin, ref="nope", cache_dir=cache)

    assert index.stat().st_mtime_ns == index_mtime
    assert tree_state(origin) == before


_KILLED_SNAPSHOT = """
import sys
from pathlib import Path
from tasks.run.workspace import snapshot
snapshot(Path(sys.argv[1]), cache_dir=Path(sys.argv[2]))
"""


@pytest.mark.integration
def test_sigkill_mid_snapshot_leaves_source_identical_and_no_half_snapshot(tmp_path: Path,
                                                                          cache: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.py": "a", ".gitignore": "*.log\n"})
    block = os.urandom(256 * 1024)
    write(repo, {f"data/f{i:04d}.bin": block[i:] + block[:i] for i in range(600)})  # 150 MiB, untracked
    write(repo, {"run.log": "ignored"})
    before = tree_state(repo)

    process = subprocess.Popen([sys.executable, "-c", _KILLED_SNAPSHOT, str(repo), str(cache)],
                               cwd=PROJECT)
    deadline = time.monotonic() + 60
    scratch: list[Path] = []
    while time.monotonic() < deadline and process.poll() is None:
        scratch = [p for p in cache.glob(".tmp-*") if any((p / "data").glob("*.bin"))]
        if scratch:
            process.send_signal(signal.SIGKILL)
            break
        time.sleep(0.002)
    assert process.wait(timeout=30) == -signal.SIGKILL, "the snapshot finished before it could be killed"
    assert scratch, "the snapshot was not killed while building"

    assert [p for p in cache.iterdir() if not p.name.startswith(".tmp-")] == []  # no <digest>/
    assert tree_state(repo) == before

    ws = snapshot(repo, cache_dir=cache)
    assert ws.files == 602
    assert contents(ws.root) == {k: v for k, v in contents(repo).items()
                                 if not k.startswith(".git/") and k != "run.log"}
    assert [p.name for p in cache.iterdir()] == [ws.digest]  # the dead process's scratch is swept
    assert tree_state(repo) == before
    shutil.rmtree(repo)


def test_exported_names() -> None:
    defined = {name for name, value in vars(workspace_module).items()
               if not name.startswith("_") and getattr(value, "__module__", None) == "tasks.run.workspace"}
    reexported_errors = {"CloneError", "RefNotFoundError", "WorkspaceError"}  # from equisa_core.errors
    assert set(workspace_module.__all__) == defined | {"SKIPPED_NAMES"} | reexported_errors

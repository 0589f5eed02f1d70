"""BugsInPy's data for the allowed projects: bug records, checkouts, target tests, the fix patch.

Everything is read from bare git snapshots (``git show`` / ``git archive``), never from a work
tree: ``<mirrors>/soarsmu+BugsInPy/repo`` and ``<mirrors>/<owner>+<name>/repo`` for each project.
A missing snapshot is cloned (``git clone --bare``) from GitHub into ``<cache>/mirrors``.
Only ``projects/<allowed>/...`` paths are ever read.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from . import ALLOWED_PROJECTS

BUGSINPY_URL = "https://github.com/soarsmu/BugsInPy"
DEFAULT_MIRRORS = Path(os.environ.get("EQUISA_BENCH_MIRRORS", "/work/.mirror"))
#: Other owners a project's snapshot may be stored under (the repository moved on GitHub).
MIRROR_ALIASES = {"sanic": ("sanic-org+sanic", "huge-success+sanic")}


class Refused(ValueError):
    """A project outside ``ALLOWED_PROJECTS`` was asked for."""


def check_project(project: str) -> str:
    if project not in ALLOWED_PROJECTS:
        raise Refused(f"project {project!r} is not part of this benchmark "
                      f"(allowed: {', '.join(ALLOWED_PROJECTS)})")
    return project


def git(git_dir: Path, *args: str, text: bool = True) -> str | bytes:
    out = subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, check=True)
    return out.stdout.decode("utf-8", errors="replace") if text else out.stdout


def _clone(url: str, dest: Path) -> Path:
    if not dest.exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        print(f"[mirror] cloning {url} into {dest}", flush=True)
        subprocess.run(["git", "clone", "--bare", "--quiet", url, str(dest)], check=True)
    return dest


@dataclass
class Mirrors:
    root: Path
    cache: Path

    def bugsinpy(self) -> Path:
        found = self.root / "soarsmu+BugsInPy" / "repo"
        if found.exists():
            return found
        return _clone(BUGSINPY_URL, self.cache / "mirrors" / "soarsmu+BugsInPy")

    def project(self, project: str, github_url: str) -> Path:
        check_project(project)
        owner, name = github_url.rstrip("/").split("/")[-2:]
        for folder in (f"{owner}+{name}", *MIRROR_ALIASES.get(project, ())):
            for git_dir in (self.root / folder / "repo" / ".git", self.root / folder / "repo"):
                # A snapshot is a bare repository, or (seen for sanic) a folder holding only .git.
                if (git_dir / "HEAD").exists():
                    return git_dir
        return _clone(github_url, self.cache / "mirrors" / f"{owner}+{name}")


def _info(text: str) -> dict[str, str]:
    """``key="value"`` lines of project.info / bug.info."""
    return {m.group(1).strip(): m.group(2) for m in re.finditer(r'^\s*(\w+)\s*=\s*"([^"]*)"', text, re.M)}


def decode_text(data: bytes) -> str:
    """requirements.txt is often UTF-16 with a BOM (a Windows ``pip freeze``)."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data.decode("utf-16")
    if len(data) > 1 and data[1:2] == b"\x00":
        return data.decode("utf-16-le")
    return data.decode("utf-8-sig", errors="replace")


@dataclass
class Bug:
    project: str
    number: int
    python_version: str
    buggy_commit: str
    fixed_commit: str
    test_files: list[str]  # bug.info's test_file, as given (may include data files)
    run_test: str
    patch: str
    requirements: str
    setup_sh: str
    github_url: str
    extra: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.project}:{self.number}"

    @property
    def slug(self) -> str:
        return f"{self.project}-{self.number}"


def list_bugs(bugsinpy: Path, project: str) -> list[int]:
    check_project(project)
    names = git(bugsinpy, "ls-tree", "--name-only", "HEAD", f"projects/{project}/bugs/").split()
    return sorted(int(Path(n).name) for n in names if Path(n).name.isdigit())


def load_bug(bugsinpy: Path, project: str, number: int) -> Bug:
    check_project(project)
    base = f"projects/{project}/bugs/{number}"

    def show(path: str, required: bool = True) -> bytes:
        try:
            return git(bugsinpy, "show", f"HEAD:{path}", text=False)
        except subprocess.CalledProcessError:
            if required:
                raise
            return b""

    project_info = _info(decode_text(show(f"projects/{project}/project.info")))
    info = _info(decode_text(show(f"{base}/bug.info")))
    return Bug(
        project=project, number=number,
        python_version=info.get("python_version", ""),
        buggy_commit=info["buggy_commit_id"], fixed_commit=info["fixed_commit_id"],
        test_files=[t.strip() for t in info.get("test_file", "").split(";") if t.strip()],
        run_test=decode_text(show(f"{base}/run_test.sh")),
        patch=decode_text(show(f"{base}/bug_patch.txt")),
        requirements=decode_text(show(f"{base}/requirements.txt", required=False)),
        setup_sh=decode_text(show(f"{base}/setup.sh", required=False)),
        github_url=project_info.get("github_url", ""),
    )


# -------------------------------------------------------------------------------------------------
# Checkouts


def export_tree(repo: Path, commit: str, dest: Path) -> None:
    """``git archive COMMIT | tar -x`` into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", f"--git-dir={repo}", "archive", "--format=tar", commit],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)


def checkout_buggy(bug: Bug, repo: Path, dest: Path) -> list[str]:
    """The buggy commit's tree with the fixed commit's version of every test file (bugsinpy-checkout
    -v 0), plus the ``touch`` lines of setup.sh. Returns notes (setup.sh steps skipped...)."""
    notes = []
    export_tree(repo, bug.buggy_commit, dest)
    for test_file in bug.test_files:
        try:
            content = git(repo, "show", f"{bug.fixed_commit}:{test_file}", text=False)
        except subprocess.CalledProcessError:
            notes.append(f"test file {test_file} absent from the fixed commit")
            continue
        target = dest / test_file
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    # Test data the fix commit added (e.g. black's tests/data/<case>.py) that bug.info does not list.
    changed = git(repo, "diff", "--name-only", "--diff-filter=A", bug.buggy_commit, bug.fixed_commit).split("\n")
    for path in (p for p in changed if p and p not in bug.test_files and is_test_path(p)):
        if not (dest / path).exists():
            target = dest / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(git(repo, "show", f"{bug.fixed_commit}:{path}", text=False))
            notes.append(f"test file added by the fix commit copied in: {path}")
    for line in bug.setup_sh.splitlines():
        words = shlex.split(line, comments=True) if line.strip() else []
        if not words:
            continue
        if words[0] == "touch":
            for name in words[1:]:
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                (dest / name).touch()
        else:
            notes.append(f"setup.sh step not run: {line.strip()}")
    return notes


def apply_patch(patch: str, tree: Path) -> str | None:
    """Apply the fix; None when it applied, else the reason."""
    for cmd in (["git", "apply", "-p1", "--whitespace=nowarn", "-"],
                ["patch", "-p1", "--batch", "--forward", "-s"]):
        run = subprocess.run(cmd, cwd=tree, input=patch.encode(), capture_output=True)
        if run.returncode == 0:
            return None
        reason = (run.stderr or run.stdout).decode(errors="replace").strip()
    return f"bug_patch.txt does not apply: {reason[:300]}"


# -------------------------------------------------------------------------------------------------
# Target tests


def _unittest_to_node(name: str, root: Path) -> str | None:
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        path = "/".join(parts[:i]) + ".py"
        if (root / path).is_file():
            return "::".join([path, *parts[i:]])
    return None


def target_tests(run_test: str, root: Path) -> tuple[list[str], list[str]]:
    """run_test.sh as pytest node ids; also the names that could not be translated."""
    nodes: list[str] = []
    problems: list[str] = []
    for line in run_test.splitlines():
        words = shlex.split(line, comments=True) if line.strip() else []
        if not words:
            continue
        if words[:3] == ["python", "-m", "unittest"]:
            for name in (w for w in words[3:] if not w.startswith("-")):
                node = _unittest_to_node(name, root)
                (nodes.append(node) if node else problems.append(name))
        elif words[0] == "pytest" or words[:3] == ["python", "-m", "pytest"]:
            args = words[1:] if words[0] == "pytest" else words[3:]
            for arg in (a for a in args if not a.startswith("-")):
                path = arg.split("::")[0]
                (nodes.append(arg) if (root / path).exists() else problems.append(arg))
        else:
            problems.append(line.strip())
    return list(dict.fromkeys(nodes)), problems


_TEST_NAME = re.compile(r"(^test_.*\.py$)|(^.*_test\.py$)|(^tests?\.py$)")


def test_scope(bug: Bug, nodes: list[str]) -> list[str]:
    """The test files both tools run: bug.info's test files that are test modules, plus the files
    of the target tests (data files such as black's ``tests/data/*.py`` are left out)."""
    files = [t for t in bug.test_files if t.endswith(".py") and _TEST_NAME.match(Path(t).name)]
    files += [n.split("::")[0] for n in nodes]
    return list(dict.fromkeys(files))


def is_test_path(path: str) -> bool:
    parts = Path(path).parts
    name = parts[-1] if parts else path
    return (any(p in ("test", "tests", "testing") for p in parts[:-1])
            or bool(_TEST_NAME.match(name)) or name == "conftest.py")


# -------------------------------------------------------------------------------------------------
# Requirements


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_lines(bug: Bug) -> tuple[list[str], list[str]]:
    """The dump's pins, minus the project itself and editable/VCS lines; and what was dropped."""
    keep, dropped = [], []
    for raw in bug.requirements.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-e") or "git+" in line or "://" in line:
            dropped.append(line)
            continue
        name = re.split(r"[=<>!~\[; ]", line, maxsplit=1)[0]
        if _norm(name) == _norm(bug.project):
            dropped.append(line)
            continue
        keep.append(line)
    return keep, dropped


def req_name(line: str) -> str:
    return _norm(re.split(r"[=<>!~\[; ]", line.strip(), maxsplit=1)[0])

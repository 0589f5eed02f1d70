"""The prepare and run steps: checkouts, venvs, verification, and both tools on every verified bug."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from equisa_core.errors import EXIT_NOT_CONVERGED, EXIT_OK

from . import ALLOWED_PROJECTS
from .bugsinpy import (
    Mirrors,
    apply_patch,
    check_project,
    checkout_buggy,
    list_bugs,
    load_bug,
    target_tests,
    test_scope,
)
from .envs import build_env, curated_spec, fauxpy_apart, fauxpy_folder, load_curation
from .peer import FUNCTION_CSV, lift, statement_plan
from .study import load_study
from .truth import truth_functions

#: The exit codes of an ``equisa localize`` run that produced a ranking: 0, converged or not (since
#: issue 48 item 4), and 25, with which earlier revisions ended a ranking that did not converge (the
#: results kept from them, and an older revision that a comparison such as ``bench/layout_ranks.py``
#: runs, still say 25). The harness never passes ``--fail-unless-converged``.
RANKED_EXITS = (EXIT_OK, EXIT_NOT_CONVERGED)

REPO = Path(__file__).resolve().parents[2]
PREPARE_VERSION = 1  # bump when the prepare step's output changes meaning
VERIFY_TIMEOUT_S = 600
SCOPE_TIMEOUT_S = 900
TOOL_TIMEOUT_S = 1800
_print_lock = threading.Lock()


def log(message: str) -> None:
    with _print_lock:
        print(time.strftime("%H:%M:%S"), message, flush=True)


@dataclass
class Context:
    cache: Path
    mirrors: Mirrors
    jobs: int = 2
    force: bool = False
    retry_failed_envs: bool = False
    cold: bool = False  # run: every EQUISA command starts its own Prefect server (results-cold/)
    variant: str = ""  # run: a name for extra EQUISA options (results-<variant>/)
    equisa_args: tuple[str, ...] = ()  # run: options added to `equisa localize`
    statement: bool = False  # run: FauxPy at statement granularity too, as the study ran it (peer.py)

    @property
    def bugs_dir(self) -> Path:
        return self.cache / "bugs"

    @property
    def venvs(self) -> Path:
        return self.cache / "venvs"

    @property
    def results(self) -> Path:
        name = "-".join(["results", *(["cold"] if self.cold else []), *([self.variant] if self.variant else [])])
        return self.cache / name

    @property
    def manifest_path(self) -> Path:
        return self.cache / "manifest.json"


def select_bugs(ctx: Context, projects: Sequence[str] | None, bugs: str | None, limit: int | None) -> list[tuple[str, int]]:
    """(project, number) pairs; only allowed projects (others are refused with an error)."""
    bugsinpy = ctx.mirrors.bugsinpy()
    chosen: list[tuple[str, int]] = []
    if bugs:
        for item in bugs.split(","):
            project, _, number = item.strip().partition(":")
            check_project(project)
            chosen.append((project, int(number)))
    else:
        for project in projects or ALLOWED_PROJECTS:
            check_project(project)
            numbers = list_bugs(bugsinpy, project)
            chosen += [(project, n) for n in numbers[:limit] if limit is None or True]
    if limit is not None and not bugs:
        per: dict[str, int] = {}
        kept = []
        for project, number in chosen:
            per[project] = per.get(project, 0) + 1
            if per[project] <= limit:
                kept.append((project, number))
        chosen = kept
    return chosen


# -------------------------------------------------------------------------------------------------
# Processes


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of every test/tool run: no model endpoints, Prefect or EQUISA settings,
    ``PYTHONHASHSEED=0``, ``TZ=UTC``, no bytecode writes."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "EQUISA_", "PREFECT_", "PYTEST_", "COV_CORE_", "UV_"))
           and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PYTHONHASHSEED="0", TZ="UTC", PYTHONDONTWRITEBYTECODE="1")
    env.update(extra or {})
    return env


@dataclass
class Timed:
    wall_s: float
    returncode: int | None  # None: killed at the time limit
    stdout: str
    stderr: str


def timed_run(cmd: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float) -> Timed:
    started = time.perf_counter()
    process = subprocess.Popen(list(cmd), cwd=cwd, env=dict(env), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
        code = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        code = None
    wall = time.perf_counter() - started
    return Timed(wall, code, out.decode(errors="replace"), err.decode(errors="replace"))


_OUTCOME = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+)")


def pytest_run(python: str, tree: Path, args: Sequence[str], timeout: float) -> dict:
    """Plain pytest with per-test outcomes (``-rA``)."""
    cmd = [python, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--tb=line", "-rA", "--color=no",
           "-p", "no:fauxpy", *args]
    run = timed_run(cmd, tree, clean_env(), timeout)
    outcomes: dict[str, str] = {}
    for line in run.stdout.splitlines():
        found = _OUTCOME.match(line.strip())
        if found:
            outcomes.setdefault(found.group(2), found.group(1))
    lines = [line for line in run.stdout.strip().splitlines() if line.strip()]
    return {"returncode": run.returncode, "outcomes": outcomes, "wall_s": round(run.wall_s, 2),
            "summary": lines[-1].strip("= ") if lines else "", "tail": (run.stdout + run.stderr)[-1500:]}


def collect(python: str, tree: Path, nodes: Sequence[str]) -> tuple[list[str], list[str], str]:
    """Which target node ids exist: pytest --collect-only on them, one by one when needed (pytest
    collects nothing at all when one of several ids names no test, e.g. scrapy:1's helper)."""
    cmd = [python, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q", "--color=no",
           "-p", "no:fauxpy"]
    run = timed_run([*cmd, *nodes], tree, clean_env(), VERIFY_TIMEOUT_S)
    ids = [line.strip() for line in run.stdout.splitlines() if "::" in line and not line.startswith(" ")]
    found = [n for n in nodes if any(i == n or i.startswith(n + "::") or i.startswith(n + "[") for i in ids)]
    if run.returncode not in (0, 5) and len(nodes) > 1 and len(found) < len(nodes):
        for node in (n for n in nodes if n not in found):
            one = timed_run([*cmd, node], tree, clean_env(), VERIFY_TIMEOUT_S)
            listed = [line.strip() for line in one.stdout.splitlines() if not line.startswith(" ")]
            if any(_matches(line, node) for line in listed):
                found.append(node)
            else:
                run = one  # the problem reported when none collects
        found = [n for n in nodes if n in found]
    missing = [n for n in nodes if n not in found]
    problem = ""
    if run.returncode not in (0, 5) and not found:
        tail = [line for line in (run.stdout + run.stderr).splitlines() if line.strip()]
        errors = [line for line in tail if re.match(r"^E\s+\w*(Error|Exception)", line)]
        problem = (errors[0] if errors else (tail[-1] if tail else f"exit {run.returncode}")).strip()[:300]
    return found, missing, problem


def _matches(outcome_id: str, node: str) -> bool:
    return outcome_id == node or outcome_id.startswith(node + "::") or outcome_id.startswith(node + "[")


# -------------------------------------------------------------------------------------------------
# prepare


def prepare_one(ctx: Context, project: str, number: int, curation: dict) -> dict:
    bug = load_bug(ctx.mirrors.bugsinpy(), project, number)
    folder = ctx.bugs_dir / bug.slug
    record_path = folder / "bug.json"
    spec = curated_spec(bug, curation)
    if record_path.exists() and not ctx.force:
        record = json.loads(record_path.read_text())
        # reused when nothing it depends on changed: the harness's version and the venv's inputs
        reusable = (record.get("prepare_version") == PREPARE_VERSION
                    and record.get("env_key") in (None, spec.key()) and (
            Path(record["python_env"]).exists() and record.get("fauxpy_import") == "ok" if record.get("verified")
            else not (record.get("stage") == "env" and (ctx.retry_failed_envs or record.get("env_key") is None))))
        if reusable:
            log(f"[prepare] {bug.id}: cached ({'verified' if record.get('verified') else record.get('reason')})")
            return record
    started = time.perf_counter()
    record: dict = {"project": project, "bug": number, "id": bug.id, "prepare_version": PREPARE_VERSION,
                    "python_version_bugsinpy": bug.python_version, "buggy_commit": bug.buggy_commit,
                    "fixed_commit": bug.fixed_commit, "test_files": bug.test_files, "verified": False}

    def done(reason: str | None, stage: str) -> dict:
        record["verified"] = reason is None
        record["reason"] = reason
        record["stage"] = stage
        record["prepare_s"] = round(time.perf_counter() - started, 1)
        folder.mkdir(parents=True, exist_ok=True)
        record_path.write_text(json.dumps(record, indent=1))
        log(f"[prepare] {bug.id}: {'VERIFIED' if reason is None else 'infeasible: ' + reason[:200]} "
            f"({record['prepare_s']} s)")
        return record

    # checkouts
    repo = ctx.mirrors.project(project, bug.github_url)
    for commit in (bug.buggy_commit, bug.fixed_commit):
        if subprocess.run(["git", f"--git-dir={repo}", "cat-file", "-e", f"{commit}^{{commit}}"],
                          capture_output=True).returncode != 0:
            return done(f"commit {commit[:10]} missing from the project snapshot", "checkout")
    buggy, fixed = folder / "buggy", folder / "fixed"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    record["checkout_notes"] = checkout_buggy(bug, repo, buggy)
    for layer in (curation.get("project", {}).get(project, {}), curation.get("bug", {}).get(bug.id, {})):
        for name, content in layer.get("files", {}).items():
            if not (buggy / name).exists():
                (buggy / name).parent.mkdir(parents=True, exist_ok=True)
                (buggy / name).write_text(content)
                record["checkout_notes"].append(f"curation writes {name}")
    shutil.copytree(buggy, fixed, symlinks=True)
    problem = apply_patch(bug.patch, fixed)
    if problem:
        return done(problem, "checkout")
    (folder / "bug_patch.txt").write_text(bug.patch)

    # target tests, scope, truth
    nodes, untranslated = target_tests(bug.run_test, buggy)
    record["run_test"] = bug.run_test.strip()
    record["untranslated"] = untranslated
    record["truth"] = truth_functions(bug.patch, buggy)
    if not record["truth"]["functions"]:
        record["target_tests"] = nodes
        record["scope"] = test_scope(bug, nodes)
        return done("fix touches no function (" + ", ".join(record["truth"]["module_level"][:4]
                                                           + record["truth"]["skipped_files"][:2]) + ")", "truth")
    if not nodes:
        return done(f"run_test.sh has no test that could be translated ({untranslated[:2]})", "tests")

    # venv
    record["python"] = str(spec.python)
    record["env_key"] = spec.key()
    env = build_env(spec, project, ctx.venvs, log)
    record["env"] = {k: v for k, v in env.items() if k not in ("installed", "error")}
    if "error" in env:
        record["env_error_tail"] = env["error"][-1500:]
        return done(f"install failed: {env['key_line']}", "env")
    python = env["python"]
    record["python_env"] = python
    record["fauxpy_import"] = env.get("fauxpy_import")
    if env.get("fauxpy_import") != "ok":
        return done(f"FauxPy does not load in the venv: {env.get('fauxpy_import')}", "env")

    # verification
    found, missing, problem = collect(python, buggy, nodes)
    record["target_tests"] = found
    record["targets_not_found"] = missing
    record["scope"] = test_scope(bug, found or nodes)
    if not found:
        return done(f"buggy copy: target tests do not collect: {problem or missing}", "verify")
    on_buggy = pytest_run(python, buggy, found, VERIFY_TIMEOUT_S)
    on_fixed = pytest_run(python, fixed, found, VERIFY_TIMEOUT_S)
    record["verify"] = {"buggy": on_buggy, "fixed": on_fixed}
    if on_buggy["returncode"] is None:
        return done(f"timeout ({VERIFY_TIMEOUT_S} s) on the buggy copy", "verify")
    if on_fixed["returncode"] is None:
        return done(f"timeout ({VERIFY_TIMEOUT_S} s) on the fixed copy", "verify")
    failing = sorted(t for t, o in on_buggy["outcomes"].items() if o in ("FAILED", "ERROR")
                     and any(_matches(t, n) for n in found))
    fixed_bad = sorted(t for t, o in on_fixed["outcomes"].items() if o in ("FAILED", "ERROR"))
    fixed_pass = [t for t, o in on_fixed["outcomes"].items() if o == "PASSED"]
    record["failing_targets"] = failing
    if not failing:
        return done(f"does not fail on buggy ({on_buggy['summary']})", "verify")
    if fixed_bad or not fixed_pass or on_fixed["returncode"] != 0:
        return done(f"does not pass on fixed ({on_fixed['summary']}; {fixed_bad[:2]})", "verify")

    # the scope both tools run, once on the buggy copy
    scope_run = pytest_run(python, buggy, record["scope"], SCOPE_TIMEOUT_S)
    counts: dict[str, int] = {}
    for outcome in scope_run["outcomes"].values():
        counts[outcome] = counts.get(outcome, 0) + 1
    record["scope_run"] = {"returncode": scope_run["returncode"], "summary": scope_run["summary"],
                           "wall_s": scope_run["wall_s"], "counts": counts,
                           "failing": sorted(t for t, o in scope_run["outcomes"].items() if o in ("FAILED", "ERROR"))}
    if scope_run["returncode"] is None:
        return done(f"timeout ({SCOPE_TIMEOUT_S} s) running the test files on the buggy copy", "scope")
    if not counts.get("PASSED"):
        return done(f"no passing test in the test files ({scope_run['summary']})", "scope")
    if not record["scope_run"]["failing"]:
        return done(f"no failing test when the whole test files run ({scope_run['summary']})", "scope")
    return done(None, "verified")


def prepare(ctx: Context, chosen: list[tuple[str, int]]) -> list[dict]:
    curation = load_curation()
    if ctx.retry_failed_envs:
        for failed in ctx.venvs.glob("*.failed.json"):
            failed.unlink()
    log(f"[prepare] {len(chosen)} bugs, {ctx.jobs} at a time; cache {ctx.cache}")

    def one(item):
        project, number = item
        try:
            return prepare_one(ctx, project, number, curation)
        except Exception as error:
            log(f"[prepare] {project}:{number}: harness error {type(error).__name__}: {error}")
            return {"project": project, "bug": number, "id": f"{project}:{number}", "verified": False,
                    "reason": f"harness error: {type(error).__name__}: {str(error)[:300]}", "stage": "harness"}

    # The slowest part is the first build of each distinct venv: one bug per project first, so the
    # two workers do not wait for each other's lock on the same venv.
    firsts, rest, seen = [], [], set()
    for item in chosen:
        (rest if item[0] in seen else firsts).append(item)
        seen.add(item[0])
    with ThreadPoolExecutor(max_workers=max(1, ctx.jobs)) as pool:
        records = list(pool.map(one, firsts + rest))
    order = {item: i for i, item in enumerate(chosen)}
    records.sort(key=lambda r: order.get((r["project"], r["bug"]), 0))
    write_manifest(ctx)
    return records


def write_manifest(ctx: Context) -> dict:
    """Every prepared bug's record (cache) and a small summary (bench/results)."""
    records = []
    for path in sorted(ctx.bugs_dir.glob("*/bug.json")):
        records.append(json.loads(path.read_text()))
    records.sort(key=lambda r: (r["project"], r["bug"]))
    ctx.manifest_path.parent.mkdir(parents=True, exist_ok=True)
    ctx.manifest_path.write_text(json.dumps(records, indent=1))
    summary = []
    for r in records:
        summary.append({
            "project": r["project"], "bug": r["bug"], "python": Path(r.get("python", "")).parts[-3]
            if r.get("python") else None,
            "verified": r["verified"], "reason": r.get("reason"), "stage": r.get("stage"),
            "target_tests": r.get("target_tests"), "failing_targets": r.get("failing_targets"),
            "scope": r.get("scope"),
            "scope_counts": (r.get("scope_run") or {}).get("counts"),
            "truth": [f"{f['file']}::{f['qualname']}" for f in (r.get("truth") or {}).get("functions", [])],
            "module_level_changes": (r.get("truth") or {}).get("module_level"),
            "env_relaxed": [x.split(":")[0] for x in (r.get("env") or {}).get("relaxed", [])],
        })
    out = REPO / "bench" / "results" / "realbugs_manifest.json"
    # A cache that holds some of the bugs (a subset run) updates their entries and keeps the others'.
    known = json.loads(out.read_text())["bugs"] if out.exists() else []
    merged = {(b["project"], b["bug"]): b for b in known}
    merged.update({(b["project"], b["bug"]): b for b in summary})
    summary = [merged[key] for key in sorted(merged)]
    by_project: dict[str, dict] = {}
    for entry in summary:
        p = by_project.setdefault(entry["project"], {"bugs": 0, "verified": 0})
        p["bugs"] += 1
        p["verified"] += bool(entry["verified"])
    data = {"generated": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "per_project": by_project, "verified": sum(1 for b in summary if b["verified"]),
            "bugs": summary}
    out.write_text(json.dumps(data, indent=1) + "\n")
    return data


# -------------------------------------------------------------------------------------------------
# run


#: Left out of the digest: caches, and ``.git`` (a ``git status`` refreshes its index; the
#: working tree's files are what a tool must not change).
IGNORED_IN_HASH = ("__pycache__", ".pytest_cache", ".hypothesis", ".mypy_cache", ".git")


def tree_digest(root: Path) -> str:
    """Content digest of a tree (caches left out), to see whether a tool changed its input."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part in IGNORED_IN_HASH for part in rel.parts):
            continue
        if path.is_symlink():
            digest.update(f"L {rel} {os.readlink(path)}\n".encode())
        elif path.is_file():
            digest.update(f"F {rel}\n".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
        elif path.is_dir():
            digest.update(f"D {rel}\n".encode())
    return digest.hexdigest()


def venv_digest(python: str) -> str:
    """Names, sizes and mtimes under the venv's site-packages (cheap; catches installs and edits)."""
    root = Path(python).parent.parent
    digest = hashlib.sha256()
    for path in sorted((root / "lib").rglob("*")):
        if "__pycache__" in path.parts:
            continue
        try:
            stat = path.lstat()
        except FileNotFoundError:
            continue
        digest.update(f"{path.relative_to(root)} {stat.st_size} {int(stat.st_mtime)}\n".encode())
    return digest.hexdigest()


@dataclass
class EquisaCommand:
    mode: str  # "head" (a frozen git archive of HEAD) or "worktree"
    root: Path  # where the command runs from
    info: dict

    def argv(self) -> list[str]:
        # The venv's interpreter, not `uv run`: a user runs an installed `equisa`, and `uv run`
        # adds its own start-up (it re-compiles the venv's bytecode, astral-sh/uv#12202).
        python = str(REPO / ".venv" / "bin" / "python")
        if self.mode == "head":  # the console script's entry at that commit
            return [python, "-m", _entry_module(self.root)]
        return [str(REPO / ".venv" / "bin" / "equisa")]


def _entry_module(root: Path) -> str:
    """The module the ``equisa`` console script ran at a frozen commit: ``cli.launcher`` since issue
    47, ``flows.launcher`` before it, ``flows.cli`` before the launcher existed."""
    for module in ("cli.launcher", "flows.launcher"):
        if (root / (module.replace(".", "/") + ".py")).exists():
            return module
    return "flows.cli"


def equisa_command(mode: str, cache: Path, commit: str | None = None) -> EquisaCommand:
    subprocess.run([shutil.which("uv") or "uv", "sync", "--project", str(REPO)], check=True,
                   capture_output=True)  # once, so that the timed commands find the venv ready
    if mode == "worktree":
        return EquisaCommand("worktree", REPO, {"mode": "worktree", "commit": _git_head()})
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", commit or "HEAD"], capture_output=True,
                            text=True, check=True).stdout.strip()
    dest = cache / "equisa-frozen" / commit[:12]
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-tree", "--name-only", commit], capture_output=True,
                             text=True, check=True).stdout.split()
    packages = tuple(p for p in ("equisa_core", "tasks", "flows", "cli") if p in tracked)
    if not (dest / ".complete").exists():
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", commit, *packages],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
        (dest / ".complete").write_text(commit)
    return EquisaCommand("head", dest, {"mode": "head", "commit": commit,
                                        "how": f"git archive HEAD {' '.join(packages)}; "
                                               f"REPO/.venv/bin/python -m {_entry_module(dest)} "
                                               "from that copy"})


def _git_head() -> str:
    return subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()


def fresh_copy(source: Path, dest: Path, committed_at: str | None = None) -> Path:
    """A copy of a bug's checkout that is a git repository with one commit of every file, as a
    user's clone is: the checkout is a ``git archive`` export (no ``.git``), and without one a tool
    that honours ``.gitignore`` leaves out files that the project tracks although its
    ``.gitignore`` names them (luigi's ``test/contrib/*`` helpers; EQUISA then saw the suite fail
    to import). ``git add --force`` so that the commit holds exactly the exported files.
    ``committed_at`` (ISO 8601): the commit's date, as the buggy commit's in a user's clone."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, dest, symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", ".git"))
    git = ["git", "-C", str(dest), "-c", "user.name=bench", "-c", "user.email=bench@localhost",
           "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], check=True, capture_output=True)
    subprocess.run([*git, "add", "--all", "--force"], check=True, capture_output=True)
    dated = {"GIT_AUTHOR_DATE": committed_at, "GIT_COMMITTER_DATE": committed_at} if committed_at else {}
    subprocess.run([*git, "commit", "-q", "--no-verify", "-m", "buggy version"], check=True,
                   capture_output=True, env={**os.environ, **dated})
    return dest


def exclude_dirs(scope: Sequence[str]) -> list[str]:
    """FauxPy's --exclude: the top folder of every test file (tests/, test/, tornado/test/)."""
    out = []
    for path in scope:
        parts = Path(path).parts
        for i, part in enumerate(parts[:-1]):
            if part in ("test", "tests", "testing"):
                out.append("/".join(parts[: i + 1]))
                break
        else:
            out.append(path)
    return list(dict.fromkeys(out))


def prefect_start(output: str) -> str:
    """``cold`` when this command started the shared Prefect server, ``warm`` when it reused one,
    ``other`` (Prefect's temporary server) otherwise: what ``equisa`` prints about its server."""
    if "local server started" in output:
        return "cold"
    return "warm" if "Prefect UI: http://127.0.0.1" in output else "other"


def run_equisa(record: dict, copy: Path, out: Path, equisa: EquisaCommand, shared: Path,
               cold: bool = False, options: Sequence[str] = ()) -> dict:
    report = out / "equisa_report.json"
    report.unlink(missing_ok=True)
    cmd = [*equisa.argv(), "localize", str(copy), "--no-llm", "--python", record["python_env"],
           "--json", str(report), "--artifacts", str(shared / "artifacts"), "--db", str(shared / "history.duckdb"),
           *options, "--tests", *record["scope"]]
    extra = {"PREFECT_HOME": str(shared / "prefect-home"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
             "EQUISA_WORKSPACES": str(shared / "workspaces"),
             "PREFECT_LOCAL_STORAGE_PATH": str(shared / "prefect-storage")}
    if cold:
        # A data home of its own (so its shared Prefect server is not the warm run's), and that
        # server stopped before the command: the command starts it, as a user's first run does.
        extra["XDG_DATA_HOME"] = str(shared / "data-home")
    env = clean_env(extra)
    stop = [*equisa.argv(), "server", "stop"]  # the server and the warm workers (run in its own process)
    stop_env = {**env, "EQUISA_WARM": "0"}
    if cold:
        subprocess.run(stop, cwd=equisa.root, env=stop_env, capture_output=True, timeout=120)
    run = timed_run(cmd, equisa.root, env, TOOL_TIMEOUT_S)
    if cold:
        subprocess.run(stop, cwd=equisa.root, env=stop_env, capture_output=True, timeout=120)
    (out / "equisa_stdout.txt").write_text(run.stdout[-20000:])
    (out / "equisa_stderr.txt").write_text(run.stderr[-20000:])
    result = {"command": cmd, "cwd": str(equisa.root), "wall_s": round(run.wall_s, 3),
              "returncode": run.returncode, "report": report.name if report.exists() else None,
              "prefect_start": prefect_start(run.stderr + run.stdout)}
    if run.returncode not in RANKED_EXITS:  # no ranking: say why
        tail = [line for line in (run.stderr + run.stdout).splitlines() if line.strip()]
        result["message"] = " | ".join(tail[-3:])[:600] if tail else ""
    shutil.rmtree(shared / "workspaces", ignore_errors=True)
    shutil.rmtree(shared / "prefect-storage", ignore_errors=True)
    return result


def run_fauxpy(record: dict, copy: Path, out: Path) -> dict:
    excluded = exclude_dirs(record["scope"])
    cmd = [*_fauxpy_pytest(record), *record["scope"], "--src", ".", "--exclude",
           "[" + ",".join(excluded) + "]", "--family", "sbfl", "--granularity", "function"]
    return _fauxpy_run(record, cmd, copy, out, "fauxpy")


def run_fauxpy_statement(record: dict, copy: Path, out: Path) -> dict:
    """FauxPy as the study ran it (``peer.py``): statement granularity, ``--failing-list``, the
    study's test files where it ran this bug; collection errors in those files are let pass."""
    plan = statement_plan(record, load_study().get(record["id"]), copy,
                          exclude_dirs(record["scope"]))
    cmd = [*_fauxpy_pytest(record), "--continue-on-collection-errors", *plan.tests, "--src", plan.src,
           *(["--exclude", "[" + ",".join(plan.exclude) + "]"] if plan.exclude else []),
           "--family", "sbfl", "--granularity", "statement", "--failing-list", plan.failing_list()]
    result = _fauxpy_run(record, cmd, copy, out, "fauxpy_statement")
    result["plan"] = asdict(plan)
    result["functions"] = lift(out, copy)  # while the copy is there: statements to functions
    result["scores"] = FUNCTION_CSV if result["functions"] is not None else None
    return result


def _fauxpy_pytest(record: dict) -> list[str]:
    extra = load_curation().get("project", {}).get(record["project"], {}).get("fauxpy_pytest_args", [])
    return [record["python_env"], "-m", "pytest", "-p", "no:cacheprovider", "-q", "--color=no", *extra]


def _fauxpy_run(record: dict, cmd: list[str], copy: Path, out: Path, name: str) -> dict:
    """One FauxPy command on ``copy``; its Ochiai scores kept as ``<name>_Scores_Ochiai.csv``."""
    for old in copy.parent.glob("FauxPyReport_*"):
        shutil.rmtree(old)
    # FauxPy's plugin is found on this path only (set apart by ``run_one``), not in EQUISA's runs.
    plugin = fauxpy_folder(record["python_env"])
    run = timed_run(cmd, copy, clean_env({"PYTHONPATH": str(plugin)}), TOOL_TIMEOUT_S)
    (out / f"{name}_stdout.txt").write_text(run.stdout[-20000:])
    (out / f"{name}_stderr.txt").write_text(run.stderr[-20000:])
    result = {"command": cmd, "cwd": str(copy), "wall_s": round(run.wall_s, 3), "returncode": run.returncode,
              "scores": None, "pythonpath": str(plugin)}
    reports = sorted(copy.parent.glob("FauxPyReport_*"))
    if reports and (reports[-1] / "Scores_Ochiai.csv").exists():
        shutil.copy(reports[-1] / "Scores_Ochiai.csv", out / f"{name}_Scores_Ochiai.csv")
        result["scores"] = f"{name}_Scores_Ochiai.csv"
        delta = reports[-1] / "deltaTime.json"
        if delta.exists():
            shutil.copy(delta, out / f"{name}_deltaTime.json")
    else:
        tail = [line for line in (run.stderr + run.stdout).splitlines() if line.strip()]
        result["message"] = " | ".join(tail[-3:])[:600] if tail else ""
    result["copy_root"] = str(copy)
    result["pytest_args"] = _fauxpy_pytest(record)[7:]
    counts = (record.get("scope_run") or {}).get("counts", {})
    result["outcomes_as_prepared"] = _same_counts(run.stdout, counts)
    return result


def _same_counts(pytest_output: str, counts: Mapping[str, int]) -> bool | None:
    """Do pytest's final counts of passed and failed tests match the prepare step's scope run?"""
    found = dict((word, int(n)) for n, word in re.findall(r"(\d+) (passed|failed)", pytest_output[-3000:]))
    if not found or not counts:
        return None
    return found.get("passed", 0) == counts.get("PASSED", 0) and found.get("failed", 0) == counts.get("FAILED", 0)


def tool_order(index: int, statement: bool = False) -> tuple[str, ...]:
    """Which tool goes first changes from bug to bug: with two, they alternate; with FauxPy's
    statement mode as a third, the three rotate."""
    tools = ("equisa", "fauxpy", "fauxpy_statement") if statement else ("equisa", "fauxpy")
    shift = index % len(tools)
    return tools[shift:] + tools[:shift]


def run_one(ctx: Context, record: dict, index: int, equisa: EquisaCommand) -> dict:
    slug = f"{record['project']}-{record['bug']}"
    out = ctx.results / slug
    out.mkdir(parents=True, exist_ok=True)
    buggy = ctx.bugs_dir / slug / "buggy"
    work = ctx.cache / "work" / slug
    shared = ctx.results / "_equisa"
    shared.mkdir(parents=True, exist_ok=True)
    order = tool_order(index, ctx.statement)
    result: dict = {"project": record["project"], "bug": record["bug"], "order": list(order),
                    "scope": record["scope"], "truth": record["truth"], "equisa_from": equisa.info,
                    "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    fauxpy_apart(record["python_env"])  # a venv built before it was set apart (idempotent)
    venv_before = venv_digest(record["python_env"])
    for tool in order:
        copy = fresh_copy(buggy, work / tool / record["project"])
        before = tree_digest(copy)
        if tool == "equisa":
            res = run_equisa(record, copy, out, equisa, shared, cold=ctx.cold, options=ctx.equisa_args)
        elif tool == "fauxpy_statement":
            res = run_fauxpy_statement(record, copy, out)
        else:
            res = run_fauxpy(record, copy, out)
        after = tree_digest(copy)
        res["input_modified"] = before != after
        if res["input_modified"]:
            changed = subprocess.run(["diff", "-rq", "-x", "__pycache__", "-x", ".pytest_cache", "-x", ".git", str(buggy), str(copy)],
                                     capture_output=True, text=True).stdout.splitlines()
            res["input_changes"] = changed[:20]
        result[tool] = res
        log(f"[run] {record['id']}: {tool} exit {res['returncode']} in {res['wall_s']:.1f} s"
            + (" (input modified)" if res["input_modified"] else ""))
    result["venv_modified"] = venv_digest(record["python_env"]) != venv_before
    shutil.rmtree(work, ignore_errors=True)
    (out / "run.json").write_text(json.dumps(result, indent=1))
    return result


def run(ctx: Context, chosen: list[tuple[str, int]], equisa_mode: str, rerun: bool,
        equisa_commit: str | None = None, follow: bool = False) -> list[dict]:
    """Both tools on every verified bug of ``chosen``, one bug at a time. The next bug is taken from
    the project with the fewest bugs run so far, so a run stopped early still covers every project;
    with ``follow``, bugs that a prepare running beside it verifies later are picked up too."""
    equisa = equisa_command(equisa_mode, ctx.cache, equisa_commit)
    log(f"[run] EQUISA from {equisa.info['mode']} {equisa.info['commit'][:10]}")
    wanted = {f"{p}-{n}" for p, n in chosen}
    done_now: set[str] = set()
    results = []
    index = 0
    while True:
        verified, finished = [], {}
        for path in sorted(ctx.bugs_dir.glob("*/bug.json")):
            slug = path.parent.name
            if slug not in wanted:
                continue
            try:
                record = json.loads(path.read_text())
            except json.JSONDecodeError:
                continue
            if not record.get("verified"):
                continue
            ran = (ctx.results / slug / "run.json").exists() and (not rerun or slug in done_now)
            finished[record["project"]] = finished.get(record["project"], 0) + ran
            if not ran:
                verified.append(record)
        if not verified:
            if follow and _preparing():
                time.sleep(30)
                continue
            break
        record = min(verified, key=lambda r: (finished.get(r["project"], 0), r["project"], r["bug"]))
        slug = f"{record['project']}-{record['bug']}"
        results.append(run_one(ctx, record, index, equisa))
        done_now.add(slug)
        index += 1
    log(f"[run] {index} bugs run")
    return results


def _preparing() -> bool:
    """Is a ``prepare`` step running (another process)?"""
    found = subprocess.run(["pgrep", "-f", "bench.realbugs prepare"], capture_output=True, text=True).stdout
    return any(int(pid) != os.getpid() for pid in found.split())

"""BugsInPy's single-function bugs (source 1): the real-bug localization benchmark's verified bugs
whose fix touches exactly one function and no module-level code, in its allowed projects only.

The checkouts and venvs are the ``bench.realbugs`` cache's (``<realbugs cache>/bugs/<p>-<n>/
{buggy,fixed}``, Python 3.8); a missing one is prepared with ``bench.realbugs.steps.prepare_one``.
The split is by test function: the cases of a parametrized test stay together. A test function
that also fails on the fixed version is left out of both halves (it cannot judge a patch).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from bench.realbugs.bugsinpy import DEFAULT_MIRRORS, Mirrors, check_project
from bench.realbugs.envs import load_curation
from bench.realbugs.steps import Context, clean_env, fresh_copy, prepare_one, pytest_run, timed_run
from bench.repair_corpus import function_of, same_ast

from .judge import failing_of
from .split import precheck, split_half

MANIFEST = Path(__file__).resolve().parents[1] / "results" / "realbugs_manifest.json"
REALBUGS_CACHE = (
    Path(os.environ.get("EQUISA_BENCH_CACHE", Path.home() / ".cache" / "equisa-bench")) / "realbugs"
)
SCOPE_TIMEOUT_S = 900


def single_function_bugs(manifest: Path = MANIFEST) -> list[tuple[str, int]]:
    """(project, number) of the verified bugs with one truth function and no module-level change,
    in the allowed projects (``check_project`` refuses the others)."""
    data = json.loads(manifest.read_text())
    chosen = []
    for bug in data["bugs"]:
        if bug["verified"] and len(bug["truth"]) == 1 and not bug["module_level_changes"]:
            chosen.append((check_project(bug["project"]), int(bug["bug"])))
    return chosen


def bug_id(project: str, number: int) -> str:
    return f"bugsinpy-{check_project(project)}-{number}"


def realbugs_record(project: str, number: int, cache: Path = REALBUGS_CACHE) -> dict:
    """The realbugs cache's ``bug.json`` (prepared there first when it is missing)."""
    check_project(project)
    path = cache / "bugs" / f"{project}-{number}" / "bug.json"
    if not path.exists():
        ctx = Context(cache=cache, mirrors=Mirrors(DEFAULT_MIRRORS, cache), jobs=1)
        prepare_one(ctx, project, number, load_curation())
    return json.loads(path.read_text())


def collected_ids(python: str, tree: Path, scope: Sequence[str]) -> list[str]:
    """Every test id pytest collects in ``scope``."""
    cmd = [
        python,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "--collect-only",
        "-q",
        "--color=no",
        "-p",
        "no:fauxpy",
        *scope,
    ]
    run = timed_run(cmd, tree, clean_env(), SCOPE_TIMEOUT_S)
    ids = []
    for line in run.stdout.splitlines():
        if not line.strip():
            break
        if "::" in line and not line[0].isspace():
            ids.append(line.strip())
    return ids


def prepare_bug(project: str, number: int, folder: Path, cache: Path = REALBUGS_CACHE) -> dict:
    """The case record: the split by test function, checked by a plain pytest run of the visible part."""
    record = realbugs_record(project, number, cache)
    the_id = bug_id(project, number)
    case: dict = {"id": the_id, "source": "bugsinpy", "project": project, "bug": number, "kept": False}
    if not record.get("verified"):
        return {**case, "reason": f"not verified in realbugs: {record.get('reason')}"}
    python, scope = record["python_env"], record["scope"]
    source = cache / "bugs" / f"{project}-{number}"
    work = folder / "work"
    buggy = fresh_copy(source / "buggy", work / "buggy")
    units = sorted({function_of(t) for t in collected_ids(python, buggy, scope)})
    fixed_run = pytest_run(python, fresh_copy(source / "fixed", work / "fixed"), scope, SCOPE_TIMEOUT_S)
    broken = {function_of(t) for t in failing_of(fixed_run["outcomes"])}
    failing = {function_of(t) for t in (record.get("scope_run") or {}).get("failing", [])} - broken
    units = [u for u in units if u not in broken]
    case.update(
        python=python,
        scope=scope,
        buggy=str(source / "buggy"),
        fixed=str(source / "fixed"),
        truth=record["truth"]["functions"],
        left_out_failing_on_fixed=sorted(broken),
    )
    try:
        split = split_half(the_id, units, failing)
    except ValueError as error:
        shutil.rmtree(work, ignore_errors=True)
        return {**case, "reason": str(error)}
    check = pytest_run(python, buggy, list(split.visible), SCOPE_TIMEOUT_S)
    problems = precheck(split, check["outcomes"])
    shutil.rmtree(work, ignore_errors=True)
    case.update(
        split=split.to_json(),
        selection=list(split.visible),
        judge_tests=list(split.tests),
        precheck=problems,
        buggy_failing=sorted(failing),
    )
    if problems:
        return {**case, "reason": "precheck: " + "; ".join(problems)}
    return {**case, "kept": True, "reason": None}


def judge_run(case: dict, tree: Path, timeout: float = SCOPE_TIMEOUT_S) -> dict:
    """The judge of a BugsInPy patch: the fixed version's whole test files of the bug, every test in
    them (not only the split's visible and hidden functions), plain pytest in the bug's venv.

    The files are the bug's ``scope`` (bug.info's test modules and the target tests' files); the
    fixed checkout's copy of each (``case["fixed"]``, the fixed commit's test files) is written over
    the patched tree's first, where the bench has it. A test function that fails on the fixed
    version too (``left_out_failing_on_fixed``, found by ``prepare_bug`` on the same files) cannot
    judge a patch: its outcomes are set aside (``ignored_failing_on_fixed``), and a run that failed
    only through them counts as passing.
    """
    fixed = Path(case["fixed"]) if case.get("fixed") else None
    files = list(case.get("scope") or case["judge_tests"])
    for name in files:
        source = fixed / name if fixed is not None else None
        if source is not None and source.is_file() and not name.startswith(("/", "..")):
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, tree / name)
    return set_aside_broken(pytest_run(case["python"], tree, files, timeout), case)


def set_aside_broken(run: dict, case: dict) -> dict:
    """``run`` without the outcomes of the test functions that fail on the fixed version too."""
    broken = set(case.get("left_out_failing_on_fixed") or ())
    ignored = sorted(t for t in failing_of(run["outcomes"]) if function_of(t) in broken)
    outcomes = {t: o for t, o in run["outcomes"].items() if function_of(t) not in broken}
    returncode = run["returncode"]
    if ignored and returncode == 1 and not failing_of(outcomes):
        returncode = 0  # pytest failed only through the tests the fixed version fails too
    return {**run, "outcomes": outcomes, "returncode": returncode, "ignored_failing_on_fixed": ignored}


def same_as_dev(case: dict, tree: Path, files: Sequence[str]) -> bool | None:
    """Does the patched tree's changed source equal the developer's fixed file (by AST)?"""
    if not files:
        return None
    fixed = Path(case["fixed"])
    return all(
        (fixed / f).exists()
        and (tree / f).exists()
        and same_ast((tree / f).read_text(), (fixed / f).read_text())
        for f in files
    )

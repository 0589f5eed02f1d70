"""Automated repair on the injected-bug corpus, judged on tests kept aside from the tool (issue 5).

Run from the repository root::

    uv run python bench/repair_corpus.py [--packages boltons,tabulate] [--bugs boltons-03,tabulate-01]
                                         [--quick] [--cache DIR] [--timeout S]
                                         [--equisa-option=--max-validations=20]
                                         [--out bench/results/repair_corpus.json] [--keep]

What it does, for every bug of the localization corpus (``bench/corpus/*.yaml``; the packages are
fetched, checked and given venvs by ``bench/localization_corpus.py``'s helpers, in the same cache):

1. injects the bug into a fresh copy of the package, runs the whole suite with plain pytest (the
   failing tests) and collects every test id (``pytest --collect-only -q``);
2. splits the tests deterministically, seeded by the bug id (``split_tests``): about a third of the
   test *files* are kept aside, plus, when the bug has two or more failing tests, about half of
   them (``n // 2``: at least one failing test always stays visible, and the files of the visible
   failing tests stay visible). The visible part is what EQUISA gets: whole files by path, and in
   a visible file that holds a kept-aside failing test, the node ids of its other tests (the
   function's id when none of its parametrized cases is kept aside). The selection is checked with
   plain pytest before EQUISA runs: it collects exactly the visible tests, and fails exactly the
   visible failing ones;
3. runs ``equisa repair TREE --python VENV --no-llm --tests VISIBLE... --json OUT --diff OUT``
   against one Prefect server started for the whole run, with a fresh result storage and snapshot
   cache per bug; timed with ``time.perf_counter`` around the CLI process;
4. judges: applies the diff with ``git apply`` to another fresh copy of the buggy package and runs
   the FULL suite (visible and kept aside) with plain pytest in the package's venv
   (``classify``):

   - ``correct``: EQUISA said ``fixed`` and the whole suite passes;
   - ``overfitting``: EQUISA said ``fixed`` or ``plausible_only`` and some test fails — a patch the
     tool accepted that fails the kept-aside tests counts against it (``overfitting_in`` says
     whether the failures are in kept-aside tests, visible ones, or both);
   - ``plausible_only``: EQUISA's own verdict (a patch that passed its suite but not its
     anti-overfitting checks) and the whole suite passes (``full_suite_passes``);
   - ``not_fixed``: EQUISA found no patch (exit 22);
   - ``error``: EQUISA exited with any other code (or timed out, or wrote no report, or reported
     ``status: error``), or its patch does not apply; the message is recorded;

   and compares the patch to the ground truth: the function EQUISA patched (``target``) against
   the injected bug's function, the files the diff touches against the bug's file, and whether
   the patched file is the original file again (``exact_revert``) or the same AST
   (``ast_revert``);
5. prints per-bug rows and a summary (counts and rates per verdict, candidates tried and wall time,
   overall and per package) and writes everything to ``--out`` as JSON.

It asserts nothing: the exit status is 0 unless the benchmark itself could not run.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
import localization_corpus as lc  # noqa: E402  (the corpus, packages, venvs, Prefect server)
from tracing_overhead import environment as tracing_environment  # noqa: E402
from tracing_overhead import finish_report, run_text  # noqa: E402

DEFAULT_OUT = REPO / "bench" / "results" / "repair_corpus.json"
#: Fraction of the test files kept aside, and of the failing tests when there are two or more.
KEPT_ASIDE_FILES = 1 / 3
#: Wall-clock limit of one ``equisa repair`` call.
REPAIR_TIMEOUT_S = 1800.0
#: Exit codes of ``equisa repair`` that are verdicts rather than errors (docs/exit-codes.md).
VERDICT_EXITS = {0: "fixed", 21: "plausible_only", 22: "not_fixed"}
VERDICTS = ("correct", "overfitting", "plausible_only", "not_fixed", "error")
VERDICT_LABELS = {
    "correct": "fixed, and the whole suite passes",
    "overfitting": "fixed or plausible_only, but some test fails (counts against EQUISA)",
    "plausible_only": "EQUISA's plausible_only, and the whole suite passes",
    "not_fixed": "no patch (exit 22)",
    "error": "EQUISA failed (other exit code, no report, or a patch that does not apply)",
}


# -------------------------------------------------------------------------------------------------
# The held-out split


@dataclass(frozen=True)
class Split:
    """Which tests EQUISA sees and which are kept aside to judge its patch."""

    seed: str
    files: tuple[str, ...]
    visible_files: tuple[str, ...]
    kept_aside_files: tuple[str, ...]
    failing: tuple[str, ...]
    visible_failing: tuple[str, ...]
    kept_aside_failing: tuple[str, ...]
    #: What ``--tests`` gets: paths of whole visible files, node ids inside partly visible ones.
    selection: tuple[str, ...]
    visible_tests: int
    kept_aside_tests: int

    def is_kept_aside(self, test_id: str) -> bool:
        """A test (or a whole file's collection error) the tool never saw."""
        return file_of(test_id) in self.kept_aside_files or test_id in self.kept_aside_failing


def file_of(test_id: str) -> str:
    """``tests/test_a.py::Class::test[x]`` -> ``tests/test_a.py`` (a bare path is its own file)."""
    return test_id.split("::", 1)[0]


def function_of(test_id: str) -> str:
    """The test function's id without the parametrization: ``f.py::test[1-2]`` -> ``f.py::test``."""
    return test_id.split("[", 1)[0]


def split_tests(bug_id: str, collected: Sequence[str], failing: Sequence[str],
                files_fraction: float = KEPT_ASIDE_FILES) -> Split:
    """The deterministic split of one bug's suite, seeded by its id.

    - failing tests: when there are n >= 2, ``n // 2`` of them are kept aside (so at least one
      stays visible); a failing "test" that is a whole file (a collection error) is never kept
      aside on its own;
    - files: ``round(files * files_fraction)`` of the files are kept aside, chosen among those that
      hold no visible failing test (fewer when there are not enough of them);
    - the selection: each visible file by its path, unless it holds a kept-aside failing test;
      then its other tests by node id (a test function's plain id when none of its cases is kept
      aside).
    """
    rng = random.Random(f"repair-corpus:{bug_id}")  # str seeds are hashed with sha512: stable
    failing = sorted(set(failing))
    hideable = [t for t in failing if "::" in t]
    hidden_failing: list[str] = []
    if len(failing) >= 2:
        hidden_failing = sorted(rng.sample(hideable, min(len(failing) // 2, len(hideable))))
    visible_failing = [t for t in failing if t not in hidden_failing]
    files = sorted({file_of(t) for t in collected} | {file_of(t) for t in failing})
    pinned = {file_of(t) for t in visible_failing}
    eligible = [f for f in files if f not in pinned]
    wanted = min(round(len(files) * files_fraction), len(eligible))
    hidden_files = sorted(rng.sample(eligible, wanted))
    visible_files = [f for f in files if f not in hidden_files]

    hidden_set = set(hidden_failing)
    selection: list[str] = []
    visible_tests = 0
    for path in visible_files:
        tests = [t for t in collected if file_of(t) == path]
        kept = [t for t in tests if t not in hidden_set]
        visible_tests += len(kept)
        if len(kept) == len(tests):
            selection.append(path)
            continue
        by_function: dict[str, list[str]] = {}
        for test in tests:
            by_function.setdefault(function_of(test), []).append(test)
        for function, cases in by_function.items():
            if not any(c in hidden_set for c in cases):
                selection.append(function)
            else:
                selection.extend(c for c in cases if c not in hidden_set)
    return Split(
        seed=f"repair-corpus:{bug_id}", files=tuple(files), visible_files=tuple(visible_files),
        kept_aside_files=tuple(hidden_files), failing=tuple(failing), visible_failing=tuple(visible_failing),
        kept_aside_failing=tuple(hidden_failing), selection=tuple(selection), visible_tests=visible_tests,
        kept_aside_tests=len(collected) - visible_tests,
    )


# -------------------------------------------------------------------------------------------------
# The verdict


@dataclass(frozen=True)
class Judgement:
    """The full suite run on the buggy package with EQUISA's diff applied."""

    applied: bool
    apply_error: str = ""
    returncode: int | None = None
    failing: tuple[str, ...] = ()
    summary: str = ""

    @property
    def passes(self) -> bool:
        return self.applied and self.returncode == 0 and not self.failing


def classify(exit_code: int | None, status: str | None, judgement: Judgement | None,
             split: Split | None = None, error: str = "") -> dict:
    """The bug's verdict from EQUISA's exit code and status and the full-suite judgement.

    Returns ``{"verdict": ..., "reason": ...}`` plus, when a patch was judged,
    ``full_suite_passes``, ``failing_kept_aside``, ``failing_visible`` and ``overfitting_in``.
    """
    if exit_code not in VERDICT_EXITS:
        why = "timed out" if exit_code is None else f"exit {exit_code}"
        return {"verdict": "error", "reason": f"{why}: {error}" if error else why}
    if status is None:
        return {"verdict": "error", "reason": f"exit {exit_code} but no JSON report"
                                              + (f": {error}" if error else "")}
    if status == "error":
        return {"verdict": "error", "reason": f"status error: {error}" if error else "status error"}
    if status == "not_fixed":
        return {"verdict": "not_fixed", "reason": "no candidate passed the visible suite"}
    if status not in ("fixed", "plausible_only"):
        return {"verdict": "error", "reason": f"unknown status {status!r}"}
    out: dict = {}
    if VERDICT_EXITS[exit_code] != status:
        out["exit_status_mismatch"] = f"exit {exit_code} with status {status}"
    if judgement is None or not judgement.applied:
        why = judgement.apply_error if judgement else "no diff"
        return {**out, "verdict": "error", "reason": f"status {status} but the patch does not apply: {why}"}
    out["full_suite_passes"] = judgement.passes
    if judgement.passes:
        verdict = "correct" if status == "fixed" else "plausible_only"
        return {**out, "verdict": verdict, "reason": f"{status}; the whole suite passes"}
    failing = list(judgement.failing)
    kept = [t for t in failing if split is not None and split.is_kept_aside(t)]
    visible = [t for t in failing if t not in kept]
    where = ("kept_aside" if kept and not visible else "visible" if visible and not kept
             else "both" if kept else "unknown")
    if not failing:  # the run failed without naming a test (a crash, a timeout)
        where = "unknown"
    out.update(failing_kept_aside=kept, failing_visible=visible, overfitting_in=where)
    return {**out, "verdict": "overfitting",
            "reason": f"{status}, but {len(failing) or 'some'} test(s) fail "
                      f"({len(kept)} kept aside, {len(visible)} visible; {judgement.summary})"}


def diff_files(diff: str) -> list[str]:
    """The files a git diff changes (``+++ b/path``; ``--- a/path`` for deletions)."""
    files = []
    for line in diff.splitlines():
        if line.startswith("+++ ") or line.startswith("--- "):
            path = line[4:].split("\t", 1)[0].strip()
            if path != "/dev/null":
                path = path[2:] if path[:2] in ("a/", "b/") else path
                if path not in files:
                    files.append(path)
    return files


def same_ast(a: str, b: str) -> bool:
    try:
        return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))
    except SyntaxError:
        return False


def ground_truth(bug: lc.Bug, target: str | None, diff: str, original: str, patched: str | None) -> dict:
    """The patch against the injected bug: same function, same file, the original file again."""
    files = diff_files(diff)
    out: dict = {"ground_truth": bug.function, "target": target,
                 "same_function": target == bug.function if target else None,
                 "diff_files": files, "same_file": (files == [bug.file]) if files else None}
    if patched is not None:
        out["exact_revert"] = files == [bug.file] and patched == original
        out["ast_revert"] = files == [bug.file] and same_ast(patched, original)
    return out


# -------------------------------------------------------------------------------------------------
# Running pytest and EQUISA


def run_output(cmd: Sequence[str], cwd: Path, timeout: float) -> tuple[int | None, str, float]:
    """Exit code (None when killed at ``timeout``), the WHOLE output and the wall time.

    ``lc.timed_run`` keeps only the last 4,000 characters, which cuts a collection of hundreds of
    test ids or a long ``-rfE`` list; this is the same process-group handling without the cut.
    """
    started = time.perf_counter()
    process = subprocess.Popen(list(cmd), cwd=cwd, env=lc.tool_env(), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
        code = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        code = None
    return code, output.decode(errors="replace"), time.perf_counter() - started


def collect(prepared: lc.Prepared, tree: Path, args: Sequence[str]) -> tuple[list[str], str]:
    """Node ids pytest collects for ``args`` in ``tree`` (``--collect-only -q``), and its last line."""
    cmd = [str(prepared.python), "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
           "--color=no", *args]
    code, output, _ = run_output(cmd, tree, timeout=600)
    ids = []
    lines = output.splitlines()
    for line in lines:
        if not line.strip():
            break  # the ids come first, then a blank line, warnings and the count
        if "::" in line and not line[0].isspace():
            ids.append(line.strip())
    tail = [line for line in lines if line.strip()]
    return ids, (tail[-1].strip("= ") if tail else f"exit {code}")


def plain_run(prepared: lc.Prepared, tree: Path, tests: Sequence[str], timeout: float = 900) -> dict:
    """Plain pytest on ``tests``: the corpus bench's ``plain_pytest`` with a selection and without
    the 4,000-character cut of the output (a long list of failing tests stays whole)."""
    cmd = [str(prepared.python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=no", "-rfE",
           "--color=no", *tests]
    code, output, wall = run_output(cmd, tree, timeout=timeout)
    failing = []
    for line in output.splitlines():
        found = lc._SUMMARY_LINE.match(line.strip())  # the corpus bench's parser of -rfE lines
        if found:
            failing.append(found.group(2).strip())
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return {"returncode": code, "failing": sorted(set(failing)),
            "summary": lines[-1].strip("= ") if lines else "", "wall_s": round(wall, 2)}


def equisa_base() -> list[str]:
    executable = Path(sys.executable).with_name("equisa")
    if executable.exists():
        return [str(executable)]
    return [sys.executable, "-m", "cli.main"]


def repair_command(tree: Path, prepared: lc.Prepared, selection: Sequence[str], out: Path, diff: Path,
                   extra: Sequence[str] = ()) -> list[str]:
    return [*equisa_base(), "repair", str(tree), "--python", str(prepared.python), "--no-llm",
            "--json", str(out), "--diff", str(diff), *extra, "--tests", *selection]


def run_repair(prepared: lc.Prepared, buggy: Path, selection: Sequence[str], workdir: Path,
               server_url: str, extra: Sequence[str],
               timeout: float) -> tuple[lc.Timed, dict | None, str, list[str]]:
    """One ``equisa repair`` with a fresh result storage and snapshot cache.

    ``lc.run_equisa`` builds only the trace/localize commands of that benchmark, so this is its
    environment set-up with the repair command: same private PREFECT_HOME, storage and workspaces.
    """
    private = workdir / "equisa-repair"
    private.mkdir(parents=True)
    out, diff_out = private / "report.json", private / "fix.diff"
    env = lc.tool_env({
        "PREFECT_LOCAL_STORAGE_PATH": str(private / "prefect-storage"),
        "EQUISA_WORKSPACES": str(private / "workspaces"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_API_URL": server_url,
        "PREFECT_HOME": str(private / "prefect-home"),
    })
    cmd = repair_command(buggy, prepared, selection, out, diff_out, extra)
    run = lc.timed_run(cmd, REPO, env, timeout=timeout)
    report = json.loads(out.read_text()) if out.exists() else None
    diff = diff_out.read_text() if diff_out.exists() else ""
    shutil.rmtree(private / "prefect-storage", ignore_errors=True)
    shutil.rmtree(private / "workspaces", ignore_errors=True)
    return run, report, diff, cmd


def error_message(output: str) -> str:
    """EQUISA's own error line (``equisa: ...``) if it printed one, else the output's tail."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    mine = [line for line in lines if line.startswith("equisa:")]
    return (mine[-1] if mine else "\n".join(lines[-6:]))[-800:]


def judge(prepared: lc.Prepared, buggy: Path, diff: str, workdir: Path) -> tuple[Judgement, str | None]:
    """Apply the diff to a fresh copy of the buggy tree with ``git apply``; run the whole suite."""
    tree = lc.copy_tree(buggy, workdir / "judged" / prepared.package.name)
    patch = workdir / "judged" / "fix.diff"
    patch.write_text(diff, encoding="utf-8")
    env = lc.tool_env({"GIT_CEILING_DIRECTORIES": str(workdir)})  # never a repository above the copy
    done = subprocess.run(["git", "apply", "--whitespace=nowarn", str(patch)], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        return Judgement(applied=False, apply_error=(done.stderr or done.stdout).strip()[-500:]), None
    run = plain_run(prepared, tree, prepared.package.tests)
    bug_files = diff_files(diff)
    patched = (tree / bug_files[0]).read_text(encoding="utf-8") if len(bug_files) == 1 \
        and (tree / bug_files[0]).exists() else None
    return Judgement(applied=True, returncode=run["returncode"], failing=tuple(run["failing"]),
                     summary=run["summary"]), patched


# -------------------------------------------------------------------------------------------------
# One case


def localization_facts(report: Mapping, bug: lc.Bug) -> dict:
    """Where the localization EQUISA ran before patching put the ground truth."""
    localization = report.get("localization") or {}
    ranking = localization.get("ranking") or []
    scores = {n["fqn"]: float(n["confidence"]) for n in ranking}
    return {"converged": localization.get("converged"),
            "stopped_because": localization.get("stopped_because"),
            "top1": ranking[0]["fqn"] if ranking else None,
            "ground_truth_rank": lc.pessimistic_rank(scores, bug.function), "ranked": len(scores),
            "relocalizations": report.get("relocalizations")}


def run_case(prepared: lc.Prepared, bug: lc.Bug, workdir: Path, server: lc.PrefectServer | None,
             extra: Sequence[str], timeout: float, console: Console) -> dict:
    case: dict = {"id": bug.id, "package": bug.package, "kind": bug.kind, "file": bug.file,
                  "function": bug.function, "note": bug.note}
    original = (prepared.root / bug.file).read_text(encoding="utf-8")
    buggy_source, problem = lc.inject(original, bug)
    if problem:
        case["dropped"] = problem
        return case
    workdir.mkdir(parents=True)
    buggy = lc.copy_tree(prepared.root, workdir / prepared.package.name)
    (buggy / bug.file).write_text(buggy_source, encoding="utf-8")
    plain = plain_run(prepared, buggy, prepared.package.tests)
    if plain["returncode"] != 1 or not plain["failing"]:
        case["dropped"] = (f"the bug makes no test fail ({plain['summary']})" if plain["returncode"] == 0
                           else f"pytest did not finish normally (exit {plain['returncode']}): "
                                f"{plain['summary'][-200:]}")
        return case
    collected, collected_line = collect(prepared, buggy, prepared.package.tests)
    split = split_tests(bug.id, collected, plain["failing"])
    case["split"] = {**asdict(split), "collected": len(collected)}
    del case["split"]["files"]
    # The selection as EQUISA will get it: it must collect the visible tests and fail the visible
    # failing ones, else the split is not what it claims to be.
    seen, _ = collect(prepared, buggy, split.selection)
    visible_run = plain_run(prepared, buggy, split.selection)
    case["split"]["check"] = {
        "collected": len(seen), "collects_visible_tests": len(seen) == split.visible_tests,
        "leaks_kept_aside": sorted(t for t in seen if split.is_kept_aside(t))[:10],
        "failing": visible_run["failing"],
        "fails_visible_failing": visible_run["failing"] == list(split.visible_failing),
    }
    console.print(f"    {len(split.failing)} failing ({len(split.visible_failing)} visible, "
                  f"{len(split.kept_aside_failing)} kept aside); tests {split.visible_tests} visible, "
                  f"{split.kept_aside_tests} kept aside in {len(split.kept_aside_files)} files",
                  highlight=False)
    if server is None:
        return case
    run, report, diff, cmd = run_repair(prepared, buggy, split.selection, workdir, server.url, extra, timeout)
    status = report.get("status") if report else None
    error = ""
    if run.returncode not in VERDICT_EXITS or report is None or status == "error":
        error = (report or {}).get("error") or error_message(run.output)
    judgement, patched = (judge(prepared, buggy, diff, workdir) if status in ("fixed", "plausible_only")
                          and diff else (None, None))
    result = classify(run.returncode, status, judgement, split, error)
    case.update(result)
    case.update(
        equisa_status=status, exit_code=run.returncode, wall_s=round(run.wall_s, 2),
        candidates_tried=(report or {}).get("candidates_tried"),
        validated=len((report or {}).get("evaluations") or ()) if report else None,
        generator=(report or {}).get("generator"),
        validation=(report or {}).get("validation") or {},
        problems=list((report or {}).get("problems") or ())[:5],
        diff=diff,
        # The selection is in split.selection: the command is recorded without it.
        command=" ".join(cmd[:cmd.index("--tests")]) + " --tests SELECTION",
    )
    if error:
        case["error"] = error
    if judgement is not None:
        case["judged"] = {"applied": judgement.applied, "returncode": judgement.returncode,
                          "summary": judgement.summary, "failing": list(judgement.failing)[:40],
                          "apply_error": judgement.apply_error}
    case.update(ground_truth(bug, (report or {}).get("target"), diff, original, patched))
    if report:
        case["localization"] = localization_facts(report, bug)
    return case


# -------------------------------------------------------------------------------------------------
# Summary and tables


def _stats(values: Iterable[float | None]) -> dict:
    known = [v for v in values if v is not None]
    if not known:
        return {"mean": None, "median": None, "total": None}
    return {"mean": round(statistics.fmean(known), 2), "median": round(statistics.median(known), 2),
            "total": round(sum(known), 1)}


def summarize(cases: Sequence[Mapping]) -> dict:
    """Counts and rates per verdict, candidates tried and wall time, for the measured cases."""
    measured = [c for c in cases if "verdict" in c]
    n = len(measured)
    out: dict = {"cases": n, "dropped": sum(1 for c in cases if "dropped" in c), "verdicts": {}}
    for verdict in VERDICTS:
        count = sum(1 for c in measured if c["verdict"] == verdict)
        out["verdicts"][verdict] = {"count": count, "rate": round(count / n, 3) if n else None}
    accepted = [c for c in measured if c.get("equisa_status") == "fixed"]
    out["accepted_by_equisa"] = len(accepted)
    out["accepted_correct"] = sum(1 for c in accepted if c["verdict"] == "correct")
    out["accepted_precision"] = round(out["accepted_correct"] / len(accepted), 3) if accepted else None
    out["fix_rate"] = out["verdicts"]["correct"]["rate"]
    overfit = [c for c in measured if c["verdict"] == "overfitting"]
    out["overfitting_by_status"] = {s: sum(1 for c in overfit if c.get("equisa_status") == s)
                                    for s in ("fixed", "plausible_only")}
    out["overfitting_in"] = {w: sum(1 for c in overfit if c.get("overfitting_in") == w)
                             for w in ("kept_aside", "visible", "both", "unknown")}
    patched = [c for c in measured if c.get("diff")]
    out["patches"] = len(patched)
    out["same_function"] = sum(1 for c in patched if c.get("same_function"))
    out["exact_revert"] = sum(1 for c in patched if c.get("exact_revert"))
    out["ast_revert"] = sum(1 for c in patched if c.get("ast_revert"))
    out["candidates_tried"] = _stats(c.get("candidates_tried") for c in measured)
    out["validated"] = _stats(c.get("validated") for c in measured)
    out["wall_s"] = _stats(c.get("wall_s") for c in measured)
    return out


def build_summary(cases: Sequence[Mapping]) -> dict:
    summary = summarize(cases)
    packages = sorted({c["package"] for c in cases})
    summary["packages"] = {p: summarize([c for c in cases if c["package"] == p]) for p in packages}
    return summary


def _yes(value: object) -> str:
    return "" if value is None else ("yes" if value else "no")


def print_table(console: Console, report: Mapping) -> None:
    cases = report["cases"]
    table = Table(title="Cases (fail = failing tests visible/kept aside; gt = the injected bug's function)",
                  title_justify="left")
    for column in ("bug", "kind", "fail", "verdict", "EQUISA", "exit", "target = gt", "revert", "cand.",
                   "valid.", "wall s"):
        table.add_column(column, no_wrap=True, justify="right" if column in ("cand.", "valid.", "wall s")
                         else "left")
    colours = {"correct": "green", "overfitting": "red", "plausible_only": "yellow", "not_fixed": "",
               "error": "magenta"}
    for case in cases:
        if "dropped" in case:
            table.add_row(case["id"], case["kind"], "", "dropped", *[""] * 7)
            continue
        split = case.get("split", {})
        fail = f"{len(split.get('visible_failing', ()))}/{len(split.get('kept_aside_failing', ()))}"
        verdict = case.get("verdict", "")
        if verdict == "overfitting":
            verdict += f" ({case.get('overfitting_in')})"
        revert = "exact" if case.get("exact_revert") else "ast" if case.get("ast_revert") else (
            "no" if case.get("diff") else "")
        table.add_row(
            case["id"], case["kind"], fail,
            f"[{colours.get(case.get('verdict'), '')}]{verdict}[/]" if colours.get(case.get("verdict"))
            else verdict,
            str(case.get("equisa_status") or ""), str(case.get("exit_code", "")),
            _yes(case.get("same_function")), revert, str(case.get("candidates_tried", "")),
            str(case.get("validated", "")), f"{case['wall_s']:.0f}" if "wall_s" in case else "",
        )
    console.print(table)
    for case in cases:
        if "dropped" in case:
            console.print(f"[yellow]dropped[/] {case['id']}: {escape(case['dropped'])}", highlight=False)
        elif case.get("verdict") == "error":
            console.print(f"[magenta]error[/] {case['id']}: {escape(case.get('reason', ''))}",
                          highlight=False)
    summary = report.get("summary")
    if not summary or not summary["cases"]:
        return
    table = Table(title=f"Summary over {summary['cases']} bugs", title_justify="left")
    for column in ("scope", "bugs", *VERDICTS, "cand. mean", "cand. median", "wall mean s", "wall median s"):
        table.add_column(column, justify="left" if column == "scope" else "right", no_wrap=True)
    rows = [("all", summary), *summary["packages"].items()]
    for scope, row in rows:
        table.add_row(
            scope, str(row["cases"]),
            *(f"{row['verdicts'][v]['count']} ({100 * (row['verdicts'][v]['rate'] or 0):.0f}%)"
              for v in VERDICTS),
            *(("" if row[k][s] is None else f"{row[k][s]:.1f}") for k, s in (
                ("candidates_tried", "mean"), ("candidates_tried", "median"), ("wall_s", "mean"),
                ("wall_s", "median"))),
        )
    console.print(table)
    console.print(
        f"accepted by EQUISA (fixed): {summary['accepted_by_equisa']}, of which correct on the whole suite "
        f"{summary['accepted_correct']}; overfitting by EQUISA status {summary['overfitting_by_status']}, "
        f"failures in {summary['overfitting_in']}; patches {summary['patches']}: same function "
        f"{summary['same_function']}, exact revert {summary['exact_revert']}, AST revert "
        f"{summary['ast_revert']}; repair wall time total {summary['wall_s']['total']} s", highlight=False)


# -------------------------------------------------------------------------------------------------
# Main


def equisa_sources() -> dict[str, str]:
    """sha256 of every EQUISA source file (others may edit them while a long run goes on)."""
    files = sorted(p for folder in ("cli", "flows", "tasks", "equisa_core") for p in (REPO / folder).rglob("*.py"))
    return {p.relative_to(REPO).as_posix(): lc.sha256_of(p) for p in files}


def changed_sources(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    return sorted(name for name in set(before) | set(after) if before.get(name) != after.get(name))


def environment(uv: str, base_python: Path) -> dict:
    import prefect

    return {
        **tracing_environment(uv),
        "prefect": prefect.__version__,
        "suite_python": run_text([str(base_python), "-c",
                                  "import platform; print(platform.python_version())"]),
        "corpus_sha256": {p.name: lc.sha256_of(p) for p in sorted(lc.CORPUS_DIR.glob("*.yaml"))},
        "equisa_sources_sha256": equisa_sources(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--packages", help="comma-separated package names (default: all)")
    parser.add_argument("--bugs", help="comma-separated bug ids (default: all)")
    parser.add_argument("--quick", action="store_true", help="smoke run: the first bug of each package")
    parser.add_argument("--split-only", action="store_true",
                        help="inject, split and check the selections; do not run EQUISA")
    parser.add_argument("--equisa-option", action="append", default=[], metavar="ARG",
                        help="extra argument for every equisa call, "
                             "e.g. --equisa-option=--max-validations=20")
    parser.add_argument("--timeout", type=float, default=REPAIR_TIMEOUT_S,
                        help=f"wall-clock limit of one equisa repair (default {REPAIR_TIMEOUT_S:g} s)")
    parser.add_argument("--cache", type=Path, default=lc.DEFAULT_CACHE,
                        help=f"downloads and venvs ({lc.DEFAULT_CACHE})")
    parser.add_argument("--tmp-dir", default="/var/tmp",
                        help="where the per-case copies go (not /tmp: bwrap)")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"JSON results file (default {DEFAULT_OUT.relative_to(REPO)}; "
                             "with --split-only: none unless given)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)

    console = Console()
    if not console.is_terminal:  # piped or redirected: rich would fall back to 80 columns
        console = Console(width=160)
    started = time.perf_counter()
    uv = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    packages = lc.select(lc.load_corpus(), args.packages, args.bugs, args.quick)
    base_python, why = lc.find_python(lc.PYTHON_VERSION)
    if base_python is None:
        console.print(f"[red]no Python {lc.PYTHON_VERSION}:[/] {why}")
        return 1
    from importlib.metadata import version

    pytest_version = version("pytest")
    tmp = Path(tempfile.mkdtemp(prefix="equisa-bench-repair-", dir=args.tmp_dir))
    report: dict = {
        "benchmark": "repair_corpus",
        "schema": 1,
        "environment": environment(uv, base_python),
        "settings": {
            "quick": args.quick,
            "packages": [p.name for p in packages],
            "bugs_selected": sum(len(p.bugs) for p in packages),
            "pytest": pytest_version,
            "command": "equisa repair TREE --python VENV --no-llm --json OUT --diff OUT "
                       + " ".join(args.equisa_option) + " --tests VISIBLE...",
            "equisa_extra_options": list(args.equisa_option),
            "timeout_s": args.timeout,
            "split": f"seeded by 'repair-corpus:<bug id>' (random.Random); kept aside: "
                     f"round({KEPT_ASIDE_FILES:.3f} x files) test files among those without a visible "
                     "failing test, plus n // 2 of the n failing tests when n >= 2",
            "judge": "git apply of EQUISA's --diff on a fresh copy of the buggy package, then plain "
                     "pytest on the whole suite (package tests) in the package's venv",
            "verdicts": VERDICT_LABELS,
            "wall": "time.perf_counter around the equisa repair process",
        },
        "packages": {},
        "cases": [],
    }
    server: lc.PrefectServer | None = None
    try:
        for package in packages:
            console.print(f"[bold]{package.name} {package.version}[/]: download, unpack, venvs")
            try:
                prepared = lc.prepare_package(package, uv, base_python, args.cache, pytest_version)
            except (RuntimeError, subprocess.CalledProcessError) as error:
                report["packages"][package.name] = {"skipped": str(error)}
                console.print(f"[red]skipped {package.name}:[/] {error}")
                continue
            clean = lc.copy_tree(prepared.root, tmp / f"baseline-{package.name}" / package.name)
            baseline = lc.plain_pytest(prepared, clean)
            report["packages"][package.name] = {
                "version": package.version, "sdist": package.sdist, "sha256": package.sha256,
                "tests": list(package.tests), "requirements": list(package.requirements),
                "baseline": baseline, "bugs_declared": len(package.bugs),
            }
            console.print(f"  unmodified suite: {baseline['summary']} ({baseline['wall_s']} s)",
                          highlight=False)
            if baseline["returncode"] != 0:
                report["packages"][package.name]["skipped"] = "the unmodified suite does not pass"
                console.print(f"[red]skipped {package.name}: the unmodified suite does not pass[/]")
                continue
            if server is None and not args.split_only:
                server = lc.PrefectServer(tmp / "prefect-server-home")
                server.start()
                report["settings"]["prefect_server_start_s"] = server.start_s
                console.print(f"Prefect server at {server.url} (started in {server.start_s} s)")
            for bug in package.bugs:
                console.print(f"  [bold]{bug.id}[/] ({bug.kind}) {bug.function}", highlight=False)
                case = run_case(prepared, bug, tmp / bug.id, server, args.equisa_option, args.timeout,
                                console)
                if "dropped" in case:
                    console.print(f"    [yellow]dropped:[/] {escape(case['dropped'])}", highlight=False)
                elif "verdict" in case:
                    console.print(
                        f"    {case['verdict']}: EQUISA {case['equisa_status']} (exit {case['exit_code']}), "
                        f"target {case.get('target')}, {case.get('candidates_tried')} candidates, "
                        f"{case['wall_s']:.1f} s — {escape(case.get('reason', ''))}", highlight=False)
                report["cases"].append(case)
                if not args.keep:
                    shutil.rmtree(tmp / bug.id, ignore_errors=True)
    finally:
        if server is not None:
            server.stop()
        if args.keep:
            console.print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    report["dropped"] = {c["id"]: c["dropped"] for c in report["cases"] if "dropped" in c}
    # EQUISA runs from this working tree: an edit during the run means later bugs met other code.
    report["environment"]["equisa_sources_changed_during_run"] = changed_sources(
        report["environment"]["equisa_sources_sha256"], equisa_sources())
    if not args.split_only:
        report["summary"] = build_summary(report["cases"])
    lc._scrub_paths(report, {str(tmp): "$TMP", str(args.cache): "$CACHE", str(Path.home()): "~",
                             str(REPO): "$REPO"})
    if args.split_only and args.out is None:
        print_table(console, report)
        return 0
    finish_report(console, report, print_table, args.out or DEFAULT_OUT, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The prepare and run steps of the real-bug repair benchmark."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.realbugs.steps import REPO, EquisaCommand, clean_env, equisa_command, fresh_copy, log, timed_run
from bench.repair_corpus import diff_files, error_message, function_of
from equisa_core.errors import repair_exit_code

from . import bugsinpy_single, refactory, reference_check
from .judge import BUDGET_EXIT_CODE, apply_diff, judgement_from, label_of, outcome, sandboxed_pytest
from .split import Split, precheck, split_half

PREPARE_VERSION = 1  # bump when a case record changes meaning
DEFAULT_TIMEOUT_S = 600.0


@dataclass
class Context:
    cache: Path
    refactory_mirror: Path = refactory.DEFAULT_MIRROR
    realbugs_cache: Path = bugsinpy_single.REALBUGS_CACHE
    force: bool = False
    timeout: float = DEFAULT_TIMEOUT_S
    log_lines: list[str] = field(default_factory=list)

    @property
    def bugs(self) -> Path:
        return self.cache / "bugs"

    @property
    def results(self) -> Path:
        return self.cache / "results"


def load_case(folder: Path) -> dict | None:
    path = folder / "case.json"
    if not path.exists():
        return None
    case = json.loads(path.read_text())
    return case if case.get("prepare_version") == PREPARE_VERSION else None


def save_case(folder: Path, case: dict) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    case["prepare_version"] = PREPARE_VERSION
    (folder / "case.json").write_text(json.dumps(case, indent=1))
    return case


# -------------------------------------------------------------------------------------------------
# prepare: Refactory


def refactory_venv(cache: Path) -> str:
    """One shared venv for every student program: Python 3.11 and pytest."""
    venv = cache / "refactory" / "venv"
    python = venv / "bin" / "python"
    if not (venv / ".complete").exists():
        uv = shutil.which("uv") or "uv"
        subprocess.run([uv, "venv", "-q", "--python", "3.11", str(venv)], check=True)
        subprocess.run([uv, "pip", "install", "-q", "--python", str(python), "pytest"], check=True)
        (venv / ".complete").write_text("pytest\n")
    return str(python)


def judge_program(
    python: str,
    folder: Path,
    program: str,
    visible: Sequence[refactory.Case],
    hidden: Sequence[refactory.Case] = (),
) -> dict:
    """A program with its cases in a throwaway judge tree (bwrap, the 2 s alarm)."""
    tree = folder / "probe"
    shutil.rmtree(tree, ignore_errors=True)
    refactory.build_tree(tree, program, visible, hidden, judge=True)
    run = sandboxed_pytest(python, tree, timeout=30 + 3 * (len(visible) + len(hidden)))
    shutil.rmtree(tree, ignore_errors=True)
    return run


def prepare_refactory_one(
    ctx: Context,
    question: refactory.Question,
    path: Path,
    python: str,
    correct_tokens: Sequence[Sequence[str]],
    rank: int = 0,
) -> dict:
    """One wrong program: kept if it defines the called functions and fails some case."""
    the_id = f"refactory-{path.stem}"
    folder = ctx.bugs / the_id
    case: dict = {
        "id": the_id,
        "source": "refactory",
        "question": question.number,
        "file": path.name,
        "kept": False,
        "python": python,
        "rank": rank,
    }
    submission = path.read_text(errors="replace")
    program = refactory.program_text(question, submission)
    if not refactory.defines(program, question.functions):
        return save_case(folder, {**case, "reason": "does not parse or define the called functions"})
    buggy_run = judge_program(python, folder, program, question.cases)
    outcomes = {refactory.unit_of(t): o for t, o in buggy_run["outcomes"].items()}
    if buggy_run["returncode"] is None or not outcomes:
        return save_case(folder, {**case, "reason": f"the judge ran no test: {buggy_run['summary'][:200]}"})
    failing = sorted(u for u, o in outcomes.items() if o in ("FAILED", "ERROR"))
    case.update(
        buggy_outcomes=outcomes,
        loops=bool(buggy_run["looped"]),
        looped=[refactory.unit_of(t) for t in buggy_run["looped"]],
    )
    if not failing:
        return save_case(folder, {**case, "reason": "passes every case"})
    split = split_half(the_id, [c.name for c in question.cases], failing)
    by_name = {c.name: c for c in question.cases}
    visible = [by_name[n] for n in split.visible]
    hidden = [by_name[n] for n in split.hidden]
    problems = precheck(
        split,
        {t: o for t, o in judge_program(python, folder, program, visible)["outcomes"].items()},
        refactory.unit_of,
    )
    distance = refactory.nearest_distance(submission, correct_tokens)
    case.update(
        split=split.to_json(),
        selection=["tests/test_solution.py"],
        precheck=problems,
        distance=distance if distance < refactory.DISTANCE_CAP else None,
        stratum=refactory.stratum(distance),
    )
    if problems:
        return save_case(folder, {**case, "reason": "precheck: " + "; ".join(problems)})
    for name in ("buggy", "judge"):
        shutil.rmtree(folder / name, ignore_errors=True)
    refactory.build_tree(folder / "buggy", program, visible)
    refactory.build_tree(folder / "judge", program, visible, hidden, judge=True)
    return save_case(folder, {**case, "kept": True, "reason": None})


def prepare_refactory(ctx: Context, sample: int, bugs: set[str] | None = None) -> list[dict]:
    """The seeded sample: each question's wrong programs in the seeded order until its quota of
    kept ones (or the explicit ``bugs``, e.g. ``refactory-wrong_1_001``)."""
    data = refactory.data_root(ctx.cache, ctx.refactory_mirror)
    python = refactory_venv(ctx.cache)
    questions = [refactory.load_question(data, q) for q in refactory.QUESTIONS]
    order = refactory.sample_order(questions)
    quota = refactory.quotas(sample, list(refactory.QUESTIONS))
    kept: list[dict] = []
    for question in questions:
        correct = list({tuple(refactory.tokens(p.read_text(errors="replace"))) for p in question.correct})
        count = 0
        for rank, path in enumerate(order[question.number]):
            the_id = f"refactory-{path.stem}"
            if bugs is not None and the_id not in bugs:
                continue
            if bugs is None and count >= quota[question.number]:
                break
            case = None if ctx.force else load_case(ctx.bugs / the_id)
            if case is None:
                case = prepare_refactory_one(ctx, question, path, python, correct, rank)
                log(
                    f"[prepare] {the_id}: " + ("kept, " + case["stratum"] if case["kept"] else case["reason"])
                )
            if case["kept"]:
                count += 1
                kept.append(case)
    return interleave(kept)


def interleave(cases: Sequence[dict]) -> list[dict]:
    """Refactory cases in the sample's order, the questions interleaved (so that ``--limit`` and
    ``--quick`` take some of each question): each question's cases by their seeded rank."""
    by_question: dict[int, list[dict]] = {}
    for case in sorted(cases, key=lambda c: c.get("rank", 0)):
        by_question.setdefault(case["question"], []).append(case)
    return sorted(cases, key=lambda c: (by_question[c["question"]].index(c), c["question"]))


# -------------------------------------------------------------------------------------------------
# prepare: BugsInPy


def prepare_bugsinpy(ctx: Context, chosen: Iterable[tuple[str, int]]) -> list[dict]:
    kept = []
    for project, number in chosen:
        the_id = bugsinpy_single.bug_id(project, number)
        folder = ctx.bugs / the_id
        case = None if ctx.force else load_case(folder)
        if case is None:
            try:
                case = bugsinpy_single.prepare_bug(project, number, folder, ctx.realbugs_cache)
            except Exception as error:  # a harness problem on one bug must not stop the others
                case = {
                    "id": the_id,
                    "source": "bugsinpy",
                    "project": project,
                    "bug": number,
                    "kept": False,
                    "reason": f"harness error: {type(error).__name__}: {str(error)[:300]}",
                }
            save_case(folder, case)
            log(f"[prepare] {the_id}: " + ("kept" if case["kept"] else case["reason"]))
        if case["kept"]:
            kept.append(case)
    return kept


# -------------------------------------------------------------------------------------------------
# run


def resolve_versions(names: Sequence[str]) -> list[tuple[str, str]]:
    """(label, commit) for each of ``names``: a git revision, or ``BASE``: the commit before the one
    that added this benchmark (the ``main`` commit just before issue 19's work)."""
    out = []
    for name in names:
        revision = name
        if name == "BASE":
            added = subprocess.run(
                [
                    "git",
                    "-C",
                    str(REPO),
                    "log",
                    "--diff-filter=A",
                    "--format=%H",
                    "--",
                    "bench/realrepair/__init__.py",
                ],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
            if not added:
                raise SystemExit("BASE: bench/realrepair is not committed yet; name a commit instead")
            revision = added[-1] + "^"
        commit = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", revision], capture_output=True, text=True, check=True
        ).stdout.strip()
        out.append((name, commit))
    return out


def equisa_env(shared: Path) -> dict[str, str]:
    """A version's own PREFECT_HOME and data home (so its Prefect server is its own)."""
    return clean_env(
        {
            "PREFECT_HOME": str(shared / "prefect-home"),
            "XDG_DATA_HOME": str(shared / "data-home"),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        }
    )


def run_version(ctx: Context, case: dict, label: str, equisa: EquisaCommand) -> dict:
    """``equisa repair --no-llm`` on a fresh copy of the case, then the judge."""
    commit = equisa.info["commit"]
    out = ctx.results / case["id"]
    out.mkdir(parents=True, exist_ok=True)
    work = ctx.cache / "work" / case["id"] / commit[:12]
    shutil.rmtree(work, ignore_errors=True)
    buggy_source = Path(case["buggy"]) if case["source"] == "bugsinpy" else ctx.bugs / case["id"] / "buggy"
    copy = fresh_copy(buggy_source, work / "repo")
    report_path, diff_path = work / "report.json", work / "fix.diff"
    cmd = [
        *equisa.argv(),
        "repair",
        str(copy),
        "--no-llm",
        "--python",
        case["python"],
        "--json",
        str(report_path),
        "--diff",
        str(diff_path),
        "--db",
        str(work / "history.duckdb"),
        "--artifacts",
        str(work / "artifacts"),
        "--tests",
        *case["selection"],
    ]
    shared = ctx.cache / "equisa" / commit[:12]
    env = equisa_env(shared)
    env["EQUISA_WORKSPACES"] = str(work / "workspaces")
    env["PREFECT_LOCAL_STORAGE_PATH"] = str(work / "prefect-storage")
    run = timed_run(cmd, equisa.root, env, ctx.timeout)
    report = _read_json(report_path)
    diff = diff_path.read_text() if diff_path.exists() else ""
    status = report.get("status") if report else None
    result: dict = {
        "id": case["id"],
        "source": case["source"],
        "project": project_of(case),
        "version": label,
        "commit": commit,
        "wall_s": round(run.wall_s, 2),
        "returncode": run.returncode,
        "status": status,
        "target": report.get("target") if report else None,
        "stopped_because": (report or {}).get("stopped_because"),
        "localization_stopped_because": ((report or {}).get("localization") or {}).get("stopped_because"),
        "original": str(buggy_source),
        "command": cmd,
    }
    if case["source"] == "refactory":
        result["question"] = case.get("question")
    judged = None
    apply_error = ""
    if status in ("fixed", "plausible_only"):
        judged, apply_error, extra = judge_patch(ctx, case, diff, work)
        result.update(extra)
    split = Split.from_json(case["split"])
    unit = refactory.unit_of if case["source"] == "refactory" else None
    judgement = judgement_from(judged, apply_error, unit or function_of)
    code = run.returncode
    if code is not None and code == BUDGET_EXIT_CODE and status in ("fixed", "plausible_only", "not_fixed"):
        code = repair_exit_code(status)  # the budget was spent, and the run still gave its verdict
    message = "" if code in (0, 21, 22) else error_message(run.stdout + run.stderr)
    result.update(outcome(code, status, judgement, split, message))
    result["label"] = label_of(result)
    if "reference" in result:
        result = reference_check.with_reference(result, result.pop("reference"))
    if judged is not None:
        kept = ("returncode", "summary", "wall_s", "ignored_failing_on_fixed")
        result["judge"] = {k: judged[k] for k in kept if k in judged}
    if diff:
        (out / f"{commit[:12]}.diff").write_text(diff)
    if report is not None:  # the whole report (diff, target, evidence): what a later fit reads
        (out / f"{commit[:12]}.report.json").write_text(json.dumps(report, indent=1))
    (out / f"{commit[:12]}.stdout.txt").write_text((run.stdout + "\n--- stderr\n" + run.stderr)[-20000:])
    (out / f"{commit[:12]}.json").write_text(json.dumps(result, indent=1))
    shutil.rmtree(work, ignore_errors=True)
    return result


def project_of(case: Mapping) -> str:
    """The bug's project: its BugsInPy project, or ``refactory`` (one project; questions apart)."""
    return str(case.get("project") or case["source"])


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def judge_patch(ctx: Context, case: dict, diff: str, work: Path) -> tuple[dict | None, str, dict]:
    """Apply ``diff`` to a fresh copy holding every test and run them all (plain pytest)."""
    extra: dict = {"diff_files": diff_files(diff)}
    if case["source"] == "refactory":
        tree = fresh_copy(ctx.bugs / case["id"] / "judge", work / "judge")
    else:
        tree = fresh_copy(Path(case["buggy"]), work / "judge")
    apply_error = apply_diff(tree, diff)
    if apply_error:
        return None, apply_error, extra
    if case["source"] == "refactory":
        n = len(case["split"]["visible"]) + len(case["split"]["hidden"])
        run = sandboxed_pytest(case["python"], tree, timeout=30 + 3 * n)
        extra["reference"] = reference_of(ctx, case, tree, work)
        if case.get("question") == 5:
            added = [
                line for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")
            ]
            extra["adds_sort"] = any("sort" in line for line in added)
    else:
        run = bugsinpy_single.judge_run(case, tree)
        extra["same_as_dev"] = bugsinpy_single.same_as_dev(case, tree, extra["diff_files"])
    return run, "", extra


def reference_of(ctx: Context, case: dict, tree: Path, work: Path) -> dict:
    """The reference check of a patched Refactory judge tree (``reference_check``)."""
    question = refactory.load_question(refactory.data_root(ctx.cache), int(case["question"]))
    reference = (question.folder / "code" / "reference" / "reference.py").read_text()
    calls, names = reference_check.case_calls(tree)
    original = (ctx.bugs / case["id"] / "judge" / "solution.py").read_text()
    changed = reference_check.changed_functions(original, (tree / "solution.py").read_text())
    return reference_check.check(case["python"], tree, work, question.number, calls, reference,
                                 question.global_text, names, changed)


def rejudge(ctx: Context, cases: Sequence[dict], versions: Sequence[tuple[str, str]]) -> list[dict]:
    """The kept records of ``versions`` on ``cases`` judged again with the reference check
    (Refactory's ``fixed`` and ``plausible_only`` patches; no repair is run), written back."""
    updated = []
    for case in cases:
        if case["source"] != "refactory":
            continue
        for label, commit in versions:
            done = ctx.results / case["id"] / f"{commit[:12]}.json"
            diff_path = done.with_suffix(".diff")
            result = _read_json(done)
            judged = result is not None and result.get("status") in ("fixed", "plausible_only")
            if result is None or not judged or not diff_path.exists():
                continue
            work = ctx.cache / "work" / case["id"] / f"rejudge-{commit[:12]}"
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
            tree = fresh_copy(ctx.bugs / case["id"] / "judge", work / "judge")
            if apply_diff(tree, diff_path.read_text()):
                shutil.rmtree(work, ignore_errors=True)
                continue
            result = reference_check.with_reference(result, reference_of(ctx, case, tree, work))
            done.write_text(json.dumps(result, indent=1))
            shutil.rmtree(work, ignore_errors=True)
            log(f"[rejudge] {case['id']} {label}: {result['outcome']} ({result.get('label')}), "
                f"{result['reference']['differs']} of {result['reference']['inputs']} inputs differ")
            updated.append(result)
    return updated


def run(ctx: Context, cases: Sequence[dict], versions: Sequence[tuple[str, str]], rerun: bool) -> list[dict]:
    """Every version on every case, one case at a time, the order of the versions alternating."""
    commands = [(label, equisa_command("head", ctx.cache, commit)) for label, commit in versions]
    results = []
    try:
        for index, case in enumerate(cases):
            order = commands if index % 2 == 0 else list(reversed(commands))
            for label, equisa in order:
                done = ctx.results / case["id"] / f"{equisa.info['commit'][:12]}.json"
                if done.exists() and not rerun:
                    continue
                result = run_version(ctx, case, label, equisa)
                log(
                    f"[run] {case['id']} {label}: {result['outcome']} (exit {result['returncode']}, "
                    f"status {result['status']}) in {result['wall_s']:.1f} s"
                )
                results.append(result)
    finally:
        for _label, equisa in commands:  # the Prefect servers these commands started
            shared = ctx.cache / "equisa" / equisa.info["commit"][:12]
            if shared.exists():
                subprocess.run(
                    [*equisa.argv(), "server", "stop"],
                    cwd=equisa.root,
                    env=equisa_env(shared),
                    capture_output=True,
                    timeout=120,
                )
    return results

"""The judge: EQUISA's diff applied to a copy that holds every test, plain pytest, and the outcome.

Outcomes (``outcome``, an extension of ``repair_corpus.classify``):

=========== ===========================================================================
correct     EQUISA said ``fixed``, and every test (visible and hidden) passes
overfit     EQUISA said ``fixed``, and some test fails (``overfitting_in``: hidden, visible, both)
not_fixed   ``not_fixed``; or ``plausible_only``, split into ``withheld_correct`` (every test
            passes: a false alarm) and ``withheld_overfit`` (some test fails: a catch)
error       any other exit, the time limit, no JSON report, or a diff that does not apply
=========== ===========================================================================

Each judged patch also gets a **label** (``label_of``), what a later fit of patch patterns learns
from: ``correct``, ``overfit``, ``withheld_correct``, ``withheld_overfit`` or ``unapplied`` (the
diff does not apply to the judge's copy); None when there was no patch to judge.

``BUDGET_EXIT_CODE`` is the exit code of ``equisa repair`` for "the time budget is spent"
(``equisa_core.errors.EXIT_BUDGET_SPENT``; versions before it never exit with it). A run that exits
with it and still writes a verdict is judged by that verdict, and the report counts it among the
runs that reached their budget (``report.budget_spent``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from bench.realbugs.steps import clean_env, timed_run
from bench.repair_corpus import Judgement, classify
from equisa_core.errors import EXIT_BUDGET_SPENT

OUTCOMES = ("correct", "overfit", "not_fixed", "error")
OUTCOME_LABELS = {
    "correct": "fixed, and every test passes",
    "overfit": "fixed, but some test fails",
    "not_fixed": "not_fixed, or plausible_only (withheld)",
    "error": "another exit, the time limit, no report, or a diff that does not apply",
}
#: A per-test line of ``pytest -rA``: ``FAILED tests/t.py::test_x - AssertionError: ...``.
_SUMMARY = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+)(?: - (.*))?$")
#: ``equisa repair``'s exit code for "budget spent" (older versions: only the report's
#: ``stopped_because`` tells it).
BUDGET_EXIT_CODE: int | None = EXIT_BUDGET_SPENT
LABELS = ("correct", "overfit", "withheld_correct", "withheld_overfit", "unapplied")
#: Raised by the judge's alarm (``refactory.ALARM_CONFTEST``).
TIMEOUT_MARK = "JudgeTimeout"


class NoSandbox(RuntimeError):
    """bubblewrap is missing: untrusted code is never run without it."""


def bwrap_prefix(tree: Path, python: str | None = None) -> list[str]:
    """Run a command in ``tree`` under bubblewrap: the system read-only, ``tree`` writable, no
    network, a private /tmp, killed with its parent. ``python``'s environment stays visible (read-only)
    even when it lives under /tmp, as a clone's venv does in CI."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise NoSandbox(
            "bubblewrap (bwrap) is not installed: it is needed to run the student programs "
            "(apt-get install -y bubblewrap); refusing to run them unsandboxed"
        )
    return [
        bwrap,
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        *[arg for root in _kept_under_tmp(python) for arg in ("--ro-bind", str(root), str(root))],
        "--bind",
        str(tree),
        str(tree),
        "--unshare-all",
        "--die-with-parent",
        "--chdir",
        str(tree),
        "--",
    ]


def parse_outcomes(output: str) -> tuple[dict[str, str], list[str]]:
    """Per-test outcomes of ``pytest -rA`` output, and the ids stopped by the judge's alarm."""
    outcomes: dict[str, str] = {}
    looped: list[str] = []
    for line in output.splitlines():
        found = _SUMMARY.match(line.strip())
        if found:
            outcomes.setdefault(found.group(2), found.group(1))
            if TIMEOUT_MARK in (found.group(3) or ""):
                looped.append(found.group(2))
    return outcomes, looped


def _kept_under_tmp(python: str | None) -> list[Path]:
    """The folders of ``python``'s environment (its venv and the interpreter it links to) that the
    private /tmp would hide."""
    if python is None:
        return []
    executable = Path(python).absolute()
    roots = {executable.parent.parent, executable.resolve().parent.parent}
    return sorted(r for r in roots if r.is_relative_to("/tmp") and r != Path("/tmp"))


def sandboxed_pytest(python: str, tree: Path, args: Sequence[str] = (), timeout: float = 120) -> dict:
    """Plain pytest in ``tree`` under bubblewrap: returncode (None: killed), outcomes, looped ids."""
    cmd = [
        *bwrap_prefix(tree, python),
        python,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        "--tb=no",
        "-rA",
        "--color=no",
        *args,
    ]
    # The student programs need no plugin, and a venv's plugins can take seconds to import.
    run = timed_run(cmd, tree, clean_env({"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}), timeout)
    outcomes, looped = parse_outcomes(run.stdout)
    lines = [line for line in run.stdout.strip().splitlines() if line.strip()]
    return {
        "returncode": run.returncode,
        "outcomes": outcomes,
        "looped": looped,
        "wall_s": round(run.wall_s, 2),
        "summary": lines[-1].strip("= ") if lines else "",
        "tail": (run.stdout + run.stderr)[-1500:],
    }


def failing_of(outcomes: Mapping[str, str]) -> list[str]:
    return sorted(t for t, o in outcomes.items() if o in ("FAILED", "ERROR"))


def apply_diff(tree: Path, diff: str) -> str:
    """``git apply`` ``diff`` in ``tree`` (a git repository); the error, or "" when it applied."""
    if not diff.strip():
        return "empty diff"
    patch = tree.parent / (tree.name + ".diff")
    patch.write_text(diff, encoding="utf-8")
    env = clean_env({"GIT_CEILING_DIRECTORIES": str(tree.parent)})
    done = subprocess.run(
        ["git", "apply", "--whitespace=nowarn", str(patch)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    patch.unlink()
    return "" if done.returncode == 0 else (done.stderr or done.stdout).strip()[-500:] or "git apply failed"


def judgement_from(run: Mapping | None, apply_error: str, unit_of=None) -> Judgement | None:
    """``repair_corpus.Judgement`` from a judged run (failing ids mapped to split units)."""
    if run is None and not apply_error:
        return None
    if apply_error:
        return Judgement(applied=False, apply_error=apply_error)
    assert run is not None
    failing = failing_of(run["outcomes"])
    units = sorted({unit_of(t) for t in failing}) if unit_of else failing
    code = run["returncode"]
    if code not in (0, None) and not failing:
        units = []  # a crash without a test id: classify reports it as "unknown"
    return Judgement(
        applied=True,
        returncode=code if code is not None else -9,
        failing=tuple(units),
        summary=str(run.get("summary", ""))[:200],
    )


def outcome(
    exit_code: int | None, status: str | None, judgement: Judgement | None, split=None, error: str = ""
) -> dict:
    """The plan's outcome from ``repair_corpus.classify``'s verdict (see the module's table)."""
    verdict = classify(exit_code, status, judgement, split, error)
    found = verdict.pop("verdict")
    if found == "correct":
        result = "correct"
    elif found == "overfitting" and status == "fixed":
        result = "overfit"
    elif found == "overfitting":  # plausible_only, and some test fails: the guard was right
        result, verdict["withheld"] = "not_fixed", "withheld_overfit"
    elif found == "plausible_only":  # plausible_only, and every test passes: a false alarm
        result, verdict["withheld"] = "not_fixed", "withheld_correct"
    else:
        result = found  # not_fixed, error
    return {"outcome": result, **verdict}


def label_of(result: Mapping) -> str | None:
    """The judge's label of a run's patch (see the module's docstring); None when nothing was judged."""
    if result.get("status") not in ("fixed", "plausible_only"):
        return None
    if result.get("outcome") == "correct":
        return "correct"
    if result.get("outcome") == "overfit":
        return "overfit"
    if result.get("withheld") in ("withheld_correct", "withheld_overfit"):
        return result["withheld"]
    if "does not apply" in str(result.get("reason", "")):
        return "unapplied"
    return None

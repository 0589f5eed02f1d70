"""Provisioned environments on real projects (issue 20): ``equisa localize`` with no ``--python``
on BugsInPy bugs of the real-bug benchmark, one per project, as a user runs it on a fresh clone.

For each bug, a fresh copy of its buggy checkout (``bench.realbugs``' cache, a git repository as a
user's clone is, committed on the buggy commit's date) is localized twice, as whole processes, with
no ``$VIRTUAL_ENV`` and an environments folder of its own: *cold* (the environment is built with
uv from what the checkout declares: its ``setup.py``, ``setup.cfg``, ``tox.ini``,
``requirements*.txt``, ``pyproject.toml``) and *warm* (the same command again: the environment is
reused). The checkout's own files only:
BugsInPy's curated ``requirements.txt`` is not used (that would be ``--python``). uv's own
download cache is shared, as on a user's machine.

    uv run python -m bench.provisioning [--bugs black:10,fastapi:12,...]
                                        [--out bench/results/provisioning_<date>]

Reported per bug: the exit code and, on failure, the message; the Python chosen; the build time
(the report's ``environment.build_seconds``) and the whole command's wall time, cold and warm; the
rank of the function the developers fixed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import subprocess
import tempfile
from pathlib import Path

from bench.realbugs.bugsinpy import DEFAULT_MIRRORS, Mirrors, load_bug
from bench.realbugs.steps import RANKED_EXITS, clean_env, equisa_command, fresh_copy, timed_run
from bench.realrepair.bugsinpy_single import REALBUGS_CACHE, realbugs_record

#: One bug of each project of the real-bug benchmark (all verified single-function bugs).
DEFAULT_BUGS = "black:10,fastapi:12,luigi:10,scrapy:2,tornado:4,sanic:1"
#: A command's limit, whole process (``--timeout``).
TIMEOUT_S = 1800
RESULTS = Path(__file__).resolve().parent / "results"


def _rank(report: dict, truth: set[str]) -> float | None:
    """The truth's rank in the report's ranking, ties averaged; None when it is not ranked."""
    ranking = report.get("ranking") or []
    for row in ranking:
        if row["fqn"] in truth:
            tied = [i for i, r in enumerate(ranking) if r["confidence"] == row["confidence"]]
            return (min(tied) + max(tied)) / 2 + 1
    return None


def buggy_commit_date(project: str, number: int) -> str:
    """The buggy commit's date (ISO 8601), from the project's snapshot: the copy's commit carries it,
    as the commit does in a user's clone (EQUISA takes pytest's release of the project's time)."""
    mirrors = Mirrors(DEFAULT_MIRRORS, REALBUGS_CACHE)
    bug = load_bug(mirrors.bugsinpy(), project, number)
    repo = mirrors.project(project, bug.github_url)
    return subprocess.run(["git", f"--git-dir={repo}", "show", "-s", "--format=%cI", bug.buggy_commit],
                          check=True, capture_output=True, text=True).stdout.strip()


def run_one(project: str, number: int, work: Path, timeout_s: float = TIMEOUT_S) -> dict:
    record = realbugs_record(project, number)
    truth = {f["fqn"] for f in record["truth"]["functions"]}
    copy = fresh_copy(REALBUGS_CACHE / "bugs" / f"{project}-{number}" / "buggy", work / "repo",
                      committed_at=buggy_commit_date(project, number))
    equisa = equisa_command("worktree", work)
    env = clean_env({
        "EQUISA_ENVIRONMENTS": str(work / "environments"), "PREFECT_HOME": str(work / "prefect-home"),
        "EQUISA_WORKSPACES": str(work / "workspaces"), "EQUISA_DB": str(work / "history.duckdb"),
        "EQUISA_ARTIFACTS": str(work / "artifacts"),
        "PREFECT_LOCAL_STORAGE_PATH": str(work / "prefect-storage"),
    })
    result: dict = {"id": f"{project}:{number}", "project": project, "truth": sorted(truth)}
    for phase in ("cold", "warm"):
        out = work / f"{phase}.json"
        command = [*equisa.argv(), "localize", str(copy), "--no-llm", "--json", str(out),
                   "--tests", *record["scope"]]
        run = timed_run(command, equisa.root, env, timeout_s)
        row: dict = {"returncode": run.returncode, "wall_s": round(run.wall_s, 2)}
        if out.exists():
            report = json.loads(out.read_text())
            environment = report.get("environment") or {}
            row.update(python=environment.get("python_version"), built=environment.get("built"),
                       reused=environment.get("reused"), build_s=environment.get("build_seconds"),
                       made_from=environment.get("made_from"), rank=_rank(report, truth))
        if run.returncode not in RANKED_EXITS:  # no ranking: say why
            lines = [line for line in (run.stderr + run.stdout).splitlines() if line.strip()]
            row["message"] = " | ".join(lines[-4:])[-900:]
            if run.returncode is None:
                row["message"] = f"stopped at the time limit ({timeout_s:g} s) | {row['message']}"
        result[phase] = row
        if run.returncode not in RANKED_EXITS and phase == "cold" and not out.exists():
            break  # no environment: the warm run would only repeat the failure
    return result


def report_table(results: list[dict]) -> str:
    lines = ["| bug | exit (cold) | Python | built from | build cold s | build warm s | wall cold s | "
             "wall warm s | truth rank | note |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        cold, warm = r.get("cold", {}), r.get("warm", {})
        note = (cold.get("message") or "")[:160].replace("|", "/")
        lines.append(f"| {r['id']} | {cold.get('returncode')} | {cold.get('python') or '-'} | "
                     f"{', '.join(cold.get('made_from') or []) or '-'} | {cold.get('build_s', '-')} | "
                     f"{warm.get('build_s', '-')} | {cold.get('wall_s', '-')} | {warm.get('wall_s', '-')} | "
                     f"{cold.get('rank') or '-'} | {note} |")
    built = [r for r in results if r.get("cold", {}).get("built")]
    if built:
        lines.append("")
        lines.append(f"Built {len(built)} of {len(results)}; median build cold "
                     f"{statistics.median(r['cold']['build_s'] for r in built):.1f} s, warm "
                     f"{statistics.median(r['warm']['build_s'] for r in built if 'warm' in r):.2f} s.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.provisioning",
                                     description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--bugs", default=DEFAULT_BUGS, help="project:number, comma-separated")
    parser.add_argument("--out", type=Path,
                        help="the results' stem (default bench/results/provisioning_<date>)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, metavar="SECONDS",
                        help="each command's limit, whole process (default %(default)s)")
    args = parser.parse_args(argv)
    out = args.out or RESULTS / f"provisioning_{dt.date.today().isoformat()}"
    results = []
    for item in args.bugs.split(","):
        project, _, number = item.strip().partition(":")
        with tempfile.TemporaryDirectory(prefix="equisa-provisioning-") as scratch:
            result = run_one(project, int(number), Path(scratch), args.timeout)
        print(json.dumps(result), flush=True)
        results.append(result)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"date": dt.date.today().isoformat(), "bugs": results},
                                                   indent=2) + "\n")
    out.with_suffix(".md").write_text(report_table(results))
    print(report_table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The FauxPy study's published results and set-up, for the bugs of this benchmark's projects.

Rezaalipour & Furia, "An empirical study of fault localization in Python programs" (EMSE 2024);
replication package ``atom-sw/fauxpy-experiments``. ``extract`` reads three of its files from a
bare git snapshot (no code of theirs is kept or run) and keeps, per bug of ``ALLOWED_PROJECTS``:

* ``published``: the SBFL Ochiai row at function granularity of
  ``metric_computation/output_fauxpy_function/fauxpy_function_all_detailed.csv`` (statement scores
  lifted to functions, each function scored by its best statement); ``e_inspect`` is their rank;
* ``setup``: how they ran FauxPy (``bash_script_generator/info/subject_info.csv``): the test
  files, ``--src``, ``--exclude`` and the ``--failing-list``;
* ``truth``: their ground-truth functions (``metric_computation/ground_truth_info.json``),
  ``file::name::first::last``.

The extract is committed as ``bench/data/fauxpy_study.json``; ``python -m bench.realbugs.study
<git-dir>`` writes it again.
"""

from __future__ import annotations

import csv
import io
import json
import math
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from . import ALLOWED_PROJECTS

REPO = Path(__file__).resolve().parents[2]
STUDY_PATH = REPO / "bench" / "data" / "fauxpy_study.json"
SOURCE = "https://github.com/atom-sw/fauxpy-experiments"
PUBLISHED_CSV = "metric_computation/output_fauxpy_function/fauxpy_function_all_detailed.csv"
SUBJECTS_CSV = "bash_script_generator/info/subject_info.csv"
TRUTH_JSON = "metric_computation/ground_truth_info.json"
TOLERANCE = 1e-9


def _list(cell: str) -> list[str]:
    """A list cell of subject_info.csv: items split by ``;`` (and new lines); ``-`` is none."""
    items = [item.strip() for item in cell.replace("\n", ";").split(";")]
    return [item for item in items if item and item != "-"]


def parse_published(text: str, technique: str = "Ochiai") -> dict[str, dict]:
    out = {}
    for row in csv.DictReader(io.StringIO(text)):
        if row["technique"] != technique or row["project_name"] not in ALLOWED_PROJECTS:
            continue
        out[f"{row['project_name']}:{int(row['bug_number'])}"] = {
            "e_inspect": float(row["e_inspect"]),
            "localized": row["is_bug_localized"] == "1",
            "exam": float(row["exam_score"]),
            "ranked": int(row["output_length"]),
            "time_s": round(float(row["experiment_time_seconds"]), 2),
        }
    return out


def parse_subjects(text: str) -> dict[str, dict]:
    out = {}
    for row in csv.DictReader(io.StringIO(text)):
        if row["BENCHMARK_NAME"] not in ALLOWED_PROJECTS:
            continue
        out[f"{row['BENCHMARK_NAME']}:{int(row['BUG_NUMBER'])}"] = {
            "python": row["PYTHON_V"],
            "src": row["TARGET_DIR"],
            "tests": _list(row["TEST_SUITE"]),
            "exclude": _list(row["EXCLUDE"]),
            "failing": _list(row["TARGET_FAILING_TESTS"]),
        }
    return out


def parse_truth(text: str) -> dict[str, list[str]]:
    out = {}
    for bug, files in json.loads(text).items():
        if bug.split(":")[0] in ALLOWED_PROJECTS:
            out[bug] = [f"{f['FILE_NAME']}::{name}" for f in files for name in f["FUNCTIONS"]]
    return out


def extract(git_dir: Path) -> dict:
    def show(path: str) -> str:
        return subprocess.run(
            ["git", f"--git-dir={git_dir}", "show", f"HEAD:{path}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    commit = subprocess.run(
        ["git", f"--git-dir={git_dir}", "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    published, subjects, truth = (
        parse_published(show(PUBLISHED_CSV)),
        parse_subjects(show(SUBJECTS_CSV)),
        parse_truth(show(TRUTH_JSON)),
    )
    bugs = {}
    for bug in sorted(published, key=lambda b: (b.split(":")[0], int(b.split(":")[1]))):
        bugs[bug] = {"published": published[bug], "setup": subjects.get(bug), "truth": truth.get(bug, [])}
    files = [PUBLISHED_CSV, SUBJECTS_CSV, TRUTH_JSON]
    return {
        "source": {
            "repository": SOURCE,
            "commit": commit,
            "files": files,
            "technique": "Ochiai (SBFL), function granularity from statement scores",
            "note": "e_inspect: their E_Inspect+ rank (ties: the expected rank of the first "
            "faulty function in a random order of the tie; not localized: the rest "
            "of the project as one tie)",
        },
        "bugs": bugs,
    }


def load_study(path: Path = STUDY_PATH) -> dict[str, dict]:
    """Per bug id (``black:1``): ``published``, ``setup`` and ``truth``; empty without the file."""
    return json.loads(path.read_text())["bugs"] if path.exists() else {}


# -------------------------------------------------------------------------------------------------
# Their rank rule, to compare like with like


def e_inspect(scores: Sequence[float], faulty: Sequence[bool]) -> float | None:
    """The study's E_Inspect of a ranking (``scores`` in any order, ``faulty[i]``: is entry i a
    fix function): the first tie holding a faulty entry starts at ``p``, holds ``t`` entries of
    which ``f`` are faulty; the expected rank of its first faulty one is ``p + (t - f) / (f + 1)``
    (their sum over binomials, in closed form). None when no entry is faulty."""
    best = max((s for s, bad in zip(scores, faulty, strict=True) if bad), default=None)
    if best is None:
        return None
    higher = sum(1 for s in scores if s > best + TOLERANCE)
    tied = [bad for s, bad in zip(scores, faulty, strict=True) if abs(s - best) <= TOLERANCE]
    t, f = len(tied), sum(tied)
    return higher + 1 + (t - f) / (f + 1)


def compare(ours: float | None, published: Mapping | None) -> str:
    """``same``, ``better`` (ours ranks the fix higher), ``worse``, or ``no published rank``."""
    if not published:
        return "no published rank"
    theirs = published["e_inspect"] if published.get("localized") else None
    if ours is None and theirs is None:
        return "same"
    if ours is not None and theirs is not None and math.isclose(ours, theirs, abs_tol=1e-6):
        return "same"
    if theirs is None or (ours is not None and ours < theirs):
        return "better"
    return "worse"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(
            "usage: python -m bench.realbugs.study <git dir of atom-sw/fauxpy-experiments>", file=sys.stderr
        )
        return 2
    STUDY_PATH.parent.mkdir(parents=True, exist_ok=True)
    STUDY_PATH.write_text(json.dumps(extract(Path(argv[0])), indent=1) + "\n")
    print(f"written {STUDY_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

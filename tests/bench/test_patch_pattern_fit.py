"""bench/patch_pattern_fit.py on a synthetic realrepair cache: reading the runs, the fit, the folds."""

from __future__ import annotations

import difflib
import json
import math
import shutil
from pathlib import Path

import pytest

from bench import patch_pattern_fit as ppf
from equisa_core.validation.patch_patterns import PATTERNS
from equisa_core.validation.pattern_model import load_pattern_model

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git apply reads the diffs")

MODULE = '''"""Settings of a small service."""

import re

PORT = re.compile(r"^[0-9]{2,5}$")


class Settings:
    def __init__(self, values):
        self.values = values

    def port(self, name="port"):
        text = self.values.get(name, "8080")
        if not PORT.match(text):
            raise ValueError(f"not a port: {text!r}")
        return int(text) + 0


def unused():
    return 1
'''
GUARD = """        if not PORT.match(text):
            raise ValueError(f"not a port: {text!r}")
"""
COMMIT = "0123456789ab"


def _diff(before: str, after: str, path: str) -> str:
    lines = difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"a/{path}", f"b/{path}")
    return f"diff --git a/{path} b/{path}\n" + "".join(lines)


def _run(
    cache: Path,
    case_id: str,
    project: str,
    patched: str,
    outcome: dict,
    *,
    target: str | None = "service.settings.Settings.port",
    report: bool = True,
) -> None:
    """One bug (its original file) and one judged run of it, as bench.realrepair leaves them."""
    buggy = cache / "bugs" / case_id / "buggy"
    (buggy / "service").mkdir(parents=True, exist_ok=True)
    (buggy / "service" / "settings.py").write_text(MODULE)
    source = "refactory" if project.startswith("refactory") else "bugsinpy"
    case = {"id": case_id, "source": source, "kept": True}
    if source == "refactory":
        case["question"] = int(project.removeprefix("refactory-q"))
    else:
        case.update(project=project, buggy=str(buggy))
    (cache / "bugs" / case_id / "case.json").write_text(json.dumps(case))
    results = cache / "results" / case_id
    results.mkdir(parents=True, exist_ok=True)
    diff = _diff(MODULE, patched, "service/settings.py")
    result = {"id": case_id, "source": source, "status": "fixed", **outcome}
    if source == "refactory":
        result["question"] = case["question"]
    if report:
        (results / f"{COMMIT}.report.json").write_text(
            json.dumps({"status": "fixed", "target": target, "diff": diff})
        )
    else:
        (results / f"{COMMIT}.diff").write_text(diff)
    (results / f"{COMMIT}.json").write_text(json.dumps(result))


WRONG = {"outcome": "overfit"}
RIGHT = {"outcome": "correct"}


def _synthetic(cache: Path) -> None:
    """Wrong patches delete the port guard; right ones change a constant. Four projects."""
    deleted = MODULE.replace(GUARD, "")
    constants = [MODULE.replace("+ 0", f"+ {k}") for k in range(1, 5)]
    projects = ["black", "luigi", "refactory-q1", "refactory-q2"]
    for i, project in enumerate(projects):
        for j in range(3):
            _run(cache, f"{project}-w{j}", project, deleted.replace('"8080"', f'"{8080 + j}"'), WRONG)
            _run(cache, f"{project}-r{j}", project, constants[(i + j) % 4], RIGHT, report=j != 0)


def test_a_run_is_read_as_its_project_the_target_method_before_and_after_and_its_label(tmp_path):
    _run(tmp_path, "refactory-wrong_3_001", "refactory-q3", MODULE.replace(GUARD, ""), WRONG)
    sample = ppf.read_run(tmp_path / "results" / "refactory-wrong_3_001" / f"{COMMIT}.json", tmp_path)
    assert isinstance(sample, ppf.Sample)
    assert sample.project == "refactory-q3" and sample.wrong
    assert sample.original.startswith("def port(self") and "raise ValueError" in sample.original
    assert sample.patched.startswith("def port(self") and "raise" not in sample.patched
    assert sample.first_line == MODULE.splitlines().index('    def port(self, name="port"):') + 1
    assert ppf.present(sample)["guard_deleted"]


def test_without_a_target_the_innermost_function_holding_the_change_is_taken(tmp_path):
    patched = MODULE.replace("+ 0", "+ 1")
    assert ppf.target_qualname(MODULE, patched, None) == "Settings.port"
    assert ppf.target_qualname(MODULE, patched, "service.settings.unused") == "unused"
    assert ppf.target_qualname(MODULE, MODULE.replace("import re", "import re, os"), None) is None
    _run(tmp_path, "black-1", "black", patched, RIGHT, target=None, report=False)
    sample = ppf.read_run(tmp_path / "results" / "black-1" / f"{COMMIT}.json", tmp_path)
    assert isinstance(sample, ppf.Sample) and sample.project == "black" and not sample.wrong


def test_unjudged_runs_foreign_projects_and_diffs_that_do_not_apply_are_left_out(tmp_path):
    _run(tmp_path, "luigi-1", "luigi", MODULE.replace("+ 0", "+ 1"), {"outcome": "not_fixed"})
    _run(tmp_path, "pandas-1", "pandas", MODULE.replace("+ 0", "+ 1"), WRONG)
    _run(
        tmp_path,
        "tornado-1",
        "tornado",
        MODULE.replace("+ 0", "+ 1"),
        {"outcome": "not_fixed", "withheld": "withheld_overfit"},
    )
    _run(tmp_path, "sanic-1", "sanic", MODULE.replace("+ 0", "+ 1"), RIGHT)
    (tmp_path / "bugs" / "sanic-1" / "buggy" / "service" / "settings.py").write_text(
        MODULE.replace("+ 0", "- 0")
    )
    samples, skipped = ppf.read_cache(tmp_path)
    assert [(s.project, s.wrong) for s in samples] == [("tornado", True)]  # a withheld overfit counts
    assert skipped == {"not judged (not_fixed)": 1, "not a project of the benchmark": 1, "ValueError": 1}


def test_newton_recovers_the_base_rate_and_a_strong_weight_on_a_separating_pattern(tmp_path):
    none = {p: False for p in PATTERNS}
    w = ppf.fit_logistic(ppf.design([none] * 4), [1.0, 1.0, 1.0, 0.0], l2=1.0)
    assert w[0] == pytest.approx(math.log(3), rel=1e-2) and w[1:] == [0.0] * len(PATTERNS)
    rows = ppf.design([{**none, "guard_deleted": True}] * 3 + [none] * 5)
    labels = [1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    w = ppf.fit_logistic(rows, labels, l2=0.5)
    # the penalised log-likelihood is stationary there: X^T(p - y) + Lambda w = 0
    for j, ridge in enumerate(ppf.penalties(len(w), 0.5)):
        residual = sum(
            (ppf.logistic(sum(a * b for a, b in zip(x, w, strict=True))) - y) * x[j]
            for x, y in zip(rows, labels, strict=True)
        )
        assert residual + ridge * w[j] == pytest.approx(0.0, abs=1e-9)
    assert w[1 + PATTERNS.index("guard_deleted")] > 0 > w[0]
    _synthetic(tmp_path)
    samples, skipped = ppf.read_cache(tmp_path)
    assert len(samples) == 24 and not skipped
    data, model = ppf.run(tmp_path, threshold=0.5, l2=1.0)
    assert data["evaluation"]["patterns"]["guard_deleted"] == {
        "fired": 12,
        "wrong": 12,
        "precision": 1.0,
        "precision_ci95": (0.757, 1.0),
    }
    assert model.weights["guard_deleted"] > ppf.PRIOR_WEIGHT, "the data raise it above its prior"
    assert all(model.weights[p] == pytest.approx(ppf.PRIOR_WEIGHT, abs=1e-6)
               for p in PATTERNS if p != "guard_deleted"), "a pattern the data never show keeps its prior"
    assert model.intercept < -1.0
    assert data["evaluation"]["in_sample"]["accuracy"] == 1.0
    cross = data["evaluation"]["cross_validated"]
    assert (cross["accuracy"], cross["precision"], cross["recall"], cross["folds"]) == (1.0, 1.0, 1.0, 4)
    assert model.cross_validated["accuracy"] == 1.0


def test_a_fold_never_trains_on_its_project():
    projects = ["black", "luigi", "black", "refactory-q1", "luigi", "black"]
    seen = []
    for project, train, held in ppf.folds(projects):
        seen.append(project)
        assert held and all(projects[i] == project for i in held)
        assert all(projects[i] != project for i in train)
        assert sorted(train + held) == list(range(len(projects)))
    assert seen == ["black", "luigi", "refactory-q1"]
    # a project whose labels contradict the others is mispredicted when held out, so it was not seen
    fires = {p: p == "condition_inverted" for p in PATTERNS}
    quiet = {p: False for p in PATTERNS}
    features = [fires, quiet] * 3 + [fires, quiet]
    wrong = [True, False] * 3 + [False, True]
    names = ["black"] * 2 + ["luigi"] * 2 + ["sanic"] * 2 + ["tornado"] * 2
    evaluation = ppf.evaluate(features, wrong, names, threshold=0.5, l2=1.0)
    assert evaluation["folds"]["tornado"]["trained_on"] == 6
    assert evaluation["folds"]["tornado"]["weights"]["condition_inverted"] > 1.0
    cross = evaluation["cross_validated"]
    assert (cross["tp"], cross["fp"], cross["fn"], cross["tn"]) == (3, 1, 1, 3)


def test_main_writes_the_report_and_adopts_a_model_that_loads(tmp_path):
    _synthetic(tmp_path / "cache")
    model_path = tmp_path / "model.json"
    code = ppf.main(["--cache", str(tmp_path / "cache"), "--out", str(tmp_path / "report"), "--adopt",
                     "--model", str(model_path)])  # fmt: skip
    assert code == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["patches"] == 24 and report["projects"]["refactory-q1"] == 6
    assert "| guard_deleted | 12 | 12 | 1.0 |" in (tmp_path / "report.md").read_text()
    adopted = load_pattern_model(model_path)
    assert adopted.weights["guard_deleted"] > 2.0 and "24 judged patches" in adopted.fitted_on
    assert adopted.threshold == load_pattern_model().threshold
    with pytest.raises(SystemExit, match="no judged patch"):
        ppf.main(["--cache", str(tmp_path / "empty"), "--out", str(tmp_path / "none")])

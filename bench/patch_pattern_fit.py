"""Fit the weights of the patterns of wrong patches (``equisa_core/validation/patch_patterns.py``) on
the real-bug repair benchmark's judged patches, with leave-one-project-out cross-validation.

    nice -n 19 uv run python -m bench.patch_pattern_fit [--cache DIR] [--l2 1.0] [--adopt]

Input: the runs ``bench.realrepair`` left in its cache (``<cache>/results/<case>/<commit>.json``,
beside them ``<commit>.report.json``, EQUISA's report, and ``<commit>.diff``). A run whose patch
was judged is one labelled patch: wrong when the judge found some test failing (outcome
``overfit``, or ``withheld_overfit`` for a ``plausible_only`` patch), right when every test passed
(``correct``, ``withheld_correct``); other runs (not fixed, errors) are left out. The diff is
applied with ``git apply`` (``bench.realrepair.judge.apply_diff``) to a copy of the bug's original
file, and the target function (the report's ``target``, else the innermost function holding every
changed line) is cut from both texts by qualname. The project is the BugsInPy project, or
``refactory-q<N>`` for Refactory's question N; only the benchmark's allowed projects are read. No
arcs are stored with the runs, so ``condition_inverted`` is read without them.

Fit: logistic regression of ``wrong`` on the patterns' presence, a maximum a posteriori estimate
under a Gaussian prior centred on the shipped prior (``PRIOR_WEIGHT`` per pattern,
``PRIOR_INTERCEPT``; precision ``--l2``): a pattern the benchmark shows seldom keeps about its prior
weight, one it shows often takes what the data say. One 0/1 feature per pattern (``PATTERNS``
order); Newton's method in plain Python: numpy and scipy are not in
the venv, and six parameters need neither. The weights are penalised by ``--l2``, the intercept by
``INTERCEPT_L2`` only (enough to keep it finite when a fold's labels are all one class). The
threshold of ``weighs_against`` is not fitted: ``--threshold``, by default the shipped model's.

Report, per pattern: the patches it fires on, its precision as a detector of wrong patches (wrong
/ fired) with a 95 % Wilson interval; and the accuracy, precision and recall of ``weighs_against``
in sample and cross-validated (each project held out in turn, fitted on the others). Results go to
``bench/results/patch_patterns_<date>.{json,md}``; ``--adopt`` writes the model fitted on everything
to ``equisa_core/validation/patch_patterns.json`` (``--model`` elsewhere).
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.realbugs import ALLOWED_PROJECTS
from bench.realrepair.judge import apply_diff
from bench.realrepair.report import wilson
from bench.repair_corpus import diff_files
from equisa_core.common.source_edit import find_function, function_source, list_functions
from equisa_core.errors import EquisaError
from equisa_core.validation.patch_patterns import PATTERNS, patch_patterns
from equisa_core.validation.pattern_model import (
    PATTERN_MODEL_FILE,
    PRIOR_INTERCEPT,
    PRIOR_WEIGHT,
    PatternModel,
    load_pattern_model,
    logistic,
)

REPO = Path(__file__).resolve().parents[1]
BENCH_CACHE = Path(os.environ.get("EQUISA_BENCH_CACHE", Path.home() / ".cache" / "equisa-bench"))
REALREPAIR_CACHE = BENCH_CACHE / "realrepair"
L2 = 1.0
#: The prior's mean, intercept first (``equisa_core.validation.pattern_model``): the fit is centred on it.
PRIOR_CENTRE = (PRIOR_INTERCEPT, *([PRIOR_WEIGHT] * len(PATTERNS)))
#: The intercept's own penalty: small, only there to keep it finite on one-class folds.
INTERCEPT_L2 = 1e-3
NEWTON_STEPS = 100
NEWTON_TOLERANCE = 1e-10
WRONG = frozenset({"overfit", "withheld_overfit"})
RIGHT = frozenset({"correct", "withheld_correct"})


# -------------------------------------------------------------------------------------------------
# Reading the runs


@dataclass(frozen=True)
class Sample:
    """One judged patch: its project, the target function before and after, and its label."""

    project: str
    run: str
    original: str
    patched: str
    first_line: int
    wrong: bool


def label_of(result: Mapping[str, Any]) -> bool | None:
    """True: the judge found the patch wrong; False: right; None: not a judged patch."""
    judged = {str(result.get("outcome")), str(result.get("withheld")), str(result.get("label"))}
    if judged & WRONG:
        return True
    if judged & RIGHT:
        return False
    return None


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def project_of(result: Mapping[str, Any], case: Mapping[str, Any]) -> str | None:
    """The BugsInPy project (allowed ones only), or ``refactory-q<N>``; None otherwise."""
    source = result.get("source") or case.get("source")
    if source == "refactory":
        question = result.get("question", case.get("question"))
        return f"refactory-q{question}" if question is not None else None
    project = result.get("project") or case.get("project")
    return project if project in ALLOWED_PROJECTS else None


def original_tree(result: Mapping[str, Any], case: Mapping[str, Any], cache: Path) -> Path:
    """Where the bug's original files are: the run's record, else the case's."""
    if result.get("original"):
        return Path(result["original"])
    if case.get("source") == "bugsinpy" and case.get("buggy"):
        return Path(case["buggy"])
    return cache / "bugs" / str(result["id"]) / "buggy"


def patched_text(original: str, relative: str, diff: str) -> str:
    """The file after ``git apply`` of ``diff`` on a scratch copy; raises ValueError with git's error."""
    with tempfile.TemporaryDirectory(prefix="patch_patterns_") as folder:
        tree = Path(folder) / "tree"
        target = tree / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(original)
        error = apply_diff(tree, diff)
        if error:
            raise ValueError(f"the diff does not apply: {error}")
        return target.read_text()


def changed_lines(before: str, after: str) -> list[int]:
    """The 1-based lines of ``before`` that ``after`` changes or deletes, or after which it inserts."""
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(), autojunk=False)
    lines: list[int] = []
    for tag, i1, i2, _j1, _j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            lines += range(i1 + 1, i2 + 1)
        elif tag == "insert":
            lines.append(max(i1, 1))
    return lines


def target_qualname(before: str, after: str, target: str | None) -> str | None:
    """The function the patch changes: the one the report's FQN ends with, else the innermost
    function holding every changed line."""
    functions = list_functions(before)
    if target:
        named = [f for f in functions if target == f.qualname or target.endswith("." + f.qualname)]
        if named:
            return max(named, key=lambda f: len(f.qualname)).qualname
    lines = changed_lines(before, after)
    if not lines:
        return None
    holding = [f for f in functions if f.start_line <= min(lines) and max(lines) <= f.end_line]
    return min(holding, key=lambda f: f.end_line - f.start_line).qualname if holding else None


def _diff_of(result_path: Path, result: Mapping[str, Any], report: Mapping[str, Any] | None) -> str:
    if report and report.get("diff"):
        return str(report["diff"])
    if result.get("diff"):
        return str(result["diff"])
    diff_path = result_path.with_suffix(".diff")
    return diff_path.read_text() if diff_path.exists() else ""


def read_run(result_path: Path, cache: Path) -> Sample | str:
    """One run as a labelled patch, or why it is left out."""
    result = _read_json(result_path)
    if result is None or "id" not in result:
        return "no readable result"
    wrong = label_of(result)
    if wrong is None:
        return f"not judged ({result.get('outcome')})"
    case = _read_json(cache / "bugs" / str(result["id"]) / "case.json") or {}
    project = project_of(result, case)
    if project is None:
        return "not a project of the benchmark"
    report = _read_json(result_path.with_name(result_path.stem + ".report.json"))
    diff = _diff_of(result_path, result, report)
    files = diff_files(diff)
    if len(files) != 1 or not files[0].endswith(".py"):
        return f"the diff changes {len(files)} files, not one Python file"
    try:
        before = (original_tree(result, case, cache) / files[0]).read_text()
        after = patched_text(before, files[0], diff)
        target = (report or {}).get("target") or result.get("target")
        qualname = target_qualname(before, after, target)
        if qualname is None:
            return "no one function holds the change"
        original = function_source(before, qualname)
        first_line = find_function(before, qualname).start_line
        patched = function_source(after, qualname)
    except (OSError, ValueError, EquisaError) as error:
        return f"{type(error).__name__}: {error}"[:200]
    return Sample(project, f"{result['id']}@{result_path.stem}", original, patched, first_line, wrong)


def read_cache(cache: Path) -> tuple[list[Sample], Counter[str]]:
    """Every judged patch in the cache, and how many runs were left out, by reason."""
    samples, skipped = [], Counter[str]()
    for path in sorted((cache / "results").glob("*/*.json")):
        if path.name.endswith(".report.json"):
            continue
        read = read_run(path, cache)
        if isinstance(read, Sample):
            samples.append(read)
        else:
            skipped[read.split(":")[0]] += 1
    return samples, skipped


def present(sample: Sample) -> dict[str, bool]:
    """Which patterns the patch shows (no arcs: the runs do not store them)."""
    try:
        found = {
            f.pattern for f in patch_patterns(sample.original, sample.patched, first_line=sample.first_line)
        }
    except EquisaError:
        found = set()
    return {p: p in found for p in PATTERNS}


# -------------------------------------------------------------------------------------------------
# The fit


def solve(matrix: Sequence[Sequence[float]], vector: Sequence[float]) -> list[float]:
    """x with A x = b, by Gaussian elimination with partial pivoting (A is positive definite here)."""
    n = len(vector)
    rows = [list(matrix[i]) + [vector[i]] for i in range(n)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(rows[r][col]))
        rows[col], rows[pivot] = rows[pivot], rows[col]
        for r in range(col + 1, n):
            factor = rows[r][col] / rows[col][col]
            for c in range(col, n + 1):
                rows[r][c] -= factor * rows[col][c]
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (rows[i][n] - sum(rows[i][c] * x[c] for c in range(i + 1, n))) / rows[i][i]
    return x


def penalties(size: int, l2: float) -> list[float]:
    """The ridge on each parameter: ``INTERCEPT_L2`` on the intercept, ``l2`` on every weight."""
    return [INTERCEPT_L2] + [l2] * (size - 1)


def newton_step(
    rows: Sequence[Sequence[float]], labels: Sequence[float], w: Sequence[float], l2: float,
    centre: Sequence[float] | None = None,
) -> list[float]:
    """H⁻¹ g of the penalised negative log-likelihood, with p_i = logistic(x_i · w):
    g = Xᵀ(p − y) + Λ(w − m), H = Xᵀ diag(p(1 − p)) X + Λ, Λ = diag(penalties), m = ``centre``
    (the prior's mean; zero when None)."""
    size = len(w)
    ridge = penalties(size, l2)
    m = list(centre) if centre is not None else [0.0] * size
    gradient = [ridge[j] * (w[j] - m[j]) for j in range(size)]
    hessian = [[ridge[j] if j == k else 0.0 for k in range(size)] for j in range(size)]
    for x, y in zip(rows, labels, strict=True):
        p = logistic(sum(a * b for a, b in zip(x, w, strict=True)))
        for j in range(size):
            gradient[j] += (p - y) * x[j]
            for k in range(size):
                hessian[j][k] += p * (1 - p) * x[j] * x[k]
    return solve(hessian, gradient)


def fit_logistic(rows: Sequence[Sequence[float]], labels: Sequence[float], l2: float = L2,
                 centre: Sequence[float] | None = None) -> list[float]:
    """argmin over w of −Σ [y log p + (1 − y) log(1 − p)] + ½ Σ λ_j (w_j − m_j)², by Newton's method
    from m = ``centre`` (zero when None): a Gaussian prior of mean m and precision λ on each weight."""
    w = list(centre) if centre is not None else [0.0] * (len(rows[0]) if rows else 1 + len(PATTERNS))
    for _ in range(NEWTON_STEPS):
        step = newton_step(rows, labels, w, l2, centre)
        w = [a - b for a, b in zip(w, step, strict=True)]
        if max(abs(s) for s in step) < NEWTON_TOLERANCE:
            break
    return w


def design(features: Sequence[Mapping[str, bool]]) -> list[list[float]]:
    """One row per patch: 1 (the intercept), then 1.0/0.0 per pattern in ``PATTERNS`` order."""
    return [[1.0] + [1.0 if f[p] else 0.0 for p in PATTERNS] for f in features]


def fit_model(
    features: Sequence[Mapping[str, bool]],
    wrong: Sequence[bool],
    threshold: float,
    l2: float = L2,
    fitted_on: str = "",
    cross_validated: Mapping[str, Any] | None = None,
) -> PatternModel:
    w = fit_logistic(design(features), [1.0 if y else 0.0 for y in wrong], l2, PRIOR_CENTRE)
    return PatternModel(
        intercept=round(w[0], 6),
        weights={p: round(v, 6) for p, v in zip(PATTERNS, w[1:], strict=True)},
        threshold=threshold,
        fitted_on=fitted_on,
        fitted_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        cross_validated=dict(cross_validated or {}),
    )


def weighs_against(model: PatternModel, features: Mapping[str, bool]) -> bool:
    """``model.weighs_against`` on the patterns present, without their findings' details."""
    z = model.intercept + sum(model.weights.get(p, 0.0) for p in PATTERNS if features[p])
    return logistic(z) >= model.threshold


def folds(projects: Sequence[str]) -> Iterator[tuple[str, list[int], list[int]]]:
    """(held-out project, training indices, held-out indices): one fold per project."""
    for project in sorted(set(projects)):
        yield (
            project,
            [i for i, p in enumerate(projects) if p != project],
            [i for i, p in enumerate(projects) if p == project],
        )


def scores(predicted: Sequence[bool], wrong: Sequence[bool]) -> dict[str, Any]:
    """accuracy = (tp + tn) / n, precision = tp / (tp + fp), recall = tp / (tp + fn); None for 0/0."""
    tp = sum(p and w for p, w in zip(predicted, wrong, strict=True))
    fp = sum(p and not w for p, w in zip(predicted, wrong, strict=True))
    fn = sum(w and not p for p, w in zip(predicted, wrong, strict=True))
    tn = len(wrong) - tp - fp - fn
    return {
        "n": len(wrong),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "accuracy": round((tp + tn) / len(wrong), 3) if wrong else None,
        "precision": round(tp / (tp + fp), 3) if tp + fp else None,
        "recall": round(tp / (tp + fn), 3) if tp + fn else None,
    }


def per_pattern(features: Sequence[Mapping[str, bool]], wrong: Sequence[bool]) -> dict[str, dict[str, Any]]:
    """Each pattern: patches it fires on, the wrong ones among them, precision = wrong / fired, its
    95 % Wilson interval."""
    out = {}
    for p in PATTERNS:
        fired = [w for f, w in zip(features, wrong, strict=True) if f[p]]
        out[p] = {
            "fired": len(fired),
            "wrong": sum(fired),
            "precision": round(sum(fired) / len(fired), 3) if fired else None,
            "precision_ci95": wilson(sum(fired), len(fired)),
        }
    return out


def evaluate(
    features: Sequence[Mapping[str, bool]],
    wrong: Sequence[bool],
    projects: Sequence[str],
    threshold: float,
    l2: float,
) -> dict[str, Any]:
    """In-sample and leave-one-project-out scores of ``weighs_against``, and each fold's weights."""
    everything = fit_model(features, wrong, threshold, l2)
    in_sample = [weighs_against(everything, f) for f in features]
    held: dict[int, bool] = {}
    fold_info = {}
    for project, train, test in folds(projects):
        if not train:
            fold_info[project] = {"held_out": len(test), "trained_on": 0, "skipped": "no other project"}
            continue
        model = fit_model([features[i] for i in train], [wrong[i] for i in train], threshold, l2)
        for i in test:
            held[i] = weighs_against(model, features[i])
        fold_info[project] = {
            "held_out": len(test),
            "trained_on": len(train),
            "intercept": model.intercept,
            "weights": dict(model.weights),
        }
    covered = sorted(held)
    return {
        "in_sample": scores(in_sample, wrong),
        "cross_validated": {
            **scores([held[i] for i in covered], [wrong[i] for i in covered]),
            "folds": len([f for f in fold_info.values() if "skipped" not in f]),
        },
        "patterns": per_pattern(features, wrong),
        "folds": fold_info,
    }


# -------------------------------------------------------------------------------------------------
# Report


def markdown(data: Mapping[str, Any]) -> str:
    model = data["model"]
    lines = [
        f"# Patterns of wrong patches ({data['date']})",
        "",
        f"Judged patches: {data['patches']} ({data['wrong']} wrong) from {len(data['projects'])} projects; "
        f"left out: {data['skipped'] or 'none'}. L2 {data['l2']}, threshold {model['threshold']}.",
        "",
        "| pattern | fires on | wrong | precision | 95 % interval | weight |",
        "|---|---|---|---|---|---|",
    ]
    for name, row in data["evaluation"]["patterns"].items():
        lines.append(
            f"| {name} | {row['fired']} | {row['wrong']} | {row['precision']} | {row['precision_ci95']} "
            f"| {model['weights'][name]:.3f} |"
        )
    lines += [
        "",
        f"Intercept {model['intercept']:.3f}.",
        "",
        "| weighs_against | n | accuracy | precision | recall |",
        "|---|---|---|---|---|",
    ]
    for order in ("in_sample", "cross_validated"):
        row = data["evaluation"][order]
        lines.append(f"| {order} | {row['n']} | {row['accuracy']} | {row['precision']} | {row['recall']} |")
    lines += ["", "| held out | patches | trained on |", "|---|---|---|"]
    for project, info in data["evaluation"]["folds"].items():
        lines.append(f"| {project} | {info['held_out']} | {info['trained_on']} |")
    return "\n".join(lines) + "\n"


def run(cache: Path, threshold: float, l2: float) -> tuple[dict[str, Any], PatternModel]:
    """Read, fit, evaluate: the report's data and the model fitted on everything."""
    samples, skipped = read_cache(cache)
    if not samples:
        raise SystemExit(f"no judged patch in {cache / 'results'} (left out: {dict(skipped)})")
    features = [present(s) for s in samples]
    wrong = [s.wrong for s in samples]
    projects = [s.project for s in samples]
    evaluation = evaluate(features, wrong, projects, threshold, l2)
    cv = evaluation["cross_validated"]
    description = (
        f"{len(samples)} judged patches of bench.realrepair ({sum(wrong)} wrong) from "
        f"{len(set(projects))} projects ({', '.join(sorted(set(projects)))}), L2 {l2}"
    )
    summary = {k: cv[k] for k in ("n", "folds", "accuracy", "precision", "recall")}
    model = fit_model(features, wrong, threshold, l2, fitted_on=description, cross_validated=summary)
    data = {
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "cache": str(cache),
        "patches": len(samples),
        "wrong": sum(wrong),
        "projects": dict(Counter(projects)),
        "skipped": dict(skipped),
        "l2": l2,
        "model": json.loads(model.model_dump_json()),
        "evaluation": evaluation,
        "runs": [{"run": s.run, "project": s.project, "wrong": s.wrong,
                  "patterns": [p for p in PATTERNS if f[p]]} for s, f in zip(samples, features, strict=True)],
    }  # fmt: skip
    return data, model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.patch_pattern_fit", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--cache", type=Path, default=REALREPAIR_CACHE, help="default %(default)s")
    parser.add_argument("--l2", type=float, default=L2, help="ridge on the weights (default %(default)s)")
    parser.add_argument(
        "--threshold", type=float, help="P(wrong) that weighs against (default: the shipped one)"
    )
    parser.add_argument("--out", type=Path, help="report stem (default bench/results/patch_patterns_<date>)")
    parser.add_argument("--adopt", action="store_true", help="write the fitted model to --model")
    parser.add_argument("--model", type=Path, default=PATTERN_MODEL_FILE, help="default %(default)s")
    args = parser.parse_args(argv)
    threshold = args.threshold if args.threshold is not None else load_pattern_model().threshold
    data, model = run(args.cache.expanduser(), threshold, args.l2)
    stem = args.out or REPO / "bench" / "results" / f"patch_patterns_{data['date']}"
    Path(f"{stem}.json").write_text(json.dumps(data, indent=1) + "\n")
    Path(f"{stem}.md").write_text(markdown(data))
    print(markdown(data))
    if args.adopt:
        args.model.write_text(model.model_dump_json(indent=1) + "\n")
        print(f"adopted: {args.model}", file=sys.stderr)
    return 0 if all(math.isfinite(w) for w in model.weights.values()) else 1


if __name__ == "__main__":
    sys.exit(main())

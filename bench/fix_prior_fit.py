"""Fit the repair's prior over fix patterns (``equisa_core/repair/fix_prior.py``) on real bugs,
with cross-validation by question and by project.

    nice -n 19 uv run python -m bench.fix_prior_fit [--per-question N] [--adopt]

Labels (every candidate of ``mutation.mutate_function`` and ``fix_space.fix_candidates``, all
operators, deduplicated by source, mutants first):

* **Refactory, by execution.** Wrong student programs that are *not* in the realrepair sample
  (each question's first ``SAMPLE_PREFIX`` files of ``refactory.sample_order``, or more when the
  realrepair cache prepared more, and any file the cache holds are left out), ``--per-question``
  of them. For each function the question's cases call, every candidate is run against *all* the
  question's cases in one bubblewrap sandbox per program (a fresh module per candidate, a 2 s
  alarm per case, ``call == literal``); it is correct when every case passes. Programs that do
  not define the called functions, or that already pass every case, are skipped.
* **BugsInPy, static.** The single-function bugs of black, fastapi, luigi, sanic, scrapy and
  tornado (``bench.realrepair.bugsinpy_single``): a candidate of the buggy function is correct
  when its AST equals the fixed function's.

Fit: ``P(pattern) = (correct + 1) / (candidates + 2)``, the default (unseen pattern) the pooled
``(all correct + 1) / (all candidates + 2)``, and ``edit_weight`` by grid search to minimise the
mean rank of the first correct candidate over the programs that have one. Validation: each
Refactory question and each BugsInPy project is held out in turn (fit on the rest, rank the
held-out programs). The baseline order is the candidates by edit size, ties in generation order.

Labels are cached in ``~/.cache/equisa-bench/fix_prior/``; results go to
``bench/results/fix_prior_<date>.{json,md}``; ``--adopt`` writes the prior fitted on everything to
``equisa_core/repair/fix_prior.json``.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from equisa_core.common.source_edit import find_function, function_source
from equisa_core.mutation.fix_context import fix_context
from equisa_core.mutation.mutants import Mutant, mutate_function
from equisa_core.repair.fix_prior import FIX_PRIOR_FILE, FixPrior, PatternCount, candidate_score
from equisa_core.repair.fix_space import fix_candidates

REPO = Path(__file__).resolve().parents[1]
BENCH_CACHE = Path(os.environ.get("EQUISA_BENCH_CACHE", Path.home() / ".cache" / "equisa-bench"))
CACHE = BENCH_CACHE / "fix_prior"
REALREPAIR_CACHE = BENCH_CACHE / "realrepair"
#: Each question's first files in the sample's order are the benchmark's (30 kept per question).
SAMPLE_PREFIX = 60
ALLOWED_PROJECTS = ("black", "fastapi", "luigi", "sanic", "scrapy", "tornado")
EDIT_WEIGHTS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0)
WITHIN = (10, 50, 200)
CASE_TIMEOUT_S = 2
STALL_S = 20  # no candidate finished for this long: the sandbox is killed and resumed after it
JOBS = 2
#: The orders compared; the ``_pooled`` ones are the diagnostic smoothing (see ``fit``).
ORDERS = ("baseline", "in_sample", "cross_validated", "in_sample_pooled", "cross_validated_pooled")
#: How many programs of each source were to be labelled (``--cached-only`` may report on fewer).
LABELLED_OF: Counter[str] = Counter()


# -------------------------------------------------------------------------------------------------
# Candidates


@dataclass(frozen=True)
class Labelled:
    """One candidate's pattern, edit size and label."""

    pattern: str
    edit_size: int
    correct: bool


def function_candidates(module_text: str, qualname: str) -> list[Mutant]:
    """Every candidate of one function: its mutants, then the wider fix space, deduplicated by source."""
    source = function_source(module_text, qualname)
    start = find_function(module_text, qualname).start_line
    made = [
        *mutate_function(source, qualname, start_line=start),
        *fix_candidates(source, qualname, start_line=start, context=fix_context(module_text, qualname)),
    ]
    seen: set[str] = set()
    out = []
    for mutant in made:
        if mutant.source not in seen:
            seen.add(mutant.source)
            out.append(mutant)
    return out


def pattern(mutant: Mutant) -> str:
    return mutant.pattern or mutant.operator


def with_function(module_text: str, qualname: str, new_source: str) -> str:
    """The module with one (top-level) function's lines replaced by ``new_source``."""
    where = find_function(module_text, qualname)
    lines = module_text.splitlines(keepends=True)
    indented = "".join(where.indent + line if line.strip() else line for line in new_source.splitlines(True))
    return "".join(lines[: where.start_line - 1]) + indented + "".join(lines[where.end_line :])


# -------------------------------------------------------------------------------------------------
# The sandboxed executor

RUNNER = r"""
import io, json, os, resource, signal, sys

class _Timeout(BaseException):
    pass

def _stop(signum, frame):
    raise _Timeout()

resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
signal.signal(signal.SIGALRM, _stop)
job = json.load(open("job.json"))
out = open("results.txt", "a", buffering=1)
devnull = open(os.devnull, "w")
sys.setrecursionlimit(3000)

def passes(text, cases, limit):
    namespace = {"__name__": "solution"}
    try:
        signal.setitimer(signal.ITIMER_REAL, limit)
        exec(compile(text, "solution.py", "exec"), namespace)
        signal.setitimer(signal.ITIMER_REAL, 0)
        for call, expected in cases:
            signal.setitimer(signal.ITIMER_REAL, limit)
            ok = bool(eval(call, namespace) == eval(expected, {}))
            signal.setitimer(signal.ITIMER_REAL, 0)
            if not ok:
                return False
        return True
    except BaseException:
        signal.setitimer(signal.ITIMER_REAL, 0)
        return False

for index in range(job["start"], len(job["programs"])):
    out.write("S %d\n" % index)
    sys.stdout, sys.stderr, sys.stdin = devnull, devnull, io.StringIO("")
    result = passes(job["programs"][index], job["cases"], job["limit"])
    sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    out.write("R %d %d\n" % (index, result))
"""


def _read_results(path: Path) -> tuple[dict[int, bool], int | None]:
    """Finished indices and their result, and the last index started."""
    done: dict[int, bool] = {}
    started = None
    if path.exists():
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "S":
                started = int(parts[1])
            elif len(parts) == 3 and parts[0] == "R":
                done[int(parts[1])] = parts[2] == "1"
    return done, started


def _run_sandbox(tree: Path, python: str) -> None:
    """One sandboxed runner process; killed when no candidate finishes for ``STALL_S``."""
    from bench.realrepair.judge import bwrap_prefix

    cmd = [*bwrap_prefix(tree, python), python, "-I", "-S", "runner.py"]
    process = subprocess.Popen(
        cmd, cwd=tree, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    results = tree / "results.txt"
    last_size, last_change = -1, time.monotonic()
    while process.poll() is None:
        time.sleep(0.1)
        size = results.stat().st_size if results.exists() else 0
        if size != last_size:
            last_size, last_change = size, time.monotonic()
        elif time.monotonic() - last_change > STALL_S:
            process.kill()
            process.wait()


def run_candidates(
    programs: Sequence[str], cases: Sequence[tuple[str, str]], python: str = sys.executable
) -> list[bool]:
    """Does each program pass every case (``call == expected``)? One bubblewrap sandbox, resumed
    after the candidate that crashed or hung it (that one counts as wrong)."""
    with tempfile.TemporaryDirectory(prefix="fix_prior_") as folder:
        tree = Path(folder)
        (tree / "runner.py").write_text(RUNNER)
        done: dict[int, bool] = {}
        start = 0
        while start < len(programs):
            job = {
                "programs": list(programs),
                "cases": [list(c) for c in cases],
                "start": start,
                "limit": CASE_TIMEOUT_S,
            }
            (tree / "job.json").write_text(json.dumps(job))
            (tree / "results.txt").unlink(missing_ok=True)
            _run_sandbox(tree, python)
            finished, started = _read_results(tree / "results.txt")
            done.update(finished)
            if len(done) >= len(programs) or all(i in done for i in range(start, len(programs))):
                break
            hung = started if started is not None and started not in finished else start
            done[hung] = False
            start = hung + 1
        return [done.get(i, False) for i in range(len(programs))]


# -------------------------------------------------------------------------------------------------
# Refactory


def excluded_prefix(question: int, realrepair_cache: Path = REALREPAIR_CACHE) -> int:
    """How many of the question's first files (sample order) belong to the benchmark's sample."""
    ranks = [SAMPLE_PREFIX - 1]
    for path in (realrepair_cache / "bugs").glob(f"refactory-wrong_{question}_*/case.json"):
        ranks.append(int(json.loads(path.read_text()).get("rank", 0)))
    return max(ranks) + 1


def refactory_jobs(per_question: int, realrepair_cache: Path = REALREPAIR_CACHE) -> list[tuple[int, Path]]:
    """(question, file) of the programs to label: after each question's sample, none of the cache's."""
    from bench.realrepair import refactory

    data = refactory.data_root(realrepair_cache)
    questions = [refactory.load_question(data, q) for q in refactory.QUESTIONS]
    order = refactory.sample_order(questions)
    in_sample = {p.name for p in (realrepair_cache / "bugs").glob("refactory-*")}
    jobs = []
    for question in questions:
        files = order[question.number][excluded_prefix(question.number, realrepair_cache) :]
        files = [f for f in files if f"refactory-{f.stem}" not in in_sample]
        jobs += [(question.number, f) for f in files[:per_question]]
    return jobs


def label_refactory(question_number: int, path: Path, realrepair_cache: Path = REALREPAIR_CACHE) -> dict:
    """One wrong program's candidates, each run against every case of its question."""
    from bench.realrepair import refactory

    question = refactory.load_question(refactory.data_root(realrepair_cache), question_number)
    record: dict = {"source": "refactory", "group": f"refactory-q{question_number}", "id": path.stem}
    program = refactory.program_text(question, path.read_text(errors="replace"))
    if not refactory.defines(program, question.functions):
        return {**record, "skipped": "does not parse or define the called functions", "candidates": []}
    cases = [(c.call, c.expected) for c in question.cases]
    texts, labels = [program], []
    for name in sorted(question.functions):
        try:
            made = function_candidates(program, name)
        except Exception as error:  # a function the generators cannot load: no candidates
            record.setdefault("errors", []).append(f"{name}: {type(error).__name__}: {error}"[:200])
            continue
        for mutant in made:
            texts.append(with_function(program, name, mutant.source))
            labels.append((pattern(mutant), mutant.edit_size))
    results = run_candidates(texts, cases)
    if results[0]:
        return {**record, "skipped": "passes every case", "candidates": []}
    return {**record, "candidates": [[p, s, ok] for (p, s), ok in zip(labels, results[1:], strict=True)]}


# -------------------------------------------------------------------------------------------------
# BugsInPy


def bugsinpy_jobs() -> list[tuple[str, int]]:
    """The single-function bugs of the allowed projects only."""
    from bench.realrepair.bugsinpy_single import single_function_bugs

    return [(p, n) for p, n in single_function_bugs() if p in ALLOWED_PROJECTS]


def label_bugsinpy(project: str, number: int) -> dict:
    """The buggy function's candidates; correct when the AST equals the fixed function's."""
    from bench.realrepair.bugsinpy_single import MANIFEST, REALBUGS_CACHE

    if project not in ALLOWED_PROJECTS:
        raise ValueError(f"project {project!r} is not among {ALLOWED_PROJECTS}")
    bug = next(
        b
        for b in json.loads(MANIFEST.read_text())["bugs"]
        if b["project"] == project and int(b["bug"]) == number
    )
    file, _, qualname = bug["truth"][0].partition("::")
    root = REALBUGS_CACHE / "bugs" / f"{project}-{number}"
    record: dict = {"source": "bugsinpy", "group": f"bugsinpy-{project}", "id": f"{project}-{number}"}
    buggy = (root / "buggy" / file).read_text()
    fixed = (root / "fixed" / file).read_text()
    try:
        truth = ast.dump(ast.parse(function_source(fixed, qualname)))
        made = function_candidates(buggy, qualname)
    except Exception as error:
        return {**record, "skipped": f"{type(error).__name__}: {error}"[:300], "candidates": []}
    return {
        **record,
        "candidates": [[pattern(m), m.edit_size, ast.dump(ast.parse(m.source)) == truth] for m in made],
    }


# -------------------------------------------------------------------------------------------------
# Labelling, cached


def _cached(path: Path, make: Callable[..., dict], *args: object) -> dict:
    if path.exists():
        return json.loads(path.read_text())
    record = make(*args)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record) + "\n")
    return record


def _refactory_task(item: tuple[int, str, str]) -> dict:
    question, file, cache = item
    path = Path(file)
    return _cached(Path(cache) / "refactory" / f"{path.stem}.json", label_refactory, question, path)


def _bugsinpy_task(item: tuple[str, int, str]) -> dict:
    project, number, cache = item
    return _cached(Path(cache) / "bugsinpy" / f"{project}-{number}.json", label_bugsinpy, project, number)


def label_all(per_question: int, cache: Path, jobs: int = JOBS, cached_only: bool = False) -> list[dict]:
    """Every record (Refactory, then BugsInPy), at most ``jobs`` processes, niced; ``cached_only``:
    the records already in the cache, nothing labelled."""
    items: list[tuple[Callable[[Any], dict], Any, Path]] = [
        (_refactory_task, (q, str(f), str(cache)), cache / "refactory" / f"{f.stem}.json")
        for q, f in refactory_jobs(per_question)
    ]
    items += [
        (_bugsinpy_task, (p, n, str(cache)), cache / "bugsinpy" / f"{p}-{n}.json") for p, n in bugsinpy_jobs()
    ]
    LABELLED_OF.update("refactory" if task is _refactory_task else "bugsinpy" for task, _, _ in items)
    if cached_only:
        return [json.loads(path.read_text()) for _, _, path in items if path.exists()]
    records: list[dict] = []
    with ProcessPoolExecutor(jobs, initializer=os.nice, initargs=(19,)) as pool:
        futures = [pool.submit(task, item) for task, item, _ in items]
        for index, future in enumerate(futures, 1):
            records.append(future.result())
            _progress(index, len(futures), records[-1])
    return records


def _progress(index: int, total: int, record: Mapping) -> None:
    found = sum(1 for c in record["candidates"] if c[2])
    state = record.get("skipped") or f"{len(record['candidates'])} candidates, {found} correct"
    print(f"[{index}/{total}] {record['source']} {record['id']}: {state}", file=sys.stderr, flush=True)


# -------------------------------------------------------------------------------------------------
# Fitting and ranking


def programs_of(records: Iterable[Mapping]) -> list[dict]:
    """The labelled programs (skipped ones left out), candidates as ``Labelled``."""
    return [
        {**r, "labelled": [Labelled(str(p), int(s), bool(ok)) for p, s, ok in r["candidates"]]}
        for r in records
        if not r.get("skipped")
    ]


def pattern_counts(programs: Iterable[Mapping]) -> dict[str, PatternCount]:
    total: Counter[str] = Counter()
    correct: Counter[str] = Counter()
    for program in programs:
        for candidate in program["labelled"]:
            total[candidate.pattern] += 1
            correct[candidate.pattern] += candidate.correct
    return {p: PatternCount(candidates=total[p], correct=correct[p]) for p in sorted(total)}


def first_correct_rank(candidates: Sequence[Labelled], key: Callable[[Labelled], float]) -> int | None:
    """The 1-based rank of the first correct candidate in ``sorted(candidates, key=key)`` (stable)."""
    ordered = sorted(range(len(candidates)), key=lambda i: key(candidates[i]))
    for rank, index in enumerate(ordered, 1):
        if candidates[index].correct:
            return rank
    return None


def baseline_rank(candidates: Sequence[Labelled]) -> int | None:
    return first_correct_rank(candidates, lambda c: c.edit_size)


def prior_rank(prior: FixPrior, candidates: Sequence[Labelled]) -> int | None:
    return first_correct_rank(candidates, lambda c: -candidate_score(prior, c.pattern, c.edit_size))


def fit(
    programs: Sequence[Mapping],
    weights: Sequence[float] = EDIT_WEIGHTS,
    fitted_on: str = "",
    smoothing: str = "add_one",
) -> FixPrior:
    """Add-one P(pattern), the pooled default, and the edit weight of the least mean first-correct rank.

    ``smoothing="pooled"`` (a diagnostic, not adopted): one correct fix in ``1 / pooled``
    pseudo-candidates, which pulls a rarely seen pattern to the pooled rate instead of towards 1/2."""
    counts = pattern_counts(programs)
    pooled = (sum(c.correct for c in counts.values()) + 1) / (sum(c.candidates for c in counts.values()) + 2)
    if smoothing == "pooled":
        probabilities = {p: (c.correct + 1) / (c.candidates + 1 / pooled) for p, c in counts.items()}
    else:
        probabilities = {p: (c.correct + 1) / (c.candidates + 2) for p, c in counts.items()}
    solvable = [p["labelled"] for p in programs if any(c.correct for c in p["labelled"])]
    best: tuple[float, float] | None = None
    for weight in weights:
        prior = FixPrior(probabilities=probabilities, default_probability=pooled, edit_weight=weight)
        ranks = [prior_rank(prior, c) or 0 for c in solvable]
        mean = statistics.fmean(ranks) if ranks else 0.0
        if best is None or mean < best[0] - 1e-12:
            best = (mean, weight)
    return FixPrior(
        probabilities=probabilities,
        default_probability=pooled,
        edit_weight=best[1] if best else 0.0,
        fitted_on=fitted_on,
        fitted_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        programs=dict(Counter(str(p["source"]) for p in programs)),
        counts=counts,
    )


def folds(programs: Sequence[Mapping]) -> Iterator[tuple[str, list[Mapping], list[Mapping]]]:
    """(held-out group, training programs, held-out programs): one fold per question or project."""
    for group in sorted({str(p["group"]) for p in programs}):
        yield (
            group,
            [p for p in programs if p["group"] != group],
            [p for p in programs if p["group"] == group],
        )


def summary(ranks: Sequence[int | None], programs: int) -> dict:
    found = [r for r in ranks if r is not None]
    return {
        "programs": programs,
        "with_correct": len(found),
        "median_rank": statistics.median(found) if found else None,
        "mean_rank": round(statistics.fmean(found), 2) if found else None,
        **{
            f"within_{k}": round(sum(r <= k for r in found) / len(found), 3) if found else None
            for k in WITHIN
        },
    }


def evaluate(programs: Sequence[Mapping]) -> dict:
    """Per source and overall: baseline, in-sample and cross-validated ranks, and the folds' weights."""
    ranks: dict[str, dict[str, int | None]] = {order: {} for order in ORDERS}
    for program in programs:
        ranks["baseline"][program["id"]] = baseline_rank(program["labelled"])
    fold_info: dict[str, dict] = {}
    for smoothing, suffix in (("add_one", ""), ("pooled", "_pooled")):
        everything = fit(programs, smoothing=smoothing)
        for program in programs:
            ranks["in_sample" + suffix][program["id"]] = prior_rank(everything, program["labelled"])
        for group, train, held_out in folds(programs):
            prior = fit(train, smoothing=smoothing)
            info = fold_info.setdefault(group, {"held_out": len(held_out), "trained_on": len(train)})
            info["edit_weight" + suffix] = prior.edit_weight
            for program in held_out:
                ranks["cross_validated" + suffix][program["id"]] = prior_rank(prior, program["labelled"])
    everything = fit(programs)
    out: dict = {"folds": fold_info, "edit_weight": everything.edit_weight}
    for source in ("refactory", "bugsinpy", "all"):
        mine = [p for p in programs if source == "all" or p["source"] == source]
        out[source] = {
            order: summary([by_id[p["id"]] for p in mine], len(mine)) for order, by_id in ranks.items()
        }
        out[source]["candidates"] = sum(len(p["labelled"]) for p in mine)
    return out


# -------------------------------------------------------------------------------------------------
# Report


def markdown(data: Mapping) -> str:
    lines = [
        f"# Fix-pattern prior ({data['date']})",
        "",
        f"Labelled: {data.get('labelled')}. Programs: {data['programs']}; skipped: {data['skipped']}. "
        "Edit weight (all folds): "
        f"{data['prior']['edit_weight']}; default P {data['prior']['default_probability']:.4f}.",
        "Ranks are of the first correct candidate, over the programs that have one; cross-validated: "
        "leave one Refactory question / BugsInPy project out.",
        "",
    ]
    for source in ("refactory", "bugsinpy", "all"):
        block = data["evaluation"][source]
        first = block["baseline"]
        lines += [
            f"## {source}: {first['with_correct']} of {first['programs']} programs have a correct candidate "
            f"({block['candidates']} candidates)",
            "",
            "| order | median rank | mean rank | within 10 | within 50 | within 200 |",
            "|---|---|---|---|---|---|",
        ]
        for order in ORDERS:
            row = block[order]
            lines.append(
                f"| {order} | {row['median_rank']} | {row['mean_rank']} | "
                + " | ".join(str(row[f"within_{k}"]) for k in WITHIN)
                + " |"
            )
        lines.append("")
    lines += [
        "## Patterns (fitted on everything)",
        "",
        "| pattern | P | correct | candidates |",
        "|---|---|---|---|",
    ]
    prior = data["prior"]
    for name, p in sorted(prior["probabilities"].items(), key=lambda kv: -kv[1]):
        count = prior["counts"][name]
        lines.append(f"| {name} | {p:.4f} | {count['correct']} | {count['candidates']} |")
    lines += [
        "",
        "## Folds",
        "",
        "| held out | programs | trained on | edit weight | edit weight (pooled) |",
        "|---|---|---|---|---|",
    ]
    for group, info in data["evaluation"]["folds"].items():
        lines.append(
            f"| {group} | {info['held_out']} | {info['trained_on']} | {info['edit_weight']} "
            f"| {info['edit_weight_pooled']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fix_prior_fit", description=__doc__.split("\n")[0])
    parser.add_argument("--per-question", type=int, default=60, help="Refactory programs per question (60)")
    parser.add_argument("--adopt", action="store_true", help="write equisa_core/repair/fix_prior.json")
    parser.add_argument("--cache", type=Path, default=CACHE, help="default %(default)s")
    parser.add_argument("--jobs", type=int, default=JOBS, choices=(1, 2))
    parser.add_argument("--out", type=Path, help="report stem (default bench/results/fix_prior_<date>)")
    parser.add_argument("--cached-only", action="store_true", help="report on the cached labels only")
    args = parser.parse_args(argv)
    records = label_all(args.per_question, args.cache.expanduser(), args.jobs, args.cached_only)
    programs = programs_of(records)
    description = (
        f"Refactory wrong programs outside the realrepair sample ({args.per_question} per question tried, "
        "labelled by running every case), BugsInPy single-function bugs of "
        f"{', '.join(ALLOWED_PROJECTS)} (labelled by the fixed function's AST)"
    )
    prior = fit(programs, fitted_on=description)
    date = time.strftime("%Y-%m-%d", time.gmtime())
    data = {
        "date": date,
        "programs": dict(Counter(p["source"] for p in programs)),
        "labelled": {s: f"{n} of {LABELLED_OF[s]}" for s, n in Counter(r["source"] for r in records).items()},
        "skipped": dict(Counter(f"{r['source']}: {r['skipped']}" for r in records if r.get("skipped"))),
        "prior": json.loads(prior.model_dump_json()),
        "evaluation": evaluate(programs),
    }
    stem = args.out or REPO / "bench" / "results" / f"fix_prior_{date}"
    Path(f"{stem}.json").write_text(json.dumps(data, indent=1) + "\n")
    Path(f"{stem}.md").write_text(markdown(data))
    print(markdown(data))
    if args.adopt:
        FIX_PRIOR_FILE.write_text(prior.model_dump_json(indent=1) + "\n")
        print(f"adopted: {FIX_PRIOR_FILE}", file=sys.stderr)
    return 0 if math.isfinite(prior.edit_weight) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Fault localization on a corpus of injected bugs in real packages: EQUISA against FauxPy.

Run from the repository root::

    uv run python bench/localization_corpus.py [--repeats N] [--packages boltons,tabulate]
                                               [--bugs boltons-03,tabulate-01] [--quick]
                                               [--configs fauxpy,tarantula,disambiguation,inspection]
                                               [--no-embedded] [--validate-only]
                                               [--out bench/results/localization_corpus.json]

What it does:

1. reads the corpus, ``bench/corpus/<package>.yaml``: per package the exact sdist (name, version,
   sha256), the source folder, the test paths, the test dependencies, and the bugs as data — the
   file, the ground-truth function's FQN (``module.Class.method``), an exact snippet of the
   original source and its replacement, the kind of bug;
2. downloads each sdist with ``pip download --no-deps --no-binary :all:`` into a cache outside the
   repository (``~/.cache/equisa-bench``, ``$EQUISA_BENCH_CACHE``), checks its sha256, unpacks it,
   and makes two venvs per package with ``uv`` (Python 3.11, EQUISA's pytest version and the
   package's test dependencies; one of them also holds FauxPy, so its pytest plugin never loads
   in EQUISA's runs); nothing is committed and the package itself is not installed: the suite
   imports the copy under test from the working directory;
3. checks the package's unmodified suite passes (plain pytest), then for each bug, on a fresh
   copy: the snippet occurs exactly once, lies inside the ground-truth function, and the edited
   suite has at least one failing test (plain pytest, ``-rfE``); a bug that fails a check is
   dropped and reported with the reason;
4. localizes every valid bug, sequentially, with each configuration:

   - ``fauxpy``: ``python -m pytest TESTS --src SRC --family sbfl --granularity function``
     (FauxPy 0.7.0, its Ochiai scores, ``Scores_Ochiai.csv``), on its own fresh copy;
   - ``tarantula``: ``equisa trace --json`` (the Tarantula prior alone);
   - ``disambiguation``: ``equisa localize --no-llm --max-inspections 0 --json`` (Discovery only:
     the suite amplified with generated tests that split ambiguity groups, no inspection);
   - ``inspection``: ``equisa localize --no-llm --json`` (Discovery, then deterministic
     inspection patches and Bayesian updates; ranked by confidence);

   every EQUISA call against one Prefect server started for the whole run (its own
   ``PREFECT_HOME`` in a temporary folder; stopped by its PID at the end), each with a fresh
   result storage and snapshot cache (no run is served from an earlier one's cache); the trace is
   also timed once with Prefect's embedded server, as a user without a server would run it
   (``--no-embedded`` skips that);
5. finds the ground truth in each ranking: FauxPy names a function ``path::name::first::last``
   (first = the ``def`` line), EQUISA by FQN; the rank is pessimistic about ties, identically for
   every tool: rank = the number of ranked functions whose score is >= the bug's score (floats
   equal within 1e-9 count as equal); EXAM = rank / number of functions the tool ranked; a bug
   missing from a ranking is a miss with EXAM 1;
6. prints per-case rows and a summary (Top-1/3/5, mean EXAM, total wall time, EQUISA / FauxPy
   ratios for Top-1 and wall time with PASS/FAIL against the targets: Top-1 >= 1.5x FauxPy's and
   less wall time than FauxPy), and writes everything to ``--out`` as JSON.

It asserts nothing: the exit status is 0 unless the benchmark itself could not run.
"""

from __future__ import annotations

import argparse
import ast
import csv
import hashlib
import json
import math
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
from tracing_overhead import environment as tracing_environment  # noqa: E402  (shared helpers)
from tracing_overhead import find_python, finish_report, run_text  # noqa: E402

CORPUS_DIR = BENCH / "corpus"
DEFAULT_OUT = REPO / "bench" / "results" / "localization_corpus.json"
DEFAULT_CACHE = Path(os.environ.get("EQUISA_BENCH_CACHE", Path.home() / ".cache" / "equisa-bench"))
FAUXPY_VERSION = "0.7.0"
PYTHON_VERSION = "3.11"
TOP_N = (1, 3, 5)
#: EQUISA's Top-1 count at least this times FauxPy's, and less total wall time than FauxPy.
TARGET_TOP1_RATIO = 1.5
TARGET_WALL_RATIO = 1.0
#: Minimum corpus size (the issue's requirement), checked by the corpus test.
MIN_BUGS, MIN_PACKAGES, MIN_BUGS_PER_PACKAGE = 30, 3, 8
#: Scores closer than this are one tie.
SCORE_TOLERANCE = 1e-9
#: Wall-clock limit of one tool run.
RUN_TIMEOUT_S = 1800.0

KINDS = {
    "off-by-one": "a bound, index or count one too high or too low",
    "wrong-comparison": "a comparison operator replaced by another (< for <=, == for !=, ...)",
    "swapped-arguments": "two arguments of a call, or two operands, in the wrong order",
    "wrong-boolean": "'and' for 'or' or the reverse",
    "missing-negation": "a 'not' dropped or added",
    "wrong-constant": "a literal replaced by another value",
    "wrong-variable": "a name replaced by another name in scope",
    "missing-guard": "a condition or early return removed",
    "wrong-return": "a function returns the wrong value",
    "wrong-arithmetic": "an arithmetic operator replaced by another",
}

#: Configurations, in the order they run for each case and appear in tables.
CONFIGS = ("fauxpy", "tarantula", "disambiguation", "inspection")
CONFIG_LABELS = {
    "fauxpy": "FauxPy SBFL Ochiai (function)",
    "tarantula": "EQUISA Tarantula prior (trace)",
    "disambiguation": "EQUISA + disambiguation (Discovery)",
    "inspection": "EQUISA + deterministic inspection",
}
EQUISA_CONFIGS = ("tarantula", "disambiguation", "inspection")
_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
_IDENTIFIER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class CorpusError(ValueError):
    """A corpus file that does not follow the schema."""


# -------------------------------------------------------------------------------------------------
# The corpus


@dataclass(frozen=True)
class Bug:
    """One injected bug: replace ``original`` (exactly once in ``file``) by ``replacement``."""

    id: str
    package: str
    kind: str
    file: str
    function: str
    original: str
    replacement: str
    note: str = ""

    @property
    def module(self) -> str:
        return module_of(self.file)

    @property
    def qualname(self) -> str:
        """The function's qualified name inside its module (``Class.method``)."""
        return self.function[len(self.module) + 1:]


@dataclass(frozen=True)
class Package:
    """A package from the registry, how its suite runs, and its bugs."""

    name: str
    version: str
    sdist: str
    sha256: str
    src: str
    tests: tuple[str, ...]
    requirements: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    fauxpy_args: tuple[str, ...] = ()
    bugs: tuple[Bug, ...] = ()
    corpus_file: str = ""

    @property
    def folder(self) -> str:
        """The folder the sdist unpacks to."""
        return self.sdist.removesuffix(".tar.gz").removesuffix(".zip")


_PACKAGE_KEYS = {"package": str, "version": str, "sdist": str, "sha256": str, "src": str, "tests": list,
                 "requirements": list, "exclude": list, "fauxpy_args": list, "bugs": list, "note": str}
_REQUIRED_PACKAGE_KEYS = {"package", "version", "sdist", "sha256", "src", "tests", "bugs"}
_BUG_KEYS = {"id": str, "kind": str, "file": str, "function": str, "original": str, "replacement": str,
             "note": str}
_REQUIRED_BUG_KEYS = {"id", "kind", "file", "function", "original", "replacement"}


def module_of(path: str) -> str:
    """``pkg/sub/mod.py`` -> ``pkg.sub.mod``; ``pkg/__init__.py`` -> ``pkg``."""
    parts = path.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _check_keys(where: str, data: object, types: dict, required: set) -> dict:
    if not isinstance(data, dict):
        raise CorpusError(f"{where}: expected a mapping, got {type(data).__name__}")
    unknown = sorted(set(data) - set(types))
    if unknown:
        raise CorpusError(f"{where}: unknown keys {unknown}")
    missing = sorted(required - set(data))
    if missing:
        raise CorpusError(f"{where}: missing keys {missing}")
    for key, value in data.items():
        if not isinstance(value, types[key]):
            raise CorpusError(f"{where}: {key} must be a {types[key].__name__}, got {type(value).__name__}")
        if isinstance(value, list) and not all(isinstance(v, str) for v in value) and key != "bugs":
            raise CorpusError(f"{where}: {key} must be a list of strings")
    return data


def parse_package(data: object, source: str) -> Package:
    """One corpus file's content (already parsed from YAML) as a ``Package``; ``CorpusError`` if bad."""
    data = _check_keys(source, data, _PACKAGE_KEYS, _REQUIRED_PACKAGE_KEYS)
    name = data["package"]
    bugs = []
    for index, raw in enumerate(data["bugs"]):
        where = f"{source}: bug #{index + 1}"
        raw = _check_keys(where, raw, _BUG_KEYS, _REQUIRED_BUG_KEYS)
        bug = Bug(package=name, **{k: v for k, v in raw.items()})
        problems = bug_problems(bug, data["src"])
        if problems:
            raise CorpusError(f"{where} ({bug.id}): {'; '.join(problems)}")
        bugs.append(bug)
    if not re.fullmatch(r"[0-9a-f]{64}", data["sha256"]):
        raise CorpusError(f"{source}: sha256 must be 64 lowercase hex digits")
    if not data["tests"]:
        raise CorpusError(f"{source}: tests must name at least one path")
    return Package(
        name=name, version=data["version"], sdist=data["sdist"], sha256=data["sha256"], src=data["src"],
        tests=tuple(data["tests"]), requirements=tuple(data.get("requirements", ())),
        exclude=tuple(data.get("exclude", ())), fauxpy_args=tuple(data.get("fauxpy_args", ())),
        bugs=tuple(bugs), corpus_file=source,
    )


def bug_problems(bug: Bug, src: str) -> list[str]:
    """What is wrong with one bug's declaration, without looking at the package's files."""
    problems = []
    if not _ID_RE.match(bug.id):
        problems.append(f"id {bug.id!r} is not lowercase letters, digits, '-', '_' or '.'")
    if bug.kind not in KINDS:
        problems.append(f"kind {bug.kind!r} is not one of {sorted(KINDS)}")
    if not bug.file.endswith(".py") or bug.file.startswith("/") or ".." in bug.file.split("/"):
        problems.append(f"file {bug.file!r} is not a relative .py path")
    elif not (bug.file + "/").startswith(src.rstrip("/") + "/"):
        problems.append(f"file {bug.file!r} is not under the package's src {src!r}")
    module = module_of(bug.file)
    if not bug.function.startswith(module + "."):
        problems.append(f"function {bug.function!r} does not start with its module {module!r}")
    else:
        parts = bug.qualname.split(".")
        if not parts or not all(_IDENTIFIER_RE.match(p) or p == "<locals>" for p in parts) \
                or parts[-1] == "<locals>" or parts[0] == "<locals>":
            problems.append(f"function {bug.function!r} is not module.Class.method")
    if not bug.original:
        problems.append("original is empty")
    if bug.original == bug.replacement:
        problems.append("replacement equals original")
    return problems


def load_corpus(folder: Path = CORPUS_DIR) -> list[Package]:
    """Every ``*.yaml`` in ``folder``, sorted by name; ``CorpusError`` on a bad file or a duplicate id."""
    import yaml

    packages = []
    for path in sorted(folder.glob("*.yaml")):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as error:
            raise CorpusError(f"{path.name}: not valid YAML: {error}") from None
        packages.append(parse_package(data, path.name))
    seen: dict[str, str] = {}
    for package in packages:
        for bug in package.bugs:
            if bug.id in seen:
                raise CorpusError(
                    f"bug id {bug.id!r} is declared in {seen[bug.id]} and {package.corpus_file}")
            seen[bug.id] = package.corpus_file
    return packages


def corpus_size_problems(packages: Sequence[Package]) -> list[str]:
    """Where the corpus is smaller than the issue asks (>= 30 bugs, >= 3 packages, >= 8 each)."""
    problems = []
    total = sum(len(p.bugs) for p in packages)
    if total < MIN_BUGS:
        problems.append(f"{total} bugs, fewer than {MIN_BUGS}")
    if len(packages) < MIN_PACKAGES:
        problems.append(f"{len(packages)} packages, fewer than {MIN_PACKAGES}")
    for package in packages:
        if len(package.bugs) < MIN_BUGS_PER_PACKAGE:
            problems.append(f"{package.name}: {len(package.bugs)} bugs, fewer than {MIN_BUGS_PER_PACKAGE}")
    return problems


# -------------------------------------------------------------------------------------------------
# Ranks


def pessimistic_rank(scores: Mapping[str, float], target: str) -> int | None:
    """The target's rank with ties counted against it; None when the target was not ranked.

        rank = |{ f : score[f] >= score[target] }|

    (scores within ``SCORE_TOLERANCE`` of the target's count as equal), so a bug tied with k other
    functions for first place has rank k + 1, whatever order a tool printed them in.
    """
    if target not in scores:
        return None
    mine = scores[target]
    return sum(1 for s in scores.values()
               if s >= mine or math.isclose(s, mine, rel_tol=0, abs_tol=SCORE_TOLERANCE))


def exam_score(rank: int | None, ranked: int) -> float:
    """EXAM = rank / functions ranked (the fraction a developer reads before the bug); 1 when missing."""
    if rank is None or ranked <= 0:
        return 1.0
    return rank / ranked


def summarize(ranks: Sequence[int | None], exams: Sequence[float], walls: Sequence[float | None]) -> dict:
    """Top-N counts and percentages, mean EXAM and wall times of one configuration over the cases."""
    cases = len(ranks)
    out: dict = {"cases": cases}
    for n in TOP_N:
        hits = sum(1 for r in ranks if r is not None and r <= n)
        out[f"top{n}"] = hits
        out[f"top{n}_pct"] = round(100.0 * hits / cases, 1) if cases else 0.0
    out["missing"] = sum(1 for r in ranks if r is None)
    out["mean_exam"] = round(statistics.fmean(exams), 4) if exams else None
    known = [w for w in walls if w is not None]
    out["wall_total_s"] = round(sum(known), 1)
    out["wall_median_s"] = round(statistics.median(known), 2) if known else None
    return out


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator; None when either is missing; inf for x / 0 with x > 0."""
    if numerator is None or denominator is None:
        return None
    if denominator == 0:
        return math.inf if numerator > 0 else None
    return numerator / denominator


# -------------------------------------------------------------------------------------------------
# Sources: the bug, the ground truth's place in the file


@dataclass(frozen=True)
class Span:
    """A function's place in a file: the ``def`` line, its last line and its decorators' lines."""

    name: str
    def_line: int
    end_line: int
    decorator_lines: tuple[int, ...] = ()

    @property
    def first_line(self) -> int:
        return min((self.def_line, *self.decorator_lines))


def function_spans(source: str) -> dict[str, Span]:
    """Every function of a module by qualified name (``Class.method``, ``f.<locals>.g``)."""
    spans: dict[str, Span] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                qualname = f"{prefix}{child.name}"
                spans.setdefault(qualname, Span(
                    name=child.name, def_line=child.lineno, end_line=child.end_lineno or child.lineno,
                    decorator_lines=tuple(d.lineno for d in child.decorator_list)))
                visit(child, f"{qualname}.<locals>.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return spans


def inject(source: str, bug: Bug) -> tuple[str | None, str | None]:
    """The source with the bug in it, or None and why it cannot be injected there."""
    count = source.count(bug.original)
    if count != 1:
        return None, f"the original snippet occurs {count} times in {bug.file} (must be exactly once)"
    spans = function_spans(source)
    span = spans.get(bug.qualname)
    if span is None:
        return None, f"{bug.file} has no function {bug.qualname}"
    start = source.index(bug.original)
    first = source.count("\n", 0, start) + 1
    last = first + bug.original.count("\n")
    if not (span.first_line <= first and last <= span.end_line):
        return None, (f"the snippet (lines {first}-{last}) is not inside {bug.qualname} "
                      f"(lines {span.first_line}-{span.end_line})")
    buggy = source.replace(bug.original, bug.replacement)
    try:
        after = function_spans(buggy)
    except SyntaxError as error:
        return None, f"the replacement does not parse: {error}"
    if bug.qualname not in after:
        return None, f"the replacement removes {bug.qualname}"
    return buggy, None


# -------------------------------------------------------------------------------------------------
# Rankings of each tool, keyed so the ground truth can be found


def fauxpy_scores(report_dir: Path, root: Path) -> dict[str, float]:
    """FauxPy's Ochiai scores keyed ``relative/path.py::name::def_line``."""
    scores: dict[str, float] = {}
    with open(report_dir / "Scores_Ochiai.csv", newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            path, name, first, _last = row["Entity"].rsplit("::", 3)
            try:
                rel = Path(path).resolve().relative_to(root.resolve()).as_posix()
            except ValueError:
                rel = path
            scores[f"{rel}::{name}::{int(first)}"] = float(row["Score"])
    return scores


def fauxpy_target(bug: Bug, span: Span, scores: Mapping[str, float]) -> str:
    """FauxPy's key for the ground truth: by file, name and ``def`` line (or a decorator's line)."""
    for line in (span.def_line, *span.decorator_lines):
        key = f"{bug.file}::{span.name}::{line}"
        if key in scores:
            return key
    return f"{bug.file}::{span.name}::{span.def_line}"


def equisa_trace_scores(report: Mapping) -> dict[str, float]:
    """``equisa trace`` JSON: Tarantula per FQN (the prior the Localization loop starts from)."""
    return {node["fqn"]: float(node["tarantula"]) for node in report["nodes"]}


def equisa_localize_scores(report: Mapping) -> dict[str, float]:
    """``equisa localize`` JSON: confidence per FQN."""
    return {node["fqn"]: float(node["confidence"]) for node in report["ranking"]}


def failing_in_trace(tests: Iterable[Mapping]) -> list[str]:
    return sorted(t["test_id"] for t in tests if t.get("outcome") in ("failed", "error"))


# -------------------------------------------------------------------------------------------------
# Packages: download, unpack, venvs


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_sdist(package: Package, base_python: Path, cache: Path) -> Path:
    """The sdist from the package registry (cached), with its sha256 checked."""
    folder = cache / "sdists"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / package.sdist
    if not (path.exists() and sha256_of(path) == package.sha256):
        done = subprocess.run(
            [str(base_python), "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
             "--disable-pip-version-check", "-d", str(folder), f"{package.name}=={package.version}"],
            capture_output=True, text=True, timeout=600,
        )
        if done.returncode != 0 or not path.exists():
            raise RuntimeError(f"pip download {package.name}=={package.version} failed: "
                               f"{(done.stderr or done.stdout).strip()[-500:]}")
    found = sha256_of(path)
    if found != package.sha256:
        raise RuntimeError(f"{path.name}: sha256 {found}, the corpus expects {package.sha256}")
    return path


def unpack(sdist: Path, package: Package, cache: Path) -> Path:
    """The unpacked sdist (cached; unpacked again when the marker says another archive)."""
    root = cache / "src" / package.folder
    marker = root / ".equisa-bench-sha256"
    if marker.exists() and marker.read_text() == package.sha256:
        return root
    shutil.rmtree(root, ignore_errors=True)
    with tempfile.TemporaryDirectory(dir=cache) as scratch:
        with tarfile.open(sdist) as archive:
            archive.extractall(scratch, filter="data")
        unpacked = Path(scratch) / package.folder
        if not unpacked.is_dir():
            raise RuntimeError(f"{sdist.name} does not unpack to {package.folder}/")
        root.parent.mkdir(parents=True, exist_ok=True)
        unpacked.rename(root)
    marker.write_text(package.sha256)
    return root


def make_venv(uv: str, base_python: Path, venv: Path, requirements: Sequence[str]) -> Path:
    """A venv holding ``requirements`` (cached by the list; bytecode compiled at install)."""
    spec = json.dumps({"python": str(base_python), "requirements": list(requirements)}, sort_keys=True)
    marker = venv / ".equisa-bench-spec"
    python = venv / "bin" / "python"
    if marker.exists() and marker.read_text() == spec and python.exists():
        return python
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([uv, "venv", "-q", "-p", str(base_python), str(venv)], check=True)
    subprocess.run([uv, "pip", "install", "-q", "--compile-bytecode", "--python", str(python), *requirements],
                   check=True)
    marker.write_text(spec)
    return python


@dataclass
class Prepared:
    """A package ready to run: its unpacked tree and its two interpreters."""

    package: Package
    root: Path
    python: Path
    fauxpy_python: Path | None
    baseline: dict = field(default_factory=dict)


def prepare_package(package: Package, uv: str, base_python: Path, cache: Path,
                    pytest_version: str, fauxpy: bool = True) -> Prepared:
    """The sdist fetched and unpacked, its venv for EQUISA and (``fauxpy``) the one holding FauxPy."""
    sdist = fetch_sdist(package, base_python, cache)
    root = unpack(sdist, package, cache)
    common = [f"pytest=={pytest_version}", *package.requirements]
    venvs = cache / "venvs"
    python = make_venv(uv, base_python, venvs / f"{package.folder}-equisa", common)
    fauxpy_python = make_venv(uv, base_python, venvs / f"{package.folder}-fauxpy",
                              [*common, f"fauxpy=={FAUXPY_VERSION}"]) if fauxpy else None
    return Prepared(package=package, root=root, python=python, fauxpy_python=fauxpy_python)


def copy_tree(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest, symlinks=True, ignore=shutil.ignore_patterns(
        ".equisa-bench-sha256", "__pycache__", ".pytest_cache"))
    return dest


# -------------------------------------------------------------------------------------------------
# Running the tools


def tool_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of every tool run: this one without model endpoints or Prefect settings,
    ``PYTHONHASHSEED=0``, ``TZ=UTC`` and no bytecode writes (as EQUISA's sandbox pins them)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "EQUISA_", "PREFECT_", "PYTEST_", "COV_CORE_"))
           and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PYTHONHASHSEED="0", TZ="UTC", PYTHONDONTWRITEBYTECODE="1")
    env.update(extra or {})
    return env


@dataclass
class Timed:
    wall_s: float
    returncode: int | None
    output: str


def timed_run(cmd: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float = RUN_TIMEOUT_S) -> Timed:
    """Run ``cmd`` in its own process group; wall time by ``time.perf_counter``; killed at ``timeout``."""
    started = time.perf_counter()
    process = subprocess.Popen(list(cmd), cwd=cwd, env=dict(env), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return Timed(time.perf_counter() - started, None, output.decode(errors="replace")[-4000:])
    return Timed(time.perf_counter() - started, process.returncode, output.decode(errors="replace")[-4000:])


_SUMMARY_LINE = re.compile(r"^(FAILED|ERROR) (.+?)(?: - .*)?$")


def plain_pytest(prepared: Prepared, tree: Path) -> dict:
    """Plain pytest on ``tree``: exit code, failing test ids, the summary line, wall time."""
    cmd = [str(prepared.python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=no", "-rfE",
           "--color=no", *prepared.package.tests]
    run = timed_run(cmd, tree, tool_env(), timeout=900)
    failing = []
    for line in run.output.splitlines():
        found = _SUMMARY_LINE.match(line.strip())
        if found:
            failing.append(found.group(2).strip())
    lines = [line for line in run.output.strip().splitlines() if line.strip()]
    return {"returncode": run.returncode, "failing": sorted(set(failing)),
            "summary": lines[-1].strip("= ") if lines else "", "wall_s": round(run.wall_s, 2)}


def run_fauxpy(prepared: Prepared, buggy: Path, workdir: Path) -> tuple[Timed, dict[str, float] | None, dict]:
    """FauxPy on its own copy of the buggy tree; its Ochiai scores (None when it wrote none)."""
    package = prepared.package
    parent = workdir / "fauxpy"
    parent.mkdir(parents=True)
    tree = copy_tree(buggy, parent / package.name)
    cmd = [str(prepared.fauxpy_python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--color=no",
           *package.tests, *package.fauxpy_args, "--src", package.src, "--family", "sbfl",
           "--granularity", "function"]
    if package.exclude:
        cmd += ["--exclude", "[" + ",".join(package.exclude) + "]"]
    run = timed_run(cmd, tree, tool_env())
    reports = sorted(parent.glob("FauxPyReport_*"))
    extra: dict = {}
    if not reports or not (reports[-1] / "Scores_Ochiai.csv").exists():
        return run, None, extra
    delta = reports[-1] / "deltaTime.json"
    if delta.exists():
        extra["fauxpy_reported_s"] = round(json.loads(delta.read_text())["DeltaTime"], 2)
    return run, fauxpy_scores(reports[-1], tree), extra


#: The packages of EQUISA that ``equisa`` runs from.
EQUISA_PACKAGES = ("equisa_core", "tasks", "flows", "cli")
#: Where ``python -m cli.main`` runs (its working directory comes first on ``sys.path``): the
#: repository by default, a frozen copy of HEAD once ``freeze_equisa`` has made one.
EQUISA_ROOT = REPO


def freeze_equisa(dest: Path) -> dict:
    """Copy EQUISA's packages as committed at HEAD into ``dest`` and compile them, so every case of a
    run measures the same code even while the working tree changes; say what was frozen."""
    global EQUISA_ROOT
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", "HEAD", *EQUISA_PACKAGES],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", *(str(dest / p) for p in EQUISA_PACKAGES)],
                   check=True)
    EQUISA_ROOT = dest
    digest = hashlib.sha256()
    for path in sorted(p for name in EQUISA_PACKAGES for p in (dest / name).rglob("*")
                       if p.is_file() and "__pycache__" not in p.parts):
        digest.update(path.relative_to(dest).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    dirty = run_text(["git", "-C", str(REPO), "status", "--porcelain", "--", *EQUISA_PACKAGES])
    return {"commit": run_text(["git", "-C", str(REPO), "rev-parse", "HEAD"]),
            "sources_sha256": digest.hexdigest(),
            "working_tree_differs": bool(dirty),
            "how": "git archive HEAD equisa_core tasks flows cli; python -m cli.main from that copy"}


def equisa_command(config: str, tree: Path, prepared: Prepared, out: Path,
                   extra: Sequence[str] = ()) -> list[str]:
    """The ``equisa`` call of one configuration (run with ``EQUISA_ROOT`` as working directory)."""
    base = [sys.executable, "-m", "cli.main"]
    common = [str(tree), "--python", str(prepared.python), "--json", str(out), *extra,
              "--tests", *prepared.package.tests]
    if config == "tarantula":
        return [*base, "trace", *common]
    if config == "disambiguation":
        return [*base, "localize", *common, "--no-llm", "--max-inspections", "0"]
    if config == "inspection":
        return [*base, "localize", *common, "--no-llm"]
    raise ValueError(config)


#: Extra ``equisa`` options for every call (``--equisa-option``), recorded in the report's settings.
EQUISA_EXTRA: list[str] = []


def run_equisa(config: str, prepared: Prepared, buggy: Path, workdir: Path, server_url: str | None,
               tag: str) -> tuple[Timed, dict | None]:
    """One EQUISA CLI call with a fresh result storage and snapshot cache; its JSON report."""
    private = workdir / f"equisa-{tag}"
    private.mkdir(parents=True)
    out = private / "report.json"
    extra = {
        "PREFECT_LOCAL_STORAGE_PATH": str(private / "prefect-storage"),
        "EQUISA_WORKSPACES": str(private / "workspaces"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    if server_url:
        extra["PREFECT_API_URL"] = server_url
        extra["PREFECT_HOME"] = str(private / "prefect-home")
    else:  # the embedded server: one warm home for the whole run, as on a user's machine
        extra["PREFECT_HOME"] = str(workdir.parent / "embedded-prefect-home")
    run = timed_run(equisa_command(config, buggy, prepared, out, EQUISA_EXTRA), EQUISA_ROOT, tool_env(extra))
    report = json.loads(out.read_text()) if out.exists() else None
    shutil.rmtree(private / "prefect-storage", ignore_errors=True)
    shutil.rmtree(private / "workspaces", ignore_errors=True)
    return run, report


# -------------------------------------------------------------------------------------------------
# The Prefect server shared by every EQUISA call


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PrefectServer:
    """``prefect server start`` on 127.0.0.1 with its own PREFECT_HOME; stopped by its PID."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/api"
        self.process: subprocess.Popen | None = None
        self.start_s: float | None = None

    def start(self, timeout: float = 240.0) -> None:
        prefect = Path(sys.executable).with_name("prefect")
        env = tool_env({"PREFECT_HOME": str(self.home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                        "PREFECT_UI_ENABLED": "false", "PREFECT_LOGGING_LEVEL": "WARNING"})
        self.home.mkdir(parents=True, exist_ok=True)
        log = open(self.home / "server.log", "wb")  # the child keeps its own descriptor
        started = time.perf_counter()
        self.process = subprocess.Popen(
            [str(prefect), "server", "start", "--host", "127.0.0.1", "--port", str(self.port)],
            env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
        log.close()
        while time.perf_counter() - started < timeout:
            if self.process.poll() is not None:
                raise RuntimeError(f"the Prefect server exited ({self.process.returncode}): "
                                   f"{(self.home / 'server.log').read_text(errors='replace')[-800:]}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as answer:
                    if answer.status == 200:
                        self.start_s = round(time.perf_counter() - started, 1)
                        return
            except OSError:
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the Prefect server did not answer within {timeout:g} s")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)  # its own process group: the server and its workers
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


# -------------------------------------------------------------------------------------------------
# One case


def run_case(prepared: Prepared, bug: Bug, workdir: Path, configs: Sequence[str], repeats: int,
             server_url: str | None, embedded: bool, validate_only: bool, console: Console) -> dict:
    """Inject one bug, check it, and localize it with every configuration."""
    case: dict = {"id": bug.id, "package": bug.package, "kind": bug.kind, "file": bug.file,
                  "function": bug.function, "note": bug.note}
    source = (prepared.root / bug.file).read_text(encoding="utf-8")
    buggy_source, problem = inject(source, bug)
    if problem:
        case["dropped"] = problem
        return case
    workdir.mkdir(parents=True)
    buggy = copy_tree(prepared.root, workdir / prepared.package.name)
    (buggy / bug.file).write_text(buggy_source, encoding="utf-8")
    span = function_spans(buggy_source)[bug.qualname]
    case["lines"] = [span.first_line, span.end_line]
    plain = plain_pytest(prepared, buggy)
    case["failing_tests"] = plain["failing"]
    case["pytest_summary"] = plain["summary"]
    if plain["returncode"] != 1 or not plain["failing"]:
        case["dropped"] = (f"the bug makes no test fail ({plain['summary']})" if plain["returncode"] == 0
                           else f"pytest did not finish normally (exit {plain['returncode']}, "
                                f"{len(plain['failing'])} failing reported): {plain['summary'][-200:]}")
        return case
    if validate_only:
        return case
    case["results"] = {}
    for config in configs:
        result: dict = {"wall_s": []}
        for repeat in range(repeats):
            if config == "fauxpy":
                run, scores, extra = run_fauxpy(prepared, buggy, workdir / f"r{repeat}")
                target = fauxpy_target(bug, span, scores) if scores else None
                report = None
            else:
                run, report = run_equisa(config, prepared, buggy, workdir, server_url, f"{config}-{repeat}")
                scores, extra, target = None, {}, bug.function
                if report is not None:
                    scores = (equisa_trace_scores(report) if config == "tarantula"
                              else equisa_localize_scores(report))
            result["wall_s"].append(round(run.wall_s, 2))
            if repeat == 0:
                result["returncode"] = run.returncode
                result.update(extra)
                if scores is None:
                    result["error"] = run.output.strip()[-600:] or f"exit {run.returncode}, no report"
                    result["rank"], result["ranked"] = None, 0
                else:
                    result["rank"] = pessimistic_rank(scores, target)
                    result["ranked"] = len(scores)
                    result["score"] = scores.get(target)
                    result["top5"] = [k for k, _ in sorted(scores.items(), key=lambda kv: -kv[1])[:5]]
                if report is not None:
                    result.update(equisa_details(config, report, plain["failing"]))
            elif scores is not None and pessimistic_rank(scores, target) != result.get("rank"):
                result.setdefault("rank_changed_in_repeats", []).append(pessimistic_rank(scores, target))
        result["exam"] = round(exam_score(result.get("rank"), result.get("ranked", 0)), 4)
        result["wall_median_s"] = round(statistics.median(result["wall_s"]), 2)
        case["results"][config] = result
        console.print(f"    {config:<15} rank {result['rank']!s:>4} / {result['ranked']:<4} "
                      f"{result['wall_median_s']:7.1f} s" + (f"  [red]{escape(result['error'][-200:])}[/]"
                                                             if "error" in result else ""),
                      highlight=False)
        if config == "tarantula" and embedded:
            run, report = run_equisa(config, prepared, buggy, workdir, None, "tarantula-embedded")
            result["wall_embedded_s"] = round(run.wall_s, 2)
            if report is None:
                result["embedded_error"] = run.output.strip()[-300:]
            console.print(f"    {'(embedded)':<15} {'':>17} {run.wall_s:7.1f} s", highlight=False)
    return case


def equisa_details(config: str, report: Mapping, plain_failing: Sequence[str]) -> dict:
    """What EQUISA saw besides the ranking: its failing tests and what its loops did."""
    if config == "tarantula":
        failing = failing_in_trace(report.get("tests", ()))
        return {"equisa_failing": len(failing), "failing_matches_pytest": failing == sorted(plain_failing),
                "flaky": len(report.get("flaky", ()))}
    inspections = report.get("inspections", ())
    details: dict = {
        "converged": report.get("converged"), "stopped_because": report.get("stopped_because"),
        "inspections": len(inspections), "tests": report.get("tests"),
        "inspected": [f"{i.get('target')}: {i.get('outcome')}" for i in inspections],
        "mutants_tried": sum(i.get("mutants_tried", 0) for i in inspections),
        "problems": list(report.get("problems", ()))[:5],
    }
    discovery = report.get("discovery")
    if isinstance(discovery, Mapping):
        details["discovery"] = {k: v for k, v in discovery.items() if isinstance(v, str | int | float | bool)}
        for when in ("before", "after"):
            sizes = list(discovery.get(f"group_sizes_{when}", ()))
            details["discovery"][f"groups_{when}"] = len(sizes)
            details["discovery"][f"largest_groups_{when}"] = sizes[:5]
    return details


# -------------------------------------------------------------------------------------------------
# Summary and tables


def build_summary(cases: Sequence[Mapping], configs: Sequence[str]) -> dict:
    """Per configuration: Top-N, EXAM, wall time; ratios of each EQUISA configuration to FauxPy."""
    measured = [c for c in cases if "results" in c]
    summary: dict = {"cases": len(measured), "configs": {}}
    for config in configs:
        rows = [c["results"][config] for c in measured if config in c["results"]]
        summary["configs"][config] = {
            "label": CONFIG_LABELS[config],
            **summarize([r.get("rank") for r in rows], [r["exam"] for r in rows],
                        [r.get("wall_median_s") for r in rows]),
        }
        embedded = [r["wall_embedded_s"] for r in rows if "wall_embedded_s" in r]
        if embedded:
            summary["configs"][config]["wall_total_embedded_s"] = round(sum(embedded), 1)
    summary["by_package"] = {}
    for package in sorted({c.get("package", "") for c in measured}):
        mine = [c for c in measured if c.get("package", "") == package]
        summary["by_package"][package] = {
            config: {k: v for k, v in summarize(
                [c["results"][config].get("rank") for c in mine if config in c["results"]],
                [c["results"][config]["exam"] for c in mine if config in c["results"]],
                [c["results"][config].get("wall_median_s") for c in mine if config in c["results"]],
            ).items() if k in ("cases", "top1", "top3", "top5", "mean_exam", "wall_total_s")}
            for config in configs
        }
    base = summary["configs"].get("fauxpy")
    if base:
        for config in configs:
            if config == "fauxpy":
                continue
            mine = summary["configs"][config]
            top1 = ratio(mine["top1"], base["top1"])
            wall = ratio(mine["wall_total_s"], base["wall_total_s"])
            mine["vs_fauxpy"] = {
                "top1_ratio": None if top1 is None else (round(top1, 2) if math.isfinite(top1) else "inf"),
                "wall_ratio": None if wall is None else round(wall, 3),
                "top1_target": TARGET_TOP1_RATIO,
                "top1_pass": top1 is not None and top1 >= TARGET_TOP1_RATIO,
                "faster_pass": wall is not None and wall < TARGET_WALL_RATIO,
            }
            if "wall_total_embedded_s" in mine:
                embedded = ratio(mine["wall_total_embedded_s"], base["wall_total_s"])
                mine["vs_fauxpy"]["wall_ratio_embedded"] = None if embedded is None else round(embedded, 3)
    return summary


def _rank_text(result: Mapping | None) -> str:
    if result is None:
        return ""
    if result.get("rank") is None:
        return "err" if "error" in result else "miss"
    return f"{result['rank']}/{result['ranked']}"


def print_table(console: Console, report: Mapping) -> None:
    configs = report["settings"]["configs"]
    cases = report["cases"]
    table = Table(title="Cases (rank = functions scored >= the bug / functions ranked; ties count "
                        "against it)", title_justify="left")
    for column in ("bug", "kind", "fail"):
        table.add_column(column, no_wrap=True)
    for config in configs:
        table.add_column(config, justify="right", no_wrap=True)
    for config in configs:
        table.add_column(f"{config[:6]} s", justify="right", no_wrap=True)
    for case in cases:
        if "results" not in case:
            table.add_row(case["id"], case["kind"], str(len(case.get("failing_tests", []))),
                          *(["—"] * len(configs) * 2))
            continue
        results = case["results"]
        table.add_row(
            case["id"], case["kind"], str(len(case["failing_tests"])),
            *(_rank_text(results.get(c)) for c in configs),
            *(f"{results[c]['wall_median_s']:.1f}" if c in results else "" for c in configs),
        )
    console.print(table)
    dropped = [c for c in cases if "dropped" in c]
    for case in dropped:
        console.print(f"[yellow]dropped[/] {case['id']}: {escape(case['dropped'])}", highlight=False)
    summary = report.get("summary")
    if not summary or not summary["cases"]:
        return
    table = Table(title=f"Summary over {summary['cases']} bugs (ties pessimistic)", title_justify="left")
    for column in ("configuration", "Top-1", "Top-3", "Top-5", "mean EXAM", "wall s", "Top-1 ×FauxPy",
                   "wall ×FauxPy", "target"):
        table.add_column(column, justify="left" if column == "configuration" else "right", no_wrap=True)
    for config in configs:
        row = summary["configs"][config]
        versus = row.get("vs_fauxpy", {})
        target = ""
        if versus:
            target = ("Top-1 " + ("[green]PASS[/]" if versus["top1_pass"] else "[red]FAIL[/]") + ", faster "
                      + ("[green]PASS[/]" if versus["faster_pass"] else "[red]FAIL[/]"))
        wall = f"{row['wall_total_s']:.0f}"
        if "wall_total_embedded_s" in row:
            wall += f" ({row['wall_total_embedded_s']:.0f} embedded)"
        table.add_row(
            row["label"], *(f"{row[f'top{n}']} ({row[f'top{n}_pct']:.0f}%)" for n in TOP_N),
            "" if row["mean_exam"] is None else f"{row['mean_exam']:.3f}", wall,
            "" if not versus else str(versus["top1_ratio"]),
            "" if not versus or versus["wall_ratio"] is None else f"{versus['wall_ratio']:.2f}", target,
        )
    console.print(table)
    table = Table(title="Per package: Top-1 / Top-3 / Top-5, mean EXAM, wall s", title_justify="left")
    table.add_column("package", no_wrap=True)
    for config in configs:
        table.add_column(config, justify="right", no_wrap=True)
    for package, rows in summary.get("by_package", {}).items():
        table.add_row(f"{package} ({rows[configs[0]]['cases']})", *(
            f"{rows[c]['top1']}/{rows[c]['top3']}/{rows[c]['top5']}  {rows[c]['mean_exam']:.3f}  "
            f"{rows[c]['wall_total_s']:.0f}" for c in configs))
    console.print(table)


# -------------------------------------------------------------------------------------------------
# Main


def select(packages: Sequence[Package], names: str | None, bug_ids: str | None, quick: bool) -> list[Package]:
    """The packages and bugs asked for (``--packages``, ``--bugs``, ``--quick``: the first bug of each)."""
    chosen = list(packages)
    if names:
        wanted = {n.strip() for n in names.split(",") if n.strip()}
        unknown = wanted - {p.name for p in packages}
        if unknown:
            raise SystemExit(f"unknown packages: {', '.join(sorted(unknown))}")
        chosen = [p for p in chosen if p.name in wanted]
    if bug_ids:
        wanted = {b.strip() for b in bug_ids.split(",") if b.strip()}
        unknown = wanted - {b.id for p in packages for b in p.bugs}
        if unknown:
            raise SystemExit(f"unknown bugs: {', '.join(sorted(unknown))}")
        chosen = [_with_bugs(p, [b for b in p.bugs if b.id in wanted]) for p in chosen]
    if quick:
        chosen = [_with_bugs(p, p.bugs[:1]) for p in chosen]
    return [p for p in chosen if p.bugs]


def _with_bugs(package: Package, bugs: Sequence[Bug]) -> Package:
    from dataclasses import replace

    return replace(package, bugs=tuple(bugs))


def environment(uv: str, base_python: Path) -> dict:
    import prefect

    return {
        **tracing_environment(uv),
        "prefect": prefect.__version__,
        "fauxpy": FAUXPY_VERSION,
        "suite_python": run_text([str(base_python), "-c",
                                  "import platform; print(platform.python_version())"]),
        "corpus_sha256": {p.name: sha256_of(p) for p in sorted(CORPUS_DIR.glob("*.yaml"))},
        "equisa_sources_sha256": {
            name: sha256_of(EQUISA_ROOT / name) for name in (
                "cli/main.py", "flows/trace.py", "flows/localize.py", "flows/discovery.py",
                "tasks/localization/steps.py", "tasks/localization/runners.py", "tasks/localization/inspections.py",
                "tasks/discovery/suite.py", "equisa_core/localization/machine.py",
                "equisa_core/localization/steps.py", "equisa_core/localization/bayes.py",
                "equisa_core/discovery/spectrum.py",
                "equisa_core/discovery/rules.py", "equisa_core/testgen/carving.py",
                "equisa_core/localization/inspection.py")
            if (EQUISA_ROOT / name).exists()
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=1, help="timed runs per tool and bug (default 1)")
    parser.add_argument("--packages", help="comma-separated package names (default: all)")
    parser.add_argument("--bugs", help="comma-separated bug ids (default: all)")
    parser.add_argument("--quick", action="store_true", help="smoke run: the first bug of each package")
    parser.add_argument("--configs", default=",".join(CONFIGS),
                        help=f"comma-separated configurations (default {','.join(CONFIGS)})")
    parser.add_argument("--no-embedded", action="store_true",
                        help="skip the extra trace timed with Prefect's embedded server")
    parser.add_argument("--equisa-option", action="append", default=[], metavar="ARG",
                        help="extra argument for every equisa call, e.g. --equisa-option=--test-timeout=60")
    parser.add_argument("--validate-only", action="store_true",
                        help="only check the corpus against the packages (snippets, failing tests)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                        help=f"downloads and venvs ({DEFAULT_CACHE})")
    parser.add_argument("--tmp-dir", default="/var/tmp",
                        help="where the per-case copies go (not /tmp: bwrap)")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"JSON results file (default {DEFAULT_OUT.relative_to(REPO)}; "
                             "with --validate-only: none unless given)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = sorted(set(configs) - set(CONFIGS))
    if unknown or args.repeats < 1:
        parser.error(f"unknown configurations {unknown}" if unknown else "--repeats must be at least 1")
    configs = [c for c in CONFIGS if c in configs]
    EQUISA_EXTRA[:] = args.equisa_option

    console = Console()
    if not console.is_terminal:  # piped or redirected: rich would fall back to 80 columns
        console = Console(width=190)
    started = time.perf_counter()
    uv = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    packages = select(load_corpus(), args.packages, args.bugs, args.quick)
    base_python, why = find_python(PYTHON_VERSION)
    if base_python is None:
        console.print(f"[red]no Python {PYTHON_VERSION}:[/] {why}")
        return 1
    from importlib.metadata import version

    pytest_version = version("pytest")
    tmp = Path(tempfile.mkdtemp(prefix="equisa-bench-corpus-", dir=args.tmp_dir))
    frozen = None
    if not args.validate_only and any(c in EQUISA_CONFIGS for c in configs):
        frozen = freeze_equisa(tmp / "equisa-src")
        if frozen["working_tree_differs"]:
            console.print("[yellow]note:[/] EQUISA's working tree differs from HEAD; HEAD is measured")
    report: dict = {
        "benchmark": "localization_corpus",
        "schema": 1,
        "environment": {**environment(uv, base_python), "equisa_frozen": frozen},
        "settings": {
            "configs": configs,
            "config_labels": {c: CONFIG_LABELS[c] for c in configs},
            "repeats": args.repeats,
            "quick": args.quick,
            "packages": [p.name for p in packages],
            "bugs_selected": sum(len(p.bugs) for p in packages),
            "pytest": pytest_version,
            "rank": "pessimistic: rank = number of ranked functions with score >= the bug's score "
                    f"(within {SCORE_TOLERANCE:g}); EXAM = rank / functions ranked by that tool; "
                    "missing = miss, EXAM 1",
            "scores": {"fauxpy": "Ochiai (Scores_Ochiai.csv)", "tarantula": "trace nodes[].tarantula",
                       "disambiguation": "localize ranking[].confidence",
                       "inspection": "localize ranking[].confidence"},
            "wall": "time.perf_counter around the whole CLI / pytest process; median over repeats",
            "equisa_extra_options": list(args.equisa_option),
            "targets": {"top1_ratio_min": TARGET_TOP1_RATIO, "wall_ratio_max": TARGET_WALL_RATIO},
        },
        "packages": {},
        "cases": [],
    }
    server: PrefectServer | None = None
    try:
        for package in packages:
            console.print(f"[bold]{package.name} {package.version}[/]: download, unpack, venvs")
            try:
                prepared = prepare_package(package, uv, base_python, args.cache, pytest_version)
            except (RuntimeError, subprocess.CalledProcessError) as error:
                report["packages"][package.name] = {"skipped": str(error)}
                console.print(f"[red]skipped {package.name}:[/] {error}")
                continue
            clean = copy_tree(prepared.root, tmp / f"baseline-{package.name}" / package.name)
            baseline = plain_pytest(prepared, clean)
            report["packages"][package.name] = {
                "version": package.version, "sdist": package.sdist, "sha256": package.sha256,
                "src": package.src,
                "tests": list(package.tests), "requirements": list(package.requirements),
                "baseline": baseline, "bugs_declared": len(package.bugs),
            }
            console.print(f"  unmodified suite: {baseline['summary']} ({baseline['wall_s']} s)",
                          highlight=False)
            if baseline["returncode"] != 0:
                report["packages"][package.name]["skipped"] = "the unmodified suite does not pass"
                console.print(f"[red]skipped {package.name}: the unmodified suite does not pass[/]")
                continue
            if (server is None and not args.validate_only
                    and any(c in EQUISA_CONFIGS for c in configs)):
                server = PrefectServer(tmp / "prefect-server-home")
                server.start()
                report["settings"]["prefect_server_start_s"] = server.start_s
                console.print(f"Prefect server at {server.url} (started in {server.start_s} s)")
                if not args.no_embedded and "tarantula" in configs:
                    # One untimed embedded-server run: the embedded home's database is created once,
                    # as on a user's machine, not inside the first timed case.
                    run_equisa("tarantula", prepared, clean, tmp / "warmup", None, "warmup")
            for bug in package.bugs:
                console.print(f"  [bold]{bug.id}[/] ({bug.kind}) {bug.function}", highlight=False)
                case = run_case(prepared, bug, tmp / bug.id, configs, args.repeats,
                                server.url if server else None, not args.no_embedded, args.validate_only,
                                console)
                if "dropped" in case:
                    console.print(f"    [yellow]dropped:[/] {escape(case['dropped'])}", highlight=False)
                else:
                    console.print(f"    {len(case['failing_tests'])} failing: "
                                  f"{escape(', '.join(case['failing_tests'][:4]))}"
                                  f"{' …' if len(case['failing_tests']) > 4 else ''}", highlight=False)
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
    if not args.validate_only:
        report["summary"] = build_summary(report["cases"], configs)
    _scrub_paths(report, {str(tmp): "$TMP", str(args.cache): "$CACHE", str(Path.home()): "~"})
    if args.validate_only and args.out is None:
        print_table(console, report)
        return 0
    finish_report(console, report, print_table, args.out or DEFAULT_OUT, started)
    return 0


def _scrub_paths(value: object, replacements: Mapping[str, str]) -> object:
    """Replace machine-specific folders in every string of the report (in place for containers)."""
    if isinstance(value, str):
        for old, new in replacements.items():
            value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        for key in list(value):
            value[key] = _scrub_paths(value[key], replacements)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            value[index] = _scrub_paths(item, replacements)
    return value


if __name__ == "__main__":
    sys.exit(main())

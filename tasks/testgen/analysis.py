"""Prefect tasks of the test-generation agent: static analysis, branch coverage and mutation score.

- ``analyse_test_module``: syntax (compile), ruff (``ruff check --isolated --select E4,E7,E9,F``
  on the text, through stdin), mypy where the repository configures it (``mypy.ini``,
  ``[tool.mypy]``, ``[mypy]`` in ``setup.cfg``) and installed, and cyclomatic complexity with
  radon's ``cc_visit``. Tools that cannot run are named in ``skipped_tools``, never silently.
- ``measure_coverage``: one sandboxed run of the selected tests with the coverage plugin
  (``equisa_core/testgen/coverage_plugin.py``, written into the run's copy, loaded with
  ``PYTEST_PLUGINS``): branch coverage of the target file and, per line, the tests that executed
  it. Cached like ``run-tests`` (the request's key plus the plugin's hash).
- ``score_mutants``: the mutants of the target file (``mutation_plan.select_mutants``), each group
  run against only the tests covering it through the existing ``run-mutants`` task (one process
  per group, fail-fast), with per-test timeouts relative to the baseline: ``TIMEOUT_FACTOR`` times
  the slowest covering test's baseline duration, at least ``MIN_TEST_TIMEOUT_S``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from prefect import task
from prefect.context import TaskRunContext
from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.models import SuiteTrace, TestOutcome
from equisa_core.common.probe_output import parse_probe_output
from equisa_core.errors import BudgetSpentError, CoverageUnavailableError, EquisaError
from equisa_core.testgen.mutation_plan import MutantVerdict, PlannedMutant, group_by_tests, mutation_score
from equisa_core.testgen.static import (
    StaticReport,
    count_tests,
    parse_mypy_output,
    parse_ruff_json,
    syntax_check,
)
from tasks.run.mutants import MutantRunReport
from tasks.sandbox.contract import WRITER_EXIT_GRACE_S, MutantSpec, RunRequest, SandboxLimits
from tasks.sandbox.run_tests import _infrastructure_only, backend_key, make_sandbox

__all__ = [
    "CoverageUnavailableError",
    "CoverageResult",
    "MutationResult",
    "PLUGIN_MODULE",
    "analyse_test_module",
    "search_request",
    "coverage_request",
    "execute_coverage",
    "measure_coverage",
    "score_mutants",
    "tidy_test_module",
]

PLUGIN_MODULE = "equisa_testgen_cov"
TIMEOUT_FACTOR = 10.0
MIN_TEST_TIMEOUT_S = 2.0
_TOOL_TIMEOUT_S = 60
#: ruff's classic defaults: syntax errors, statements, imports and pyflakes (undefined names, unused
#: imports, ...): errors, not style, so a carved module is not "downgraded" for its formatting.
_RUFF_RULES = "E4,E7,E9,F"


class CoverageResult(BaseModel):
    """Branch coverage of the target file by one run, and which test executed which line."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    target: str
    percent: float = Field(0.0, description="coverage.py's total with branches: (lines + branches) covered.")
    statements: int = 0
    covered_lines: int = 0
    branches: int = 0
    covered_branches: int = 0
    executed_lines: tuple[int, ...] = ()
    missing_lines: tuple[int, ...] = ()
    executed_branches: tuple[tuple[int, int], ...] = ()
    missing_branches: tuple[tuple[int, int], ...] = ()
    line_tests: dict[int, tuple[str, ...]] = Field(
        default_factory=dict, description="Line -> tests (node ids)."
    )
    trace: SuiteTrace
    error: str | None = None

    @property
    def branch_percent(self) -> float:
        """covered branches / branches * 100 (100 when the file has no branch)."""
        return round(100.0 * self.covered_branches / self.branches, 2) if self.branches else 100.0


class MutationResult(BaseModel):
    """The mutation score of a test selection on the target file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    score: float | None
    verdicts: tuple[MutantVerdict, ...] = ()
    runs: int = Field(0, description="Sandboxed processes started.")

    def count(self, status: str) -> int:
        """Mutants with ``status``."""
        return sum(1 for v in self.verdicts if v.status == status)


# --- static analysis --------------------------------------------------------------------------------


def _mypy_configured(repo: Path) -> bool:
    if (repo / "mypy.ini").is_file() or (repo / ".mypy.ini").is_file():
        return True
    for name, marker in (("pyproject.toml", "[tool.mypy]"), ("setup.cfg", "[mypy]")):
        path = repo / name
        if path.is_file() and marker in path.read_text(encoding="utf-8", errors="replace"):
            return True
    return False


def tidy_test_module(source: str, file_name: str = "test_generated.py") -> str:
    """``source`` as ruff leaves it with its default rules: the safe fixes applied (imports sorted,
    ``Decimal('6')`` as ``Decimal(6)``, ...), then formatted; ``source`` itself when ruff cannot
    run or refuses it (a generated module is never lost to its tidying)."""
    text = source
    for command in (["check", "--fix-only", "--exit-zero"], ["format"]):
        try:
            done = subprocess.run(
                [sys.executable, "-m", "ruff", *command, "--isolated", "--no-cache", "--stdin-filename",
                 file_name, "-"],
                input=text, capture_output=True, text=True, timeout=_TOOL_TIMEOUT_S, check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return text
        if done.returncode != 0 or not done.stdout.strip() or not syntax_check(done.stdout)[0]:
            return text
        text = done.stdout
    return text


@task(name="analyse-test-module", cache_policy=None, retries=0)
def analyse_test_module(source: str, repo: str, file_name: str = "test_generated.py") -> StaticReport:
    """Syntax, ruff, mypy (where configured) and radon complexity of one generated test module."""
    ok, error = syntax_check(source)
    tools: list[str] = ["compile"]
    skipped: dict[str, str] = {}
    if not ok:
        return StaticReport(syntax_ok=False, syntax_error=error, tools=tuple(tools))
    issues = []
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "ruff",
                "check",
                "--isolated",
                "--select",
                _RUFF_RULES,
                "--output-format",
                "json",
                "--stdin-filename",
                file_name,
                "-",
            ],
            input=source,
            capture_output=True,
            text=True,
            timeout=_TOOL_TIMEOUT_S,
            check=False,
        )
        issues += parse_ruff_json(done.stdout)
        tools.append("ruff")
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError) as problem:
        skipped["ruff"] = f"did not run: {problem}"
    root = Path(repo)
    if not _mypy_configured(root):
        skipped["mypy"] = "the repository does not configure mypy"
    else:
        try:
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "mypy",
                    "--no-error-summary",
                    "--ignore-missing-imports",
                    "-c",
                    source,
                ],
                cwd=root,
                capture_output=True,
                text=True,
                timeout=_TOOL_TIMEOUT_S,
                check=False,
            )
            if "No module named mypy" in done.stderr:
                skipped["mypy"] = "configured, but mypy is not installed with EQUISA"
            else:
                issues += parse_mypy_output(done.stdout)
                tools.append("mypy")
        except (OSError, subprocess.TimeoutExpired) as problem:
            skipped["mypy"] = f"did not run: {problem}"
    from radon.complexity import cc_visit  # radon: the standard McCabe implementation for Python

    blocks = [b for b in cc_visit(source) if b.name.startswith("test")]
    tools.append("radon")
    complexities = [b.complexity for b in blocks]
    return StaticReport(
        syntax_ok=True,
        lint_issues=tuple(issues),
        tools=tuple(tools),
        skipped_tools=skipped,
        test_count=count_tests(source),
        max_complexity=max(complexities, default=0),
        mean_complexity=round(sum(complexities) / len(complexities), 2) if complexities else 0.0,
    )


# --- coverage ---------------------------------------------------------------------------------------


def _plugin_text() -> str:
    """The coverage plugin's source, for the sandbox's copy. Found, not imported: the plugin imports
    pytest and coverage.py, which this process does not need (a fifth of a second at start-up)."""
    spec = importlib.util.find_spec("equisa_core.testgen.coverage_plugin")
    assert spec is not None and spec.origin is not None, "the coverage plugin ships with equisa_core"
    return Path(spec.origin).read_text(encoding="utf-8")


def _equisa_site_packages() -> str:
    """The folder holding EQUISA's coverage.py (lent to suites whose interpreter has none)."""
    import coverage

    return str(Path(coverage.__file__).resolve().parent.parent)


def coverage_request(
    base: RunRequest,
    overlay: Mapping[str, str],
    tests: Sequence[str],
    target: str,
    limits: SandboxLimits | None = None,
) -> RunRequest:
    """``base`` running ``tests`` with the coverage plugin measuring ``target`` (repository-relative)."""
    plugin = {"PYTEST_PLUGINS": PLUGIN_MODULE, "EQUISA_MEASURED_FILE": target}
    overlay = {**overlay, f"{PLUGIN_MODULE}.py": _plugin_text()}
    measured = _with_equisa_packages(base, overlay, tests, plugin, limits)
    return measured.model_copy(update={"exit_grace_s": WRITER_EXIT_GRACE_S})  # it writes at unconfigure


def search_request(base: RunRequest, overlay: Mapping[str, str], tests: Sequence[str]) -> RunRequest:
    """``base`` running the input search's driver ``tests`` (``equisa_core.testgen.input_search``): they
    measure coverage themselves, with coverage.py and Hypothesis from the suite, else from EQUISA's
    site-packages."""
    return _with_equisa_packages(base, overlay, tests, {}, None)


def _with_equisa_packages(base: RunRequest, overlay: Mapping[str, str], tests: Sequence[str],
                          env: Mapping[str, str], limits: SandboxLimits | None) -> RunRequest:
    """``base`` running ``tests`` (untraced, unrecorded, unsharded) with ``overlay`` and ``env``, and
    EQUISA's site-packages lent read-only (``EQUISA_COVERAGE_PATH``) for what the suite lacks."""
    packages = _equisa_site_packages()
    return base.model_copy(
        update={
            "overlay": dict(overlay),
            "tests": tuple(tests),
            "only": None,
            "trace": False,
            "env": {**base.env, **env, "EQUISA_COVERAGE_PATH": packages},
            "lent": (packages,),
            "limits": limits or base.limits,
            "shard": None,
            "record": (),
            "mutants": (),
        }
    )


def execute_coverage(
    request: RunRequest, backend: str = "local", docker_image: str | None = None
) -> CoverageResult:
    """Run ``request`` (from ``coverage_request``) once in a sandbox and read the coverage record."""
    run = make_sandbox(backend, docker_image).run(request)
    target = request.env["EQUISA_MEASURED_FILE"]
    lines = run.probe_output.splitlines()
    try:
        trace = parse_probe_output(lines)
    except EquisaError:
        trace = SuiteTrace(python_version="", backend="off", backend_reason="the probe wrote nothing")
    record = _coverage_record(lines)
    if record is None:
        tail = run.log_tail.strip().splitlines()[-1:] or ["no output"]
        return CoverageResult(
            target=target, trace=trace, error=f"no coverage record; pytest said: {tail[0][:300]}"
        )
    if record.get("report") is None:
        error = record.get("error") or "no coverage data"
        if "cannot be imported" in error:
            raise CoverageUnavailableError(error)
        return CoverageResult(target=target, trace=trace, error=error)
    files = record["report"]
    data = next((d for name, d in files.items() if name == target or name.endswith("/" + target)), None)
    if data is None:
        return CoverageResult(target=target, trace=trace, error=f"{target} was never imported by the tests")
    return _coverage_of_file(target, data, trace)


def _coverage_record(lines: Sequence[str]) -> dict[str, Any] | None:
    """The plugin's last ``testgen-coverage`` record in the probe's output; None when there is none."""
    for line in reversed(lines):
        if '"testgen-coverage"' in line:
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return None


def _coverage_of_file(target: str, data: dict[str, Any], trace: SuiteTrace) -> CoverageResult:
    """The coverage result from coverage.py's JSON entry of the target file."""
    summary = data.get("summary") or {}
    line_tests = {
        int(line): tuple(sorted(c for c in contexts if c))
        for line, contexts in (data.get("contexts") or {}).items()
    }
    return CoverageResult(
        target=target,
        percent=round(float(summary.get("percent_covered", 0.0)), 2),
        statements=summary.get("num_statements", 0),
        covered_lines=summary.get("covered_lines", 0),
        branches=summary.get("num_branches", 0),
        covered_branches=summary.get("covered_branches", 0),
        executed_lines=tuple(data.get("executed_lines") or ()),
        missing_lines=tuple(data.get("missing_lines") or ()),
        executed_branches=tuple((int(a), int(b)) for a, b in data.get("executed_branches") or ()),
        missing_branches=tuple((int(a), int(b)) for a, b in data.get("missing_branches") or ()),
        line_tests={line: tests for line, tests in line_tests.items() if tests},
        trace=trace,
    )


def _coverage_cache_key(context: TaskRunContext, parameters: dict[str, Any]) -> str:
    request: RunRequest = parameters["request"]
    plugin = hashlib.sha256(_plugin_text().encode()).hexdigest()[:16]
    backend = backend_key(parameters.get("backend", "local"), parameters.get("docker_image"))
    return f"measure-coverage-{plugin}-" + request.cache_key(
        backend, parameters.get("interpreter_version", "")
    )


@task(
    name="measure-coverage",
    cache_key_fn=_coverage_cache_key,
    cache_expiration=timedelta(days=30),
    persist_result=True,
    retries=2,
    retry_delay_seconds=[2, 10],
    retry_condition_fn=_infrastructure_only,
)
def measure_coverage(
    request: RunRequest,
    backend: str = "local",
    interpreter_version: str = "",
    docker_image: str | None = None,
) -> CoverageResult:
    """Branch coverage of the target file by the request's tests, per-line tests included."""
    return execute_coverage(request, backend, docker_image)


# --- mutation score -----------------------------------------------------------------------------------


def _limits(base: SandboxLimits, durations: Sequence[float], mutants: int) -> SandboxLimits:
    """Limits of one mutant group: per test, TIMEOUT_FACTOR x the slowest baseline duration (at least
    MIN_TEST_TIMEOUT_S); the wall clock covers every round (never above the base's)."""
    slowest = max(durations, default=0.0)
    per_test = max(MIN_TEST_TIMEOUT_S, TIMEOUT_FACTOR * slowest)
    wall = 60.0 + (mutants + 1) * max(sum(durations), 0.05) * TIMEOUT_FACTOR
    return base.model_copy(update={"test_timeout_s": per_test, "wall_clock_s": min(wall, base.wall_clock_s)})


def _verdict(mutant: PlannedMutant, report: MutantRunReport | None, reason: str | None) -> MutantVerdict:
    common = {"id": mutant.id, "fqn": mutant.fqn, "line": mutant.line, "description": mutant.description}
    if report is None:
        return MutantVerdict(**common, status="not_run", killed_by=reason)
    result = report.mutants.get(mutant.id)
    if result is None or result.status == "not_run":
        return MutantVerdict(**common, status="not_run", killed_by=result.reason if result else reason)
    if result.status == "unswappable":
        return MutantVerdict(**common, status="unswappable", killed_by=result.reason)
    if result.status in ("timeout", "crashed"):
        return MutantVerdict(**common, status="killed", killed_by=result.status)
    for test, outcome in result.outcomes.items():
        if report.original.get(test) is TestOutcome.PASSED and outcome in (
            TestOutcome.FAILED,
            TestOutcome.ERROR,
        ):
            return MutantVerdict(**common, status="killed", killed_by=test)
    return MutantVerdict(**common, status="survived")


def score_mutants(
    base: RunRequest,
    overlay: Mapping[str, str],
    mutants: Sequence[PlannedMutant],
    durations: Mapping[str, float],
    backend: str = "local",
    docker_image: str | None = None,
    interpreter_version: str = "",
) -> MutationResult:
    """Run each covered mutant against only its covering tests (module docstring) and score them."""
    from tasks.run.mutants import run_mutants

    verdicts: dict[str, MutantVerdict] = {}
    for mutant in mutants:
        if not mutant.tests:
            verdicts[mutant.id] = MutantVerdict(
                id=mutant.id,
                fqn=mutant.fqn,
                line=mutant.line,
                description=mutant.description,
                status="not_covered",
            )
    groups = group_by_tests(mutants)
    files = sorted({t.split("::", 1)[0] for t in {t for key in groups for t in key}})
    futures = []
    for tests, members in groups.items():
        specs = tuple(MutantSpec(id=m.id, fqn=m.fqn, file=m.file, source=m.source) for m in members)
        request = base.model_copy(
            update={
                "overlay": dict(overlay),
                "tests": tuple(sorted({t.split("::", 1)[0] for t in tests})) or tuple(files),
                "only": tests,
                "trace": False,
                "mutants": specs,
                "mutants_fail_fast": True,
                "shard": None,
                "record": (),
                "limits": _limits(base.limits, [durations.get(t, 0.0) for t in tests], len(members)),
            }
        )
        futures.append(
            (
                members,
                run_mutants.submit(
                    request,
                    backend=backend,
                    interpreter_version=interpreter_version,
                    docker_image=docker_image,
                ),
            )
        )
    for members, future in futures:
        try:
            report, reason = future.result(), None
        except BudgetSpentError:
            raise  # cut at the run's deadline: the driver stops its loop
        except EquisaError as error:
            report, reason = None, error.args[0] if error.args else type(error).__name__
        for mutant in members:
            verdicts[mutant.id] = _verdict(mutant, report, reason)
    ordered = tuple(verdicts[m.id] for m in mutants)
    return MutationResult(score=mutation_score(ordered), verdicts=ordered, runs=len(groups))

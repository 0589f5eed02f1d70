"""Issue 49's first "Done means" bullet: generated tests on modules that EQUISA has never seen.

Run from the repository root::

    uv run python bench/testgen_unseen.py [--prepare] [--modules roman,heapdict] [--out-dir bench/results]

The modules, their smoke tests and their hand-made mutants are in ``bench/corpus/testgen_unseen.toml``:
small pure-Python modules of PyPI projects that no other benchmark and no test of this repository uses,
each sdist pinned by version and sha256 (``--prepare`` fetches, checks and unpacks them into
``~/.cache/equisa-bench/src`` and makes their venvs, with ``localization_corpus.prepare_package``, as
``testgen_coverage.py --prepare`` does). For each module, as a new user would (the issue's setting):

1. the data is checked: each mutant's replacement occurs exactly once in the module, and its check
   (a short script) passes on the original and fails on the mutant, so no mutant is equivalent; whether
   the smoke test alone kills it is recorded too;
2. a temporary copy of the project without its own tests, holding one smoke test (one call), is given
   to ``uv run equisa testgen COPY --target FILE --no-llm`` as a whole process, with the command's
   defaults (its own history and artifact folders, so no other run's DuckDB file is touched, and
   ``--no-cache``: the sandboxed runs of a previous bench run of the same copy are cached otherwise);
   its wall time is the tool's;
3. the module it wrote is measured in the sandbox the way ``testgen_coverage.py`` measures
   (``tasks.testgen.setup.measure_tests``): the module's branch coverage; then each hand-made mutant is
   written over the module and the generated tests run again (``tasks.testgen.measure.hash_seed_failures``,
   under the sandbox's pinned hash seed): a test that passed on the original and fails on the mutant
   kills it;
4. the misuse tests are counted (``raises_checks``): a ``pytest.raises`` of ``TypeError``,
   ``AttributeError`` or ``ValueError`` (what an ill-typed input raises) that the called members do not
   raise on purpose (``equisa_core.testgen.raised_on_purpose``, widened to the module's functions they
   reference without calling: a dispatch table, a ``functools.partial``).

It writes ``<out-dir>/testgen_unseen_<date>_<commit>.json`` and ``.md``: per module the branch
coverage, the mutants killed with the survivors named, the misuse tests and the wall time, then the
totals against the bar (at least 90 % branch coverage on each module, every mutant killed, no misuse
test). The exit status is 0 unless the benchmark itself cannot run (2: missing sources, bad data).
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import traceback
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))

DATA = BENCH / "corpus" / "testgen_unseen.toml"
SMOKE_PATH = "tests/test_smoke.py"
COVERAGE_BAR = 90.0
#: What an ill-typed input raises (``merge("0rt")``: a text where pairs are unpacked); a test expecting
#: one of these that the function does not raise on purpose is a misuse test (issue 49).
ILL_TYPED_ERRORS = frozenset({"TypeError", "AttributeError", "ValueError"})
CHECK_TIMEOUT_S = 30
CLI_TIMEOUT_S = 3600


class DataError(Exception):
    """The data file is wrong: a replacement that does not apply once, an equivalent mutant."""


@dataclass(frozen=True)
class Mutant:
    """A hand-made edit of the module: ``old`` replaced by ``new``; ``check`` tells it apart."""

    id: str
    kind: str
    old: str
    new: str
    check: str


@dataclass(frozen=True)
class UnseenModule:
    """One module under test: its pinned sdist, the file, its smoke test and its mutants."""

    id: str
    package: str
    version: str
    sdist: str
    sha256: str
    target: str
    import_root: str
    drop: tuple[str, ...]
    smoke: str
    mutants: tuple[Mutant, ...]

    @property
    def folder(self) -> str:
        """The folder the sdist unpacks to."""
        return self.sdist.removesuffix(".tar.gz")

    def package_spec(self) -> Any:
        """The sdist as ``localization_corpus.Package``, for its fetch, unpack and venv code."""
        from localization_corpus import Package

        return Package(name=self.package, version=self.version, sdist=self.sdist, sha256=self.sha256,
                       src=self.import_root, tests=(SMOKE_PATH,))


def load_modules(path: Path = DATA) -> list[UnseenModule]:
    """The modules of the data file, in its order; ``DataError`` on a missing key or a duplicate id."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    modules = []
    for entry in data.get("module", []):
        try:
            mutants = tuple(Mutant(id=m["id"], kind=m["kind"], old=m["old"], new=m["new"], check=m["check"])
                            for m in entry.get("mutant", []))
            modules.append(UnseenModule(
                id=entry["id"], package=entry["package"], version=entry["version"], sdist=entry["sdist"],
                sha256=entry["sha256"], target=entry["target"], import_root=entry["import_root"],
                drop=tuple(entry["drop"]), smoke=entry["smoke"], mutants=mutants,
            ))
        except KeyError as missing:
            raise DataError(f"{path.name}: module {entry.get('id', '?')} lacks {missing}") from None
    ids = [m.id for m in modules] + [f"{m.id}/{x.id}" for m in modules for x in m.mutants]
    if len(ids) != len(set(ids)):
        raise DataError(f"{path.name}: duplicate ids")
    return modules


def apply_mutant(source: str, mutant: Mutant) -> str:
    """``source`` with the mutant's replacement made; ``DataError`` unless ``old`` occurs exactly once
    and the result differs from ``source``."""
    count = source.count(mutant.old)
    if count != 1:
        raise DataError(f"mutant {mutant.id}: its old text occurs {count} times, not once")
    mutated = source.replace(mutant.old, mutant.new)
    if mutated == source:
        raise DataError(f"mutant {mutant.id}: the replacement changes nothing")
    return mutated


# -------------------------------------------------------------------------------------------------
# Misuse tests


@dataclass(frozen=True)
class RaisesCheck:
    """One exception a generated test expects, what it calls, and whether that is a misuse."""

    test: str
    exception: str
    call: str
    on_purpose: bool
    misuse: bool
    other_asserts: int  # the test's assertions besides its ``pytest.raises`` blocks


_OPERATOR_METHODS: dict[type[ast.AST], str] = {
    ast.Add: "__add__", ast.Sub: "__sub__", ast.Mult: "__mul__", ast.BitOr: "__or__", ast.BitAnd: "__and__",
    ast.BitXor: "__xor__", ast.Mod: "__mod__", ast.Div: "__truediv__", ast.FloorDiv: "__floordiv__",
}


def _module_members(tree: ast.Module) -> dict[str, list[str]]:
    """Plain name -> qualnames of the module's functions and methods (``merge``, ``Dict.update``);
    a class's name maps to its ``__init__`` when it defines one."""
    names: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.setdefault(node.name, []).append(node.name)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    names.setdefault(item.name, []).append(f"{node.name}.{item.name}")
                    if item.name == "__init__":
                        names.setdefault(node.name, []).append(f"{node.name}.__init__")
    return names


def _used_names(statements: Sequence[ast.AST]) -> set[str]:
    """The member names ``statements`` reach: calls (``f(...)``, ``obj.m(...)``), subscripts, ``del``,
    operators, ``in``, ``len``/``iter`` and plain attribute reads, as the special methods they run."""
    names: set[str] = set()
    for statement in statements:
        for node in ast.walk(statement):
            if isinstance(node, ast.Call):
                if isinstance(node.func, ast.Name):
                    names.add(node.func.id)
                    names |= {"__len__"} if node.func.id == "len" else set()
                    names |= {"__iter__"} if node.func.id in ("iter", "list", "sorted", "tuple") else set()
                elif isinstance(node.func, ast.Attribute):
                    names.add(node.func.attr)
            elif isinstance(node, ast.Subscript):
                kinds = {ast.Load: "__getitem__", ast.Store: "__setitem__"}
                names.add(kinds.get(type(node.ctx), "__delitem__"))
            elif isinstance(node, ast.BinOp | ast.AugAssign) and type(node.op) in _OPERATOR_METHODS:
                names.add(_OPERATOR_METHODS[type(node.op)])
            elif isinstance(node, ast.Compare) and any(isinstance(o, ast.In | ast.NotIn) for o in node.ops):
                names.add("__contains__")
            elif isinstance(node, ast.Attribute):
                kinds = {ast.Load: "__getattr__", ast.Store: "__setattr__"}
                names.add(kinds.get(type(node.ctx), "__delattr__"))
    return names


def _referenced(tree: ast.Module, qualnames: set[str]) -> dict[str, ast.AST]:
    """``qualnames`` with the module functions their bodies name, called or not (``reduce(partial(
    _deepmerge, ...))``, a dispatch table read as ``_handle[strategy](...)``), closed over: qualname ->
    definition; ``raised_on_purpose`` follows the calls by name, not the other references."""
    functions: dict[str, ast.AST] = {
        n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    methods: dict[str, ast.AST] = {
        f"{c.name}.{m.name}": m for c in tree.body if isinstance(c, ast.ClassDef)
        for m in c.body if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)}
    assigned = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign)
                for t in n.targets if isinstance(t, ast.Name)}
    reached = {q: node for q in qualnames if (node := {**functions, **methods}.get(q)) is not None}
    todo = list(reached.values())
    while todo:
        node = todo.pop()
        loads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        for value in [assigned[name] for name in loads if name in assigned]:
            loads |= {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
        for name in loads & set(functions) - set(reached):
            reached[name] = functions[name]
            todo.append(functions[name])
    return reached


def _on_purpose(module_source: str, tree: ast.Module, qualnames: set[str]) -> frozenset[str]:
    """The exceptions the members ``qualnames`` raise themselves (``raised_on_purpose`` over them and
    the functions they name), with the bases of the module's exception classes they raise by name."""
    from equisa_core.testgen.raised_on_purpose import raised_on_purpose

    reached = _referenced(tree, qualnames)
    raised: set[str] = set(raised_on_purpose(module_source, "")) if not qualnames else set()
    for qualname in reached:
        raised |= raised_on_purpose(module_source, qualname)
    named = {ast.unparse(n.exc.func if isinstance(n.exc, ast.Call) else n.exc).rsplit(".", 1)[-1]
             for node in reached.values() for n in ast.walk(node) if isinstance(n, ast.Raise) and n.exc}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name in named:
            raised |= {ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases}
    return frozenset(raised)


def _parametrized(function: ast.FunctionDef) -> dict[str, list[ast.expr]]:
    """Argument name -> the values ``@pytest.mark.parametrize`` gives it."""
    values: dict[str, list[ast.expr]] = {}
    for decorator in function.decorator_list:
        if not (isinstance(decorator, ast.Call) and ast.unparse(decorator.func).endswith("parametrize")
                and len(decorator.args) >= 2 and isinstance(decorator.args[1], ast.List | ast.Tuple)):
            continue
        first = decorator.args[0]
        names = ([n.strip() for n in first.value.split(",")] if isinstance(first, ast.Constant)
                 and isinstance(first.value, str) else
                 [str(n.value) for n in first.elts if isinstance(n, ast.Constant)]
                 if isinstance(first, ast.Tuple | ast.List) else [])
        for case in decorator.args[1].elts:
            items = case.elts if len(names) > 1 and isinstance(case, ast.Tuple) else [case]
            for name, item in zip(names, items, strict=False):
                values.setdefault(name, []).append(item)
    return values


def _exception_names(expression: ast.expr, parameters: Mapping[str, list[ast.expr]]) -> list[str]:
    """The exception names (last dotted part) a ``pytest.raises`` argument stands for."""
    if isinstance(expression, ast.Tuple):
        return [name for item in expression.elts for name in _exception_names(item, parameters)]
    if isinstance(expression, ast.Name) and expression.id in parameters:
        return sorted({name for value in parameters[expression.id] for name in _exception_names(value, {})})
    return [ast.unparse(expression).rsplit(".", 1)[-1]]


def _raises_blocks(function: ast.FunctionDef) -> Iterator[tuple[ast.expr, list[ast.stmt]]]:
    """(exception argument, statements) of each ``with pytest.raises(E):`` block and each
    ``pytest.raises(E, f, *args)`` call in a test."""
    for node in ast.walk(function):
        if isinstance(node, ast.With):
            for item in node.items:
                raises = item.context_expr
                if (isinstance(raises, ast.Call) and ast.unparse(raises.func).endswith("raises")
                        and raises.args):
                    yield raises.args[0], node.body
        elif (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
              and ast.unparse(node.value.func).endswith("raises") and len(node.value.args) >= 2):
            call = ast.Call(func=node.value.args[1], args=node.value.args[2:], keywords=[])
            yield node.value.args[0], [ast.Expr(value=call)]


def _tests(tree: ast.Module) -> Iterator[ast.FunctionDef]:
    """The test functions of a module, those of its ``Test*`` classes included."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            yield node
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            yield from (m for m in node.body if isinstance(m, ast.FunctionDef) and m.name.startswith("test"))


def raises_checks(test_source: str, module_source: str) -> list[RaisesCheck]:
    """Every exception the tests of ``test_source`` expect from the module ``module_source``: a misuse
    when it is one of ``ILL_TYPED_ERRORS`` and no member the block reaches raises it on purpose."""
    module = ast.parse(module_source)
    members = _module_members(module)
    checks = []
    for test in _tests(ast.parse(test_source)):
        parameters = _parametrized(test)
        blocks = list(_raises_blocks(test))
        inside = {id(n) for _, body in blocks for s in body for n in ast.walk(s)}
        asserts = sum(1 for n in ast.walk(test) if isinstance(n, ast.Assert) and id(n) not in inside)
        for expression, body in blocks:
            called = {q for name in _used_names(body) for q in members.get(name, [])}
            on_purpose = _on_purpose(module_source, module, called)
            call = "; ".join(ast.unparse(s) for s in body)[:200]
            for name in _exception_names(expression, parameters):
                purposeful = name in on_purpose
                checks.append(RaisesCheck(test=test.name, exception=name, call=call, on_purpose=purposeful,
                                          misuse=not purposeful and name in ILL_TYPED_ERRORS,
                                          other_asserts=asserts))
    return checks


# -------------------------------------------------------------------------------------------------
# The report


def module_row_summary(row: Mapping[str, Any]) -> dict[str, Any]:
    """Whether one module's row meets the bar: coverage, every mutant killed, no misuse test."""
    branch: float | None = row.get("branch_coverage")
    total = len(row.get("mutants", []))
    killed = sum(1 for m in row.get("mutants", []) if m.get("killed"))
    misuse = len(row.get("misuse_tests", []))
    measured = branch is not None and row.get("error") is None
    return {
        "coverage_met": branch is not None and measured and branch >= COVERAGE_BAR,
        "mutants_met": measured and total > 0 and killed == total,
        "misuse_met": measured and misuse == 0,
        "killed": killed,
        "mutants": total,
        "misuse": misuse,
    }


def summarize(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The totals against the bar: modules at or above 90 % branch coverage, mutants killed of all,
    misuse tests in all, modules meeting all three, and the tool's total wall time."""
    per = [module_row_summary(r) for r in rows]
    met = [p["coverage_met"] and p["mutants_met"] and p["misuse_met"] for p in per]
    branches = [r["branch_coverage"] for r in rows if r.get("branch_coverage") is not None]
    return {
        "modules": len(rows),
        "modules_measured": len(branches),
        "modules_coverage_met": sum(1 for p in per if p["coverage_met"]),
        "min_branch_coverage": min(branches) if branches else None,
        "mean_branch_coverage": round(sum(branches) / len(branches), 1) if branches else None,
        "mutants": sum(p["mutants"] for p in per),
        "mutants_killed": sum(p["killed"] for p in per),
        "modules_all_killed": sum(1 for p in per if p["mutants_met"]),
        "misuse_tests": sum(p["misuse"] for p in per),
        "modules_meeting_bar": sum(met),
        "bar_met": bool(met) and all(met),
        "tool_wall_s": round(sum(r.get("wall_s") or 0 for r in rows), 1),
    }


def markdown(report: Mapping[str, Any]) -> str:
    """The report as a Markdown table per module and the totals against the bar."""
    lines = [
        f"# testgen_unseen ({report['environment'].get('date', '')}, commit "
        f"{str(report['environment'].get('git_commit') or '')[:7]})",
        "",
        "| module | branch coverage | mutants killed | survivors | misuse tests | tests (cases) | wall (s) |",
        "|---|---:|---:|---|---:|---:|---:|",
    ]
    for row in report["modules"]:
        figures = module_row_summary(row)
        branch = row.get("branch_coverage")
        survivors = ", ".join(m["id"] for m in row.get("mutants", []) if not m.get("killed")) or "-"
        cell = f"{branch:.1f} %" if branch is not None else f"error: {str(row.get('error'))[:60]}"
        lines.append(f"| {row['id']} | {cell} | {figures['killed']}/{figures['mutants']} | {survivors} | "
                     f"{figures['misuse']} | {row.get('tests', '-')} ({row.get('tests_run', '-')}) | "
                     f"{row.get('wall_s', '-')} |")
    total = report["summary"]
    lines += [
        "",
        f"- modules at or above {COVERAGE_BAR:.0f} % branch coverage: {total['modules_coverage_met']} of "
        f"{total['modules']} (lowest {total['min_branch_coverage']} %, "
        f"mean {total['mean_branch_coverage']} %)",
        f"- hand-made mutants killed: {total['mutants_killed']} of {total['mutants']} "
        f"({total['modules_all_killed']} modules with every mutant killed)",
        f"- misuse tests: {total['misuse_tests']}",
        f"- modules meeting the whole bar: {total['modules_meeting_bar']} of {total['modules']}; "
        f"bar met: {'yes' if total['bar_met'] else 'no'}",
        f"- tool wall time: {total['tool_wall_s']} s in all",
    ]
    for row in report["modules"]:
        for test in row.get("misuse_tests", []):
            lines.append(f"- misuse in {row['id']}: `{test['test']}` expects {test['exception']} from "
                         f"`{test['call']}`")
    return "\n".join(lines) + "\n"


# -------------------------------------------------------------------------------------------------
# Running


def project_copy(module: UnseenModule, source_root: Path, dest: Path) -> Path:
    """A copy of the unpacked sdist without the project's own tests, holding the smoke test."""
    from localization_corpus import copy_tree

    copy_tree(source_root, dest)
    for dropped in module.drop:
        path = dest / dropped
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    smoke = dest / SMOKE_PATH
    smoke.parent.mkdir(parents=True, exist_ok=True)
    smoke.write_text(module.smoke.lstrip("\n"), encoding="utf-8")
    return dest


def _passes(python: Path, root: Path, module: UnseenModule, command: Sequence[str]) -> bool:
    """Whether ``python command`` exits 0 in ``root`` with the module's import root first on the path."""
    from localization_corpus import tool_env

    env = tool_env({"PYTHONPATH": str(root / module.import_root)})
    try:
        done = subprocess.run([str(python), *command], cwd=root, env=env, capture_output=True,
                              timeout=CHECK_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:  # a mutant that loops is told apart too
        return False
    return done.returncode == 0


def check_mutants(module: UnseenModule, root: Path, python: Path) -> list[dict[str, Any]]:
    """Each mutant applied once to a scratch copy of ``root``: whether its check tells it apart (passes
    on the original, fails on the mutant) and whether the smoke test alone kills it; ``DataError`` when
    a replacement does not apply once or a mutant is not told apart."""
    original = (root / module.target).read_text(encoding="utf-8")
    smoke = ["-m", "pytest", "-q", "-p", "no:cacheprovider", SMOKE_PATH]
    if not _passes(python, root, module, smoke):
        raise DataError(f"{module.id}: the smoke test fails on the original")
    verdicts = []
    for mutant in module.mutants:
        mutated = apply_mutant(original, mutant)
        if not _passes(python, root, module, ["-c", mutant.check]):
            raise DataError(f"{module.id}/{mutant.id}: the check fails on the original")
        (root / module.target).write_text(mutated, encoding="utf-8")
        try:
            told_apart = not _passes(python, root, module, ["-c", mutant.check])
            smoke_kills = not _passes(python, root, module, smoke)
        finally:
            (root / module.target).write_text(original, encoding="utf-8")
        if not told_apart:
            raise DataError(f"{module.id}/{mutant.id}: its check passes on the mutant (equivalent?)")
        verdicts.append({"id": mutant.id, "kind": mutant.kind, "smoke_kills": smoke_kills})
    return verdicts


def run_cli(project: Path, module: UnseenModule, python: Path,
            work: Path) -> tuple[dict[str, Any], float, str]:
    """``uv run equisa testgen PROJECT --target FILE --no-llm`` as a whole process with its defaults
    (``--out``, ``--json``, and its own ``--db`` and ``--artifacts`` in ``work``; ``--no-cache``, so
    that an earlier run of the same copy does not shorten the wall time): its report, wall time and
    output tail."""
    from localization_corpus import timed_run

    uv = shutil.which("uv") or "uv"
    report = work / "report.json"
    command = [uv, "run", "--project", str(REPO), "equisa", "testgen", str(project),
               "--target", module.target,
               "--no-llm", "--no-cache", "--python", str(python), "--out", str(work / "out"),
               "--json", str(report),
               "--db", str(work / "history.duckdb"), "--artifacts", str(work / "artifacts")]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "EQUISA_"))}
    run = timed_run(command, REPO, env, timeout=CLI_TIMEOUT_S)
    data = json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}
    tail = run.output.strip().splitlines()[-12:]
    return data, run.wall_s, f"exit {run.returncode}: " + " | ".join(tail)[-1500:]


def measure(project: Path, module: UnseenModule, python: Path, test_source: str,
            work: Path) -> dict[str, Any]:
    """Branch coverage of the target by ``test_source`` and, per hand-made mutant, the generated tests
    that pass on the original and fail on it; in the sandbox, as ``testgen_coverage.py`` measures."""
    from prefect import flow

    from equisa_core.common.models import TestOutcome
    from equisa_core.validation.generated_tests import testgen_module_path
    from tasks.run.parameters import TestgenParameters
    from tasks.run.prepared_run import prepare_run
    from tasks.testgen.measure import hash_seed_failures
    from tasks.testgen.setup import measure_tests, measuring_context

    params = TestgenParameters(path=str(project), target=module.target, python=str(python),
                               tests=[SMOKE_PATH], llm=False, out=str(work / "measure"),
                               mutants_per_measurement=0, no_cache=True, shards=1)
    path = testgen_module_path(module.target)
    original = (project / module.target).read_text(encoding="utf-8")

    @flow(name="bench-testgen-unseen", flow_run_name=module.id)
    def run() -> dict[str, Any]:
        prepared = prepare_run(params)
        coverage, _ = measure_tests(prepared, params, path, test_source)
        passed = [t.test_id for t in coverage.trace.tests if t.outcome is TestOutcome.PASSED]
        ctx = measuring_context(prepared, params, path)
        mutants = []
        for mutant in module.mutants:
            overlay = {path: test_source, module.target: apply_mutant(original, mutant)}
            failing = hash_seed_failures(ctx, overlay, [path], passed, "0")
            mutants.append({"id": mutant.id, "kind": mutant.kind, "killed": bool(failing),
                            "killed_by": sorted(failing)[:5], "killed_by_count": len(failing)})
        return {
            "branch_coverage": coverage.branch_percent,
            "coverage": coverage.percent,
            "branches": f"{coverage.covered_branches}/{coverage.branches}",
            "missing_lines": list(coverage.missing_lines),
            "tests_run": len(coverage.trace.tests),
            "tests_passed": len(passed),
            "measure_error": coverage.error,
            "mutants": mutants,
        }

    return run()


def run_module(module: UnseenModule, python: Path, console: Any) -> dict[str, Any]:
    """One module's row: data checks, the CLI run, the measurement and the misuse tests."""
    from testgen_coverage import CACHE

    row: dict[str, Any] = {"id": module.id, "package": f"{module.package}=={module.version}",
                           "target": module.target, "error": None}
    with tempfile.TemporaryDirectory(prefix=f"equisa-unseen-{module.id}-") as scratch:
        work = Path(scratch)
        project = project_copy(module, CACHE / "src" / module.folder, work / "project")
        row["data_checks"] = check_mutants(module, project, python)
        report, wall, tail = run_cli(project, module, python, work / "cli")
        row["wall_s"] = round(wall, 1)
        row["cli"] = tail
        row["stopped_because"] = report.get("stopped_because")
        row["attempts"] = [
            {"attempt": a["attempt"], "tests": len(a.get("tests", [])),
             "branch": (a.get("coverage") or {}).get("branch_percent"),
             "mutation_score": a.get("mutation_score")}
            for a in report.get("attempts", [])
        ]
        row["best_attempt"] = report.get("best_attempt")
        row["deterministic_notes"] = {a["attempt"]: a.get("deterministic", [])
                                      for a in report.get("attempts", [])}
        output = Path(report["output"]) if report.get("output") else None
        if output is None or not output.exists():
            why = "; ".join(report.get("problems", [])) or tail
            row["error"] = f"no test module written: {why}"[:600]
            row["mutants"] = [{"id": m.id, "kind": m.kind, "killed": False, "note": "not measured"}
                              for m in module.mutants]
            return row
        source = output.read_text(encoding="utf-8")
        row["generated_module"] = source
        row["tests"] = sum(1 for _ in _tests(ast.parse(source)))
        row.update(measure(project, module, python, source, work))
        checks = raises_checks(source, (project / module.target).read_text(encoding="utf-8"))
        row["raises_checks"] = [c.__dict__ for c in checks]
        row["misuse_tests"] = [c.__dict__ for c in checks if c.misuse]
    console.print(f"{module.id}: branch {row.get('branch_coverage')} %, killed "
                  f"{sum(m['killed'] for m in row.get('mutants', []))}/{len(module.mutants)}, misuse "
                  f"{len(row.get('misuse_tests', []))}, {row['wall_s']} s")
    return row


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 unless it could not run (2: missing sources or venvs, bad data)."""
    from rich.console import Console
    from testgen_coverage import CACHE, CORPUS_PYTHON
    from tracing_overhead import environment

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--modules", help="comma-separated module ids (default: all)")
    parser.add_argument("--prepare", action="store_true",
                        help="first fetch, check and unpack the sdists and make their venvs")
    parser.add_argument("--out-dir", type=Path, default=BENCH / "results")
    args = parser.parse_args(argv)
    from cli.flow_runs import PREFECT_DEFAULTS

    for name, value in PREFECT_DEFAULTS.items():
        os.environ.setdefault(name, value)
    console = Console(width=160)
    started = time.perf_counter()
    uv = shutil.which("uv") or "uv"
    modules = [m for m in load_modules() if not args.modules or m.id in args.modules.split(",")]
    if args.prepare and not prepare(console, uv, modules):
        return 2
    pythons = {m.id: CACHE / "venvs" / f"{m.folder}-equisa" / "bin" / "python" for m in modules}
    missing = [m.id for m in modules if not (CACHE / "src" / m.folder).is_dir() or not pythons[m.id].exists()]
    if missing:
        console.print(f"missing sources or venvs for {missing}: run with --prepare first")
        return 2
    command = "uv run equisa testgen COPY --target FILE --no-llm --no-cache (the command's defaults)"
    report: dict[str, Any] = {"environment": environment(uv), "data": str(DATA.relative_to(REPO)),
                              "settings": {"command": command, "python": CORPUS_PYTHON,
                                           "coverage_bar": COVERAGE_BAR}, "modules": []}
    for module in modules:
        try:
            report["modules"].append(run_module(module, pythons[module.id], console))
        except DataError as error:
            console.print(f"bad data: {error}")
            return 2
        except Exception as error:  # the tool or the measurement failed: a result to keep
            console.print(f"{module.id}: failed: {error!r}"[:300])
            report["modules"].append({"id": module.id, "error": f"{type(error).__name__}: {error}"[:400],
                                      "traceback": traceback.format_exc()[-4000:]})
    report["summary"] = summarize(report["modules"])
    report["environment"]["loadavg_at_end"] = list(os.getloadavg())
    report["elapsed_s"] = round(time.perf_counter() - started, 1)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    commit = str(report["environment"].get("git_commit") or "nocommit")[:7]
    args.out_dir.mkdir(parents=True, exist_ok=True)
    out = args.out_dir / f"testgen_unseen_{stamp}_{commit}"
    out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(report), encoding="utf-8")
    console.print(markdown(report))
    console.print(f"wrote {out}.json and .md in {report['elapsed_s']} s")
    return 0


def prepare(console: Any, uv: str, modules: Sequence[UnseenModule]) -> bool:
    """Each module's sdist fetched, checked and unpacked, its venv made (``prepare_package``, without
    FauxPy's venv); False if one could not be."""
    from importlib.metadata import version

    from localization_corpus import prepare_package
    from testgen_coverage import CACHE, CORPUS_PYTHON
    from tracing_overhead import find_python

    base, why = find_python(CORPUS_PYTHON)
    if base is None:
        console.print(f"no Python {CORPUS_PYTHON} for the projects' venvs: {why}")
        return False
    failed = []
    for module in modules:
        try:
            prepare_package(module.package_spec(), uv, base, CACHE, version("pytest"), fauxpy=False)
        except (RuntimeError, subprocess.CalledProcessError) as error:
            console.print(f"could not prepare {module.folder}: {error}")
            failed.append(module.id)
    return not failed


if __name__ == "__main__":
    sys.exit(main())

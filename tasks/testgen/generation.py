"""The deterministic test generator of ``testgen`` (its generate and enhance steps without a model).

Carved tests (round 0) from the target's calls recorded in the repository's own tests, boundary
tests observed by running drivers that move every number of a carved call to the file's
constants and their neighbours, tests observed from scratch drivers for the functions no
existing test calls, and tests from the coverage-guided input search (the inputs Hypothesis drew
that reached new branches; those that raised what looks like a bug are listed, not asserted). In
a later round the search also takes the last measurement's surviving mutants of each function
(``DeterministicPlan.survivors``) and keeps the inputs on which one of them does otherwise than the
original: their tests assert the original's outcome, which the mutant does not give.
Each recording is one sandboxed ``run-tests`` run, the search one sandboxed run; what to record
and how the observations become a module are the core's (``equisa_core.testgen.assembly``,
``carving``, ``boundary``, ``input_search``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict

from equisa_core.common.models import Node, SuiteTrace
from equisa_core.common.options import TestgenOptions, default_of
from equisa_core.common.probe_output import parse_probe_output
from equisa_core.common.values import OBJECT_MARKER
from equisa_core.errors import CollectionError
from equisa_core.testgen.assembly import (
    covering_tests,
    focus_nodes,
    lines_by_test,
    merge_modules,
    observed_tests,
    scratch_module,
    target_nodes,
    unique_tests,
    without_bug_like,
    without_misuse,
)
from equisa_core.testgen.boundary import (
    ScratchCall,
    driver_module,
    driver_tests,
    file_constants,
    scratch_driver_module,
)
from equisa_core.testgen.callable_inputs import recorded_callable_text
from equisa_core.testgen.carving import GENERATED_TESTS_DIR, CarvedTest, carve_tests, carved_module
from equisa_core.testgen.input_search import (
    POSSIBLE_BUG,
    REBUILD_HELPERS,
    CrosshairRecord,
    SearchedClass,
    SearchedFunction,
    SearchRecord,
    SequenceRecord,
    bug_like,
    crosshair_driver_tests,
    drawn_names,
    read_crosshair_records,
    read_search_records,
    read_sequence_records,
    search_driver_module,
)
from equisa_core.testgen.mutation_plan import module_name
from equisa_core.testgen.search_callable_tests import callable_input_tests, without_callable_inputs
from equisa_core.testgen.search_sequence_tests import sequence_tests
from equisa_core.testgen.searched_members import annotated_members, searched_classes, searched_functions
from equisa_core.testgen.value_texts import is_drawable_text
from tasks.sandbox.contract import RunRequest
from tasks.sandbox.run_tests import NOT_IMPORTING
from tasks.testgen.analysis import search_request, tidy_test_module

__all__ = ["Recorder", "DeterministicPlan", "deterministic_tests", "dropped_note"]


class Recorder(BaseModel):
    """Runs tests in the sandbox with the calls of some functions recorded."""

    model_config = ConfigDict(frozen=True)

    base: RunRequest
    backend: str = "local"
    docker_image: str | None = None
    interpreter_version: str = ""
    no_cache: bool = False

    def run(self, overlay: Mapping[str, str], tests: Sequence[str], fqns: Sequence[str]) -> SuiteTrace:
        """The trace of ``tests`` (node ids) with the calls of ``fqns`` recorded."""
        from tasks.sandbox.run_tests import run_tests

        request = self.base.model_copy(
            update={
                "overlay": dict(overlay),
                "tests": tuple(sorted({t.split("::", 1)[0] for t in tests})),
                "only": tuple(tests),
                "record": tuple(fqns),
                "trace": False,
                "shard": None,
            }
        )
        return run_tests.with_options(refresh_cache=self.no_cache or None)(
            request,
            backend=self.backend,
            interpreter_version=self.interpreter_version,
            docker_image=self.docker_image,
        )

    def generated(self, path: str, text: str, tests: Sequence[str], fqns: Sequence[str],
                  did: list[str]) -> SuiteTrace | None:
        """``run`` of the generated module ``text`` written at ``path``; None when it does not import:
        that module is dropped with a note in ``did`` (``dropped_note``) and the run goes on. (The
        user's own suite not importing is bad input, exit 6: it fails the baseline before this.)"""
        try:
            return self.run({path: text}, tests, fqns)
        except CollectionError as error:
            did.append(dropped_note(path, error.message))
            return None

    def search(
        self, overlay: Mapping[str, str], tests: Sequence[str]
    ) -> tuple[list[SearchRecord], list[SequenceRecord], list[CrosshairRecord]]:
        """The input search's records (functions, classes, CrossHair's) from running the driver
        ``tests`` (node ids) once, with coverage.py, Hypothesis and crosshair-tool importable (the
        suite's or EQUISA's own). Raises CollectionError when the driver wrote no record because a
        module did not import."""
        from tasks.sandbox.run_tests import make_sandbox

        request = search_request(self.base, overlay, tests)
        lines = make_sandbox(self.backend, self.docker_image).run(request).probe_output.splitlines()
        records = read_search_records(lines), read_sequence_records(lines), read_crosshair_records(lines)
        errors = parse_probe_output(lines).collect_errors
        if errors and not any(records):
            last = errors[0].message.strip().splitlines()[-1:] or ["error"]
            raise CollectionError(f"{NOT_IMPORTING}{errors[0].location}: {last[0]}")
        return records


def dropped_note(path: str, message: str) -> str:
    """The attempt's note for the generated module at ``path`` that did not import and was dropped:
    ``dropped test_testgen_scratch_0.py: ImportError: cannot import name 'doc' from 'heaps'``, from
    the ``CollectionError``'s ``message`` (its location and pytest's ``E`` left out)."""
    name = PurePosixPath(path).name
    where, _, why = message.removeprefix(NOT_IMPORTING).partition(": ")
    reason = why if why and PurePosixPath(where).name == name else message
    return f"dropped {name}: {reason.strip().removeprefix('E ').strip()}"


class DeterministicPlan(BaseModel):
    """What the deterministic generator works from: the target, the baseline's per-line tests, the
    functions to focus on and the per-function limits."""

    model_config = ConfigDict(frozen=True)

    target: str
    target_source: str
    line_tests: dict[int, tuple[str, ...]] = {}
    focus: tuple[str, ...] = ()
    #: The last measurement's surviving mutants: (the function's fqn, the mutant's name, its ``def``).
    survivors: tuple[tuple[str, str, str], ...] = ()
    carved_per_function: int = 3
    boundary_per_function: int = 4
    search_examples: int = default_of(TestgenOptions, "input_search_examples")
    search_seconds: float = default_of(TestgenOptions, "input_search_seconds")
    crosshair: bool = default_of(TestgenOptions, "crosshair")
    crosshair_seconds: float = default_of(TestgenOptions, "crosshair_seconds")


def deterministic_tests(
    recorder: Recorder, plan: DeterministicPlan, round_number: int, focus_lines: Sequence[int]
) -> tuple[str, list[str]]:
    """Carved tests (round 0), boundary tests moved from them, and tests observed from scratch
    drivers for the functions no existing test calls; the module text and what was done."""
    nodes = target_nodes(plan.target, plan.target_source, plan.focus)
    did: list[str] = []
    focused = focus_nodes(nodes, focus_lines) if round_number > 0 else {}
    if focused:
        surviving = {fqn: nodes[fqn] for fqn, _, _ in plan.survivors if fqn in nodes}
        nodes = {**focused, **surviving}
        did.append(f"focused on {len(nodes)} functions holding missing lines or surviving mutants")
    if not nodes:
        return "", [*did, "no function of the target to test"]
    per = plan.boundary_per_function * (round_number + 1)
    covering = covering_tests(plan.line_tests, nodes)
    tests: list[CarvedTest] = []
    carved: list[CarvedTest] = []
    seen: dict[str, list[tuple[str, ...]]] = {}
    sources = {**_package_sources(recorder, plan.target), plan.target: plan.target_source}
    if covering:
        carved, tests, seen = _carved_and_boundary(
            recorder, plan, nodes, covering, round_number, did, sources
        )
    else:
        did.append("no existing test calls the target's functions: nothing to carve")
    if plan.search_examples > 0:
        tests += _searched(recorder, plan, nodes, seen, round_number, did, sources)
    uncalled = sorted(set(nodes) - {t.target_fqn for t in carved})
    scratch_text, kept = _scratch(recorder, plan, uncalled, round_number, per)
    if kept is not None:
        did.append(kept)
    carved_text = carved_module(unique_tests(tests)) if tests else ""
    merged = merge_modules(carved_text, scratch_text)
    return (tidy_test_module(merged) if merged else merged), did


#: Python files of the target's package read for the constructors of its classes, at most.
MAX_PACKAGE_FILES = 300


def _package_sources(recorder: Recorder, target: str) -> dict[str, str]:
    """File -> text of the Python files of ``target``'s top-level package in the workspace copy (the
    run's overlay first; its folder alone when it is in no package): where the classes of the
    objects its functions take are defined, so carved tests build them with their constructors."""
    root = Path(recorder.base.workspace)
    folder = (root / target).parent
    while folder.parent != root and (folder.parent / "__init__.py").is_file():
        folder = folder.parent
    in_package = (folder / "__init__.py").is_file()
    files = sorted(folder.rglob("*.py") if in_package else folder.glob("*.py"))
    texts: dict[str, str] = {}
    for path in files[:MAX_PACKAGE_FILES]:
        relative = path.relative_to(root).as_posix()
        try:
            texts[relative] = recorder.base.overlay.get(relative) or path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    return texts


def _carved_and_boundary(
    recorder: Recorder,
    plan: DeterministicPlan,
    nodes: dict[str, Node],
    covering: list[str],
    round_number: int,
    did: list[str],
    sources: dict[str, str],
) -> tuple[list[CarvedTest], list[CarvedTest], dict[str, list[tuple[str, ...]]]]:
    """(the carved tests, the tests to keep: carved ones in round 0 and the observed boundary ones,
    the argument tuples recorded per function, as literal texts)."""
    recorded = recorder.run({}, covering, sorted(nodes))
    per_function = max(plan.carved_per_function, 1) * (round_number + 1)
    carved = carve_tests(recorded, set(nodes), nodes, max_per_member=per_function, sources=sources,
                         test_lines=lines_by_test(plan.line_tests))
    did.append(f"carved {len(carved)} tests from {len(covering)} existing tests' recorded calls")
    tests = list(carved) if round_number == 0 else []
    constants = file_constants(plan.target_source)
    drivers = driver_tests(carved, constants)
    if drivers:
        path = f"{GENERATED_TESTS_DIR}/test_testgen_drive_{round_number}.py"
        observed = recorder.generated(
            path, carved_module(drivers), [f"{path}::{d.name}" for d in drivers], sorted(nodes), did
        )
        if observed is None:
            return carved, tests, _arguments_seen(recorded, plan.target)
        per = plan.boundary_per_function * (round_number + 1)
        boundary, possible = without_bug_like(
            observed_tests(observed, nodes, per, f"test_boundary_{round_number}_", sources),
            {f"{module_name(plan.target)}.{q}" for q in annotated_members(plan.target_source)},
        )
        boundary, misuse = without_misuse(boundary, plan.target_source, module_name(plan.target))
        tests += boundary
        did += possible + misuse
        did.append(
            f"ran {len(drivers)} boundary-value drivers over {len(constants)} constants of the file; "
            f"kept {len(boundary)} observed calls as tests"
        )
    return carved, tests, _arguments_seen(recorded, plan.target)


def _arguments_seen(recorded: SuiteTrace, target: str) -> dict[str, list[tuple[str, ...]]]:
    """Qualname (in the target's module) -> the argument tuples its recorded calls had, each
    argument's literal text or an object's build (calls with an argument that the search cannot
    draw are left out: ``input_search.is_drawable_text``)."""
    prefix = module_name(target) + "."
    seen: dict[str, list[tuple[str, ...]]] = {}
    for test in recorded.tests:
        for call in test.calls:
            texts = [v.literal or v.build or recorded_callable_text(v.type, v.repr)
                     for k, v in call.args.items() if k not in ("self", "cls")]
            literals = tuple(t for t in texts if t is not None and is_drawable_text(t))
            if call.fqn.startswith(prefix) and len(literals) == len(texts):
                seen.setdefault(call.fqn[len(prefix) :], []).append(literals)
    return seen


def _searched(
    recorder: Recorder,
    plan: DeterministicPlan,
    nodes: dict[str, Node],
    seen: dict[str, list[tuple[str, ...]]],
    round_number: int,
    did: list[str],
    sources: dict[str, str],
) -> list[CarvedTest]:
    """Tests from the coverage-guided input search: its kept inputs are called by drivers with the
    calls recorded, and the recordings carved (``observed_tests``). Kept inputs that raised what
    looks like a bug (``input_search.bug_like``) are listed in ``did`` instead."""
    module = module_name(plan.target)
    annotated = annotated_members(plan.target_source)
    functions, classes = _searched_members(plan, module, nodes, seen, did)
    if not functions and not classes:
        return []
    path = f"{GENERATED_TESTS_DIR}/test_testgen_search_{round_number}.py"
    driver, drivers, asked = _search_drivers(plan, module, nodes, functions, classes, path, round_number)
    try:
        records, sequences, crosshair = recorder.search({path: driver}, drivers)
    except CollectionError as error:
        did.append(dropped_note(path, error.message))
        return []
    written = _with_callables(records, module, round_number, did)
    records = [without_callable_inputs(r) for r in records]
    sequenced, misuse = without_misuse(
        _sequenced(sequences, len(classes), module, round_number, annotated, did) + written,
        plan.target_source, module,
    )
    did += misuse
    calls = _kept_calls(records, crosshair, len(functions), len(asked) if plan.crosshair else None, did)
    if not records and not sequences:
        did.append("the search wrote no record (coverage.py or Hypothesis unavailable?)")
    if not calls:
        return sequenced
    drawn = drawn_names(records)
    driven = _driven(recorder, calls, module, round_number, nodes, sources, annotated, did, drawn)
    searched, misuse = without_misuse(driven, plan.target_source, module)
    did += misuse
    return searched + sequenced


def _searched_members(plan: DeterministicPlan, module: str, nodes: dict[str, Node],
                      seen: dict[str, list[tuple[str, ...]]], did: list[str],
                      ) -> tuple[list[SearchedFunction], list[SearchedClass]]:
    """The functions and classes of ``nodes`` the search can call; notes those it cannot, and why."""
    qualnames = [fqn[len(module) + 1 :] for fqn in nodes if fqn.startswith(module + ".")]
    constants = file_constants(plan.target_source)
    dropped: list[str] = []
    functions = searched_functions(plan.target_source, qualnames, seen, constants, dropped)
    classes = searched_classes(plan.target_source, qualnames, seen, constants, dropped)
    if dropped:
        did.append(f"left out of the input search: {'; '.join(dropped)}")
    return functions, classes


def _search_drivers(plan: DeterministicPlan, module: str, nodes: dict[str, Node],
                    functions: list[SearchedFunction], classes: list[SearchedClass], path: str,
                    round_number: int) -> tuple[str, list[str], list[SearchedFunction]]:
    """The search's driver module, its tests' node ids, and the functions CrossHair is asked about;
    the round's surviving mutants of the members join the search."""
    examples = plan.search_examples * (round_number + 1)
    mutants: dict[str, list[tuple[str, str]]] = {}
    for fqn, name, text in plan.survivors:
        if fqn in nodes and fqn.startswith(module + "."):
            mutants.setdefault(fqn[len(module) + 1 :], []).append((name, text))
    driver = search_driver_module(
        plan.target, module, functions, examples, plan.search_seconds, classes, mutants
    )
    drivers = [f"{path}::test_search_{f.qualname}" for f in functions]
    drivers += [f"{path}::test_sequence_{c.qualname}" for c in classes]
    asked = [f for f in functions if f.typed] if plan.crosshair else []
    driver += crosshair_driver_tests(module, asked, plan.crosshair_seconds)
    drivers += [f"{path}::test_crosshair_{f.qualname}" for f in asked]
    return driver, drivers, asked


def _sequenced(sequences: list[SequenceRecord], classes: int, module: str, round_number: int,
               annotated: frozenset[str], did: list[str]) -> list[CarvedTest]:
    """Tests from the searched method sequences of ``classes`` classes; notes what was searched."""
    sequenced: list[CarvedTest] = []
    for sequence in sequences:
        made, possible = sequence_tests(sequence, module, round_number, annotated)
        sequenced += made
        did += possible
    if classes:
        did.append(
            f"searched method sequences of {classes} classes "
            f"({sum(r.examples for r in sequences)} sequences, {len(sequenced)} kept as tests)"
            + "".join(f"; the search failed for {r.qualname}: {r.error}" for r in sequences if r.error)
        )
    compared = sum(r.mutants for r in sequences)
    if compared:
        did.append(
            f"made every sequence again with each of {compared} surviving mutants of the methods swapped "
            f"in: {sum(r.killed for r in sequences)} told apart, and the sequences that did so kept as tests"
        )
    return sequenced


def _with_callables(records: list[SearchRecord], module: str, round_number: int,
                    did: list[str]) -> list[CarvedTest]:
    """Tests written from the kept inputs holding callables (``search_callable_tests``: the probe
    cannot record a lambda, so they are not carved); notes what was kept."""
    written: list[CarvedTest] = []
    taken: set[str] = set()
    for record in records:
        made, possible = callable_input_tests(record, module, round_number, taken)
        written += made
        did += possible
    if written:
        did.append(f"wrote {len(written)} tests of inputs holding callables (builtins, operator functions, "
                   "lambdas, documented functions) from what the search saw")
    return written


def _kept_calls(records: list[SearchRecord], crosshair: list[CrosshairRecord], functions: int,
                asked: int | None, did: list[str]) -> list[tuple[str, str]]:
    """``(qualname, call)`` of the kept inputs of the search and CrossHair (``asked`` functions, None
    when it was not asked), bug-like ones noted in ``did`` instead; notes what was searched."""
    calls: list[tuple[str, str]] = []
    for record in records:
        for kept in record.kept:
            call = f"{record.qualname}({', '.join(kept.args)})"
            if bug_like(record, kept):
                did.append(f"{POSSIBLE_BUG}{call} raised {kept.raised}, on an input its annotations allow")
            else:
                calls.append((record.qualname, call))
    for found in crosshair:
        calls += [(found.qualname, f"{found.qualname}({', '.join(args)})") for args in found.inputs]
    if asked is not None:
        did.append(
            f"asked CrossHair for inputs of {asked} annotated functions "
            f"({sum(len(r.inputs) for r in crosshair)} inputs)"
            + "".join(f"; CrossHair failed for {r.qualname}: {r.error}" for r in crosshair if r.error)
        )
    failed = [f"{r.qualname}: {r.error}" for r in records if r.error]
    if functions:
        did.append(
            f"searched inputs of {functions} functions with Hypothesis under branch coverage "
            f"({sum(r.examples for r in records)} inputs, {len(calls)} kept for new branches)"
            + (f"; the search failed for {'; '.join(failed)}" if failed else "")
        )
    compared = sum(r.mutants for r in records)
    if compared:
        did.append(
            f"compared {compared} surviving mutants with the original on every input searched: "
            f"{sum(r.killed for r in records)} told apart, and the inputs that did so kept as tests"
        )
    return calls


def _driven(recorder: Recorder, calls: list[tuple[str, str]], module: str, round_number: int,
            nodes: dict[str, Node], sources: dict[str, str], annotated: frozenset[str],
            did: list[str], names: Sequence[str] = ()) -> list[CarvedTest]:
    """The kept ``calls`` run by a driver with their calls recorded (``names``: the module's names
    their arguments start from, imported), and the recordings carved."""
    driving = [
        ScratchCall(test=f"test_drive_search_{i}", qualname=q, call=c) for i, (q, c) in enumerate(calls)
    ]
    drive_path = f"{GENERATED_TESTS_DIR}/test_testgen_search_drive_{round_number}.py"
    drive = driver_module(module, driving, names)
    if any(OBJECT_MARKER in c for _, c in calls):  # objects rebuilt from recorded builds
        drive = REBUILD_HELPERS.lstrip() + "\n\n" + drive
    observed = recorder.generated(
        drive_path, drive, [f"{drive_path}::{d.test}" for d in driving],
        sorted({f"{module}.{d.qualname}" for d in driving}), did,
    )
    if observed is None:
        return []
    searched, possible = without_bug_like(
        observed_tests(observed, nodes, max(len(calls), 1), f"test_search_{round_number}_", sources),
        {f"{module}.{q}" for q in annotated},
    )
    did += possible
    return searched


def _scratch(
    recorder: Recorder, plan: DeterministicPlan, uncalled: list[str], round_number: int, per: int
) -> tuple[str, str | None]:
    """Tests from scratch drivers (``boundary.scratch_driver_module``) for functions no existing test
    calls: each driver call runs alone with the function's calls recorded, and what it returned or
    raised becomes the assertion. At most ``per`` per function, distinct outcomes first. The note is
    ``dropped_note``'s when the drivers' module does not import."""
    module = module_name(plan.target)
    qualnames = [fqn[len(module) + 1 :] for fqn in uncalled]
    driver, calls = scratch_driver_module(plan.target_source, module, qualnames)
    if driver is None:
        return "", None
    path = f"{GENERATED_TESTS_DIR}/test_testgen_scratch_{round_number}.py"
    fqns = sorted({f"{module}.{c.qualname}" for c in calls})
    dropped: list[str] = []
    observed = recorder.generated(path, driver, [f"{path}::{c.test}" for c in calls], fqns, dropped)
    if observed is None:
        return "", dropped[0]
    text, kept = scratch_module(calls, observed, module, round_number, per, plan.target_source)
    summary = (
        f"called {len(fqns)} functions no test calls with literal boundary and typical arguments "
        f"({len(calls)} calls); kept {kept} observed calls as tests"
    )
    return text, summary

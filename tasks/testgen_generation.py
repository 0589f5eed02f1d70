"""The deterministic test generator of ``testgen`` (its generate and enhance steps without a model).

Carved tests (round 0) from the target's calls recorded in the repository's own tests, boundary
tests observed by running drivers that move every number of a carved call to the file's
constants and their neighbours, and tests observed from scratch drivers for the functions no
existing test calls. Each recording is one sandboxed ``run-tests`` run; what to record and how the
observations become a module are the core's (``equisa_core.testgen.assembly``, ``carving``,
``boundary``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from equisa_core.common.models import Node, SuiteTrace
from equisa_core.testgen.assembly import (
    covering_tests,
    focus_nodes,
    merge_modules,
    observed_tests,
    scratch_module,
    target_nodes,
    unique_tests,
)
from equisa_core.testgen.boundary import driver_tests, file_constants, scratch_driver_module
from equisa_core.testgen.carving import GENERATED_TESTS_DIR, CarvedTest, carve_tests, carved_module
from equisa_core.testgen.mutation_plan import module_name
from tasks.sandbox import RunRequest
from tasks.testgen import tidy_test_module

__all__ = ["Recorder", "DeterministicPlan", "deterministic_tests"]


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
        from tasks.run_tests import run_tests

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


class DeterministicPlan(BaseModel):
    """What the deterministic generator works from: the target, the baseline's per-line tests, the
    functions to focus on and the per-function limits."""

    model_config = ConfigDict(frozen=True)

    target: str
    target_source: str
    line_tests: dict[int, tuple[str, ...]] = {}
    focus: tuple[str, ...] = ()
    carved_per_function: int = 3
    boundary_per_function: int = 4


def deterministic_tests(
    recorder: Recorder, plan: DeterministicPlan, round_number: int, focus_lines: Sequence[int]
) -> tuple[str, list[str]]:
    """Carved tests (round 0), boundary tests moved from them, and tests observed from scratch
    drivers for the functions no existing test calls; the module text and what was done."""
    nodes = target_nodes(plan.target, plan.target_source, plan.focus)
    did: list[str] = []
    focused = focus_nodes(nodes, focus_lines) if round_number > 0 else {}
    if focused:
        nodes = focused
        did.append(f"focused on {len(nodes)} functions holding missing lines")
    if not nodes:
        return "", [*did, "no function of the target to test"]
    per = plan.boundary_per_function * (round_number + 1)
    covering = covering_tests(plan.line_tests, nodes)
    tests: list[CarvedTest] = []
    carved: list[CarvedTest] = []
    if covering:
        carved, tests = _carved_and_boundary(recorder, plan, nodes, covering, round_number, did)
    else:
        did.append("no existing test calls the target's functions: nothing to carve")
    uncalled = sorted(set(nodes) - {t.target_fqn for t in carved})
    scratch_text, kept = _scratch(recorder, plan, uncalled, round_number, per)
    if kept is not None:
        did.append(kept)
    carved_text = carved_module(unique_tests(tests)) if tests else ""
    merged = merge_modules(carved_text, scratch_text)
    return (tidy_test_module(merged) if merged else merged), did


def _package_sources(recorder: Recorder, target: str) -> dict[str, str]:
    """File -> text of the Python files beside ``target`` in the workspace copy (the run's overlay
    first): where the classes of the objects its functions take are defined, so carved tests build
    them with their constructors."""
    root = Path(recorder.base.workspace)
    folder = (root / target).parent
    texts: dict[str, str] = {}
    for path in sorted(folder.glob("*.py")):
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
) -> tuple[list[CarvedTest], list[CarvedTest]]:
    """(the carved tests, the tests to keep: carved ones in round 0 and the observed boundary ones)."""
    recorded = recorder.run({}, covering, sorted(nodes))
    per_function = max(plan.carved_per_function, 1) * (round_number + 1)
    sources = {**_package_sources(recorder, plan.target), plan.target: plan.target_source}
    carved = carve_tests(recorded, set(nodes), nodes, max_per_member=per_function, sources=sources)
    did.append(f"carved {len(carved)} tests from {len(covering)} existing tests' recorded calls")
    tests = list(carved) if round_number == 0 else []
    constants = file_constants(plan.target_source)
    drivers = driver_tests(carved, constants)
    if drivers:
        path = f"{GENERATED_TESTS_DIR}/test_testgen_drive_{round_number}.py"
        observed = recorder.run(
            {path: carved_module(drivers)}, [f"{path}::{d.name}" for d in drivers], sorted(nodes)
        )
        per = plan.boundary_per_function * (round_number + 1)
        boundary = observed_tests(observed, nodes, per, f"test_boundary_{round_number}_", sources)
        tests += boundary
        did.append(
            f"ran {len(drivers)} boundary-value drivers over {len(constants)} constants of the file; "
            f"kept {len(boundary)} observed calls as tests"
        )
    return carved, tests


def _scratch(
    recorder: Recorder, plan: DeterministicPlan, uncalled: list[str], round_number: int, per: int
) -> tuple[str, str | None]:
    """Tests from scratch drivers (``boundary.scratch_driver_module``) for functions no existing test
    calls: each driver call runs alone with the function's calls recorded, and what it returned or
    raised becomes the assertion. At most ``per`` per function, distinct outcomes first."""
    module = module_name(plan.target)
    qualnames = [fqn[len(module) + 1 :] for fqn in uncalled]
    driver, calls = scratch_driver_module(plan.target_source, module, qualnames)
    if driver is None:
        return "", None
    path = f"{GENERATED_TESTS_DIR}/test_testgen_scratch_{round_number}.py"
    fqns = sorted({f"{module}.{c.qualname}" for c in calls})
    observed = recorder.run({path: driver}, [f"{path}::{c.test}" for c in calls], fqns)
    text, kept = scratch_module(calls, observed, module, round_number, per)
    summary = (
        f"called {len(fqns)} functions no test calls with literal boundary and typical arguments "
        f"({len(calls)} calls); kept {kept} observed calls as tests"
    )
    return text, summary

"""Trace shards kept to serve the mutant screening (``tasks.sandbox.served_runs``, the probe's ``--equisa-serve``):
real sandboxed pytest processes on the fixture project ``tests/fixtures/mutants``."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from tasks.run.mutants import MutantRunReport, execute_mutants
from tasks.sandbox import served_runs
from tasks.sandbox.contract import RunRequest, SandboxLimits
from tasks.sandbox.local_backend import LocalSandbox
from tasks.sandbox.run_tests import execute_request
from tests.conftest import venv_with_pytest
from tests.integration.test_mutant_runner import CHANGES, EXIT, FIX_ADD, LOOP, PROJECT, T, mutant

pytestmark = pytest.mark.integration

#: Mutants that run, one that loops (stopped by its time limit) and one that ends the interpreter
#: (the served run is resumed in a process of its own), in the order a screening sends them.
SCREENED = (FIX_ADD, *(mutant(i, name, source) for i, (name, source, _) in list(CHANGES.items())[:4]), LOOP,
            EXIT, mutant("after-exit", "add", "def add(a, b):\n    return b + a\n"))


@pytest.fixture(params=["3.8", "3.11"])
def python(request) -> Path:
    return venv_with_pytest(request.param)


@pytest.fixture
def owner():
    name = uuid.uuid4().hex
    yield name
    served_runs.discard(name)


def shard(python: Path, owner: str | None, **changes) -> RunRequest:
    """A traced run of the whole suite that re-runs its failing tests, as the trace's shards do."""
    values = {"workspace": PROJECT, "workspace_digest": "served", "interpreter": str(python), "trace": True,
              "rerun_failures": True, "serve_owner": owner,
              "limits": SandboxLimits(test_timeout_s=2.0, wall_clock_s=120.0)}
    return RunRequest(**{**values, **changes})


def screening(python: Path, tests: tuple[str, ...]) -> RunRequest:
    """The screening's mutant run: untraced, the suite's tests selected, fail-fast."""
    return RunRequest(workspace=PROJECT, workspace_digest="served", interpreter=str(python), trace=False,
                      only=tests, mutants=SCREENED, mutants_fail_fast=True,
                      limits=SandboxLimits(test_timeout_s=1.0, wall_clock_s=120.0))


def outcomes(report: MutantRunReport) -> dict[str, tuple[str, dict[str, str]]]:
    return {mutant_id: (result.status, {t: o.value for t, o in result.outcomes.items()})
            for mutant_id, result in report.mutants.items()}


def test_a_kept_shard_serves_the_screening_as_a_process_of_its_own_would(python, owner):
    trace = execute_request(LocalSandbox(), shard(python, owner))
    assert served_runs.kept(owner) == 1  # its trace is in; its process waits to serve
    request = screening(python, tuple(t.test_id for t in trace.tests))
    served = execute_mutants(LocalSandbox(), request)
    assert served_runs.kept(owner) == 0  # claimed
    fresh = execute_mutants(LocalSandbox(), request)  # nothing is kept now: a process of its own
    assert served.original == fresh.original and served.tests == fresh.tests
    assert outcomes(served) == outcomes(fresh)
    assert served.mutants["fix-add"].status == "ran" and served.fixes("fix-add")
    assert served.mutants["exit"].status == "crashed" and served.resumes == fresh.resumes == 1
    assert served.mutants["after-exit"].status == "ran"


def test_the_failing_tests_rerun_still_answers_beside_the_serving_fork(python, owner):
    """The serving fork is made before the re-run's pipes: holding their ends, it once kept the
    re-run's child from seeing their end-of-file, and the re-run of a failing test 'crashed'."""
    run = served_runs.run_serving(LocalSandbox(), shard(python, owner))
    records = [json.loads(line) for line in run.probe_output.splitlines()]
    assert {r["test"]: r["outcome"] for r in records if r["kind"] == "rerun"} == {T + "test_add": "failed"}
    assert served_runs.kept(owner) == 1


def test_discard_ends_the_shards_no_run_claimed(python, owner):
    execute_request(LocalSandbox(), shard(python, owner))
    kept = list(served_runs._kept)
    mine = [k for k in kept if k.owner == owner]
    assert len(mine) == 1
    assert served_runs.discard(owner) == 1 and served_runs.kept(owner) == 0
    process, folder = mine[0].launched.process, mine[0].launched.folder
    assert process.poll() is not None and not folder.exists()


def test_a_mutant_run_the_shard_did_not_collect_the_same_way_is_not_served(python, owner):
    trace = execute_request(LocalSandbox(), shard(python, owner, tests=("tests/test_core.py",)))
    tests = tuple(t.test_id for t in trace.tests)
    other_env = screening(python, tests).model_copy(update={"env": {"EXTRA": "1"}})
    other_files = screening(python, tests).model_copy(update={"tests": ("tests/test_other.py",)})
    unselected = screening(python, tests).model_copy(update={"only": None})
    for request in (other_env, other_files, unselected):
        assert served_runs.claim(request) is None
    assert served_runs.kept(owner) == 1
    assert served_runs.claim(screening(python, tests).model_copy(update={"tests": ("tests/test_core.py",)}))


def test_a_trace_scoped_to_node_ids_serves_a_screening_of_their_files(python, owner):
    """``--tests`` naming tests scopes the trace to node ids, while the screening collects their files
    (``focused_request``): the same tests run either way, so the kept shard serves it."""
    named = (T + "test_add", T + "test_increment")
    trace = execute_request(LocalSandbox(), shard(python, owner, tests=named))
    tests = tuple(t.test_id for t in trace.tests)
    assert set(tests) == set(named)
    of_files = screening(python, tests).model_copy(update={"tests": ("tests/test_core.py",)})
    wider = screening(python, (*tests, T + "test_cube")).model_copy(update={"tests": ("tests/test_core.py",)})
    assert served_runs.claim(wider) is None  # test_cube: collected by the file, not by the shard
    served = execute_mutants(LocalSandbox(), of_files)
    assert served_runs.kept(owner) == 0  # claimed
    fresh = execute_mutants(LocalSandbox(), of_files)
    assert outcomes(served) == outcomes(fresh) and served.tests == fresh.tests


def test_the_serving_fork_leaves_when_no_run_comes(python):
    """It waits as long as the shard's wall clock; then it leaves, and the shard's process with it."""
    owner = uuid.uuid4().hex
    execute_request(LocalSandbox(), shard(python, owner, limits=SandboxLimits(test_timeout_s=2.0,
                                                                               wall_clock_s=4.0)))
    mine = [k for k in served_runs._kept if k.owner == owner]
    assert len(mine) == 1
    assert mine[0].launched.process.wait(timeout=60) == 1  # pytest's status: test_add fails
    gone = screening(python, ("tests/test_core.py::test_add",))
    assert served_runs.claim(gone) is None  # its process ended: not claimed
    assert served_runs.discard(owner) == 1


def test_a_request_without_an_owner_runs_and_cleans_up_as_always(python):
    before = len(served_runs._kept)
    trace = execute_request(LocalSandbox(), shard(python, None))
    assert trace.tests and len(served_runs._kept) == before


@pytest.mark.parametrize(("path", "scope", "within"), [
    ("tests/test_core.py", (), True),
    ("tests/test_core.py", ("tests",), True),
    ("tests/test_core.py", ("tests/",), True),
    ("tests/test_core.py", (".",), True),
    ("tests/test_core.py::test_add", ("tests/test_core.py",), True),
    ("tests/test_core.py", ("tests/test_core.py::test_add",), False),
    ("tests/test_core.py::test_add", ("tests/test_core.py::test_add",), True),
    ("tests/test_core.py::test_add[1-2]", ("tests/test_core.py::test_add",), True),
    ("tests/test_core.py::test_add_more", ("tests/test_core.py::test_add",), False),
    ("tests/test_core.py", ("test",), False),
    ("other/test_core.py", ("tests",), False),
])
def test_a_path_is_within_the_scope_that_collects_it(path, scope, within):
    assert served_runs._within(path, scope) is within

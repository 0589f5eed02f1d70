"""The scale-out batch's machine: every repository ends with a result; a lost run is submitted again
once, then reported; a run with no outcome in time is cancelled and reported."""

from __future__ import annotations

from equisa_core.operations.batch import RepositoryEntry, RepositoryResult
from equisa_core.operations.scaleout import (
    Cancel,
    Cancelled,
    Polled,
    RunSeen,
    Submit,
    Submitted,
    initial_state,
    next_steps,
    record,
    results,
    verdict,
    watched,
)

ENTRIES = [RepositoryEntry(source="/srv/a"), RepositoryEntry(source="/srv/b")]


def _fixed(name: str, run: str) -> RepositoryResult:
    return RepositoryResult(name=name, source=f"/srv/{name}", status="fixed", flow_run_id=run)


def _submitted(state, *runs: str, now: float = 0.0):
    for index, run in enumerate(runs):
        state = record(state, Submitted(index=index, flow_run_id=run, now=now))
    return state


def test_every_repository_is_submitted_once_and_finishes_with_its_result():
    state = initial_state(ENTRIES, crash_retries=1, run_timeout_s=100)
    assert next_steps(state) == [Submit(index=0), Submit(index=1)] and verdict(state) is None
    state = _submitted(state, "r1", "r2")
    assert next_steps(state) == [] and watched(state) == ["r1", "r2"]
    state = record(state, Polled(runs={"r1": RunSeen(state_type="RUNNING", worker="w1"),
                                       "r2": RunSeen(state_type="SCHEDULED")}, now=5))
    assert verdict(state) is None and watched(state) == ["r1", "r2"]
    state = record(state, Polled(runs={"r1": RunSeen(state_type="COMPLETED", result=_fixed("a", "r1")),
                                       "r2": RunSeen(state_type="COMPLETED", result=_fixed("b", "r2"))},
                                 now=9))
    assert verdict(state).converged and [r.status for r in results(state)] == ["fixed", "fixed"]


def test_a_crashed_run_is_submitted_again_once_then_reported():
    state = _submitted(initial_state(ENTRIES, crash_retries=1, run_timeout_s=100), "r1", "r2")
    crashed = RunSeen(state_type="CRASHED", state_name="Crashed", message="no heartbeat", worker="w2")
    state = record(state, Polled(runs={"r1": crashed, "r2": RunSeen(state_type="RUNNING")}, now=10))
    assert next_steps(state) == [Submit(index=0)] and watched(state) == ["r2"]
    state = record(state, Submitted(index=0, flow_run_id="r3", now=11))
    state = record(state, Polled(runs={"r3": RunSeen(state_type="COMPLETED", result=_fixed("a", "r3")),
                                       "r2": crashed}, now=20))
    assert results(state)[0].status == "fixed"
    assert results(state)[0].problems == ("run again after: Crashed on worker w2: no heartbeat",)
    assert next_steps(state) == [Submit(index=1)]
    state = record(state, Submitted(index=1, flow_run_id="r4", now=21))
    state = record(state, Polled(runs={}, now=22))  # the server lost the run too
    second = [r for r in results(state) if r.name == "b"]
    assert second and second[0].status == "error" and second[0].flow_run_id == "r4"
    assert "its runs were lost: Crashed on worker w2: no heartbeat; Missing" in second[0].error
    assert verdict(state).converged


def test_a_run_with_no_outcome_in_time_is_cancelled_and_reported():
    state = _submitted(initial_state(ENTRIES[:1], crash_retries=1, run_timeout_s=30), "r1")
    state = record(state, Polled(runs={"r1": RunSeen(state_type="SCHEDULED", state_name="Late")}, now=31))
    assert next_steps(state) == [Cancel(flow_run_id="r1")] and verdict(state) is None
    state = record(state, Cancelled(flow_run_id="r1"))
    (result,) = results(state)
    assert result.status == "error" and "no outcome within 30 s (still Late); cancelled" in result.error
    assert verdict(state).converged and next_steps(state) == []


def test_a_failed_run_is_the_repositorys_outcome_and_one_without_a_result_an_error():
    state = _submitted(initial_state(ENTRIES, crash_retries=3, run_timeout_s=100), "r1", "r2")
    failed = RepositoryResult(name="a", source="/srv/a", status="error", error="no such folder", exit_code=3)
    state = record(state, Polled(runs={
        "r1": RunSeen(state_type="FAILED", state_name="Failed", result=failed),
        "r2": RunSeen(state_type="COMPLETED", state_name="Completed", message="ok")}, now=3))
    first, second = results(state)
    assert first == failed and next_steps(state) == []  # a failure is an outcome: not run again
    assert second.status == "error" and "ended Completed without a result: ok" in second.error

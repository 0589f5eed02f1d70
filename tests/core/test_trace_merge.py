"""Merging shard traces, crash-resumed runs and flaky re-runs."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from equisa_core.common.models import Edge, Node, SuiteTrace, TestOutcome, TestResult
from equisa_core.common.probe_output import parse_probe_output
from equisa_core.common.trace_merge import CRASH_EXCEPTION, combine, crash_result, interleave, mark_flaky


def result(test_id: str, outcome: str = "passed", covered: tuple[str, ...] = ()) -> TestResult:
    return TestResult(test_id=test_id, outcome=outcome, duration=0.1, covered=frozenset(covered))


def trace(
    *tests: TestResult, collected: tuple[str, ...] = (), nodes=(), edges=(), crashed=False
) -> SuiteTrace:
    return SuiteTrace(python_version="3.11.7", backend="setprofile", backend_reason="r", tests=tests,
                      collected=collected, nodes=nodes, edges=edges, crashed=crashed)


@given(st.lists(st.integers(), unique=True), st.integers(1, 5))
def test_interleave_rebuilds_round_robin_order(items, shards):
    ids = [f"t{i}" for i in items]
    per_shard = [ids[k::shards] for k in range(shards)]
    assert interleave(per_shard) == ids


def test_combine_orders_by_collection_and_unions_graph():
    a = trace(result("t3"), result("t1", "failed", ("m.f",)), collected=("t1", "t3"),
              nodes=(Node(fqn="m.f", file="m.py", start_line=1, end_line=2),),
              edges=(Edge(caller="m.g", callee="m.f"),))
    b = trace(result("t2", covered=("m.g",)), collected=("t2",),
              nodes=(Node(fqn="m.g", file="m.py", start_line=4, end_line=5),),
              edges=(Edge(caller="m.g", callee="m.f"),))
    merged = combine([a, b], interleave([a.collected, b.collected]))
    assert [t.test_id for t in merged.tests] == ["t1", "t2", "t3"]
    assert [n.fqn for n in merged.nodes] == ["m.f", "m.g"]
    assert len(merged.edges) == 1
    assert merged.collected == ("t1", "t2", "t3")
    assert not merged.crashed


def test_combine_keeps_crash_results_and_unresolved_crashes():
    crashed = crash_result("t2", "exit status 3")
    assert (crashed.outcome, crashed.exception_type) == (TestOutcome.ERROR, CRASH_EXCEPTION)
    first = trace(result("t1"), collected=("t1", "t2", "t3"))
    resumed = trace(crashed=True)
    merged = combine([first, resumed], first.collected, extra=[crashed])
    assert [t.test_id for t in merged.tests] == ["t1", "t2"]
    assert merged.crashed


def test_flaky_tests_leave_the_spectrum():
    t = trace(result("a", "failed", ("m.f",)), result("b", "failed", ("m.f",)), result("c", covered=("m.f",)),
              nodes=(Node(fqn="m.f", file="m.py", start_line=1, end_line=2),))
    marked = mark_flaky(t, {"b", "c"})  # c passed anyway: only failing tests can be flaky
    assert marked.flaky == {"b"}
    assert marked.failed_tests() == {"a"}
    assert marked.passed_tests() == {"c"}
    assert marked.coverage() == {"m.f": {"a", "c"}}


def test_a_shards_rerun_records_mark_its_flaky_tests_and_shards_combine_what_they_judged():
    records = [
        {"kind": "session", "python": "3.8.18", "backend": "instrument", "reason": "r"},
        {"kind": "collected", "tests": ["a", "b", "c"]},
        {"kind": "test", "test": "a", "outcome": "failed"},
        {"kind": "test", "test": "b", "outcome": "failed"},
        {"kind": "test", "test": "c", "outcome": "passed"},
        {"kind": "rerun", "test": "a", "outcome": "passed", "duration": 0.01},
        {"kind": "rerun", "test": "b", "outcome": "failed", "duration": 0.01},
        {"kind": "rerun-done", "failing": ["a", "b"], "duration": 0.02},
        {"kind": "end", "exitstatus": 1},
    ]
    shard = parse_probe_output(json.dumps(r) for r in records)
    assert (shard.flaky, shard.failed_tests(), shard.rerun_apart) == ({"a"}, {"b"}, {"a", "b"})
    other = parse_probe_output(json.dumps(r) for r in [
        {"kind": "session", "python": "3.8.18", "backend": "instrument", "reason": "r"},
        {"kind": "test", "test": "d", "outcome": "failed"},
        {"kind": "rerun-skipped", "reason": "this platform has no os.fork"},
        {"kind": "end", "exitstatus": 1},
    ])
    assert (other.flaky, other.rerun_apart) == (set(), set())
    assert other.rerun_skipped == "this platform has no os.fork"
    merged = combine([shard, other], ["a", "b", "c", "d"])
    assert (merged.flaky, merged.rerun_apart) == ({"a"}, {"a", "b"})
    assert merged.failed_tests() - merged.rerun_apart == {"d"}  # what a new process re-runs
    assert merged.rerun_skipped == "this platform has no os.fork"

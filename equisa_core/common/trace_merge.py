"""Combining traces: shards of one suite, runs resumed after a crash, flaky re-runs. Pure.

A failing test that passes when re-run apart from the rest of the suite is flaky (``mark_flaky``).
Each traced shard re-runs its own failing tests in a fork of its process made before any test ran
(the probe's ``rerun`` records, read by ``equisa_core.common.probe_output``); those its run could
not re-run so are re-run in a new process (``tasks.run.prepared_run.submit_flaky_rerun``). Either way
at most ``MAX_FLAKY_RERUNS`` of a run's failing tests are re-run.

Shards split the collected tests round-robin (test ``i`` goes to shard ``i mod n``), so the
suite's order is rebuilt exactly by interleaving the shards' collected lists; merging is
therefore deterministic whatever order the shards finish in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import zip_longest

from equisa_core.common.models import CollectError, Edge, Node, SuiteTrace, TestOutcome, TestResult

__all__ = ["CRASH_EXCEPTION", "MAX_FLAKY_RERUNS", "crash_result", "interleave", "combine", "mark_flaky"]

#: Failing tests of one run re-run apart to tell flaky ones apart (the first ones by node id); the
#: others are not re-run. Shards re-run their own (``RunRequest.rerun_failures``), the flow's
#: re-run in a new process at most this many too.
MAX_FLAKY_RERUNS = 20

#: ``exception_type`` of a test during which the interpreter died.
CRASH_EXCEPTION = "InterpreterCrash"


def crash_result(test_id: str, reason: str) -> TestResult:
    """The result recorded for a test that killed its interpreter."""
    return TestResult(
        test_id=test_id,
        outcome=TestOutcome.ERROR,
        duration=0.0,
        exception_type=CRASH_EXCEPTION,
        message=f"the interpreter died while running this test ({reason})",
    )


def interleave(collected_per_shard: Sequence[Sequence[str]]) -> list[str]:
    """The suite's collection order from round-robin shards' collected lists."""
    order: list[str] = []
    for row in zip_longest(*collected_per_shard):
        order.extend(test for test in row if test is not None)
    return order


def combine(
    parts: Sequence[SuiteTrace], order: Sequence[str], extra: Iterable[TestResult] = ()
) -> SuiteTrace:
    """One trace from several runs of disjoint tests: tests in ``order`` (others last, by id).

    ``extra`` adds results that no run wrote (crashed tests). The result is crashed when any part
    ended crashed without being resumed: the caller passes only unresolved crashes as such.
    """
    if not parts:
        raise ValueError("combine needs at least one trace")
    first = parts[0]
    crash = next((part for part in parts if part.crashed), None)  # the first unresolved crash
    return SuiteTrace(
        python_version=first.python_version,
        backend=first.backend,
        backend_reason=first.backend_reason,
        tests=_ordered_tests(parts, order, extra),
        nodes=_merged_nodes(parts),
        edges=_merged_edges(parts),
        collect_errors=_merged_collect_errors(parts),
        crashed=crash is not None,
        crashed_in=crash.crashed_in if crash is not None else None,
        crash_reason=crash.crash_reason if crash is not None else None,
        collected=tuple(order),
        flaky=frozenset().union(*(part.flaky for part in parts)),
        rerun_apart=frozenset().union(*(part.rerun_apart for part in parts)),
        rerun_skipped=next((part.rerun_skipped for part in parts if part.rerun_skipped), None),
        imported_elsewhere=_merged_imports(parts),
    )


def _ordered_tests(
    parts: Sequence[SuiteTrace], order: Sequence[str], extra: Iterable[TestResult]
) -> tuple[TestResult, ...]:
    """The parts' results (a later part's winning), then ``extra``'s for tests none ran; in
    ``order``, the tests it leaves out last by id."""
    results: dict[str, TestResult] = {}
    for part in parts:
        for test in part.tests:
            results[test.test_id] = test
    for test in extra:
        results.setdefault(test.test_id, test)
    rank = {test_id: index for index, test_id in enumerate(order)}
    return tuple(sorted(results.values(), key=lambda t: (rank.get(t.test_id, len(rank)), t.test_id)))


def _merged_nodes(parts: Sequence[SuiteTrace]) -> tuple[Node, ...]:
    """The parts' nodes, one per name (a later part's winning), by name."""
    nodes = {node.fqn: node for part in parts for node in part.nodes}
    return tuple(sorted(nodes.values(), key=lambda n: n.fqn))


def _merged_edges(parts: Sequence[SuiteTrace]) -> tuple[Edge, ...]:
    """The parts' call edges, each once, by caller and callee."""
    edges = {edge for part in parts for edge in part.edges}
    return tuple(sorted(edges, key=lambda e: (e.caller, e.callee)))


def _merged_imports(parts: Sequence[SuiteTrace]) -> dict[str, str]:
    """The parts' modules imported from elsewhere (module -> file; a later part's winning)."""
    return {name: file for part in parts for name, file in part.imported_elsewhere.items()}


def _merged_collect_errors(parts: Sequence[SuiteTrace]) -> tuple[CollectError, ...]:
    """The parts' collection errors, each (location, message) once."""
    errors = {(e.location, e.message): e for part in parts for e in part.collect_errors}
    return tuple(errors.values())


def mark_flaky(trace: SuiteTrace, rerun_passed: Iterable[str]) -> SuiteTrace:
    """``trace`` with the failing tests that passed when re-run alone marked flaky."""
    failing = trace.failed_tests()
    return trace.model_copy(update={"flaky": trace.flaky | (set(rerun_passed) & failing)})

"""Inspections run together in one sandbox process see what they would see one by one.

``inspect_batch`` swaps each inspection patch into the live function (a detailed mutant round)
instead of running a patched copy of the file in a process of its own (``inspect_node``). On
``tests/fixtures/fees``, whose bug makes both kinds of inspection assertion fail (a postcondition
of the buggy function itself, a precondition of its caller's callee that rejects the value the bug
produced), every observation must be the same: signals, the reflection's decision and reasoning,
the mutants' fix evidence.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from prefect import flow

from equisa_core.common.models import RecordedCall
from equisa_core.localization.machine import InspectionResult
from tasks.discovery.suite import trace_only
from tasks.localization.inspections import inspect_batch, inspect_node
from tasks.localization.steps import record_calls, suite_of
from tasks.run.parameters import LocalizeParameters
from tests.conftest import FIXTURES

TARGETS = ["fees.invoice", "fees.net", "fees.label", "fees.total"]


@flow
def _inspect_both_ways(path: str) -> tuple[dict[str, InspectionResult], dict[str, InspectionResult]]:
    params = LocalizeParameters(path=path, llm=False, discovery=False)
    found = trace_only(params)
    nodes = suite_of(found, None).nodes
    calls = record_calls(found, params, TARGETS)
    candidates = frozenset(nodes)
    made = {t: inspect_node(t, nodes[t], found, params, calls.get(t, []), False, None, True, candidates)
            for t in TARGETS}
    assert all(m.seen is not None and not m.problems for m in made.values())
    alone = {t: m.seen for t, m in made.items() if m.seen is not None}
    together = inspect_batch(TARGETS, nodes, found, params, calls, True, candidates, frozenset())
    return alone, together


@flow
def _record_both_ways(path: str) -> tuple[dict[str, list[RecordedCall]], dict[str, list[RecordedCall]]]:
    # One test per inspection: a function also runs in the other functions' tests, whose calls of
    # it must not count when they are recorded together.
    params = LocalizeParameters(path=path, llm=False, discovery=False, max_tests_per_inspection=1)
    found = trace_only(params)
    alone: dict[str, list[RecordedCall]] = {}
    for target in TARGETS:
        alone.update(record_calls(found, params, [target]))
    return alone, record_calls(found, params, TARGETS)


@pytest.fixture
def fees(tmp_path: Path, prefect_api_url: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("EQUISA_WORKSPACES", str(tmp_path / "workspaces"))
    return FIXTURES / "fees"


def test_a_batch_sees_what_each_inspection_sees_alone(fees: Path):
    alone, together = _inspect_both_ways(str(fees))
    assert set(together) == set(TARGETS)
    assert all(o.batch == len(TARGETS) for o in together.values())
    for target in TARGETS:
        seen = together[target].model_dump(exclude={"batch"})
        assert seen == alone[target].model_dump(exclude={"batch"}), target
    # The cases the comparison is about: the bug's own postcondition fails (the Golden Rule blames it),
    # and the caller's callee rejects the value the bug produced (put down to the functions that ran).
    net, label = together["fees.net"], together["fees.label"]
    assert net.signals.has_target_assertion and net.decision == "CONFIRMED_BUGGY" and net.invariants > 0
    assert label.signals.has_target_assertion and label.decision == "CONFIRMED_NOT_BUGGY"
    assert "fees.net" in label.reasoning
    assert together["fees.total"].fix_evidence is not None


def test_a_function_s_recorded_calls_do_not_depend_on_what_is_recorded_with_it(fees: Path):
    """Each function keeps the calls of its own inspection's passing tests, so a batch that records
    its functions together mines the invariants each would have mined recorded alone."""
    alone, together = _record_both_ways(str(fees))
    assert together and set(together) == set(alone)
    for target, calls in together.items():
        assert [c.model_dump() for c in calls] == [c.model_dump() for c in alone[target]], target

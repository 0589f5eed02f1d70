"""A real repair run replayed: the observations its driver fed the repair machine give the same
states, the same verdict and the same report figures, also after a trip through JSON."""

from __future__ import annotations

from pathlib import Path

import pytest
from prefect.settings import PREFECT_LOCAL_STORAGE_PATH, temporary_settings
from pydantic import TypeAdapter

import flows.repair as repair_flow
from equisa_core.common.loop import replay
from equisa_core.repair import machine
from equisa_core.repair.report import repair_status
from tasks.run.parameters import RepairParameters
from tests.conftest import small_repo
from tests.flows.test_localize import INVOICING


def _no_single_edit_fix(root: Path) -> Path:
    """The repository of ``test_a_bug_no_single_edit_fixes_is_not_fixed``."""
    repo = small_repo(root)
    (repo / "stats.py").write_text(
        "def mean(values):\n    return sum(values) / len(values)\n\n\n"
        "def spread(values):\n    # bug: should be max(values) - min(values)\n"
        "    return values[-1] - values[0]\n")
    (repo / "tests" / "test_stats.py").write_text(
        "from stats import mean, spread\n\n\n"
        "def test_mean():\n    assert mean([1, 2, 3]) == 2\n\n\n"
        "def test_spread_sorted():\n    assert spread([1, 2, 5]) == 4\n\n\n"
        "def test_spread_unsorted():\n    assert spread([5, 1, 3]) == 4\n")
    return repo


@pytest.mark.parametrize("example", ["invoicing", "no-single-edit-fix"])
def test_a_repair_runs_observations_replay_to_its_verdict_and_report(example, tmp_path, prefect_api_url,
                                                                     monkeypatch):
    for name, folder in (("EQUISA_WORKSPACES", "workspaces"), ("EQUISA_DB", "history.duckdb"),
                         ("EQUISA_ARTIFACTS", "artifacts"), ("EQUISA_SPOOL", "spool")):
        monkeypatch.setenv(name, str(tmp_path / folder))
    path = INVOICING if example == "invoicing" else _no_single_edit_fix(tmp_path / "stats")
    fed: list[tuple[machine.RepairState, machine.RepairObservation, machine.RepairState]] = []

    def watched(state: machine.RepairState, observation: machine.RepairObservation) -> machine.RepairState:
        after = machine.record(state, observation)
        fed.append((state, observation, after))
        return after

    monkeypatch.setattr(repair_flow, "record", watched)
    with temporary_settings({PREFECT_LOCAL_STORAGE_PATH: tmp_path / "storage"}):
        report = repair_flow.repair(RepairParameters(path=str(path), llm=False))
    assert report.status == ("fixed" if example == "invoicing" else "not_fixed")

    start, final = fed[0][0], fed[-1][2]
    assert start == machine.initial_state(start.budget)
    observations = TypeAdapter(list[machine.RepairObservation]).validate_json(
        TypeAdapter(list[machine.RepairObservation]).dump_json([o for _, o, _ in fed]))
    replayed = replay(start, observations, machine.record)
    assert replayed == final
    assert machine.verdict(replayed) is not None and machine.next_steps(replayed) == []
    assert machine.verdict(replayed).converged == (report.status == "fixed")
    assert repair_status(replayed.evaluations) == report.status
    assert replayed.evaluations == report.evaluations
    assert (replayed.tried, replayed.relocalizations) == (report.candidates_tried, report.relocalizations)
    assert set(replayed.problems) <= set(report.problems)
    if report.candidate is not None:
        assert replayed.candidates[report.candidate].target == report.target

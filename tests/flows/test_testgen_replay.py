"""A real testgen run replays: the observations the driver fed to the state machine, recorded again
from the run's initial state (also after a trip through JSON), give its final state and its report."""

from __future__ import annotations

from prefect import flow
from prefect.settings import PREFECT_LOCAL_STORAGE_PATH, temporary_settings

import flows.testgen as driver
from equisa_core.common.loop import replay
from equisa_core.testgen.machine import OBSERVATIONS, TestgenState, initial_state, record, verdict
from equisa_core.testgen.report import TestgenReport
from flows.testgen import generate_tests
from tasks.run.parameters import TestgenParameters
from tasks.run.prepared_run import prepare_run
from tasks.testgen.publish import GeneratedTests
from tests.flows.test_testgen_cli import INVOICING, TARGET


@flow(name="testgen-replayed")
def run_testgen(params: TestgenParameters) -> GeneratedTests:
    return generate_tests(prepare_run(params), params)


def test_a_real_run_replays_to_the_same_state_and_report(tmp_path, prefect_api_url, monkeypatch):
    started: list[TestgenState] = []
    fed: list[object] = []
    states: list[TestgenState] = []

    def initial(*args: object, **kwargs: object) -> TestgenState:
        started.append(initial_state(*args, **kwargs))
        return started[-1]

    def recording(state: TestgenState, observation: object) -> TestgenState:
        fed.append(observation)
        states.append(record(state, observation))
        return states[-1]

    monkeypatch.setattr(driver, "initial_state", initial)
    monkeypatch.setattr(driver, "record", recording)
    # Targets out of reach: attempt 0 is enhanced once, by the wider boundary search.
    params = TestgenParameters(
        path=str(INVOICING),
        target=TARGET,
        llm=False,
        out=str(tmp_path / "out"),
        max_attempts=2,
        mutants_per_measurement=10,
        coverage_target=100.0,
        mutation_target=100.0,
    )
    with temporary_settings({PREFECT_LOCAL_STORAGE_PATH: tmp_path / "storage"}):
        result = run_testgen(params)

    [start] = started
    final = states[-1]
    assert [o.kind for o in fed][:2] == ["generated", "deduped"] and len(final.attempts) == 2
    assert replay(start, fed, record) == final
    assert replay(start, OBSERVATIONS.validate_json(OBSERVATIONS.dump_json(fed)), record) == final
    report = result.report
    assert report.attempts == list(final.attempts) and report.stopped_because == verdict(final).reason
    assert (report.best_attempt, report.problems, report.cost_usd) == (
        final.best_attempt,
        list(final.problems),
        final.cost_usd,
    )
    assert result.source == final.best_source
    written = TestgenReport.model_validate_json((tmp_path / "out" / "report.json").read_text())
    assert written.attempts == report.attempts

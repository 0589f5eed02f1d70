"""Progress events reach the listener of the command that runs the flow (``tasks.operations.progress_events``):
from the flow's body, from ``run_tests`` tasks sent to the thread pool with ``.map`` and ``.submit``,
and from nested flows, and never the listener of another flow run in another thread."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest
from prefect import flow
from prefect.task_runners import ThreadPoolTaskRunner
from pydantic import TypeAdapter, ValidationError

import tasks.sandbox.run_tests as run_tests_module
from equisa_core.common.models import SuiteTrace
from tasks.operations.progress_events import (
    FinishedTest,
    Note,
    ProgressEvent,
    Stage,
    emit,
    finished_test_reporter,
    listening,
    not_listening,
)
from tasks.operations.task_runners import FanOutTaskRunner
from tasks.sandbox.contract import RecordCallback, RunRequest, SandboxRun
from tasks.sandbox.run_tests import run_tests

#: Both flows of the concurrency test are inside a sandbox run at once.
_both_running = threading.Barrier(2)


class _ScriptedSandbox:
    """Writes the probe records of one passing and one failing test per request, named after its
    ``tests`` (``<tag>/shard<i>``); a ``*/together`` run waits until the other flow's does too."""

    name = "scripted"

    def run(self, request: RunRequest, on_record: RecordCallback | None = None) -> SandboxRun:
        tag = request.tests[0]
        if tag.endswith("/together"):
            _both_running.wait(timeout=60)
        records = [
            {"kind": "session", "python": "3.11", "backend": "settrace", "reason": "scripted"},
            {"kind": "test", "test": f"{tag}::passes", "outcome": "passed"},
            {"kind": "test", "test": f"{tag}::fails", "outcome": "failed"},
            {"kind": "end"},
        ]
        for record in records:
            if on_record is not None:
                on_record(record)
        return SandboxRun(probe_output="\n".join(json.dumps(r) for r in records) + "\n", exit_code=1,
                          isolation="none")


@pytest.fixture
def scripted_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_tests_module, "make_sandbox", lambda backend, image=None: _ScriptedSandbox())


def _request(tag: str) -> RunRequest:
    return RunRequest(workspace=Path("/nonexistent"), workspace_digest=tag, tests=(tag,),
                      interpreter="python")


_runner = run_tests.with_options(refresh_cache=True)  # a cached result would run no sandbox


@flow(task_runner=FanOutTaskRunner())
def _mapped_and_submitted(tag: str) -> int:
    emit(Stage(text=f"{tag}: running"))
    mapped = _runner.map([_request(f"{tag}/shard0"), _request(f"{tag}/together")], report_tests=True)
    submitted = _runner.submit(_request(f"{tag}/submitted"), report_tests=True)
    quiet = _runner.submit(_request(f"{tag}/quiet"))  # report_tests off: not the suite's run
    traces: list[SuiteTrace] = [*mapped.result(), submitted.result(), quiet.result()]
    emit(Note(text=f"{tag}: done"))
    return sum(len(t.tests) for t in traces)


@flow(task_runner=ThreadPoolTaskRunner(max_workers=2))
def _outer(tag: str) -> None:
    emit(Stage(text=f"{tag}: outer"))
    with not_listening():
        _hidden(tag)
    _shown(tag)


@flow
def _hidden(tag: str) -> None:
    emit(Note(text=f"{tag}: hidden"))
    _runner.submit(_request(f"{tag}/hidden"), report_tests=True).result()


@flow
def _shown(tag: str) -> None:
    emit(Note(text=f"{tag}: nested"))


def _test_ids(events: list[ProgressEvent]) -> set[str]:
    return {e.test_id for e in events if isinstance(e, FinishedTest)}


def test_events_from_mapped_and_submitted_tasks_reach_the_listener_and_two_flows_do_not_mix(
        prefect_api_url, scripted_sandbox):
    heard: dict[str, list[ProgressEvent]] = {"a": [], "b": []}
    totals: dict[str, int] = {}

    def command(tag: str) -> None:
        with listening(heard[tag].append):
            totals[tag] = _mapped_and_submitted(tag)

    threads = [threading.Thread(target=command, args=(tag,)) for tag in heard]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert totals == {"a": 8, "b": 8}
    for tag, events in heard.items():
        assert events[0] == Stage(text=f"{tag}: running") and events[-1] == Note(text=f"{tag}: done")
        assert _test_ids(events) == {f"{tag}/{run}::{test}" for run in ("shard0", "together", "submitted")
                                     for test in ("passes", "fails")}
        assert len(events) == 2 + 6  # each test once; nothing from the other flow, nor the quiet run
        assert {e.outcome for e in events if isinstance(e, FinishedTest)} == {"passed", "failed"}


def test_a_nested_flow_reports_unless_its_caller_stops_listening(prefect_api_url, scripted_sandbox):
    heard: list[ProgressEvent] = []
    with listening(heard.append):
        _outer("n")
    assert heard == [Stage(text="n: outer"), Note(text="n: nested")]


def test_with_no_listener_nothing_is_reported():
    emit(Note(text="no one hears this"))
    assert finished_test_reporter() is None
    with listening(print), not_listening():
        assert finished_test_reporter() is None


def test_only_a_tests_record_is_a_finished_test_and_events_are_plain_data():
    heard: list[ProgressEvent] = []
    with listening(heard.append):
        report = finished_test_reporter()
        assert report is not None
    # Bound when made: it reports from any thread, after the block too.
    report({"kind": "start", "test": "t.py::a"})
    report({"kind": "test", "test": "t.py::a", "outcome": "error", "duration": 0.1})
    assert heard == [FinishedTest(test_id="t.py::a", outcome="error")]
    adapter: TypeAdapter[ProgressEvent] = TypeAdapter(ProgressEvent)
    for event in (Stage(text="x"), Note(text="y"), heard[0]):
        assert adapter.validate_json(adapter.dump_json(event)) == event
    with pytest.raises(ValidationError):  # frozen
        heard[0].outcome = "passed"


def test_the_spinner_or_the_plain_lines_print_the_notes_and_run_the_flow_on_its_parameters_unchanged():
    from io import StringIO

    from rich.console import Console

    from cli.progress import run_with_progress
    from tasks.run.parameters import TraceParameters

    out = StringIO()
    params = TraceParameters(path="/repo")

    def run(given: TraceParameters) -> str:
        emit(Stage(text="tracing"))
        emit(FinishedTest(test_id="t.py::a", outcome="passed"))
        emit(Note(text="First answer: f"))
        return given.path if given == params else "changed"

    terminal = Console(file=out, width=200, force_terminal=True)
    assert run_with_progress(terminal, "label", run, params) == "/repo"
    # The spinner is transient: what stays is the note (the spinner's text is never a line of its own).
    assert "First answer: f\n" in out.getvalue() and "\ntracing\n" not in out.getvalue()

    # Off a terminal (a CI log, a pipe) the same progress is plain lines that stay, with no cursor control.
    piped = StringIO()
    assert run_with_progress(Console(file=piped, width=200), "label", run, params) == "/repo"
    lines = piped.getvalue().splitlines()
    assert [re.sub(r"^\[\s*\d+s\] ", "", line) for line in lines] == [
        "label", "tracing", "First answer: f", "tests run: 1 passed"]
    assert all(re.match(r"\[\s*\d+s\] ", line) for line in lines if not line.startswith("First"))
    assert "\x1b" not in piped.getvalue()

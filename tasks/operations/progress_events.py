"""Progress as typed events, sent to the listener of the command that runs the flow.

A flow says what it is doing (``Stage``: the spinner's text), prints a line that stays above the
spinner (``Note``), and the suite's traced run reports each test as it finishes (``FinishedTest``,
built from the probe's per-test record). ``emit(event)`` hands an event to the current listener,
if there is one; the command line's spinner (``cli.progress``) sets it with ``listening``.

Why a ``ContextVar`` holds the listener, rather than the flow's parameters:

- a flow's and a task's parameters are recorded by Prefect (the UI, the API, a deployment's run)
  and must stay plain data, and a callable is not;
- the listener belongs to one command invocation, not to the run's inputs: it is not part of a
  task's cache key (``tasks.sandbox.run_tests``), and a flow run triggered from a deployment has none;
- two commands, or two flows run side by side in threads, each keep their own listener.

Prefect 3 carries it to where the work runs: a synchronous flow (and a nested flow) runs in the
caller's thread (``prefect.flow_engine.run_flow_sync``), and ``ThreadPoolTaskRunner.submit``
(under ``.submit`` and ``.map``) runs each task in ``contextvars.copy_context()`` taken at
submission. Tasks sent to Dask or Ray worker processes see no listener: their events are dropped,
as they were before (tests/flows/test_progress_events.py checks both). ``not_listening`` runs a
nested flow whose progress the command should not show (Discovery's and Validation's calls to the
test-generation agent).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Stage",
    "Note",
    "FinishedTest",
    "ProgressEvent",
    "ProgressListener",
    "listening",
    "not_listening",
    "emit",
    "finished_test_reporter",
]


class Stage(BaseModel):
    """What the run is doing now: the spinner's text until the next event changes it."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: Literal["stage"] = "stage"
    text: str


class Note(BaseModel):
    """A line that stays on the terminal, above the spinner."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: Literal["note"] = "note"
    text: str


class FinishedTest(BaseModel):
    """One test the probe finished running (its ``{"kind": "test", ...}`` record, reduced)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: Literal["test"] = "test"
    test_id: str
    outcome: str = Field(description="passed, failed, error or skipped (the probe's outcome).")

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> FinishedTest | None:
        """The event of a probe record: None unless it is a test's record."""
        if record.get("kind") != "test":
            return None
        return cls(test_id=str(record.get("test", "")), outcome=str(record["outcome"]))


ProgressEvent = Annotated[Stage | Note | FinishedTest, Field(discriminator="kind")]
ProgressListener = Callable[[ProgressEvent], None]

_listener: ContextVar[ProgressListener | None] = ContextVar("equisa_progress_listener", default=None)


@contextmanager
def listening(listener: ProgressListener | None) -> Iterator[None]:
    """Within the block (and the flows and threaded tasks started in it), events go to ``listener``."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


@contextmanager
def not_listening() -> Iterator[None]:
    """Within the block, events go nowhere (a nested flow whose progress the command hides)."""
    with listening(None):
        yield


def emit(event: ProgressEvent) -> None:
    """Hand ``event`` to the current listener, if any."""
    listener = _listener.get()
    if listener is not None:
        listener(event)


def finished_test_reporter() -> Callable[[dict[str, Any]], None] | None:
    """A sandbox's ``on_record`` callback that sends each test's record, as a ``FinishedTest``, to
    the current listener (bound now, so a sandbox may call it from any thread); None when no one
    listens (the sandbox then need not follow the probe's output)."""
    listener = _listener.get()
    if listener is None:
        return None
    bound: ProgressListener = listener

    def report(record: dict[str, Any]) -> None:
        event = FinishedTest.from_record(record)
        if event is not None:
            bound(event)
    return report

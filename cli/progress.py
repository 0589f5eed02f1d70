"""A flow run in the terminal's foreground: a spinner that counts the tests the probe reports (in
every sandbox) and shows what the flow says it is doing (its ``tasks.operations.progress_events``), with no
flow-run heartbeats. When the output is not a terminal (a CI log, a pipe), the same progress is plain
lines that stay: no spinner, no cursor control."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from tasks.operations.progress_events import FinishedTest, Note, ProgressEvent, Stage, listening

__all__ = ["PLAIN_COUNT_EVERY_S", "run_with_progress", "status", "without_heartbeats"]

#: Off a terminal, the tests' counts are printed at most this often (a line per test would flood a log).
PLAIN_COUNT_EVERY_S = 10.0


def run_with_progress(console: Console, label: str, run: Callable[[Any], Any], params: Any) -> Any:
    """``run(params)`` (a flow) under a spinner on ``console`` that listens to its progress events
    (plain lines when ``console`` is not a terminal)."""
    if not console.is_terminal:
        return _run_with_lines(console, label, run, params)
    counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    counting = threading.Lock()  # tests finish in the task runner's threads
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        job = progress.add_task(label, total=None)

        def on_event(event: ProgressEvent) -> None:
            match event:
                case Stage(text=text):  # the flow says what it is doing
                    progress.update(job, description=text)
                case Note(text=text):  # a line that stays above the spinner
                    progress.console.print(text, highlight=False, soft_wrap=True)
                case FinishedTest(outcome=outcome):
                    with counting:
                        counts[outcome] = counts.get(outcome, 0) + 1
                        done = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
                    progress.update(job, description=f"running tests: {done}")

        with listening(on_event), without_heartbeats():
            return run(params)


def _run_with_lines(console: Console, label: str, run: Callable[[Any], Any], params: Any) -> Any:
    """``run(params)`` printing its progress as plain lines, each with the seconds since it started:
    every new stage, every note, and the tests' counts at most every ``PLAIN_COUNT_EVERY_S``."""
    started = time.monotonic()
    counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    stage, counted_at = "", started
    lock = threading.Lock()  # tests finish in the task runner's threads

    def say(text: str) -> None:
        console.print(f"[{time.monotonic() - started:5.0f}s] {text}", highlight=False, soft_wrap=True,
                      markup=False)

    def on_event(event: ProgressEvent) -> None:
        nonlocal stage, counted_at
        match event:
            case Stage(text=text):
                with lock:
                    new, stage = text != stage, text
                if new:
                    say(text)
            case Note(text=text):
                console.print(text, highlight=False, soft_wrap=True)
            case FinishedTest(outcome=outcome):
                with lock:
                    counts[outcome] = counts.get(outcome, 0) + 1
                    now = time.monotonic()
                    due = now - counted_at >= PLAIN_COUNT_EVERY_S
                    if due:
                        counted_at = now
                    done = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
                if due:
                    say(f"running tests: {done}")

    say(label)
    with listening(on_event), without_heartbeats():
        result = run(params)
    if any(counts.values()):
        say("tests run: " + ", ".join(f"{n} {k}" for k, n in counts.items() if n))
    return result


@contextmanager
def status(console: Console, text: str) -> Iterator[None]:
    """A spinner with ``text`` while the block runs; off a terminal, ``text`` as one plain line."""
    if console.is_terminal:
        with console.status(text):
            yield
    else:
        console.print(text, highlight=False, soft_wrap=True, markup=False)
        yield


@contextmanager
def without_heartbeats() -> Iterator[None]:
    """A one-shot command's flow runs send no heartbeats, unless the user configured them.

    Prefect 3.9 sends a flow-run heartbeat every 180 s from a thread that sleeps in one-second
    steps, and joins it when the flow run ends: each flow run of a command ended up to a second
    late (measured: 1.2 s of a 3.9 s ``localize``). Heartbeats let a server mark a crashed
    worker's runs; a one-shot command is in the user's foreground, and its process's exit says it
    all. Deployments served by workers keep Prefect's default.
    """
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, get_current_settings, temporary_settings

    # Set by the environment or a profile: the user's choice.
    if "heartbeat_frequency" in get_current_settings().flows.model_fields_set:
        yield
        return

    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield

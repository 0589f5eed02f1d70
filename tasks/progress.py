"""A flow run in the terminal's foreground: a spinner that counts the tests the probe reports (in
every sandbox) and shows what the flow says it is doing (its ``tasks.progress_events``), with no
flow-run heartbeats."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from tasks.progress_events import FinishedTest, Note, ProgressEvent, Stage, listening

__all__ = ["run_with_progress", "without_heartbeats"]


def run_with_progress(console: Console, label: str, run: Callable[[Any], Any], params: Any) -> Any:
    """``run(params)`` (a flow) under a spinner on ``console`` that listens to its progress events."""
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

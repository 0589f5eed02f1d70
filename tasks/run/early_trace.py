"""The suite's trace started by the command line while the Prefect server starts (issue 48).

A one-shot ``trace``, ``localize`` or ``repair`` first waits for the shared Prefect server (seconds
on a fresh machine: 6.8 s of a 20 s first command), and only then does its flow start the trace.
The trace does not need Prefect, so ``start_early_trace`` (called by ``cli.flow_runs.run_flow``
beside the server's start) builds the requests of the trace's shards as the flow will
(``prepare_run(early=True)``, ``shard_requests``) and launches them (``tasks.sandbox.early_runs``);
the flow's ``run-tests`` tasks then adopt the processes under way instead of starting their own.
The flow runs, task runs, cache keys and results are those of before: only the process a shard's
task waits for started sooner.

Nothing starts early when the flow would not start it itself: the docker sandbox, a task runner
other than threads (its tasks run in other processes), or a shard whose result Prefect's cache
holds (unless ``no_cache``). Any error leaves it to the flow, which meets it again and reports it.
"""

from __future__ import annotations

import logging
from pathlib import Path

from tasks.run.parameters import LocalizeParameters, TraceParameters

__all__ = ["trace_parameters", "start_early_trace"]

log = logging.getLogger(__name__)


def trace_parameters(params: TraceParameters) -> TraceParameters:
    """The parameters the flow of ``params`` traces the suite with: a localization's (``localize``,
    ``repair``) cut every run's wall clock at its time budget (``flows.localize._Driver``,
    ``flows.repair._bounded``)."""
    max_seconds = getattr(params, "max_seconds", None)
    if max_seconds is not None and params.shard_timeout_s > max_seconds:
        return params.model_copy(update={"shard_timeout_s": float(max_seconds)})
    return params


def start_early_trace(params: object) -> int:
    """Launch the trace's shards of the flow ``params`` are for (a ``TraceParameters``), as its
    ``run-tests`` tasks would; how many started (0: none, the flow starts them). Called in the
    thread that lives as long as the command: a run of the local sandbox ends with the thread that
    started it (``bwrap --die-with-parent``)."""
    from tasks.operations.task_runners import runner_choice

    try:
        if not isinstance(params, TraceParameters) or params.sandbox == "docker" \
                or runner_choice().kind != "threads":
            return 0
        return _start(trace_parameters(params), _serves(params))
    except Exception as error:  # the flow meets it again, and says it
        log.debug("no early trace: %s", error)
        return 0


def _start(params: TraceParameters, serves: bool) -> int:
    from tasks.run.prepared_run import prepare_run, shard_requests
    from tasks.sandbox import early_runs
    from tasks.sandbox.local_backend import LocalSandbox
    from tasks.sandbox.run_tests import backend_key, make_sandbox

    prepared = prepare_run(params, early=True)
    sandbox = make_sandbox(params.sandbox, params.docker_image)
    assert isinstance(sandbox, LocalSandbox)
    isolation = sandbox.isolation(prepared.base.allow_weak_isolation)
    serves = serves and (isolation.confines_files or isolation.weak_allowed)  # as ``run_serving`` does
    backend = backend_key(params.sandbox, params.docker_image)
    started = 0
    for request in shard_requests(prepared, params):
        if params.no_cache or not _cached(request.cache_key(backend, prepared.interpreter_version)):
            early_runs.start(sandbox, request, serves)
            started += 1
    return started


def _serves(params: TraceParameters) -> bool:
    """Whether the flow's shards stay to serve its mutant screening
    (``tasks.localization.runners.LocalizationSteps.serving_owner``): a localization that screens."""
    if not isinstance(params, LocalizeParameters):
        return False
    from tasks.llm import choose_llm_mode
    from tasks.run.parameters import settings_for

    use_llm = choose_llm_mode(params)[0]
    return bool(settings_for(params, use_llm, batching=False).screen_top)


def _cached(key: str) -> bool:
    """Whether Prefect's result store may hold the result of the ``run-tests`` task of cache key
    ``key`` (then the task reads it and starts nothing): a file of that name in the local result
    storage; True when results go to a storage block (which only the API can say)."""
    from prefect.settings import get_current_settings

    results = get_current_settings().results
    if results.default_storage_block:
        return True
    return (Path(results.local_storage_path).expanduser() / key).exists()

"""The ``run_mutants`` Prefect task: many mutants of one function against a few tests, in one process.

Localization and repair try tens of variants of one function against that function's tests; one
pytest start per variant would cost more than the tests. A ``RunRequest`` with ``mutants`` makes
the probe run the selected tests once unmutated (round ``original``), then once per mutant with
the mutant's code swapped into the live function object (see "Mutant rounds" in
``equisa_core/probe/equisa_probe.py``). ``execute_mutants`` is the plain function (no Prefect):

- a mutant during which the interpreter dies (``os._exit``, a segfault, the run's wall clock) is
  recorded as ``crashed`` and a new process runs the mutants not yet run, up to ``MAX_RESUMES``
  times, as ``run_tests`` resumes after a crashing test;
- a test that kills the interpreter with the original code is recorded as an ``InterpreterCrash``
  error of the original round and left out of the processes that follow, so mutants have no
  outcome for it.

A mutant's status: ``ran``; ``timeout`` (a test outlived the per-test timeout and failed with
``TestTimeout``); ``unswappable`` (the probe could not put it in place: ``reason`` says why, no
outcomes); ``crashed``; ``not_run`` (the resume budget ran out first, or the probe stopped).

The task's cache key is ``RunRequest.cache_key`` (which includes the mutants) under its own prefix,
with the retries of ``run_tests``: only for ``SandboxInfrastructureError``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal, cast

from prefect import task
from prefect.context import TaskRunContext
from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.models import SuiteTrace, TestOutcome, TestResult
from equisa_core.common.probe_output import read_test_record
from equisa_core.common.trace_merge import CRASH_EXCEPTION
from equisa_core.errors import CollectionError, InvalidSelectionError, NoTestsCollectedError
from tasks.sandbox.contract import ORIGINAL_ROUND, MutantSpec, RecordCallback, RunRequest, Sandbox, SandboxRun
from tasks.sandbox.local_backend import SERVED_OUTPUT
from tasks.sandbox.run_tests import (
    MAX_RESUMES,
    _cache_key,
    _infrastructure_only,
    _last_line,
    _no_output_error,
    _parse,
    make_sandbox,
)
from tasks.sandbox.served_runs import claim

__all__ = [
    "ORIGINAL_ROUND",
    "MutantSpec",
    "MutantStatus",
    "MutantResult",
    "MutantRunReport",
    "read_mutant_records",
    "execute_mutants",
    "run_mutants",
]

MutantStatus = Literal["ran", "unswappable", "crashed", "timeout", "not_run"]


class MutantResult(BaseModel):
    """What the selected tests did with one mutant swapped in."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: MutantStatus
    outcomes: dict[str, TestOutcome] = Field(default_factory=dict, description="Test id -> outcome.")
    reason: str | None = Field(None, description="Why it is not 'ran': unswappable, crash, timeout.")
    failures: dict[str, str] = Field(
        default_factory=dict, description="Test id -> 'ExceptionType: message' of failed and errored tests."
    )
    duration_s: float = 0.0
    tests: tuple[TestResult, ...] = Field(
        (), description="A detailed round's tests (``MutantSpec.detailed``) as an ordinary run records them: "
        "output tail, exception, traceback; nothing is traced in a mutant round, so nothing is covered.")


class MutantRunReport(BaseModel):
    """The original round and every mutant's round of one mutant run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    python_version: str
    tests: tuple[str, ...] = Field(description="The selected tests, in the order they ran.")
    original: dict[str, TestOutcome] = Field(description="Test id -> outcome with the code unmutated.")
    original_failures: dict[str, str] = Field(default_factory=dict)
    mutants: dict[str, MutantResult] = Field(description="Mutant id -> result, in the request's order.")
    flaky: frozenset[str] = Field(
        frozenset(), description="Tests whose unmutated outcome differed between resumed processes."
    )
    resumes: int = Field(0, description="New processes started after crashes.")
    duration_s: float = 0.0
    original_trace: SuiteTrace | None = Field(
        None, description="The original round as an ordinary run (traced when the request asks), when "
        "it finished in the first process; lets one process serve as a traced run and a mutant run.")

    def changed(self, mutant_id: str) -> dict[str, tuple[TestOutcome, TestOutcome]]:
        """Tests whose outcome under the mutant differs from the original: id -> (original, mutant)."""
        result = self.mutants[mutant_id]
        return {
            test: (self.original[test], outcome)
            for test, outcome in result.outcomes.items()
            if test in self.original and self.original[test] is not outcome
        }

    def fixes(self, mutant_id: str) -> bool:
        """Whether the mutant ran, some test failed before, and every test not skipped now passes."""
        result = self.mutants[mutant_id]
        relevant = [t for t in self.tests if self.original.get(t) is not TestOutcome.SKIPPED]
        return (
            result.status == "ran"
            and any(self.original.get(t) is not TestOutcome.PASSED for t in relevant)
            and all(result.outcomes.get(t) is TestOutcome.PASSED for t in relevant)
        )


@dataclass
class _Round:
    """The records of one round (the original or a mutant) in one process."""

    outcomes: dict[str, TestOutcome] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    tests: list[TestResult] = field(default_factory=list)  # a detailed round's
    status: str | None = None  # None: started, never done (the process died in it)
    reason: str | None = None
    duration: float = 0.0


def read_mutant_records(lines: Iterable[str]) -> dict[str, _Round]:
    """The rounds recorded in the probe's output, by mutant id (``original`` first); pure.

    Lines are assumed valid (``parse_probe_output`` checks the protocol); a torn line is skipped.
    """
    rounds: dict[str, _Round] = {}
    for line in lines:
        if '"mutant-' not in line:
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        kind = record.get("kind")
        if kind == "mutant-start":
            rounds[record["mutant"]] = _Round()
        elif kind == "mutant-test":
            current = rounds.setdefault(record["mutant"], _Round())
            test = record["test_id"]
            current.outcomes[test] = TestOutcome(record["outcome"])
            if record.get("exception_type"):
                current.failures[test] = f"{record['exception_type']}: {record.get('message') or ''}"
            if "stdout" in record:  # a detailed round
                current.tests.append(read_test_record({**record, "test": test}))
        elif kind == "mutant-done":
            current = rounds.setdefault(record["mutant"], _Round())
            current.status, current.reason = record["status"], record.get("reason")
            current.duration = float(record.get("duration") or 0.0)
    return rounds


def execute_mutants(
    sandbox: Sandbox, request: RunRequest, on_record: RecordCallback | None = None
) -> MutantRunReport:
    """Run ``request``'s mutants in ``sandbox``, resuming after crashes; raise when no test could run."""
    if not request.mutants:
        raise InvalidSelectionError("a mutant run needs at least one mutant")
    started = time.monotonic()
    state = _MutantRun(request)
    current: RunRequest | None = request
    claimed = claim(request)  # a trace shard kept to serve it (``tasks.sandbox.served_runs``), else a new process
    while current is not None:
        run = None
        if claimed is not None:
            run = claimed.sandbox.finish(claimed.launched, current, on_record, output=SERVED_OUTPUT)
            claimed = None
            if not run.probe_output:  # the shard was gone before it could serve: a process of its own
                run = None
        if run is None:
            run = sandbox.run(current, on_record)
        if not run.probe_output:
            if state.selected is None:
                raise _no_output_error(run, current)
            state.give_up(f"a resumed run wrote no probe output: {_last_line(run.log_tail)}")
            break
        trace, rounds = _parse(run, current), read_mutant_records(run.probe_output.splitlines())
        first_round = rounds.get(ORIGINAL_ROUND)
        state.start(trace, first_round, run)
        original_progress = state.absorb_original(first_round, trace)
        mutant_progress = state.absorb_mutants(rounds, trace)
        current = state.next_request(trace, original_progress or mutant_progress)
    return state.report(time.monotonic() - started)


@dataclass
class _MutantRun:
    """What the processes of one mutant run have recorded so far, and what the next one must run."""

    request: RunRequest
    results: dict[str, MutantResult] = field(default_factory=dict)
    original: _Round | None = None
    original_trace: SuiteTrace | None = None
    partial_original: _Round = field(default_factory=_Round)
    crashed_tests: dict[str, str] = field(default_factory=dict)  # killed the interpreter unmutated -> failure
    flaky: set[str] = field(default_factory=set)
    selected: tuple[str, ...] | None = None
    python_version: str = ""
    resumes: int = 0

    def start(self, trace: SuiteTrace, first_round: _Round | None, run: SandboxRun) -> None:
        """Take the selected tests from the first process; raise when it ran nothing."""
        if self.selected is not None:
            return
        if first_round is None and not trace.crashed:
            raise _nothing_ran_error(trace, run, self.request)
        self.selected, self.python_version = trace.collected, trace.python_version

    def absorb_original(self, first_round: _Round | None, trace: SuiteTrace) -> bool:
        """Record a process's original round (or the test it died in); whether that is new."""
        if first_round is not None and first_round.status is not None:
            return self._finish_original(first_round, trace)
        if trace.crashed_in is not None and trace.crashed_in not in self.crashed_tests:
            self.crashed_tests[trace.crashed_in] = (
                f"{CRASH_EXCEPTION}: the interpreter died while running this test ({trace.crash_reason})")
            self.partial_original = first_round or self.partial_original
            return True
        return False

    def _finish_original(self, first_round: _Round, trace: SuiteTrace) -> bool:
        """The first finished original round is kept; a later one only reveals flaky tests."""
        if self.original is not None:
            original = self.original
            self.flaky |= {t for t, o in first_round.outcomes.items() if original.outcomes.get(t, o) is not o}
            return False
        self.original = first_round
        if self.resumes == 0:  # a later process ran only the tests left: not the whole round
            self.original_trace = trace.model_copy(update={
                "crashed": False, "crashed_in": None, "crash_reason": None})
        return True

    def absorb_mutants(self, rounds: dict[str, _Round], trace: SuiteTrace) -> bool:
        """Record the mutant rounds not seen before (unfinished ones as crashed); whether there were any."""
        progress = False
        for mutant_id, mutant_round in rounds.items():
            if mutant_id == ORIGINAL_ROUND or mutant_id in self.results:
                continue
            progress = True
            if mutant_round.status is None:
                self.results[mutant_id] = _crashed(mutant_round, trace, mutant_id)
            else:
                self.results[mutant_id] = _result(mutant_round)
        return progress

    def next_request(self, trace: SuiteTrace, progress: bool) -> RunRequest | None:
        """The request of the process that resumes the run; None (the rest given up) when it ends."""
        pending = [m for m in self.request.mutants if m.id not in self.results]
        if not pending:
            return None
        why = self._stop_reason(trace, progress)
        if why is not None:
            self.give_up(why)
            return None
        self.resumes += 1
        return self.request.model_copy(
            update={"mutants": tuple(pending), "only": self._remaining(), "shard": None})

    def _stop_reason(self, trace: SuiteTrace, progress: bool) -> str | None:
        """Why no process may resume the run, or None when one may."""
        if not trace.crashed:
            return "the probe ended without running it"
        if not progress:
            return f"the interpreter died outside any test ({trace.crash_reason})"
        if not self._remaining():
            return "every selected test kills the interpreter unmutated"
        if self.resumes >= MAX_RESUMES:
            return f"{MAX_RESUMES} resumes after crashes were spent"
        return None

    def _remaining(self) -> tuple[str, ...]:
        """The selected tests that did not kill the interpreter unmutated."""
        return tuple(t for t in self.selected or () if t not in self.crashed_tests)

    def give_up(self, reason: str) -> None:
        """Mark every mutant without a result ``not_run``, for ``reason``."""
        _give_up(self.request, self.results, reason)

    def report(self, duration_s: float) -> MutantRunReport:
        """The run's report, its mutants in the request's order."""
        base = self.original or self.partial_original
        crashed = dict.fromkeys(self.crashed_tests, TestOutcome.ERROR)
        return MutantRunReport(
            python_version=self.python_version,
            tests=self.selected or (),
            original={**base.outcomes, **crashed},
            original_failures={**base.failures, **self.crashed_tests},
            mutants={m.id: self.results[m.id] for m in self.request.mutants},
            flaky=frozenset(self.flaky),
            resumes=self.resumes,
            duration_s=duration_s,
            original_trace=self.original_trace,
        )


def _result(mutant_round: _Round) -> MutantResult:
    return MutantResult(
        status=cast(MutantStatus, mutant_round.status),  # the probe writes only valid statuses
        outcomes=mutant_round.outcomes,
        reason=mutant_round.reason,
        failures=mutant_round.failures,
        duration_s=mutant_round.duration,
        tests=tuple(mutant_round.tests),
    )


def _crashed(mutant_round: _Round, trace: SuiteTrace, mutant_id: str) -> MutantResult:
    """A mutant during which the process died: the test that was running counts as an error."""
    dying = next((t for t in trace.collected if t not in mutant_round.outcomes), None)
    outcomes, failures = dict(mutant_round.outcomes), dict(mutant_round.failures)
    reason = f"the interpreter died while mutant {mutant_id} ran ({trace.crash_reason})"
    if dying is not None:
        reason = f"the interpreter died in {dying} ({trace.crash_reason})"
        outcomes[dying] = TestOutcome.ERROR
        failures[dying] = f"{CRASH_EXCEPTION}: {reason}"
    return MutantResult(status="crashed", outcomes=outcomes, reason=reason, failures=failures)


def _give_up(request: RunRequest, results: dict[str, MutantResult], reason: str) -> None:
    for mutant in request.mutants:
        results.setdefault(mutant.id, MutantResult(status="not_run", reason=reason))


def _nothing_ran_error(trace: SuiteTrace, run: SandboxRun, request: RunRequest) -> Exception:
    """The error for a first run whose probe ended without running the original round."""
    if trace.collect_errors:
        first = trace.collect_errors[0]
        where = f"{first.location}: {_last_line(first.message)}"
        return CollectionError(f"the test suite does not import: {where}")
    if run.exit_code == 4:
        return InvalidSelectionError(f"pytest rejected the selection: {_last_line(run.log_tail)}")
    selection = f" for {' '.join(request.tests)}" if request.tests else ""
    return NoTestsCollectedError("no tests collected" + selection)


# ---------------------------------------------------------------------------------------------
# The Prefect task.


def _mutants_cache_key(context: TaskRunContext, parameters: dict[str, Any]) -> str:
    """``run_tests``' key under a prefix: the same request must not share a cached result."""
    return "run-mutants-" + _cache_key(context, parameters)


def _run_name() -> str:
    from prefect.runtime import task_run

    request: RunRequest = task_run.parameters["request"]
    if not request.mutants:
        return "run-mutants"
    return f"run-mutants {len(request.mutants)} x {request.mutants[0].fqn}"


@task(
    name="run-mutants",
    task_run_name=_run_name,
    cache_key_fn=_mutants_cache_key,
    cache_expiration=timedelta(days=30),
    persist_result=True,
    retries=2,
    retry_delay_seconds=[2, 10],
    retry_condition_fn=_infrastructure_only,
)
def run_mutants(
    request: RunRequest,
    backend: str = "local",
    interpreter_version: str = "",
    docker_image: str | None = None,
) -> MutantRunReport:
    """Run the selected tests unmutated and then once per mutant of ``request``, in one sandbox process."""
    return execute_mutants(make_sandbox(backend, docker_image), request)

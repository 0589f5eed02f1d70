"""Reads the probe's JSON-lines output into a ``SuiteTrace``: pure parsing, no I/O.

Record kinds are documented in ``equisa_core/probe/equisa_probe.py``. A file without an ``end``
record means the interpreter died mid-run: the trace is still built from what was recorded and
is marked ``crashed``, naming the test that was running.

A run that re-ran its failing tests apart (``rerun`` records, then ``rerun-done``) has the tests
whose rerun passed marked flaky (``mark_flaky``) and the failing tests it judged in
``rerun_apart``; ``rerun-skipped`` says why a run asked to could not (``rerun_skipped``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from equisa_core.common.models import (
    CollectError,
    Edge,
    Node,
    RecordedCall,
    SuiteTrace,
    TestResult,
    TracebackFrame,
)
from equisa_core.common.trace_merge import mark_flaky
from equisa_core.errors import ProbeProtocolError

__all__ = ["parse_probe_output", "read_test_record"]


def parse_probe_output(lines: Iterable[str]) -> SuiteTrace:
    """Build a ``SuiteTrace`` from the probe's JSON lines; a torn last line is ignored."""
    reading = _ProbeReading()
    for record in _records(list(lines)):
        reading.take(record)
    return reading.trace()


def _records(records: list[str]) -> Iterator[Any]:
    """The JSON value of each non-blank line, in order; a last line that is not JSON (the
    interpreter died while writing it) ends them, any other raises ``ProbeProtocolError``."""
    for index, line in enumerate(records):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError as error:
            if index == len(records) - 1:  # the interpreter died while writing it
                return
            raise ProbeProtocolError(f"probe output line {index + 1} is not JSON: {error}") from None


@dataclass
class _ProbeReading:
    """What the probe's records said so far; ``take`` reads one more, ``trace`` builds the result."""

    session: dict[str, Any] | None = None
    nodes: dict[str, Node] = field(default_factory=dict)
    edges: set[Edge] = field(default_factory=set)
    tests: dict[str, TestResult] = field(default_factory=dict)
    collect_errors: list[CollectError] = field(default_factory=list)
    running: str | None = None
    collected: tuple[str, ...] = ()
    outside: dict[str, str] = field(default_factory=dict)
    rerun_passed: set[str] = field(default_factory=set)
    rerun_apart: set[str] = field(default_factory=set)
    rerun_skipped: str | None = None
    ended: bool = False

    def take(self, record: dict[str, Any]) -> None:
        """Read one record (records of an unknown kind are ignored)."""
        kind = record.get("kind")
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is not None:
            handler(self, record)

    def _session(self, record: dict[str, Any]) -> None:
        self.session = record

    def _collected(self, record: dict[str, Any]) -> None:
        self.collected = tuple(record["tests"])

    def _start(self, record: dict[str, Any]) -> None:
        self.running = record["test"]

    def _node(self, record: dict[str, Any]) -> None:
        self.nodes[record["fqn"]] = Node(
            fqn=record["fqn"], file=record["file"],
            start_line=record["start"], end_line=record["end"],
        )

    def _test(self, record: dict[str, Any]) -> None:
        result = read_test_record(record)
        self.tests[result.test_id] = result
        self.edges.update(Edge(caller=a, callee=b) for a, b in record.get("edges", ()))
        self.running = None

    def _collect_error(self, record: dict[str, Any]) -> None:
        self.collect_errors.append(CollectError(location=record["location"], message=record["message"]))

    def _outside(self, record: dict[str, Any]) -> None:
        self.outside.update(record["modules"])

    def _rerun(self, record: dict[str, Any]) -> None:
        if record["outcome"] == "passed":
            self.rerun_passed.add(record["test"])

    def _rerun_done(self, record: dict[str, Any]) -> None:
        self.rerun_apart.update(record["failing"])

    def _rerun_skipped(self, record: dict[str, Any]) -> None:
        self.rerun_skipped = self.rerun_skipped or record["reason"]

    def _end(self, record: dict[str, Any]) -> None:
        self.ended = True

    def trace(self) -> SuiteTrace:
        """The trace of the records read; the tests whose rerun passed marked flaky."""
        session = self.session
        if session is None:
            raise ProbeProtocolError("the probe did not start: no session record in its output")
        trace = SuiteTrace(
            python_version=session["python"],
            backend=session["backend"],
            backend_reason=session["reason"],
            tests=tuple(self.tests.values()),
            nodes=tuple(sorted(self.nodes.values(), key=lambda n: n.fqn)),
            edges=tuple(sorted(self.edges, key=lambda e: (e.caller, e.callee))),
            collect_errors=tuple(self.collect_errors),
            crashed=not self.ended,
            crashed_in=self.running if not self.ended else None,
            collected=self.collected,
            imported_elsewhere=self.outside,
            rerun_apart=frozenset(self.rerun_apart),
            rerun_skipped=self.rerun_skipped,
        )
        return mark_flaky(trace, self.rerun_passed) if self.rerun_passed else trace


#: The reader of each record kind (documented in ``equisa_core/probe/equisa_probe.py``).
_HANDLERS: dict[str, Callable[[_ProbeReading, dict[str, Any]], None]] = {
    "session": _ProbeReading._session,
    "collected": _ProbeReading._collected,
    "start": _ProbeReading._start,
    "node": _ProbeReading._node,
    "test": _ProbeReading._test,
    "collect_error": _ProbeReading._collect_error,
    "outside": _ProbeReading._outside,
    "rerun": _ProbeReading._rerun,
    "rerun-done": _ProbeReading._rerun_done,
    "rerun-skipped": _ProbeReading._rerun_skipped,
    "end": _ProbeReading._end,
}


def read_test_record(record: dict[str, Any]) -> TestResult:
    """One ``test`` record of the probe (``test`` names it) as a ``TestResult``."""
    return TestResult(
        test_id=record["test"],
        outcome=record["outcome"],
        duration=record.get("duration", 0.0),
        exception_type=record.get("exception_type"),
        message=record.get("message"),
        # A frame may have no line (Python 3.11+ when a signal stops it between instructions: a test
        # stopped at its time limit); 0 stands for it.
        traceback=tuple(TracebackFrame(**{**frame, "line": frame.get("line") or 0})
                        for frame in record.get("traceback", ())),
        stdout_tail=record.get("stdout", ""),
        stderr_tail=record.get("stderr", ""),
        covered=frozenset(record.get("covered", ())),
        calls=tuple(RecordedCall.model_validate(call) for call in record.get("calls", ())),
    )

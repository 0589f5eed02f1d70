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
from collections.abc import Iterable
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
    session: dict[str, Any] | None = None
    nodes: dict[str, Node] = {}
    edges: set[Edge] = set()
    tests: dict[str, TestResult] = {}
    collect_errors: list[CollectError] = []
    running: str | None = None
    collected: tuple[str, ...] = ()
    outside: dict[str, str] = {}
    rerun_passed: set[str] = set()
    rerun_apart: set[str] = set()
    rerun_skipped: str | None = None
    ended = False
    records = list(lines)
    for index, line in enumerate(records):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            if index == len(records) - 1:  # the interpreter died while writing it
                break
            raise ProbeProtocolError(f"probe output line {index + 1} is not JSON: {error}") from None
        kind = record.get("kind")
        if kind == "session":
            session = record
        elif kind == "collected":
            collected = tuple(record["tests"])
        elif kind == "start":
            running = record["test"]
        elif kind == "node":
            nodes[record["fqn"]] = Node(
                fqn=record["fqn"], file=record["file"],
                start_line=record["start"], end_line=record["end"],
            )
        elif kind == "test":
            result = read_test_record(record)
            tests[result.test_id] = result
            edges.update(Edge(caller=a, callee=b) for a, b in record.get("edges", ()))
            running = None
        elif kind == "collect_error":
            collect_errors.append(CollectError(location=record["location"], message=record["message"]))
        elif kind == "outside":
            outside.update(record["modules"])
        elif kind == "rerun":
            if record["outcome"] == "passed":
                rerun_passed.add(record["test"])
        elif kind == "rerun-done":
            rerun_apart.update(record["failing"])
        elif kind == "rerun-skipped":
            rerun_skipped = rerun_skipped or record["reason"]
        elif kind == "end":
            ended = True
    if session is None:
        raise ProbeProtocolError("the probe did not start: no session record in its output")
    trace = SuiteTrace(
        python_version=session["python"],
        backend=session["backend"],
        backend_reason=session["reason"],
        tests=tuple(tests.values()),
        nodes=tuple(sorted(nodes.values(), key=lambda n: n.fqn)),
        edges=tuple(sorted(edges, key=lambda e: (e.caller, e.callee))),
        collect_errors=tuple(collect_errors),
        crashed=not ended,
        crashed_in=running if not ended else None,
        collected=collected,
        imported_elsewhere=outside,
        rerun_apart=frozenset(rerun_apart),
        rerun_skipped=rerun_skipped,
    )
    return mark_flaky(trace, rerun_passed) if rerun_passed else trace


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

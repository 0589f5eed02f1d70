"""Behavioural divergence of a patch candidate from the original, on any function: what shadow
execution observed (``equisa_core/validation/shadow_plugin/``, inside the sandbox), judged. Pure.

The target's covering tests run the ORIGINAL program; every call of the target is also made on the
candidate's version of the function, on deep copies of its arguments (the receiver included), and
the outcomes compared (``CallComparison``). Calls made by passing tests are ``recorded`` calls; the
original is the oracle there, so a change is a change of behaviour away from the failure, what an
overfitting patch does. Calls made by failing tests are expected to change and are not judged.
Near each recorded call, ``generated`` calls (one argument, or one attribute of the receiver,
moved to a neighbouring value) extend the evidence past the tests' exact inputs.

The plugin also records the original's executable lines, the lines the passing tests' calls ran,
the line-to-line arcs between them, and the lines the failing tests' calls ran, so the evidence's
reach is known (``line_coverage``, ``oracle_coverage``, ``evidence_reaches``): a verdict of "no
divergence" from calls that ran a third of the function says little. The failing tests' calls are
evidence too: their assertions are the oracle, and the candidate passes them.

Public API: ``CallComparison``, ``DivergenceReport`` (``summary()``, ``line_coverage``,
``changed_share``), ``divergence_of``, ``evidence_reaches``, ``MIN_LINE_COVERAGE``, the shadow
run's limits ``ShadowLimits``, and ``read_shadow_output`` (the plugin's JSON lines, parsed).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import Field

from equisa_core.common.loop import Frozen
from equisa_core.validation.differential import CRASHES

__all__ = ["CallComparison", "DivergenceReport", "ShadowLimits", "ShadowOutput", "MIN_LINE_COVERAGE",
           "MAX_EXAMPLES", "MIN_CHECKED_CALLS", "divergence_of", "evidence_reaches", "no_oracle",
           "read_shadow_output"]

#: The evidence covers the function well enough when the passing tests' calls ran at least this
#: share of its executable lines.
MIN_LINE_COVERAGE: float = 0.6
#: The evidence needs at least this many checked calls of the function (``DivergenceReport.checked_calls``):
#: passing tests' calls compared with the original, generated calls near them, and the failing tests'
#: different calls, whose assertions the candidate passes. With no passing test's call, the failing
#: tests' assertions alone must check this many.
MIN_CHECKED_CALLS: int = 3
#: The report keeps this many changes as examples, the first ones seen.
MAX_EXAMPLES = 3


class ShadowLimits(Frozen):
    """How much shadow execution one run may do (the plugin reads them from its configuration)."""

    call_limit_s: float = Field(1.0, gt=0, description="Seconds one shadow or generated call may run.")
    test_budget_s: float = Field(10.0, gt=0, description="Seconds of shadow calls per test, in all.")
    max_generated_per_call: int = Field(16, ge=0, description="Generated calls next to one recorded call.")
    max_generated: int = Field(200, ge=0, description="Generated calls in the whole run.")
    max_recorded: int = Field(400, ge=0, description="Recorded calls compared in the whole run.")
    max_items: int = Field(50, ge=1, description="Items of a generator compared, at most.")


class CallComparison(Frozen):
    """One call of the target made on both versions, and whether its outcome changed."""

    test_id: str
    origin: Literal["passing", "failing"]
    kind: Literal["recorded", "generated"]
    changed: bool
    detail: str = ""
    inputs: str = Field("", description="The call's inputs as a key: equal keys, the same call.")
    before: str = Field("", description="What the original did: timeout, raised:T, none or value:T; "
                                        "refused:T: a probe of another kind it rejected with T on purpose.")
    after: str = Field("", description="What the candidate did, in the same words.")
    relation: str = Field("", description="The call's class of inputs: its arguments' types and the signs "
                                          "of and order between its numbers, as a key.")


class DivergenceReport(Frozen):
    """How far a candidate's behaviour departs from the original's, on the covering tests' calls."""

    recorded_calls: int = Field(description="Compared calls made by passing tests.")
    generated_calls: int = Field(description="Compared generated calls (near passing calls).")
    failing_calls: int = Field(description="Compared calls made by failing tests (expected to change; "
                               "not judged).")
    changed_recorded: int = Field(description="Of recorded_calls, those whose outcome changed.")
    changed_generated: int = Field(description="Of generated_calls, those whose outcome changed.")
    answered: int = Field(0, description="Generated calls on which the original crashed or fell through to "
                                         "None and the candidate answers (not held against it).")
    uncomparable: int = Field(description="Calls that could not be compared (uncopyable arguments, no "
                              "time left, both versions out of time).")
    uncomparable_why: str = Field("", description="The commonest reason calls could not be compared.")
    failing_inputs: int = Field(0, description="Different inputs among the failing tests' own calls (their "
                                               "assertions are the oracle; the candidate passes them).")
    executable_lines: tuple[int, ...] = ()
    executed_lines: tuple[int, ...] = ()
    failing_executed_lines: tuple[int, ...] = Field((), description="The original's lines the failing "
                                                    "tests' calls ran.")
    arcs: tuple[tuple[int, int], ...] = ()
    examples: tuple[str, ...] = Field((), description="The first few changes outside the failing tests.")

    @property
    def line_coverage(self) -> float | None:
        """|executed ∩ executable| / |executable|; None when the function has no executable line."""
        if not self.executable_lines:
            return None
        executable = set(self.executable_lines)
        return len(executable & set(self.executed_lines)) / len(executable)

    @property
    def oracle_coverage(self) -> float | None:
        """The share of executable lines run by calls with a known right answer, the passing tests'
        and the failing tests' (which the candidate passes); None when the function has no
        executable line."""
        if not self.executable_lines:
            return None
        executable = set(self.executable_lines)
        ran = set(self.executed_lines) | set(self.failing_executed_lines)
        return len(executable & ran) / len(executable)

    @property
    def checked_calls(self) -> int:
        """The calls whose outcome was checked against a known answer: recorded and generated calls
        compared with the original, and the failing tests' different calls (their assertions)."""
        return self.recorded_calls + self.generated_calls + self.failing_inputs

    @property
    def changed_share(self) -> float:
        """(changed_recorded + changed_generated) / (recorded_calls + generated_calls); 0.0 with no call."""
        compared = self.recorded_calls + self.generated_calls
        return (self.changed_recorded + self.changed_generated) / compared if compared else 0.0

    @property
    def diverges(self) -> bool:
        """Whether some call outside the failing tests changed outcome."""
        return self.changed_recorded + self.changed_generated > 0

    def counts(self) -> dict[str, float]:
        """The report's figures without its lines: what a repair report keeps of each candidate."""
        counts: dict[str, float] = {
            "recorded": self.recorded_calls, "changed_recorded": self.changed_recorded,
            "generated": self.generated_calls, "changed_generated": self.changed_generated,
            "failing": self.failing_calls, "failing_inputs": self.failing_inputs,
            "uncomparable": self.uncomparable, "answered": self.answered}
        if self.line_coverage is not None:
            counts["line_coverage"] = round(self.line_coverage, 4)
        if self.oracle_coverage is not None:
            counts["oracle_coverage"] = round(self.oracle_coverage, 4)
        return counts

    def summary(self) -> str:
        """One line for the report."""
        if not (self.recorded_calls or self.generated_calls):
            aside = (f"; {self.uncomparable} set aside: {self.uncomparable_why}"
                     if self.uncomparable and self.uncomparable_why else "")
            checked = ""
            if self.failing_inputs:
                coverage = self.oracle_coverage
                covering = f", covering {coverage:.0%} of the function" if coverage is not None else ""
                checked = (f"; the failing tests' assertions check {self.failing_inputs} different call(s), "
                           f"which the candidate passes{covering}")
            return (f"no call of the function outside the failing tests could be compared "
                    f"({self.failing_calls} call(s) by failing tests{aside}){checked}")
        coverage = self.line_coverage
        reach = f"checked on {self.recorded_calls} recorded and {self.generated_calls} generated calls"
        if coverage is not None:
            reach += f" covering {coverage:.0%} of the function"
            with_failing = self.oracle_coverage
            if self.failing_inputs and with_failing is not None and with_failing > coverage:
                reach += f" ({with_failing:.0%} with the failing tests' {self.failing_inputs} call(s))"
        if self.answered:
            reach += f" ({self.answered} more answered where the original crashed)"
        if not self.diverges:
            return reach + "; no behaviour changed outside the failing tests"
        parts = []
        if self.changed_recorded:
            parts.append(f"{self.changed_recorded} of {self.recorded_calls} recorded")
        if self.changed_generated:
            parts.append(f"{self.changed_generated} of {self.generated_calls} generated")
        first = f": {self.examples[0]}" if self.examples else ""
        return f"{reach}; {' and '.join(parts)} calls changed outside the failing tests{first}"


def divergence_of(comparisons: Sequence[CallComparison], executable: Iterable[int], executed: Iterable[int],
                  arcs: Iterable[tuple[int, int]], uncomparable: int = 0,
                  failing_neighbours: Iterable[str] = (), uncomparable_why: str = "",
                  failing_executed: Iterable[int] = ()) -> DivergenceReport:
    """The report of a shadow run: the comparisons counted by origin and kind, the lines sorted
    (executed lines are kept as observed), the first ``MAX_EXAMPLES`` changes outside the failing
    tests as examples, each with its test.

    A generated call whose inputs equal those of a failing test's call, or of a call next to one
    (``failing_neighbours``: the inputs one step from a failing call, by the same rules that make
    the generated calls), lies where the failure is and the candidate is expected to differ: it
    counts as failing, not against the candidate; so does one of a failing call's class of inputs
    (``relation``: the same argument types, and the same signs of and order between the numbers
    they hold: ``x == minimum`` for a failing ``x == minimum``), which takes the same comparisons
    through the function. A boundary fix changes the function next to its
    failing input; a change anywhere else is held against it, but for one kind: where the original
    crashed (``CRASHES``), ran out of time or fell through to None on a generated call, it is no
    oracle, and a candidate that answers there with a value of a type the original returns on
    other calls is not held against (``answered``; as ``equisa_core.validation.differential`` does).
    An exception raised on purpose (a ``ValueError``) is a refusal, and answering it is a change."""
    failing_inputs = _failing_recorded_inputs(comparisons)
    comparisons = _where_the_failure_is(comparisons, failing_neighbours)
    answered = _answered_without_oracle(comparisons)
    comparisons = [c for c in comparisons if c not in answered]
    passing = [c for c in comparisons if c.origin == "passing"]
    recorded = [c for c in passing if c.kind == "recorded"]
    generated = [c for c in passing if c.kind == "generated"]
    examples = [f"{c.detail or 'a call changed'} (in {c.test_id})" for c in passing if c.changed]
    return DivergenceReport(
        recorded_calls=len(recorded), generated_calls=len(generated),
        failing_calls=len(comparisons) - len(passing), failing_inputs=len(failing_inputs),
        changed_recorded=_changed(recorded), changed_generated=_changed(generated), answered=len(answered),
        uncomparable=uncomparable, uncomparable_why=uncomparable_why,
        executable_lines=tuple(sorted(set(executable))), executed_lines=tuple(sorted(set(executed))),
        failing_executed_lines=tuple(sorted(set(failing_executed))),
        arcs=tuple(sorted(set(arcs))), examples=tuple(examples[:MAX_EXAMPLES]))


def _failing_recorded_inputs(comparisons: Sequence[CallComparison]) -> set[str]:
    """The different inputs of the failing tests' recorded calls (those that have inputs)."""
    return {c.inputs for c in comparisons if c.origin == "failing" and c.kind == "recorded" and c.inputs}


def _changed(comparisons: Sequence[CallComparison]) -> int:
    """How many of ``comparisons`` changed."""
    return sum(1 for c in comparisons if c.changed)


def _where_the_failure_is(comparisons: Sequence[CallComparison],
                          failing_neighbours: Iterable[str]) -> list[CallComparison]:
    """``comparisons`` with each generated call that lies where the failure is (inputs equal to a
    failing call's or to one next to it, or a failing call's class of inputs) counted as failing."""
    failing_inputs = {c.inputs for c in comparisons if c.origin == "failing" and c.inputs}
    failing_inputs |= set(failing_neighbours)
    failing_classes = {c.relation for c in comparisons if c.origin == "failing" and c.relation}
    return [c.model_copy(update={"origin": "failing"})
            if c.kind == "generated" and (c.inputs in failing_inputs or c.relation in failing_classes)
            else c for c in comparisons]


def _answered_without_oracle(comparisons: Sequence[CallComparison]) -> list[CallComparison]:
    """The changed generated calls under passing tests where the original was no oracle
    (``no_oracle``) and the candidate answered with a kind of value the original returns elsewhere."""
    answer_kinds = {c.before for c in comparisons if c.before.startswith("value:")}
    return [c for c in comparisons if c.origin == "passing" and c.kind == "generated" and c.changed
            and no_oracle(c.before) and c.after in answer_kinds]


def no_oracle(kind: str) -> bool:
    """Whether an outcome (``CallComparison.before``) shows the original failed rather than answered:
    a crash (``CRASHES``), a time-out, or None fallen through to."""
    return kind in ("none", "timeout") or (kind.startswith("raised:") and kind[len("raised:"):] in CRASHES)


def evidence_reaches(report: DivergenceReport) -> tuple[bool, str]:
    """(True, "") when the evidence says something of the function; else (False, why).

    Two kinds of call have a known right answer: a passing test's call (the original is its oracle,
    and the divergence compares the candidate with it, and on generated calls near it) and a failing
    test's call (its test's assertions are the oracle, and the candidate passes that test). The
    evidence reaches when those calls number at least ``MIN_CHECKED_CALLS`` (``checked_calls``; a
    call that two failing tests make counts once; with no passing test's call to compare, the failing
    tests' different calls alone must), and when they together ran at least
    ``MIN_LINE_COVERAGE`` of the function's lines (a function with no executable line counts as
    covered). One passing call of an empty input beside the one failing call is two checks: too few
    to promise a fix."""
    alone = report.recorded_calls == 0 and report.failing_inputs < MIN_CHECKED_CALLS
    if alone or report.checked_calls < MIN_CHECKED_CALLS:
        return False, _too_few_checked_calls(report)
    coverage = report.oracle_coverage
    if coverage is not None and coverage < MIN_LINE_COVERAGE:
        return False, (f"the tests' calls ran {coverage:.0%} of the function's lines "
                       f"(under {MIN_LINE_COVERAGE:.0%})")
    return True, ""


def _too_few_checked_calls(report: DivergenceReport) -> str:
    """Why ``report``'s checked calls are too few to reach a fix, in the report's words."""
    if report.recorded_calls == 0:
        if report.failing_inputs == 0:
            return "no passing test's call of the function could be compared"
        return (f"no passing test's call of the function could be compared, and the failing tests "
                f"check only {report.failing_inputs} different call(s) of it (under {MIN_CHECKED_CALLS})")
    return (f"the tests check only {report.checked_calls} call(s) of the function with a known answer "
            f"({report.recorded_calls} by passing tests, {report.generated_calls} generated near them, "
            f"{report.failing_inputs} by the failing tests; under {MIN_CHECKED_CALLS})")


class ShadowOutput(Frozen):
    """The shadow plugin's records from one run."""

    found: bool = Field(description="Whether the plugin found the target in both versions.")
    why: str = Field("", description="Why it did not, or why nothing was recorded.")
    comparisons: tuple[CallComparison, ...] = ()
    uncomparable: int = 0
    uncomparable_why: str = Field("", description="The commonest reason calls could not be compared.")
    executable: tuple[int, ...] = ()
    executed: tuple[int, ...] = ()
    failing_executed: tuple[int, ...] = ()
    arcs: tuple[tuple[int, int], ...] = ()
    failing_neighbours: tuple[str, ...] = Field((), description="Keys of the inputs next to failing calls.")

    def report(self) -> DivergenceReport:
        """The divergence report of these records."""
        return divergence_of(self.comparisons, self.executable, self.executed, self.arcs, self.uncomparable,
                             self.failing_neighbours, self.uncomparable_why, self.failing_executed)


def read_shadow_output(lines: Iterable[str]) -> ShadowOutput:
    """The plugin's ``shadow-*`` records among a run's JSON lines (others, and torn lines, skipped);
    the last ``shadow-lines`` record holds (each is cumulative)."""
    found: bool | None = None
    why = ""
    comparisons: list[CallComparison] = []
    uncomparable = 0
    reasons: Counter[str] = Counter()
    executable: list[int] = []
    executed: list[int] = []
    failing_executed: list[int] = []
    arcs: list[tuple[int, int]] = []
    failing_neighbours: list[str] = []
    for line in lines:
        if '"shadow-' not in line:
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        kind = record.get("kind")
        if kind == "shadow-target":
            found = bool(record.get("found"))
            why = str(record.get("why", ""))
            executable = [int(n) for n in record.get("executable", ())]
        elif kind == "shadow-call":
            comparisons.append(CallComparison(test_id=record["test"], origin=record["origin"],
                                              kind=record["call"], changed=bool(record["changed"]),
                                              detail=record.get("detail", ""),
                                              inputs=str(record.get("inputs", "")),
                                              before=str(record.get("before", "")),
                                              after=str(record.get("after", "")),
                                              relation=str(record.get("relation", ""))))
        elif kind == "shadow-uncomparable":
            uncomparable += 1
            reasons[str(record.get("why", ""))] += 1
        elif kind == "shadow-failing-neighbours":
            failing_neighbours.extend(str(key) for key in record.get("inputs", ()))
        elif kind == "shadow-lines":
            executed = [int(n) for n in record.get("executed", ())]
            failing_executed = [int(n) for n in record.get("failing_executed", ())]
            arcs = [(int(a), int(b)) for a, b in record.get("arcs", ())]
    if found is None:
        return ShadowOutput(found=False, why="the shadow plugin wrote nothing (it did not load, or the run "
                            "ended before it started)")
    return ShadowOutput(found=found, why=why, comparisons=tuple(comparisons), uncomparable=uncomparable,
                        uncomparable_why=reasons.most_common(1)[0][0] if reasons else "",
                        executable=tuple(executable), executed=tuple(executed),
                        failing_executed=tuple(failing_executed), arcs=tuple(arcs),
                        failing_neighbours=tuple(failing_neighbours))

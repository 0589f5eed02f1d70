"""Each test's time limit from its own duration (``--test-timeout auto``). Pure.

A test may run ``factor`` times its duration in the first run, plus ``slack_s``, never more than
``cap_s`` (``limit_for``). A test that timed out in the first run has no duration of its own: it
gets ``factor`` times the median passing test's, plus ``slack_s`` (a test that loops on the buggy
code costs seconds in every later run, not its first-run limit again). The first run itself takes
the durations the history recorded (``limits_from_history``), and ``FIRST_RUN_TIMEOUT_S`` for a test
with none; a test made during the run (generated, carved) gets ``NEW_TEST_TIMEOUT_S``. Limits are
rounded up to whole seconds (to 5 s above 10 s): a run's cache key holds them, and the same test
measured a little slower must not make another key.

The defaults live with the option, in ``equisa_core.common.options``.

A run under a deadline (the time budget of ``--max-seconds``, ``tasks.sandbox.contract.run_deadline``) gets
the sooner of its own wall clock and the time left (``within_deadline``); once the deadline has
passed, the clock a loop's machine reads is past its budget (``budget_reading``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from equisa_core.common.models import TestOutcome, TestResult
from equisa_core.common.options import (
    FIRST_RUN_SHARE_OF_WALL_CLOCK,
    FIRST_RUN_TIMEOUT_S,
    TIMEOUT_CAP_S,
    TIMEOUT_FACTOR,
    TIMEOUT_SLACK_S,
    PerTestLimit,
)

__all__ = ["TIMED_OUT", "limit_for", "limits_from_run", "limits_from_history", "slowest_finished",
           "timed_out", "uniform_limit", "first_run_cap", "stopped_note", "within_deadline",
           "budget_reading"]

#: The exception type the probe fails a test with when it outlives its limit.
TIMED_OUT = "equisa_probe.TestTimeout"


def limit_for(duration_s: float, factor: float = TIMEOUT_FACTOR, slack_s: float = TIMEOUT_SLACK_S,
              cap_s: float = TIMEOUT_CAP_S) -> float:
    """A test's limit: ``factor`` x ``duration_s`` + ``slack_s``, rounded up, at most ``cap_s``."""
    return min(cap_s, _rounded_up(factor * max(duration_s, 0.0) + slack_s))


def _rounded_up(seconds: float) -> float:
    """``seconds`` rounded up to a whole second, or to 5 s above 10 s."""
    if seconds <= 10.0:
        return float(math.ceil(seconds))
    return 5.0 * math.ceil(seconds / 5.0)


def timed_out(result: TestResult) -> bool:
    """Whether ``result`` is a test the probe stopped at its time limit."""
    return result.outcome is not TestOutcome.PASSED and result.exception_type == TIMED_OUT


def slowest_finished(results: Iterable[TestResult]) -> float:
    """The longest duration among ``results`` that were not stopped at their limit (0 s when none).

    A test stopped at its limit (one that loops on the buggy code) says nothing of how long a call
    may take: its duration is the limit itself."""
    return max((r.duration for r in results if not timed_out(r)), default=0.0)


def limits_from_run(results: Iterable[TestResult], factor: float = TIMEOUT_FACTOR,
                    slack_s: float = TIMEOUT_SLACK_S, cap_s: float = TIMEOUT_CAP_S) -> dict[str, float]:
    """Test id -> its limit from its duration in ``results`` (a first run); a test that timed out
    there gets ``factor`` x the median passing duration + ``slack_s`` (0 s when none passed)."""
    ran = list(results)
    passing = sorted(r.duration for r in ran if r.outcome is TestOutcome.PASSED)
    typical = _median(passing)
    return {r.test_id: limit_for(typical if timed_out(r) else r.duration, factor, slack_s, cap_s)
            for r in ran}


def limits_from_history(durations: Mapping[str, float], factor: float = TIMEOUT_FACTOR,
                        slack_s: float = TIMEOUT_SLACK_S, cap_s: float = TIMEOUT_CAP_S) -> dict[str, float]:
    """Test id -> its first-run limit from the duration the history recorded for it."""
    return {test: limit_for(duration, factor, slack_s, cap_s) for test, duration in durations.items()}


def uniform_limit(option: PerTestLimit, wall_clock_s: float | None = None) -> float | None:
    """The limit of a test with no limit of its own: the option's seconds, or under ``auto``
    ``FIRST_RUN_TIMEOUT_S`` (its duration is not known yet), at most ``first_run_cap`` of the run's
    ``wall_clock_s``."""
    if isinstance(option, str):  # the one string it may be: AUTO_TIMEOUT
        return min(FIRST_RUN_TIMEOUT_S, first_run_cap(wall_clock_s))
    return option


def first_run_cap(wall_clock_s: float | None) -> float:
    """The most a test may run under ``auto`` before its duration is known:
    ``FIRST_RUN_SHARE_OF_WALL_CLOCK`` x the run's wall clock, rounded up, at least 1 s (no cap
    without a wall clock)."""
    if wall_clock_s is None:
        return math.inf
    return max(1.0, _rounded_up(FIRST_RUN_SHARE_OF_WALL_CLOCK * wall_clock_s))


def within_deadline(wall_clock_s: float, left_s: float | None) -> tuple[float, bool]:
    """A run's wall clock under a deadline ``left_s`` seconds away: ``min(wall_clock_s, max(0,
    left_s))``, and whether the deadline is what binds (``left_s < wall_clock_s``: a run stopped then
    was cut by the deadline, not by its own clock). None: no deadline, the run's own clock."""
    if left_s is None or left_s >= wall_clock_s:
        return wall_clock_s, False
    return max(0.0, left_s), True


def budget_reading(elapsed_s: float, budget_s: float, deadline_passed: bool) -> float:
    """The clock a loop's machine is sent: ``elapsed_s``, or once the run's deadline has passed,
    at least just past ``budget_s`` (the deadline is the budget's end, whichever clock a nested
    step started its own from)."""
    if not deadline_passed:
        return elapsed_s
    return max(elapsed_s, math.nextafter(budget_s, math.inf))


def _median(values: Sequence[float]) -> float:
    return values[len(values) // 2] if values else 0.0


def stopped_note(results: Iterable[TestResult], limits: Mapping[str, float], default: float | None,
                 ) -> str | None:
    """What to tell the user when the first run stopped tests at their automatic limits: which ones,
    at what limit, and how to give a test that is slow by nature more time; None when none was."""
    stopped = sorted(r.test_id for r in results if timed_out(r))
    if not stopped:
        return None
    shown = ", ".join(f"{t} ({limits.get(t, default or 0.0):g}s)" for t in stopped[:5])
    more = f" and {len(stopped) - 5} more" if len(stopped) > 5 else ""
    return (f"stopped at their automatic time limit (--test-timeout auto: {FIRST_RUN_TIMEOUT_S:g}s for a "
            f"test the history has no duration for, else {TIMEOUT_FACTOR:g}x that duration + "
            f"{TIMEOUT_SLACK_S:g}s): {shown}{more}; they count as failing. If a test is slow by nature "
            f"rather than looping, give every test more time with --test-timeout SECONDS")

"""Each test's time limit from its own duration (``equisa_core.common.time_limits``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from equisa_core.common.models import TestOutcome, TestResult
from equisa_core.common.options import (
    FIRST_RUN_TIMEOUT_S,
    TIMEOUT_CAP_S,
    TIMEOUT_FACTOR,
    TIMEOUT_SLACK_S,
    SandboxOptions,
    default_of,
)
from equisa_core.common.time_limits import (
    TIMED_OUT,
    budget_reading,
    limit_for,
    limits_from_history,
    limits_from_run,
    slowest_finished,
    stopped_note,
    timed_out,
    uniform_limit,
    within_deadline,
)


def result(test_id: str, outcome: str, duration: float, exception_type: str | None = None) -> TestResult:
    return TestResult(test_id=test_id, outcome=TestOutcome(outcome), duration=duration,
                      exception_type=exception_type)


def test_the_default_is_auto_with_10x_plus_2s_at_most_60s_and_30s_in_a_first_run():
    assert default_of(SandboxOptions, "test_timeout_s") == "auto"
    assert (TIMEOUT_FACTOR, TIMEOUT_SLACK_S, TIMEOUT_CAP_S, FIRST_RUN_TIMEOUT_S) == (10, 2, 60, 30)
    assert uniform_limit("auto") == FIRST_RUN_TIMEOUT_S
    assert uniform_limit(300.0) == 300.0 and uniform_limit(None) is None  # a number: today's behaviour


def test_a_limit_is_ten_times_the_duration_plus_slack_rounded_up_and_capped():
    assert limit_for(0.0) == 2.0
    assert limit_for(0.01) == 3.0  # 2.1 s, rounded up to a whole second
    assert limit_for(0.5) == 7.0
    assert limit_for(1.2) == 15.0  # 14 s: above 10 s, rounded up to 5 s
    assert limit_for(30.0) == 60.0  # capped
    assert limit_for(1.0, factor=3, slack_s=1, cap_s=100) == 4.0


def test_a_test_that_timed_out_gets_ten_times_the_median_passing_duration():
    results = [result("t::fast", "passed", 0.1), result("t::mid", "passed", 0.3),
               result("t::slow", "passed", 2.0), result("t::fails", "failed", 0.05, "AssertionError"),
               result("t::loops", "failed", 10.0, TIMED_OUT)]
    limits = limits_from_run(results)
    assert limits == {"t::fast": 3.0, "t::mid": 5.0, "t::slow": 25.0, "t::fails": 3.0, "t::loops": 5.0}
    assert timed_out(results[-1]) and not timed_out(results[-2])
    # none passed: the slack alone
    assert limits_from_run([result("t::loops", "failed", 10.0, TIMED_OUT)]) == {"t::loops": 2.0}


def test_the_slowest_finished_test_ignores_one_stopped_at_its_limit():
    # the overfitting guard's driver tests take their limit from this: a looping test's 30 s would
    # give each of them the cap
    results = [result("t::a", "passed", 0.2), result("t::b", "failed", 0.7, "AssertionError"),
               result("t::loops", "failed", 30.0, TIMED_OUT)]
    assert slowest_finished(results) == 0.7
    assert limit_for(slowest_finished(results)) == 9.0
    assert slowest_finished(results[2:]) == 0.0 and slowest_finished([]) == 0.0


def test_the_history_gives_the_first_runs_limits():
    assert limits_from_history({"t::a": 0.05, "t::b": 100.0}) == {"t::a": 3.0, "t::b": 60.0}


def test_the_note_names_the_stopped_tests_their_limits_and_the_option():
    results = [result("t::ok", "passed", 0.1), result("t::loops", "failed", 10.0, TIMED_OUT),
               result("t::known", "failed", 3.0, TIMED_OUT)]
    note = stopped_note(results, {"t::known": 3.0}, 10.0)
    assert note is not None
    assert "t::known (3s), t::loops (10s)" in note and "--test-timeout SECONDS" in note
    assert stopped_note(results[:1], {}, 10.0) is None


durations = st.floats(min_value=0.0, max_value=1e6, allow_nan=False)
positive = st.floats(min_value=0.001, max_value=1e4, allow_nan=False)


@given(durations, durations, st.floats(min_value=1.0, max_value=100.0), positive, positive)
def test_limits_are_between_the_slack_and_the_cap_and_grow_with_the_duration(
        first: float, second: float, factor: float, slack: float, room: float) -> None:
    cap = slack + room
    short, long = sorted((first, second))
    low, high = limit_for(short, factor, slack, cap), limit_for(long, factor, slack, cap)
    assert slack <= low <= high <= cap


@given(st.lists(st.tuples(st.sampled_from(["passed", "failed", "timeout"]), durations), max_size=20))
def test_every_test_of_a_run_gets_a_limit_within_bounds(runs: list[tuple[str, float]]) -> None:
    results = [result(f"t::{i}", "failed" if kind == "timeout" else kind, duration,
                      TIMED_OUT if kind == "timeout" else None) for i, (kind, duration) in enumerate(runs)]
    limits = limits_from_run(results)
    assert set(limits) == {r.test_id for r in results}
    assert all(TIMEOUT_SLACK_S <= limit <= TIMEOUT_CAP_S for limit in limits.values())


# --- a run's deadline (``within_deadline``, ``budget_reading``) ------------------------------------


def test_a_run_far_from_its_deadline_keeps_its_own_wall_clock() -> None:
    assert within_deadline(60.0, None) == (60.0, False)
    assert within_deadline(60.0, 60.0) == (60.0, False)
    assert within_deadline(60.0, 600.0) == (60.0, False)


def test_a_run_near_its_deadline_is_cut_at_the_deadline_and_says_so() -> None:
    assert within_deadline(60.0, 12.5) == (12.5, True)
    assert within_deadline(60.0, -3.0) == (0.0, True)  # passed already: no time at all


@given(st.floats(0.001, 1e5), st.none() | st.floats(-1e5, 1e5))
def test_the_wall_clock_is_the_sooner_of_the_two_and_binds_only_when_the_deadline_is_sooner(
        own: float, left: float | None) -> None:
    seconds, cut = within_deadline(own, left)
    assert 0.0 <= seconds <= own
    assert cut == (left is not None and left < own)
    assert seconds == (max(0.0, left) if cut and left is not None else own)


@given(st.floats(0, 1e5), st.floats(0.001, 1e5), st.booleans())
def test_the_clock_reads_past_the_budget_once_the_deadline_passed(
        elapsed: float, budget: float, passed: bool) -> None:
    reading = budget_reading(elapsed, budget, passed)
    assert reading >= elapsed
    assert (reading > budget) if passed else reading == elapsed

"""The repair machine's time budget: the driver's clock (``Clocked``) stops the loop, the verdicts made
so far are kept, and a plausible candidate stays plausible only."""

from __future__ import annotations

from equisa_core.errors import EXIT_BUDGET_SPENT, EXIT_OK, repair_exit_code
from equisa_core.repair import machine
from equisa_core.repair.report import repair_status
from equisa_core.validation.candidates import PatchCandidate, PatchEvaluation, PatchStatus


def _candidate(name: str) -> PatchCandidate:
    return PatchCandidate(id=name, generator="mutation", target="m.f", description=name,
                          files={"m.py": "def f():\n    return 1\n"})


def _at_validation(budget_s: float) -> machine.RepairState:
    """A run that localized, found its target and has a first candidate validated as plausible only,
    and a second one pending."""
    state = machine.initial_state(machine.RepairBudget(max_seconds=budget_s))
    state = machine.record(state, machine.Localized(patchable=("m.f",)))
    state = machine.record(state, machine.TargetsFound(targets=("m.f",)))
    state = machine.record(state, machine.Generated(candidate=_candidate("c1")))
    state = machine.record(state, machine.Validated(evaluation=PatchEvaluation(
        candidate="c1", status=PatchStatus.OVERFITTING, detail="a literal of the failing test",
        checks={"overfitting detectors": "a literal of the failing test"})))
    return machine.record(state, machine.Generated(candidate=_candidate("c2")))


def test_the_clock_under_the_budget_changes_nothing_but_the_time():
    state = _at_validation(60.0)
    later = machine.record(state, machine.Clocked(elapsed_s=59.0))
    assert later.elapsed_s == 59.0 and machine.verdict(later) is None
    assert machine.next_steps(later) == machine.next_steps(state)
    assert machine.seconds_left(later) == 1.0


def test_a_spent_budget_stops_the_loop_and_keeps_the_plausible_verdict():
    state = machine.record(_at_validation(60.0), machine.Clocked(elapsed_s=61.5))
    verdict = machine.verdict(state)
    assert verdict is not None and not verdict.converged
    assert state.stopped_because is not None and state.stopped_because.startswith("time budget (60s) spent")
    assert machine.budget_spent(state) and machine.next_steps(state) == []
    assert [e.candidate for e in state.evaluations] == ["c1"]  # c2 was never validated: dropped
    status = repair_status(state.evaluations)
    assert status == "plausible_only"  # never 'fixed' because time ran out
    assert repair_exit_code(status, state.stopped_because) == EXIT_BUDGET_SPENT
    # A verdict is final: later observations change nothing.
    assert machine.record(state, machine.Clocked(elapsed_s=1.0)) == state
    assert machine.record(state, machine.Validated(evaluation=PatchEvaluation(
        candidate="c2", status=PatchStatus.SOUND))) == state


def test_a_sound_candidate_before_the_deadline_is_fixed_with_exit_0():
    state = machine.record(_at_validation(60.0), machine.Validated(evaluation=PatchEvaluation(
        candidate="c2", status=PatchStatus.SOUND)))
    assert state.stopped_because == "a sound candidate"
    assert machine.record(state, machine.Clocked(elapsed_s=100.0)).stopped_because == "a sound candidate"
    assert repair_exit_code(repair_status(state.evaluations), state.stopped_because) == EXIT_OK


def test_the_budget_stops_before_the_first_target_is_found():
    state = machine.initial_state(machine.RepairBudget(max_seconds=20.0))
    state = machine.record(state, machine.Localized(patchable=("m.f",)))
    state = machine.record(state, machine.Clocked(elapsed_s=20.0))
    assert machine.budget_spent(state) and state.evaluations == ()
    assert repair_exit_code(repair_status(state.evaluations), state.stopped_because) == EXIT_BUDGET_SPENT


def test_the_repair_budget_defaults_to_the_option():
    from equisa_core.common.options import RepairLocalizationOptions, default_of

    assert machine.RepairBudget().max_seconds == default_of(RepairLocalizationOptions, "max_seconds") == 120.0

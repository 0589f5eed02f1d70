"""The mutant screening's time budget, a share of the seconds the run took to trace the suite, and
its estimated cost.

On the real-bug benchmark the screening moves the truth to the top in a few bugs, but where the
failing tests are slow or the screened functions long it costs several times the trace, and a
user who could have had the trace's answer (spectrum and prior) in the time SBFL takes waits for
it. So the screening gets a budget: ``ratio`` times the seconds the run took until its suite was
traced, and never less than ``SCREEN_FLOOR_S`` (``ScreeningCost.budget_s``). It tries the
functions worth it most likely first, side by side in its processes, and the mutants left when the
budget is spent are not run: a partial screening of the leaders that fit, measured by the clock
rather than by an estimate (the functions it could not finish are the report's ``left_out``). A
run also records, for the benchmark's replays (``bench/screening_cost.py``), what the whole
screening was estimated to cost:

    SETUP_S + sum over the screened functions f of
        min(mutants per function, MUTANTS_PER_LINE x lines of f)
        x sum over the failing tests that run f of (traced duration + ROUND_TEST_S)
    / the processes the screening runs in

(a mutant runs its function's failing tests, and one that fixes none stops after them: most do).
The ratio was fitted by ``bench/screening_cost.py`` on the benchmark's runs with leave-one-project-
out validation (``FITTED_SCREEN_COST_RATIO``), when a screening over it was not run at all; the
budget now cuts such a screening short instead. Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pydantic import Field

from equisa_core.common.fitted import FITTED_SCREEN_COST_RATIO
from equisa_core.common.loop import Frozen
from equisa_core.common.models import Node

__all__ = ["FITTED_SCREEN_COST_RATIO", "MUTANTS_PER_LINE", "ROUND_TEST_S", "SCREEN_FLOOR_S", "SETUP_S",
           "ScreeningCost", "screening_estimate"]

#: Mutants made per line of a function (a function's mutants are capped by the run's setting too).
MUTANTS_PER_LINE = 2
#: A mutant round's own cost per test run (swapping the code in, pytest's protocol), in seconds.
ROUND_TEST_S = 0.01
#: Making the mutants and sending them, once per screening, in seconds.
SETUP_S = 0.2
#: The least budget a screening gets, in seconds, however quick the trace was: a user does not
#: notice half a second, and on a small suite it screens the leading functions (the bundled
#: invoicing example's three leaders, 54 mutants in two processes: about 0.3 s).
SCREEN_FLOOR_S = 0.5


class ScreeningCost(Frozen):
    """The mutant screening's budget and estimated cost, against the seconds the trace took."""

    functions: tuple[str, ...] = Field(description="The functions worth screening, most likely first.")
    estimate_s: float = Field(description="Estimated seconds of screening them all (module docstring).")
    traced_s: float = Field(description="Seconds the run took until its suite was traced.")
    ratio: float | None = Field(description="The budget is ratio x traced_s, at least floor_s; None: no "
                                "budget (every function worth it is screened whole).")
    floor_s: float = Field(SCREEN_FLOOR_S, description="The least budget, in seconds.")
    left_out: tuple[str, ...] = Field(
        (), description="Once screened: the functions whose mutants the budget did not leave time for "
        "(not all run and no fix found); their evidence is not counted.")

    @property
    def budget_s(self) -> float | None:
        """The seconds the screening's mutant rounds may take; None: no budget."""
        return None if self.ratio is None else round(max(self.ratio * self.traced_s, self.floor_s), 3)

    def note(self) -> str | None:
        """What the budget, or without one what cut the screening short (the run's deadline, a round
        that did not finish), left out; None when every function worth it was screened."""
        if not self.left_out:
            return None
        done = len(self.functions) - len(self.left_out)
        cut = ("the mutant screening, with no budget of its own, was cut short: it" if self.ratio is None
               else f"the mutant screening's budget of {self.budget_s or 0:.1f}s ({self.ratio:g} times the "
               f"{self.traced_s:.1f}s the trace took, at least {self.floor_s:g}s)")
        return (f"{cut} screened {done} of the {len(self.functions)} functions worth it; left out: "
                f"{', '.join(self.left_out)}")


def screening_estimate(functions: Iterable[str], nodes: Mapping[str, Node],
                       failing_durations: Mapping[str, Sequence[float]], mutants_cap: int,
                       processes: int) -> float:
    """The estimated seconds of screening ``functions`` (module docstring); ``failing_durations``:
    per function, the traced durations of the failing tests that run it."""
    total = 0.0
    for fqn in functions:
        node = nodes[fqn]
        lines = max((node.end_line or 0) - (node.start_line or 0) + 1, 1)
        mutants = min(mutants_cap, MUTANTS_PER_LINE * lines)
        total += mutants * sum(d + ROUND_TEST_S for d in failing_durations.get(fqn, ()))
    return SETUP_S + total / max(processes, 1)

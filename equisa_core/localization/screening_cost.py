"""Whether the mutant screening is worth its time: its cost, estimated from the trace, against the
seconds the run took to trace the suite.

On the real-bug benchmark the screening moves the truth to the top in a few bugs, but where the
failing tests are slow or the screened functions long it costs several times the trace, and a
user who could have had the trace's answer (spectrum and prior) in the time SBFL takes waits for
it. So a run estimates, once the suite is traced, what its screening would cost:

    SETUP_S + sum over the screened functions f of
        min(mutants per function, MUTANTS_PER_LINE x lines of f)
        x sum over the failing tests that run f of (traced duration + ROUND_TEST_S)
    / the processes the screening runs in

(a mutant runs its function's failing tests, and one that fixes none stops after them: most do),
and screens only when that is at most ``ratio`` times the seconds the run has taken so far;
otherwise it stops with the trace's answer (``ScreeningCost.declined``). The ratio is fitted by
``bench/screening_cost.py`` on the benchmark's runs with leave-one-project-out validation
(``FITTED_SCREEN_COST_RATIO``). Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pydantic import Field

from equisa_core.common.fitted import FITTED_SCREEN_COST_RATIO
from equisa_core.common.loop import Frozen
from equisa_core.common.models import Node

__all__ = ["FITTED_SCREEN_COST_RATIO", "MUTANTS_PER_LINE", "ROUND_TEST_S", "SETUP_S", "ScreeningCost",
           "screening_estimate"]

#: Mutants made per line of a function (a function's mutants are capped by the run's setting too).
MUTANTS_PER_LINE = 2
#: A mutant round's own cost per test run (swapping the code in, pytest's protocol), in seconds.
ROUND_TEST_S = 0.01
#: Making the mutants and sending them, once per screening, in seconds.
SETUP_S = 0.2


class ScreeningCost(Frozen):
    """What the mutant screening was expected to cost, against the seconds the trace took."""

    functions: tuple[str, ...] = Field(description="The functions the screening would try the mutants of.")
    estimate_s: float = Field(description="Its estimated seconds (module docstring).")
    traced_s: float = Field(description="Seconds the run took until its suite was traced.")
    ratio: float | None = Field(description="Screen only when estimate_s <= ratio x traced_s; None: always.")

    @property
    def declined(self) -> bool:
        """Whether the screening costs too much for its run (the run then stops with the trace's answer)."""
        return bool(self.functions) and self.ratio is not None and \
            self.estimate_s > self.ratio * self.traced_s

    def reason(self) -> str:
        """Why the run stopped without screening (for ``declined`` costs)."""
        count = len(self.functions)
        return (f"the mutant screening of {count} function{'' if count == 1 else 's'} would take about "
                f"{self.estimate_s:.1f}s, more than {self.ratio:g} times the {self.traced_s:.1f}s the "
                f"trace took: the answer is the trace's")


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

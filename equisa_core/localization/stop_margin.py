"""When a deterministic run's answer is the answer: the calibrated margin that ends a run once the
mutant screening's evidence is in.

After the trace and the prior (the first answer), the flaky re-run and the mutant screening of the
likeliest functions (with the whole-suite confirmation of a fix it found) are cheap and, on the
real-bug benchmark, worth it: they move the truth to the top in more bugs than they move it down.
Discovery, the value comparison and the inspections that follow cost several times the trace and,
there, paid on the near-ties only: replayed on 111 real bugs (Top-1/3/5), stopping every run once
the screening is in answers 42/65/75, going on everywhere 41/70/77, going on below the margin only
44/69/78. So a run stops once the screening is in when the
leader's confidence is at least ``margin`` times the runner-up's (``is_decisive``); below that,
the checks go on.

The margin is fitted by ``bench/screening_stop.py`` on the real-bug benchmark's runs, with
leave-one-project-out validation (``FITTED_STOP_MARGIN``). Pure functions, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from equisa_core.common.fitted import FITTED_STOP_MARGIN

__all__ = ["FITTED_STOP_MARGIN", "leader_margin", "is_decisive"]



def leader_margin(confidences: Sequence[float]) -> float:
    """The leader's confidence over the runner-up's, for confidences best first: 1.0 for a tie,
    ``inf`` when there is no runner-up (or its confidence is 0), ``0.0`` for an empty ranking."""
    if not confidences:
        return 0.0
    if len(confidences) == 1 or confidences[1] <= 0:
        return math.inf
    return confidences[0] / confidences[1]


def is_decisive(confidences: Sequence[float], margin: float | None) -> bool:
    """Whether a ranking (confidences best first) is decisive at ``margin``; never with None (off)
    or an empty ranking."""
    if margin is None or not confidences:
        return False
    return leader_margin(confidences) >= margin

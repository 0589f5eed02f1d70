"""The fitted defaults that the options read: each value is fitted by a benchmark under ``bench/`` and
used by its loop's module (named on each). They live here, at the bottom of the core, so that
``common.options`` need not import a loop. Pure constants."""

from __future__ import annotations

from typing import Literal

__all__ = ["DEFAULT_MIN_EXPECTED_SHIFT", "DEFAULT_TABLE", "FITTED_SCREEN_COST_RATIO", "FITTED_STOP_MARGIN",
           "TableName"]

#: The likelihood tables of ``localization.calibrated_likelihoods``.
TableName = Literal["fitted", "seed"]
#: The deterministic mode's table and the stopping rule's threshold, by default. The threshold
#: is the largest of ``bench/likelihood_fit.py``'s stopping-rule replay that keeps the
#: leave-one-project-out Top-1 of running every inspection (it runs 58% of them).
DEFAULT_TABLE: TableName = "fitted"
DEFAULT_MIN_EXPECTED_SHIFT = 0.005

#: Used by ``localization.screening_cost``.
#: Screen when the estimate is at most this many times the seconds the run took to trace:
#: ``bench/screening_cost.py`` on the real-bug benchmark's runs at eefe41d that record it (46 bugs, all
#: six projects, screening always; the most Top-1 with a median wall ratio to FauxPy of at most 0.9).
#: In-sample 16/23/27 (Top-1/3/5) at a median ratio of 0.867, 15 runs screening, against 17/26/28
#: at 1.659 when every run screens; leave-one-project-out (betas 0 to 0.25) 16/23/26 at 0.867.
#: Results: bench/results/screening_cost_2026-12-01_eefe41d.json.
FITTED_SCREEN_COST_RATIO = 0.25

#: Used by ``localization.stop_margin``.
#: The leader/runner-up confidence ratio from which a deterministic run stops once the screening is
#: in: ``bench/screening_stop.py`` on the 111 real bugs' whole runs at 5e3c5c0 (at most a fifth of
#: the runs may go on). In-sample it answers 44/69/78 (Top-1/3/5) with 16 runs going on, against
#: 42/65/75 when every run stops there and 41/70/77 when none does; with the margin fitted on the
#: other projects (leave-one-project-out: 1.001 to 1.023), 43/68/76 with 14 going on. Results:
#: bench/results/screening_stop_2026-11-27_5e3c5c0.json.
FITTED_STOP_MARGIN = 1.023

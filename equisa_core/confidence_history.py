"""Every node's confidence after each Bayesian iteration, replayed from a localization report. Pure.

The Localization loop reports each inspection's target with its confidence before (``prior``) and
after (``posterior``); ``bayes.update_with_likelihoods`` moves only the target and rescales every
other node in proportion to its previous confidence (single-bug hypothesis). So the whole vector
after iteration ``i`` follows from the one before::

    c_i[target] = posterior_i
    c_i[n]      = (1 - posterior_i) * c_{i-1}[n] / sum(c_{i-1}[m] for m != target)    for n != target
    c_i[n]      = (1 - posterior_i) / (number of other nodes)    when that sum is 0

starting from the priors ``initial_confidence(suspiciousness)``. The report and the history plot
use this instead of a second record kept by the loop.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from equisa_core.bayes import initial_confidence
from equisa_core.localization import InspectionRecord, RankedNode

__all__ = ["confidence_history"]


def confidence_history(
    ranking: Sequence[RankedNode], inspections: Sequence[InspectionRecord]
) -> list[dict[str, float]]:
    """Confidences before the first inspection (index 0) and after each one (index ``iteration``)."""
    current = initial_confidence({node.fqn: node.suspiciousness for node in ranking})
    history = [current]
    for record in sorted(inspections, key=lambda r: r.iteration):
        current = _step(current, record.target, record.posterior)
        history.append(current)
    return history


def _step(confidences: Mapping[str, float], target: str, posterior: float) -> dict[str, float]:
    if target not in confidences:
        return dict(confidences)
    others = {f: c for f, c in confidences.items() if f != target}
    total = math.fsum(others.values())
    rest = 1.0 - posterior
    updated = {f: (rest * c / total if total > 0 else rest / len(others)) for f, c in others.items()}
    updated[target] = posterior
    return {f: updated[f] for f in confidences}

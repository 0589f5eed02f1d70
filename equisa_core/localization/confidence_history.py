"""Every node's confidence after each Bayesian iteration, replayed from a localization report. Pure.

The Localization loop reports each inspection's target with its confidence before (``prior``) and
after (``posterior``); ``bayes.update_with_likelihoods`` moves only the target and rescales every
other node in proportion to its previous confidence (single-bug hypothesis), so the confidences
sum to 1 and, with ``S = 1 - prior`` the others' share before the step::

    c_i[target] = posterior_i;      c_i[n] = (1 - posterior_i) * c_{i-1}[n] / (1 - prior_i)

Each step is undone from the one after it, starting from the final confidences (the ranking)::

    c_{i-1}[target] = prior_i;      c_{i-1}[n] = c_i[n] * (1 - prior_i) / (1 - posterior_i)

Walking backwards needs no knowledge of how the loop chose its priors (posteriors are clamped
below 1, so the division is defined). The report and the history use this instead of a second
record kept by the loop.
"""

from __future__ import annotations

from collections.abc import Sequence

from equisa_core.localization.steps import InspectionRecord, RankedNode

__all__ = ["confidence_history"]


def confidence_history(
    ranking: Sequence[RankedNode], inspections: Sequence[InspectionRecord]
) -> list[dict[str, float]]:
    """Confidences before the first inspection (index 0) and after each one (index ``iteration``)."""
    current = {node.fqn: node.confidence for node in ranking}
    history = [current]
    for record in sorted(inspections, key=lambda r: r.iteration, reverse=True):
        current = _undo(current, record.target, record.prior, record.posterior)
        history.append(current)
    return history[::-1]


def _undo(after: dict[str, float], target: str, prior: float, posterior: float) -> dict[str, float]:
    if target not in after or posterior >= 1.0:
        return dict(after)
    scale = (1.0 - prior) / (1.0 - posterior)
    return {f: (prior if f == target else c * scale) for f, c in after.items()}

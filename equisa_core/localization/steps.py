"""The Localization loop's state and its pure steps (seed 002 §2, §3; seed 000 §5).

The loop's state machine (``equisa_core.localization.machine``) hands every inspection it counts
to ``apply_observation``, which classifies it into an ``Outcome`` and moves the confidences, and
builds the report with ``rank``. Everything here is deterministic and testable alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.cost import CostLedger
from equisa_core.common.models import REPORT_SCHEMA_VERSION
from equisa_core.common.sandbox_policy import SandboxIsolation
from equisa_core.discovery.interface import DiscoveryReport
from equisa_core.environment import SuiteEnvironment
from equisa_core.errors import localize_exit_code
from equisa_core.localization.bayes import (
    Outcome,
    classify,
    is_converged,
    update_confidences,
    update_with_likelihoods,
)
from equisa_core.localization.fix_evidence import FixEvidence
from equisa_core.localization.prior import NodeSignals, PriorWeights
from equisa_core.localization.screening_cost import ScreeningCost
from equisa_core.localization.signals import Signals

__all__ = [
    "RankedNode",
    "InspectionRecord",
    "PriorEvidence",
    "TestCounts",
    "LocalizationReport",
    "apply_observation",
    "rank",
]


class RankedNode(BaseModel):
    """A node in the final ranking."""

    model_config = ConfigDict(frozen=True)

    fqn: str
    file: str | None
    start_line: int | None
    end_line: int | None
    suspiciousness: float = Field(description="Tarantula score from the (amplified) suite.")
    confidence: float = Field(description="Posterior probability of being the bug.")
    prior: float = Field(0.0, description="The prior's score, from several signals "
                                          "(equisa_core.localization.prior), "
                                          "in [0, 1]; 1 for the prior's leader.")


class InspectionRecord(BaseModel):
    """One iteration of the loop: what was inspected, what was seen, how beliefs moved."""

    model_config = ConfigDict(frozen=True)

    iteration: int
    target: str
    strategy: str = Field(description="'deterministic' or 'llm': who wrote the inspection patch.")
    tests_run: tuple[str, ...]
    signals: Signals | None = Field(description="None for a record of mutant screening (no inspection ran).")
    reflection: str | None = Field(description="CONFIRMED_BUGGY, CONFIRMED_NOT_BUGGY or None.")
    reflection_by: str = Field(description="'traceback' (Golden Rule) or 'llm'.")
    reasoning: str
    outcome: Outcome | None = Field(description="The seed's outcome; None for a fix confirmation.")
    prior: float
    posterior: float
    invariants: int = Field(0, description="Assertions in a deterministic inspection patch.")
    mutants_tried: int = Field(0, description="Mutants of the target that ran against its tests.")
    fix_evidence: FixEvidence | None = Field(None, description="What the mutants showed, if they ran.")
    fix: str | None = Field(None, description="The fixing mutant: what it changes.")
    fix_source: str | None = Field(None, description="The target's source with the fix applied.")
    seconds: float = Field(0.0, ge=0, description="Wall time of this iteration (runs and reflection); "
                           "an inspection run ahead in a batch cost its batch's first iteration.")
    batch: int = Field(1, ge=1, description="Inspections that ran in the same sandbox process as this one "
                       "(deterministic inspections run ahead together, see tasks.localization.inspections).")


class TestCounts(BaseModel):
    """How many tests of each kind the run saw."""

    __test__ = False
    model_config = ConfigDict(frozen=True)

    passed: int
    failed: int
    flaky: int
    generated: int


class PriorEvidence(BaseModel):
    """What the prior was built from: each function's signals and the weights that combined them,
    kept so that new weights can be tried on a run without running its tests again."""

    model_config = ConfigDict(frozen=True)

    weights: PriorWeights
    signals: dict[str, NodeSignals]


#: Functions of the first answer a report keeps (``LocalizationReport.first_answer``).
FIRST_ANSWER_KEPT = 20


class LocalizationReport(BaseModel):
    """What ``equisa localize`` writes as JSON."""

    model_config = ConfigDict(frozen=True)

    schema_version: str = Field(REPORT_SCHEMA_VERSION, description="The schema's version (docs/schema/).")
    mode: str = Field(description="'llm' or 'deterministic'.")
    converged: bool
    stopped_because: str
    ranking: tuple[RankedNode, ...]
    first_answer: tuple[RankedNode, ...] = Field(
        (), description="The ranking from the trace and the prior alone (the flaky tests the trace's shards "
        "found left out), before a flaky re-run in a new process, the screening, Discovery and every "
        "inspection (its top FIRST_ANSWER_KEPT): spectrum-and-prior localization's answer, which the "
        "final ranking is compared with.")
    decisive_after_screening: bool = Field(
        False, description="The run ended once the mutant screening's evidence was in, its answer decisive "
        "by the calibrated margin (equisa_core.localization.stop_margin): no Discovery or inspection ran.")
    screening_cost: ScreeningCost | None = Field(
        None, description="The mutant screening's estimated cost against the seconds the trace took, and "
        "whether the run declined it as too costly (equisa_core.localization.screening_cost); None when "
        "no screening was planned before Discovery.")
    ambiguity_groups: tuple[tuple[str, ...], ...]
    inspections: tuple[InspectionRecord, ...]
    tests: TestCounts
    discovery: DiscoveryReport | None = Field(None, description="What the Discovery loop added.")
    cost: dict[str, float] = Field(default_factory=dict, description="LLM tokens and USD.")
    problems: tuple[str, ...] = Field((), description="What went wrong but did not stop the run.")
    sandbox: SandboxIsolation | None = Field(None, description="The isolation the run's sandboxes gave.")
    environment: SuiteEnvironment | None = Field(
        None, description="The interpreter that ran the suite, and how it was chosen or built.")
    prior: PriorEvidence | None = Field(None, description="The prior's signals and weights.")
    likelihoods: str | None = Field(
        None, description="The likelihood table the evidence was counted with: 'fitted' or 'seed' "
        "(equisa_core.localization.calibrated_likelihoods); None in reports older than the choice (seed).")
    run_id: str | None = Field(None, description="Flow run id the run was recorded under.")
    artifacts: str | None = Field(None, description="The run's folder in the artifact store.")
    ledger: CostLedger = Field(
        default_factory=CostLedger, exclude=True,
        description="The run's model calls (Discovery's, then the loop's), for its history rows and a "
        "caller's total; not written to the JSON, whose ``cost`` is its ``usd``.")

    def exit_code(self, fail_unless_converged: bool = False) -> int:
        """``equisa localize``'s exit code for this outcome: 0, converged or not; under
        ``--fail-unless-converged``, 26 when the time budget stopped a run that did not converge, else
        25 for one that did not converge."""
        return localize_exit_code(self.converged, self.stopped_because, fail_unless_converged)


def apply_observation(
    confidences: Mapping[str, float], target: str, signals: Signals, decision: str | None,
    likelihoods: Mapping[Outcome, tuple[float, float]] | None = None,
) -> tuple[Outcome, dict[str, float], str | None]:
    """Classify one inspection and update every node; also return the converged node, if any.

    The target moves by Bayes' rule on the outcome's likelihoods (``likelihoods``, a table of
    ``equisa_core.localization.calibrated_likelihoods``; None: the seed's); the other nodes share the rest of
    the mass in proportion to their previous confidence (single-bug hypothesis, see
    ``bayes.update_confidences``).
    """
    outcome = classify(signals, decision)
    if likelihoods is None:
        updated = update_confidences(confidences, target, outcome)
    else:
        updated = update_with_likelihoods(confidences, target, likelihoods[outcome])
    return outcome, updated, is_converged(updated)


#: Decimals of a confidence that order the ranking (see ``rank``).
RANK_DIGITS = 12


def rank(
    confidences: Mapping[str, float],
    suspiciousness: Mapping[str, float],
    locations: Mapping[str, tuple[str | None, int | None, int | None]],
    prior: Mapping[str, float] | None = None,
) -> list[RankedNode]:
    """Nodes best first: by confidence, then the prior's score, then suspiciousness, then name.

    Confidences are compared to ``RANK_DIGITS`` decimals: the same evidence counted in another order
    (parallel screenings finish in any order) gives products that differ in the last bits, and that
    noise must not order two nodes the evidence cannot tell apart."""
    prior = prior or {}
    order: Sequence[str] = sorted(
        confidences,
        key=lambda f: (-round(confidences[f], RANK_DIGITS), -prior.get(f, 0.0), -suspiciousness.get(f, 0.0),
                       f),
    )
    return [
        RankedNode(
            fqn=fqn, file=locations[fqn][0], start_line=locations[fqn][1], end_line=locations[fqn][2],
            suspiciousness=suspiciousness.get(fqn, 0.0), confidence=confidences[fqn],
            prior=prior.get(fqn, 0.0),
        )
        for fqn in order
    ]

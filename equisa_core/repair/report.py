"""What ``equisa repair`` reports: the verdict, the accepted patch and the evidence behind it. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.models import REPORT_SCHEMA_VERSION
from equisa_core.common.sandbox_policy import SandboxIsolation
from equisa_core.environment import SuiteEnvironment
from equisa_core.errors import repair_exit_code
from equisa_core.localization.interface import LocalizationReport
from equisa_core.operations.forge import PublishedFix
from equisa_core.validation.interface import PatchEvaluation, PatchStatus

__all__ = ["RepairStatus", "RepairReport", "repair_status", "evidence_of"]

RepairStatus = Literal["fixed", "plausible_only", "not_fixed", "error"]


class RepairReport(BaseModel):
    """What ``equisa repair`` writes as JSON."""

    model_config = ConfigDict(frozen=True)

    schema_version: str = Field(REPORT_SCHEMA_VERSION, description="The schema's version (docs/schema/).")
    status: RepairStatus = Field(description="fixed: a patch passed every check and the evidence reaches "
                                             "(its behaviour compared outside the failing tests, unchanged); "
                                             "plausible_only: one passed the suite, but a check weighs "
                                             "against it or the evidence does not reach (the reason is in "
                                             "`validation` and `evidence`).")
    mode: str = Field(description="'llm' or 'deterministic'.")
    target: str | None = Field(None, description="FQN of the function the accepted (or best) patch changes.")
    diff: str = Field("", description="The accepted patch (or the best plausible one); `git apply`-able.")
    candidate: str | None = Field(None, description="Id of the candidate the diff comes from.")
    generator: str | None = Field(None, description="'mutation', 'llm-fix' or 'patcher'.")
    candidates_tried: int = Field(0, description="Candidates run against tests (screened or validated).")
    evidence: str = Field("", description="What backs the reported patch, in one sentence, e.g. 'checked "
                          "on 41 recorded and 200 generated calls covering 87% of the function; no behaviour "
                          "changed outside the failing tests'; or why it is only plausible.")
    validation: dict[str, str] = Field(default_factory=dict,
                                       description="Each check of the reported patch -> 'passed' or why not.")
    evaluations: tuple[PatchEvaluation, ...] = Field((), description="Every fully validated candidate.")
    relocalizations: int = Field(0, description="Times a regression sent the run back to Discovery.")
    localization: LocalizationReport | None = None
    cost: dict[str, float] = Field(default_factory=dict)
    applied: bool = Field(False, description="The patch was written to the user's tree (--apply).")
    published: PublishedFix | None = Field(
        None, description="The fix branch pushed (--push) and the pull request opened or commented on "
                          "(--open-pr).")
    stopped_because: str | None = Field(
        None, description="Why the repair loop stopped: a sound candidate, none left, the relocalization "
                          "budget, or 'time budget (Ns) spent ...' (--max-seconds: exit 26 unless fixed).")
    problems: tuple[str, ...] = ()
    error: str | None = None
    sandbox: SandboxIsolation | None = Field(None, description="The isolation the run's sandboxes gave.")
    environment: SuiteEnvironment | None = Field(
        None, description="The interpreter that ran the suite, and how it was chosen or built.")
    run_id: str | None = Field(None, description="Flow run id the run was recorded under.")
    artifacts: str | None = Field(None, description="The run's folder in the artifact store.")
    patched_files: dict[str, str] = Field(default_factory=dict, exclude=True,
                                          description="The reported patch's new file texts (not in JSON).")
    original_files: dict[str, str] = Field(default_factory=dict, exclude=True,
                                           description="Those files as the run saw them (not in JSON).")

    @property
    def exit_code(self) -> int:
        """The process exit code of this outcome (``equisa repair``, and each repository of a batch): 0, 21,
        22, or 26 when the time budget stopped the run unfixed, whether or not the localization converged."""
        return repair_exit_code(self.status, self.stopped_because)


def repair_status(evaluations: Sequence[PatchEvaluation]) -> RepairStatus:
    """fixed when a candidate is sound; plausible_only when one passed the suite but either an
    anti-overfitting check weighs against it or the evidence does not reach a fix."""
    statuses = {e.status for e in evaluations}
    if PatchStatus.SOUND in statuses:
        return "fixed"
    if statuses & {PatchStatus.OVERFITTING, PatchStatus.UNCONFIRMED}:
        return "plausible_only"
    return "not_fixed"


def evidence_of(evaluation: PatchEvaluation) -> str:
    """What backs the reported patch, in one sentence: the divergence check's summary for a fix; for
    a plausible patch, that summary (when measured) and why it is only plausible."""
    if evaluation.status is PatchStatus.SOUND:
        return evaluation.evidence or evaluation.detail
    if evaluation.evidence and evaluation.evidence not in evaluation.detail:
        return f"{evaluation.evidence}; plausible only: {evaluation.detail}"
    return f"plausible only: {evaluation.detail}"

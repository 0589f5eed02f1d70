"""What ``equisa repair`` reports: the verdict, the accepted patch and the evidence behind it. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.models import REPORT_SCHEMA_VERSION
from equisa_core.common.sandbox_policy import SandboxIsolation
from equisa_core.environment import SuiteEnvironment
from equisa_core.errors import repair_exit_code
from equisa_core.localization.steps import LocalizationReport
from equisa_core.operations.forge import PublishedFix
from equisa_core.validation.candidates import PatchEvaluation, PatchStatus

__all__ = ["RepairStatus", "RepairReport", "repair_status"]

RepairStatus = Literal["fixed", "plausible_only", "not_fixed", "error"]


class RepairReport(BaseModel):
    """What ``equisa repair`` writes as JSON."""

    model_config = ConfigDict(frozen=True)

    schema_version: str = Field(REPORT_SCHEMA_VERSION, description="The schema's version (docs/schema/).")
    status: RepairStatus = Field(description="fixed: a patch passed every check; plausible_only: one "
                                             "passed the suite but not the anti-overfitting checks.")
    mode: str = Field(description="'llm' or 'deterministic'.")
    target: str | None = Field(None, description="FQN of the function the accepted (or best) patch changes.")
    diff: str = Field("", description="The accepted patch (or the best plausible one); `git apply`-able.")
    candidate: str | None = Field(None, description="Id of the candidate the diff comes from.")
    generator: str | None = Field(None, description="'mutation', 'llm-fix' or 'patcher'.")
    candidates_tried: int = Field(0, description="Candidates run against tests (screened or validated).")
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
        """The process exit code of this outcome (``equisa repair``, and each repository of a batch): 0, 21
        or 22, whether or not the localization converged."""
        return repair_exit_code(self.status)


def repair_status(evaluations: Sequence[PatchEvaluation]) -> RepairStatus:
    """fixed when a candidate is sound; plausible_only when one only failed anti-overfitting checks."""
    statuses = {e.status for e in evaluations}
    if PatchStatus.SOUND in statuses:
        return "fixed"
    if PatchStatus.OVERFITTING in statuses:
        return "plausible_only"
    return "not_fixed"

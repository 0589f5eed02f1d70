"""The report of a repair run (``equisa_core.repair.report.RepairReport``): built from the
repair machine's final state, the last round's suite and localization, with the patched files and
their originals read exactly (line endings kept) from the workspace copy.
"""

from __future__ import annotations

from pathlib import Path

from equisa_core.localization.steps import LocalizationReport
from equisa_core.repair import machine
from equisa_core.repair.report import RepairReport, evidence_of, repair_status
from equisa_core.validation.candidates import candidate_diff
from tasks.discovery.suite import DiscoveryResult

__all__ = ["repair_report"]


def repair_report(found: DiscoveryResult, localization: LocalizationReport, state: machine.RepairState,
                  use_llm: bool) -> RepairReport:
    """The repair's report: the accepted (or best) candidate's diff, target and checks, every
    evaluation, the localization it patched, the cost (the machine's ledger: ``machine.spent_usd``)
    and the problems met."""
    evaluations, candidates = state.evaluations, state.candidates
    status = repair_status(evaluations)
    best = machine.reported_evaluation(evaluations)
    diff, target, generator, checks = "", None, None, {}
    originals: dict[str, str] = {}
    patched: dict[str, str] = {}
    if best is not None:
        candidate = candidates[best.candidate]
        root = found.prepared.workspace.root
        originals = {p: _read_exact(root / p) for p in candidate.files}
        patched = dict(candidate.files)
        diff = candidate_diff(originals, candidate)
        target, generator, checks = candidate.target, candidate.generator, dict(best.checks)
    elif localization.ranking:
        target = localization.ranking[0].fqn
    return RepairReport(
        status=status, mode="llm" if use_llm else "deterministic", target=target, diff=diff,
        candidate=best.candidate if best else None, generator=generator, candidates_tried=state.tried,
        evidence=evidence_of(best) if best is not None else "",
        validation=checks, evaluations=tuple(evaluations), relocalizations=state.relocalizations,
        localization=localization, cost={"usd": machine.spent_usd(state)},
        stopped_because=state.stopped_because,
        problems=tuple(dict.fromkeys([*localization.problems, *state.problems])),
        patched_files=patched, original_files=originals, sandbox=found.prepared.sandbox,
        environment=found.prepared.environment,
    )


def _read_exact(path: Path) -> str:
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()

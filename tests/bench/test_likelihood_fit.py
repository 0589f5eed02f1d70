"""The likelihood fit: it replays stored reports, learns which evidence marks the bug, and its
cross-validation fits each project's pairs on the other projects only."""

from __future__ import annotations

import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import likelihood_fit as lf  # noqa: E402

from equisa_core.localization.bayes import initial_confidence, update_with_likelihoods  # noqa: E402
from equisa_core.localization.fix_evidence import FIX_LIKELIHOODS, FixEvidence  # noqa: E402
from equisa_core.localization.prior import DEFAULT_WEIGHTS, FEATURES, NodeSignals, prior_scores  # noqa: E402

FOUND = "mutants:FIX_FOUND"
NO_FIX = "mutants:NO_FIX_FOUND"


def signals(ochiai: float) -> dict:
    return {name: (ochiai if name == "ochiai" else 0.0) for name in FEATURES}


def report(project: str, found_on_bug: bool = True) -> dict:
    """A run where the prior prefers a decoy, and screening finds a fix in the bug (or, with
    ``found_on_bug`` False, in the decoy); its stored priors and posteriors are the flow's."""
    bug, decoy, other = f"{project}.bug", f"{project}.decoy", f"{project}.other"
    raw = {bug: signals(0.5), decoy: signals(1.0), other: signals(0.3)}
    confidences = initial_confidence(prior_scores(
        {f: NodeSignals.model_validate(s) for f, s in raw.items()}, DEFAULT_WEIGHTS))
    evidence = {bug: FixEvidence.FIX_FOUND if found_on_bug else FixEvidence.NO_FIX_FOUND,
                decoy: FixEvidence.NO_FIX_FOUND if found_on_bug else FixEvidence.FIX_FOUND,
                other: FixEvidence.NO_FIX_FOUND}
    inspections = []
    for fqn in (decoy, bug, other):
        prior = confidences[fqn]
        confidences = update_with_likelihoods(confidences, fqn, FIX_LIKELIHOODS[evidence[fqn]])
        inspections.append({"iteration": len(inspections) + 1, "target": fqn, "strategy": "mutant-screening",
                            "outcome": None, "fix_evidence": evidence[fqn].value, "prior": prior,
                            "posterior": confidences[fqn]})
    ranking = [{"fqn": f, "confidence": c, "prior": 0.0, "suspiciousness": 0.0}
               for f, c in sorted(confidences.items(), key=lambda item: -item[1])]
    return {"prior": {"weights": DEFAULT_WEIGHTS.model_dump(), "signals": raw},
            "inspections": inspections, "ranking": ranking}


def write_cases(tmp_path: Path, runs: dict[str, dict]) -> Path:
    entries = []
    for name, body in runs.items():
        project, bug = name.rsplit("-", 1)
        (tmp_path / f"{name}.json").write_text(json.dumps(body))
        entries.append({"project": project, "bug": bug, "truth": [f"{project}.bug"],
                        "report": f"{name}.json"})
    (tmp_path / "cases.json").write_text(json.dumps(entries))
    return tmp_path / "cases.json"


def test_the_seed_replay_gives_the_reports_ranking(tmp_path):
    cases = write_cases(tmp_path, {"a-1": report("a"), "b-1": report("b")})
    bugs, skipped = lf.load_bugs(json.loads(cases.read_text()), tmp_path)
    assert not skipped and len(bugs) == 2
    for bug in bugs:
        check = lf.fidelity(bug)
        assert check["top1"] and check["top5"] and check["first_divergence"] is None
        assert check["max_gap"] < 1e-12


def test_evidence_seen_only_on_truth_functions_is_fitted_for_the_bug(tmp_path):
    runs = {f"{p}-{i}": report(p) for p in ("a", "b", "c") for i in range(3)}
    bugs, _ = lf.load_bugs(json.loads(write_cases(tmp_path, runs).read_text()), tmp_path)
    fitted = lf.fit(bugs, min_count=5)
    found, none = fitted[FOUND], fitted[NO_FIX]
    assert (found["truth"], found["other"], found["truth_total"], found["other_total"]) == (9, 0, 9, 18)
    assert found["fitted"] and found["pair"][0] > found["pair"][1]
    # add-one smoothing over the channel's two kinds seen: (9 + 1) / (9 + 2) and (0 + 1) / (18 + 2)
    assert abs(found["pair"][0] - 10 / 11) < 1e-9 and abs(found["pair"][1] - 1 / 20) < 1e-9
    assert none["fitted"] and none["pair"][0] < none["pair"][1]
    # a kind never seen keeps its seed pair
    assert not fitted["mutants:PARTIAL_FIX_FOUND"]["fitted"]
    assert "mutants:PARTIAL_FIX_FOUND" not in lf.table_of(fitted)
    # too few inspections on one side: every kind keeps its seed
    assert not any(row["fitted"] for row in lf.fit(bugs[:2], min_count=5).values())


def test_cross_validation_fits_each_project_on_the_others(tmp_path):
    # Project c's runs found their fix in the decoy: only c's data says FIX_FOUND marks an innocent.
    runs = {f"{p}-{i}": report(p, found_on_bug=p != "c") for p in ("a", "b", "c") for i in range(3)}
    bugs, _ = lf.load_bugs(json.loads(write_cases(tmp_path, runs).read_text()), tmp_path)
    folds = lf.cross_validated(bugs, min_count=3)
    assert sorted(folds) == ["a", "b", "c"]
    held_out_c = folds["c"][FOUND]
    assert (held_out_c["truth"], held_out_c["other"]) == (6, 0)  # a's and b's bugs only
    assert held_out_c["pair"][0] > held_out_c["pair"][1]
    held_out_a = folds["a"][FOUND]
    assert (held_out_a["truth"], held_out_a["other"]) == (3, 3)  # b's and c's
    assert held_out_a["pair"] == lf.fit([b for b in bugs if b.project != "a"], 3)[FOUND]["pair"]
    result = lf.run(bugs, [], min_count=3)
    assert result["fidelity"]["top1_match"] == len(bugs)
    # Each project's bugs are scored with the pairs fitted without them: fitted on a and b, FIX_FOUND
    # lifts c's decoy (c's bugs miss Top-1); fitted on b and c, FIX_FOUND is weak evidence.
    for project in ("a", "b", "c"):
        mine = [b for b in bugs if b.project == project]
        table = lf.table_of(folds[project])
        assert result["per_project"][project]["replay, leave-one-project-out"] == \
            lf.evaluate(mine, lambda b, t=table: lf.replay(b, t))
    assert result["per_project"]["c"]["replay, leave-one-project-out"]["top1"] == 0
    assert result["per_project"]["a"]["replay, likelihoods as run"]["top1"] == 3
    assert set(result["table"]) == {"prior only", "report as stored", "replay, likelihoods as run",
                                    "replay, fitted in-sample", "replay, leave-one-project-out",
                                    "as run, without mutant-screening"}


def test_leaving_a_kind_of_evidence_out_replays_the_rest_and_a_first_answer_is_ranked_when_kept(tmp_path):
    runs = {f"a-{i}": report("a") for i in range(3)}
    for body in runs.values():  # the first trace's prior: the decoy first
        body["first_answer"] = [{"fqn": "a.decoy", "confidence": 0.5}, {"fqn": "a.bug", "confidence": 0.3}]
    bugs, _ = lf.load_bugs(json.loads(write_cases(tmp_path, runs).read_text()), tmp_path)
    table = lf.run(bugs, [], min_count=3)["table"]
    assert table["replay, likelihoods as run"]["top1"] == 3, "the screening's fix puts the bug first"
    assert table["as run, without mutant-screening"] == table["prior only"], "without it: the prior"
    assert table["as run, without mutant-screening"]["top1"] == 0
    first = table["first answer (first trace's prior)"]
    assert (first["top1"], first["top3"]) == (0, 3)


def test_a_report_that_ranks_nothing_is_skipped(tmp_path):
    empty = {"prior": {"weights": DEFAULT_WEIGHTS.model_dump(), "signals": {}}, "inspections": [],
             "ranking": []}
    cases = write_cases(tmp_path, {"a-1": report("a"), "a-2": empty})
    bugs, skipped = lf.load_bugs(json.loads(cases.read_text()), tmp_path)
    assert [b.bug for b in bugs] == ["1"] and skipped == ["a-2: the report ranks nothing"]


def test_the_stopping_rule_replay_counts_only_the_steps_expected_to_teach_enough(tmp_path):
    runs = {f"{p}-{i}": report(p) for p in ("a", "b", "c") for i in range(3)}
    bugs, _ = lf.load_bugs(json.loads(write_cases(tmp_path, runs).read_text()), tmp_path)
    fitted = lf.fit(bugs, min_count=3)
    table = lf.table_of(fitted)
    for bug in bugs:
        everything, kept = lf.replay_stopping(bug, table, fitted, 0.0)
        assert kept == len(bug.steps) and everything == lf.replay(bug, table)
        nothing, kept = lf.replay_stopping(bug, table, fitted, 1.0)  # no step moves a confidence by 1
        assert kept == 0 and nothing == dict(bug.initial)
    rows = lf.stopping_table(bugs, fitted, lf.cross_validated(bugs, min_count=3))
    assert [r["threshold"] for r in rows] == list(lf.THRESHOLDS)
    kept = [r["steps_kept"] for r in rows]
    assert kept[0] == 1.0 and kept == sorted(kept, reverse=True)


def test_the_adopted_table_is_one_the_core_reads(tmp_path):
    from equisa_core.localization.calibrated_likelihoods import LikelihoodTable, expected_shift

    runs = {f"{p}-{i}": report(p) for p in ("a", "b", "c") for i in range(3)}
    bugs, _ = lf.load_bugs(json.loads(write_cases(tmp_path, runs).read_text()), tmp_path)
    table = LikelihoodTable.model_validate(lf.adopted(lf.run(bugs, [], min_count=3)))
    assert table.name == "fitted" and table.outcomes == {}  # no outcome was seen: none is fitted
    assert table.fix[FixEvidence.FIX_FOUND][0] > table.fix[FixEvidence.FIX_FOUND][1]
    assert table.fix_frequency[FixEvidence.FIX_FOUND] == (1.0, 0.0)  # every FIX_FOUND was on a bug
    assert expected_shift(0.3, table.fix, table.fix_frequency) > 0

"""The screening stop's fit: the answer once the screening is in is replayed on the first answer, and
the margin is fitted under a cap on the runs that go on, in-sample and leave-one-project-out."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import likelihood_fit as lf  # noqa: E402
import screening_stop as ss  # noqa: E402
from test_likelihood_fit import report, write_cases  # noqa: E402


def _case(project: str, margin: float, screened: float, final: float) -> ss.Case:
    return ss.Case(project=project, bug="1", first_rank=screened, screened_rank=screened,
                   final_rank=final, margin=margin)


def test_the_answer_once_the_screening_is_in_is_the_first_answer_with_its_evidence(tmp_path):
    body = report("a")  # the screening's fix puts the bug first; the whole run's ranking is stored
    body["first_answer"] = [{"fqn": "a.decoy", "confidence": 0.5}, {"fqn": "a.bug", "confidence": 0.3},
                            {"fqn": "a.other", "confidence": 0.2}]
    body["inspections"].append({"iteration": 4, "target": "a.other", "strategy": "deterministic",
                                "outcome": "TARGET_ASSERTION_FAILED", "fix_evidence": None})
    bugs, _ = lf.load_bugs(json.loads(write_cases(tmp_path, {"a-1": body}).read_text()), tmp_path)
    case = ss.case_of(bugs[0])
    assert (case.first_rank, case.screened_rank) == (2.0, 1.0)
    screened = ss.screened_confidences(bugs[0])
    assert max(screened, key=screened.__getitem__) == "a.bug" and case.margin > 1.0
    assert {s.strategy for s in bugs[0].steps} == {"mutant-screening", "deterministic"}
    only_screening = lf.replay(dataclasses.replace(bugs[0], initial=dict(bugs[0].first_answer), steps=tuple(
        s for s in bugs[0].steps if s.strategy == "mutant-screening")))
    assert screened == only_screening, "the inspection after the screening is not counted"


def test_the_fit_keeps_to_its_cap_and_stops_where_going_on_does_not_pay():
    # Two near-ties the rest of the run settles (the truth goes from 2 to 1), and clear answers it
    # only spoils (from 1 to 2).
    cases = [_case("p", 1.0, 2.0, 1.0), _case("q", 1.01, 2.0, 1.0),
             *[_case(p, 3.0 + i, 1.0, 2.0) for i, p in enumerate("pqrs")]]
    threshold = ss.fit(cases, max_going_on=0.5)
    assert ss.figures(cases, threshold) == {"top1": 6, "top3": 6, "top5": 6, "went_on": 2, "bugs": 6}
    assert ss.fit(cases, max_going_on=0.1) == 1.0  # one run going on is already over a tenth of six
    assert ss.figures(cases, 1.0)["top1"] == 4


def test_each_project_is_answered_with_the_margin_fitted_on_the_others():
    cases = [_case("p", 1.0, 2.0, 1.0), _case("q", 1.01, 2.0, 1.0), _case("r", 3.0, 1.0, 2.0)]
    result = ss.run(cases, max_going_on=1.0)
    folds = result["threshold_per_fold"]
    assert folds["p"] > 1.0 and folds["q"] > 1.01, "the others' near-tie makes going on pay"
    assert folds["r"] <= 3.0
    assert result["rows"]["whole run (never stop)"]["top1"] == 2

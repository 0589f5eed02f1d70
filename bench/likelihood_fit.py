"""Fit the Localization loop's likelihood pairs on the real-bug benchmark, with leave-one-project-out
validation.

Each EQUISA run of the benchmark (``bench/realbugs``) keeps its localization report: the prior's
signals (``prior``) and every inspection record in order (``inspections``: target, strategy, the
seed's ``outcome``, the mutants' ``fix_evidence``, ``value-comparison`` findings). This script
replays that evidence, without running a test, as the Localization loop
(``equisa_core/localization/machine.py``) counts it:

* the initial confidences are ``bayes.initial_confidence(prior.prior_scores(signals, weights))``
  with the report's weights and its signals' value features set to 0 (they come in later, as
  ``value-comparison`` records);
* each record, in order, moves its target by ``bayes.update_with_likelihoods``: first the seed's
  outcome (``bayes.LIKELIHOODS``), if any, then the mutants' evidence (``fix_evidence.FIX_LIKELIHOODS``);
  a ``value-comparison`` record by ``prior.value_likelihoods`` of its function's finding (the
  ``value_origin`` / ``value_passed_on`` the report's signals keep).

Replayed with the seed (hand-set) pairs it should give the report's ranking: the script says for
how many bugs it does. Then the pairs are **fitted** per evidence kind: among the records of one
channel (outcomes; mutant evidence; fix confirmations; value findings) the frequency of each kind
on inspections of truth functions, ``P(e|buggy)``, and on inspections of other functions,
``P(e|not buggy)``, add-one smoothed over the channel's kinds seen in the data (not all its kinds:
the outcome channel has 8, most of them rare, and smoothing over 8 would pull the smaller truth
side harder, turning an outcome as common on both sides into evidence against the bug) and
clipped to [0.02, 0.98]. A kind keeps its seed pair unless its channel has at least
``--min-count`` (10: the fix confirmations, 9 on each side in the first run, keep the seed pairs)
inspections on each side (truth functions, others) and the kind itself was seen at least that
often (both sides together): a kind seen only on truth functions is fitted (that is what makes it
evidence), a kind never seen is not (its smoothed pair would only be the ratio of the two sides'
sample sizes). Figures (Top-1/3/5, mean EXAM, ties as the average rank: ``bench/prior_fit.py``'s
code) for the prior alone, the report as stored, the replay with the pairs the run used, the
fitted pairs in-sample and the pairs fitted on the other projects (leave-one-project-out), overall
and per project; and the calibrated stopping rule replayed at several thresholds (a step whose
expected shift is below the threshold is not counted).

    uv run python bench/likelihood_fit.py --from-realbugs ~/.cache/equisa-bench/realbugs \
        [--results DIR] [--adopt]

``--adopt`` writes the fitted table to ``equisa_core/localization/calibrated_likelihoods.json``, which the
deterministic mode counts with.

Caveat: the replay keeps the inspections the run made. Other likelihoods would have made the loop
select other functions and stop at other times; the figures tell how the same evidence would be
weighed, not what a run with the fitted pairs would inspect.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import prior_fit as pf  # noqa: E402  (puts the repository root on sys.path too)

from equisa_core.localization.bayes import LIKELIHOODS, Outcome, initial_confidence, update_with_likelihoods  # noqa: E402
from equisa_core.localization.calibrated_likelihoods import FITTED_FILE, expected_shift, table_named  # noqa: E402
from equisa_core.localization.fix_evidence import FIX_LIKELIHOODS, FixEvidence  # noqa: E402
from equisa_core.localization.prior import NodeSignals, PriorWeights, prior_scores, value_likelihoods  # noqa: E402
from equisa_core.localization.value_evidence import ValueFinding  # noqa: E402

RESULTS = pf.RESULTS
CLIP = (0.02, 0.98)
VALUE_COMPARISON = "value-comparison"

#: Evidence kinds by channel: within a channel one inspection shows exactly one kind, so the
#: fitted ``P(e|.)`` of the channel's kinds seen sum to 1 before clipping.
CHANNELS: dict[str, tuple[str, ...]] = {
    "outcome": tuple(o.value for o in Outcome),
    "mutants": tuple(e.value for e in (FixEvidence.FIX_FOUND, FixEvidence.PARTIAL_FIX_FOUND,
                                       FixEvidence.FAILURE_CHANGED, FixEvidence.NO_FIX_FOUND)),
    "confirmation": (FixEvidence.FIX_CONFIRMED.value, FixEvidence.FIX_REGRESSES.value),
    "value": ("origin", "passed_on"),
}


def _fix_channel(evidence: str) -> str:
    return "confirmation" if evidence in CHANNELS["confirmation"] else "mutants"


def seed_pair(kind: str) -> tuple[float, float]:
    """The hand-set pair of a kind (a value kind: at share 1 with the default weights)."""
    channel, name = kind.split(":", 1)
    if channel == "outcome":
        return LIKELIHOODS[Outcome(name)]
    if channel in ("mutants", "confirmation"):
        return FIX_LIKELIHOODS[FixEvidence(name)]
    finding = ValueFinding(origin=1.0 if name == "origin" else 0.0,
                           passed_on=1.0 if name == "passed_on" else 0.0)
    return value_likelihoods(finding)


@dataclass(frozen=True)
class Step:
    """One inspection record: the evidence it counts, in order, each with the pair the run used."""

    target: str
    strategy: str
    kinds: tuple[str, ...]
    seeds: tuple[tuple[float, float], ...]
    prior: float
    posterior: float


@dataclass(frozen=True)
class Bug:
    """One bug's stored run, ready to replay."""

    project: str
    bug: str
    truth: frozenset[str]
    initial: Mapping[str, float]
    steps: tuple[Step, ...]
    #: The report's ranking: confidence, prior score and suspiciousness per function (the flow's
    #: tie-breakers), and its order.
    stored: Mapping[str, float]
    tiebreak: Mapping[str, tuple[float, float]]
    order: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())
    #: The report's first answer (the first traced suite's prior, its top 20; reports since
    #: 5e3c5c0): what the run answered before any re-run, screening, Discovery or inspection.
    first_answer: Mapping[str, float] = field(default_factory=dict)


def load_bug(report: Mapping, project: str, bug: str, truth: Iterable[str]) -> Bug | None:
    """A ``Bug`` from a report's JSON; None when the report keeps no prior signals (an old run) or
    ranks nothing (no function traced): such a bug is a miss whatever the likelihoods."""
    prior = report.get("prior") or {}
    raw_signals = prior.get("signals") or {}
    if not raw_signals or not report.get("ranking"):
        return None
    notes = []
    weights = PriorWeights.model_validate(prior.get("weights") or {})
    fields = set(NodeSignals.model_fields)
    signals = {fqn: NodeSignals.model_validate({k: v for k, v in s.items() if k in fields})
               for fqn, s in raw_signals.items()}
    first = {fqn: s.model_copy(update={"value_origin": 0.0, "value_passed_on": 0.0})
             for fqn, s in signals.items()}
    initial = initial_confidence(prior_scores(first, weights))
    # The pairs the run counted with (reports before the fitted table: the seed's). A replay of a
    # run made with an older fitted table uses today's: its fidelity check then says so.
    as_run = table_named("fitted" if report.get("likelihoods") == "fitted" else "seed")
    steps = []
    for record in report.get("inspections") or ():
        target = record["target"]
        kinds: list[str] = []
        seeds: list[tuple[float, float]] = []
        if record.get("strategy") == VALUE_COMPARISON:
            s = signals.get(target)
            if s is None:
                notes.append(f"value finding of {target}, which has no signals")
                continue
            kinds.append("value:origin" if s.value_origin > 0 else "value:passed_on")
            seeds.append(value_likelihoods(
                ValueFinding(origin=s.value_origin, passed_on=s.value_passed_on), weights))
        else:
            if record.get("outcome"):
                kinds.append(f"outcome:{record['outcome']}")
                seeds.append(as_run.outcomes[Outcome(record["outcome"])])
            if record.get("fix_evidence"):
                evidence = record["fix_evidence"]
                kinds.append(f"{_fix_channel(evidence)}:{evidence}")
                seeds.append(as_run.fix[FixEvidence(evidence)])
        steps.append(Step(target=target, strategy=record.get("strategy", ""), kinds=tuple(kinds),
                          seeds=tuple(seeds), prior=float(record.get("prior", math.nan)),
                          posterior=float(record.get("posterior", math.nan))))
    ranking = report.get("ranking") or ()
    return Bug(
        project=project, bug=str(bug), truth=frozenset(truth), initial=initial, steps=tuple(steps),
        stored={r["fqn"]: float(r["confidence"]) for r in ranking},
        tiebreak={r["fqn"]: (float(r.get("prior", 0.0)), float(r.get("suspiciousness", 0.0)))
                  for r in ranking},
        order=tuple(r["fqn"] for r in ranking), notes=tuple(notes),
        first_answer={r["fqn"]: float(r["confidence"]) for r in report.get("first_answer") or ()},
    )


def load_bugs(entries: Sequence[Mapping], base: Path | None = None) -> tuple[list[Bug], list[str]]:
    """The bugs of ``--cases`` entries (``prior_fit.cases_from_realbugs``), and what was skipped."""
    bugs, skipped = [], []
    for entry in entries:
        path = Path(entry["report"])
        if not path.is_absolute() and base is not None:
            path = base / path
        name = f"{entry['project']}-{entry['bug']}"
        if not path.exists():
            skipped.append(f"{name}: no report")
            continue
        try:
            report = json.loads(path.read_text())
        except json.JSONDecodeError as error:  # a report being written
            skipped.append(f"{name}: unreadable report ({error})")
            continue
        loaded = load_bug(report, entry["project"], str(entry["bug"]), entry["truth"])
        if loaded is None:
            empty = "prior" in report and report.get("ranking") == []
            skipped.append(f"{name}: the report ranks nothing" if empty
                           else f"{name}: the report keeps no prior signals")
        else:
            bugs.append(loaded)
    return bugs, skipped


def replay(bug: Bug, table: Mapping[str, tuple[float, float]] | None = None,
           trail: list[tuple[float, float]] | None = None) -> dict[str, float]:
    """The final confidences: each step's evidence counted in order, with ``table``'s pair for a
    kind it holds and the run's own (seed) pair otherwise. ``trail`` collects each step's target
    confidence before and after it."""
    confidences = dict(bug.initial)
    for step in bug.steps:
        if step.target not in confidences:
            continue
        before = confidences[step.target]
        for kind, seed in zip(step.kinds, step.seeds, strict=True):
            pair = table.get(kind, seed) if table else seed
            confidences = update_with_likelihoods(confidences, step.target, pair)
        if trail is not None:
            trail.append((before, confidences[step.target]))
    return confidences


def replay_without(bug: Bug, strategies: frozenset[str]) -> dict[str, float]:
    """``replay`` (the pairs the run used) of the steps whose strategy is not in ``strategies``:
    what the run would have answered without that kind of evidence (the steps left kept in order)."""
    return replay(dataclasses.replace(bug, steps=tuple(s for s in bug.steps if s.strategy not in strategies)))


def frequencies_of(fitted: Mapping[str, Mapping], channel: str) -> dict[str, tuple[float, float]]:
    """The observed frequencies (truth, other) of a channel's kinds that were seen: what an
    inspection's result is predicted from (``calibrated_likelihoods.expected_shift``)."""
    return {kind.split(":", 1)[1]: (row["truth"] / row["truth_total"], row["other"] / row["other_total"])
            for kind, row in fitted.items()
            if kind.startswith(channel + ":") and (row["truth"] or row["other"])
            and row["truth_total"] and row["other_total"]}


def step_shift(step: Step, confidence: float, table: Mapping[str, tuple[float, float]],
               fitted: Mapping[str, Mapping]) -> float:
    """The expected shift of a step before it ran, from the channels it shows (as the flow's
    stopping rule computes it: the outcome's, and the mutants' when its mutants ran); a fix
    confirmation or a value finding is never skipped (they come after the evidence that asked
    for them)."""
    shift = 0.0
    for kind, seed in zip(step.kinds, step.seeds, strict=True):
        channel = kind.split(":", 1)[0]
        if channel not in ("outcome", "mutants"):
            return math.inf
        frequency = frequencies_of(fitted, channel)
        pairs = {k: table.get(f"{channel}:{k}", seed_pair(f"{channel}:{k}")) for k in frequency}
        shift += expected_shift(confidence, pairs, frequency)
    return shift


def replay_stopping(bug: Bug, table: Mapping[str, tuple[float, float]], fitted: Mapping[str, Mapping],
                    threshold: float) -> tuple[dict[str, float], int]:
    """``replay`` where a step whose expected shift is below ``threshold`` is not counted (the
    stopping rule would not have run it); also the number of steps kept."""
    confidences = dict(bug.initial)
    kept = 0
    for step in bug.steps:
        if step.target not in confidences:
            continue
        if step_shift(step, confidences[step.target], table, fitted) < threshold:
            continue
        kept += 1
        for kind, seed in zip(step.kinds, step.seeds, strict=True):
            confidences = update_with_likelihoods(confidences, step.target, table.get(kind, seed))
    return confidences, kept


#: The stopping rule's thresholds the replay tries.
THRESHOLDS = (0.0, 0.002, 0.005, 0.01, 0.02, 0.05)


def stopping_table(bugs: Sequence[Bug], fitted: Mapping[str, Mapping],
                   folds: Mapping[str, Mapping[str, Mapping]]) -> list[dict]:
    """Per threshold: Top-1/3/5 and EXAM with the in-sample and the leave-one-project-out tables,
    and the share of steps (screenings, inspections) still run."""
    rows = []
    in_sample = table_of(fitted)
    total = sum(len(b.steps) for b in bugs) or 1
    for threshold in THRESHOLDS:
        kept = sum(replay_stopping(b, in_sample, fitted, threshold)[1] for b in bugs)
        rows.append({
            "threshold": threshold, "steps_kept": round(kept / total, 4),
            "in_sample": evaluate(bugs, lambda b: replay_stopping(b, in_sample, fitted, threshold)[0]),
            "leave_one_project_out": evaluate(bugs, lambda b: replay_stopping(
                b, table_of(folds[b.project]), folds[b.project], threshold)[0]),
        })
    return rows


def adopted(result: Mapping) -> dict:
    """The table the deterministic mode counts with
    (``equisa_core/localization/calibrated_likelihoods.json``):
    the fitted pairs of the outcome, mutant and confirmation kinds (a value finding's pair comes
    from the prior's weights), and the frequencies the stopping rule predicts from."""
    fitted = result["likelihoods"]
    pairs = {k: row["pair"] for k, row in fitted.items() if row["fitted"]}
    return {
        "name": "fitted",
        "source": f"bench/likelihood_fit.py on {result['bugs']} bugs of the real-bug benchmark "
                  f"(leave-one-project-out Top-1 {result['table']['replay, leave-one-project-out']['top1']}, "
                  f"as run {result['table']['replay, likelihoods as run']['top1']})",
        "outcomes": {k.split(":", 1)[1]: v for k, v in pairs.items() if k.startswith("outcome:")},
        "fix": {k.split(":", 1)[1]: v for k, v in pairs.items()
                if k.startswith(("mutants:", "confirmation:"))},
        "outcome_frequency": frequencies_of(fitted, "outcome"),
        "fix_frequency": frequencies_of(fitted, "mutants"),
    }


def ordered(confidences: Mapping[str, float], bug: Bug) -> list[str]:
    """The flow's ranking order (``localization.rank``): confidence, then the prior's score, then
    suspiciousness, then the name."""
    return sorted(confidences, key=lambda f: (-confidences[f], -bug.tiebreak.get(f, (0.0, 0.0))[0],
                                              -bug.tiebreak.get(f, (0.0, 0.0))[1], f))


def fidelity(bug: Bug, tolerance: float = 1e-6) -> dict:
    """How the seed replay compares with the report: top-1 and top-5 equal, the largest difference of
    a final confidence, and the first record whose stored prior or posterior the replay misses."""
    trail: list[tuple[float, float]] = []
    confidences = replay(bug, trail=trail)
    mine = ordered(confidences, bug)
    diverges = None
    applied = [s for s in bug.steps if s.target in bug.initial]
    for index, (step, (before, after)) in enumerate(zip(applied, trail, strict=True), start=1):
        if abs(before - step.prior) > tolerance or abs(after - step.posterior) > tolerance:
            diverges = {"record": index, "target": step.target, "strategy": step.strategy,
                        "kinds": list(step.kinds), "stored": [step.prior, step.posterior],
                        "replayed": [before, after]}
            break
    same_keys = set(confidences) == set(bug.stored)
    gap = max((abs(confidences[f] - bug.stored[f]) for f in confidences if f in bug.stored), default=0.0)
    return {
        "bug": f"{bug.project}-{bug.bug}", "top1": mine[:1] == list(bug.order[:1]),
        "top5": mine[:5] == list(bug.order[:5]), "max_gap": gap, "same_functions": same_keys,
        "first_divergence": diverges, "notes": list(bug.notes),
    }


# --- fitting ---------------------------------------------------------------------------------------


def counts(bugs: Iterable[Bug], by_strategy: dict[str, dict[str, list[int]]] | None = None,
           ) -> dict[str, list[int]]:
    """Per kind, ``[inspections of a truth function, of another function]`` showing it;
    ``by_strategy`` (kind -> strategy -> the same) is filled in when given."""
    found: dict[str, list[int]] = {f"{c}:{k}": [0, 0] for c, kinds in CHANNELS.items() for k in kinds}
    for bug in bugs:
        for step in bug.steps:
            side = 0 if step.target in bug.truth else 1
            for kind in step.kinds:
                found.setdefault(kind, [0, 0])[side] += 1
                if by_strategy is not None:
                    by_strategy.setdefault(kind, {}).setdefault(step.strategy, [0, 0])[side] += 1
    return found


def _clip(p: float) -> float:
    return min(CLIP[1], max(CLIP[0], p))


def fit(bugs: Sequence[Bug], min_count: int = 10) -> dict[str, dict]:
    """Per kind: the counts, the smoothed frequencies and the pair to use: ``fitted`` when its
    channel has at least ``min_count`` inspections of truth functions and as many of others, and
    the kind was seen at least ``min_count`` times; else the seed's."""
    strategies: dict[str, dict[str, list[int]]] = {}
    seen = counts(bugs, strategies)
    result = {}
    for channel, kinds in CHANNELS.items():
        names = [f"{channel}:{k}" for k in kinds]
        truth_total = sum(seen[n][0] for n in names)
        other_total = sum(seen[n][1] for n in names)
        smoothing = max(2, sum(1 for n in names if seen[n][0] or seen[n][1]))  # kinds seen
        for name in names:
            n_truth, n_other = seen[name]
            frequencies = (_clip((n_truth + 1) / (truth_total + smoothing)),
                           _clip((n_other + 1) / (other_total + smoothing)))
            enough = min(truth_total, other_total, n_truth + n_other) >= min_count
            result[name] = {
                "truth": n_truth, "other": n_other, "truth_total": truth_total, "other_total": other_total,
                "seed": [round(p, 4) for p in seed_pair(name)],
                "frequency": [round(p, 4) for p in frequencies],
                "fitted": enough,
                "pair": list(frequencies) if enough else None,
                "by_strategy": strategies.get(name, {}),
            }
    return result


def table_of(fitted: Mapping[str, Mapping]) -> dict[str, tuple[float, float]]:
    """The pairs a replay uses from a fit: only the fitted kinds (the others keep each record's
    seed pair, which for a value finding depends on its shares)."""
    return {kind: tuple(row["pair"]) for kind, row in fitted.items() if row["fitted"]}


def cross_validated(bugs: Sequence[Bug], min_count: int = 10) -> dict[str, dict[str, dict]]:
    """Per project, the fit on every other project."""
    return {p: fit([b for b in bugs if b.project != p], min_count) for p in sorted({b.project for b in bugs})}


# --- scoring ---------------------------------------------------------------------------------------


def as_case(bug: Bug, confidences: Mapping[str, float]) -> pf.Case:
    """A ``prior_fit.Case`` whose one feature is the confidence, so that its ranking (ties as the
    average rank), Top-k and EXAM apply with the weight vector ``[1.0]``."""
    return pf.Case(project=bug.project, bug=bug.bug, truth=bug.truth,
                   features={f: (c,) for f, c in confidences.items()})


def evaluate(bugs: Sequence[Bug], confidences_of) -> dict:
    """``prior_fit.evaluate`` of each bug's confidences (``confidences_of(bug)``)."""
    return pf.evaluate([as_case(b, confidences_of(b)) for b in bugs], [1.0])


def scorings(bugs: Sequence[Bug], fitted: Mapping[str, Mapping],
             folds: Mapping[str, Mapping[str, Mapping]]) -> dict[str, object]:
    """The confidences each row of the table ranks by."""
    in_sample = table_of(fitted)
    fold_tables = {p: table_of(f) for p, f in folds.items()}
    rows: dict[str, object] = {}
    if all(b.first_answer for b in bugs):
        rows["first answer (first trace's prior)"] = lambda b: b.first_answer
    strategies = sorted({s.strategy for b in bugs for s in b.steps})
    for strategy in strategies:
        rows[f"as run, without {strategy}"] = lambda b, left=frozenset({strategy}): replay_without(b, left)
    return {
        **rows,
        "prior only": lambda b: b.initial,
        "report as stored": lambda b: b.stored,
        "replay, likelihoods as run": lambda b: replay(b),
        "replay, fitted in-sample": lambda b: replay(b, in_sample),
        "replay, leave-one-project-out": lambda b: replay(b, fold_tables[b.project]),
    }


def _fmt_pair(pair: Sequence[float] | None) -> str:
    return "—" if pair is None else f"({pair[0]:.3f}, {pair[1]:.3f})"


def print_tables(result: Mapping) -> None:
    fid = result["fidelity"]
    print(f"bugs: {result['bugs']} ({len(result['skipped'])} skipped); a truth function ranked in "
          f"{result['truth_ranked']}, with evidence (an inspection record) in {result['truth_inspected']}")
    print(f"replay fidelity (likelihoods as run vs report): top-1 {fid['top1_match']}/{fid['bugs']}, "
          f"top-5 {fid['top5_match']}/{fid['bugs']}, every record's prior/posterior "
          f"{fid['all_records_match']}/{fid['bugs']}, largest confidence gap {fid['max_gap']:.2e}")
    for m in fid["mismatches"]:
        print(f"  {m['bug']}: top1 {m['top1']}, top5 {m['top5']}, first divergence {m['first_divergence']}")
    print()
    print(f"{'scoring':36} {'bugs':>5} {'top1':>5} {'top3':>5} {'top5':>5} {'EXAM':>7}")
    for name, row in result["table"].items():
        print(f"{name:36} {row['bugs']:>5} {row['top1']:>5} {row['top3']:>5} {row['top5']:>5} "
              f"{row['exam'] if row['exam'] is not None else '—':>7}")
    for project, rows in result["per_project"].items():
        print(f"-- {project}")
        for name, row in rows.items():
            print(f"   {name:33} {row['bugs']:>5} {row['top1']:>5} {row['top3']:>5} {row['top5']:>5} "
                  f"{row['exam'] if row['exam'] is not None else '—':>7}")
    print()
    print(f"likelihoods (P(e|buggy), P(e|not buggy)); counts: truth n/N, other n/N (N: the channel's); "
          f"fitted when both N and n_truth + n_other >= {result['min_count']}")
    print(f"{'kind':50} {'seed':>16} {'frequency':>16} {'truth':>9} {'other':>9}  used")
    for kind, row in result["likelihoods"].items():
        if not (row["truth"] or row["other"]):
            continue
        seed = _fmt_pair(row["seed"]) + ("*" if kind.startswith("value:") else " ")
        print(f"{kind:50} {seed:>16} {_fmt_pair(row['frequency']):>16} "
              f"{row['truth']:>4}/{row['truth_total']:<4} {row['other']:>4}/{row['other_total']:<4}  "
              f"{'fitted' if row['fitted'] else 'seed'}")
    print("  * value findings: seed pair at share 1 (each finding's own is exp(3*origin - passed_on))")
    print()
    print("stopping rule: a screening or inspection whose expected shift is below the threshold is not run")
    print(f"{'threshold':>9} {'steps run':>9}  {'top1/3/5 in-sample':>20}  {'top1/3/5 leave-one-out':>22}")
    for row in result.get("stopping_rule", ()):
        a, b = row["in_sample"], row["leave_one_project_out"]
        print(f"{row['threshold']:>9} {row['steps_kept']:>9.1%}  {a['top1']:>6}/{a['top3']}/{a['top5']:<9}  "
              f"{b['top1']:>8}/{b['top3']}/{b['top5']}")


def run(bugs: Sequence[Bug], skipped: Sequence[str], min_count: int) -> dict:
    checks = [fidelity(b) for b in bugs]
    fitted = fit(bugs, min_count)
    folds = cross_validated(bugs, min_count)
    rows = scorings(bugs, fitted, folds)
    table = {name: evaluate(bugs, f) for name, f in rows.items()}
    projects = sorted({b.project for b in bugs})
    per_project = {p: {name: evaluate([b for b in bugs if b.project == p], f) for name, f in rows.items()}
                   for p in projects}
    return {
        "bugs": len(bugs), "skipped": list(skipped), "min_count": min_count, "clip": list(CLIP),
        "truth_ranked": sum(1 for b in bugs if b.truth & b.initial.keys()),
        "truth_inspected": sum(1 for b in bugs if any(s.target in b.truth for s in b.steps)),
        "fidelity": {
            "bugs": len(checks),
            "top1_match": sum(c["top1"] for c in checks),
            "top5_match": sum(c["top5"] for c in checks),
            "all_records_match": sum(c["first_divergence"] is None for c in checks),
            "max_gap": max((c["max_gap"] for c in checks), default=0.0),
            "mismatches": [c for c in checks if not (c["top1"] and c["top5"]) or c["first_divergence"]],
        },
        "likelihoods": fitted,
        "folds": {p: {k: r["pair"] for k, r in f.items() if r["fitted"]} for p, f in folds.items()},
        "table": table, "per_project": per_project,
        "stopping_rule": stopping_table(bugs, fitted, folds),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--from-realbugs", type=Path, metavar="CACHE",
                        help="a real-bug benchmark cache (its manifest.json and results/), "
                             "e.g. ~/.cache/equisa-bench/realbugs")
    source.add_argument("--cases", type=Path, help="a cases file as bench/prior_fit.py reads it")
    parser.add_argument("--results", type=Path, metavar="DIR",
                        help="with --from-realbugs: the runs' folder (default CACHE/results), e.g. a copy "
                             "of an earlier run's")
    parser.add_argument("--min-count", type=int, default=10,
                        help="a kind keeps its seed pair unless its channel has this many inspections of "
                             "truth functions and of others, and the kind was seen this often")
    parser.add_argument("--out", type=Path, default=RESULTS / "likelihood_fit.json")
    parser.add_argument("--adopt", action="store_true",
                        help=f"write the fitted table to {FITTED_FILE.relative_to(BENCH.parent)}: the "
                             "deterministic mode counts with it from then on")
    args = parser.parse_args(argv)
    if args.from_realbugs is not None:
        results = args.results.expanduser() if args.results else None
        entries, base = pf.cases_from_realbugs(args.from_realbugs.expanduser(), results), None
    else:
        entries, base = json.loads(args.cases.read_text()), args.cases.parent
    bugs, skipped = load_bugs(entries, base)
    if not bugs:
        print("no stored report with prior signals: run the real-bug benchmark first (bench/README.md)",
              file=sys.stderr)
        return 2
    result = run(bugs, skipped, args.min_count)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print_tables(result)
    print(f"written to {args.out}")
    if args.adopt:
        FITTED_FILE.write_text(json.dumps(adopted(result), indent=2) + "\n")
        print(f"adopted: {FITTED_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

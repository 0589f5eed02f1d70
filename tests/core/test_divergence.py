"""The divergence check's judging (``equisa_core.validation.divergence``): counts by origin and kind,
the coverage and share arithmetic with their zero denominators, the summary, the evidence's reach,
and the plugin's records read back. Pure: no run."""

from __future__ import annotations

import json

from equisa_core.validation.divergence import (
    MAX_EXAMPLES,
    MIN_CHECKED_CALLS,
    MIN_LINE_COVERAGE,
    CallComparison,
    DivergenceReport,
    divergence_of,
    evidence_reaches,
    no_oracle,
    read_shadow_output,
)


def _call(changed: bool, origin: str = "passing", kind: str = "recorded", detail: str = "",
          test: str = "tests/test_cart.py::test_sum", inputs: str = "") -> CallComparison:
    return CallComparison(test_id=test, origin=origin, kind=kind, changed=changed, detail=detail,  # type: ignore[arg-type]
                          inputs=inputs)


def test_calls_are_counted_by_origin_and_kind_and_failing_calls_are_not_judged():
    report = divergence_of(
        [_call(False), _call(True, detail="Cart.total(<Cart>) returned 5, now raises TypeError"),
         _call(False, kind="generated"), _call(True, kind="generated"), _call(True, kind="generated"),
         _call(True, origin="failing"), _call(True, origin="failing", kind="recorded")],
        executable=[3, 4, 5, 6], executed=[3, 4, 5], arcs=[(4, 5), (3, 4), (3, 4)], uncomparable=2)
    assert (report.recorded_calls, report.changed_recorded) == (2, 1)
    assert (report.generated_calls, report.changed_generated) == (3, 2)
    assert report.failing_calls == 2 and report.uncomparable == 2
    assert report.arcs == ((3, 4), (4, 5)), "sorted, once each"
    assert report.line_coverage == 0.75
    assert report.changed_share == 3 / 5
    assert report.diverges
    assert report.examples[0] == ("Cart.total(<Cart>) returned 5, now raises TypeError "
                                  "(in tests/test_cart.py::test_sum)")


def test_only_changes_outside_the_failing_tests_are_examples_and_they_are_capped():
    calls = [_call(True, origin="failing", detail="failing")] + [
        _call(True, kind="generated", detail=f"change {n}") for n in range(MAX_EXAMPLES + 2)]
    report = divergence_of(calls, [1], [1], [])
    assert len(report.examples) == MAX_EXAMPLES
    assert all("failing" not in e for e in report.examples)
    assert report.examples[0].startswith("change 0 (in ")


def test_zero_denominators_have_defined_values():
    empty = divergence_of([], [], [], [])
    assert empty.line_coverage is None, "no executable line: no coverage to speak of"
    assert empty.changed_share == 0.0, "no compared call: nothing changed"
    assert not empty.diverges
    only_failing = divergence_of([_call(True, origin="failing")], [2], [], [])
    assert only_failing.changed_share == 0.0 and only_failing.line_coverage == 0.0


def test_the_summary_says_what_was_checked_and_what_changed():
    same = divergence_of([_call(False)] * 41 + [_call(False, kind="generated")] * 200,
                         range(1, 101), range(1, 88), [])
    assert same.summary() == ("checked on 41 recorded and 200 generated calls covering 87% of the function; "
                              "no behaviour changed outside the failing tests")
    changed = divergence_of([_call(True, detail="f(1) returned 2, now returns 3")] * 3 + [_call(False)] * 38,
                            [1], [1], [])
    assert changed.summary() == ("checked on 41 recorded and 0 generated calls covering 100% of the "
                                 "function; 3 of 41 recorded calls changed outside the failing tests: "
                                 "f(1) returned 2, now returns 3 (in tests/test_cart.py::test_sum)")
    both = divergence_of([_call(True), _call(True, kind="generated"), _call(False, kind="generated")],
                         [], [], [])
    assert "1 of 1 recorded and 1 of 2 generated calls changed" in both.summary()
    assert "covering" not in both.summary(), "no executable line known: no coverage claimed"


def test_the_evidence_reaches_the_function_only_with_a_passing_call_and_enough_coverage():
    passing = [_call(False)] * MIN_CHECKED_CALLS
    assert evidence_reaches(divergence_of(passing, [1, 2], [1, 2], [])) == (True, "")
    reaches, why = evidence_reaches(divergence_of([_call(True, origin="failing")], [1], [1], []))
    assert not reaches and "no passing test" in why
    low = divergence_of(passing, range(10), range(5), [])
    assert low.line_coverage is not None and low.line_coverage < MIN_LINE_COVERAGE
    reaches, why = evidence_reaches(low)
    assert not reaches and "50%" in why
    at_bound = divergence_of(passing, range(10), range(int(MIN_LINE_COVERAGE * 10)), [])
    assert evidence_reaches(at_bound) == (True, "")
    assert evidence_reaches(divergence_of(passing, [], [], []))[0], "no executable line: covered"


def test_with_no_passing_call_the_failing_tests_assertions_are_the_evidence_when_they_check_enough_calls():
    """The candidate passes every failing test, so each of their calls was checked by an assertion;
    with enough different ones, covering the function, the evidence reaches; the same call made
    twice counts once, and a generated call never counts."""
    def failing(n: int) -> CallComparison:
        return _call(True, origin="failing", inputs=f"f({n})")
    enough = [failing(n) for n in range(MIN_CHECKED_CALLS)]
    report = divergence_of(enough, executable=[1, 2, 3], executed=[], arcs=[], failing_executed=[1, 2, 3])
    assert report.failing_inputs == MIN_CHECKED_CALLS and report.recorded_calls == 0
    assert report.line_coverage == 0.0 and report.oracle_coverage == 1.0
    assert evidence_reaches(report) == (True, "")
    assert (f"the failing tests' assertions check {MIN_CHECKED_CALLS} different call(s), which the "
            "candidate passes, covering 100% of the function") in report.summary()
    assert report.counts()["failing_inputs"] == MIN_CHECKED_CALLS

    generated = _call(True, origin="failing", kind="generated", inputs="f(99)")
    repeated = enough[:-1] + [failing(0), generated]
    few = divergence_of(repeated, executable=[1, 2, 3], executed=[], arcs=[], failing_executed=[1, 2, 3])
    assert few.failing_inputs == MIN_CHECKED_CALLS - 1
    reaches, why = evidence_reaches(few)
    assert not reaches and f"check only {MIN_CHECKED_CALLS - 1} different call(s)" in why

    narrow = divergence_of(enough, executable=range(10), executed=[], arcs=[], failing_executed=[1, 2])
    reaches, why = evidence_reaches(narrow)
    assert not reaches and "the tests' calls ran 20% of the function's lines" in why


def test_one_passing_call_and_one_failing_call_are_too_few_checks_to_reach_a_fix():
    """A passing test's call of an empty list ran the function's first lines and a failing test's one
    call the rest: every line ran, but two checked calls promise little; a generated call near the
    passing one is a third check."""
    thin = divergence_of([_call(False, inputs="f([])"), _call(True, origin="failing", inputs="f([3, 3])")],
                         executable=range(9), executed=range(4), arcs=[], failing_executed=range(9))
    assert (thin.recorded_calls, thin.generated_calls, thin.failing_inputs) == (1, 0, 1)
    assert thin.checked_calls == MIN_CHECKED_CALLS - 1 and thin.oracle_coverage == 1.0
    reaches, why = evidence_reaches(thin)
    assert not reaches
    assert why == ("the tests check only 2 call(s) of the function with a known answer (1 by passing tests, "
                   "0 generated near them, 1 by the failing tests; under 3)")
    near = divergence_of([_call(False, inputs="f([])"), _call(False, kind="generated", inputs="f([0])"),
                          _call(True, origin="failing", inputs="f([3, 3])")],
                         executable=range(9), executed=range(4), arcs=[], failing_executed=range(9))
    assert near.checked_calls == MIN_CHECKED_CALLS
    assert evidence_reaches(near) == (True, "")


def test_the_failing_tests_lines_count_toward_the_evidence_s_reach_beside_the_passing_calls():
    """A passing call ran half the function and the failing tests' calls the other half: the calls
    with a known right answer ran all of it."""
    calls = [_call(False), _call(False, kind="generated"), _call(True, origin="failing", inputs="f(1)")]
    report = divergence_of(calls, executable=range(10), executed=range(5), arcs=[], failing_executed=range(5, 10))
    assert report.line_coverage == 0.5 and report.oracle_coverage == 1.0
    assert evidence_reaches(report) == (True, "")
    assert "covering 50% of the function (100% with the failing tests' 1 call(s))" in report.summary()
    alone = report.model_copy(update={"failing_executed_lines": ()})
    assert not evidence_reaches(alone)[0]


def test_the_plugin_s_records_are_read_back_among_the_probe_s_and_the_last_lines_record_holds():
    lines = [
        json.dumps({"kind": "session", "python": "3.11"}),
        json.dumps({"kind": "shadow-target", "found": True, "executable": [5, 6, 7]}),
        json.dumps({"kind": "shadow-call", "test": "t::a", "origin": "passing", "call": "recorded",
                    "changed": False, "detail": ""}),
        json.dumps({"kind": "shadow-call", "test": "t::b", "origin": "failing", "call": "recorded",
                    "changed": True, "detail": "f() returned 1, now returns 2"}),
        json.dumps({"kind": "shadow-uncomparable", "test": "t::a", "why": "uncopyable"}),
        json.dumps({"kind": "shadow-lines", "executed": [5], "arcs": []}),
        json.dumps({"kind": "shadow-lines", "executed": [5, 6], "arcs": [[5, 6]], "failing_executed": [7]}),
        '{"kind": "shadow-call", "test": "t::a", "orig',  # torn by a killed run
    ]
    output = read_shadow_output(lines)
    assert output.found and output.uncomparable == 1
    report = output.report()
    assert (report.recorded_calls, report.failing_calls, report.changed_recorded) == (1, 1, 0)
    assert report.executed_lines == (5, 6) and report.arcs == ((5, 6),)
    assert report.line_coverage == 2 / 3
    assert report.failing_executed_lines == (7,) and report.oracle_coverage == 1.0
    missing = read_shadow_output([json.dumps({"kind": "shadow-target", "found": False,
                                              "why": "the candidate has no function f"})])
    assert not missing.found and missing.why == "the candidate has no function f"
    silent = read_shadow_output([json.dumps({"kind": "session"})])
    assert not silent.found and "wrote nothing" in silent.why


def test_a_report_is_frozen_and_serialisable():
    report = divergence_of([_call(True)], [1], [1], [(1, 1)])
    assert DivergenceReport.model_validate_json(report.model_dump_json()) == report


def test_a_generated_call_equal_to_a_failing_tests_call_is_judged_as_that_call():
    comparisons = [
        CallComparison(test_id="t::pass", origin="passing", kind="recorded", changed=False, inputs="a"),
        CallComparison(test_id="t::pass", origin="passing", kind="generated", changed=True, inputs="b"),
        CallComparison(test_id="t::pass", origin="passing", kind="generated", changed=True, inputs="c"),
        CallComparison(test_id="t::fail", origin="failing", kind="recorded", changed=True, inputs="b"),
    ]
    report = divergence_of(comparisons, executable=(1,), executed=(1,), arcs=())
    assert report.generated_calls == 1 and report.changed_generated == 1, "the call equal to the failing one is left out"
    assert report.failing_calls == 2
    unkeyed = divergence_of([c.model_copy(update={"inputs": ""}) for c in comparisons], (1,), (1,), ())
    assert unkeyed.changed_generated == 2, "without keys nothing is matched"


def test_a_generated_call_next_to_a_failing_call_is_where_the_failure_is():
    comparisons = [
        CallComparison(test_id="t::pass", origin="passing", kind="recorded", changed=False, inputs="p"),
        CallComparison(test_id="t::pass", origin="passing", kind="generated", changed=True, inputs="near-fail"),
        CallComparison(test_id="t::pass", origin="passing", kind="generated", changed=True, inputs="far"),
        CallComparison(test_id="t::fail", origin="failing", kind="recorded", changed=True, inputs="f"),
    ]
    report = divergence_of(comparisons, (1,), (1,), (), failing_neighbours=("near-fail", "other"))
    assert (report.generated_calls, report.changed_generated) == (1, 1), "only the far change counts"
    assert divergence_of(comparisons, (1,), (1,), ()).changed_generated == 2


def test_the_plugins_failing_neighbours_record_is_read():
    lines = [json.dumps({"kind": "shadow-target", "found": True, "executable": [1]}),
             json.dumps({"kind": "shadow-call", "test": "t::p", "origin": "passing", "call": "generated",
                         "changed": True, "inputs": "k"}),
             json.dumps({"kind": "shadow-failing-neighbours", "test": "t::f", "inputs": ["k"]})]
    output = read_shadow_output(lines)
    assert output.failing_neighbours == ("k",)
    assert output.report().changed_generated == 0


def test_a_report_with_nothing_compared_says_so_and_not_that_nothing_changed():
    failing = [CallComparison(test_id="t::f", origin="failing", kind="recorded", changed=True, inputs="f")]
    summary = divergence_of(failing, (1,), (), ()).summary()
    assert summary == ("no call of the function outside the failing tests could be compared (1 call(s) by failing "
                       "tests); the failing tests' assertions check 1 different call(s), which the candidate "
                       "passes, covering 0% of the function")


def test_an_answer_where_the_original_crashed_is_not_held_against_the_candidate():
    def generated(before: str, after: str, inputs: str) -> CallComparison:
        return CallComparison(test_id="t::p", origin="passing", kind="generated", changed=True, inputs=inputs,
                              before=before, after=after)

    comparisons = [
        CallComparison(test_id="t::p", origin="passing", kind="recorded", changed=False, inputs="r",
                       before="value:int", after="value:int"),
        generated("raised:IndexError", "value:int", "a"),  # the original crashed: no oracle there
        generated("none", "value:int", "b"),  # it fell through to None
        generated("raised:ValueError", "value:int", "c"),  # a refusal on purpose: answering it is a change
        generated("raised:IndexError", "value:str", "d"),  # an answer of a type the original never gives
        generated("value:int", "value:int", "e"),  # a changed answer
    ]
    report = divergence_of(comparisons, (1,), (1,), ())
    assert (report.answered, report.generated_calls, report.changed_generated) == (2, 3, 3)
    assert "2 more answered where the original crashed" in report.summary()
    assert no_oracle("timeout") and no_oracle("raised:TypeError")
    assert not no_oracle("raised:KeyboardInterrupt")


def test_a_generated_call_of_a_failing_calls_class_of_inputs_is_where_the_failure_is():
    comparisons = [
        CallComparison(test_id="t::p", origin="passing", kind="recorded", changed=False, inputs="p", relation="lt"),
        CallComparison(test_id="t::p", origin="passing", kind="generated", changed=True, inputs="g1", relation="eq"),
        CallComparison(test_id="t::p", origin="passing", kind="generated", changed=True, inputs="g2", relation="gt"),
        CallComparison(test_id="t::f", origin="failing", kind="recorded", changed=True, inputs="f", relation="eq"),
    ]
    report = divergence_of(comparisons, (1,), (1,), ())
    assert (report.generated_calls, report.changed_generated, report.failing_calls) == (1, 1, 2)

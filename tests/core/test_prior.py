"""The prior's pure parts: which functions are failure machinery, and how scores are squashed."""

from __future__ import annotations

import math

from equisa_core.localization.prior import (
    FEATURES,
    NodeSignals,
    PriorWeights,
    combine,
    is_failure_machinery,
    prior_scores,
)


def signals(**values: float) -> NodeSignals:
    return NodeSignals(**{**dict.fromkeys(FEATURES, 0.0), **values})


def test_methods_of_exception_classes_are_failure_machinery():
    raised = {"Bash"}
    assert is_failure_machinery("pkg.errors.ParseError.__init__", set())
    assert is_failure_machinery("pkg.errors.UsageException.__str__", set())
    assert is_failure_machinery("pkg.shells.Bash.__init__", raised)  # a raised type, whatever its name
    assert not is_failure_machinery("pkg.shells.Bash.__init__", set())
    assert not is_failure_machinery("pkg.errors.raise_error", set())  # a function, not a class
    assert not is_failure_machinery("pkg.handle_error", set())
    assert not is_failure_machinery("pkg.mod.outer.<locals>.ValueChecker.check", set())


def test_scores_keep_the_combined_order_and_leave_unrun_functions_at_zero():
    weights = PriorWeights(ochiai=1.0, deepest=2.0)
    found = {
        "a": signals(ochiai=0.5, deepest=1.0),
        "b": signals(ochiai=1.0),
        "c": signals(),  # no failing test ran it
        "d": signals(changed=1.0),  # changed since the ref, not run by a failing test
    }
    assert combine(found["a"], weights) == 2.5
    scores = prior_scores(found, weights)
    assert scores["a"] == 1.0 and math.isclose(scores["b"], math.exp(-1.5))
    assert scores["c"] == 0.0 and 0.0 < scores["d"] < scores["b"]
    assert prior_scores({}, weights) == {}

"""The prior's signals on small real suites, traced by the real probe in the local sandbox.

Each fixture is built so that one signal decides: the buggy function ranks first with the default
weights, and loses its place when that signal is switched off (its weight set to 0).
"""

from __future__ import annotations

import sys
from pathlib import Path

from equisa_core.common.models import SuiteTrace
from equisa_core.common.probe_output import parse_probe_output
from equisa_core.localization.prior import (
    DEFAULT_WEIGHTS,
    NodeSignals,
    PriorWeights,
    combine,
    node_signals,
    value_likelihoods,
    with_values,
)
from equisa_core.localization.value_evidence import compare_values
from tasks.sandbox.contract import RunRequest, SandboxLimits
from tasks.sandbox.local_backend import LocalSandbox
from tests.conftest import small_repo

LIMITS = SandboxLimits(wall_clock_s=120, test_timeout_s=30)


def traced(tmp_path: Path, files: dict[str, str]) -> SuiteTrace:
    """Write ``files`` into a small repository and trace its suite."""
    repo = small_repo(tmp_path / "repo")
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    request = RunRequest(workspace=repo, workspace_digest=f"prior-{tmp_path.name}",
                         interpreter=sys.executable, limits=LIMITS, allow_weak_isolation=True)
    run = LocalSandbox().run(request)
    return parse_probe_output(run.probe_output.splitlines())


def order(signals: dict[str, NodeSignals], weights: PriorWeights) -> list[str]:
    """Functions best first by the combined score; ties by name, as the ranking breaks them."""
    return sorted(signals, key=lambda f: (-combine(signals[f], weights), f))


def without(*names: str) -> PriorWeights:
    """The default weights with ``names`` switched off."""
    return DEFAULT_WEIGHTS.model_copy(update=dict.fromkeys(names, 0.0))


PRICING = '''
class PricingError(Exception):
    def __init__(self, message, total):
        super().__init__(f"{message}: {total}")
        self.total = total


def discount(price, percent):
    return price * percent / 10  # the bug: a percentage is divided by 100


def checked_total(price, percent):
    total = price - discount(price, percent)
    if total < 0:
        raise PricingError("negative total", total)
    return total
'''

PRICING_TESTS = '''
from pricing import checked_total, discount

def test_no_discount():
    assert checked_total(100, 0) == 100

def test_zero_price():
    assert discount(0, 50) == 0

def test_twenty_percent():
    assert checked_total(100, 20) == 80
'''


def test_exception_constructors_are_demoted(tmp_path):
    signals = node_signals(traced(tmp_path, {"pricing.py": PRICING, "tests/test_pricing.py": PRICING_TESTS}))
    ctor = "pricing.PricingError.__init__"
    assert signals[ctor].failure_machinery == 1.0 and signals["pricing.discount"].failure_machinery == 0.0
    # Only the failing test runs the constructor: by spectrum alone it leads.
    assert signals[ctor].ochiai > signals["pricing.discount"].ochiai
    ranked = order(signals, DEFAULT_WEIGHTS)
    assert ranked.index("pricing.discount") < ranked.index(ctor)
    switched_off = order(signals, without("failure_machinery"))
    assert switched_off.index(ctor) < switched_off.index("pricing.discount")


WORDS = '''
def words_last(text):
    words = text.split()
    return words[1]  # the bug: the last word is words[-1]


def capitalized_last(text):
    return words_last(text).capitalize()
'''

WORDS_TESTS = '''
from words import capitalized_last

def test_two_words():
    assert capitalized_last("big dog") == "Dog"

def test_one_word():
    assert capitalized_last("hello") == "Hello"
'''


def test_the_deepest_frame_of_the_traceback_leads(tmp_path):
    signals = node_signals(traced(tmp_path, {"words.py": WORDS, "tests/test_words.py": WORDS_TESTS}))
    callee, caller = signals["words.words_last"], signals["words.capitalized_last"]
    assert (callee.ochiai, callee.tarantula) == (caller.ochiai, caller.tarantula)  # a spectrum tie
    assert (callee.on_stack, callee.deepest, caller.deepest) == (1.0, 1.0, 0.0)
    assert callee.near_deepest == 1.0 and caller.near_deepest == 0.5
    assert order(signals, DEFAULT_WEIGHTS)[0] == "words.words_last"
    # Closeness to the test favours the caller: without the traceback, the caller leads.
    assert order(signals, without("on_stack", "deepest", "near_deepest"))[0] == "words.capitalized_last"


MATCHING = '''
def normalize(word):
    return word.strip().lower()


def same_word(a, b):
    return normalize(a) == normalize(b[1:])  # the bug: b is cut
'''

MATCHING_TESTS = '''
from matching import same_word

def test_different_words():
    assert not same_word("x", "yz")

def test_same_word_any_case():
    assert same_word("Cat", "cat")
'''


def test_what_the_failing_test_calls_directly_leads(tmp_path):
    files = {"matching.py": MATCHING, "tests/test_matching.py": MATCHING_TESTS}
    signals = node_signals(traced(tmp_path, files))
    buggy, helper = signals["matching.same_word"], signals["matching.normalize"]
    assert (buggy.ochiai, buggy.on_stack) == (helper.ochiai, helper.on_stack) == (buggy.ochiai, 0.0)
    assert (buggy.test_calls, buggy.near_test, helper.test_calls, helper.near_test) == (1.0, 1.0, 0.0, 0.5)
    assert order(signals, DEFAULT_WEIGHTS)[0] == "matching.same_word"
    assert order(signals, without("test_calls", "near_test"))[0] == "matching.normalize"


def test_lines_changed_since_a_ref_lead(tmp_path):
    trace = traced(tmp_path, {"matching.py": MATCHING, "tests/test_matching.py": MATCHING_TESTS})
    tied = without("test_calls", "near_test")
    plain = node_signals(trace)
    changed = node_signals(trace, {"matching.py": {7}})  # the line of same_word's return
    assert plain["matching.same_word"].changed == 0.0 and changed["matching.same_word"].changed == 1.0
    assert changed["matching.normalize"].changed == 0.0
    assert order(plain, tied)[0] == "matching.normalize"
    assert order(changed, tied)[0] == "matching.same_word"


def recorded(tmp_path: Path, files: dict[str, str], record: tuple[str, ...]) -> SuiteTrace:
    """Like ``traced``, with the calls of ``record`` recorded in every test."""
    repo = tmp_path / "repo"
    if not repo.exists():
        traced(tmp_path, files)
    request = RunRequest(workspace=repo, workspace_digest=f"prior-rec-{tmp_path.name}",
                         interpreter=sys.executable, limits=LIMITS, record=record, trace=False,
                         allow_weak_isolation=True)
    return parse_probe_output(LocalSandbox().run(request).probe_output.splitlines())


def value_findings(trace: SuiteTrace, calls: SuiteTrace) -> dict:
    callees: dict[str, set[str]] = {}
    for edge in trace.edges:
        callees.setdefault(edge.caller, set()).add(edge.callee)
    tests = {n.fqn for n in trace.nodes if n.file and n.file.startswith("tests/")}
    direct = {c for t in tests for c in callees.get(t, ())}
    by_test = {t.test_id: t.calls for t in calls.tests}
    return compare_values(by_test, trace.failed_tests(), trace.passed_tests(), callees, direct)


def test_a_wrong_value_is_followed_to_where_it_starts(tmp_path):
    files = {"pricing.py": PRICING, "tests/test_pricing.py": PRICING_TESTS}
    trace = traced(tmp_path, files)
    calls = recorded(tmp_path, files,
                     ("pricing.discount", "pricing.checked_total", "pricing.PricingError.__init__"))
    findings = value_findings(trace, calls)
    # discount returned a positive amount where passing tests only saw zero, from arguments of kinds
    # seen before; checked_total raised what no passing test saw, but its callee's value was new.
    assert findings["pricing.discount"].origin == 1.0 and findings["pricing.discount"].passed_on == 0.0
    total = findings["pricing.checked_total"]
    assert (total.origin, total.passed_on) == (0.0, 1.0)
    assert "pricing.PricingError.__init__" not in findings  # no passing run to compare with
    signals = with_values(node_signals(trace), findings)
    assert order(signals, DEFAULT_WEIGHTS)[0] == "pricing.discount"
    assert order(signals, without("value_origin", "value_passed_on"))[0] == "pricing.checked_total"
    for_it, against_it = value_likelihoods(findings["pricing.discount"])
    assert for_it > against_it

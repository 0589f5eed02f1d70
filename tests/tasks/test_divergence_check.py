"""The divergence check (``tasks.validation.divergence.measure_divergence``): real Discovery and real
sandboxed shadow runs on a small repository written here, with hand-written candidates for a
method, a property, a nested function and a generator, and one that loops forever on a generated
input."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prefect import flow
from prefect.settings import PREFECT_LOCAL_STORAGE_PATH, temporary_settings

from equisa_core.validation.candidates import PatchCandidate
from equisa_core.validation.divergence import ShadowLimits, evidence_reaches
from flows.discovery import discovery
from tasks.discovery.suite import DiscoveryResult
from tasks.run.parameters import DiscoveryParameters
from tasks.validation.checks import ValidationContext
from tasks.validation.divergence import DivergenceResult, measure_divergence
from tests.conftest import small_repo

SHOP = '''class Cart:
    def __init__(self, prices, discount=0):
        self.prices = list(prices)
        self.discount = discount

    def total(self):
        """The prices' sum less the discount, never below 0."""
        paid = sum(self.prices) - self.discount
        return paid  # bug: may be negative

    @property
    def count(self):
        return len(self.prices)

    def expensive(self, limit):
        for price in self.prices:
            if price > limit:
                yield price


def labels(names):
    def label(name):
        return name.strip().title()
    return [label(n) for n in names]


def halvings(n):
    count = 0
    while n > 0:
        n -= 2
        count += 1
    return count
'''
TESTS = '''from shop import Cart, halvings, labels


def test_total():
    assert Cart([10, 20]).total() == 30


def test_total_of_one():
    assert Cart([7]).total() == 7


def test_discount_larger_than_the_cart():
    assert Cart([5], discount=10).total() == 0


def test_count():
    assert Cart([10, 20]).count == 2


def test_expensive():
    assert list(Cart([5, 10, 20]).expensive(10)) == [20]


def test_labels():
    assert labels([" ann ", "bob"]) == ["Ann", "Bob"]


def test_halvings():
    assert halvings(4) == 2
'''
#: The right fix of ``Cart.total``: the same as the original wherever the original is right.
CORRECT = ("        return paid  # bug: may be negative", "        return max(paid, 0)")
#: An overfitting one: the failing test passes, every discounted cart is now free.
OVERFIT = ("        paid = sum(self.prices) - self.discount",
           "        if self.discount:\n            return 0\n        paid = sum(self.prices)")


@pytest.fixture(scope="module")
def found(tmp_path_factory: pytest.TempPathFactory, prefect_api_url: str) -> Iterator[DiscoveryResult]:
    """The shop's Discovery, once for the module (the stores and Prefect's results under a
    temporary folder while the module's tests run)."""
    root = tmp_path_factory.mktemp("divergence")
    with pytest.MonkeyPatch.context() as patch:
        for name, folder in (("EQUISA_WORKSPACES", "workspaces"), ("EQUISA_DB", "history.duckdb"),
                             ("EQUISA_ARTIFACTS", "artifacts"), ("EQUISA_SPOOL", "spool")):
            patch.setenv(name, str(root / folder))
        repo = small_repo(root / "shop")
        (repo / "shop.py").write_text(SHOP)
        (repo / "tests" / "test_shop.py").write_text(TESTS)
        with temporary_settings({PREFECT_LOCAL_STORAGE_PATH: root / "storage"}):
            yield discovery(DiscoveryParameters(path=str(repo), llm=False, testgen=False))


@flow(name="divergence-check")
def _measured(found: DiscoveryResult, target: str, edit: tuple[str, str],
              limits: ShadowLimits | None = None) -> DivergenceResult:
    ctx = ValidationContext(found=found, nodes={n.fqn: n for n in found.trace.nodes})
    assert target in ctx.nodes, sorted(ctx.nodes)
    assert edit[0] in SHOP
    candidate = PatchCandidate(id="candidate", generator="mutation", target=target, description="edit",
                               files={"shop.py": SHOP.replace(*edit)})
    return measure_divergence(candidate, target, ctx, limits)


def test_an_overfitting_patch_to_a_method_diverges_and_its_correct_sibling_does_not(found):
    overfit = _measured(found, "shop.Cart.total", OVERFIT).report
    correct = _measured(found, "shop.Cart.total", CORRECT).report
    assert overfit is not None and correct is not None
    assert overfit.recorded_calls == correct.recorded_calls == 2, "the two passing tests' calls"
    assert overfit.failing_calls == 1, "the failing test's call is compared, not judged"
    assert overfit.changed_generated >= 1, "a discount next to a passing call makes the cart free"
    assert overfit.examples and "Cart.total(" in overfit.examples[0] and "(in tests/test_shop.py::" in (
        overfit.examples[0])
    assert "changed outside the failing tests" in overfit.summary()
    assert correct.generated_calls >= 4, "calls near the passing ones, from the receiver's attributes"
    assert not correct.diverges, correct.examples
    assert correct.summary().endswith("no behaviour changed outside the failing tests")
    assert correct.line_coverage == 1.0 and evidence_reaches(correct) == (True, "")


def test_a_wrong_property_diverges(found):
    result = _measured(found, "shop.Cart.count", ("return len(self.prices)", "return len(set(self.prices))"))
    report = result.report
    assert report is not None, result.reason
    assert report.recorded_calls == 1 and report.changed_recorded == 0, "no repeated price in the test"
    assert report.changed_generated >= 1, "a price repeated next to the test's cart"


def test_a_wrong_nested_function_diverges(found):
    result = _measured(found, "shop.labels.<locals>.label",
                       ("return name.strip().title()", "return name.title()"))
    report = result.report
    assert report is not None, result.reason
    assert report.recorded_calls == 2 and report.changed_recorded == 1, "' ann ' keeps its spaces"
    assert "' Ann '" in report.examples[0]
    assert report.line_coverage == 1.0


def test_a_wrong_generator_diverges(found):
    result = _measured(found, "shop.Cart.expensive", ("if price > limit:", "if price >= limit:"))
    report = result.report
    assert report is not None, result.reason
    assert report.changed_recorded == 1 and "yielded list[20], now yields list[10, 20]" in report.examples[0]
    assert (16, 17) in report.arcs and (17, 18) in report.arcs, "both ways of the if were taken"


def test_a_candidate_that_loops_forever_on_a_generated_input_is_stopped_and_counted_as_changed(found):
    limits = ShadowLimits(call_limit_s=0.5, max_generated_per_call=4)
    result = _measured(found, "shop.halvings", ("while n > 0:", "while n != 0:"), limits)
    report = result.report
    assert report is not None, result.reason
    assert report.recorded_calls == 1 and report.changed_recorded == 0
    assert report.changed_generated >= 1 and any("runs out of time" in e for e in report.examples)


def test_no_report_when_the_candidate_lacks_the_function_or_no_test_covers_it(found):
    gone = _measured(found, "shop.labels", ("def labels(names):", "def tags(names):"))
    assert gone.report is None and "the candidate has no function labels" in gone.reason
    ctx = ValidationContext(found=found, nodes={n.fqn: n for n in found.trace.nodes})
    candidate = PatchCandidate(id="c", generator="mutation", target="shop.unknown", description="x",
                               files={"shop.py": SHOP})
    missing = measure_divergence(candidate, "shop.unknown", ctx)
    assert missing.report is None and "not a function of the traced suite" in missing.reason

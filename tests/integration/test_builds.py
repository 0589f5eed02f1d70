"""Builds end to end: the probe describes values without literals in real interpreters, and the
invoicing example's ``Money`` arguments become carved tests and mined invariants that hold."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from equisa_core.common.models import EncodedValue, SuiteTrace, TestOutcome
from equisa_core.common.source_edit import replace_function
from equisa_core.common.values import build_of, decode_value
from equisa_core.discovery.ambiguity import ambiguity_groups
from equisa_core.localization.inspection import ASSERTION_PREFIX
from equisa_core.localization.invariants import RESULT_NAME, mine_invariants
from equisa_core.probe import equisa_probe
from equisa_core.testgen.carving import carve_tests, carved_module, carved_module_path
from tasks.run.patched_function import deterministic_inspection, qualname_of, read_function
from tasks.sandbox.contract import RunRequest
from tasks.sandbox.local_backend import LocalSandbox
from tasks.sandbox.run_tests import execute_request
from tests.conftest import venv_with_pytest

pytestmark = pytest.mark.integration

INVOICING = Path(__file__).resolve().parents[2] / "examples" / "invoicing"
D = "invoicing.discounts.ThresholdDiscount."
APPLIES, AMOUNT, INIT = D + "applies", D + "amount", D + "__init__"
GROUP = (APPLIES, AMOUNT, INIT)
R = RESULT_NAME

# ---------------------------------------------------------------------------------------------
# The probe's encoding is the same text on every supported Python.

SAMPLE_TYPES = '''
import dataclasses
import decimal
import enum


@dataclasses.dataclass(frozen=True)
class Money:
    amount: decimal.Decimal
    currency: str = "EUR"


class Point:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x = x
        self.y = y


class Threshold:
    def __init__(self):
        self.minimum = Money(decimal.Decimal("100.00"))
        self.off = Money(decimal.Decimal("10.00"))


class Status(enum.Enum):
    OPEN = "open"


class Error(Exception):
    pass
'''

SAMPLE_VALUES = '''
import datetime, decimal, fractions, pathlib, uuid
import sample_types as m
utc, cet = datetime.timezone.utc, datetime.timezone(datetime.timedelta(hours=1), "CET")
VALUES = [
    decimal.Decimal("10.00"), decimal.Decimal("-Infinity"), decimal.Decimal("NaN"), fractions.Fraction(1, 3),
    datetime.date(2024, 1, 1), datetime.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=utc),
    datetime.datetime(2024, 1, 2, tzinfo=cet, fold=1), datetime.time(1, 2, tzinfo=utc),
    datetime.timedelta(days=-1, seconds=5), uuid.UUID(int=7), pathlib.PurePosixPath("a/b"),
    pathlib.PureWindowsPath("c:/x"), float("nan"),
    [float("inf"), {decimal.Decimal("1"), decimal.Decimal("2")}],
    set(), frozenset({3, 1}), m.Money(decimal.Decimal("1.50")), m.Point(1, decimal.Decimal("2")),
    m.Threshold(), m.Status.OPEN, m.Error("x"), {decimal.Decimal("1"): m.Money(decimal.Decimal("2"))},
]
'''


def _encode_in(python: str, folder: Path) -> list[dict]:
    script = (
        "import json, sys\n"
        f"sys.path[:0] = [{str(Path(equisa_probe.__file__).parent)!r}, {str(folder)!r}]\n"
        "from equisa_probe import encode_value\n"
        "from sample_values import VALUES\n"
        "print(json.dumps([encode_value(v) for v in VALUES]))\n"
    )
    done = subprocess.run([python, "-c", script], capture_output=True, text=True, cwd=folder, check=True)
    return json.loads(done.stdout)


@pytest.mark.parametrize("minor", ["3.8", "3.12", "3.13"])
def test_builds_are_the_same_text_on_every_python(minor, tmp_path):
    (tmp_path / "sample_types.py").write_text(textwrap.dedent(SAMPLE_TYPES), encoding="utf-8")
    (tmp_path / "sample_values.py").write_text(textwrap.dedent(SAMPLE_VALUES), encoding="utf-8")
    here = _encode_in(str(venv_with_pytest("3.11")), tmp_path)
    there = _encode_in(str(venv_with_pytest(minor)), tmp_path)
    texts = [build_of(EncodedValue.model_validate(e)) for e in there]
    assert texts == [build_of(EncodedValue.model_validate(e)) for e in here]
    unbuilt = {i for i, text in enumerate(texts) if text is None}
    assert unbuilt == {2, 20}  # Decimal('NaN'), and an exception (its args live in C)
    assert texts[0] == "decimal.Decimal('10.00')"
    assert texts[16] == ("__equisa_object__('sample_types:Money', "
                         "{'amount': decimal.Decimal('1.50'), 'currency': 'EUR'})")
    assert texts[17] == "__equisa_object__('sample_types:Point', {}, {'x': 1, 'y': decimal.Decimal('2')})"
    assert texts[19] == "sample_types.Status.OPEN"
    for text in texts:
        if text is not None:
            decode_value(text)  # every build parses and decodes on the host


# ---------------------------------------------------------------------------------------------
# The invoicing example: ThresholdDiscount's calls with Money arguments.


@pytest.fixture(scope="module", params=["3.11", "3.13"])
def invoicing_run(request) -> tuple[RunRequest, SuiteTrace]:
    """The example's suite run once with the calls of ThresholdDiscount's methods recorded."""
    python = venv_with_pytest(request.param)
    run = RunRequest(workspace=INVOICING, workspace_digest="invoicing", interpreter=str(python), record=GROUP)
    trace = execute_request(LocalSandbox(), run)
    assert trace.python_version.startswith(request.param + ".")
    return run, trace


def _passing_calls(trace: SuiteTrace, fqn: str):
    return [c for t in trace.tests if t.outcome is TestOutcome.PASSED for c in t.calls if c.fqn == fqn]


def test_money_arguments_are_recorded_as_builds(invoicing_run):
    _, trace = invoicing_run
    [first, *_] = _passing_calls(trace, APPLIES)
    assert first.args["subtotal"].build is not None and first.args["subtotal"].literal is None
    assert decode_value(first.args["subtotal"].build).__type__ == "invoicing.money:Money"
    threshold = decode_value(first.args["self"].build)
    assert threshold.__type__ == "invoicing.discounts:ThresholdDiscount"
    assert str(threshold.minimum.amount) == "100.00" and threshold.off.currency == "EUR"


def test_carved_tests_of_the_threshold_discount_collect_and_pass(invoicing_run):
    run, trace = invoicing_run
    group = frozenset(GROUP)
    assert group in ambiguity_groups(trace.coverage())
    tests = carve_tests(trace, GROUP, {n.fqn: n for n in trace.nodes})
    counts = {fqn: sum(t.target_fqn == fqn for t in tests) for fqn in GROUP}
    assert counts == {APPLIES: 3, AMOUNT: 3, INIT: 1}
    assert all(t.source_test not in trace.failed_tests() for t in tests)
    applies = [t for t in tests if t.target_fqn == APPLIES]
    rebuilt = "subtotal_obj = invoicing.money.Money.__new__(invoicing.money.Money)"
    assert all(rebuilt in t.code for t in applies)
    amount = next(t for t in tests if t.target_fqn == AMOUNT)
    assert "assert type(result) is invoicing.money.Money" in amount.code
    assert "assert result.amount == decimal.Decimal(" in amount.code and "approx" not in amount.code

    path = carved_module_path(0)
    rerun = execute_request(LocalSandbox(), run.model_copy(
        update={"overlay": {path: carved_module(tests)}, "record": ()}))
    assert not rerun.collect_errors
    carved = {t.test_id.split("::")[1]: t for t in rerun.tests if t.test_id.startswith(path + "::")}
    assert set(carved) == {t.name for t in tests}
    assert all(t.outcome is TestOutcome.PASSED for t in carved.values()), [
        (t.test_id, t.message) for t in carved.values() if t.outcome is not TestOutcome.PASSED]
    # The example's own failures are untouched, and each member now runs in a test of its own.
    assert rerun.failed_tests() == trace.failed_tests()
    for test in tests:
        assert carved[test.name].covered & group >= {test.target_fqn}
    assert group not in ambiguity_groups(rerun.coverage())


def test_invariants_on_money_attributes_hold_in_the_real_run(invoicing_run):
    run, trace = invoicing_run
    mined = mine_invariants(_passing_calls(trace, APPLIES), ["self", "subtotal"])
    applies = [inv.expression for inv in mined]
    assert applies == [
        f"isinstance({R}, bool)",
        "subtotal.amount > 0",
        "len(subtotal.currency) > 0",
        "type(subtotal).__name__ == 'Money'",
        "type(subtotal.amount).__name__ == 'Decimal'",
        "isinstance(subtotal.currency, str)",
    ]
    amount = [inv.expression for inv in mine_invariants(_passing_calls(trace, AMOUNT), ["self", "subtotal"])]
    assert f"{R}.amount <= subtotal.amount" in amount and f"type({R}).__name__ == 'Money'" in amount

    # As an inspection patch, the assertions run over the real Money objects and hold wherever
    # the suite passed: the same tests pass and fail, and no EQUISA assertion fires.
    nodes = {n.fqn: n for n in trace.nodes}
    file = nodes[APPLIES].file
    text = (INVOICING / file).read_text(encoding="utf-8")
    for fqn in (APPLIES, AMOUNT):
        _, source = read_function(INVOICING, nodes[fqn])
        patch, count = deterministic_inspection(source, nodes[fqn], _passing_calls(trace, fqn))
        assert count >= 6 and "subtotal.amount" in patch
        text = replace_function(text, qualname_of(nodes[fqn]), patch)
    overlay = {file: text}
    inspected = execute_request(LocalSandbox(), run.model_copy(update={"overlay": overlay, "record": ()}))
    assert inspected.failed_tests() == trace.failed_tests()
    assert not any(ASSERTION_PREFIX in (t.message or "") for t in inspected.tests)
    assert "INSPECTION_START: " + APPLIES in "".join(t.stdout_tail for t in inspected.tests)


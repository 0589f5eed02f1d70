"""Carved disambiguating tests: hand-built traces run in-process, and one real probe round trip."""

from __future__ import annotations

import ast
import importlib
import sys
import textwrap
from pathlib import Path

import pytest

from equisa_core.common.models import (
    EncodedValue,
    Node,
    RecordedCall,
    SuiteTrace,
    TestOutcome,
    TestResult,
    TracebackFrame,
)
from equisa_core.discovery.ambiguity import ambiguity_groups
from equisa_core.probe.equisa_probe import encode_value
from equisa_core.testgen.carving import (
    GENERATED_TESTS_DIR,
    CarvedTest,
    carve_tests,
    carved_module,
    carved_module_path,
    imports_a_test_module,
    is_test_module,
)
from equisa_core.testgen.carving_choice import COVERING_FACTOR

SHOP = {
    "shop/__init__.py": "",
    "shop/basket.py": '''
        class Basket:
            def __init__(self, owner):
                self.items = []
                self.owner = owner


        def count_items(basket):
            return len(basket.items)


        def tag_list(tags, first):
            return [first, *sorted(tags)], len(tags), ", ".join(map(str, tags))
    ''',
    "shop/errors.py": '''
        class PricingError(ValueError):
            """A price that cannot be right."""
    ''',
    "shop/pricing.py": '''
        from shop.errors import PricingError


        class Rate:
            def __init__(self, percent):
                self.percent = percent

            def apply(self, amount):
                return amount * (1 + self.percent / 100)

            @classmethod
            def named(cls, label):
                return label.upper() + "-RATE"

            @staticmethod
            def clamp(value, low=0, high=100):
                return max(low, min(high, value))

            @property
            def factor(self):
                return 1 + self.percent / 100

            def __halve(self, amount):
                return amount / 2


        class Discount(Rate):
            pass


        def parse_amount(text):
            text = text.strip()
            if not text:
                raise ValueError("empty amount")
            if text.startswith("-"):
                raise PricingError("negative amount: " + text)
            return float(text)


        def combine(a, /, b, *rest, scale=1, **options):
            return [(a + b + sum(rest)) * scale, sorted(options)]


        def split(total, parts):
            return [total / parts] * parts


        def nested_result(n):
            return {"n": n, "halves": [n / 2, [n / 4]]}


        def describe(label, cents):
            return f"{label}: {cents / 100:.2f}"
    ''',
}
P = "shop.pricing."


def write_tree(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


@pytest.fixture
def shop(tmp_path, monkeypatch):
    """The ``shop`` package on sys.path, forgotten again after the test."""
    write_tree(tmp_path, SHOP)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module("shop.pricing")
    for name in [n for n in sys.modules if n == "shop" or n.startswith("shop.")]:
        del sys.modules[name]


def enc(value: object) -> EncodedValue:
    """A value encoded exactly as the probe encodes it."""
    return EncodedValue.model_validate(encode_value(value))


def recorded(fqn: str, function, **args) -> RecordedCall:
    """A call as the probe records it: run ``function`` for real with ``args`` (in order)."""
    encoded = {name: enc(value) for name, value in args.items()}
    try:
        result = function(*args.values())
    except Exception as error:
        kind = type(error)
        return RecordedCall(fqn=fqn, args=encoded, raised=f"{kind.__module__}.{kind.__qualname__}",
                            raised_message=str(error))
    return RecordedCall(fqn=fqn, args=encoded, result=enc(result))


def result(test_id: str, *calls: RecordedCall, outcome: TestOutcome = TestOutcome.PASSED,
           **failure) -> TestResult:
    covered = frozenset(c.fqn for c in calls)
    return TestResult(test_id=test_id, outcome=outcome, duration=0.01, covered=covered, calls=calls,
                      **failure)


def node(fqn: str, file: str = "shop/pricing.py") -> Node:
    return Node(fqn=fqn, file=file, start_line=1, end_line=2)


def suite(*tests: TestResult, flaky: frozenset[str] = frozenset()) -> SuiteTrace:
    return SuiteTrace(python_version="3.12", backend="sys.monitoring", backend_reason="test",
                      tests=tests, flaky=flaky)


def nodes_of(*fqns: str) -> dict[str, Node]:
    return {fqn: node(fqn) for fqn in fqns}


def run_in_process(tests: list[CarvedTest]) -> dict[str, object]:
    """Execute the carved module and each of its tests; return the module's namespace."""
    source = carved_module(tests)
    namespace: dict[str, object] = {"__name__": "carved_under_test"}
    exec(compile(source, "carved_under_test.py", "exec"), namespace)
    for test in tests:
        namespace[test.name]()  # raises if the carved assertion fails
    return namespace


# ---------------------------------------------------------------------------------------------
# Functions, results and exceptions.


def test_functions_get_result_and_exception_tests_that_pass_on_the_code(shop):
    trace = suite(
        result("tests/test_p.py::test_parse", recorded(P + "parse_amount", shop.parse_amount, text=" 12.5")),
        result("tests/test_p.py::test_empty", recorded(P + "parse_amount", shop.parse_amount, text="  ")),
        result("tests/test_p.py::test_label", recorded(P + "describe", shop.describe, label="tea", cents=25)),
    )
    tests = carve_tests(trace, {P + "parse_amount", P + "describe"}, nodes_of(P + "parse_amount"))
    assert [(t.name, t.target_fqn, t.expects, t.source_test) for t in tests] == [
        ("test_carved_describe_returns_a_str", P + "describe", "result", "tests/test_p.py::test_label"),
        ("test_carved_parse_amount_returns_12_5", P + "parse_amount", "result",
         "tests/test_p.py::test_parse"),
        ("test_carved_parse_amount_raises_value_error", P + "parse_amount", "exception",
         "tests/test_p.py::test_empty"),
    ]
    describe, parsed, empty = tests
    assert "from shop.pricing import describe" in describe.imports
    assert "_equisa_call(describe, label='tea', cents=25)" in describe.code
    assert "assert result == 'tea: 0.25'" in describe.code
    assert "assert result == pytest.approx(12.5)" in parsed.code
    assert "with pytest.raises(ValueError):" in empty.code
    run_in_process(tests)


def test_a_project_exception_is_asserted_through_its_module(shop):
    call = recorded(P + "parse_amount", shop.parse_amount, text="-3")
    assert call.raised == "shop.errors.PricingError"
    nodes = {**nodes_of(P + "parse_amount"), "shop.errors.f": node("shop.errors.f", "shop/errors.py")}
    [test] = carve_tests(suite(result("t.py::test_negative", call)), [P + "parse_amount"], nodes)
    assert test.expects == "exception"
    assert "import shop.errors" in test.imports
    assert "with pytest.raises(shop.errors.PricingError):" in test.code
    run_in_process([test])
    # A wrong type would be caught: the same test against a different exception fails.
    broken = test.model_copy(update={"code": test.code.replace("shop.errors.PricingError", "KeyError")})
    with pytest.raises(ValueError):
        run_in_process([broken])


def test_floats_are_compared_approximately_and_exact_values_exactly(shop):
    trace = suite(result(
        "t.py::test_numbers",
        recorded(P + "split", shop.split, total=1.0, parts=3),
        recorded(P + "nested_result", shop.nested_result, n=0.3),
        recorded(P + "describe", shop.describe, label="x", cents=10),
    ))
    group = [P + "split", P + "nested_result", P + "describe"]
    by_target = {t.target_fqn: t for t in carve_tests(trace, group, nodes_of(*group))}
    assert "assert result == pytest.approx([0.3333333333333333, 0.3333333333333333, " in (
        by_target[P + "split"].code
    )
    # pytest.approx cannot compare nested containers: they are compared exactly (a float's repr
    # round-trips, so the recorded literal is the value itself).
    assert "assert result == {'n': 0.3, 'halves': [0.15, [0.075]]}" in by_target[P + "nested_result"].code
    assert "import pytest" not in by_target[P + "describe"].imports
    run_in_process(list(by_target.values()))


def test_bools_and_none_are_asserted_by_identity(shop):
    fake = RecordedCall(fqn=P + "describe", args={"label": enc("a"), "cents": enc(1)}, result=enc(True))
    none = RecordedCall(fqn=P + "describe", args={"label": enc("b"), "cents": enc(1)}, result=enc(None))
    tests = carve_tests(suite(result("t.py::test_a", fake, none)), [P + "describe"], nodes_of(P + "describe"))
    assert "assert result is True" in tests[0].code
    assert "assert result is None" in tests[1].code


# ---------------------------------------------------------------------------------------------
# Methods and objects.


def test_methods_are_called_on_an_object_rebuilt_from_its_state(shop):
    rate = shop.Rate(20)
    call = recorded(P + "Rate.apply", shop.Rate.apply, self=rate, amount=10.0)
    trace = suite(result("t.py::test_rate", call))
    [test] = carve_tests(trace, [P + "Rate.apply"], nodes_of(P + "Rate.apply"))
    assert "from shop.pricing import Rate" in test.imports
    assert "obj = Rate.__new__(Rate)" in test.code
    assert "obj.__dict__.update({'percent': 20})" in test.code
    assert "_equisa_call(Rate.apply, self=obj, amount=10.0)" in test.code
    assert test.name == "test_carved_apply_returns_12_0"
    run_in_process([test])


def test_a_subclass_instance_is_rebuilt_as_itself_and_calls_exactly_the_member(shop):
    discount = shop.Discount(50)
    call = recorded(P + "Rate.apply", shop.Rate.apply, self=discount, amount=8.0)
    [test] = carve_tests(suite(result("t.py::test_d", call)), [P + "Rate.apply"], nodes_of(P + "Rate.apply"))
    assert "obj = Discount.__new__(Discount)" in test.code
    assert "from shop.pricing import Discount" in test.imports
    run_in_process([test])


def test_classmethods_staticmethods_properties_and_private_methods(shop):
    rate = shop.Rate(10)
    calls = (
        recorded(P + "Rate.named", shop.Rate.named.__func__, cls=shop.Rate, label="vat"),
        recorded(P + "Rate.clamp", shop.Rate.clamp, value=150, low=0, high=100),
        recorded(P + "Rate.factor", shop.Rate.factor.fget, self=rate),
        recorded(P + "Rate.__halve", shop.Rate._Rate__halve, self=rate, amount=3),
    )
    group = [c.fqn for c in calls]
    tests = carve_tests(suite(result("t.py::test_all", *calls)), group, nodes_of(*group))
    assert {t.target_fqn for t in tests} == set(group)
    named = next(t for t in tests if t.target_fqn == P + "Rate.named")
    assert "_equisa_call(Rate.named, cls=Rate, label='vat')" in named.code
    halve = next(t for t in tests if t.target_fqn == P + "Rate.__halve")
    assert "Rate._Rate__halve" in halve.code and halve.name == "test_carved_halve_returns_1_5"
    run_in_process(tests)


def test_positional_only_varargs_keyword_only_and_kwargs_are_placed_by_signature(shop):
    # The probe records in co_varnames order: parameters, keyword-only, then *args and **kwargs.
    args = {"a": 1, "b": 2, "scale": 3, "rest": (4, 5), "options": {"z": 1, "y": 2}}
    call = RecordedCall(fqn=P + "combine", args={k: enc(v) for k, v in args.items()},
                        result=enc(shop.combine(1, 2, 4, 5, scale=3, z=1, y=2)))
    [test] = carve_tests(suite(result("t.py::test_c", call)), [P + "combine"], nodes_of(P + "combine"))
    assert "rest=(4, 5)" in test.code and "options={'z': 1, 'y': 2}" in test.code
    assert "assert result == [36, ['y', 'z']]" in test.code
    run_in_process([test])


# ---------------------------------------------------------------------------------------------
# What is skipped.


def test_calls_with_arguments_that_cannot_be_rebuilt_are_skipped(shop):
    opaque = RecordedCall(fqn=P + "describe", args={"label": enc(shop.describe), "cents": enc(1)},
                          result=enc("x"))
    broken_state = RecordedCall(
        fqn=P + "Rate.apply",
        args={"self": EncodedValue(type="shop.pricing.Rate", state={"percent": "<object>"}),
              "amount": enc(1)},
        result=enc(1.0),
    )
    local_class = RecordedCall(
        fqn=P + "Rate.apply",
        args={"self": EncodedValue(type="shop.pricing.f.<locals>.Rate", state={"percent": "1"}),
              "amount": enc(1)},
        result=enc(1.01),
    )
    good = recorded(P + "describe", shop.describe, label="ok", cents=5)
    assert opaque.args["label"].literal is None and opaque.args["label"].type == "builtins.function"
    trace = suite(result("t.py::test_x", opaque, broken_state, local_class, good))
    group = [P + "describe", P + "Rate.apply"]
    # The unbuildable calls take no slot: the one buildable call is carved even with a limit of 1.
    tests = carve_tests(trace, group, nodes_of(*group), max_per_member=1)
    assert [(t.target_fqn, t.source_test) for t in tests] == [(P + "describe", "t.py::test_x")]
    assert "label='ok'" in tests[0].code


def test_nested_functions_and_lambdas_are_skipped(shop):
    nested = RecordedCall(fqn=P + "outer.<locals>.inner", args={"x": enc(1)}, result=enc(2))
    trace = suite(result("t.py::test_n", nested))
    assert carve_tests(trace, [nested.fqn], nodes_of(nested.fqn)) == []


def test_failing_tests_contribute_only_exceptions_that_did_not_fail_them(shop):
    wrong_value = recorded(P + "describe", shop.describe, label="a", cents=1)
    caught = recorded(P + "parse_amount", shop.parse_amount, text="")
    propagated = recorded(P + "parse_amount", shop.parse_amount, text="-1")
    trace = suite(
        # Failed on an assertion after parse_amount("") raised and was caught: that raise is trusted.
        result("t.py::test_caught", wrong_value, caught, outcome=TestOutcome.FAILED,
               exception_type="AssertionError",
               traceback=(TracebackFrame(file="t.py", line=3, function="test_caught"),)),
        # Failed with the very exception parse_amount raised: it may be the bug, so it is not asserted.
        result("t.py::test_propagated", propagated, outcome=TestOutcome.FAILED,
               exception_type="shop.errors.PricingError",
               traceback=(TracebackFrame(file="t.py", line=3, function="test_propagated"),
                          TracebackFrame(file="shop/pricing.py", line=9, function="parse_amount"))),
    )
    group = [P + "describe", P + "parse_amount"]
    tests = carve_tests(trace, group, nodes_of(*group))
    assert [(t.target_fqn, t.expects, t.source_test) for t in tests] == [
        (P + "parse_amount", "exception", "t.py::test_caught")
    ]
    assert "# Carved from t.py::test_caught (failed)" in tests[0].code
    run_in_process(tests)


def test_flaky_tests_and_inputs_with_two_outcomes_are_not_trusted(shop):
    first = RecordedCall(fqn=P + "describe", args={"label": enc("a"), "cents": enc(1)}, result=enc("one"))
    second = RecordedCall(fqn=P + "describe", args={"label": enc("a"), "cents": enc(1)}, result=enc("two"))
    from_flaky = recorded(P + "describe", shop.describe, label="f", cents=1)
    stable = recorded(P + "describe", shop.describe, label="s", cents=1)
    trace = suite(result("t.py::test_1", first, stable), result("t.py::test_2", second),
                  result("t.py::test_flaky", from_flaky), flaky=frozenset({"t.py::test_flaky"}))
    tests = carve_tests(trace, [P + "describe"], nodes_of(P + "describe"))
    assert len(tests) == 1 and "label='s'" in tests[0].code


def test_generators_are_dropped_as_their_resumptions_disagree():
    # What the probe records for ``list(one(5))`` with ``def one(x): yield x``: the first
    # resumption "returns" 5, the last None, both with the same arguments.
    calls = (RecordedCall(fqn="g.m.one", args={"x": enc(5)}, result=enc(5)),
             RecordedCall(fqn="g.m.one", args={"x": enc(5)}, result=enc(None)))
    assert carve_tests(suite(result("t.py::test_g", *calls)), ["g.m.one"], {}) == []


# ---------------------------------------------------------------------------------------------
# Choosing calls, naming, determinism.


def test_identical_calls_are_carved_once_and_distinct_inputs_are_preferred(shop):
    texts = ["1", "1", "1", "2", " ", "-4"]
    tests_ = [result(f"t.py::test_{i}", recorded(P + "parse_amount", shop.parse_amount, text=text))
              for i, text in enumerate(texts)]
    trace = suite(*tests_)
    carved = carve_tests(trace, [P + "parse_amount"], nodes_of(P + "parse_amount"), max_per_member=2)
    # The first call, then the first of another kind (an exception) beats a second result.
    assert [(t.name, t.expects, t.source_test) for t in carved] == [
        ("test_carved_parse_amount_returns_1_0", "result", "t.py::test_0"),
        ("test_carved_parse_amount_raises_value_error", "exception", "t.py::test_4"),
    ]
    nodes = nodes_of(P + "parse_amount")
    everything = carve_tests(trace, [P + "parse_amount"], nodes, max_per_member=10)
    assert len(everything) == 4  # "1", "2", " ", "-4": the repeats of "1" are one call
    assert carve_tests(trace, [P + "parse_amount"], nodes, max_per_member=10) == everything
    assert carve_tests(trace, [P + "parse_amount"], nodes, max_per_member=0) == []
    with pytest.raises(ValueError):
        carve_tests(trace, [P + "parse_amount"], {}, max_per_member=-1)


def test_calls_differing_in_more_arguments_are_preferred():
    def call(a: int, b: int) -> RecordedCall:
        return RecordedCall(fqn="m.f", args={"a": enc(a), "b": enc(b)}, result=enc(a + b))

    trace = suite(result("t.py::test", call(1, 1), call(1, 2), call(2, 2)))
    carved = carve_tests(trace, ["m.f"], {"m.f": node("m.f", "m.py")}, max_per_member=2)
    assert ["a=1, b=1" in carved[0].code, "a=2, b=2" in carved[1].code] == [True, True]


def test_calls_whose_tests_reach_new_lines_of_the_member_are_kept_past_the_limit():
    """With the lines each test executed, calls keep being chosen while they reach lines of the
    member that the chosen ones did not (the most new lines first), up to COVERING_FACTOR times
    the limit; lines outside the member's definition do not count."""
    def call(a: int) -> RecordedCall:
        return RecordedCall(fqn="m.f", args={"a": enc(a)}, result=enc(a * 2))

    trace = suite(*(result(f"t.py::test_{a}", call(a)) for a in range(6)))
    nodes = {"m.f": Node(fqn="m.f", file="m.py", start_line=10, end_line=30)}
    lines = {"t.py::test_0": frozenset({10, 11}), "t.py::test_1": frozenset({10, 11}),
             "t.py::test_2": frozenset({10, 12, 13, 14}), "t.py::test_3": frozenset({10, 15}),
             "t.py::test_4": frozenset({10, 11, 40, 41}),  # 40, 41: another member's lines
             "t.py::test_5": frozenset({10, 12})}
    plain = carve_tests(trace, ["m.f"], nodes, max_per_member=1)
    covering = carve_tests(trace, ["m.f"], nodes, max_per_member=1, test_lines=lines)
    assert [t.source_test for t in plain] == ["t.py::test_0"]
    # test_2 (4 lines), then test_0 (adds 11), then test_3 (adds 15); the rest add nothing.
    assert [t.source_test for t in covering] == ["t.py::test_2", "t.py::test_0", "t.py::test_3"]
    capped = carve_tests(trace, ["m.f"], nodes, max_per_member=0, test_lines=lines)
    assert capped == []
    assert COVERING_FACTOR == 4


def test_members_with_one_last_name_get_distinct_names_and_imports(tmp_path, monkeypatch):
    write_tree(tmp_path, {
        "alpha/__init__.py": "", "alpha/util.py": "def parse(x):\n    return x + 1\n",
        "beta/__init__.py": "", "beta/util.py": "def parse(x):\n    return x * 2\n",
    })
    monkeypatch.syspath_prepend(str(tmp_path))
    calls = (
        RecordedCall(fqn="alpha.util.parse", args={"x": enc(3)}, result=enc(4)),
        RecordedCall(fqn="beta.util.parse", args={"x": enc(3)}, result=enc(6)),
    )
    nodes = {"alpha.util.parse": node("alpha.util.parse", "alpha/util.py"),
             "beta.util.parse": node("beta.util.parse", "beta/util.py")}
    tests = carve_tests(suite(result("t.py::test_p", *calls)), list(nodes), nodes)
    assert [t.name for t in tests] == ["test_carved_alpha_util_parse_returns_4",
                                       "test_carved_beta_util_parse_returns_6"]
    assert tests[0].imports != tests[1].imports
    assert "from beta.util import parse as parse_beta_util" in tests[1].imports
    try:
        run_in_process(tests)
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] in ("alpha", "beta")]:
            del sys.modules[name]


def test_src_layouts_import_the_module_part_of_the_fqn():
    call = RecordedCall(fqn="shop.pricing.describe", args={"label": enc("a"), "cents": enc(1)},
                        result=enc("a: 0.01"))
    nodes = {call.fqn: node(call.fqn, "src/shop/pricing.py")}
    [test] = carve_tests(suite(result("tests/test_x.py::test_a", call)), [call.fqn], nodes)
    assert "from shop.pricing import describe" in test.imports
    package = Node(fqn="shop.total", file="src/shop/__init__.py", start_line=1, end_line=2)
    total = RecordedCall(fqn="shop.total", args={"xs": enc([1, 2])}, result=enc(3))
    trace = suite(result("tests/test_x.py::test_t", total))
    [test] = carve_tests(trace, ["shop.total"], {"shop.total": package})
    assert "from shop import total" in test.imports


# ---------------------------------------------------------------------------------------------
# The module.


def test_the_carved_module_parses_and_has_unique_names_sorted_imports_and_a_docstring(shop):
    trace = suite(
        result("t.py::test_a", recorded(P + "parse_amount", shop.parse_amount, text="1"),
               recorded(P + "parse_amount", shop.parse_amount, text="-1"),
               recorded(P + "Rate.apply", shop.Rate.apply, self=shop.Rate(5), amount=2.0)),
    )
    group = [P + "parse_amount", P + "Rate.apply"]
    tests = carve_tests(trace, group, nodes_of(*group))
    source = carved_module(tests)
    tree = ast.parse(source)
    assert "carved by EQUISA from recorded executions" in ast.get_docstring(tree)
    functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert functions == ["_equisa_call", *(t.name for t in tests)]
    assert len(set(functions)) == len(functions)
    imports = [ast.unparse(n) for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    assert imports == [
        "import inspect", "import pytest", "import shop.errors",
        "from shop.pricing import Rate, parse_amount",
    ]
    run_in_process(tests)
    assert carved_module_path(0) == "tests/equisa_generated/test_carved_group_0.py"
    assert carved_module_path(3).startswith(GENERATED_TESTS_DIR + "/")


def test_carved_module_refuses_duplicate_names_and_clashing_imports():
    test = CarvedTest(name="test_carved_f_0", target_fqn="m.f", source_test="t", expects="result",
                      code="def test_carved_f_0():\n    assert f() == 1\n", imports=("from m import f",))
    with pytest.raises(ValueError, match="share names"):
        carved_module([test, test])
    other = test.model_copy(update={"name": "test_carved_f_1", "imports": ("from n import f",)})
    with pytest.raises(ValueError, match="'f'"):
        carved_module([test, other])
    assert carved_module([]).startswith('"""Tests carved by EQUISA')


# ---------------------------------------------------------------------------------------------
# Values without literals: rebuilt from the probe's builds (equisa_core.common.values).

TILL = {
    "till/__init__.py": "",
    "till/money.py": '''
        import dataclasses
        import datetime
        import enum
        from decimal import Decimal


        class Status(enum.Enum):
            OPEN = "open"
            PAID = "paid"


        @dataclasses.dataclass(frozen=True)
        class Money:
            amount: Decimal
            currency: str = "EUR"


        class Threshold:
            def __init__(self, minimum, off):
                self.minimum = Money(Decimal(minimum))
                self.off = Money(Decimal(off))

            def applies(self, subtotal):
                return subtotal.amount >= self.minimum.amount

            def amount(self, subtotal):
                return self.off if self.applies(subtotal) else Money(Decimal("0.00"), subtotal.currency)


        class Point:
            __slots__ = ("x", "y")

            def __init__(self, x, y):
                self.x = x
                self.y = y

            def shifted(self, by):
                return Point(self.x + by, self.y + by)


        def half(amount):
            return amount / 2


        def is_due(day, status):
            return status is Status.OPEN and day <= datetime.date(2024, 1, 31)


        def split(total, parts):
            return [Money(total.amount / parts, total.currency)] * parts


        def nothing(amount):
            return float("nan")
    ''',
}
M = "till.money."


@pytest.fixture
def till(tmp_path, monkeypatch):
    """The ``till`` package on sys.path, forgotten again after the test."""
    write_tree(tmp_path, TILL)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module("till.money")
    for name in [n for n in sys.modules if n == "till" or n.startswith("till.")]:
        del sys.modules[name]


def till_nodes(*fqns: str) -> dict[str, Node]:
    return {fqn: node(fqn, "till/money.py") for fqn in fqns}


def test_methods_of_objects_holding_money_are_carved_and_pass(till):
    from decimal import Decimal

    threshold = till.Threshold("100", "10")
    calls = (
        recorded(M + "Threshold.applies", till.Threshold.applies, self=threshold,
                 subtotal=till.Money(Decimal("150.00"))),
        recorded(M + "Threshold.applies", till.Threshold.applies, self=threshold,
                 subtotal=till.Money(Decimal("99.99"))),
        recorded(M + "Threshold.amount", till.Threshold.amount, self=threshold,
                 subtotal=till.Money(Decimal("150.00"))),
    )
    assert calls[0].args["subtotal"].literal is None and calls[0].args["subtotal"].build is not None
    group = [M + "Threshold.applies", M + "Threshold.amount"]
    tests = carve_tests(suite(result("t.py::test_t", *calls)), group, till_nodes(*group))
    assert [(t.target_fqn, t.expects) for t in tests] == [
        (M + "Threshold.amount", "result"),
        (M + "Threshold.applies", "result"),
        (M + "Threshold.applies", "result"),
    ]
    amount, applies, _ = tests
    assert {"import decimal", "from till.money import Money", "from till.money import Threshold"} <= set(
        applies.imports)
    assert "obj_minimum = Money.__new__(Money)" in applies.code
    assert "obj_minimum.__dict__.update({'amount': decimal.Decimal('100'), 'currency': 'EUR'})" in (
        applies.code)
    assert "obj.__dict__.update({'minimum': obj_minimum, 'off': obj_off})" in applies.code
    assert "subtotal_obj.__dict__.update({'amount': decimal.Decimal('150.00'), 'currency': 'EUR'})" in (
        applies.code)
    assert "_equisa_call(Threshold.applies, self=obj, subtotal=subtotal_obj)" in applies.code
    assert "assert result is True" in applies.code
    # An object result: its exact type, then each attribute; the Decimal exactly, never approx.
    assert "assert type(result) is Money" in amount.code
    assert "assert result.amount == decimal.Decimal('10')" in amount.code
    assert "assert result.currency == 'EUR'" in amount.code
    assert "approx" not in amount.code and "import pytest" not in amount.imports
    run_in_process(tests)
    assertion = "assert result.amount == decimal.Decimal('10')"
    wrong = amount.model_copy(update={"code": amount.code.replace(assertion, assertion[:-2] + ".01')")})
    with pytest.raises(AssertionError):
        run_in_process([wrong])


def test_decimal_results_are_compared_exactly(till):
    from decimal import Decimal

    trace = suite(result("t.py::test_h", recorded(M + "half", till.half, amount=Decimal("3"))))
    [test] = carve_tests(trace, [M + "half"], till_nodes(M + "half"))
    assert "_equisa_call(half, amount=decimal.Decimal('3'))" in test.code
    assert "assert result == decimal.Decimal('1.5')" in test.code
    assert "import decimal" in test.imports and "import pytest" not in test.imports
    run_in_process([test])


def test_slots_enum_members_and_dates(till):
    import datetime

    calls = (
        recorded(M + "Point.shifted", till.Point.shifted, self=till.Point(1, 2), by=1),
        recorded(M + "is_due", till.is_due, day=datetime.date(2024, 1, 2), status=till.Status.OPEN),
        recorded(M + "is_due", till.is_due, day=datetime.date(2024, 2, 1), status=till.Status.OPEN),
    )
    group = [M + "Point.shifted", M + "is_due"]
    tests = carve_tests(suite(result("t.py::test_p", *calls)), group, till_nodes(*group))
    shifted = next(t for t in tests if t.target_fqn == M + "Point.shifted")
    assert "object.__setattr__(obj, 'x', 1)" in shifted.code
    assert "assert type(result) is Point" in shifted.code and "assert result.y == 3" in shifted.code
    due = [t for t in tests if t.target_fqn == M + "is_due"]
    assert len(due) == 2
    assert "day=datetime.date(2024, 1, 2), status=Status.OPEN" in due[0].code
    assert "from till.money import Status" in due[0].imports and "import datetime" in due[0].imports
    run_in_process(tests)


def test_results_that_cannot_be_asserted_are_not_carved(till):
    from decimal import Decimal

    money = till.Money(Decimal("9.00"))
    calls = (
        recorded(M + "split", till.split, total=money, parts=7),  # too many objects to assert one by one
        recorded(M + "nothing", till.nothing, amount=money),  # NaN equals nothing
    )
    assert calls[0].result.build is not None and calls[1].result.build == "float('nan')"
    group = [M + "split", M + "nothing"]
    assert carve_tests(suite(result("t.py::test_s", *calls)), group, till_nodes(*group)) == []


def test_a_short_list_of_objects_is_asserted_item_by_item(till):
    from decimal import Decimal

    call = recorded(M + "split", till.split, total=till.Money(Decimal("9.00")), parts=2)
    [test] = carve_tests(suite(result("t.py::test_s", call)), [M + "split"], till_nodes(M + "split"))
    assert "assert len(result) == 2" in test.code
    assert "assert type(result[1]) is Money" in test.code
    assert "assert result[1].amount == decimal.Decimal('4.50')" in test.code
    run_in_process([test])
    wrong = test.model_copy(update={"code": test.code.replace("== 2", "== 3")})
    with pytest.raises(AssertionError):
        run_in_process([wrong])


def test_results_holding_classes_are_asserted_with_the_classes_named(shop):
    import collections

    call = RecordedCall(fqn=P + "describe", args={"label": enc("x"), "cents": enc(1)},
                        result=enc(([(1, int)], collections.OrderedDict)))
    [test] = carve_tests(suite(result("t.py::test_d", call)), [P + "describe"], nodes_of(P + "describe"))
    assert "assert result == ([(1, int)], collections.OrderedDict)" in test.code
    assert "import collections" in test.imports


def test_builds_that_break_the_grammar_are_skipped(till):
    hostile = EncodedValue(type="till.money.Money", build="__import__('os').system('echo hacked')")
    call = RecordedCall(fqn=M + "half", args={"amount": hostile}, result=enc(1))
    assert carve_tests(suite(result("t.py::test_x", call)), [M + "half"], till_nodes(M + "half")) == []
    bad_result = RecordedCall(fqn=M + "half", args={"amount": enc(2)},
                              result=EncodedValue(type="x.Y", build="os.system('echo hacked')"))
    assert carve_tests(suite(result("t.py::test_x", bad_result)), [M + "half"], till_nodes(M + "half")) == []


# ---------------------------------------------------------------------------------------------
# The real thing: record, carve, run the carved tests, and see the ambiguity group split.

LEDGER = {
    "ledger/__init__.py": "",
    "ledger/money.py": '''
        class Rate:
            def __init__(self, percent):
                self.percent = percent

            def apply(self, amount):
                return amount * (1 + self.percent / 100)


        def parse_amount(text):
            text = text.strip()
            if not text:
                raise ValueError("empty amount")
            return float(text)
    ''',
    "tests/test_money.py": '''
        import pytest

        from ledger.money import Rate, parse_amount

        @pytest.fixture(scope="module")
        def rate():
            return Rate(20)  # built once, in the first test's setup: Rate.__init__ is not in the group


        def test_taxed_amount(rate):
            assert rate.apply(parse_amount(" 10.00 ")) == pytest.approx(12.0)


        def test_blank_amount_is_rejected(rate):
            assert rate.apply(0.0) == 0.0
            with pytest.raises(ValueError):
                parse_amount("   ")


        def test_wrong_expectation(rate):
            assert rate.apply(parse_amount("1")) == 1.3
    ''',
}
APPLY, PARSE = "ledger.money.Rate.apply", "ledger.money.parse_amount"


@pytest.mark.integration
def test_carved_tests_split_a_real_ambiguity_group(tmp_path):
    from tasks.sandbox.contract import RunRequest
    from tasks.sandbox.local_backend import LocalSandbox
    from tasks.sandbox.run_tests import execute_request

    write_tree(tmp_path, LEDGER)
    request = RunRequest(workspace=tmp_path, workspace_digest="t", interpreter=sys.executable,
                         record=(APPLY, PARSE))
    trace = execute_request(LocalSandbox(), request)
    assert {t.test_id.split("::")[1]: t.outcome for t in trace.tests} == {
        "test_taxed_amount": TestOutcome.PASSED,
        "test_blank_amount_is_rejected": TestOutcome.PASSED,
        "test_wrong_expectation": TestOutcome.FAILED,
    }
    group = frozenset({APPLY, PARSE})
    assert group in ambiguity_groups(trace.coverage())

    tests = carve_tests(trace, group, {n.fqn: n for n in trace.nodes})
    assert {(t.target_fqn, t.expects) for t in tests} == {
        (APPLY, "result"), (PARSE, "result"), (PARSE, "exception"),
    }
    assert len([t for t in tests if t.target_fqn == APPLY]) == 2  # amount=10.0 and amount=0.0
    # Nothing is carved from what the failing test saw returned.
    assert all(t.source_test != "tests/test_money.py::test_wrong_expectation" for t in tests)

    path = carved_module_path(0)
    rerun = execute_request(LocalSandbox(), request.model_copy(
        update={"overlay": {path: carved_module(tests)}, "record": ()}))
    carved = {t.test_id.split("::")[1]: t for t in rerun.tests if t.test_id.startswith(path + "::")}
    assert set(carved) == {t.name for t in tests}
    assert all(t.outcome is TestOutcome.PASSED for t in carved.values()), [
        (t.test_id, t.message) for t in carved.values() if t.outcome is not TestOutcome.PASSED]
    exception_test = next(t for t in tests if t.expects == "exception")
    assert carved[exception_test.name].outcome is TestOutcome.PASSED
    for test in tests:  # each carved test executes exactly its own member of the group
        assert carved[test.name].covered & group == {test.target_fqn}
    assert len({carved[t.name].covered & group for t in tests}) == 2
    assert group not in ambiguity_groups(rerun.coverage())
    assert not any(len(g & group) > 1 for g in ambiguity_groups(rerun.coverage()))


# ---------------------------------------------------------------------------------------------
# Direct calls: the members' definitions given (``sources``), no helper.


def shop_sources() -> dict[str, str]:
    return {path: textwrap.dedent(text).lstrip("\n") for path, text in SHOP.items()}


def calls_of(code: str) -> list[str]:
    """The calls a test's code makes, as text."""
    return [ast.unparse(n) for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Call)]


def test_with_the_definitions_every_member_is_called_directly_and_the_module_has_no_helper(shop):
    rate = shop.Rate(20)
    calls = (
        recorded(P + "describe", shop.describe, label="tea", cents=25),
        recorded(P + "Rate.apply", shop.Rate.apply, self=rate, amount=10.0),
        recorded(P + "Rate.named", shop.Rate.named.__func__, cls=shop.Rate, label="vat"),
        recorded(P + "Rate.clamp", shop.Rate.clamp, value=150, low=0, high=100),
        recorded(P + "Rate.__halve", shop.Rate._Rate__halve, self=rate, amount=3),
        recorded(P + "parse_amount", shop.parse_amount, text="  "),
    )
    group = [c.fqn for c in calls]
    tests = carve_tests(suite(result("t.py::test_all", *calls)), group, nodes_of(*group),
                        sources=shop_sources())
    code = {t.target_fqn.removeprefix(P): t.code for t in tests}
    assert "result = describe('tea', 25)" in code["describe"]
    assert "obj = Rate(20)\n    result = obj.apply(10.0)" in code["Rate.apply"], code["Rate.apply"]
    assert "result = Rate.named('vat')" in code["Rate.named"]
    assert "result = Rate.clamp(150, 0, 100)" in code["Rate.clamp"]
    assert "result = obj._Rate__halve(3)" in code["Rate.__halve"]
    assert "with pytest.raises(ValueError):\n        parse_amount('  ')" in code["parse_amount"]
    module = carved_module(tests)
    assert "_equisa_call" not in module and "import inspect" not in module
    assert all(t.imports and "import inspect" not in t.imports for t in tests)
    run_in_process(tests)


def test_arguments_are_placed_by_kind_and_packed_ones_spelt_out(shop):
    args = {"a": 1, "b": 2, "scale": 3, "rest": (4, 5), "options": {"z": 1, "y": 2}}
    call = RecordedCall(fqn=P + "combine", args={k: enc(v) for k, v in args.items()},
                        result=enc(shop.combine(1, 2, 4, 5, scale=3, z=1, y=2)))
    [test] = carve_tests(suite(result("t.py::test_c", call)), [P + "combine"], nodes_of(P + "combine"),
                         sources=shop_sources())
    assert calls_of(test.code) == ["combine(1, 2, 4, 5, scale=3, z=1, y=2)"]
    run_in_process([test])


def test_a_property_or_a_member_without_its_definition_goes_through_the_helper(shop):
    rate = shop.Rate(10)
    calls = (recorded(P + "Rate.factor", shop.Rate.factor.fget, self=rate),
             recorded(P + "describe", shop.describe, label="x", cents=1))
    group = [c.fqn for c in calls]
    sources = {"shop/pricing.py": shop_sources()["shop/pricing.py"]}
    nodes = {**nodes_of(P + "Rate.factor"), P + "describe": node(P + "describe", "shop/elsewhere.py")}
    tests = carve_tests(suite(result("t.py::test_p", *calls)), group, nodes, sources=sources)
    assert all("_equisa_call(" in t.code for t in tests), [t.code for t in tests]
    assert "import inspect" in carved_module(tests)
    run_in_process(tests)


def test_an_object_whose_other_attributes_hold_what_init_stores_is_built_by_its_constructor(shop):
    basket_module = importlib.import_module("shop.basket")
    fresh, filled = basket_module.Basket("ann"), basket_module.Basket("bob")
    filled.items.append(3)
    fqn = "shop.basket.count_items"
    calls = (recorded(fqn, basket_module.count_items, basket=fresh),
             recorded(fqn, basket_module.count_items, basket=filled))
    tests = carve_tests(suite(result("t.py::test_b", *calls)), [fqn], {fqn: node(fqn, "shop/basket.py")},
                        sources=shop_sources())
    codes = sorted(t.code for t in tests)
    assert len(codes) == 2
    assert "count_items(Basket('ann'))" in codes[0] + codes[1]  # items == [] as __init__ leaves it
    assert any("Basket.__new__(Basket)" in c and "'items': [3]" in c for c in codes)  # items changed since
    run_in_process(tests)


def test_a_result_written_in_the_order_of_a_set_of_texts_is_not_asserted(shop):
    """``", ".join(tags)`` follows the set's order, which PYTHONHASHSEED picks: pinned in the sandbox
    that recorded it, another in the user's runs. Numbers, sets and sorted lists of such inputs are."""
    basket_module = importlib.import_module("shop.basket")
    fqn = "shop.basket.tag_list"
    texts = recorded(fqn, basket_module.tag_list, tags={"b", "a"}, first="z")
    numbers = recorded(fqn, basket_module.tag_list, tags={2, 1}, first=0)
    assert texts.result.literal is not None and numbers.result.literal is not None
    trace = suite(result("t.py::test_t", texts, numbers))
    tests = carve_tests(trace, [fqn], {fqn: node(fqn, "shop/basket.py")}, sources=shop_sources())
    assert [("{1, 2}" in t.code, "'a'" in t.code) for t in tests] == [(True, False)]
    run_in_process(tests)


def test_a_subclass_instance_calls_exactly_the_member_through_its_class(shop):
    call = recorded(P + "Rate.apply", shop.Rate.apply, self=shop.Discount(50), amount=8.0)
    [test] = carve_tests(suite(result("t.py::test_d", call)), [P + "Rate.apply"], nodes_of(P + "Rate.apply"),
                         sources=shop_sources())
    assert "result = Rate.apply(obj, 8.0)" in test.code and "obj = Discount.__new__(Discount)" in test.code
    run_in_process([test])


def test_an_init_call_on_a_fresh_instance_is_written_as_the_constructor_call(shop):
    made = recorded(P + "Rate.__init__", shop.Rate.__init__, self=shop.Rate.__new__(shop.Rate), percent=20)
    refused = recorded(P + "parse_amount", shop.parse_amount, text="-1")
    trace = suite(result("t.py::test_rate", made), result("t.py::test_refused", refused))
    tests = carve_tests(trace, [P + "Rate.__init__", P + "parse_amount"],
                        nodes_of(P + "Rate.__init__", P + "parse_amount"), sources=shop_sources())
    init = next(t for t in tests if t.target_fqn == P + "Rate.__init__")
    assert "    result = Rate(20)\n    assert isinstance(result, Rate)\n" in init.code, init.code
    assert "__new__" not in init.code
    run_in_process(tests)


SPECIAL = '''
    class Box:
        def __init__(self, items):
            self.items = items

        def __add__(self, other):
            return Box(self.items + other.items)

        def __len__(self):
            return len(self.items)

        def __getitem__(self, index):
            return self.items[index]

        def __contains__(self, item):
            return item in self.items

        def __lt__(self, other):
            return len(self.items) < len(other.items)
'''


def test_special_methods_are_written_as_the_operators_that_call_them(tmp_path, monkeypatch):
    write_tree(tmp_path, {"box.py": SPECIAL})
    monkeypatch.syspath_prepend(str(tmp_path))
    box = importlib.import_module("box")
    try:
        a, b = box.Box([1, 2]), box.Box([3])
        calls = (recorded("box.Box.__add__", box.Box.__add__, self=a, other=b),
                 recorded("box.Box.__len__", box.Box.__len__, self=a),
                 recorded("box.Box.__getitem__", box.Box.__getitem__, self=a, index=1),
                 recorded("box.Box.__contains__", box.Box.__contains__, self=a, item=2),
                 recorded("box.Box.__lt__", box.Box.__lt__, self=b, other=a))
        group = [c.fqn for c in calls]
        nodes = {fqn: node(fqn, "box.py") for fqn in group}
        sources = {"box.py": textwrap.dedent(SPECIAL).lstrip("\n")}
        tests = carve_tests(suite(result("t.py::test_box", *calls)), group, nodes, sources=sources)
        code = {t.target_fqn.removeprefix("box.Box."): t.code for t in tests}
        assert "obj = Box([1, 2])\n    result = obj + Box([3])" in code["__add__"]
        assert "result = len(obj)" in code["__len__"] and "assert result == 2" in code["__len__"]
        assert "result = obj[1]" in code["__getitem__"]
        assert "result = 2 in obj" in code["__contains__"]
        assert "obj = Box([3])\n    result = obj < Box([1, 2])" in code["__lt__"]
        assert "__new__" not in "".join(code.values())
        run_in_process(tests)
    finally:
        sys.modules.pop("box", None)


def test_a_carved_test_is_named_for_the_behaviour_it_checks(shop):
    calls = (recorded(P + "parse_amount", shop.parse_amount, text="2"),
             recorded(P + "parse_amount", shop.parse_amount, text="3"),
             recorded(P + "parse_amount", shop.parse_amount, text=""),
             recorded(P + "parse_amount", shop.parse_amount, text="-1"),
             recorded(P + "split", shop.split, total=1, parts=0),
             recorded(P + "nested_result", shop.nested_result, n=1))
    group = [P + "parse_amount", P + "split", P + "nested_result"]
    tests = carve_tests(suite(result("t.py::test_n", *calls)), group, nodes_of(*group), max_per_member=4)
    assert sorted(t.name for t in tests) == [
        "test_carved_nested_result_returns_a_dict", "test_carved_parse_amount_raises_pricing_error",
        "test_carved_parse_amount_raises_value_error", "test_carved_parse_amount_returns_2_0",
        "test_carved_parse_amount_returns_3_0", "test_carved_split_raises_zero_division_error"]


def test_a_call_with_an_object_the_test_file_defines_imports_a_test_module():
    """A suite's test file is no module a generated test can import (``is_test_module``), so a carved
    call whose argument needs one is not kept (``imports_a_test_module``)."""
    assert [is_test_module(m) for m in ("test_timing", "x_test", "conftest")] == [True] * 3
    assert [is_test_module(m) for m in ("timing", "testing", "contest", "attest")] == [False] * 4
    assert not is_test_module("tests.test_timing"), "in a package, a generated test can import it"
    assert imports_a_test_module(("import timing", "from test_timing import ListLogger"))
    assert imports_a_test_module(("import test_timing as test_timing_1",))
    assert not imports_a_test_module(("import timing", "from tests.test_timing import ListLogger"))

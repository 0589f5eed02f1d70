"""The test-generation agent's pure parts: framework, reliability, smells, embedding, boundaries, mutants."""

from __future__ import annotations

import ast
from decimal import Decimal

from equisa_core.inputs.neighbours import boundary_values
from equisa_core.testgen.boundary import (
    ScratchCall,
    driver_tests,
    file_constants,
    scratch_driver_module,
    scratch_test,
)
from equisa_core.testgen.carving import CarvedTest
from equisa_core.testgen.embedding import DIMENSIONS, cosine_similarity, local_embedding
from equisa_core.testgen.framework import detect_framework
from equisa_core.testgen.modules import clean_generated_module, keep_tests, list_tests, node_id_name
from equisa_core.testgen.mutation_plan import (
    MutantVerdict,
    group_by_tests,
    module_name,
    mutation_score,
    select_mutants,
)
from equisa_core.testgen.reliability import post_execution_level, pre_execution_level
from equisa_core.testgen.smells import detect_smells, fix_smells
from equisa_core.testgen.static import LintIssue, StaticReport, count_tests, parse_mypy_output, syntax_check

UNITTEST = (
    "import unittest\n\nclass TestA(unittest.TestCase):\n    def test_a(self):\n        self.assertTrue(1)\n"
)
PYTEST = "import pytest\n\ndef test_b():\n    assert 1\n"


def test_framework_detection_rules():
    assert detect_framework({"manage.py": "", "tests/test_x.py": PYTEST}).framework == "django"
    assert (
        detect_framework({"tests/test_x.py": "from django.test import SimpleTestCase\n"}).framework
        == "django"
    )
    assert detect_framework({"pyproject.toml": 'dependencies = ["Django>=4"]'}).framework == "django"
    assert (
        detect_framework({"tests/test_a.py": UNITTEST, "tests/test_b.py": UNITTEST}).framework == "unittest"
    )
    mixed = detect_framework({"tests/test_a.py": UNITTEST, "tests/test_b.py": PYTEST})
    assert mixed.framework == "pytest" and "1 test modules use pytest" in mixed.reason
    assert detect_framework({"conftest.py": ""}).framework == "pytest"
    assert "no test framework evidence" in detect_framework({}).reason


def _static(lint: int = 0, complexity: int = 1, tests: int = 2) -> StaticReport:
    issues = tuple(LintIssue(tool="ruff", code="F", line=1, message="m") for _ in range(lint))
    return StaticReport(syntax_ok=True, lint_issues=issues, test_count=tests, max_complexity=complexity)


def test_pre_execution_levels_from_entropy_and_static_metrics():
    assert pre_execution_level(_static(), 0.05, observed_oracle=False).level == "high"
    # the seed's example: entropy 0.1028 with 16 lint issues is medium, downgraded from high
    example = pre_execution_level(_static(lint=16), 0.1028, observed_oracle=False)
    assert example.level == "medium" and "downgraded from high" in example.reasons[-1]
    assert pre_execution_level(_static(), 0.3, observed_oracle=False).level == "medium"
    assert pre_execution_level(_static(lint=1, complexity=12), 0.3, observed_oracle=False).level == "low"
    assert pre_execution_level(_static(), 0.9, observed_oracle=False).level == "low"
    assert pre_execution_level(_static(), None, observed_oracle=True).level == "high"
    assert pre_execution_level(_static(), None, observed_oracle=False).level == "medium"
    assert pre_execution_level(_static(tests=0), 0.01, observed_oracle=True).level == "low"


def test_post_execution_levels():
    common = dict(syntax_ok=True, coverage_target=60.0, mutation_target=50.0)
    assert (
        post_execution_level(
            runner_error="boom", tests_run=1, tests_passed=1, coverage=90, mutation_score=90, **common
        ).level
        == "discard"
    )
    assert (
        post_execution_level(
            runner_error=None, tests_run=3, tests_passed=0, coverage=90, mutation_score=90, **common
        ).level
        == "discard"
    )
    assert (
        post_execution_level(
            runner_error=None, tests_run=3, tests_passed=3, coverage=90, mutation_score=55, **common
        ).level
        == "trusted"
    )
    review = post_execution_level(
        runner_error=None, tests_run=3, tests_passed=2, coverage=44.44, mutation_score=None, **common
    )
    assert review.level == "needs_review" and review.reasons == (
        "1 of 3 tests fail",
        "coverage 44.44% below target 60.00%",
        "mutation score unavailable",
    )


SMELLY = """\
import time


def test_empty():
    pass


def test_roulette():
    x = 3
    assert x > 1
    assert x < 5
    assert x != 4
    assert x == 3


def test_sleepy_and_redundant():
    time.sleep(0.1)
    assert True
    assert 2 == 2
    assert len("ab") == 2


def test_branching():
    for value in (1, 2):
        if value:
            assert value
"""


def test_smells_are_detected_and_fixed_within_intent():
    kinds = {(s.test, s.kind) for s in detect_smells(SMELLY)}
    assert kinds == {
        ("test_empty", "empty_test"),
        ("test_roulette", "assertion_roulette"),
        ("test_sleepy_and_redundant", "sleepy_test"),
        ("test_sleepy_and_redundant", "redundant_assertion"),
        ("test_branching", "conditional_logic"),
    }
    fixed, done = fix_smells(SMELLY, detect_smells(SMELLY))
    assert {(s.test, s.kind) for s in detect_smells(fixed)} == {("test_branching", "conditional_logic")}
    assert "def test_empty" not in fixed and "sleep(" not in fixed and "assert x > 1, 'x > 1'" in fixed
    assert "assert len('ab') == 2" in fixed and len(done) == 5
    assert fix_smells(PYTEST, []) == (PYTEST, [])


def test_local_embedding_is_deterministic_normalised_and_ignores_names_and_docstrings():
    a = local_embedding('def test_one():\n    """Doc."""\n    assert add(1, 2) == 3\n')
    b = local_embedding("def test_two():\n    assert add(1, 2) == 3  # same check\n")
    c = local_embedding("def test_three():\n    with pytest.raises(KeyError):\n        registry['x']\n")
    assert len(a) == DIMENSIONS and abs(sum(v * v for v in a) - 1.0) < 1e-9
    assert cosine_similarity(a, b) > 0.999 and cosine_similarity(a, c) < 0.7
    assert local_embedding("def test_one():\n    assert add(1, 2) == 3\n") == a
    assert cosine_similarity([0.0, 0.0], [1.0, 0.0]) == 0.0 and cosine_similarity([1.0], [1.0, 0.0]) == 0.0


def test_boundary_values_around_constants_and_the_input():
    constants = file_constants("LIMIT = 100\nRATE = Decimal('0.25')\nflag = True\n")
    assert constants == [Decimal("0.25"), Decimal(100)]
    values = boundary_values(constants, own=Decimal("10.00"))
    assert values[:3] == [Decimal("9.99"), Decimal("10.01"), Decimal(0)]
    assert {Decimal("0.24"), Decimal("0.26"), Decimal(99), Decimal(100), Decimal(101)} <= set(values)


def test_driver_tests_move_one_input_and_guard_the_call():
    carved = CarvedTest(
        name="test_carved_f_0",
        target_fqn="m.f",
        source_test="t",
        expects="result",
        imports=("import decimal", "from m import f"),
        code="def test_carved_f_0():\n    result = _equisa_call(f, x=5, y=decimal.Decimal('1.50'))\n"
        "    assert result == 7\n",
    )
    drivers = driver_tests([carved], [Decimal(10)])
    assert drivers and all(d.imports == carved.imports for d in drivers)
    first = ast.parse(drivers[0].code).body[0]
    assert isinstance(first.body[-1], ast.Try) and "assert" not in drivers[0].code
    calls = {
        ast.unparse(d)
        for t in drivers
        for d in ast.walk(ast.parse(t.code))
        if isinstance(d, ast.Call) and getattr(d.func, "id", "") == "_equisa_call"
    }
    assert "_equisa_call(f, x=11, y=decimal.Decimal('1.50'))" in calls
    assert "_equisa_call(f, x=5, y=decimal.Decimal('1.49'))" in calls
    assert "_equisa_call(f, x=5, y=decimal.Decimal('10'))" in calls


def test_modules_list_keep_and_clean():
    assert list(list_tests(UNITTEST + "\n" + PYTEST)) == ["TestA.test_a", "test_b"]
    kept = keep_tests(UNITTEST + "\n" + PYTEST, ["test_b"])
    assert list(list_tests(kept)) == ["test_b"] and "pass" in kept and ast.parse(kept)
    assert node_id_name("tests/t.py::TestA::test_a[1]") == "TestA.test_a"
    assert clean_generated_module("```python\n" + UNITTEST + "```") == UNITTEST
    assert count_tests(UNITTEST + PYTEST) == 2 and syntax_check("def (:")[0] is False
    assert parse_mypy_output("t.py:3: error: Bad thing  [arg-type]\nt.py:4: note: x")[0].code == "arg-type"


def test_mutants_spread_over_functions_and_group_by_covering_tests():
    source = "def f(a):\n    return a > 1\n\n\nclass C:\n    def g(self, b):\n        return b + 1\n"
    planned = select_mutants(source, "src/pkg/mod.py", {2: ["t::a"], 7: ["t::a", "t::b"]}, max_mutants=4)
    assert len(planned) == 4 and {m.fqn for m in planned} == {"pkg.mod.f", "pkg.mod.C.g"}
    assert all(m.tests == (("t::a",) if m.line == 2 else ("t::a", "t::b")) for m in planned)
    assert set(group_by_tests(planned)) == {("t::a",), ("t::a", "t::b")}
    assert module_name("pkg/__init__.py") == "pkg"
    verdicts = [
        MutantVerdict(id=str(i), fqn="f", line=1, description="d", status=s)
        for i, s in enumerate(["killed", "killed", "survived", "not_covered", "unswappable"])
    ]
    assert mutation_score(verdicts) == 50.0 and mutation_score(verdicts[-1:]) is None


SCRATCH_TARGET = """\
LIMIT = 50


def shipping(total: float, express: bool = False) -> float:
    return 0.0 if total >= LIMIT and not express else 4.5


def grade(code):
    return "G" if code == "gold" else "-"


def needs_object(order: "Order") -> int:
    return order.size


async def later(x: int) -> int:
    return x


class Cart:
    def __init__(self, limit: int = 3):
        self.limit = limit

    def room(self, used: int) -> int:
        return self.limit - used
"""


def test_scratch_drivers_call_what_literals_can_call_one_parameter_at_a_time():
    wanted = ["shipping", "grade", "needs_object", "later", "Cart.room"]
    text, calls = scratch_driver_module(SCRATCH_TARGET, "shop.rules", wanted, max_calls=6)
    assert [c.qualname for c in calls] == ["shipping"] * 6 + ["grade"] * 6 + ["Cart.room"] * 4
    tree = ast.parse(text)
    assert ast.unparse(tree.body[0]) == "from shop.rules import Cart, grade, shipping"
    assert [t.name for t in tree.body[1:]] == [c.test for c in calls] and len({c.test for c in calls}) == 16
    assert all(isinstance(t.body[0], ast.Try) and len(t.body) == 1 for t in tree.body[1:])
    assert [c.call for c in calls[:3]] == [
        "shipping(0.0, False)",
        "shipping(1.0, False)",
        "shipping(-1.0, False)",
    ]
    _, everything = scratch_driver_module(SCRATCH_TARGET, "shop.rules", ["shipping"])
    assert {
        "shipping(49.0, False)",
        "shipping(50.0, False)",
        "shipping(51.0, False)",
        "shipping(0.0, True)",
    } <= {c.call for c in everything}
    texts = {c.call for c in calls}
    assert "grade('gold')" in texts and "grade('G')" in texts and "grade(0)" in texts
    assert {"Cart(3).room(0)", "Cart(0).room(0)", "Cart(-1).room(0)"} <= texts
    assert scratch_driver_module(SCRATCH_TARGET, "shop.rules", ["needs_object", "later"]) == (None, [])


def test_scratch_tests_assert_the_observed_outcome():
    call = ScratchCall(test="test_scratch_shipping_0", qualname="shipping", call="shipping(51.0, False)")
    code, imports = scratch_test(call, "shop.rules", "0.0", None, "test_s_0")
    assert code == "def test_s_0():\n    assert shipping(51.0, False) == pytest.approx(0.0)\n"
    assert imports == {"from shop.rules import shipping", "import pytest"}
    assert scratch_test(call, "shop.rules", "True", None, "t")[0].endswith("is True\n")
    assert scratch_test(call, "shop.rules", "'G'", None, "t")[0].endswith("== 'G'\n")
    raised, needed = scratch_test(call, "shop.rules", None, "shop.rules.PriceError", "t")
    assert "with pytest.raises(PriceError):" in raised and "from shop.rules import PriceError" in needed
    assert scratch_test(call, "shop.rules", None, "builtins.TypeError", "t") is None
    assert scratch_test(call, "shop.rules", None, "other.Error", "t") is None
    assert scratch_test(call, "shop.rules", None, None, "t") is None

"""The unseen-modules bench (issue 49's first "Done means" bullet): its mutant data, its misuse
classifier and its totals against the bar. No network: the sdists are checked only where a previous
``--prepare`` left them in the cache."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import testgen_unseen as tu  # noqa: E402

MODULES = tu.load_modules()


def test_the_data_holds_six_to_eight_modules_each_with_four_to_six_mutants_of_distinct_text() -> None:
    assert 6 <= len(MODULES) <= 8
    for module in MODULES:
        assert 4 <= len(module.mutants) <= 6, module.id
        for mutant in module.mutants:
            assert mutant.old and mutant.old != mutant.new, f"{module.id}/{mutant.id}"
            compile(mutant.check, f"{module.id}/{mutant.id}", "exec")


def test_each_smoke_test_makes_one_call_in_one_test() -> None:
    for module in MODULES:
        tree = ast.parse(module.smoke)
        tests = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        assert len(tests) == 1 and len(tests[0].body) == 1, module.id


def test_a_replacement_applies_only_when_its_text_occurs_exactly_once() -> None:
    mutant = tu.Mutant(id="m", kind="boundary", old="n > 0", new="n >= 0", check="")
    assert tu.apply_mutant("if n > 0:\n    pass\n", mutant) == "if n >= 0:\n    pass\n"
    with pytest.raises(tu.DataError, match="occurs 0 times"):
        tu.apply_mutant("if n < 0:\n", mutant)
    with pytest.raises(tu.DataError, match="occurs 2 times"):
        tu.apply_mutant("if n > 0 and n > 0:\n", mutant)


@pytest.mark.parametrize("module", MODULES, ids=[m.id for m in MODULES])
def test_each_mutant_applies_once_to_the_pinned_source_and_changes_it(module: tu.UnseenModule) -> None:
    """Against the unpacked sdist when a ``--prepare`` put it in the cache (not in CI)."""
    from testgen_coverage import CACHE

    target = CACHE / "src" / module.folder / module.target
    if not target.exists():
        pytest.skip(f"{module.folder} not prepared (run bench/testgen_unseen.py --prepare)")
    source = target.read_text(encoding="utf-8")
    for mutant in module.mutants:
        mutated = tu.apply_mutant(source, mutant)
        assert mutated != source
        compile(mutated, f"{module.id}/{mutant.id}", "exec")


MODULE = '''
class CircularError(ValueError):
    pass


def merge(intervals):
    out = []
    for lo, hi in sorted(intervals):
        out.append((lo, hi))
    return out


def toposort(data):
    if not isinstance(data, dict):
        raise TypeError("data must be a dict")
    if data.get("cycle"):
        raise CircularError(data)
    return list(data)


def _typesafe(a, b):
    if type(a) is not type(b):
        raise TypeError("types differ")
    return b


_HANDLERS = {"typesafe": _typesafe}


def combine(a, b, strategy="typesafe"):
    return _HANDLERS[strategy](a, b)


class Box:
    def __init__(self, size):
        self.items = []
        self.size = size

    def put(self, item):
        if len(self.items) >= self.size:
            raise OverflowError("full")
        self.items.append(item)

    def __getitem__(self, index):
        return self.items[index]
'''


def _misuse(tests: str) -> list[tuple[str, str]]:
    return [(c.test, c.exception) for c in tu.raises_checks(tests, MODULE) if c.misuse]


def test_an_ill_typed_input_that_the_function_does_not_check_is_a_misuse_test() -> None:
    tests = '''
import pytest
from m import merge


def test_merge_raises_value_error() -> None:
    with pytest.raises(ValueError):
        merge("0rt")


def test_merge_raises_type_error() -> None:
    with pytest.raises(TypeError):
        merge(3)
'''
    assert _misuse(tests) == [("test_merge_raises_value_error", "ValueError"),
                              ("test_merge_raises_type_error", "TypeError")]


def test_an_exception_raised_on_purpose_is_not_a_misuse_test_even_through_a_dispatch_table() -> None:
    tests = '''
import pytest
from m import CircularError, combine, toposort


def test_toposort_checks_its_argument() -> None:
    with pytest.raises(TypeError):
        toposort("0rt")


def test_toposort_reports_a_cycle_by_its_base_class() -> None:
    with pytest.raises(ValueError):
        toposort({"cycle": 1})


def test_combine_is_typesafe() -> None:
    with pytest.raises(TypeError):
        combine(1, "a")
'''
    checks = tu.raises_checks(tests, MODULE)
    assert [(c.exception, c.on_purpose, c.misuse) for c in checks] == [
        ("TypeError", True, False), ("ValueError", True, False), ("TypeError", True, False)]


def test_other_unintended_exceptions_are_listed_but_are_not_misuse_and_methods_are_resolved() -> None:
    tests = '''
import pytest
from m import Box


def test_box_index_error() -> None:
    box = Box(1)
    assert box.size == 1
    with pytest.raises(IndexError):
        box[3]


def test_box_full() -> None:
    box = Box(0)
    with pytest.raises(OverflowError):
        box.put(1)


def test_box_put_attribute_error() -> None:
    with pytest.raises(AttributeError):
        Box.put(None, 1)
'''
    checks = tu.raises_checks(tests, MODULE)
    assert [(c.test, c.exception, c.on_purpose, c.misuse, c.other_asserts) for c in checks] == [
        ("test_box_index_error", "IndexError", False, False, 1),
        ("test_box_full", "OverflowError", True, False, 0),
        ("test_box_put_attribute_error", "AttributeError", False, True, 0),
    ]


def test_parametrized_exceptions_and_the_call_form_of_raises_are_read() -> None:
    tests = '''
import pytest
from m import merge


@pytest.mark.parametrize(("arg_1", "expected"), [("0rt", ValueError), (3, TypeError)])
def test_merge_raises(arg_1, expected):
    with pytest.raises(expected):
        merge(arg_1)


def test_merge_call_form() -> None:
    pytest.raises(TypeError, merge, 3)
'''
    assert _misuse(tests) == [("test_merge_raises", "TypeError"), ("test_merge_raises", "ValueError"),
                              ("test_merge_call_form", "TypeError")]


def _row(branch: float | None, killed: list[bool], misuse: int = 0, wall: float = 10.0,
         error: str | None = None) -> dict[str, Any]:
    return {
        "id": "m", "branch_coverage": branch, "wall_s": wall, "error": error,
        "mutants": [{"id": f"x{i}", "killed": k} for i, k in enumerate(killed)],
        "misuse_tests": [{"test": f"t{i}", "exception": "TypeError", "call": "f(1)"} for i in range(misuse)],
    }


def test_the_totals_count_each_part_of_the_bar_and_the_bar_needs_every_module_to_meet_all_three() -> None:
    rows = [
        _row(95.0, [True, True, True, True]),
        _row(89.9, [True, True, True, True]),
        _row(100.0, [True, False, True, True, True], wall=5.5),
        _row(92.0, [True, True, True, True], misuse=2),
    ]
    total = tu.summarize(rows)
    assert total["modules_coverage_met"] == 3
    assert (total["mutants_killed"], total["mutants"], total["modules_all_killed"]) == (16, 17, 3)
    assert total["misuse_tests"] == 2
    assert total["modules_meeting_bar"] == 1 and total["bar_met"] is False
    assert (total["min_branch_coverage"], total["mean_branch_coverage"]) == (89.9, 94.2)
    assert total["tool_wall_s"] == 35.5
    assert tu.summarize([_row(90.0, [True, True, True, True])])["bar_met"] is True


def test_a_module_without_a_measurement_meets_no_part_of_the_bar() -> None:
    total = tu.summarize([_row(None, [], error="no test module written")])
    assert total["modules_measured"] == 0
    assert (total["modules_coverage_met"], total["modules_meeting_bar"], total["bar_met"]) == (0, 0, False)


def test_the_markdown_names_the_survivors_and_the_misuse_tests() -> None:
    row = _row(80.0, [True, False], misuse=1)
    report = {"environment": {"date": "2026-12-07", "git_commit": "abcdef123"}, "modules": [row],
              "summary": tu.summarize([row])}
    text = tu.markdown(report)
    assert "| m | 80.0 % | 1/2 | x1 | 1 | - (-) | 10.0 |" in text
    assert "misuse in m: `t0` expects TypeError from `f(1)`" in text
    assert "bar met: no" in text

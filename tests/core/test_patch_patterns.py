"""Tests for equisa_core.validation.patch_patterns: the shapes of wrong patches, and their weights."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import pytest
from pydantic import ValidationError

from equisa_core.errors import InvalidReplacementError
from equisa_core.validation.patch_patterns import PATTERNS, PatternFinding, patch_patterns
from equisa_core.validation.pattern_model import (
    PATTERN_MODEL_FILE,
    PatternModel,
    load_pattern_model,
    logistic,
)


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def names(findings: tuple[PatternFinding, ...]) -> list[str]:
    return [f.pattern for f in findings]


# --- broad_except_added -----------------------------------------------------------------------------

AREA = src(
    """
    def area(self):
        width = self.right - self.left
        self.cache[width] = width * self.height
        return width * self.height
    """
)


def test_a_body_wrapped_in_except_exception_return_none_is_a_broad_except_and_a_silencing_return():
    patched = src(
        """
        def area(self):
            try:
                width = self.right - self.left
                self.cache[width] = width * self.height
            except Exception:
                return None
            return width * self.height
        """
    )
    found = patch_patterns(AREA, patched, first_line=40)
    assert names(found) == ["broad_except_added", "silencing_return_added"]
    assert found[0].line == 40 + 4  # the handler's line in the file
    assert "except Exception" in found[0].detail
    assert found[1].line == 40 + 5 and "returns None" in found[1].detail


@pytest.mark.parametrize(
    "handler", ["except:", "except BaseException:", "except (KeyError, Exception) as e:"]
)
def test_every_broad_spelling_counts(handler):
    patched = src(
        f"""
        def lookup(table, key):
            try:
                return table[key]
            {handler}
                raise LookupError(key)
        """
    )
    original = "def lookup(table, key):\n    return table[key]\n"
    assert "broad_except_added" in names(patch_patterns(original, patched))


def test_a_broad_handler_the_original_had_is_not_added_and_a_narrow_one_is_not_broad():
    original = src(
        """
        def load(path):
            try:
                data = read(path)
            except Exception:
                log.warning("cannot read %s", path)
                raise
            return parse(data)
        """
    )
    # the same handler, its body edited, and a narrow handler added elsewhere
    patched = src(
        """
        def load(path):
            try:
                data = read(path)
            except Exception:
                log.warning("cannot read %s", path, exc_info=True)
                raise
            try:
                return parse(data)
            except ValueError:
                raise ConfigError(path)
        """
    )
    assert "broad_except_added" not in names(patch_patterns(original, patched))
    # a second broad handler is one more than the original had
    doubled = patched.replace("except ValueError:", "except Exception:")
    found = [f for f in patch_patterns(original, doubled) if f.pattern == "broad_except_added"]
    assert [f.line for f in found] == [9]


# --- silencing_return_added -------------------------------------------------------------------------

NAMES = "def names(params):\n    return [p.name for p in params]\n"


@pytest.mark.parametrize(
    "guard, value",
    [
        ("if not params:", "return []"),
        ("if params is None:", "return None"),
        ("if len(params) == 0:", "return ()"),
        ("if not isinstance(params, list):", "return"),
        ("if params is None or not hasattr(params, '__iter__'):", "return ''"),
        ("if 'name' not in params:", "return list()"),
    ],
)
def test_a_constant_return_under_a_new_none_or_emptiness_guard_is_silencing(guard, value):
    patched = f"def names(params):\n    {guard}\n        {value}\n    return [p.name for p in params]\n"
    found = patch_patterns(NAMES, patched, first_line=7)
    assert names(found) == ["silencing_return_added"]
    assert found[0].line == 9


def test_no_silencing_return_when_the_guard_was_there_or_returns_a_computed_value_or_tests_a_flag():
    original = src(
        """
        def names(params, strict):
            if not params:
                return []
            return [p.name for p in params]
        """
    )
    kept = original.replace("return [p.name for p in params]", "return [p.name.strip() for p in params]")
    computed = original.replace(
        "    return [p.name", "    if params is None:\n        return default_names()\n    return [p.name"
    )
    flag = original.replace("    return [p.name", "    if strict:\n        return None\n    return [p.name")
    for patched in (kept, computed, flag):
        assert "silencing_return_added" not in names(patch_patterns(original, patched)), patched


def test_a_guard_whose_test_the_patch_corrected_is_not_a_new_guard():
    original = src(
        """
        def median(values):
            if len(values) > 1:
                return None
            ordered = sorted(values)
            return ordered[len(ordered) // 2]
        """
    )
    patched = original.replace("len(values) > 1", "len(values) < 1")
    assert names(patch_patterns(original, patched)) == []


def test_an_existing_handler_that_now_returns_is_a_deleted_guard_not_a_new_silencing_handler():
    original = src(
        """
        def port(value):
            try:
                return int(value)
            except ValueError:
                raise ConfigError(f"bad port {value!r}")
        """
    )
    patched = original.replace('raise ConfigError(f"bad port {value!r}")', "return None")
    assert names(patch_patterns(original, patched)) == ["guard_deleted"]
    widened = patched.replace("except ValueError:", "except (ValueError, TypeError):")
    assert names(patch_patterns(original, widened)) == ["silencing_return_added", "guard_deleted"]


# --- guard_deleted ----------------------------------------------------------------------------------

PARSE = src(
    """
    def parse_version(text):
        match = VERSION.match(text)
        if not re.match(r"^[0-9]+(\\.[0-9]+)*$", text):
            raise ValueError(f"not a version: {text!r}")
        assert match is not None, text
        return tuple(int(part) for part in text.split("."))
    """
)


def test_a_deleted_validation_is_a_deleted_guard_with_the_original_line():
    patched = "\n".join(line for i, line in enumerate(PARSE.splitlines()) if i not in (2, 3)) + "\n"
    found = patch_patterns(PARSE, patched, first_line=100)
    assert names(found) == ["guard_deleted"]  # the raise inside the deleted if is not reported again
    assert found[0].line == 102 and "ValueError" in found[0].detail
    no_assert = PARSE.replace("    assert match is not None, text\n", "")
    found = patch_patterns(PARSE, no_assert, first_line=100)
    assert names(found) == ["guard_deleted"] and found[0].line == 104


def test_a_guard_whose_regex_was_fixed_or_that_was_moved_is_not_deleted():
    fixed_regex = PARSE.replace('r"^[0-9]', 'r"^v?[0-9]')
    assert fixed_regex != PARSE
    assert patch_patterns(PARSE, fixed_regex) == ()
    reworded = PARSE.replace("not a version", "invalid version")
    assert patch_patterns(PARSE, reworded) == ()


def test_a_guard_edited_in_place_test_and_ending_both_is_not_deleted():
    original = src(
        """
        def pick(primary, fallback):
            if not primary:
                return fallback
            return primary
        """
    )
    patched = original.replace(
        "if not primary:\n        return fallback", "if not fallback:\n        return primary"
    )
    assert "if not fallback" in patched
    assert "guard_deleted" not in names(patch_patterns(original, patched))


def test_a_guard_that_returns_where_it_raised_is_deleted():
    silenced = PARSE.replace('raise ValueError(f"not a version: {text!r}")', "return None")
    assert "guard_deleted" in names(patch_patterns(PARSE, silenced))


def test_an_early_return_removed_is_a_deleted_guard():
    original = src(
        """
        def first_word(line):
            if not line:
                return ""
            return line.split()[0]
        """
    )
    patched = "def first_word(line):\n    return line.split()[0] if line.split() else ''\n"
    assert names(patch_patterns(original, patched)) == ["guard_deleted"]


# --- condition_inverted -----------------------------------------------------------------------------

TOTAL = src(
    """
    def total(self, iterable):
        if hasattr(iterable, "__len__"):
            n = len(iterable)
        else:
            n = None
        return n
    """
)
INVERTED = TOTAL.replace("if hasattr", "if not hasattr")
# In the file, the function starts at line 20: the test is on 21, the body on 22, the else on 24.


def test_an_inverted_test_without_arcs_is_reported():
    found = patch_patterns(TOTAL, INVERTED, first_line=20)
    assert names(found) == ["condition_inverted"]
    assert found[0].line == 21 and "not hasattr" in found[0].detail


def test_an_inverted_test_the_suite_took_both_ways_is_not_reported():
    both = {(21, 22), (22, 25), (21, 24), (24, 25)}
    assert patch_patterns(TOTAL, INVERTED, first_line=20, arcs=both) == ()
    only_true = {(21, 22), (22, 25)}
    assert names(patch_patterns(TOTAL, INVERTED, first_line=20, arcs=only_true)) == ["condition_inverted"]
    only_false = {(21, 24), (24, 25)}
    assert names(patch_patterns(TOTAL, INVERTED, first_line=20, arcs=only_false)) == ["condition_inverted"]


def test_without_an_else_any_other_exit_of_the_test_is_the_false_way():
    original = src(
        """
        def clamp(value, limit):
            if value > limit:
                value = limit
            return value
        """
    )
    patched = original.replace("value > limit", "value <= limit")
    assert names(patch_patterns(original, patched, first_line=1)) == ["condition_inverted"]
    assert patch_patterns(original, patched, first_line=1, arcs=[(2, 3), (3, 4), (2, 4)]) == ()
    assert names(patch_patterns(original, patched, first_line=1, arcs=[(2, 3), (3, 4)])) == [
        "condition_inverted"
    ]


@pytest.mark.parametrize(
    "before, after",
    [
        ("value is None", "value is not None"),
        ("key in seen", "key not in seen"),
        ("a < b", "a >= b"),
        ("a < b", "b <= a"),
        ("not done", "done"),
        ("ready and value == 0", "ready and value != 0"),
    ],
)
def test_each_kind_of_negation_is_an_inversion(before, after):
    original = (
        f"def step(a, b, value, key, seen, done, ready):\n    while {before}:\n        a += 1\n    return a\n"
    )
    patched = original.replace(before, after)
    assert names(patch_patterns(original, patched)) == ["condition_inverted"]


@pytest.mark.parametrize(
    "before, after",
    [
        ("a < b", "a <= b"),  # a boundary moved, not a negation
        ("a < b", "a > b"),  # the mirror, not the complement
        ("value is None", "value == None"),
    ],
)
def test_a_changed_comparison_that_is_not_its_negation_is_no_inversion(before, after):
    original = f"def step(a, b, value):\n    if {before}:\n        a += 1\n    return a\n"
    assert patch_patterns(original, original.replace(before, after)) == ()


def test_an_inverted_test_with_its_branches_swapped_is_an_equivalent_rewrite():
    swapped = src(
        """
        def total(self, iterable):
            if not hasattr(iterable, "__len__"):
                n = None
            else:
                n = len(iterable)
            return n
        """
    )
    assert patch_patterns(TOTAL, swapped) == ()


# --- sibling_left_unchanged -------------------------------------------------------------------------

METER = src(
    """
    def format_meter(n, total, elapsed, l_bar, r_bar, bar):
        rate = n / elapsed if elapsed else None
        left = l_bar.format(n=n, total=total, rate=rate)
        right = r_bar.format(n=n, total=total, rate=rate)
        return left + bar + right
    """
)


def test_one_of_two_parallel_format_calls_changed_is_a_sibling_left_unchanged():
    patched = METER.replace(
        "left = l_bar.format(n=n, total=total, rate=rate)",
        "left = l_bar.format(n=n, total=total, rate=rate or 0)",
    )
    found = patch_patterns(METER, patched, first_line=10)
    assert names(found) == ["sibling_left_unchanged"]
    assert found[0].line == 12 and "r_bar.format" in found[0].detail and "(line 13)" in found[0].detail


def test_parallels_in_one_statement_count_and_on_attributes_of_self():
    original = src(
        """
        def bounds(self):
            return (self.low.quantize(self.step), self.high.quantize(self.step))
        """
    )
    patched = original.replace("self.low.quantize(self.step)", "self.low.quantize(self.step, ROUND_FLOOR)")
    assert names(patch_patterns(original, patched)) == ["sibling_left_unchanged"]


def test_both_siblings_changed_or_no_sibling_of_that_shape_is_not_reported():
    both = METER.replace("total=total, rate=rate)", "total=total, rate=rate or 0)")
    assert patch_patterns(METER, both) == ()
    # a change whose enclosing expressions have no parallel of their shape
    alone = METER.replace("rate = n / elapsed if elapsed else None", "rate = n / elapsed if elapsed else 0.0")
    assert patch_patterns(METER, alone) == ()
    # another method name is another shape
    other = METER.replace("r_bar.format(", "r_bar.format_map(").replace(
        "l_bar.format(n=n, total=total, rate=rate)", "l_bar.format(n=n, total=total)"
    )
    assert patch_patterns(METER.replace("r_bar.format(", "r_bar.format_map("), other) == ()


# --- all of them ------------------------------------------------------------------------------------


def test_an_unchanged_function_shows_no_pattern_and_findings_are_validated():
    for text in (AREA, PARSE, TOTAL, METER):
        assert patch_patterns(text, text) == ()
    with pytest.raises(ValidationError):
        PatternFinding(pattern="made_up", line=1, detail="")


def test_text_that_is_not_one_function_is_refused():
    with pytest.raises(InvalidReplacementError, match="patched function does not parse"):
        patch_patterns(AREA, "def area(self:\n")
    with pytest.raises(InvalidReplacementError, match="exactly one function"):
        patch_patterns("x = 1\n", AREA)


# --- the model --------------------------------------------------------------------------------------


def _finding(pattern: str) -> PatternFinding:
    return PatternFinding(pattern=pattern, line=1, detail="")


def test_the_bundled_model_names_every_pattern_and_says_whether_it_is_fitted():
    data = json.loads(PATTERN_MODEL_FILE.read_text())
    assert set(data) >= {"intercept", "weights", "threshold", "fitted_on", "cross_validated"}
    model = load_pattern_model()
    assert set(model.weights) == set(PATTERNS)
    if model.fitted_on.startswith("not yet fitted"):
        assert model.intercept == -1.5 and set(model.weights.values()) == {2.0} and model.threshold == 0.5


def test_probability_is_the_logistic_of_the_weights_of_the_distinct_patterns_present():
    model = PatternModel(
        intercept=-2.0,
        weights={"guard_deleted": 3.0, "condition_inverted": 0.5},
        threshold=0.6,
        fitted_on="test",
    )
    assert model.probability_wrong([]) == pytest.approx(1 / (1 + math.exp(2.0)))
    twice = [_finding("guard_deleted"), _finding("guard_deleted")]
    assert model.probability_wrong(twice) == pytest.approx(logistic(1.0))  # present, not counted
    assert model.probability_wrong([_finding("broad_except_added")]) == pytest.approx(logistic(-2.0))
    against, why = model.weighs_against(twice)
    assert against and "guard_deleted" in why and "0.73" in why
    against, why = model.weighs_against([_finding("condition_inverted")])
    assert not against and "condition_inverted" in why
    assert logistic(-1000.0) == 0.0 and logistic(1000.0) == 1.0


def test_a_model_with_an_unknown_pattern_or_a_bad_threshold_is_refused(tmp_path: Path):
    with pytest.raises(ValidationError):
        PatternModel(intercept=0, weights={"nope": 1.0}, threshold=0.5, fitted_on="")
    with pytest.raises(ValidationError):
        PatternModel(intercept=0, weights={}, threshold=1.0, fitted_on="")
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"intercept": 1.0, "weights": {}, "threshold": 0.5, "fitted_on": "x"}))
    assert load_pattern_model(path).probability_wrong([]) == pytest.approx(logistic(1.0))

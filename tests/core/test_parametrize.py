"""Folding same-shape generated tests into one parametrized test (``equisa_core.testgen.parametrize``)."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

from equisa_core.testgen.parametrize import parametrize_module

MODULE = textwrap.dedent('''
    """Generated."""
    import pytest

    from shapes import area, merge


    def test_boundary_0_merge_returns_a_list():
        # Carved from tests/test_shapes.py::test_merge (passed): calls shapes.merge directly.
        result = merge([(1, 3)])
        assert result == [(1, 3)]


    def test_boundary_0_merge_returns_a_list_2():
        # Carved from tests/equisa_generated/drive.py::d_1 (passed): calls shapes.merge directly.
        result = merge([(0, 3), (2, 5)])
        assert result == [(0, 5)]


    def test_boundary_0_merge_returns_a_list_3():
        result = merge([(4, 6), (1, 2)])
        assert result == [(1, 2), (4, 6)]


    def test_boundary_0_merge_raises_value_error():
        with pytest.raises(ValueError):
            merge([(3, 1)])


    def test_carved_area_returns_1():
        assert area(1, 1) == 1


    def test_carved_area_returns_6():
        assert area(2, 3) == 6


    @pytest.mark.slow
    def test_carved_area_returns_12():
        assert area(3, 4) == 12


    def test_carved_area_returns_20():
        assert area(4, 5) == 20
''')

SHAPES = textwrap.dedent('''
    def merge(intervals):
        if any(s > e for s, e in intervals):
            raise ValueError("reversed")
        out = []
        for s, e in sorted(intervals):
            if out and s <= out[-1][1]:
                out[-1] = (out[-1][0], max(out[-1][1], e))
            else:
                out.append((s, e))
        return out


    def area(w, h):
        return w * h
''')


def test_same_shape_cases_of_one_member_fold_and_the_rest_stays():
    folded = parametrize_module(MODULE)
    tree = ast.parse(folded)
    tests = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert set(tests) == {"test_boundary_0_merge_returns_a_list", "test_boundary_0_merge_raises_value_error",
                          "test_carved_area_returns", "test_carved_area_returns_12"}
    merge = tests["test_boundary_0_merge_returns_a_list"]
    (decorator,) = merge.decorator_list
    assert ast.unparse(decorator) == ("pytest.mark.parametrize(('arg_1', 'expected'), [([(1, 3)], [(1, 3)]), "
                                      "([(0, 3), (2, 5)], [(0, 5)]), ([(4, 6), (1, 2)], [(1, 2), (4, 6)])])")
    assert [a.arg for a in merge.args.args] == ["arg_1", "expected"]
    assert "# Carved from tests/test_shapes.py::test_merge" in folded  # the first case's provenance
    area = tests["test_carved_area_returns"]  # three cases; the decorated one is left alone
    assert len(area.decorator_list[0].args[1].elts) == 3  # type: ignore[attr-defined]
    assert tests["test_carved_area_returns_12"].decorator_list  # its own decorator kept


def test_folded_tests_run_as_the_cases_did(tmp_path: Path):
    (tmp_path / "shapes.py").write_text(SHAPES)
    (tmp_path / "test_folded.py").write_text(parametrize_module(MODULE))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_folded.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "8 passed" in done.stdout, done.stdout[-2000:]


def test_two_cases_or_a_module_that_does_not_parse_stay_as_they_are():
    two = MODULE.split("def test_boundary_0_merge_returns_a_list_3")[0]
    assert "parametrize" not in parametrize_module(two.rsplit("@pytest", 1)[0])
    assert parametrize_module("def test_x(:\n") == "def test_x(:\n"


def test_two_shapes_of_one_member_fold_under_distinct_names():
    cases = "".join(f"\n\ndef test_search_0_area_returns_an_int{'_' + str(i) if i > 1 else ''}():\n"
                    f"    assert area({i}, {i + 1}) == {i * (i + 1)}\n" for i in range(1, 4))
    cases += "".join(f"\n\ndef test_search_0_area_returns_an_int_{i}():\n"
                     f"    assert area(w={i}, h=2) == {2 * i}\n" for i in range(4, 7))
    folded = parametrize_module("import pytest\n\nfrom shapes import area\n" + cases)
    names = [n.name for n in ast.parse(folded).body if isinstance(n, ast.FunctionDef)]
    assert sorted(names) == ["test_search_0_area_returns_an_int", "test_search_0_area_returns_an_int_2"]

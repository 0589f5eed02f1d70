"""The core's input rules (``equisa_core.inputs.neighbours``), the one place the shadow plugin, the
differential test and the test generator take their inputs from: the same inputs, in the same
order, as each made on its own before (``tests/data/input_rules_before.json``, recorded from main
at 1453d5a); the rules stand alone, so the plugin can ship them into the suite's interpreter."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from equisa_core.common.models import EncodedValue, RecordedCall
from equisa_core.inputs import neighbours as rules
from equisa_core.inputs.neighbours import LITERAL_RULE, SHADOW_RULE, boundary_values, kind_probes, neighbours
from equisa_core.testgen.boundary import _numbers, file_constants, scratch_driver_module
from equisa_core.testgen.value_strategies import int_strategy
from equisa_core.validation.differential import differential_inputs, neighbour_values
from equisa_core.validation.shadow_files import shadow_plugin_files
from equisa_core.validation.shadow_plugin.calls import _Call, _shape
from equisa_core.validation.shadow_plugin.neighbours import _kind_probes, _neighbour_calls
from tests.conftest import find_python

BEFORE = json.loads((Path(__file__).resolve().parents[1] / "data" / "input_rules_before.json").read_text())
VALUES: list[Any] = [
    0, 1, -3, 7, True, False, 0.0, 2.5, -1.5, "", "a", "ab", "hello", None, b"x",
    [], [1], [1, 2], [3, 1, 2], (1,), (), (1, 2, 3), [1, "a"], ["b", "a", "c"], [[1, 2], [3, 4]],
    [(1, 2), (3, 4)], (("January", "1"), ("May", "2")), [1.0, 1], [[1]], [True, 1], [0, -0.0],
    [[[1]]], [{"a": 1}], {}, {"a": 1}, {"a": 1, "b": [1, 2]}, {1: "x", 2: "y"}, {1, 2},
    frozenset({3}), [None, None], ["x"], [2, 2, 2], [5, 4, 3, 2, 1, 0, -1], ("a", ["b", "c"]),
    [[], [1]], -0.0,
]


class Box:
    def __init__(self) -> None:
        self.size = 3
        self.items = [1, 2]
        self._hidden = "h"


def shown(call: _Call) -> str:
    args = [vars(a) if isinstance(a, Box) else a for a in call.args]
    return repr((args, call.kwargs, call.receiver))


def calls() -> list[_Call]:
    return [_Call([5, "ab"], {}, False), _Call([[1, 2, 3]], {"flag": True}, False),
            _Call([Box(), 2], {}, True), _Call([Box()], {"key": {"a": 1}}, True),
            _Call([(("January", "1"), ("May", "2")), "2"], {}, False)]


def test_the_shadow_plugins_neighbours_are_as_before():
    for value in VALUES:
        assert repr(neighbours(value, SHADOW_RULE, _shape)) == BEFORE["shadow"][repr(value)], value
        whole_only = SHADOW_RULE._replace(item_moves=False)
        assert repr(neighbours(value, whole_only, _shape)) == BEFORE["shadow_no_items"][repr(value)], value


def test_the_shadow_plugins_calls_and_kind_probes_are_as_before():
    for call in calls():
        assert [shown(c) for c in _neighbour_calls(call)] == BEFORE["calls"][shown(call)]
        whole_only = [shown(c) for c in _neighbour_calls(call, item_moves=False)]
        assert whole_only == BEFORE["calls_no_items"][shown(call)]
    for call in [*calls(), _Call(["s", 1.5, None, True, []], {"k": "v"}, False)]:
        assert [shown(c) for c in _kind_probes(call)] == BEFORE["probes"][shown(call)]


def test_the_differential_neighbours_and_inputs_are_as_before():
    for value in VALUES:
        assert repr(neighbour_values(value)) == BEFORE["literal"][repr(value)], value
        assert repr(neighbours(value, LITERAL_RULE)) == BEFORE["literal"][repr(value)], value

    def recorded(**args: object) -> RecordedCall:
        encoded = {k: EncodedValue(type="x", literal=repr(v)) for k, v in args.items()}
        return RecordedCall(fqn="m.f", args=encoded)

    made = differential_inputs("f", ["x", "seq"], [("passing", recorded(x=3, seq=[1, 3, 5])),
                                                  ("failing", recorded(x=5, seq=[1, 3, 5])),
                                                  ("passing", recorded(x="a", seq=("b", "c")))], {"x": "seq"})
    assert [i.model_dump() for i in made] == BEFORE["differential_inputs"]


def test_the_test_generators_boundary_values_and_numbers_are_as_before():
    constants = [[], [Decimal(100)], [Decimal("0.25"), Decimal(100)],
                 [Decimal("-3"), Decimal("10.00"), Decimal("2.5")]]
    owns = [None, Decimal(0), Decimal(7), Decimal("10.00"), Decimal("-1.5"), Decimal(100)]
    for found in constants:
        for own in owns:
            expected = BEFORE["boundary"][f"{found!r} | {own!r}"]
            assert [repr(boundary_values(found, own)), repr(boundary_values(found, own, limit=4))] == expected
        assert [_numbers(found, False), _numbers(found, True)] == BEFORE["numbers"][repr(found)]
    for numbers in ([], [Decimal(3)], [Decimal("2.5"), Decimal(-4), Decimal(100)]):
        assert int_strategy(numbers) == BEFORE["int_strategy"][repr(numbers)]
    source = ('LIMIT = 10\nRATE = Decimal("0.25")\n\ndef clamp(x: int, low: int = 0) -> int:\n'
              "    return low if x < low else min(x, LIMIT)\n\ndef scale(x: float) -> float:\n"
              '    return x * 2.5\n\ndef label(n):\n    return "big" if n > 3 else "small"\n')
    assert repr(file_constants(source)) == BEFORE["file_constants"]
    assert scratch_driver_module(source, "mod", ["clamp", "scale", "label"])[0] == BEFORE["scratch"]


def test_a_probe_is_of_another_kind_than_the_value():
    assert kind_probes("s") == [0]
    assert kind_probes(3) == kind_probes(True) == kind_probes(1.5) == [""]
    assert kind_probes(None) == kind_probes([]) == ["", 0]


def test_the_rules_import_only_the_standard_library():
    """The plugin ships this module into an interpreter without EQUISA's libraries."""
    tree = ast.parse(Path(rules.__file__).read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
    assert imported <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)
    assert not any(isinstance(node, ast.ImportFrom) and node.level for node in ast.walk(tree))


def test_the_plugin_ships_the_rules_own_text_and_nothing_of_equisa_core():
    files = shadow_plugin_files("equisa_shadow")
    assert files["equisa_shadow/input_neighbours.py"] == Path(rules.__file__).read_text(encoding="utf-8")
    for path, text in files.items():
        tree = ast.parse(text)
        modules = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        modules += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not any(m.startswith("equisa_core") for m in modules), path


def test_the_shipped_plugin_compiles_and_the_rules_run_on_python_3_8(tmp_path: Path):
    python = find_python("3.8")
    if python is None:
        pytest.skip("Python 3.8 is not installed on this machine")
    for path, text in shadow_plugin_files("equisa_shadow").items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    script = ("import compileall, runpy, sys\n"
              "assert compileall.compile_dir('equisa_shadow', quiet=1)\n"
              "rules = runpy.run_path('equisa_shadow/input_neighbours.py')\n"
              "print(repr(rules['neighbours']([3, 1, 2], rules['SHADOW_RULE'], repr)))\n")
    done = subprocess.run([str(python), "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == BEFORE["shadow"]["[3, 1, 2]"]

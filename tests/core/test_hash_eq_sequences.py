"""``==`` and ``hash()`` in the method sequences of the input search (issue 49): a class that defines
``__eq__`` and ``__hash__`` is compared with other objects of its own, made by its constructor, so a
mutant of those methods ends a sequence otherwise; the written tests assert the comparisons, never a
hash's value (it changes with ``PYTHONHASHSEED`` for texts)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from equisa_core.testgen.input_search import read_sequence_records, search_driver_module
from equisa_core.testgen.search_sequence_tests import sequence_tests
from equisa_core.testgen.searched_members import searched_classes
from tests.core.test_input_search import _run_driver

PAIRS = textwrap.dedent('''
    class Pair:
        def __init__(self, left: int, right: str = "a"):
            self.left = left
            self.right = right

        def __eq__(self, other):
            if not isinstance(other, Pair):
                return False
            return self.left == other.left and self.right == other.right

        def __hash__(self):
            return hash((self.left, self.right))
''')

#: Mutants of the dunder methods that only a comparison with another ``Pair`` tells apart.
EQ_OR = PAIRS.replace("self.left == other.left and", "self.left == other.left or")
HASH_LEFT = PAIRS.replace("hash((self.left, self.right))", "hash(self.left)")


def _def(module: str, name: str) -> str:
    """The method ``name``'s ``def`` in ``module``, at column 0 (as a mutant is given)."""
    (cls,) = ast.parse(module).body
    assert isinstance(cls, ast.ClassDef)
    method = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name)
    return "\n".join(line[4:] for line in module.splitlines()[method.lineno - 1 : method.end_lineno]) + "\n"


def _pytest(cwd: Path, seed: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_made.py"],
                          cwd=cwd, capture_output=True, text=True, env=env, timeout=300)


def test_eq_and_hash_steps_compare_with_other_objects_of_the_class():
    (searched,) = searched_classes(PAIRS, ["Pair.__eq__"], {}, [])
    methods = dict(searched.methods)
    assert set(methods) == {"__eq__", "__hash__"}
    assert "_construct, _target.Pair, 'Pair'" in methods["__hash__"][0]
    assert methods["__eq__"][0].startswith("st.one_of(st.tuples(")  # other Pairs, and the values it had


def test_mutants_of_eq_and_hash_are_killed_by_tests_that_hold_under_any_hash_seed(tmp_path: Path):
    assert _def(EQ_OR, "__eq__").startswith("def __eq__(self, other):\n") and " or " in _def(EQ_OR, "__eq__")
    mutants = {"Pair.__eq__": [("m_or", _def(EQ_OR, "__eq__"))],
               "Pair.__hash__": [("m_left", _def(HASH_LEFT, "__hash__"))]}
    classes = searched_classes(PAIRS, ["Pair.__eq__"], {}, [])
    driver = search_driver_module("pairs.py", "pairs", [], 150, 60.0, classes, mutants)
    (tmp_path / "search").mkdir()
    (record,) = read_sequence_records(_run_driver(tmp_path / "search", "pairs", PAIRS, driver))
    assert record.error is None and record.mutants == 2
    assert {name for kept in record.kept for name in kept.kills} == {"m_or", "m_left"}
    tests, _ = sequence_tests(record, "pairs", 0)
    text = "import pytest\nfrom pairs import Pair\n\n\n" + "\n\n".join(t.code for t in tests)
    assert "(hash(obj) == hash(Pair(" in text and "(obj == Pair(" in text
    assert "assert hash(" not in text  # no hash value asserted
    work = tmp_path / "made"
    work.mkdir()
    (work / "test_made.py").write_text(text)
    for source, passes in ((PAIRS, True), (EQ_OR, False), (HASH_LEFT, False)):
        (work / "pairs.py").write_text(source)
        for seed in ("1", "2"):  # the values were recorded under another seed (the driver's)
            ran = _pytest(work, seed)
            assert (ran.returncode == 0) is passes, f"{seed}:\n{ran.stdout[-2000:]}\n{text}"

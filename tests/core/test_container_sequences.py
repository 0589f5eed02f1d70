"""Item assignment, deletion, ``len()`` and iteration as steps of the input search's method
sequences (issue 49): a container class whose state only changes through ``obj[k] = v`` and
``del obj[k]`` is searched through them, and a mutant of its bookkeeping that only such a sequence
reveals is killed by the written tests."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from equisa_core.testgen.input_search import read_sequence_records, search_driver_module
from equisa_core.testgen.search_sequence_tests import sequence_tests
from equisa_core.testgen.searched_members import searched_classes
from tests.core.test_hash_eq_sequences import _def
from tests.core.test_input_search import _run_driver

SHELF = textwrap.dedent('''
    class Shelf:
        """Amounts by name, with the count of names kept apart."""

        def __init__(self):
            self._amounts = {}
            self.names = 0

        def __setitem__(self, name, amount):
            if name not in self._amounts:
                self.names += 1
            self._amounts[name] = amount

        def __getitem__(self, name):
            return self._amounts[name]

        def __delitem__(self, name):
            del self._amounts[name]
            self.names -= 1

        def __len__(self):
            return len(self._amounts)

        def __iter__(self):
            return iter(sorted(self._amounts))
''')

#: Counts a name again when its amount is replaced: only ``obj[k] = v`` twice on one key tells.
RECOUNTED = SHELF.replace("if name not in self._amounts:", "if name not in self._amounts or amount:")
#: Forgets to uncount: only a deletion after an assignment tells.
KEPT_COUNT = SHELF.replace("self.names -= 1", "self.names -= 0")


def test_a_containers_item_steps_are_searched():
    (searched,) = searched_classes(SHELF, ["Shelf.__setitem__"], {}, [])
    assert {name for name, _ in searched.methods} == {
        "__setitem__", "__getitem__", "__delitem__", "__len__", "__iter__"}


def test_mutants_that_only_item_assignment_and_deletion_reveal_are_killed(tmp_path: Path):
    mutants = {"Shelf.__setitem__": [("recounted", _def(RECOUNTED, "__setitem__"))],
               "Shelf.__delitem__": [("kept_count", _def(KEPT_COUNT, "__delitem__"))]}
    classes = searched_classes(SHELF, ["Shelf.__setitem__"], {}, [])
    driver = search_driver_module("shelf.py", "shelf", [], 200, 60.0, classes, mutants)
    (tmp_path / "search").mkdir()
    (record,) = read_sequence_records(_run_driver(tmp_path / "search", "shelf", SHELF, driver))
    assert record.error is None and record.mutants == 2
    tests, _ = sequence_tests(record, "shelf", 0)
    text = "import pytest\nfrom shelf import Shelf\n\n\n" + "\n\n".join(t.code for t in tests)
    assert "obj[" in text and "] = " in text and "del obj[" in text, text
    work = tmp_path / "made"
    work.mkdir()
    (work / "test_made.py").write_text(text)
    for source, passes in ((SHELF, True), (RECOUNTED, False), (KEPT_COUNT, False)):
        (work / "shelf.py").write_text(source)
        ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_made.py"],
                             cwd=work, capture_output=True, text=True, timeout=300)
        assert (ran.returncode == 0) is passes, f"{ran.stdout[-2000:]}\n{text}"

"""One generated module that does not import costs that module, not the run (issue 49): the
deterministic generator drops it with a note and goes on; the user's own suite not importing is
still bad input (``CollectionError``, exit 6)."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

import pytest

from equisa_core.common.models import SuiteTrace
from equisa_core.errors import CollectionError
from tasks.sandbox.contract import RunRequest
from tasks.sandbox.run_tests import NOT_IMPORTING
from tasks.testgen.generation import DeterministicPlan, Recorder, deterministic_tests, dropped_note

TARGET = "mod.py"
SOURCE = "def area(width: int, height: int) -> int:\n    return width * height\n"


class _Failing(Recorder):
    """Every run raises as ``run_tests`` does when its modules do not import; ``runs`` records them."""

    runs: list[dict[str, str]] = []

    def run(self, overlay: Mapping[str, str], tests: Sequence[str], fqns: Sequence[str]) -> SuiteTrace:
        self.runs.append(dict(overlay))
        where = next(iter(overlay), "tests/test_mod.py")
        error = "E   ImportError: cannot import name 'area' from 'mod'"
        raise CollectionError(f"{NOT_IMPORTING}{where}: {error}")


def _recorder(tmp_path) -> _Failing:
    (tmp_path / TARGET).write_text(SOURCE)
    base = RunRequest(workspace=tmp_path, workspace_digest="dropped", interpreter=sys.executable)
    return _Failing(base=base, runs=[])


def test_a_scratch_module_that_does_not_import_is_dropped_with_a_note_and_the_run_goes_on(tmp_path):
    recorder = _recorder(tmp_path)
    plan = DeterministicPlan(target=TARGET, target_source=SOURCE, search_examples=0)
    text, did = deterministic_tests(recorder, plan, 0, [])
    assert [list(o) for o in recorder.runs] == [["tests/equisa_generated/test_testgen_scratch_0.py"]]
    assert text == ""
    assert "dropped test_testgen_scratch_0.py: ImportError: cannot import name 'area' from 'mod'" in did, did


def test_the_users_own_tests_not_importing_still_fails_the_run(tmp_path):
    recorder = _recorder(tmp_path)
    plan = DeterministicPlan(target=TARGET, target_source=SOURCE, search_examples=0,
                             line_tests={2: ("tests/test_mod.py::test_area",)})
    with pytest.raises(CollectionError):
        deterministic_tests(recorder, plan, 0, [])
    assert recorder.runs == [{}]  # the recording of the user's tests, no generated module


def test_the_note_names_the_file_and_the_error():
    message = f"{NOT_IMPORTING}tests/equisa_generated/test_testgen_search_drive_1.py: E   NameError: x"
    assert dropped_note("tests/equisa_generated/test_testgen_search_drive_1.py", message) == \
        "dropped test_testgen_search_drive_1.py: NameError: x"
    other = dropped_note("tests/equisa_generated/test_a.py", "something else")
    assert other == "dropped test_a.py: something else"

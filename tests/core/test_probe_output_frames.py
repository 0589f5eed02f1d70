"""A probe test record whose traceback has a frame without a line (``equisa_core.common.probe_output``)."""

from __future__ import annotations

from equisa_core.common.probe_output import read_test_record


def test_a_frame_without_a_line_is_read_as_line_0():
    """Python 3.11+ gives a frame no line when a signal stops it between instructions, as the
    per-test time limit does with a looping test; the run must still be read."""
    record = {"test": "tests/test_x.py::test_loops", "outcome": "failed", "duration": 3.0,
              "exception_type": "equisa_probe.TestTimeout", "message": "ran longer than 3s",
              "traceback": [{"file": "tests/test_x.py", "line": 4, "function": "test_loops"},
                            {"file": "solution.py", "line": None, "function": "remove_extras"}]}
    result = read_test_record(record)
    assert [(f.file, f.line) for f in result.traceback] == [("tests/test_x.py", 4), ("solution.py", 0)]

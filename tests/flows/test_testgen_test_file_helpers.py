"""``equisa testgen --no-llm`` on a module whose tests pass objects and functions that the test file
itself defines (a logger class, a function to time), in a ``tests/`` folder that is no package, as
codetiming's are: pytest puts ``tests/`` on ``sys.path``, so the generated tests' folder cannot
import ``test_timing``. The calls with such arguments are not carved, and the run ends with tests
(it once stopped with "No module named 'test_timing'", exit 6)."""

from __future__ import annotations

import json
import subprocess

from tests.conftest import FIXTURES
from tests.flows.test_testgen_cli import EQUISA

HELPERS = FIXTURES / "helpers_in_tests"


def test_calls_with_the_test_files_own_objects_are_not_carved_and_the_run_goes_on(tmp_path, cli_env):
    out, report = tmp_path / "out", tmp_path / "report.json"
    done = subprocess.run([EQUISA, "testgen", str(HELPERS), "--target", "timing.py", "--no-llm",
                           "--out", str(out), "--json", str(report), "--max-attempts", "1"],
                          capture_output=True, text=True, env=cli_env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    written = (out / "test_testgen_timing.py").read_text()
    assert "test_timing" not in written
    (attempt,) = json.loads(report.read_text())["attempts"]
    assert attempt["tests"] and attempt["tests_passed"] == len(attempt["tests"]), attempt
    assert attempt["deterministic"][0].startswith("carved 0 tests from 2 existing tests"), attempt

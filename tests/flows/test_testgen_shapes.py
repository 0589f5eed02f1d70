"""``equisa testgen --no-llm`` on a module with no annotations whose suite calls one function once
(issue 49): the search draws the uncalled functions' parameters from how their bodies use them (a
list of pairs, a number), reaches every branch, and writes no test that an input the functions
were not written for raises."""

from __future__ import annotations

import json
import subprocess

from tests.conftest import FIXTURES
from tests.flows.test_testgen_cli import EQUISA

UNTYPED = FIXTURES / "untyped_intervals"


def test_inputs_shaped_by_use_reach_every_branch_and_no_misuse_test_is_written(tmp_path, cli_env):
    out, report = tmp_path / "out", tmp_path / "report.json"
    done = subprocess.run([EQUISA, "testgen", str(UNTYPED), "--target", "intervals.py", "--no-llm",
                           "--out", str(out), "--json", str(report), "--max-attempts", "1",
                           "--mutants-per-measurement", "0"], capture_output=True, text=True, env=cli_env,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    (written,) = out.glob("test_*.py")
    text = written.read_text()
    (attempt,) = json.loads(report.read_text())["attempts"]
    assert attempt["coverage"]["percent"] >= 90, attempt["coverage"]
    assert "pytest.raises" not in text, text  # merge, contains, total_length raise nothing themselves
    assert "contains([(" in text or "contains(arg_1" in text, text  # lists of pairs drawn for contains


"""Generated tests do not depend on the hash seed: their values are recorded in sandboxed runs under
the pinned ``PYTHONHASHSEED=0``, and ``equisa testgen`` measures them under two others
(``tasks.testgen.measure.GENERATED_TESTS_HASH_SEEDS``: ``hash("ada") % 7`` is 5 under both 0 and 1),
so a test asserting such a value fails there and is dropped. The kept tests then pass for a user
whose seed differs on every run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from tests.conftest import FIXTURES
from tests.flows.test_testgen_cli import EQUISA

HASHED = FIXTURES / "hashed_names"


def test_kept_tests_pass_under_other_hash_seeds(tmp_path, cli_env):
    out, report = tmp_path / "out", tmp_path / "testgen.json"
    done = subprocess.run([EQUISA, "testgen", str(HASHED), "--target", "names.py", "--no-llm",
                           "--out", str(out), "--json", str(report), "--max-attempts", "1",
                           "--mutants-per-measurement", "0"],
                          capture_output=True, text=True, env=cli_env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    (written,) = out.glob("test_*.py")
    text = written.read_text()
    assert "initials(" in text and "slot(" in text, text  # both functions are still tested
    repo = tmp_path / "repo"
    shutil.copytree(HASHED, repo)
    shutil.copy(written, repo / "tests" / written.name)
    for seed in ("2", "3", "4"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONDONTWRITEBYTECODE": "1"}
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              "-p", "no:randomly", f"tests/{written.name}"],
                             cwd=repo, capture_output=True, text=True, env=env, timeout=300)
        assert run.returncode == 0, f"PYTHONHASHSEED={seed}:\n{run.stdout[-3000:]}\n{text}"

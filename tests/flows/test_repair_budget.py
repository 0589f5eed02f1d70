"""``equisa repair --max-seconds``: a repository whose failing tests loop forever (``while`` that never
ends on the failing inputs, and no test passes) ends by itself with its report, ``stopped_because``
naming the time budget, and exit 26."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from equisa_core.errors import EXIT_BUDGET_SPENT
from equisa_core.repair.report import RepairReport
from tests.conftest import small_repo
from tests.flows.test_repair import EQUISA

#: The budget's own seconds plus a margin of 30 s for the Prefect server's start and the report on a
#: loaded 2-core machine: every sandboxed run ends by the budget's deadline (``run_deadline``).
#: Measured, the whole process: 30 s for a 20 s budget (108 s before the deadline), 129 s for the
#: default 120 s (141-157 s before).
WALL_BOUND_S = 20.0 + 30.0


def looping_repo(root: Path) -> Path:
    repo = small_repo(root)
    (repo / "steps.py").write_text(
        "def countdown(n):\n    steps = 0\n    while n != 0:  # an odd n never reaches 0\n"
        "        if n < 0:\n            while True:\n                pass\n"
        "        n -= 2\n        steps += 1\n    return steps\n")
    (repo / "tests" / "test_steps.py").write_text(
        "from steps import countdown\n\n\n"
        + "".join(f"def test_{n}():\n    assert countdown({n}) == {(n + 1) // 2}\n\n\n" for n in (1, 3, 5, 7)))
    return repo


def test_a_looping_suite_ends_within_its_budget_with_a_report(tmp_path, cli_env):
    repo = looping_repo(tmp_path / "loopy")
    out = tmp_path / "repair.json"
    started = time.monotonic()
    done = subprocess.run([EQUISA, "repair", str(repo), "--no-llm", "--max-seconds", "20", "--json", str(out)],
                          capture_output=True, text=True, env=cli_env, timeout=600)
    seconds = time.monotonic() - started
    assert done.returncode == EXIT_BUDGET_SPENT, done.stderr
    assert seconds < WALL_BOUND_S, f"took {seconds:.0f}s"
    report = RepairReport.model_validate_json(out.read_text())
    assert report.stopped_because is not None and report.stopped_because.startswith("time budget (20s) spent")
    assert report.status != "fixed" and report.localization is not None and report.localization.ranking
    assert report.localization.ranking[0].fqn == "steps.countdown"
    assert "time budget (20s) spent" in done.stderr

"""``equisa testgen --no-llm`` on a module that removes one of its functions at import in a way the
source does not show (through ``globals()``): the scratch drivers that import it do not import, and
that module is dropped with a note while the run goes on and writes its tests (issue 49: one
generated module that does not import costs that module, not the run)."""

from __future__ import annotations

import json
import subprocess

from tests.flows.test_testgen_cli import EQUISA

GEOMETRY = '''\
def area(width: int, height: int) -> int:
    return width * height


def perimeter(width: int, height: int) -> int:
    return 2 * (width + height)


for _name in ["perimeter"]:
    globals().pop(_name)
'''
SUITE = "from geometry import area\n\n\ndef test_area():\n    assert area(2, 3) == 6\n"


def test_a_generated_module_that_does_not_import_is_dropped_and_the_run_goes_on(tmp_path, cli_env):
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    (project / "geometry.py").write_text(GEOMETRY)
    (project / "conftest.py").write_text("")
    (project / "tests" / "test_geometry.py").write_text(SUITE)
    out, report = tmp_path / "out", tmp_path / "testgen.json"
    done = subprocess.run([EQUISA, "testgen", str(project), "--target", "geometry.py", "--no-llm",
                           "--out", str(out), "--json", str(report), "--max-attempts", "1",
                           "--mutants-per-measurement", "0"],
                          capture_output=True, text=True, env=cli_env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    notes = json.loads(report.read_text())["attempts"][0]["deterministic"]
    dropped = [n for n in notes if n.startswith("dropped test_testgen_scratch_0.py: ")]
    assert dropped and "perimeter" in dropped[0], notes
    (written,) = out.glob("test_*.py")
    assert "area(" in written.read_text()

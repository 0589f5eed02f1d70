"""FauxPy's plugin is set apart from the benchmark venv's site-packages (``bench/realbugs/envs.py``
``fauxpy_apart``): pytest finds it on FauxPy's ``PYTHONPATH`` only, so EQUISA's runs in the same venv
no longer import it on every start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench.realbugs.envs import FAUXPY_APART, fauxpy_apart

#: What pytest's plugin autoloading reads: the ``pytest11`` entry points on ``sys.path``.
ENTRY_POINTS = ("import importlib.metadata as m; "
                "print(sorted(e.name for e in m.entry_points(group='pytest11')))")


def _venv(root: Path) -> Path:
    site = root / "lib" / "python3.8" / "site-packages"
    (site / "fauxpy").mkdir(parents=True)
    (site / "fauxpy" / "__init__.py").write_text("")
    (site / "fauxpy" / "main.py").write_text("LOADED = True\n")
    info = site / "fauxpy-0.7.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fauxpy\nVersion: 0.7.0\n")
    (info / "entry_points.txt").write_text("[pytest11]\nfauxpy = fauxpy.main\n")
    (site / "cosmic_ray").mkdir()  # a dependency: stays where it is
    (root / "bin").mkdir()
    return site


def _plugins(site: Path, pythonpath: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    paths = [str(site)] + ([pythonpath] if pythonpath else [])
    code = f"import sys; sys.path[:0] = {paths!r}; {ENTRY_POINTS}"
    return subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, env=env,
                          check=True).stdout.strip()


def test_the_plugin_moves_apart_once_and_loads_only_from_its_path(tmp_path):
    site = _venv(tmp_path / "venv")
    assert "'fauxpy'" in _plugins(site, None)  # as installed: every pytest start of the venv loads it

    apart = fauxpy_apart(tmp_path / "venv" / "bin" / "python")
    assert apart == tmp_path / "venv" / FAUXPY_APART
    assert sorted(p.name for p in apart.iterdir()) == ["fauxpy", "fauxpy-0.7.0.dist-info"]
    assert not (site / "fauxpy").exists() and (site / "cosmic_ray").is_dir()
    assert "'fauxpy'" not in _plugins(site, None)  # EQUISA's runs: no PYTHONPATH
    assert "'fauxpy'" in _plugins(site, str(apart))  # FauxPy's runs

    assert fauxpy_apart(tmp_path / "venv" / "bin" / "python") == apart  # again: nothing to move
    assert sorted(p.name for p in apart.iterdir()) == ["fauxpy", "fauxpy-0.7.0.dist-info"]

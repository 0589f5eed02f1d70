"""The shadow plugin's files as the sandbox gets them: its package (``shadow_plugin/``) under the name
the run's copy gives it, with the core's input rules among its modules.

The plugin runs under the suite's own interpreter, which has no ``equisa_core``, so its modules
import one another only relatively, and the rules it shares with the differential test and the test
generator (``equisa_core/inputs/neighbours.py``, standard library only) reach it as its module
``input_neighbours``: in the tree a re-export of them, in the run's copy their own text. The files
are read, not imported: the plugin's package imports pytest, which EQUISA's process does not load.
"""

from __future__ import annotations

from pathlib import Path

from equisa_core.inputs import neighbours

__all__ = ["SHIPPED_MODULES", "shadow_plugin_files"]

#: The plugin's modules whose text in the run's copy is a core module's: file name -> that module's file.
SHIPPED_MODULES: dict[str, Path] = {"input_neighbours.py": Path(neighbours.__file__)}
_PLUGIN = Path(__file__).resolve().parent / "shadow_plugin"


def shadow_plugin_files(package: str) -> dict[str, str]:
    """The plugin's modules for the run's copy: path (``<package>/<module>.py``) -> source, in name
    order, ``SHIPPED_MODULES`` with their core module's text."""
    return {f"{package}/{path.name}": SHIPPED_MODULES.get(path.name, path).read_text(encoding="utf-8")
            for path in sorted(_PLUGIN.glob("*.py"))}

"""The core's input rules (``equisa_core/inputs/neighbours.py``), for the plugin's modules, which
import one another only relatively. In the tree this module re-exports them; in the run's copy the
host writes that module's own text in this file's place (``equisa_core.validation.shadow_files``),
since the suite's interpreter has no ``equisa_core``."""

from equisa_core.inputs.neighbours import *  # noqa: F403  (the names of its ``__all__``)

"""What other loops may use of the test generator: the one module through which they import it (issue 47;
``tests/test_architecture.py`` holds the rule). Add a name here before another loop uses it."""

from __future__ import annotations

from equisa_core.testgen.carving import GENERATED_TESTS_DIR

__all__ = ["GENERATED_TESTS_DIR"]

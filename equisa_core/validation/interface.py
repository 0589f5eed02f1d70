"""What other loops may use of Validation: the one module through which they import it (issue 47;
``tests/test_architecture.py`` holds the rule). Add a name here before another loop uses it."""

from __future__ import annotations

from equisa_core.validation.candidates import PatchCandidate, PatchEvaluation, PatchStatus
from equisa_core.validation.generated_tests import is_testgen_test

__all__ = ["PatchCandidate", "PatchEvaluation", "PatchStatus", "is_testgen_test"]

"""What other loops may use of Localization: the one module through which they import it (issue 47;
``tests/test_architecture.py`` holds the rule). Add a name here before another loop uses it."""

from __future__ import annotations

from equisa_core.localization.invariants import RESULT_NAME, RESULT_SUBJECT, mine_invariants
from equisa_core.localization.selection import is_test_file, is_valid_node
from equisa_core.localization.steps import LocalizationReport

__all__ = ["LocalizationReport", "RESULT_NAME", "RESULT_SUBJECT", "is_test_file", "is_valid_node", "mine_invariants"]

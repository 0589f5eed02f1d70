"""What other loops may use of Discovery: the one module through which they import it (issue 47;
``tests/test_architecture.py`` holds the rule). Add a name here before another loop uses it."""

from __future__ import annotations

from equisa_core.discovery.rules import DiscoveryReport
from equisa_core.discovery.spectrum import dstar, ochiai, tarantula

__all__ = ["DiscoveryReport", "dstar", "ochiai", "tarantula"]

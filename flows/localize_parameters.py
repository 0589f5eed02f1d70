"""The parameters of a localization run: those of Discovery plus the Localization loop's budgets.

A module of its own so that the flows that run the loop's steps (``flows.inspections``,
``flows.localization_steps``) and its driver (``flows.localize``) import it without importing each other.
"""

from __future__ import annotations

from equisa_core.common.options import LocalizationOptions
from flows.discovery import DiscoveryParameters

__all__ = ["LocalizeParameters"]


class LocalizeParameters(DiscoveryParameters, LocalizationOptions):
    """Parameters of one localization run (those of ``discovery`` plus the loop's budgets)."""

"""Localization's tasks: the step runners and the inspections."""

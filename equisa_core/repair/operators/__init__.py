"""Repair operators of the fix space: conditions, Python's idioms, initializations, statements and
templates. Pure."""

"""Repair's tasks: the patch generators, the deterministic search, the patcher and the report."""

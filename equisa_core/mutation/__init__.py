"""Verified source edits of one function and the deterministic mutants built from them, shared by
localization (the mutant screening), testgen (mutation score) and repair (candidate fixes)."""

"""Prompt templates, one module per agent: named constants and pure render functions."""

"""Validation's tasks: the checks, the differential test and the behavioural divergence."""

"""The repair loop: its machine, the candidate generators (fix space, operators, the patcher's
retrieval, patch format and prompts), the fix prior, the ranking and the report."""

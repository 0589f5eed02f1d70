"""Types and helpers every loop shares: the call graph and trace types, values, source edits, model text."""

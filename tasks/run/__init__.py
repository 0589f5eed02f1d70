"""A run of a repository's suite: the workspace, the interpreter, environments, prepared runs and mutants."""

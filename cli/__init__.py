"""The command line: the launcher, the warm worker, the commands and their options, settings and display."""

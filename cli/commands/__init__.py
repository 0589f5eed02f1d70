"""Sub-commands of ``equisa`` beyond trace/localize/repair, one module each.

A module here defines ``register(commands)`` (``commands`` is the argparse sub-parsers object):
it adds its parser and sets ``handler=(args, console) -> exit code``. ``cli/main.py`` finds
the modules by name, so adding a command touches no shared file.
"""

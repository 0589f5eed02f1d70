"""The ``equisa`` console script's entry: hands the command to a warm worker (``cli.warm_worker``),
which has EQUISA and Prefect imported already, or runs it in this process (``cli.main.run``).

Only the standard library is imported here, so a command served warm starts in tens of
milliseconds. Runs in this process: ``EQUISA_WARM=0``, ``--verbose`` (Prefect's logging is set up
at import, for the terminal or not), or when no worker can start (the reason is kept in the
worker's log; the command itself is unaffected).
"""

from __future__ import annotations

import os
import sys

__all__ = ["run"]


def run() -> int:
    """``equisa ARGS``: served by a warm worker when possible, else run here."""
    argv = sys.argv[1:]
    if "--verbose" not in argv:
        from cli.warm_worker import WarmUnavailable, forward

        try:
            return forward(argv, os.environ)
        except WarmUnavailable:
            pass
    from cli.main import run as run_here

    return run_here()


if __name__ == "__main__":
    sys.exit(run())

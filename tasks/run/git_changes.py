"""The lines of a repository changed since a git ref, for the prior's ``changed`` signal.

Reads ``git diff --unified=0 REF`` (the working tree against the ref, so uncommitted edits count)
and keeps the new side's line numbers of Python files. Parsing the hunk headers by hand is the
whole job (three numbers per header); a diff library would add a dependency for that.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from equisa_core.errors import InputError

__all__ = ["changed_lines"]

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(?P<start>\d+)(?:,(?P<count>\d+))? @@")


def changed_lines(repo: str | Path, ref: str) -> dict[str, set[int]]:
    """Map each Python file changed since ``ref`` (repository-relative, '/'-separated) to the
    line numbers that changed or were inserted; a deletion counts the line after it. Raises
    ``InputError`` (exit 3) when ``repo`` is not a git work tree or ``ref`` is unknown."""
    root = Path(repo)
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "diff", "--unified=0", "--no-color", "--no-ext-diff",
             "--relative", ref, "--", "*.py"],
            capture_output=True, text=True, timeout=60, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise InputError(f"--since {ref}: git diff could not run: {error}") from error
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise InputError(f"--since {ref}: git diff failed in {root}: {said}")
    lines: dict[str, set[int]] = {}
    current: str | None = None
    for line in done.stdout.splitlines():
        if line.startswith("+++ "):
            target = line[4:].strip()
            current = target[2:] if target.startswith("b/") else None  # /dev/null: a deleted file
        elif current is not None and (hunk := _HUNK.match(line)):
            start, count = int(hunk["start"]), int(hunk["count"] or 1)
            lines.setdefault(current, set()).update(range(start, start + max(count, 1)))
    return lines

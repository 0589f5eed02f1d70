"""Building inspection runs: the patched function, its overlay, and the reading of the results.

An inspection patch is a new version of one function (heartbeat plus assertions); it runs only as
an overlay on a sandbox copy, never in the user's tree.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path

from equisa_core.common.models import Node, RecordedCall, TestOutcome, TestResult
from equisa_core.common.source_edit import find_function, function_source, replace_function
from equisa_core.errors import SourceEditError
from equisa_core.localization.inspection import build_inspection_patch
from equisa_core.localization.invariants import mine_invariants
from equisa_core.localization.signals import Signals, heartbeat, parse_signals

__all__ = [
    "file_of",
    "qualname_of",
    "read_function",
    "unreadable_because",
    "deterministic_inspection",
    "overlay_for",
    "observe",
]


def file_of(node: Node) -> str:
    """``node``'s file, relative to the repository root; ValueError when the node has none."""
    if node.file is None:
        raise ValueError(f"{node.fqn} has no file")
    return node.file


def qualname_of(node: Node) -> str:
    """The qualified name of ``node`` inside its module (its FQN minus the module path).

    The module is the longest tail of the file's dotted path that starts the FQN, which also
    covers ``src/`` layouts (``src/pkg/mod.py`` holds ``pkg.mod.f``).
    """
    parts = file_of(node).removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    for start in range(len(parts)):
        module = ".".join(parts[start:])
        if node.fqn.startswith(module + "."):
            return node.fqn[len(module) + 1:]
    return node.fqn.rsplit(".", 1)[-1]


def read_function(workspace: Path, node: Node) -> tuple[str, str]:
    """The file's text and the function's own source (dedented)."""
    with open(workspace / file_of(node), encoding="utf-8", newline="") as handle:
        text = handle.read()  # line endings kept: patches splice this text
    return text, function_source(text, qualname_of(node))


def unreadable_because(workspace: Path, node: Node) -> str | None:
    """Why ``node``'s definition cannot be read from its file (None when it can): a function made at
    run time under the file's name, say, which no inspection or patch can replace."""
    try:
        read_function(workspace, node)
    except (SourceEditError, OSError, ValueError) as error:
        return getattr(error, "message", None) or str(error)
    return None


def _parameters(source: str) -> list[str]:
    function = ast.parse(source).body[0]
    assert isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
    args = function.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return [n for n in names if n not in ("self", "cls")]


def deterministic_inspection(source: str, node: Node, calls: Sequence[RecordedCall]) -> tuple[str, int]:
    """Heartbeat plus invariants mined from passing executions; returns (patch, invariant count)."""
    invariants = mine_invariants(list(calls), _parameters(source))
    return build_inspection_patch(source, node.fqn, invariants), len(invariants)


def overlay_for(workspace: Path, node: Node, new_function: str) -> tuple[dict[str, str], Node]:
    """The overlay that puts ``new_function`` in place, and the node's location in the patched file."""
    text, _ = read_function(workspace, node)
    qualname = qualname_of(node)
    patched = replace_function(text, qualname, new_function)
    where = find_function(patched, qualname)
    moved = node.model_copy(update={"start_line": where.start_line, "end_line": where.end_line})
    return {file_of(node): patched}, moved


def observe(target: Node, tests: Sequence[TestResult]) -> Signals:
    """The three formal signals of an inspection run (seed 002 §3.5), from the probe's records of
    its tests.

    ``is_covered``: the heartbeat is in a test's output, or the probe saw the function run (the
    output kept per test is a tail, so the heartbeat of a chatty test may be cut off).
    """
    covered = any(target.fqn in t.covered or heartbeat(target.fqn) in t.stdout_tail for t in tests)
    failing = [t for t in tests if t.outcome in (TestOutcome.FAILED, TestOutcome.ERROR)]
    has_target_assertion = any(
        parse_signals(
            target.fqn, target.file or "", heartbeat(target.fqn) if covered else "", "", 1,
            traceback_frames=t.traceback, exception_type=t.exception_type,
        ).has_target_assertion
        for t in failing
    )
    return Signals(is_covered=covered, has_target_assertion=has_target_assertion, is_failure=bool(failing))

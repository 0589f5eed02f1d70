"""Mutation score of generated tests: which mutants run against which tests, and the score.

Mutants come from the shared engine (``equisa_core.mutation.mutants.mutate_function``) for every function
and method of the target file (nested functions cannot be swapped in and are left out). Each
mutant runs only against the tests that cover it: the tests whose coverage context executed the
mutant's line. A mutant on a line no test executes survives without running. Mutants with the
same covering tests form one group, run together in one sandboxed process (``tasks.run.mutants``).

``select_mutants`` keeps at most ``max_mutants``, taken round-robin over the functions (each
function's mutants in the engine's priority order), so a cap spreads over the whole file.

    score = killed / (killed + survived) * 100      (None when no mutant could be judged)

A mutant is killed when a test that passed unmutated fails or errors with it, or a test times out
or the interpreter dies; it survives when every covering test still passes (or it is covered by
none). Mutants the probe could not swap in, or that never ran, are left out of the score and
reported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from equisa_core.common.source_edit import function_source, list_functions
from equisa_core.mutation.mutants import Mutant, mutate_function

__all__ = [
    "PlannedMutant",
    "MutantVerdict",
    "module_name",
    "select_mutants",
    "group_by_tests",
    "mutation_score",
]


class PlannedMutant(BaseModel):
    """One mutant of the target file and the tests that cover its line."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    fqn: str
    file: str
    line: int
    operator: str
    description: str
    source: str
    tests: tuple[str, ...] = Field((), description="The tests covering its line; empty: none.")


class MutantVerdict(BaseModel):
    """What became of one mutant."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    fqn: str
    line: int
    description: str
    status: str = Field(description="'killed', 'survived', 'not_covered', 'unswappable' or 'not_run'.")
    killed_by: str | None = None


def module_name(file: str) -> str:
    """The dotted module of a repository-relative file: 'src/pkg/mod.py' -> 'pkg.mod'."""
    parts = file.removesuffix(".py").split("/")
    if parts and parts[0] == "src" and len(parts) > 1:
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def select_mutants(
    source: str,
    file: str,
    line_tests: Mapping[int, Sequence[str]],
    max_mutants: int,
) -> list[PlannedMutant]:
    """The mutants to run (module docstring), each with the tests covering its line."""
    module = module_name(file)
    per_function = []
    for location in list_functions(source, module=module):
        if "<locals>" in location.qualname:
            continue
        text = function_source(source, location.qualname)
        try:
            mutants = mutate_function(text, location.fqn, start_line=location.start_line)
        except Exception:
            continue
        per_function.append(mutants)
    chosen: list[Mutant] = []
    depth = 0
    while len(chosen) < max_mutants and any(depth < len(m) for m in per_function):
        for mutants in per_function:
            if depth < len(mutants) and len(chosen) < max_mutants:
                chosen.append(mutants[depth])
        depth += 1
    chosen.sort(key=lambda m: (m.line, m.fqn))
    return [
        PlannedMutant(
            id=f"m{index}",
            fqn=m.fqn,
            file=file,
            line=m.line,
            operator=m.operator,
            description=m.description,
            source=m.source,
            tests=tuple(sorted(line_tests.get(m.line, ()))),
        )
        for index, m in enumerate(chosen)
    ]


def group_by_tests(mutants: Sequence[PlannedMutant]) -> dict[tuple[str, ...], list[PlannedMutant]]:
    """Covered mutants grouped by their covering tests (one sandbox run per group)."""
    groups: dict[tuple[str, ...], list[PlannedMutant]] = {}
    for mutant in mutants:
        if mutant.tests:
            groups.setdefault(mutant.tests, []).append(mutant)
    return groups


def mutation_score(verdicts: Sequence[MutantVerdict]) -> float | None:
    """killed / (killed + survived + not_covered) * 100; None when that denominator is 0."""
    killed = sum(1 for v in verdicts if v.status == "killed")
    judged = sum(1 for v in verdicts if v.status in ("killed", "survived", "not_covered"))
    return round(100.0 * killed / judged, 2) if judged else None

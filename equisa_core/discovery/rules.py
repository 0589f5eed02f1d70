"""Discovery-loop decisions (seed 000 §4): which ambiguity groups are worth splitting, and when to stop.

Pure. The flow traces, calls ``groups_to_split`` and, while it returns groups and the budget
lasts, generates disambiguating tests for them and traces again.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Mapping

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DiscoveryBudget",
    "DiscoveryRound",
    "DiscoveryReport",
    "groups_to_split",
    "group_sizes",
    "module_test_names",
    "keep_test_functions",
]


class DiscoveryBudget(BaseModel):
    """How much test generation the Discovery loop may spend."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_rounds: int = Field(2, ge=0, description="Generate-and-retrace rounds.")
    max_tests: int = Field(30, ge=0, description="Generated tests kept in all.")
    min_group_size: int = Field(2, ge=2, description="Smaller groups are not worth a test.")
    max_groups_per_round: int = Field(3, ge=1, description="Groups attacked per round.")


class DiscoveryRound(BaseModel):
    """One generate-and-retrace round."""

    model_config = ConfigDict(frozen=True)

    round: int
    groups: tuple[tuple[str, ...], ...] = Field(description="The groups tests were generated for.")
    proposed: int = Field(description="Tests generated (carved and by the model) before checking.")
    kept: int = Field(description="Tests that imported, ran and behaved as generated tests must.")
    dropped: tuple[str, ...] = Field((), description="Why the others were dropped, one line each.")
    testgen_proposed: int = Field(0, description="Of ``proposed``: tests from the test-generation agent.")
    testgen_kept: int = Field(0, description="Of ``kept``: tests from the test-generation agent.")


class DiscoveryReport(BaseModel):
    """What the Discovery loop did: rounds, tests kept, ambiguity before and after."""

    model_config = ConfigDict(frozen=True)

    enabled: bool = True
    testgen: bool = Field(False, description="Whether the test-generation agent proposed tests too.")
    rounds: tuple[DiscoveryRound, ...] = ()
    generated: int = Field(0, description="Generated tests kept in the suite.")
    files: tuple[str, ...] = Field((), description="Generated test modules, relative to the workspace.")
    tests: tuple[str, ...] = Field((), description="Ids of the generated tests kept.")
    group_sizes_before: tuple[int, ...] = ()
    group_sizes_after: tuple[int, ...] = ()
    stopped_because: str = ""


def groups_to_split(
    groups: Collection[frozenset[str]],
    suspiciousness: Mapping[str, float],
    budget: DiscoveryBudget,
    rounds_done: int,
    tests_generated: int,
) -> list[frozenset[str]]:
    """The ambiguity groups to generate tests for now; empty means ``need_more_tests`` is False.

    Only groups that matter are worth tests: those whose members are suspicious (score above 0,
    i.e. executed by a failing test). The most suspicious groups come first, larger before smaller
    at equal score, then by their sorted members; at most ``max_groups_per_round``, and none once
    the rounds or the test budget are spent.
    """
    if rounds_done >= budget.max_rounds or tests_generated >= budget.max_tests:
        return []

    def score(group: frozenset[str]) -> float:
        return max((suspiciousness.get(member, 0.0) for member in group), default=0.0)

    worth = [g for g in groups if len(g) >= budget.min_group_size and score(g) > 0.0]
    worth.sort(key=lambda g: (-score(g), -len(g), sorted(g)))
    return worth[: budget.max_groups_per_round]


def near_the_top(groups: Collection[frozenset[str]], prior: Mapping[str, float], top: int,
                 ) -> list[frozenset[str]]:
    """The groups of ``groups`` worth generated tests: those whose best member's prior score is
    among the ``top`` best functions' (a positive score: some failing test ran it).

    A generated test that splits a group far down the ranking changes no leader, and on a large
    suite every retrace costs tens of seconds.
    """
    if not prior or top < 1:
        return []
    ranked = sorted(prior.values(), reverse=True)
    bar = ranked[min(top, len(ranked)) - 1]
    worth = []
    for group in groups:
        best = max((prior.get(member, 0.0) for member in group), default=0.0)
        if best > 0.0 and best >= bar:
            worth.append(group)
    return worth


def group_sizes(groups: Collection[frozenset[str]]) -> list[int]:
    """Sizes of the groups, largest first: what the report shows before and after Discovery."""
    return sorted((len(g) for g in groups), reverse=True)


def module_test_names(module_source: str) -> list[str]:
    """Names of the module's top-level test functions, in order."""
    return [
        node.name for node in ast.parse(module_source).body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    ]


def keep_test_functions(module_source: str, keep: Collection[str]) -> str:
    """``module_source`` without the top-level test functions not named in ``keep``.

    Whole lines are cut (decorators included), so everything else stays byte-identical.
    """
    lines = module_source.splitlines(keepends=True)
    cut: set[int] = set()
    for node in ast.parse(module_source).body:
        if (isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
                and node.name not in keep):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            cut.update(range(first - 1, (node.end_lineno or node.lineno)))
    return "".join(line for index, line in enumerate(lines) if index not in cut)

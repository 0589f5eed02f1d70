"""The parameters of the flows that run a repository's suite: trace, Discovery, localize, repair,
testgen, one repository of a batch, and a batch.

Each composes the option models of ``equisa_core.common.options`` (the flows' parameters and the
CLI's options share one definition) and adds what its flow runs on. A module of its own so that
the tasks that run the loops' steps and the flows that drive them import them without importing
each other. ``settings_for`` gives the Localization machine's settings for a run's parameters.
"""

from __future__ import annotations

import os
from typing import ClassVar

from pydantic import ConfigDict, Field

from equisa_core.common.options import (
    BatchOptions,
    DiscoveryOptions,
    EndpointOptions,
    LocalizationOptions,
    OutputOptions,
    RepairLocalizationOptions,
    SandboxOptions,
    StorageOptions,
    TestgenOptions,
    ValidationOptions,
    cost_cap,
    screen_cost_ratio,
    stop_margin,
)
from equisa_core.localization.machine import LocalizationSettings
from equisa_core.operations.batch import RepositoryEntry

__all__ = ["TraceParameters", "DiscoveryParameters", "LocalizeParameters", "RepairParameters",
           "TestgenParameters", "RepositoryRunParameters", "BatchParameters", "repair_parameters",
           "settings_for"]


class TraceParameters(SandboxOptions, StorageOptions):
    """Parameters of one traced run of a repository's suite (its sandbox and storage options, plus
    what to run)."""

    model_config = ConfigDict(extra="forbid")
    #: What unreviewed code the flow of these parameters runs (None: only the user's suite); such
    #: code needs a sandbox that confines files (``equisa_core.common.sandbox_policy``).
    generated_code: ClassVar[str | None] = None

    path: str = Field(description="The repository's root folder.")
    tests: list[str] = Field(default_factory=list, description="pytest paths or node ids; empty: all.")
    rerun_failures: bool = Field(True, description="Re-run the failing tests apart to find flaky ones.")


class DiscoveryParameters(TraceParameters, EndpointOptions, DiscoveryOptions):
    """Parameters of the Discovery loop (those of ``trace-suite``, the model switch and its budget)."""

    generated_code: ClassVar[str | None] = "generated tests, inspection patches and fixes"


class LocalizeParameters(DiscoveryParameters, LocalizationOptions):
    """Parameters of one localization run (those of ``discovery`` plus the loop's budgets)."""


class RepairParameters(RepairLocalizationOptions, LocalizeParameters, ValidationOptions):
    """Parameters of one repair run (those of ``localize``, with a repair's own defaults, plus the
    Validation budgets)."""


class TestgenParameters(TraceParameters, EndpointOptions, TestgenOptions):
    """Parameters of one testgen run (those of ``trace-suite``, the model switch and the loop's budget)."""

    __test__ = False
    generated_code: ClassVar[str | None] = "generated tests"
    target: str = Field(
        description="The file under test, relative to the repository (or absolute inside it)."
    )
    out: str | None = Field(None, description="Folder for the generated modules, the store and the reports.")
    focus: list[str] = Field(
        default_factory=list, description="FQNs to generate tests for; empty: the whole file."
    )
    specification: dict[str, str] = Field(
        default_factory=dict,
        description="Test id -> source of tests that show the intended behaviour (LLM mode: given to "
        "the generator as the specification; its tests then assert that behaviour, so they may fail "
        "on the current code and are kept all the same).",
    )
    module_stem: str | None = Field(
        None, description="Name of the generated module (test_testgen_<stem>.py); default: the target's."
    )


class RepositoryRunParameters(OutputOptions):
    """Parameters of one repository's run: the entry (as in a repositories file) and where reports go."""

    model_config = ConfigDict(extra="forbid")

    entry: RepositoryEntry
    no_cache: bool = Field(False, description="Run every sandboxed test run again.")


class BatchParameters(BatchOptions):
    """Parameters of a batch: the repositories file, how many run at once, where reports go."""

    model_config = ConfigDict(extra="forbid")

    repositories_file: str = Field(
        description="YAML file listing the repositories (see equisa_core.operations.batch).")


def repair_parameters(entry: RepositoryEntry, path: str, no_cache: bool = False) -> RepairParameters:
    """The ``repair`` flow's parameters for ``entry``, checked out at ``path``."""
    b = entry.budgets
    return RepairParameters(
        path=path, python=entry.python, tests=list(entry.tests), sandbox=entry.sandbox,
        allow_weak_sandbox=entry.allow_weak_sandbox, docker_image=entry.docker_image, no_cache=no_cache,
        shard_timeout_s=b.shard_timeout_s,
        test_timeout_s=b.test_timeout_s, llm=entry.llm, max_inspections=b.max_inspections,
        max_seconds=b.max_seconds, max_cost_usd=b.max_cost_usd, price_input=entry.price_input,
        price_output=entry.price_output, max_generated_tests=b.max_generated_tests,
        max_validations=b.max_validations,
    )


def settings_for(params: LocalizeParameters, use_llm: bool, batching: bool) -> LocalizationSettings:
    """The machine's settings for ``params`` (in LLM mode: the seed's likelihoods, no stopping rule;
    mutants by default in deterministic mode only; ``batching``: inspections may run ahead)."""
    mutants = (not use_llm) if params.mutation_evidence is None else params.mutation_evidence
    screening = bool(mutants and params.screen_top and params.max_inspections)
    return LocalizationSettings(
        mode="llm" if use_llm else "deterministic", likelihoods="seed" if use_llm else params.likelihoods,
        min_expected_shift=0.0 if use_llm else params.min_expected_shift, mutants=mutants,
        screen_top=params.screen_top if screening else 0, screen_first=screening and params.discovery,
        stop_margin=None if use_llm else stop_margin(params.stop_margin),
        screen_cost_ratio=None if use_llm else screen_cost_ratio(params.screen_cost_ratio),
        screen_processes=params.shards or os.cpu_count() or 1,
        mutants_per_function=params.mutants_per_inspection,
        max_iterations=params.max_inspections, max_cost_usd=cost_cap(params.max_cost_usd),
        max_seconds=params.max_seconds,
        max_stalled_inspections=params.max_stalled_inspections, record_top=params.record_top,
        inspection_batch=params.inspection_batch if batching else 1,
    )

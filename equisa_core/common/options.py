"""Every option of EQUISA's commands, one pydantic model per concern, and the one home of its default.

The flows' parameter models (``TraceParameters``, ``DiscoveryParameters``, ``LocalizeParameters``,
``RepairParameters``, ``TestgenParameters``) compose these models by inheritance, so their fields keep
their flat names; the command line takes each option's default from here (``default_of``), and the
batch file's ``Budgets`` do too. Pure data: nothing here reads the environment or a file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, PositiveFloat, field_validator

from equisa_core.common.fitted import (
    DEFAULT_MIN_EXPECTED_SHIFT,
    DEFAULT_TABLE,
    FITTED_SCREEN_COST_RATIO,
    FITTED_STOP_MARGIN,
    TableName,
)

__all__ = [
    "SandboxOptions",
    "StorageOptions",
    "EndpointOptions",
    "DiscoveryOptions",
    "LocalizationOptions",
    "ConvergenceOptions",
    "RepairLocalizationOptions",
    "ValidationOptions",
    "TestgenOptions",
    "BatchOptions",
    "DeployOptions",
    "OutputOptions",
    "ForgeOptions",
    "ForgeKind",
    "GITHUB_API",
    "SandboxKind",
    "default_of",
    "PerTestLimit",
    "AUTO_TIMEOUT",
    "TIMEOUT_FACTOR",
    "TIMEOUT_SLACK_S",
    "TIMEOUT_CAP_S",
    "FIRST_RUN_TIMEOUT_S",
    "FIRST_RUN_SHARE_OF_WALL_CLOCK",
    "NEW_TEST_TIMEOUT_S",
    "FIX_PRIOR_NAMES",
    "NO_COST_CAP",
    "CostCap",
    "RENAMED_SETTINGS",
    "renamed_setting",
    "cost_cap",
]

SandboxKind = Literal["local", "docker", "none"]
#: The named fix-pattern priors (``ValidationOptions.fix_prior``); anything else is a JSON file's path.
FIX_PRIOR_NAMES: Final = ("fitted", "size")

#: ``--test-timeout auto``: each test's limit comes from its own duration
#: (``equisa_core.common.time_limits``).
AUTO_TIMEOUT: Final = "auto"
#: A per-test limit: a number of seconds for every test, ``auto``, or None (no limit but the run's).
PerTestLimit = PositiveFloat | Literal["auto"] | None
#: Under ``auto``, a test may run TIMEOUT_FACTOR times its duration in the first run, plus
#: TIMEOUT_SLACK_S, but never more than TIMEOUT_CAP_S.
TIMEOUT_FACTOR = 10.0
TIMEOUT_SLACK_S = 2.0
TIMEOUT_CAP_S = 60.0
#: Under ``auto``, the limit of a suite test in the first run when the history has no duration for
#: it. Generous, because a slow test cut here counts as failing and changes what is localized (real
#: suites have single tests of 10 s and more on a loaded machine); every later run then uses the
#: test's own limit.
FIRST_RUN_TIMEOUT_S = 30.0
#: Under ``auto``, no first-run limit exceeds this share of the run's wall clock (``shard_timeout_s``,
#: which a time budget bounds: ``--max-seconds``): a test that loops is cut as a failing test, not by
#: killing its whole run, and a 20 s budget is not spent on one test's 30 s.
FIRST_RUN_SHARE_OF_WALL_CLOCK = 0.25
#: Under ``auto``, the limit of a test made during the run (generated, carved): small by nature.
NEW_TEST_TIMEOUT_S = 10.0


#: ``--max-cost none``: the run has no cost cap (and a model without a known price may be used).
NO_COST_CAP: Final = "none"
#: The LLM spend a run may reach, in USD, or ``none`` (no cap).
CostCap = NonNegativeFloat | Literal["none"]


def cost_cap(value: CostCap) -> float | None:
    """The cap ``value`` sets, in USD; None for ``none`` (no cap)."""
    return None if value == NO_COST_CAP else float(value)


#: ``--stop-margin off``: a run never stops at its first answer.
STOP_MARGIN_OFF: Final = "off"
#: The leader/runner-up confidence ratio that ends a run once the screening is in (at least 1), or ``off``.
StopMargin = Annotated[float, Field(ge=1)] | Literal["off"]


def stop_margin(value: StopMargin) -> float | None:
    """The margin ``value`` sets; None for ``off`` (never stop after the screening)."""
    return None if value == STOP_MARGIN_OFF else float(value)


#: ``--screen-cost-ratio off``: a run screens every function worth it whole, whatever that costs.
SCREEN_COST_RATIO_OFF: Final = "off"
#: How many times the trace's seconds the mutant screening may take (above 0), or ``off``.
ScreenCostRatio = Annotated[float, Field(gt=0)] | Literal["off"]


def screen_cost_ratio(value: ScreenCostRatio) -> float | None:
    """The ratio ``value`` sets; None for ``off`` (no budget)."""
    return None if value == SCREEN_COST_RATIO_OFF else float(value)


def default_of(model: type[BaseModel], field: str) -> Any:
    """The default of ``model``'s ``field``: what an option that sets it defaults to."""
    return model.model_fields[field].get_default(call_default_factory=True)


class SandboxOptions(BaseModel):
    """Where and how the suite runs: the interpreter, the sandbox, its shards and its time limits."""

    python: str | None = Field(None, description="Interpreter (local) or command in the image (docker).")
    provision: bool = Field(
        True, description="With no interpreter given (--python, a venv in the repository, $VIRTUAL_ENV), "
        "build the suite's environment with uv from what the repository declares; off: EQUISA's own.")
    environments: str | None = Field(
        None, description="Folder of the built environments; None: $XDG_CACHE_HOME/equisa/environments, "
        "else ~/.cache/equisa/environments.")
    test_env: dict[str, str] = Field(
        default_factory=dict, description="Variables the suite needs in the sandbox, KEY=VALUE (names that "
        "look like secrets, *TOKEN*, *KEY*, *SECRET*, *PASSWORD*, are dropped).")
    sandbox: SandboxKind = Field(
        "local", description="local: the strongest isolation this machine has; docker: a container; "
        "none: a plain subprocess (accepts running generated code unconfined).")
    allow_weak_sandbox: bool = Field(False, description="Run generated code even where the local sandbox "
                                                        "cannot confine file writes.")
    docker_image: str | None = Field(None, description="Image for the docker sandbox.")
    shards: int | None = Field(None, ge=1, description="Parallel shards; default: the number of cores.")
    no_cache: bool = Field(False, description="Run again even when a cached result exists.")
    shard_timeout_s: float = Field(1800.0, gt=0, description="Wall-clock limit of one shard's run of the "
                                                             "suite (it is killed then).")
    test_timeout_s: PerTestLimit = Field(
        AUTO_TIMEOUT, description=f"Limit per test: seconds for every test, or auto: {TIMEOUT_FACTOR:g}x the "
        f"test's own duration in the first run + {TIMEOUT_SLACK_S:g}s, at most {TIMEOUT_CAP_S:g}s (in the "
        f"first run: from the history's durations, else {FIRST_RUN_TIMEOUT_S:g}s; a test made during the "
        f"run: {NEW_TEST_TIMEOUT_S:g}s).")


class StorageOptions(BaseModel):
    """Where runs are recorded: the artifact store and the DuckDB history."""

    artifacts: str | None = Field(None, description="Artifact store: a folder or s3://bucket/prefix; "
                                                    "None: EQUISA_ARTIFACTS, else the local default.")
    db: str | None = Field(None, description="DuckDB history file; None: EQUISA_DB, else the default.")


class EndpointOptions(BaseModel):
    """Whether the model endpoint is used (its address and key come from ``OPENAI_*``), what a run may
    spend on it, and the prices of a model the price table (``tasks/llm.py``) does not know."""

    llm: bool | None = Field(None, description="Use the model; None: when an endpoint is configured.")
    max_cost_usd: CostCap = Field(
        2.0, description="LLM spend (USD) before the run stops asking the model; 'none': no cap.")
    price_input: float | None = Field(
        None, ge=0, description="USD per million input tokens of a model the price table does not know.")
    price_output: float | None = Field(
        None, ge=0, description="USD per million output tokens of a model the price table does not know.")


class DiscoveryOptions(BaseModel):
    """The Discovery loop's switches and budget."""

    discovery: bool = Field(True, description="Generate disambiguating tests; False: trace only.")
    discovery_rounds: int = Field(2, ge=0, description="Generate-and-retrace rounds.")
    max_generated_tests: int = Field(30, ge=0, description="Generated tests Discovery keeps in all.")
    carved_per_member: int = Field(3, ge=0, description="Carved tests per group member and round.")
    discovery_top: int = Field(
        10, ge=0, description="Split only the ambiguity groups holding one of the prior's this many "
        "best functions (``near_the_top``); 0: every group.")
    testgen: bool = Field(
        False, description="Also ask the test-generation agent (deterministic, one attempt) for "
        "tests of each group's members; they split groups but never judge a patch. Off by default: "
        "on examples/invoicing it made Discovery 5x slower and split no group carving left whole "
        "(bench/README.md).")


class LocalizationOptions(BaseModel):
    """The Localization loop's budgets and switches."""

    max_inspections: int = Field(12, ge=0, description="Inspections before giving up; 0: Discovery only.")
    max_seconds: float = Field(1800.0, gt=0, description="Wall time before giving up.")
    record_top: int = Field(15, ge=1, description="Candidates whose passing executions are recorded.")
    max_tests_per_inspection: int = Field(
        12, ge=1, description="Tests run per inspection: every failing test of the function, then its "
        "fastest passing ones (their calls are recorded for its invariants, in a slowed-down run).")
    mutation_evidence: bool | None = Field(
        None, description="Run mutants of each inspected node (see equisa_core.localization.fix_evidence); "
        "None: in deterministic mode only, where no model reflects.")
    mutants_per_inspection: int = Field(40, ge=1, description="Mutants tried per inspected node.")
    screen_top: int = Field(
        20, ge=0, description="Candidates (by prior) whose mutants are tried together in one sandbox "
        "process before the loop, when mutants run: a fix found there is evidence at once, so a "
        "function far down the ranking can still be confirmed; 0: off.")
    screen_budget_s: float = Field(
        15.0, gt=0, description="Mutant screening's estimated cost: the failing tests' durations times "
        "the mutants, summed over the screened functions (a mutant that fixes none stops after them); "
        "also each screening process's wall-clock limit for its mutant rounds (the rest are not run).")
    inspection_budget_s: float = Field(
        20.0, gt=0, description="Wall-clock seconds for the mutant rounds of one batch of inspections "
        "(``inspection_batch``); the mutants left then are not run, the inspection patches still are.")
    max_stalled_inspections: int = Field(
        5, ge=1, description="Stop after this many inspections in a row that found neither a fix, nor a "
        "failing assertion in the target, nor changed the leading node: the evidence is exhausted.")
    stop_margin: StopMargin = Field(
        FITTED_STOP_MARGIN, description="Deterministic mode: end the run once the mutant screening's "
        "evidence is in (and a fix it found confirmed) when the leader's confidence is at least this many "
        "times the runner-up's (equisa_core.localization.stop_margin; fitted on the real-bug benchmark); "
        "below it, Discovery, the value comparison and the inspections go on; off: they always do.")
    screen_cost_ratio: ScreenCostRatio = Field(
        FITTED_SCREEN_COST_RATIO, description="Deterministic mode: the mutant screening's time budget, this "
        "many times the seconds the trace took (at least 0.5 s); it screens the most suspicious functions "
        "first and leaves out those it has no time left for (equisa_core.localization.screening_cost; "
        "fitted on the real-bug benchmark); off: every function worth it is screened whole.")
    since: str | None = Field(
        None, description="A git ref: functions whose lines changed since it (committed or not) are more "
        "suspicious in the prior (``equisa_core.localization.prior``); None: no such signal.")
    inspection_batch: int = Field(
        5, ge=1, description="Deterministic inspections run together in one sandbox process: the selected "
        "node and the next most confident ones (the loop counts each when it selects that node); "
        "1: one process per inspection.")
    likelihoods: TableName = Field(
        DEFAULT_TABLE, description="The deterministic mode's likelihood table "
        "(equisa_core.localization.calibrated_likelihoods): 'fitted' on the real-bug benchmark, "
        "or 'seed' (hand-set; the LLM mode always counts with it).")
    min_expected_shift: float = Field(
        DEFAULT_MIN_EXPECTED_SHIFT, ge=0, le=1,
        description="Deterministic mode: a screening or inspection is run only when it is expected to "
        "move its function's confidence by this much (by the fitted frequencies of what inspections "
        "show); the loop stops when none is; 0: off.")


class ConvergenceOptions(BaseModel):
    """What ``equisa localize``'s exit code asks of its ranking (``errors.localize_exit_code``); not a
    flow parameter: the run is the same either way, only the command's exit code differs."""

    fail_unless_converged: bool = Field(
        False, description="Exit 25 when no function reached the confidence threshold (26 when the time "
        "budget stopped the run) instead of 0; the ranking and the report are written all the same. "
        "Off: a ranking exits 0, converged or not (the report's converged and stopped_because say which).")


class RepairLocalizationOptions(BaseModel):
    """The Localization loop's options where a repair needs other defaults than ``localize``."""

    max_seconds: float = Field(
        120.0, gt=0, description="Wall-clock seconds of the whole repair (localization, fix search and "
        "validations share them); then the run stops and reports the best it has (the ranking, any "
        "plausible candidate validated so far).")

    stop_margin: StopMargin = Field(
        STOP_MARGIN_OFF, description="Deterministic mode: end localization once the mutant screening's "
        "evidence is in when the leader's confidence is at least this many times the runner-up's; off (a "
        "repair's default): Discovery and the inspections always run, since the repair's tests and fixes "
        "come from them too.")
    screen_cost_ratio: ScreenCostRatio = Field(
        SCREEN_COST_RATIO_OFF, description="Deterministic mode: the mutant screening's time budget, this "
        "many times the trace's seconds (at least 0.5 s), the most suspicious functions first; off (a "
        "repair's default): every function worth it is screened whole, since the repair needs its evidence.")


class ValidationOptions(BaseModel):
    """The Validation loop's budgets: how many functions are patched and candidates validated."""

    repair_top: int = Field(3, ge=1, description="Functions the mutation search patches, by confidence.")
    max_mutants_per_function: int = Field(150, ge=1, description="Mutants screened per function.")
    max_fixes_per_function: int = Field(
        2000, ge=0, description="Candidates of the wider fix space (equisa_core.repair.fix_space) made "
        "per function, on top of its mutants; the search's time budget decides how many are screened.")
    # 'size' by default: under leave-one-question/project-out validation the fitted prior did not
    # beat the edit-size order (bench/results/fix_prior_2026-11-26.md), and it was fitted before
    # the statement, template, idiom and initialization operators existed.
    fix_prior: str = Field(
        "size", description="The search order's prior over fix patterns: 'size' (the smaller edit "
        "first, every pattern alike), 'fitted' (bundled, equisa_core.repair.fix_prior, fitted by "
        "bench/fix_prior_fit.py), or the path of a fitted prior's JSON.")
    search_seconds: float = Field(
        30.0, gt=0, description="Wall-clock seconds the deterministic search screens candidates in each "
        "round (its parallel screens share them), best-ranked first. 30 s: on the real-bug repair "
        "benchmark no Refactory fix took longer to find, and a BugsInPy bug that nothing fixes spent "
        "the whole budget.")
    max_validations: int = Field(12, ge=1, description="Candidates validated in full.")
    max_llm_fixes: int = Field(3, ge=0, description="Fixes asked of the model (each re-ask included).")
    patcher_evaluations: int = Field(3, ge=0, description="Patches of the multi-retrieval patcher validated.")
    max_relocalizations: int = Field(1, ge=0, description="Returns to Discovery after regressions.")


    @field_validator("fix_prior")
    @classmethod
    def _known_prior(cls, value: str) -> str:
        if value not in FIX_PRIOR_NAMES and not Path(value).is_file():
            names = " or ".join(FIX_PRIOR_NAMES)
            raise ValueError(f"fix_prior must be {names} or the path of a prior's JSON file; "
                             f"{value!r} is neither")
        return value


class TestgenOptions(BaseModel):
    """The test-generation loop's budgets and targets."""

    __test__ = False
    max_attempts: int = Field(3, ge=1, le=20, description="Attempts in all (attempt 0 included).")
    coverage_target: float = Field(80.0, ge=0, le=100, description="Line coverage to reach, in percent.")
    mutation_target: float = Field(60.0, ge=0, le=100, description="Mutation score to reach, in percent.")
    mutants_per_measurement: int = Field(150, ge=0, description="Mutants of the target file per "
                                                                "measurement.")
    hunt_survivors: bool = Field(
        True, description="In deterministic mode, once both targets are met, keep running mutation-guided "
        "rounds while mutants survive and each round kills more of them, within the attempts.")
    improvement_budget: int = Field(2, ge=0, description="Smell-fixing rounds per attempt (seed 000 §8).")
    carved_per_function: int = Field(3, ge=0, description="Carved tests per function (deterministic mode).")
    boundary_per_function: int = Field(4, ge=0, description="Boundary tests per function per attempt.")
    input_search_examples: int = Field(
        200, ge=0, description="Inputs the coverage-guided search draws per function in attempt 0 "
        "(attempt n: n + 1 times as many; 0: no search).")
    input_search_seconds: float = Field(5.0, gt=0, description="Seconds of search per function and attempt.")
    crosshair: bool = Field(
        False, description="Also ask CrossHair (crosshair-tool, the 'crosshair' extra) for inputs that reach "
        "the branches of the annotated functions, in the sandbox.")
    crosshair_seconds: float = Field(5.0, gt=0, description="CrossHair's time per condition of a function.")
    measure_baseline_mutation: bool = Field(
        False, description="Also score the repository's own tests' mutants."
    )


class OutputOptions(BaseModel):
    """Where a batch's per-repository reports go."""

    reports_dir: str | None = Field(None, description="Folder of the JSON reports; default: EQUISA_REPORTS, "
                                                      "else ~/.cache/equisa/reports.")


class BatchOptions(OutputOptions):
    """How a batch runs: how many repositories at once, and whether the cache is used."""

    concurrency: int = Field(2, ge=1, le=64, description="Repositories repaired at the same time (in "
                                                          "this process; on a work pool its limits decide).")
    no_cache: bool = Field(False, description="Repair every repository again and re-run every test.")
    # The model's cap and prices for every repository, over the file's own (None: each entry's own;
    # the entries' defaults are EndpointOptions').
    max_cost_usd: CostCap | None = Field(
        None, description="LLM spend (USD) of each repository's run, or 'none' (no cap), over the file's "
        "budgets.max_cost_usd; None: the file's.")
    price_input: float | None = Field(
        None, ge=0, description="USD per million input tokens of an unpriced model, over the file's.")
    price_output: float | None = Field(
        None, ge=0, description="USD per million output tokens of an unpriced model, over the file's.")
    work_pool: str | None = Field(None, description="Work pool whose workers repair the repositories, each "
                                                    "as a run of --deployment; default: in this process.")
    deployment: str = Field("repair-repository/repair-one",
                            description="The repair deployment (flow/name) a work pool's batch runs.")
    run_timeout_s: float = Field(7200.0, gt=0, description="On a work pool: how long a repository's run may "
                                                           "take, queued or running, before it is cancelled.")
    crash_retries: int = Field(1, ge=0, le=5, description="On a work pool: how many times a repository whose "
                                                          "run crashed (its worker died) is run again.")


class DeployOptions(BaseModel):
    """What ``equisa deploy`` installs: the nightly batch's schedule and the unresponsive-run watch."""

    schedule_cron: str = Field("0 2 * * *", description="The nightly batch's schedule (cron, 5 fields).")
    schedule_timezone: str = Field("UTC", description="Time zone of the schedule (IANA name).")
    unresponsive_after_s: float = Field(
        600.0, ge=30, description="A flow run silent this long (no heartbeat; workers send one every "
                                  "PREFECT_FLOWS_HEARTBEAT_FREQUENCY s) is marked crashed.")

    @field_validator("schedule_cron")
    @classmethod
    def _five_fields(cls, value: str) -> str:
        """A cron expression of five fields (minute hour day month weekday)."""
        if len(value.split()) != 5:
            raise ValueError(f"a cron expression has 5 fields (minute hour day month weekday), got {value!r}")
        return value.strip()

    @field_validator("schedule_timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        """An IANA time zone this machine knows."""
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {value!r} (an IANA name such as Europe/Berlin)") from None
        return value


#: The kinds of forge whose REST API ``--open-pr`` speaks (Gitea's pulls endpoints follow GitHub's).
ForgeKind = Literal["github", "gitea"]
#: github.com's REST API; GitHub Enterprise serves it at ``https://HOST/api/v3``.
GITHUB_API: Final = "https://api.github.com"


class ForgeOptions(BaseModel):
    """Whether a fixed run's patch (a plausible-only one with ``allow_plausible``) is published, and
    where: a branch pushed to a git remote, a pull request opened (or commented on) through the forge's
    REST API. Nothing is published unless asked."""

    model_config = ConfigDict(extra="forbid")

    push: bool = Field(False, description="Push the verified patch, as one commit on top of the repaired "
                                          "HEAD, to a branch equisa/fix-<short sha> of the remote.")
    remote: str = Field("origin", min_length=1, description="The git remote the branch is pushed to.")
    open_pr: bool = Field(False, description="Open a pull request for the pushed branch, or comment on the "
                                             "one already open for it (implies push).")
    forge: ForgeKind = Field("github", description="The forge's kind: github (also GitHub Enterprise) or "
                                                   "gitea.")
    forge_api: str | None = Field(None, description=f"The forge's REST API base; None: {GITHUB_API} for "
                                                    "github, https://HOST/api/v1 for gitea (HOST: the "
                                                    "remote's).")
    pr_base: str | None = Field(None, description="The branch the pull request targets; None: the branch "
                                                  "the run repaired, else the repository's default branch.")
    forge_timeout_s: float = Field(30.0, gt=0, description="Seconds to wait for each answer of the forge's "
                                                           "API.")
    allow_plausible: bool = Field(False, description="Also publish a plausible-only patch (it passes the "
                                                     "suite, but a check weighs against it or the evidence "
                                                     "does not reach a fix), its commit and "
                                                     "pull request marked as plausible only and why.")

    @property
    def publishing(self) -> bool:
        """Whether anything is to be pushed (``open_pr`` implies the push)."""
        return self.push or self.open_pr


#: Settings renamed so that one name has one meaning in every command, by option model: the old key
#: (of ``[tool.equisa]``, ``EQUISA_*`` and the repositories file) -> the field it now sets. The old
#: keys are read, with a warning, for one release.
RENAMED_SETTINGS: Final[dict[type[BaseModel], dict[str, str]]] = {
    SandboxOptions: {"wall_clock_s": "shard_timeout_s"},
    DiscoveryOptions: {"discovery_max_tests": "max_generated_tests"},
    LocalizationOptions: {"max_iterations": "max_inspections", "max_mutants": "mutants_per_inspection"},
    TestgenOptions: {"max_iterations": "max_attempts", "max_mutants": "mutants_per_measurement"},
}


def renamed_setting(old: str, models: tuple[type[BaseModel], ...]) -> str | None:
    """The field the old key ``old`` sets among ``models`` (the first that renamed it); None: none does."""
    for model in models:
        new = RENAMED_SETTINGS.get(model, {}).get(old)
        if new is not None:
            return new
    return None

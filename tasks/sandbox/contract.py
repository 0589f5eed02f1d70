"""The sandbox contract: what a test run asks for, what every backend returns, and the shared parts.

A run is a pure function of (workspace digest, overlay, test selection, interpreter, environment,
limits, mutants, whether it re-runs its failing tests apart, EQUISA version): ``RunRequest.cache_key``
names it. Backends (``LocalSandbox``, ``DockerSandbox``) only differ in how they isolate the
process; they all

1. make a throwaway run folder with ``prepare_run_folder`` (workspace copy + overlay + probe),
2. run ``python -m pytest`` under the probe with ``probe_arguments`` and a ``scrubbed_environment``,
3. return a ``SandboxRun``: the probe's JSON lines plus how the process ended.

``tasks.sandbox.run_tests`` turns ``SandboxRun`` into a ``SuiteTrace`` (resuming after crashes);
``tasks.run.mutants`` turns the runs of a request with ``mutants`` into a ``MutantRunReport``.

The run's deadline (``run_deadline``): a flow with a time budget (``repair``, ``localize``) sets one
absolute deadline, and every sandboxed run started under it ends by then: its wall clock is the
sooner of its own and the time left (``deadline_wall_clock``). A run the deadline cut (not its own
clock) raises ``BudgetSpentError``: the task that made it fails, so its result is not cached (its
retries are for infrastructure failures only) and a later run with more time runs it whole; the
drivers catch it and stop their machine. A run that ends before the deadline is exactly what it is
without one, under the same cache key: the deadline is no part of the request. It lives in a
``ContextVar``: Prefect runs a flow in its caller's thread and each task submitted to its thread pool
in a copy of the submitter's context (as the progress listener, ``tasks.operations.progress_events``), and
Validation's background jobs run in copies too. Tasks sent to Dask or Ray worker processes see no
deadline: their runs keep their own wall clock, as before.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import re
import shutil
import sys
import time
import tomllib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path, PurePosixPath
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from equisa_core.common.models import TestOutcome
from equisa_core.common.options import SandboxOptions, default_of
from equisa_core.common.time_limits import uniform_limit, within_deadline
from equisa_core.common.trace_merge import MAX_FLAKY_RERUNS
from equisa_core.errors import (  # SandboxInfrastructureError and BudgetSpentError re-exported
    BudgetSpentError,
    InvalidSelectionError,
    SandboxInfrastructureError,
)
from equisa_core.probe import PROBE_MODULE, probe_file

__all__ = [
    "EQUISA_VERSION",
    "EXIT_GRACE_S",
    "WRITER_EXIT_GRACE_S",
    "SandboxLimits",
    "MutantSpec",
    "RunRequest",
    "SandboxRun",
    "Sandbox",
    "SandboxInfrastructureError",
    "BudgetSpentError",
    "run_deadline",
    "seconds_to_deadline",
    "deadline_passed",
    "deadline_wall_clock",
    "cut_by_deadline",
    "RecordCallback",
    "scrubbed_environment",
    "own_interpreter_environment",
    "PLUGIN_AUTOLOAD_OFF",
    "import_roots",
    "prepare_run_folder",
    "probe_arguments",
    "cap_text",
    "confirmation_payload",
    "tail_records",
]

#: Part of every cache key: a new runner version never reuses old results.
EQUISA_VERSION = "0.1.0"
#: The probe's name for the round of a mutant run that runs the code unmutated.
ORIGINAL_ROUND = "original"
#: Seconds a suite may take to exit once the probe has written its "end" record; then its process
#: group is killed and the recorded exit status stands. Everything EQUISA reads is written by then,
#: and an interpreter with nothing left running exits at once; a thread the suite left blocked (an
#: executor's worker waiting on a future no one completes) would keep it alive until the wall
#: clock (measured: a tornado suite's mutant run ran 1.6 s of tests, then waited 15 s to exit).
EXIT_GRACE_S = 2.0
#: The grace of a run with a plugin that writes its record after the probe's (the coverage plugin
#: of ``tasks/testgen/analysis.py``, at ``pytest_unconfigure``): coverage.py may need seconds for its report.
WRITER_EXIT_GRACE_S = 15.0

KIB, MIB, GIB = 1024, 1024**2, 1024**3

#: Called with each probe record (a parsed JSON object) as it is written.
RecordCallback = Callable[[dict], None]

#: Environment names that never enter a sandbox, whatever the caller passes: keys, tokens,
#: passwords and cloud credentials.
_SECRET_PATTERN = re.compile(
    r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|SESSION|COOKIE)|^(AWS|AZURE|GOOGLE|GCP|"
    r"OPENAI|ANTHROPIC|GITHUB|GITLAB|HF|HUGGING|DOCKER|PREFECT|SSH|GPG|NPM|PYPI|TWINE)_",
    re.IGNORECASE,
)
#: The only host variables a sandbox inherits (besides the caller's explicit ``env``).
_PASSED_THROUGH = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM")


def _code_digest() -> str:
    """Hash of the code that shapes a cached result: the probe and the result models.

    Cached results are pickles of these models, so a changed model must never meet an old pickle,
    and a changed probe must not reuse what the old one recorded; bumping ``EQUISA_VERSION`` by
    hand for every such change is too easy to forget.
    """
    global _CODE_DIGEST
    if _CODE_DIGEST is None:
        here = Path(__file__).resolve().parent
        files = [probe_file(), Path(inspect.getfile(TestOutcome)), here.parent / "run" / "mutants.py"]
        digest = hashlib.sha256()
        for file in files:
            digest.update(Path(file).read_bytes())
        _CODE_DIGEST = digest.hexdigest()[:16]
    return _CODE_DIGEST


_CODE_DIGEST: str | None = None


class SandboxLimits(BaseModel):
    """Resource limits of one sandboxed run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    wall_clock_s: float = Field(default_of(SandboxOptions, "shard_timeout_s"), gt=0,
                                description="Whole run; then the process group dies.")
    test_timeout_s: float | None = Field(
        uniform_limit(default_of(SandboxOptions, "test_timeout_s")), gt=0,
        description="One test without a limit of its own in ``per_test``; then it fails.")
    per_test: Mapping[str, float] = Field(
        default_factory=dict, description="Node id -> that test's own limit (``--test-timeout auto``: "
        "from its duration, ``equisa_core.common.time_limits``); the tests not named get test_timeout_s.")
    memory_bytes: int = Field(4 * GIB, gt=0, description="Address space per process (RLIMIT_AS).")
    cpu_seconds: int = Field(3600, gt=0, description="CPU time per process (RLIMIT_CPU).")
    file_size_bytes: int = Field(512 * MIB, gt=0, description="Largest file written (RLIMIT_FSIZE).")
    max_processes: int = Field(512, gt=0, description="Processes and threads in the sandbox.")
    output_bytes: int = Field(64 * KIB, gt=0, description="pytest's own output kept (tail).")


def _inside(path: str) -> bool:
    """Whether ``path`` is relative and stays inside the folder it is relative to."""
    pure = PurePosixPath(path)
    return bool(pure.parts) and not pure.is_absolute() and ".." not in pure.parts


class MutantSpec(BaseModel):
    """A variant of one function, run by the probe's mutant rounds (see ``tasks.run.mutants``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1, description="Names the mutant in the results; not 'original'.")
    fqn: str = Field(min_length=1, description="The function's FQN as the probe names it: 'pkg.mod.Cls.f'.")
    file: str = Field(description="The module's path relative to the repository root, '/'-separated.")
    source: str = Field(
        min_length=1,
        description="The mutated function's whole definition at column 0, decorators included.",
    )
    tests: tuple[str, ...] | None = Field(
        None, description="Node ids (of the run's selection) this mutant runs against; None: all of them.")
    detailed: bool = Field(
        False, description="An inspection patch rather than a mutant: its round runs every one of its tests "
        "(no fail-fast, no must-fix stop) and keeps each test's output and each failure's traceback.")

    @field_validator("id")
    @classmethod
    def _not_original(cls, value: str) -> str:
        if value == ORIGINAL_ROUND:
            raise InvalidSelectionError(f"mutant id {ORIGINAL_ROUND!r} is reserved for the unmutated round")
        return value

    @field_validator("file")
    @classmethod
    def _relative_file(cls, file: str) -> str:
        if not _inside(file):
            raise InvalidSelectionError(f"mutant file {file!r} must be relative and inside")
        return file


class RunRequest(BaseModel):
    """One run of (part of) a suite in a sandbox."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    workspace: Path = Field(description="Root of the read-only workspace snapshot.")
    workspace_digest: str = Field(description="Content hash of the workspace (cache key part).")
    overlay: Mapping[str, str] = Field(
        default_factory=dict,
        description="Files to write over the copy: relative '/'-path -> new text (patches, "
        "generated tests).",
    )
    tests: tuple[str, ...] = Field((), description="pytest paths or node ids; empty: all.")
    only: tuple[str, ...] | None = Field(None, description="Exact node ids to keep, if given.")
    shard: tuple[int, int] | None = Field(None, description="(index, count) of a round-robin split.")
    order_seed: int | None = Field(
        None, description="Run the tests in an order shuffled with this seed (None: pytest's own order); "
        "with env PYTHONHASHSEED set too, what a user running them in another order and process sees.")
    interpreter: str = Field(description="Interpreter path (local) or command (docker).")
    trace: bool = True
    record: tuple[str, ...] = Field((), description="FQNs whose calls the probe records.")
    env: Mapping[str, str] = Field(default_factory=dict, description="Extra variables, not secrets.")
    limits: SandboxLimits = Field(default_factory=SandboxLimits)
    mutants: tuple[MutantSpec, ...] = Field(
        (), description="Variants of one function: the tests run once as they are, then once per mutant."
    )
    mutants_fail_fast: bool = Field(
        False, description="Stop a mutant's round at the first test that passed unmutated and fails "
        "with it (those run first): enough to tell fixes and kills, much faster.")
    mutants_must_fix: tuple[str, ...] = Field(
        (), description="Node ids of tests a mutant is wanted to fix: they run first in each mutant "
        "round, and a round in which none of them passes stops there (such a mutant fixes nothing).")
    mutants_budget_s: float | None = Field(
        None, gt=0, description="Wall-clock seconds for the mutant rounds after the unmutated one; the "
        "mutants left when they are spent are reported 'not_run' (None: no limit but the run's own).")
    mutants_confirm: Mapping[str, tuple[TestOutcome, float | None]] = Field(
        default_factory=dict, description="The suite's tests (node id -> outcome and duration in the "
        "suite's own run), to confirm fixes in the same process: the first mutant of each function "
        "that passes all its must-fix tests and breaks none goes on through them (see the probe). "
        "They must be in the selection; those in no mutant's tests do not run unmutated.")
    rerun_failures: bool = Field(
        False, description="Re-run the first MAX_FLAKY_RERUNS failing tests apart, in a fork of the run's "
        "process made after collection, before any test ran; those that pass there are flaky (a traced "
        "run of the suite's shards; without tracing or with mutants the probe says it did not).")
    lent: tuple[str, ...] = Field(
        (), description="Host folders the run reads besides the interpreter (EQUISA's coverage.py lent "
        "to a suite): visible read-only even where the sandbox hides the folder they are in.")
    serve_owner: str | None = Field(
        None, description="A traced run whose process stays, once its own run is done, to serve a mutant "
        "run of the same tests from a fork made before they ran (``tasks.sandbox.served_runs``, kept for this "
        "owner). Not part of the cache key: it decides what the process does after, not what the run gives.")
    exit_grace_s: float = Field(
        EXIT_GRACE_S, gt=0, description="Seconds the suite may take to exit after the probe's end record "
        "(WRITER_EXIT_GRACE_S where a plugin writes after it). Not part of the cache key: it decides when "
        "a finished run's process is ended, not what the run gives.")
    allow_weak_isolation: bool = Field(
        False, description="Run unreviewed code (an overlay or mutants) even where the sandbox cannot "
        "confine file writes: the user asked for it (--allow-weak-sandbox, --sandbox none). Not part of "
        "the cache key: it decides whether a run may happen, not what it gives.")

    @property
    def untrusted(self) -> bool:
        """Whether the run executes code nobody reviewed: generated tests, patches, mutants."""
        return bool(self.overlay or self.mutants)

    @field_validator("overlay")
    @classmethod
    def _relative_paths(cls, overlay: Mapping[str, str]) -> Mapping[str, str]:
        for path in overlay:
            if not _inside(path):
                raise InvalidSelectionError(f"overlay path {path!r} must be relative and inside")
        return overlay

    @field_validator("mutants")
    @classmethod
    def _unique_ids(cls, mutants: tuple[MutantSpec, ...]) -> tuple[MutantSpec, ...]:
        ids = [mutant.id for mutant in mutants]
        if len(set(ids)) != len(ids):
            repeated = sorted({i for i in ids if ids.count(i) > 1})
            raise InvalidSelectionError(f"mutant ids must be unique; repeated: {', '.join(repeated)}")
        return mutants

    @field_validator("shard")
    @classmethod
    def _valid_shard(cls, shard: tuple[int, int] | None) -> tuple[int, int] | None:
        if shard is not None and not 0 <= shard[0] < shard[1]:
            raise ValueError(f"shard {shard} must be (index, count) with 0 <= index < count")
        return shard

    def test_limits(self) -> dict[str, float]:
        """The per-test limits of the tests this run may run (those ``only`` keeps, when set)."""
        per_test = self.limits.per_test
        if self.only is not None:
            return {test: per_test[test] for test in sorted(self.only) if test in per_test}
        return dict(sorted(per_test.items()))

    def cache_key(self, backend: str, interpreter_version: str) -> str:
        """Hash of everything the run's result depends on."""
        payload = {
            "equisa": EQUISA_VERSION,
            "code": _code_digest(),
            "backend": backend,
            "workspace": self.workspace_digest,
            "overlay": {k: hashlib.sha256(v.encode()).hexdigest() for k, v in sorted(self.overlay.items())},
            "tests": list(self.tests),
            "only": sorted(self.only) if self.only is not None else None,
            "shard": list(self.shard) if self.shard else None,
            "interpreter": [self.interpreter, interpreter_version],
            "trace": self.trace,
            "record": sorted(self.record),
            "env": dict(sorted(self.env.items())),
            "limits": self.limits.model_dump(exclude={"per_test"}),
        }
        if self.limits.per_test:  # only then, so keys of runs with one limit for all stay as they were
            payload["per_test"] = self.test_limits()
        if self.mutants:  # only then, so keys of runs without mutants stay as they were
            payload["mutants"] = [mutant.model_dump() for mutant in self.mutants]
            payload["mutants_fail_fast"] = self.mutants_fail_fast
            if self.mutants_must_fix:
                payload["mutants_must_fix"] = sorted(self.mutants_must_fix)
            if self.mutants_confirm:
                payload["mutants_confirm"] = confirmation_payload(self.mutants_confirm)
            if self.mutants_budget_s is not None:
                payload["mutants_budget_s"] = self.mutants_budget_s
        if self.rerun_failures:  # only then, so keys of runs without the rerun stay as they were
            payload["rerun_failures"] = MAX_FLAKY_RERUNS
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


class SandboxRun(BaseModel):
    """How one sandboxed process ended, with the probe's output."""

    model_config = ConfigDict(frozen=True)

    probe_output: str = Field(description="The probe's JSON lines, as written.")
    exit_code: int | None = Field(description="pytest's exit status; None when killed.")
    timed_out: bool = False
    log_tail: str = Field("", description="Tail of pytest's own stdout and stderr.")
    duration_s: float = 0.0
    isolation: str = Field(description="How the process was isolated, e.g. 'bwrap', 'docker'.")


@runtime_checkable
class Sandbox(Protocol):
    """A backend that runs a ``RunRequest`` in isolation."""

    name: str

    def run(self, request: RunRequest, on_record: RecordCallback | None = None) -> SandboxRun:
        """Run the request; report probe records as they appear; never raise for test failures."""
        ...


#: The monotonic time by which every sandboxed run started in this context ends (None: no deadline).
_DEADLINE: ContextVar[float | None] = ContextVar("equisa_run_deadline", default=None)


@contextmanager
def run_deadline(seconds: float | None) -> Iterator[None]:
    """Every sandboxed run started inside (and in the tasks submitted from inside) ends within
    ``seconds`` from now, or by an enclosing deadline if that is sooner (None: only the enclosing)."""
    outer = _DEADLINE.get()
    deadline = outer if seconds is None else time.monotonic() + max(0.0, seconds)
    token = _DEADLINE.set(deadline if outer is None or deadline is None else min(outer, deadline))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def seconds_to_deadline() -> float | None:
    """Seconds left to the current deadline (negative once passed; None: no deadline)."""
    deadline = _DEADLINE.get()
    return None if deadline is None else deadline - time.monotonic()


def deadline_passed() -> bool:
    """Whether the current deadline has passed (False without one)."""
    left = seconds_to_deadline()
    return left is not None and left <= 0


def deadline_wall_clock(wall_clock_s: float) -> tuple[float, bool]:
    """A run's wall clock from now, given its own (``within_deadline``): the seconds, and whether
    the deadline binds. Raises ``BudgetSpentError`` when the deadline has passed: no run starts."""
    seconds, by_deadline = within_deadline(wall_clock_s, seconds_to_deadline())
    if by_deadline and seconds <= 0:
        raise BudgetSpentError("the time budget ran out before a sandboxed run could start")
    return seconds, by_deadline


def cut_by_deadline(seconds: float) -> BudgetSpentError:
    """The error of a run stopped at the deadline, ``seconds`` after it started waiting."""
    return BudgetSpentError(f"the time budget ran out: a sandboxed run was cut at the deadline after "
                            f"{seconds:.1f}s (not cached)")


def scrubbed_environment(extra: Mapping[str, str], home: str, tmp: str) -> dict[str, str]:
    """A minimal environment: PATH and locale from the host, pinned hash seed and time zone.

    ``extra`` is the caller's; secret-looking names are dropped from it too. The hash seed is 0
    unless ``extra`` pins another (``PYTHONHASHSEED``: a digit string).
    """
    env = {name: os.environ[name] for name in _PASSED_THROUGH if name in os.environ}
    env.update({k: v for k, v in extra.items() if not _SECRET_PATTERN.search(k)})
    env.update({
        "HOME": home,
        "TMPDIR": tmp,
        "PYTHONHASHSEED": extra["PYTHONHASHSEED"] if str(extra.get("PYTHONHASHSEED", "")).isdigit() else "0",
        "TZ": "UTC",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "NO_COLOR": "1",
    })
    return env


#: pytest's switch that leaves out the plugins installed packages register (entry points).
PLUGIN_AUTOLOAD_OFF = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"


def own_interpreter_environment(interpreter: str) -> dict[str, str]:
    """What a suite run by EQUISA's own interpreter gets beside the scrubbed environment: pytest
    without the plugins of EQUISA's own dependencies (hypothesis, anyio, pytest-cov), which the
    suite never declared (that interpreter runs only a repository that declares no environment), and
    whose import cost about 0.2 s of CPU in every run (0.7 s when not compiled; bench/README.md,
    "The first command"). Empty for any other interpreter: a suite's own plugins are its business."""
    return {PLUGIN_AUTOLOAD_OFF: "1"} if interpreter == sys.executable else {}


def import_roots(repo: Path) -> list[str]:
    """The folders of a repository's copy that go first on the suite's ``PYTHONPATH``, relative: the
    copy must be what runs, whatever the interpreter's site-packages hold (an editable install of
    the original tree, a ``.pth`` entry). The root itself is on ``sys.path`` already
    (``python -m pytest`` from it); a src layout (``src/`` holding a package or a module, or
    setuptools' ``package-dir`` root) adds that folder, as an install of the project would."""
    roots = []
    source = repo / "src"
    if source.is_dir() and any(p.suffix == ".py" or (p / "__init__.py").is_file() for p in source.iterdir()):
        roots.append("src")
    try:
        pyproject = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        pyproject = {}
    package_dir = pyproject.get("tool", {}).get("setuptools", {}).get("package-dir", {})
    root = package_dir.get("") if isinstance(package_dir, dict) else None
    if isinstance(root, str) and root.strip("/.") and (repo / root).is_dir() and root.strip("/") not in roots:
        roots.append(root.strip("/"))
    return roots


def prepare_run_folder(request: RunRequest, folder: Path, probe_bytecode: Path | None = None) -> Path:
    """Make ``folder`` hold ``repo/`` (workspace copy + overlay), ``probe/``, ``home/``, ``tmp/``.
    ``probe_bytecode``: the probe compiled for the run's interpreter, put there instead of its
    source (``tasks.sandbox.probe_bytecode``).

    Returns the repository copy. Files are copied (never linked) so the run cannot reach the
    snapshot.
    """
    repo = folder / "repo"
    shutil.copytree(request.workspace, repo, symlinks=True, copy_function=shutil.copy)
    for relative, text in request.overlay.items():
        target = repo / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink():
            target.unlink()
        target.write_text(text, encoding="utf-8")
    _make_writable(repo)
    (folder / "probe").mkdir()
    if probe_bytecode is not None:
        shutil.copyfile(probe_bytecode, folder / "probe" / f"{PROBE_MODULE}.pyc")
    else:
        shutil.copyfile(probe_file(), folder / "probe" / f"{PROBE_MODULE}.py")
    for name in ("home", "tmp", "out"):
        (folder / name).mkdir()
    if request.only is not None:
        (folder / "out" / "select.txt").write_text("".join(f"{t}\n" for t in request.only))
    if request.limits.per_test:
        (folder / "out" / "test_limits.json").write_text(json.dumps(request.test_limits()), encoding="utf-8")
    if request.record:
        (folder / "out" / "record.txt").write_text("".join(f"{fqn}\n" for fqn in request.record))
    if request.mutants:
        specs = [mutant.model_dump() for mutant in request.mutants]
        (folder / "out" / "mutants.json").write_text(json.dumps(specs), encoding="utf-8")
        if request.mutants_must_fix:
            (folder / "out" / "must_fix.txt").write_text("".join(f"{t}\n" for t in request.mutants_must_fix))
        if request.mutants_confirm:
            (folder / "out" / "confirm.json").write_text(
                json.dumps(confirmation_payload(request.mutants_confirm)), encoding="utf-8")
    return repo


def confirmation_payload(tests: Mapping[str, tuple[TestOutcome, float | None]]) -> dict[str, list]:
    """``RunRequest.mutants_confirm`` as the probe reads it: node id -> [outcome, duration]."""
    return {test: [TestOutcome(outcome).value, duration]
            for test, (outcome, duration) in sorted(tests.items())}


def _make_writable(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | 0o200)


def probe_arguments(request: RunRequest, repo: str, out_dir: str, serve_file: str | None = None) -> list[str]:
    """``pytest`` arguments (after ``-m pytest``) as seen from inside the sandbox. ``serve_file``:
    after the run, a pristine fork serves the mutant run this file will hold (``--equisa-serve``),
    waiting for it up to the run's wall clock."""
    args = [
        "-p", PROBE_MODULE,
        f"--equisa-out={out_dir}/probe.jsonl",
        f"--equisa-root={repo}",
        f"--equisa-trace={1 if request.trace else 0}",
        "-p", "no:cacheprovider",
        "-q", "-rN", "--tb=no", "--show-capture=no", "--rootdir", repo,
        # A module that does not import is reported (CollectError) while the rest still runs; when
        # nothing collects, ``run_tests`` raises CollectionError.
        "--continue-on-collection-errors",
    ]
    if request.limits.test_timeout_s:
        args.append(f"--equisa-test-timeout={request.limits.test_timeout_s:g}")
    if request.limits.per_test:
        args.append(f"--equisa-test-limits={out_dir}/test_limits.json")
    if request.only is not None:
        args.append(f"--equisa-select={out_dir}/select.txt")
    if request.shard is not None:
        args.append(f"--equisa-shard={request.shard[0]}/{request.shard[1]}")
    if request.order_seed is not None:
        args.append(f"--equisa-order-seed={request.order_seed}")
    if request.record:
        args.append(f"--equisa-record={out_dir}/record.txt")
    if request.rerun_failures:
        args.append(f"--equisa-rerun-failures={MAX_FLAKY_RERUNS}")
    if serve_file is not None:
        args += [f"--equisa-serve={serve_file}", f"--equisa-serve-limit={request.limits.wall_clock_s:g}"]
    if request.mutants:
        args.append(f"--equisa-mutants={out_dir}/mutants.json")
        if request.mutants_fail_fast:
            args.append("--equisa-mutants-fail-fast")
        if request.mutants_must_fix:
            args.append(f"--equisa-mutants-must-fix={out_dir}/must_fix.txt")
        if request.mutants_confirm:
            args.append(f"--equisa-mutants-confirm={out_dir}/confirm.json")
        if request.mutants_budget_s is not None:
            args.append(f"--equisa-mutants-budget={request.mutants_budget_s:g}")
    return [*args, *request.tests]


def cap_text(data: bytes, limit: int) -> str:
    """The last ``limit`` bytes of ``data`` as text, marked when cut."""
    if len(data) <= limit:
        return data.decode("utf-8", errors="replace")
    return "...[truncated]...\n" + data[-limit:].decode("utf-8", errors="replace")


def tail_records(path: Path, offset: int, on_record: RecordCallback) -> int:
    """Report the complete JSON lines written to ``path`` after ``offset``; return the new offset."""
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            chunk = handle.read()
    except FileNotFoundError:
        return offset
    complete = chunk[: chunk.rfind(b"\n") + 1]
    for line in complete.splitlines():
        try:
            on_record(json.loads(line))
        except json.JSONDecodeError:
            continue
    return offset + len(complete)

"""EQUISA's one error hierarchy.

Every error a user can cause or meet carries a one-line message and a distinct process exit code;
the CLI prints ``equisa: <message>`` and exits with ``exit_code``, never a traceback. Third-party
errors are translated into these at the boundary where they occur.

    EquisaError (1)
    ├── InputError (3)                 bad input from the user
    │   ├── RepositoryNotFoundError    the path is missing or not a directory
    │   └── InvalidSelectionError      a test selection that names nothing
    ├── InterpreterError (4)           the target interpreter is missing, too old or lacks pytest
    ├── NoTestsCollectedError (5)      the suite collected zero tests
    ├── CollectionError (6)            the suite does not import / collect
    ├── SuiteCrashedError (7)          the interpreter died mid-run; partial results are kept
    ├── SourceEditError (8)            a source edit cannot be made
    │   ├── FunctionNotFoundError      no function with that FQN in the file
    │   └── InvalidReplacementError    the new code does not parse or changes the signature
    ├── ProbeProtocolError (9)         the probe's output cannot be read
    ├── WeakSandboxError (14)          unreviewed code would run where the sandbox cannot confine files
    ├── EnvironmentFailureError (15)   every failing test fails for want of a third-party module: the
    │                                  environment, not the code, is at fault
    ├── NothingToLocalizeError (20)    no test fails: not a failure of EQUISA, nothing to do
    ├── ApplyRefusedError (23)         --apply on a dirty git tree (or files changed since the run)
    ├── PatchApplyError (24)           the accepted diff does not apply to the user's tree
    ├── TestgenTargetError (30)        ``equisa testgen --target``: missing, outside, not Python, unparsable
    ├── CoverageUnavailableError (32)  coverage.py cannot run in the suite's interpreter
    ├── StorageError (40)              the artifact store cannot be reached (S3 endpoint down)
    │   ├── StorageAccessError (41)    the store rejected the credentials or denied access
    │   └── BucketNotFoundError (42)   the bucket does not exist
    ├── HistoryError (43)              the DuckDB history file is corrupt, of a newer schema or locked
    ├── RunNotFoundError (44)          no recorded run has that id
    ├── RepositoriesFileError (50)     a batch's repositories file is missing, not YAML or invalid
    ├── TaskRunnerError (52)           the chosen fan-out task runner is not available
    ├── TriggerError (53)              ``equisa trigger`` could not post its event
    ├── DeployError (54)               ``equisa deploy`` could not deploy ``prefect.yaml``
    └── PrefectServerError (55)        the shared local Prefect server could not start
                                       (flow commands fall back to Prefect's temporary server)

A run never fails on storage: artifacts and history rows it cannot write are spooled locally and
flushed later (``equisa flush``); the storage errors reach the user from ``flush``, ``history`` and
``report``.

``equisa repair`` also exits 21 (a patch passed the suite but only overfits: plausible only) and
22 (no patch found); those are outcomes, not errors (``EXIT_PLAUSIBLE_ONLY``, ``EXIT_NOT_FIXED``).
``equisa batch`` exits 51 when the batch ran to its end but some repository's run failed
(``EXIT_BATCH_FAILURES``).
"""

from __future__ import annotations

__all__ = [
    "EquisaError",
    "InputError",
    "RepositoryNotFoundError",
    "InvalidSelectionError",
    "InterpreterError",
    "NoTestsCollectedError",
    "CollectionError",
    "SuiteCrashedError",
    "SourceEditError",
    "FunctionNotFoundError",
    "InvalidReplacementError",
    "ProbeProtocolError",
    "WeakSandboxError",
    "NothingToLocalizeError",
    "ApplyRefusedError",
    "PatchApplyError",
    "TestgenTargetError",
    "CoverageUnavailableError",
    "StorageError",
    "StorageAccessError",
    "BucketNotFoundError",
    "HistoryError",
    "RunNotFoundError",
    "RepositoriesFileError",
    "TaskRunnerError",
    "TriggerError",
    "DeployError",
    "PrefectServerError",
    "EnvironmentFailureError",
    "EXIT_BATCH_FAILURES",
    "EXIT_OK",
    "EXIT_PLAUSIBLE_ONLY",
    "EXIT_NOT_FIXED",
    "EXIT_USAGE",
    "EXIT_INTERNAL",
]

EXIT_OK = 0
#: argparse's own code for a malformed command line.
EXIT_USAGE = 2
#: An unexpected exception: a bug in EQUISA, reported with a traceback only under ``--debug``.
EXIT_INTERNAL = 70
#: ``equisa repair`` found patches that pass the suite but fail the anti-overfitting checks.
EXIT_PLAUSIBLE_ONLY = 21
#: ``equisa repair`` found no patch that passes the suite.
EXIT_NOT_FIXED = 22
#: ``equisa batch`` ran every repository, but the run of at least one of them failed.
EXIT_BATCH_FAILURES = 51


class EquisaError(Exception):
    """Base of every error EQUISA raises on purpose."""

    exit_code: int = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InputError(EquisaError):
    """The user gave input EQUISA cannot work with."""

    exit_code = 3


class RepositoryNotFoundError(InputError):
    """The repository path does not exist or is not a directory."""


class InvalidSelectionError(InputError):
    """A test selection that is empty or malformed."""


class InterpreterError(EquisaError):
    """The target interpreter does not exist, cannot run, is older than 3.8 or lacks pytest."""

    exit_code = 4


class NoTestsCollectedError(EquisaError):
    """The test suite collected no tests."""

    exit_code = 5


class CollectionError(EquisaError):
    """The test suite failed to import or collect."""

    exit_code = 6


class SuiteCrashedError(EquisaError):
    """The interpreter running the suite died before the suite finished.

    ``partial`` holds whatever result object the caller could build from the outcomes recorded
    before the crash.
    """

    exit_code = 7

    def __init__(self, message: str, partial: object | None = None) -> None:
        super().__init__(message)
        self.partial = partial


class SourceEditError(EquisaError):
    """A source edit cannot be made."""

    exit_code = 8


class FunctionNotFoundError(SourceEditError):
    """No function with the requested FQN exists in the file."""


class InvalidReplacementError(SourceEditError):
    """Replacement code does not parse, is not one function, or changes the signature."""


class ProbeProtocolError(EquisaError):
    """The probe's JSON-lines output is missing or malformed."""

    exit_code = 9


class WeakSandboxError(EquisaError):
    """Unreviewed code (generated tests, inspection patches, fixes) would run in a sandbox that cannot
    confine file writes, and the user did not accept that (``--allow-weak-sandbox``, ``--sandbox none``)."""

    exit_code = 14


class EnvironmentFailureError(EquisaError):
    """Every failing test fails because a module from outside the repository cannot be imported
    (``ModuleNotFoundError``): localizing would blame the code for what the interpreter lacks."""

    exit_code = 15


class NothingToLocalizeError(EquisaError):
    """Every test passes (flaky ones aside): there is no failure to localize or repair."""

    exit_code = 20


class ApplyRefusedError(EquisaError):
    """``--apply`` was refused: the git tree is dirty, or the files changed since the run."""

    exit_code = 23


class PatchApplyError(EquisaError):
    """The accepted diff does not apply to the user's tree."""

    exit_code = 24


class StorageError(EquisaError):
    """The artifact store cannot be reached (endpoint down, timeouts, server errors)."""

    exit_code = 40


class StorageAccessError(StorageError):
    """The artifact store rejected the credentials or denied access."""

    exit_code = 41


class BucketNotFoundError(StorageError):
    """The configured bucket does not exist."""

    exit_code = 42


class HistoryError(EquisaError):
    """The DuckDB history cannot be used: corrupt, of a newer schema, or locked for too long."""

    exit_code = 43


class RunNotFoundError(EquisaError):
    """No recorded run has the requested id."""

    exit_code = 44


class RepositoriesFileError(InputError):
    """A batch's repositories file is missing, is not YAML, or does not validate."""

    exit_code = 50


class TaskRunnerError(EquisaError):
    """The chosen fan-out task runner cannot be used (not installed, scheduler unreachable)."""

    exit_code = 52


class TriggerError(EquisaError):
    """``equisa trigger`` could not post its event (no server, refused credentials, bad answer)."""

    exit_code = 53


class DeployError(EquisaError):
    """``equisa deploy`` could not deploy ``deployments/prefect.yaml``."""

    exit_code = 54


class TestgenTargetError(InputError):
    """``equisa testgen --target``: the file is missing, outside the repository, not Python or unparsable."""

    __test__ = False  # not a pytest class
    exit_code = 30


class CoverageUnavailableError(EquisaError):
    """coverage.py cannot be imported in the suite's interpreter (nor borrowed from EQUISA's)."""

    exit_code = 32


class PrefectServerError(EquisaError):
    """The shared local Prefect server could not start (port taken, no answer in time, folder not
    writable). Flow commands then run on Prefect's temporary server with one warning line; only
    ``equisa server start`` exits with this code."""

    exit_code = 55

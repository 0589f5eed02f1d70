"""EQUISA's one error hierarchy, and the meaning of every exit code the ``equisa`` command returns.

Every error a user can cause or meet carries a one-line message and a distinct process exit code;
the CLI prints ``equisa: <message>`` and exits with ``exit_code`` (``exit_code_for``, the one place
that maps errors to codes), never a traceback. Third-party errors are translated into these at the
boundary where they occur. Each class that introduces a code says what it means to the user
(``meaning``); docs/exit-codes.md's table of exit codes is ``exit_code_table()``, and a test keeps them equal.

    EquisaError (1)                    an error with no code of its own
    ├── InputError (3)                 bad input from the user
    │   ├── RepositoryNotFoundError    the path is missing or not a directory
    │   │   └── CloneError             the repository URL cannot be cloned
    │   ├── InvalidSelectionError      a test selection that names nothing
    │   ├── RefNotFoundError           the branch, tag or commit does not exist
    │   ├── TestgenTargetError (30)    ``equisa testgen --target``: missing, outside, not Python, unparsable
    │   └── RepositoriesFileError (50) a batch's repositories file is missing, not YAML or invalid
    ├── WorkspaceError (1)             the snapshot cannot be made (git missing, disk full)
    ├── InterpreterError (4)           the target interpreter is missing, too old or lacks pytest
    ├── NoTestsCollectedError (5)      the suite collected zero tests
    ├── CollectionError (6)            the suite does not import / collect
    ├── SuiteCrashedError (7)          the interpreter died mid-run; partial results are kept
    ├── SourceEditError (8)            a source edit cannot be made
    │   ├── FunctionNotFoundError      no function with that FQN in the file
    │   └── InvalidReplacementError    the new code does not parse or changes the signature
    ├── ProbeProtocolError (9)         the probe's output cannot be read
    ├── SandboxInfrastructureError (10) the sandbox itself failed (engine down, isolation tool broken)
    ├── LLMError (11)                  an LLM step failed
    │   ├── LLMUnavailableError (11)   no answer: rate limits, 5xx, timeouts, connection errors or
    │   │                              unreadable responses outlasted the retries and the fallback
    │   ├── LLMRequestError (12)       the request cannot succeed as configured: no endpoint,
    │   │                              authentication, unknown model, request rejected (4xx)
    │   └── InvalidAnswerError (13)    the model answered, but not with a usable function, even
    │                                  after the bounded re-asks
    ├── WeakSandboxError (14)          unreviewed code would run where the sandbox cannot confine files
    ├── EnvironmentFailureError (15)   every failing test fails for want of a third-party module: the
    │                                  environment, not the code, is at fault
    ├── EnvironmentBuildError (16)     the test environment could not be built (uv failed, or no
    │                                  interpreter here satisfies the project's requires-python)
    ├── NoProjectCodeError (17)        the failing tests ran no function of the repository's copy
    ├── DoctorError (18)               ``equisa doctor``: a part a run needs is missing or broken
    ├── NothingToLocalizeError (20)    no test fails: not a failure of EQUISA, nothing to do
    ├── BudgetSpentError (26)          a sandboxed run was cut at the run's deadline (``--max-seconds``):
    │                                  the drivers stop on it with what they have; it reaches the user
    │                                  only when the budget ran out before the suite was traced
    ├── ApplyRefusedError (23)         --apply on a dirty git tree (or files changed since the run)
    ├── PatchApplyError (24)           the accepted diff does not apply to the user's tree
    ├── CoverageUnavailableError (32)  coverage.py cannot run in the suite's interpreter
    ├── StorageError (40)              the artifact store cannot be reached (S3 endpoint down)
    │   ├── StorageAccessError (41)    the store rejected the credentials or denied access
    │   └── BucketNotFoundError (42)   the bucket does not exist
    ├── HistoryError (43)              the DuckDB history file is corrupt, of a newer schema or locked
    ├── RunNotFoundError (44)          no recorded run has that id
    ├── TaskRunnerError (52)           the chosen fan-out task runner is not available
    ├── TriggerError (53)              ``equisa trigger`` could not post its event
    ├── DeployError (54)               ``equisa deploy`` could not deploy ``prefect.yaml``
    ├── PrefectServerError (55)        the shared local Prefect server could not start
    │                                  (flow commands fall back to Prefect's temporary server)
    ├── PushError (60)                 ``--push``: the fix branch could not be built or pushed
    └── ForgeError (61)                ``--open-pr``: the forge's REST API refused the request (404,
        │                              a 422 other than an existing pull request, another status)
        ├── ForgeAuthError (62)        no token in the environment, or the forge refused it (401, 403)
        └── ForgeTimeoutError (63)     the forge's API did not answer in time (or cannot be reached)

The errors of the task layer and of the model's text (``WorkspaceError`` and the clone and ref
errors of ``tasks.run.workspace``, ``SandboxInfrastructureError`` of ``tasks.sandbox.contract``, the LLM errors of
``equisa_core.common.llm_text`` and ``tasks.llm``) are defined here and re-exported there.

A run never fails on storage: artifacts and history rows it cannot write are spooled locally and
flushed later (``equisa flush``); the storage errors reach the user from ``flush``, ``history`` and
``report``.

Some codes are outcomes, not errors (``OUTCOMES``): ``equisa repair`` exits 21 (a patch passed the
suite but only overfits: plausible only) and 22 (no patch found), 26 when its time budget
(``--max-seconds``) stopped it (the report holds the best found so far); ``equisa batch`` exits 51 when
the batch ran to its end but some repository's run failed (an outcome such as not fixed, or a
localization inside a repair that did not converge, is no failed run); 2 is argparse's, 70 a bug, 130
Ctrl-C. ``repair`` exits on its repair's outcome alone (0, 21, 22, 26), whether or not its
localization converged.

``equisa localize`` exits 0 whenever it produced a ranking, converged or not: the report's
``converged`` and ``stopped_because`` (also in the SARIF log's run properties and the printed summary)
say which. Only ``--fail-unless-converged`` (``ConvergenceOptions``) makes a ranking that did not
converge a failing exit: 25, or 26 when the time budget stopped the run (``localize_exit_code``). The
history records a localization's outcome as its status (``converged``, ``not_converged``) with the
exit code of the outcome alone (0); the option changes only what the command returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

__all__ = [
    "EquisaError",
    "InputError",
    "RepositoryNotFoundError",
    "CloneError",
    "InvalidSelectionError",
    "RefNotFoundError",
    "ConfigurationError",
    "WorkspaceError",
    "InterpreterError",
    "NoTestsCollectedError",
    "CollectionError",
    "SuiteCrashedError",
    "SourceEditError",
    "FunctionNotFoundError",
    "InvalidReplacementError",
    "ProbeProtocolError",
    "SandboxInfrastructureError",
    "LLMError",
    "LLMUnavailableError",
    "LLMRequestError",
    "InvalidAnswerError",
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
    "PushError",
    "ForgeError",
    "ForgeAuthError",
    "ForgeTimeoutError",
    "EnvironmentFailureError",
    "EnvironmentBuildError",
    "NoProjectCodeError",
    "DoctorError",
    "EXIT_BATCH_FAILURES",
    "EXIT_OK",
    "EXIT_PLAUSIBLE_ONLY",
    "EXIT_NOT_FIXED",
    "EXIT_NOT_CONVERGED",
    "EXIT_BUDGET_SPENT",
    "BUDGET_SPENT",
    "BudgetSpentError",
    "budget_spent",
    "EXIT_USAGE",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "OUTCOMES",
    "localize_exit_code",
    "repair_exit_code",
    "error_classes",
    "exit_code_for",
    "exit_code_meanings",
    "exit_code_table",
]

EXIT_OK = 0
#: argparse's own code for a malformed command line.
EXIT_USAGE = 2
#: An unexpected exception: a bug in EQUISA, reported with a traceback only under ``--debug``.
EXIT_INTERNAL = 70
#: The user interrupted the command (Ctrl-C): the shell's 128 + SIGINT.
EXIT_INTERRUPTED = 130
#: ``equisa repair`` found patches that pass the suite but fail the anti-overfitting checks.
EXIT_PLAUSIBLE_ONLY = 21
#: ``equisa repair`` found no patch that passes the suite.
EXIT_NOT_FIXED = 22
#: ``equisa localize --fail-unless-converged`` ran to its end, but no function reached the confidence
#: threshold (0.9): the ranking is a best guess. An outcome, not an error: the report is written and
#: the run recorded. Without the option such a run exits 0.
EXIT_NOT_CONVERGED = 25
#: ``equisa repair`` (or ``localize --fail-unless-converged``) stopped because its time budget
#: (``--max-seconds``) ran out: the report holds the best found so far (the ranking, a plausible
#: candidate validated before the deadline). An outcome, not an error. A repair that found a fix
#: before the deadline exits 0; a localization without the option exits 0 on its ranking. Also the
#: code of ``BudgetSpentError``: the budget ran out before the suite was traced (no ranking).
EXIT_BUDGET_SPENT = 26
#: How a report's ``stopped_because`` begins when the time budget stopped the run.
BUDGET_SPENT = "time budget"
#: ``equisa batch`` ran every repository, but the run of at least one of them failed.
EXIT_BATCH_FAILURES = 51

#: The codes that are outcomes, not errors, and what each means to the user (docs/exit-codes.md's wording).
OUTCOMES: dict[int, str] = {
    EXIT_OK: "success; for `equisa localize`: a ranking was produced, converged or not (the report's "
             "`converged` and `stopped_because` say which; `--fail-unless-converged` makes not converged 25)",
    EXIT_USAGE: "malformed command line",
    EXIT_PLAUSIBLE_ONLY: "`equisa repair`: plausible only — a patch passed the suite, but a check weighs "
                         "against it or the evidence does not reach a fix (it is still reported, not applied)",
    EXIT_NOT_FIXED: "`equisa repair`: not fixed — no candidate passed the suite",
    EXIT_NOT_CONVERGED: "`equisa localize --fail-unless-converged`: not converged — no function reached "
                        "the confidence threshold; the ranking (a best guess) and the report are still "
                        "written. Without the option a ranking exits 0, converged or not (the report's "
                        "`converged` and `stopped_because` say which)",
    EXIT_BUDGET_SPENT: "`equisa repair`, `localize --fail-unless-converged`: the time budget "
                       "(`--max-seconds`; repair 120 s, localize 1800 s) ran out: the run stopped by "
                       "itself and wrote its report with the best found so far (the ranking, a plausible "
                       "candidate validated before the deadline, `stopped_because`); a repair fixed before "
                       "the deadline exits 0, a localization without the option exits 0 on its ranking; "
                       "any command whose budget ran out before the suite was traced exits 26",
    EXIT_BATCH_FAILURES: "`equisa batch`: the batch ran to its end, but at least one repository's run "
                         "failed (see its row)",
    EXIT_INTERNAL: "internal error (a bug in EQUISA; `--debug` shows the traceback)",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
}


def budget_spent(stopped_because: str | None) -> bool:
    """Whether a report's ``stopped_because`` says the time budget stopped the run."""
    return (stopped_because or "").startswith(BUDGET_SPENT)


def localize_exit_code(converged: bool, stopped_because: str | None = None,
                       fail_unless_converged: bool = False) -> int:
    """``equisa localize``'s exit code for a ranking it produced: 0, converged or not. Under
    ``--fail-unless-converged`` a ranking that did not converge is 26 when the time budget stopped
    the run, else 25 (not converged)."""
    if converged or not fail_unless_converged:
        return EXIT_OK
    return EXIT_BUDGET_SPENT if budget_spent(stopped_because) else EXIT_NOT_CONVERGED


def repair_exit_code(status: str, stopped_because: str | None = None) -> int:
    """``equisa repair``'s exit code for its status: fixed 0; else 26 when the time budget stopped the
    run (a plausible patch found before it included); else plausible only 21, anything else 22.
    Whether its localization converged does not change it."""
    if status != "fixed" and budget_spent(stopped_because):
        return EXIT_BUDGET_SPENT
    return {"fixed": EXIT_OK, "plausible_only": EXIT_PLAUSIBLE_ONLY}.get(status, EXIT_NOT_FIXED)


class EquisaError(Exception):
    """Base of every error EQUISA raises on purpose.

    A class that sets its own ``exit_code`` also sets ``meaning``: what the code tells the user, as
    docs/exit-codes.md's table of exit codes shows it. Subclasses that keep their parent's code keep its
    meaning.
    """

    exit_code: ClassVar[int] = 1
    meaning: ClassVar[str] = ("an error with no code of its own: the repository's snapshot cannot be "
                              "made (git missing, disk full), or a file EQUISA ships cannot be read")

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# --- input ---------------------------------------------------------------------------------------


class InputError(EquisaError):
    """The user gave input EQUISA cannot work with."""

    exit_code = 3
    meaning = ("bad input: the path is missing or not a folder (or the URL cannot be cloned, the ref "
               "does not exist), pytest rejected `--tests`, or a setting (`[tool.equisa]`, `EQUISA_*`) "
               "is unknown or invalid")


class RepositoryNotFoundError(InputError):
    """The repository path does not exist or is not a directory."""


class CloneError(RepositoryNotFoundError):
    """The repository URL cannot be cloned (missing, unreachable or not a repository)."""


class InvalidSelectionError(InputError):
    """A test selection that is empty or malformed."""


class RefNotFoundError(InputError):
    """The branch, tag or commit does not exist in the repository."""


class ConfigurationError(InputError):
    """A setting of ``[tool.equisa]`` in the target's ``pyproject.toml``, or an ``EQUISA_*`` variable,
    that is no option or that its option refuses (``cli/settings.py``)."""


class TestgenTargetError(InputError):
    """``equisa testgen --target``: the file is missing, outside the repository, not Python or unparsable."""

    __test__ = False  # not a pytest class
    exit_code = 30
    meaning = "`equisa testgen`: the `--target` file is missing, outside PATH, not Python, or does not parse"


class RepositoriesFileError(InputError):
    """A batch's repositories file is missing, is not YAML, or does not validate."""

    exit_code = 50
    meaning = ("`equisa batch`: the repositories file is missing, not YAML, or invalid (the entry and "
               "key are named)")


class WorkspaceError(EquisaError):
    """The snapshot cannot be made for a reason that is not the input's (git missing, disk full)."""


# --- the suite and its interpreter ---------------------------------------------------------------


class InterpreterError(EquisaError):
    """The target interpreter does not exist, cannot run, is older than 3.8 or lacks pytest."""

    exit_code = 4
    meaning = "the interpreter does not exist, does not run, is older than 3.8 or lacks pytest"


class NoTestsCollectedError(EquisaError):
    """The test suite collected no tests."""

    exit_code = 5
    meaning = "no tests collected"


class CollectionError(EquisaError):
    """The test suite failed to import or collect."""

    exit_code = 6
    meaning = ("the suite does not import at all (modules that fail to collect are otherwise reported "
               "and the rest runs)")


class SuiteCrashedError(EquisaError):
    """The interpreter running the suite died before the suite finished.

    ``partial`` holds whatever result object the caller could build from the outcomes recorded
    before the crash.
    """

    exit_code = 7
    meaning = "the suite crashed or timed out; the outcomes recorded before are still written"

    def __init__(self, message: str, partial: object | None = None) -> None:
        super().__init__(message)
        self.partial = partial


class SourceEditError(EquisaError):
    """A source edit cannot be made."""

    exit_code = 8
    meaning = "a source edit could not be made"


class FunctionNotFoundError(SourceEditError):
    """No function with the requested FQN exists in the file."""


class InvalidReplacementError(SourceEditError):
    """Replacement code does not parse, is not one function, or changes the signature."""


class ProbeProtocolError(EquisaError):
    """The probe's JSON-lines output is missing or malformed."""

    exit_code = 9
    meaning = "the probe's output could not be read"


class SandboxInfrastructureError(EquisaError):
    """The sandbox itself failed (engine down, isolation tool broken): worth a retry.

    Never raised for anything the tests did; those are outcomes.
    """

    exit_code = 10
    meaning = "the sandbox itself failed (no Docker engine, image missing, isolation tool broken)"


# --- the model -----------------------------------------------------------------------------------


class LLMError(EquisaError):
    """An LLM step failed.

    ``calls`` holds the records (``equisa_core.common.cost.LLMCall``) of the calls made before the failure, so
    their tokens and cost are still accounted for; the task layer fills it in.
    """

    exit_code = 11
    meaning = "the model could not answer (after retries and the backup model)"

    def __init__(self, message: str, *, calls: Sequence[Any] = ()) -> None:
        super().__init__(message)
        self.calls: tuple[Any, ...] = tuple(calls)

    def __reduce__(self) -> tuple[Any, ...]:  # keep the keyword fields through pickling
        return (_rebuild, (type(self), self.message, self.__dict__))


class LLMUnavailableError(LLMError):
    """No answer: a transient failure (429, 5xx, timeout, connection, unreadable response).

    Raised by one attempt of an LLM call, retried by the task, and finally raised to the caller
    when the retries and the backup model are spent. ``model`` is the model that attempt asked,
    ``attempt`` its 1-based number, ``status_code`` the HTTP status (None without a response) and
    ``retry_after`` the server's Retry-After in seconds (None when absent). ``retryable`` is set by
    the task: False on the last attempt.
    """

    def __init__(
        self,
        message: str,
        *,
        model: str = "",
        attempt: int = 1,
        status_code: int | None = None,
        retry_after: float | None = None,
        retryable: bool = True,
        calls: Sequence[Any] = (),
    ) -> None:
        super().__init__(message, calls=calls)
        self.model = model
        self.attempt = attempt
        self.status_code = status_code
        self.retry_after = retry_after
        self.retryable = retryable


class LLMRequestError(LLMError):
    """The request cannot succeed as configured: retrying or falling back would not help."""

    exit_code = 12
    meaning = ("the model cannot be used as configured: it rejected the request (bad key), no endpoint "
               "is configured for `--llm`, or it has no known price while the run has a cost cap "
               "(`--price-input` and `--price-output`, or `--max-cost none`)")

    def __init__(self, message: str, *, status_code: int | None = None, calls: Sequence[Any] = ()) -> None:
        super().__init__(message, calls=calls)
        self.status_code = status_code


class InvalidAnswerError(LLMError):
    """The model's answer is not a usable function; ``answer`` is the text that was rejected."""

    exit_code = 13
    meaning = "the model kept giving unusable answers"

    def __init__(self, message: str, *, answer: str = "", calls: Sequence[Any] = ()) -> None:
        super().__init__(message, calls=calls)
        self.answer = answer


def _rebuild(cls: type[LLMError], message: str, state: dict[str, Any]) -> LLMError:
    """Unpickle an LLM error (their keyword-only fields defeat ``Exception``'s default)."""
    error = cls(message)
    error.__dict__.update(state)
    return error


# --- refusals and outcomes of a run --------------------------------------------------------------


class WeakSandboxError(EquisaError):
    """Unreviewed code (generated tests, inspection patches, fixes) would run in a sandbox that cannot
    confine file writes, and the user did not accept that (``--allow-weak-sandbox``, ``--sandbox none``)."""

    exit_code = 14
    meaning = ("the command would run generated code (tests, inspection patches, fixes) where the "
               "sandbox cannot confine file writes; `--allow-weak-sandbox` or `--sandbox none` accepts that")


class EnvironmentFailureError(EquisaError):
    """Every failing test fails because a module from outside the repository cannot be imported
    (``ModuleNotFoundError``): localizing would blame the code for what the interpreter lacks."""

    exit_code = 15
    meaning = ("every failing test fails because a module from outside the repository is missing "
               "(`ModuleNotFoundError`): install it in the suite's interpreter (`--python`); the JSON "
               "report is written with what is known")


class EnvironmentBuildError(EquisaError):
    """The suite's environment could not be built from what the repository declares: uv failed (its
    message is kept), or no interpreter on this machine satisfies the project's ``requires-python``."""

    exit_code = 16
    meaning = ("the test environment could not be built from what the repository declares (uv's message "
               "is shown), or no interpreter here satisfies its `requires-python`; `--python` or "
               "`--no-provision` runs the suite with another interpreter")


class NoProjectCodeError(EquisaError):
    """Tests fail, but no function of the repository's copy ran in the suite: a ranking would be
    empty. The code the tests import comes from elsewhere (a copy of the project installed in the
    interpreter shadows the repository's), or the failures lie in the tests alone."""

    exit_code = 17
    meaning = ("tests fail, but they ran no function of the repository: the code they import comes from "
               "elsewhere (an installed copy of the project?), or the failures lie in the tests alone")


class DoctorError(EquisaError):
    """``equisa doctor`` found a part a run needs missing or broken (its line says what to do)."""

    exit_code = 18
    meaning = ("`equisa doctor`: a part a run needs is missing or broken (the interpreter or its "
               "environment, the sandbox, the artifact store, the history, or a Prefect server or model "
               "endpoint that is configured but does not answer); its line says what to do")


class NothingToLocalizeError(EquisaError):
    """Every test passes (flaky ones aside): there is no failure to localize or repair."""

    exit_code = 20
    meaning = "nothing to localize: no test fails (not an error)"


class BudgetSpentError(EquisaError):
    """A sandboxed run was cut at the run's deadline (the time budget, ``--max-seconds``), before its
    own wall clock: what it gave is not its result, so it is neither used nor cached. The drivers
    catch it and stop their machine with what they have (``Clocked``); it ends a command only when
    the budget ran out before the suite was traced. Its code is the outcome's (``EXIT_BUDGET_SPENT``),
    with the outcome's meaning: the only error that shares an outcome's code, being that outcome."""

    exit_code = EXIT_BUDGET_SPENT
    meaning = OUTCOMES[EXIT_BUDGET_SPENT]


class ApplyRefusedError(EquisaError):
    """``--apply`` was refused: the git tree is dirty, or the files changed since the run."""

    exit_code = 23
    meaning = ("`--apply` refused: uncommitted changes under PATH in its git tree, or (outside git) the "
               "files changed since the run")


class PatchApplyError(EquisaError):
    """The accepted diff does not apply to the user's tree."""

    exit_code = 24
    meaning = "`--apply`: the accepted patch does not apply to the tree any more"


class CoverageUnavailableError(EquisaError):
    """coverage.py cannot be imported in the suite's interpreter (nor borrowed from EQUISA's)."""

    exit_code = 32
    meaning = ("`equisa testgen`: coverage.py cannot be imported in the suite's interpreter (nor from "
               "EQUISA's)")


# --- storage and history -------------------------------------------------------------------------


class StorageError(EquisaError):
    """The artifact store cannot be reached (endpoint down, timeouts, server errors)."""

    exit_code = 40
    meaning = ("`equisa flush`: the artifact store cannot be reached (runs themselves never fail on "
               "storage: they spool)")


class StorageAccessError(StorageError):
    """The artifact store rejected the credentials or denied access."""

    exit_code = 41
    meaning = "`equisa flush`: the store rejected the credentials or denied access"


class BucketNotFoundError(StorageError):
    """The configured bucket does not exist."""

    exit_code = 42
    meaning = "`equisa flush`: the bucket does not exist"


class HistoryError(EquisaError):
    """The DuckDB history cannot be used: corrupt, of a newer schema, or locked for too long."""

    exit_code = 43
    meaning = ("`equisa history`, `report`, `flush`: the DuckDB history is corrupt, of a newer schema, "
               "or stayed locked")


class RunNotFoundError(EquisaError):
    """No recorded run has the requested id."""

    exit_code = 44
    meaning = "`equisa report`: no recorded run has that id"


# --- operations: task runners, triggers, deployments, the Prefect server -------------------------


class TaskRunnerError(EquisaError):
    """The chosen fan-out task runner cannot be used (not installed, scheduler unreachable)."""

    exit_code = 52
    meaning = ("the chosen task runner cannot be used (an unknown `EQUISA_TASK_RUNNER`, Ray without "
               "`prefect-ray`)")


class TriggerError(EquisaError):
    """``equisa trigger`` could not post its event (no server, refused credentials, bad answer)."""

    exit_code = 53
    meaning = ("`equisa trigger`: the event did not arrive (no `PREFECT_API_URL`, server unreachable, "
               "credentials refused, no repository)")


class DeployError(EquisaError):
    """``equisa deploy`` could not deploy ``deployments/prefect.yaml``."""

    exit_code = 54
    meaning = "`equisa deploy`: no server, the work pool has another type, or `prefect deploy` failed"


class PrefectServerError(EquisaError):
    """The shared local Prefect server could not start (port taken, no answer in time, folder not
    writable). Flow commands then run on Prefect's temporary server with one warning line; only
    ``equisa server start`` exits with this code."""

    exit_code = 55
    meaning = ("`equisa server start`: the shared local Prefect server could not start (flow commands "
               "fall back to the temporary server instead)")


# --- publishing a fix: the pushed branch and the pull request ------------------------------------


class PushError(EquisaError):
    """``--push``: the fix branch could not be built (not a git work tree, uncommitted changes where the
    patch goes, a patch that does not apply to HEAD) or pushed (no such remote, push rejected)."""

    exit_code = 60
    meaning = ("`--push`: the fix branch could not be built (not a git work tree, uncommitted changes, the "
               "patch does not apply to HEAD) or pushed (no such remote, rejected)")


class ForgeError(EquisaError):
    """``--open-pr``: the forge's REST API refused the request or answered what cannot be read."""

    exit_code = 61
    meaning = ("`--open-pr`: the forge's API refused the pull request or its comment (404: no such "
               "repository or branch for this token; 422: the API's reason is shown)")


class ForgeAuthError(ForgeError):
    """No forge token in the environment (``GITHUB_TOKEN``, ``EQUISA_FORGE_TOKEN``), or the forge refused
    it (401, 403)."""

    exit_code = 62
    meaning = ("`--open-pr`: no token (`GITHUB_TOKEN` or `EQUISA_FORGE_TOKEN`), or the forge refused it "
               "(401, 403)")


class ForgeTimeoutError(ForgeError):
    """The forge's API did not answer within the timeout, or could not be reached at all."""

    exit_code = 63
    meaning = "`--open-pr`: the forge's API did not answer in time or cannot be reached"


# --- the map from errors to exit codes -----------------------------------------------------------


def exit_code_for(error: BaseException) -> int:
    """The process exit code for an error that ends a command: its own for an ``EquisaError``,
    ``EXIT_INTERRUPTED`` for Ctrl-C, ``EXIT_INTERNAL`` for anything else (a bug)."""
    if isinstance(error, EquisaError):
        return error.exit_code
    if isinstance(error, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    return EXIT_INTERNAL


def error_classes() -> list[type[EquisaError]]:
    """``EquisaError`` and every class of the tree, parents before their subclasses."""
    found: list[type[EquisaError]] = []
    pending: list[type[EquisaError]] = [EquisaError]
    while pending:
        cls = pending.pop(0)
        if cls.__module__ == EquisaError.__module__ and cls not in found:
            found.append(cls)
            pending.extend(cls.__subclasses__())
    return found


def exit_code_meanings() -> dict[int, str]:
    """Every exit code ``equisa`` returns and what it means, in ascending order: the outcomes and
    the codes the error classes introduce."""
    meanings = dict(OUTCOMES)
    for cls in error_classes():
        if "exit_code" in vars(cls):
            meanings[cls.exit_code] = cls.meaning
    return dict(sorted(meanings.items()))


def exit_code_table() -> str:
    """docs/exit-codes.md's table of exit codes, as Markdown (``python -m equisa_core.errors`` prints it)."""
    rows = [f"| {code} | {meaning} |" for code, meaning in exit_code_meanings().items()]
    return "\n".join(["| code | meaning |", "|---|---|", *rows]) + "\n"


if __name__ == "__main__":
    print(exit_code_table(), end="")

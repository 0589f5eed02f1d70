"""One error tree (issue 18): every error EQUISA raises to a user lives in ``equisa_core.errors``
with its exit code, no two unrelated errors share a code, and the table of exit codes in
docs/exit-codes.md is the tree's (``python -m equisa_core.errors`` prints it)."""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
import re
from pathlib import Path

import pytest

from equisa_core import errors
from equisa_core.errors import (
    BUDGET_SPENT,
    EXIT_BUDGET_SPENT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_NOT_CONVERGED,
    EXIT_OK,
    OUTCOMES,
    BudgetSpentError,
    EquisaError,
    HistoryError,
    LLMUnavailableError,
    RepositoryNotFoundError,
    error_classes,
    exit_code_for,
    exit_code_meanings,
    exit_code_table,
    localize_exit_code,
)

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("equisa_core", "tasks", "flows", "cli")

#: Exception classes defined outside the tree on purpose: signals that never leave their module
#: (or the probe's process), so no user meets them and they need no exit code.
INTERNAL_SIGNALS = {
    # The probe runs in the target's interpreter (3.8+, stdlib and pytest only): it cannot import
    # equisa_core, and these stay inside it.
    "equisa_core.probe.equisa_probe._NoBuild",
    "equisa_core.probe.equisa_probe.TestTimeout",
    "equisa_core.probe.equisa_probe.MutantUnswappable",
    # The shadow plugin runs in the target's interpreter too (3.8+, stdlib and pytest only): a shadow
    # call's time limit and a generator's exception, caught where they are raised.
    "equisa_core.validation.shadow_plugin.calls._CallTimeout",
    "equisa_core.validation.shadow_plugin.calls._GeneratorRaised",
    # The input search's driver runs in the target's interpreter as well: a compared call's time
    # limit, caught in _limited.
    "equisa_core.testgen.search_driver._Slow",
    # Private: raised and caught in equisa_core.common.build_code.
    "equisa_core.common.build_code._Unwritable",
    # Caught in build_patch_candidate and turned into a PatchEvaluation the model is told about.
    "equisa_core.repair.patch_format.PatchRejectedError",
    # Translated into PrefectServerError by tasks.prefect_server.server; the watchdog suppresses it.
    "tasks.prefect_server.watchdog.LockTimeout",
    # Carries a failed repository's result through Prefect's Failed state to the batch summary.
    "tasks.operations.batch_results.RepositoryFailed",
    # Private: a forge request to retry (no connection, 502-504); tasks.publish.forge_api translates it.
    "tasks.publish.forge_api._Unanswered",
    # Caught by cli.launcher: no warm worker can take the command, which then runs in its own process.
    "cli.warm_worker.WarmUnavailable",
}


def exception_classes_of(package: str) -> set[str]:
    """The qualified names of the exception classes the modules of ``package`` define."""
    root = importlib.import_module(package)
    names = {package} | {m.name for m in pkgutil.walk_packages(root.__path__, package + ".")}
    found = set()
    for name in sorted(names):
        module = importlib.import_module(name)
        for value in vars(module).values():
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == name:
                found.add(f"{name}.{value.__qualname__}")
    return found


def documented_table() -> str:
    text = (ROOT / "docs" / "exit-codes.md").read_text(encoding="utf-8")
    found = re.search(r"^\| code \| meaning \|\n(?:^\|.*\|\n)+", text, re.M)
    assert found, "docs/exit-codes.md has a table of exit codes"
    return found.group(0)


def test_every_exception_class_is_in_the_tree_or_a_known_internal_signal():
    defined = set().union(*(exception_classes_of(p) for p in PACKAGES))
    outside = {name for name in defined if not name.startswith("equisa_core.errors.")}
    assert outside - INTERNAL_SIGNALS == set(), "define these in equisa_core.errors (and re-export them)"
    assert INTERNAL_SIGNALS - outside == set(), "these are gone: remove them from INTERNAL_SIGNALS"


def test_the_errors_defined_elsewhere_before_are_re_exported_from_the_tree():
    from equisa_core.common import llm_text
    from tasks import llm
    from tasks.run import workspace
    from tasks.sandbox import contract as sandbox

    llm_errors = ("LLMError", "LLMUnavailableError", "LLMRequestError", "InvalidAnswerError")
    for module, names in ((llm_text, llm_errors), (llm, llm_errors),
                          (sandbox, ("SandboxInfrastructureError",)),
                          (workspace, ("CloneError", "RefNotFoundError", "WorkspaceError"))):
        for name in names:
            assert getattr(module, name) is getattr(errors, name)


def test_the_documented_table_is_the_trees():
    assert documented_table() == exit_code_table(), "regenerate it: python -m equisa_core.errors"


def test_each_code_belongs_to_one_class_and_its_subclasses():
    """No two unrelated errors share a code: the classes with one code all descend from the one
    class that sets it, and no error takes a code that is an outcome."""
    owners: dict[int, type[EquisaError]] = {}
    for cls in error_classes():
        if "exit_code" in vars(cls):
            taken = owners.get(cls.exit_code)
            assert taken is None, f"{cls.__name__} reuses {taken and taken.__name__}'s code"
            # BudgetSpentError is the budget's outcome (26) raised: the one error with an outcome's code
            assert cls.exit_code not in OUTCOMES or (cls is BudgetSpentError and cls.meaning == OUTCOMES[
                cls.exit_code]), f"{cls.__name__} takes an outcome's code"
            assert "meaning" in vars(cls), f"{cls.__name__} sets a code but not its meaning"
            owners[cls.exit_code] = cls
        else:
            assert "meaning" not in vars(cls), f"{cls.__name__} gives a meaning to its parent's code"
    for cls in error_classes():
        assert issubclass(cls, owners[cls.exit_code])


def test_the_table_lists_every_code_once_in_ascending_order():
    codes = [int(line.split("|")[1]) for line in exit_code_table().splitlines()[2:]]
    assert codes == sorted(set(codes)) == list(exit_code_meanings())
    assert {0, 1, 2, 3, 70, 130} <= set(codes)


@pytest.mark.parametrize(("error", "code"), [
    (RepositoryNotFoundError("no such path"), 3),
    (HistoryError("locked"), 43),
    (BudgetSpentError("cut at the deadline"), 26),
    (LLMUnavailableError("rate limited"), 11),
    (KeyboardInterrupt(), EXIT_INTERRUPTED),
    (ValueError("a bug"), EXIT_INTERNAL),
])
def test_exit_code_for_maps_an_error_to_its_code(error, code):
    assert exit_code_for(error) == code


@pytest.mark.parametrize(("converged", "stopped_because", "fail_unless_converged", "code"), [
    (True, "confidence 0.93 >= 0.9", False, EXIT_OK),
    (True, "confidence 0.93 >= 0.9", True, EXIT_OK),
    (False, "no inspection left is expected to move a confidence", False, EXIT_OK),
    (False, f"{BUDGET_SPENT} (20s) spent", False, EXIT_OK),
    (False, "no inspection left is expected to move a confidence", True, EXIT_NOT_CONVERGED),
    (False, f"{BUDGET_SPENT} (20s) spent", True, EXIT_BUDGET_SPENT),
])
def test_localize_exits_0_on_a_ranking_unless_asked_to_fail_unless_it_converged(
        converged: bool, stopped_because: str, fail_unless_converged: bool, code: int) -> None:
    """A ranking is a success, converged or not; ``--fail-unless-converged`` makes not converged 25,
    and 26 when the time budget stopped the run."""
    assert localize_exit_code(converged, stopped_because, fail_unless_converged) == code


def test_the_table_says_localize_exits_0_on_a_ranking_and_names_the_option():
    table = exit_code_table()
    row = {int(line.split("|")[1]): line for line in table.splitlines()[2:]}
    assert "converged or not" in row[EXIT_OK] and "--fail-unless-converged" in row[EXIT_OK]
    assert "--fail-unless-converged" in row[EXIT_NOT_CONVERGED]
    assert "--fail-unless-converged" in row[EXIT_BUDGET_SPENT]


def test_an_llm_error_keeps_its_fields_through_pickling_after_the_move():
    error = LLMUnavailableError("rate limited", model="m", attempt=3, status_code=429, calls=("c",))
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), copy.message, copy.model, copy.attempt, copy.status_code, copy.calls) == (
        LLMUnavailableError, "rate limited", "m", 3, 429, ("c",))

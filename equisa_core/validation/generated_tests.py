"""Which generated tests may judge a patch: the pinning rule for testgen's deterministic tests.

Deterministic testgen tests (carved, boundary-value and scratch-driver tests of ``flows.testgen``)
assert what the code does *now*. On a buggy program they can pin the bug: a boundary test of a
threshold at its minimum asserts the buggy ``False``, and the correct fix then makes it fail.
So such tests serve Discovery only as *splitting evidence* (their coverage spectra separate the
members of an ambiguity group); wherever a patch or a mutant is judged (Validation's regression
and carved-test checks, the repair's mutant screen, Localization's fix evidence) their outcomes are
left out, and Validation reports how many of them changed behaviour instead.

They are recognised by where Discovery puts them: modules named ``test_testgen_*`` under
``GENERATED_TESTS_DIR``. Discovery's carved tests (``test_carved_group_*``) are carved from the
suite's own executions with the failing tests' results left out (``equisa_core.testgen.carving``), and the
model's tests (``test_llm_group_*``) assert intended behaviour, so both keep counting.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

from equisa_core.testgen.interface import GENERATED_TESTS_DIR

__all__ = [
    "TESTGEN_MODULE_PREFIX",
    "testgen_module_path",
    "is_testgen_test",
    "split_testgen_tests",
    "without_testgen",
    "pinned_note",
]

_T = TypeVar("_T")

#: Path prefix (relative to the workspace root) of every module of testgen's tests.
TESTGEN_MODULE_PREFIX = f"{GENERATED_TESTS_DIR}/test_testgen_"


def testgen_module_path(stem: str) -> str:
    """The workspace path of a testgen module named after ``stem`` (``a/b.py`` -> ``a_b``)."""
    clean = stem.removesuffix(".py").replace("/", "_").replace(".", "_")
    return f"{TESTGEN_MODULE_PREFIX}{clean}.py"


testgen_module_path.__test__ = False  # type: ignore[attr-defined]  # its name is pytest's test prefix


def is_testgen_test(test_id: str) -> bool:
    """Whether a test id (or a module path) belongs to a testgen module: evidence, never a judge."""
    return test_id.split("::", 1)[0].startswith(TESTGEN_MODULE_PREFIX)


def split_testgen_tests(test_ids: Iterable[str]) -> tuple[list[str], list[str]]:
    """(tests that count, testgen tests that do not), each sorted."""
    counted: list[str] = []
    pinned: list[str] = []
    for test_id in sorted(test_ids):
        (pinned if is_testgen_test(test_id) else counted).append(test_id)
    return counted, pinned


def without_testgen(outcomes: Mapping[str, _T]) -> dict[str, _T]:
    """``outcomes`` (test id -> anything) without the testgen tests: what may judge a patch."""
    return {test_id: value for test_id, value in outcomes.items() if not is_testgen_test(test_id)}


def pinned_note(changed: int, total: int) -> str:
    """What Validation reports about the testgen tests a patch changed (``changed`` of ``total``)."""
    if not changed:
        return f"unchanged ({total} tests; not counted either way)"
    return (f"{changed} testgen tests changed behaviour (not counted: they assert the buggy "
            f"program's behaviour)")

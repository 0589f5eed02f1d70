"""The judge's second look at a Refactory patch: the patched program against the question's
reference (``code/reference/reference.py``) on inputs around the cases (``correct_ref``).

The hidden tests are few: a patch that passes them may still crash or answer wrongly next to them
(``search(1, (1, 5, 10))`` raising ``IndexError`` where the reference answers 0). The judge makes
its own inputs from every case's call (visible and hidden), one literal argument moved at a time
(``variants``), with rules of its own, not EQUISA's:

- a number: every number the call holds, each one off by one, and 0;
- a text: every text the call holds, and "";
- a list or tuple: empty, its first item only, without its first or last item, reversed, its
  first item doubled.

Each question's precondition keeps only the inputs its assignment allows (``VALID``: Q1's sequence
sorted without repeats, Q4's ages distinct, Q5's ``k`` from 0 to the list's length), and an input on which the
reference itself raises is skipped. Every input is one test (``reference_module``) run by plain
pytest under bubblewrap with the judge's 2 s alarm (``check``): the patched function's result must
equal the reference's (``==``; a crash or a time-out differs). Only the functions the patch changed
are called (``changed_functions``): a function the patch left alone may be wrong where no test looks
(Q2's ``unique_month`` called with a day), and that is not the patch's doing.

The reference is LGPL-3.0 data of Refactory, read from the cache at run time and written only into
the throwaway judge tree, like the cases.
"""

from __future__ import annotations

import ast
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from .judge import failing_of, sandboxed_pytest

__all__ = ["MAX_INPUTS", "VALID", "calls_to_check", "case_calls", "check", "reference_module", "variants",
           "changed_functions", "with_reference"]

#: At most this many inputs per program (the cases' own calls first).
MAX_INPUTS = 300


def _literals(node: ast.AST) -> list[object]:
    """The numbers and texts a literal holds, in order."""
    found: list[object] = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and type(sub.value) in (int, float, str):
            found.append(sub.value)
    return found


def _moved(value: object, held: Sequence[object]) -> list[object]:
    """The judge's neighbours of one argument's value (see the module)."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        numbers = [v for v in held if isinstance(v, int | float) and not isinstance(v, bool)]
        return [*numbers, *(n - 1 for n in numbers), *(n + 1 for n in numbers), 0]
    if isinstance(value, str):
        return [*(v for v in held if isinstance(v, str)), ""]
    if isinstance(value, list | tuple) and value:
        items = list(value)
        made = [[], items[:1], items[1:], items[:-1], items[::-1], [items[0], *items]]
        return [type(value)(m) for m in made]
    return []


def variants(call: str) -> Iterator[str]:
    """``call`` and the calls one literal argument away from it (see the module), deduplicated."""
    tree = ast.parse(call, mode="eval")
    if not isinstance(tree.body, ast.Call):
        return
    node = tree.body
    seen = {call}
    yield call
    held = _literals(node)
    for index, argument in enumerate(node.args):
        try:
            value = ast.literal_eval(argument)
        except ValueError:
            continue  # a name (Q2's tuple of birthdays): kept as it is
        for moved in _moved(value, held):
            args = [ast.unparse(a) for a in node.args]
            args[index] = repr(moved)
            text = f"{ast.unparse(node.func)}({', '.join(args)})"
            if text not in seen:
                seen.add(text)
                yield text


def _sorted_sequence(args: list[object]) -> bool:
    """Q1: a sequence sorted without repeats (where ``x`` equals a repeated item, two places are right)."""
    sequence = args[1] if len(args) > 1 else None
    return isinstance(sequence, list | tuple) and list(sequence) == sorted(set(sequence))


def _distinct_ages(args: list[object]) -> bool:
    people = args[0] if args else None
    if not isinstance(people, list) or not all(isinstance(p, tuple) and len(p) == 2 for p in people):
        return False
    ages = [p[1] for p in people]
    return len(set(ages)) == len(ages)


def _k_within(args: list[object]) -> bool:
    values, k = (args + [None, None])[:2]
    return isinstance(values, list) and isinstance(k, int) and 0 <= k <= len(values)


#: Each question's precondition on a call's literal arguments (a call with a name passes).
VALID: dict[int, Callable[[list[object]], bool]] = {
    1: _sorted_sequence,
    2: lambda args: True,
    3: lambda args: isinstance(args[0], list) if args else False,
    4: _distinct_ages,
    5: _k_within,
}


def _allowed(question: int, call: str) -> bool:
    node = ast.parse(call, mode="eval").body
    assert isinstance(node, ast.Call)
    try:
        args = [ast.literal_eval(a) for a in node.args]
    except ValueError:
        return True
    return VALID[question](args)


def reference_module(calls: Sequence[str], names: Sequence[str]) -> str:
    """One test per call: the reference's answer (the test skips when the reference raises), then
    the patched program's, which must equal it."""
    imports = ", ".join(sorted(names))
    lines = [
        "import pytest",
        "",
        "import reference_solution as reference",
        f"from solution import {imports}",
        "",
    ]
    for number, call in enumerate(calls):
        reference_call = f"reference.{call}"
        lines += [
            "",
            f"def test_reference_{number:03d}():",
            "    try:",
            f"        expected = {reference_call}",
            "    except Exception as error:",
            "        pytest.skip(f'the reference raises {type(error).__name__}')",
            f"    assert {call} == expected",
            "",
        ]
    text = "\n".join(lines)
    ast.parse(text)
    return text


def changed_functions(original: str, patched: str) -> set[str]:
    """The module-level functions whose code differs between two versions of a program (new ones too)."""
    def functions(source: str) -> dict[str, str]:
        return {n.name: ast.dump(n) for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}

    before, after = functions(original), functions(patched)
    return {name for name, code in after.items() if before.get(name) != code}


def _called(call: str) -> str:
    node = ast.parse(call, mode="eval").body
    return ast.unparse(node.func) if isinstance(node, ast.Call) else ""


def calls_to_check(question: int, case_calls: Sequence[str], functions: set[str] | None = None) -> list[str]:
    """The cases' calls (of ``functions`` only, when given: those the patch changed) and their
    variants that the question allows, at most ``MAX_INPUTS``."""
    chosen: list[str] = []
    seen: set[str] = set()
    for call in case_calls:
        if functions is not None and _called(call) not in functions:
            continue
        for text in variants(call):
            if text not in seen and _allowed(question, text):
                seen.add(text)
                chosen.append(text)
    return chosen[:MAX_INPUTS]


def check(python: str, patched: Path, work: Path, question: int, case_calls: Sequence[str],
          reference: str, global_text: str, names: Sequence[str], functions: set[str] | None = None) -> dict:
    """The patched tree's program against the reference on ``calls_to_check`` (of ``functions``,
    the ones the patch changed: a wrong function the patch left alone is not the patch's doing):
    how many inputs, how many differ, and the first few that do."""
    tree = work / "reference-check"
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(patched, tree, ignore=shutil.ignore_patterns(".git", "tests"))
    (tree / "tests").mkdir()
    prefix = global_text.rstrip("\n") + "\n\n\n" if global_text.strip() else ""
    (tree / "reference_solution.py").write_text(prefix + reference)
    calls = calls_to_check(question, case_calls, functions)
    (tree / "tests" / "test_reference.py").write_text(reference_module(calls, names))
    run = sandboxed_pytest(python, tree, timeout=60 + 0.5 * len(calls))
    failing = failing_of(run["outcomes"])
    skipped = sum(1 for o in run["outcomes"].values() if o == "SKIPPED")
    by_name = {f"test_reference_{n:03d}": c for n, c in enumerate(calls)}
    differs = [by_name.get(t.rsplit("::", 1)[-1], t) for t in failing]
    shutil.rmtree(tree, ignore_errors=True)
    return {
        "inputs": len(calls) - skipped,
        "differs": len(differs),
        "examples": differs[:3],
        "ran": bool(run["outcomes"]),
        "summary": run["summary"][:200],
    }


def case_calls(tree: Path) -> tuple[list[str], list[str]]:
    """The calls of a judge tree's cases (``assert <call> == <literal>`` in its test files) and the
    names its tests import from ``solution``."""
    calls: list[str] = []
    names: set[str] = set()
    for path in sorted((tree / "tests").glob("test_*.py")):
        module = ast.parse(path.read_text())
        for node in ast.walk(module):
            if isinstance(node, ast.ImportFrom) and node.module == "solution":
                names.update(a.name for a in node.names)
            if (isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare)
                    and isinstance(node.test.left, ast.Call)):
                calls.append(ast.unparse(node.test.left))
    return calls, sorted(names)


def with_reference(result: dict, reference: dict) -> dict:
    """``result`` (a run's record) judged again with the reference check: a ``correct`` patch that
    differs from the reference becomes ``overfit`` (``overfitting_in`` "reference"), a withheld
    correct one a withheld overfit one. The outcome by the tests alone stays in ``by_tests``."""
    kept = ("outcome", "withheld", "overfitting_in", "label", "reason")
    before = result.get("by_tests") or {k: result.get(k) for k in kept}
    updated = {**result, **{k: v for k, v in before.items() if v is not None}, "reference": reference,
               "by_tests": before}
    if reference.get("differs"):
        example = (reference.get("examples") or ["?"])[0]
        if updated.get("outcome") == "correct":
            updated.update(outcome="overfit", overfitting_in="reference", label="overfit")
            updated["reason"] = (f"fixed, and every test passes, but it differs from the reference on "
                                 f"{reference['differs']} of {reference['inputs']} inputs, e.g. {example}")
        elif updated.get("withheld") == "withheld_correct":
            updated.update(withheld="withheld_overfit", label="withheld_overfit")
    return updated

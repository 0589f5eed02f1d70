"""Refactory's buggy student programs as tiny repositories (source 2 of the benchmark).

The data set (``github:githubhuyang/refactory``, ``data.zip``) is LGPL-3.0: nothing of it is ever
copied into this repository. It is read at run time from the bare snapshot
``/work/.mirror/githubhuyang+refactory/repo`` (``git show HEAD:data.zip``), else from a bare clone
into the cache, and unzipped into ``<cache>/refactory/``.

``data/question_N/`` holds ``ans/input_NNN.txt`` (one call), ``ans/output_NNN.txt`` (the expected
value's literal), ``code/correct/``, ``code/wrong/`` and an optional ``code/global.py`` that
Refactory prepends to every program.

A program becomes a repository (``build_tree``): ``solution.py`` (global.py + the submission),
``tests/test_solution.py`` with one ``def test_case_NNN(): assert <call> == <literal>`` per case,
an empty ``conftest.py`` and a ``pyproject.toml``. The judge's copy adds ``tests/test_hidden.py``
and a ``conftest.py`` whose alarm stops each test after 2 s. Differences from Refactory's own
judge (``str`` of the printed value, in a thread with a 2 s timeout): ``==`` instead of ``str``
equality, fresh literals per test, and cases deduplicated by their (input, output) text.
"""

from __future__ import annotations

import ast
import builtins
import io
import random
import subprocess
import tokenize
import zipfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

REFACTORY_URL = "https://github.com/githubhuyang/refactory"
DEFAULT_MIRROR = Path("/work/.mirror/githubhuyang+refactory/repo")
SAMPLE_SEED = "realrepair:refactory"
QUESTIONS = (1, 2, 3, 4, 5)
JUDGE_TEST_TIMEOUT_S = 2
#: Token-distance strata to the nearest correct program (upper bounds; the last is open).
STRATA = (("<=2", 2), ("3-4", 4), ("5-8", 8), (">8", None))
DISTANCE_CAP = 9  # distances above 8 are all ">8": the search stops there

PYPROJECT = '[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["."]\n'
ALARM_CONFTEST = f'''"""The judge's per-test time limit (not part of what EQUISA sees)."""
import signal

import pytest


class JudgeTimeout(Exception):
    pass


def _stop(signum, frame):
    raise JudgeTimeout("the test ran over {JUDGE_TEST_TIMEOUT_S} s")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    previous = signal.signal(signal.SIGALRM, _stop)
    signal.setitimer(signal.ITIMER_REAL, {JUDGE_TEST_TIMEOUT_S})
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
'''


@dataclass(frozen=True)
class Case:
    """One test case: ``name`` is ``test_case_NNN`` (NNN from the input file's number)."""

    name: str
    call: str
    expected: str

    def names(self) -> set[str]:
        """The free names of the call (the function and globals such as Q2's tuple), builtins left out."""
        tree = ast.parse(self.call, mode="eval")
        return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not hasattr(builtins, n.id)}

    def functions(self) -> set[str]:
        tree = ast.parse(self.call, mode="eval")
        return {
            n.func.id
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and not hasattr(builtins, n.func.id)
        }


@dataclass
class Question:
    number: int
    folder: Path
    cases: list[Case]
    global_text: str
    wrong: list[Path] = field(default_factory=list)
    correct: list[Path] = field(default_factory=list)

    @property
    def functions(self) -> set[str]:
        return set().union(*(c.functions() for c in self.cases))


# -------------------------------------------------------------------------------------------------
# The data


def data_root(cache: Path, mirror: Path = DEFAULT_MIRROR) -> Path:
    """``<cache>/refactory/data``, unzipped from the snapshot's ``data.zip`` on first use."""
    root = cache / "refactory"
    data = root / "data"
    if (root / ".unzipped").exists():
        return data
    root.mkdir(parents=True, exist_ok=True)
    git_dir = mirror if (mirror / "HEAD").exists() else root / "mirror"
    if not (git_dir / "HEAD").exists():
        subprocess.run(["git", "clone", "--bare", "--quiet", REFACTORY_URL, str(git_dir)], check=True)
    blob = subprocess.run(
        ["git", f"--git-dir={git_dir}", "show", "HEAD:data.zip"], capture_output=True, check=True
    ).stdout
    commit = subprocess.run(
        ["git", f"--git-dir={git_dir}", "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    with zipfile.ZipFile(io.BytesIO(blob)) as archive:
        archive.extractall(root)
    (root / ".unzipped").write_text(commit + "\n")
    return data


def load_question(data: Path, number: int) -> Question:
    """A question's deduplicated cases, its global.py, and its wrong and correct programs."""
    folder = data / f"question_{number}"
    cases: list[Case] = []
    seen: set[tuple[str, str]] = set()
    for path in sorted((folder / "ans").glob("input_*.txt")):
        number_text = path.stem.split("_")[-1]
        call = path.read_text().strip()
        expected = (folder / "ans" / f"output_{number_text}.txt").read_text().strip()
        if (call, expected) not in seen:
            seen.add((call, expected))
            cases.append(Case(f"test_case_{number_text}", call, expected))
    global_path = folder / "code" / "global.py"
    return Question(
        number,
        folder,
        cases,
        global_path.read_text() if global_path.exists() else "",
        sorted((folder / "code" / "wrong").glob("*.py")),
        sorted((folder / "code" / "correct").glob("*.py")),
    )


def program_text(question: Question, submission: str) -> str:
    """``solution.py``: global.py, then the submission (as Refactory runs it)."""
    if not question.global_text.strip():
        return submission
    return question.global_text.rstrip("\n") + "\n\n\n" + submission


# -------------------------------------------------------------------------------------------------
# The repository


def test_module(cases: Sequence[Case]) -> str:
    """``from solution import ...`` and one ``def test_case_NNN(): assert call == literal`` per case."""
    names = sorted(set().union(*(c.names() for c in cases))) if cases else []
    lines = [f"from solution import {', '.join(names)}", ""] if names else []
    for case in cases:
        lines += ["", f"def {case.name}():", f"    assert {case.call} == {case.expected}", ""]
    text = "\n".join(lines).rstrip("\n") + "\n"
    ast.parse(text)
    return text


def build_tree(
    dest: Path, program: str, visible: Sequence[Case], hidden: Sequence[Case] = (), judge: bool = False
) -> Path:
    """A program as a repository (see the module); ``judge``: the alarm conftest and the hidden tests."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "solution.py").write_text(program)
    (dest / "pyproject.toml").write_text(PYPROJECT)
    (dest / "conftest.py").write_text(ALARM_CONFTEST if judge else "")
    (dest / "tests").mkdir(exist_ok=True)
    (dest / "tests" / "test_solution.py").write_text(test_module(visible))
    if hidden:
        (dest / "tests" / "test_hidden.py").write_text(test_module(hidden))
    return dest


def unit_of(test_id: str) -> str:
    """A Refactory split unit: the test's function name (``tests/test_hidden.py::test_case_002``)."""
    return test_id.rsplit("::", 1)[-1]


def defines(program: str, functions: set[str]) -> bool:
    """Does ``program`` parse and define every function the cases call (at module level)?"""
    try:
        tree = ast.parse(program)
    except SyntaxError:
        return False
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    return functions <= defined


# -------------------------------------------------------------------------------------------------
# The sample and its strata


def sample_order(questions: Sequence[Question]) -> dict[int, list[Path]]:
    """Each question's wrong programs in a shuffled order seeded with ``realrepair:refactory``
    (the sample takes them in this order and skips those the judge does not find failing)."""
    rng = random.Random(SAMPLE_SEED)
    order = {}
    for question in sorted(questions, key=lambda q: q.number):
        files = sorted(question.wrong)
        rng.shuffle(files)
        order[question.number] = files
    return order


def quotas(total: int, questions: Sequence[int]) -> dict[int, int]:
    """``total`` spread over the questions as evenly as possible (the first ones get the rest)."""
    base, rest = divmod(total, len(questions))
    return {q: base + (1 if i < rest else 0) for i, q in enumerate(questions)}


_SKIPPED_TOKENS = (tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER)


def tokens(source: str) -> list[str]:
    """The program's tokens (comments and blank lines left out; indentation kept)."""
    out = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type not in _SKIPPED_TOKENS:
                out.append(f"{token.type}:{token.string}")
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out


def bounded_distance(a: Sequence[str], b: Sequence[str], cap: int = DISTANCE_CAP) -> int:
    """The token edit distance (Levenshtein), or ``cap`` when it is ``cap`` or more."""
    if abs(len(a) - len(b)) >= cap:
        return cap
    left, right = Counter(a), Counter(b)
    if max(sum((left - right).values()), sum((right - left).values())) >= cap:
        return cap  # each edit changes the multiset by at most one token on each side
    previous = list(range(len(b) + 1))
    for i, token in enumerate(a, 1):
        current = [i] + [cap] * len(b)
        low, high = max(1, i - cap), min(len(b), i + cap)
        for j in range(low, high + 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (token != b[j - 1]))
        if min(current[max(0, low - 1) : high + 1]) >= cap:
            return cap
        previous = current
    return min(previous[len(b)], cap)


def nearest_distance(source: str, correct: Sequence[Sequence[str]]) -> int:
    """Token distance to the nearest correct program (``DISTANCE_CAP`` = farther than 8)."""
    mine = tokens(source)
    best = DISTANCE_CAP
    for other in correct:
        best = min(best, bounded_distance(mine, other, best))
        if best == 0:
            break
    return best


def stratum(distance: int) -> str:
    for name, bound in STRATA:
        if bound is None or distance <= bound:
            return name
    return STRATA[-1][0]

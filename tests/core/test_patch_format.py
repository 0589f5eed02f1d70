"""The ``<patches>`` format: parsing, locating original code, applying, compile checks, candidates."""

from __future__ import annotations

from pathlib import Path

import pytest

from equisa_core.repair.patch_format import (
    FilePatch,
    PatchRejectedError,
    apply_patches,
    build_patch_candidate,
    has_patches,
    is_test_path,
    parse_patches,
)
from equisa_core.validation.candidates import PatchCandidate, PatchEvaluation, PatchStatus

CALC = """\
def add(a, b):
    return a - b


def sub(a, b):
    return a - b
"""


def patch_block(original: str, where: str, patched: str) -> str:
    return (f"<patch>\n<original_code>\n{original}</original_code>\n<code_lines_to_replace>\n{where}\n"
            f"</code_lines_to_replace>\n<patched_code>\n{patched}</patched_code>\n</patch>\n")


def answer(*patches: str, prose: str = "The subtraction should be an addition.\n") -> str:
    return prose + "<patches>\n" + "".join(patches) + "</patches>\n"


FIX_ADD = patch_block("1:def add(a, b):\n2:    return a - b\n", "calc.py:1-2",
                      "def add(a, b):\n    return a + b\n")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "calc.py").write_text(CALC)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "util.py").write_text("def double(x):\n    return x + x\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n"
                                                 "    assert add(1, 2) == 3\n")
    (root / "setup.cfg").write_text("[tool:pytest]\n")
    return root


def rejected(root: Path, text: str) -> tuple[PatchStatus, str]:
    result = build_patch_candidate(text, root, candidate_id="patcher-1")
    assert isinstance(result, PatchEvaluation), result
    assert result.candidate == "patcher-1"
    return result.status, result.detail


# --- parsing -------------------------------------------------------------------------------------


def test_a_patch_with_line_numbers_and_a_range():
    [patch] = parse_patches(answer(FIX_ADD))
    assert patch == FilePatch(number=1, path="calc.py", start_line=1, end_line=2,
                              original_code="def add(a, b):\n    return a - b\n",
                              patched_code="def add(a, b):\n    return a + b\n")


def test_a_patch_without_line_numbers_takes_the_range_as_the_hint():
    [patch] = parse_patches(answer(patch_block("    return a - b\n", "calc.py:6", "    return a + b\n")))
    assert (patch.path, patch.start_line, patch.end_line) == ("calc.py", 6, 6)
    assert patch.original_code == "    return a - b\n"
    [bare] = parse_patches(answer(patch_block("    return a - b\n", "`calc.py`", "    return a + b\n")))
    assert (bare.path, bare.start_line, bare.end_line) == ("calc.py", None, None)


def test_fences_blank_edges_and_numbered_patched_code_are_cleaned():
    text = answer(patch_block("```python\n\n5:def sub(a, b):\n6:    return a - b\n\n```\n", "calc.py:5-6",
                              "```\n5:def sub(a, b):\n6:    return b - a\n```\n"))
    [patch] = parse_patches(text)
    assert patch.original_code == "def sub(a, b):\n    return a - b\n"
    assert patch.patched_code == "def sub(a, b):\n    return b - a\n"


def test_numbers_are_stripped_only_when_every_line_has_one():
    code = "1:def f():\n    return {1: 'a'}\n"
    [patch] = parse_patches(answer(patch_block(code, "calc.py", "def f():\n    return {}\n")))
    assert patch.original_code == code


def test_several_patches_and_think_blocks():
    text = "<think><patches>draft</patches></think>" + answer(
        FIX_ADD, patch_block("x", "pkg/util.py:2", "y"))
    assert [(p.number, p.path) for p in parse_patches(text)] == [(1, "calc.py"), (2, "pkg/util.py")]
    assert has_patches(text) and not has_patches("<think><patches></patches></think><grep>x</grep>")


@pytest.mark.parametrize(("text", "detail"), [
    ("I would change add.", "the answer has no <patches> block"),
    ("<patches>\n</patches>", "<patches> holds no <patch>"),
    ("<patches>\n<patch>\n<original_code>\nx\n</original_code>", "<patch> 1 is not closed with </patch> "
                                                                   "(was the answer cut off?)"),
    (answer("<patch><code_lines_to_replace>calc.py</code_lines_to_replace><patched_code>x</patched_code>"
            "</patch>"), "patch 1 has no <original_code>"),
    (answer("<patch><original_code>x</original_code><patched_code>y</patched_code></patch>"),
     "patch 1 has no <code_lines_to_replace>"),
    (answer("<patch><original_code>x</original_code><code_lines_to_replace>calc.py"
            "</code_lines_to_replace></patch>"), "patch 1 has no <patched_code>"),
    (answer("<patch><original_code>x</original_code><code_lines_to_replace>calc.py"
            "</code_lines_to_replace><patched_code>y</patch>"), "patch 1 <patched_code> is not closed"),
    (answer(FIX_ADD, "<patch><original_code>a</original_code><original_code>b</original_code>"
            "<code_lines_to_replace>calc.py</code_lines_to_replace><patched_code>c</patched_code></patch>"),
     "patch 2 has 2 <original_code> tags: write one <patch> per change"),
    (answer(patch_block("\n", "calc.py:1", "x\n")),
     "patch 1: <original_code> is empty: copy the exact lines to replace from the file"),
    (answer(patch_block("x\n", " ", "y\n")),
     "patch 1: <code_lines_to_replace> is empty: write path/to/file.py:START-END"),
])
def test_malformed_answers_are_rejected_with_the_reason(repo, text, detail):
    with pytest.raises(PatchRejectedError) as info:
        parse_patches(text)
    assert (info.value.status, info.value.detail) == (PatchStatus.DOES_NOT_APPLY, detail)
    assert rejected(repo, text) == (PatchStatus.DOES_NOT_APPLY, detail)


# --- applying ------------------------------------------------------------------------------------


def test_a_fix_becomes_a_patcher_candidate(repo):
    candidate = build_patch_candidate(answer(FIX_ADD), repo, candidate_id="patcher-2", target="calc.add",
                                      cost_usd=0.25)
    assert candidate == PatchCandidate(
        id="patcher-2", generator="patcher", target="calc.add", description="edits calc.py:1-2",
        files={"calc.py": CALC.replace("a - b", "a + b", 1)}, cost_usd=0.25,
    )
    assert (repo / "calc.py").read_text() == CALC  # the repository is never written


def test_original_code_is_matched_modulo_trailing_whitespace_only(repo):
    (repo / "calc.py").write_text(CALC.replace("return a - b\n", "return a - b   \n", 1))
    files = apply_patches(repo, parse_patches(answer(FIX_ADD)))
    assert files == {"calc.py": CALC.replace("a - b", "a + b", 1)}
    text = answer(patch_block("def add(a, b):\n  return a - b\n", "calc.py:1-2", "pass\n"))
    assert rejected(repo, text) == (PatchStatus.DOES_NOT_APPLY, (
        "patch 1: <original_code> is not in calc.py as written, but lines 1-2 match when indentation is "
        "ignored: copy the lines exactly, indentation included"))


def test_original_code_not_found_says_where_it_differs(repo):
    text = answer(patch_block("def add(a, b):\n    return a * b\n", "calc.py:1-2",
                              "def add(a, b):\n    pass\n"))
    assert rejected(repo, text) == (PatchStatus.DOES_NOT_APPLY, (
        "patch 1: <original_code> is not in calc.py: its first 1 line(s) match from line 1, but line 2 of "
        "the file is '    return a - b' where you wrote '    return a * b'; retrieve the current code and "
        "copy it exactly"))
    nowhere = answer(patch_block("def mul(a, b):\n", "calc.py", "def mul(x, y):\n"))
    assert rejected(repo, nowhere) == (PatchStatus.DOES_NOT_APPLY, (
        "patch 1: <original_code> is not in calc.py: its first line 'def mul(a, b):' occurs nowhere in the "
        "file; retrieve the code and copy it exactly"))


def test_ambiguous_original_code_is_rejected_unless_the_line_numbers_pick_one(repo):
    text = answer(patch_block("    return a - b\n", "calc.py", "    return a + b\n"))
    assert rejected(repo, text) == (PatchStatus.DOES_NOT_APPLY, (
        "patch 1: <original_code> is ambiguous: it occurs 2 times in calc.py (lines 2, 6); include more "
        "surrounding lines, or the line numbers of the one to change"))
    wrong_line = answer(patch_block("    return a - b\n", "calc.py:4", "    return a + b\n"))
    assert rejected(repo, wrong_line)[1].startswith("patch 1: <original_code> is ambiguous")
    by_range = answer(patch_block("    return a - b\n", "calc.py:6-6", "    return b - a\n"))
    assert apply_patches(repo, parse_patches(by_range)) == {"calc.py": CALC[:-6] + "b - a\n"}
    by_prefix = answer(patch_block("2:    return a - b\n", "calc.py", "    return a + b\n"))
    assert apply_patches(repo, parse_patches(by_prefix)) == {"calc.py": CALC.replace("a - b", "a + b", 1)}


def test_several_patches_in_one_file_and_across_files(repo):
    text = answer(
        patch_block("    return a - b\n", "calc.py:6", "    # subtract\n    return a - b\n"),
        FIX_ADD,
        patch_block("    return x + x\n", "pkg/util.py:2", "    return 2 * x\n"),
    )
    files = apply_patches(repo, parse_patches(text))
    assert files == {
        "calc.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    # subtract\n    return a - b\n",
        "pkg/util.py": "def double(x):\n    return 2 * x\n",
    }
    candidate = build_patch_candidate(text, repo, candidate_id="p")
    assert isinstance(candidate, PatchCandidate)
    assert candidate.description == "edits calc.py:6-6, calc.py:1-2, pkg/util.py:2-2"


def test_overlapping_patches_are_refused(repo):
    text = answer(FIX_ADD, patch_block("2:    return a - b\n3:\n", "calc.py", "    return 0\n"))
    assert rejected(repo, text) == (PatchStatus.DOES_NOT_APPLY, (
        "patches 1 and 2 overlap in calc.py (lines 1-2 and 2-...): merge them into one patch"))


def test_line_endings_bom_and_a_missing_final_newline_are_kept(repo):
    (repo / "crlf.py").write_bytes(b"\xef\xbb\xbfdef f():\r\n    return 1\r\n\r\nX = f()")
    text = answer(patch_block("    return 1\n", "crlf.py", "    one = 1\n    return one\n"),
                  patch_block("X = f()\n", "crlf.py", "X = f() + 1\n"))
    files = apply_patches(repo, parse_patches(text))
    assert files["crlf.py"].encode() == (b"\xef\xbb\xbfdef f():\r\n    one = 1\r\n    return one\r\n\r\n"
                                         b"X = f() + 1")


def test_deleting_lines(repo):
    text = answer(patch_block("def sub(a, b):\n    return a - b\n", "calc.py:5-6", ""))
    assert apply_patches(repo, parse_patches(text)) == {"calc.py": "def add(a, b):\n    return a - b\n\n\n"}


@pytest.mark.parametrize(("where", "detail"), [
    ("../outside.py:1", "patch 1: '../outside.py' leaves the repository"),
    ("/etc/passwd", "patch 1: '/etc/passwd' is absolute: give a path relative to the repository root"),
    ("missing.py:1-2", "patch 1: no file 'missing.py' in the repository (patches edit existing files)"),
    ("setup.cfg:1", "patch 1: setup.cfg is not a Python source file: patches may change only .py files"),
    ("tests/test_calc.py:5", "patch 1: tests/test_calc.py is part of the tests: fix the code under test, "
                             "not the tests"),
    (".git/hooks/pre-commit.py", "patch 1: '.git/hooks/pre-commit.py' is inside a directory that is not "
                                 "part of the sources"),
])
def test_paths_outside_the_sources_are_rejected(repo, tmp_path, where, detail):
    (tmp_path / "outside.py").write_text("x = 1\n")
    text = answer(patch_block("x = 1\n", where, "x = 2\n"))
    assert rejected(repo, text) == (PatchStatus.DOES_NOT_APPLY, detail)


def test_tests_may_change_when_allowed(repo):
    text = answer(patch_block("    assert add(1, 2) == 3\n", "tests/test_calc.py:5",
                              "    assert add(2, 2) == 4\n"))
    files = apply_patches(repo, parse_patches(text), allow_test_edits=True)
    assert list(files) == ["tests/test_calc.py"]


def test_a_symbolic_link_out_of_the_repository_is_rejected(repo, tmp_path):
    (tmp_path / "outside.py").write_text("x = 1\n")
    (repo / "link.py").symlink_to(tmp_path / "outside.py")
    text = answer(patch_block("x = 1\n", "link.py", "x = 2\n"))
    assert rejected(repo, text) == (PatchStatus.DOES_NOT_APPLY, (
        "patch 1: 'link.py' leaves the repository (a symbolic link points outside)"))


def test_a_patch_that_changes_nothing_is_rejected(repo):
    text = answer(patch_block("    return x + x\n", "pkg/util.py", "    return x + x   \n"))
    assert rejected(repo, text) == (PatchStatus.DOES_NOT_APPLY,
                                    "the patches change nothing: <patched_code> equals <original_code> "
                                    "(trailing whitespace aside)")


def test_a_file_that_is_not_utf8_is_rejected(repo):
    (repo / "latin.py").write_bytes(b"# caf\xe9\nx = 1\n")
    assert rejected(repo, answer(patch_block("x = 1\n", "latin.py", "x = 2\n"))) == (
        PatchStatus.DOES_NOT_APPLY, "latin.py is not UTF-8 text")


# --- compiling -----------------------------------------------------------------------------------


def test_a_syntax_error_does_not_compile(repo):
    text = answer(patch_block("1:def add(a, b):\n2:    return a - b\n", "calc.py:1-2",
                              "def add(a, b):\n    return a +\n"))
    assert rejected(repo, text) == (PatchStatus.DOES_NOT_COMPILE, (
        "the patched calc.py does not compile: calc.py:2: invalid syntax\n2:    return a +"))


def test_a_symbol_table_error_does_not_compile(repo):
    text = answer(patch_block("    return x + x\n", "pkg/util.py", "    nonlocal x\n    return x\n"))
    status, detail = rejected(repo, text)
    assert status == PatchStatus.DOES_NOT_COMPILE
    assert detail.startswith("the patched pkg/util.py does not compile: pkg/util.py:2: ")
    assert "nonlocal" in detail


def test_dedented_patched_code_does_not_compile(repo):
    text = answer(patch_block("    return x + x\n", "pkg/util.py", "return 2 * x\n"))
    status, detail = rejected(repo, text)
    assert status == PatchStatus.DOES_NOT_COMPILE
    assert detail.startswith("the patched pkg/util.py does not compile: pkg/util.py:2: ")


def test_test_paths():
    assert is_test_path("tests/helpers.py") and is_test_path("pkg/test/x.py")
    assert is_test_path("test_calc.py") and is_test_path("pkg/calc_test.py") and is_test_path("conftest.py")
    assert not is_test_path("calc.py") and not is_test_path("pkg/testing_utils.py")
    assert not is_test_path("pkg/contest.py") and not is_test_path("attest/x.py")

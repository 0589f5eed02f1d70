"""Tests for equisa_core.common.source_edit: locating, extracting and replacing functions, and diffs."""

from __future__ import annotations

import ast
import asyncio
import inspect
import os
import shutil
import subprocess
import textwrap
import types
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from equisa_core.common import source_edit
from equisa_core.common.source_edit import (
    FunctionLocation,
    combine_diffs,
    find_function,
    function_source,
    list_functions,
    module_qualname,
    replace_function,
    unified_diff,
)
from equisa_core.errors import FunctionNotFoundError, InvalidReplacementError, SourceEditError

SAMPLE = '''\
"""A module with one of each kind of function."""

import functools


def deco(tag):
    def wrap(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return (tag, fn(*args, **kwargs))

        return wrapper

    return wrap


def plain(x):
    return x + 1


class Shape:
    sides = 0

    def area(self):
        return 0

    @property
    def name(self):
        return "shape"

    @name.setter
    def name(self, value):
        self._name = value

    @staticmethod
    def unit():
        return 1

    @classmethod
    def make(cls):
        return cls()

    @deco(
        "tagged",
    )
    def tagged(self, n):
        return n

    class Inner:
        def depth(self):
            return 2


def outer(a):
    def inner(b):
        return a + b

    return inner


async def fetch(n):
    return n


def chosen():
    return "first"


try:
    import json
except ImportError:  # pragma: no cover
    pass
else:
    def chosen():
        return "second"
'''


def run(source: str) -> dict[str, Any]:
    """Execute a module's source and return its namespace (what it defines is known only at run time)."""
    namespace: dict[str, Any] = {"__name__": "sample"}
    exec(compile(source, "sample.py", "exec"), namespace)
    return namespace


def code_qualnames(source: str) -> list[tuple[str, int]]:
    """(co_qualname, co_firstlineno) of every def in ``source``, as the compiler names them."""
    found: list[tuple[str, int]] = []
    stack = [compile(source, "m.py", "exec")]
    while stack:
        code = stack.pop()
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                stack.append(const)
                is_function = const.co_flags & inspect.CO_NEWLOCALS
                if is_function and not const.co_name.startswith("<"):
                    found.append((const.co_qualname, const.co_firstlineno))
    return sorted(found, key=lambda item: item[1])


def line_of(source: str, text: str, start: int = 1) -> int:
    """1-based number of the first line from ``start`` on that contains ``text``."""
    for number, line in enumerate(source.splitlines(), start=1):
        if number >= start and text in line:
            return number
    raise AssertionError(f"{text!r} not in source")


# --- exports ------------------------------------------------------------------------------------


def test_all_names_exist() -> None:
    assert set(source_edit.__all__) == {
        "FunctionLocation",
        "list_functions",
        "find_function",
        "module_qualname",
        "function_source",
        "replace_function",
        "unified_diff",
        "combine_diffs",
    }
    for name in source_edit.__all__:
        assert hasattr(source_edit, name)


# --- locating -----------------------------------------------------------------------------------


def test_list_functions_matches_the_compilers_qualnames() -> None:
    found = [(loc.qualname, loc.start_line) for loc in list_functions(SAMPLE)]
    assert found == code_qualnames(SAMPLE)


@pytest.mark.parametrize(
    ("qualname", "canonical", "start_text", "def_text", "indent", "is_async"),
    [
        ("plain", "plain", "def plain", "def plain", "", False),
        ("Shape.area", "Shape.area", "def area", "def area", "    ", False),
        ("Shape.Inner.depth", "Shape.Inner.depth", "def depth", "def depth", "        ", False),
        ("Shape.unit", "Shape.unit", "@staticmethod", "def unit", "    ", False),
        ("Shape.make", "Shape.make", "@classmethod", "def make", "    ", False),
        ("Shape.tagged", "Shape.tagged", "@deco(", "def tagged", "    ", False),
        ("outer.<locals>.inner", "outer.<locals>.inner", "def inner", "def inner", "    ", False),
        ("outer.inner", "outer.<locals>.inner", "def inner", "def inner", "    ", False),
        (
            "deco.<locals>.wrap.<locals>.wrapper",
            "deco.<locals>.wrap.<locals>.wrapper",
            "@functools.wraps",
            "def wrapper",
            "        ",
            False,
        ),
        (
            "deco.wrap.wrapper",
            "deco.<locals>.wrap.<locals>.wrapper",
            "@functools",
            "def wrapper",
            "        ",
            False,
        ),
        ("fetch", "fetch", "async def fetch", "async def fetch", "", True),
    ],
)
def test_find_function_kinds(
    qualname: str, canonical: str, start_text: str, def_text: str, indent: str, is_async: bool
) -> None:
    loc = find_function(SAMPLE, qualname, module="pkg.sample")
    assert loc.qualname == canonical
    assert loc.fqn == f"pkg.sample.{canonical}"
    assert loc.start_line == line_of(SAMPLE, start_text)
    assert loc.def_line == line_of(SAMPLE, def_text)
    assert loc.indent == indent
    assert loc.is_async is is_async
    # the end line is the last line of the body
    lines = SAMPLE.splitlines()
    assert lines[loc.end_line - 1].strip().startswith("return")


def test_location_is_frozen_and_fqn_defaults_to_qualname() -> None:
    loc = find_function(SAMPLE, "Shape.area")
    assert isinstance(loc, FunctionLocation)
    assert loc.fqn == "Shape.area"
    frozen: Any = loc  # the assignment a frozen model refuses at run time
    with pytest.raises(ValidationError):
        frozen.end_line = 1


def test_property_getter_and_setter_last_wins_unless_occurrence_given() -> None:
    getter_line = line_of(SAMPLE, "def name(self):")
    setter_line = line_of(SAMPLE, "def name(self, value):")
    assert find_function(SAMPLE, "Shape.name").def_line == setter_line
    assert find_function(SAMPLE, "Shape.name").start_line == setter_line - 1
    assert find_function(SAMPLE, "Shape.name", occurrence=0).def_line == getter_line
    assert find_function(SAMPLE, "Shape.name", occurrence=-2).def_line == getter_line
    assert find_function(SAMPLE, "Shape.name", occurrence=1).def_line == setter_line
    with pytest.raises(FunctionNotFoundError, match="defined 2 time"):
        find_function(SAMPLE, "Shape.name", occurrence=2)


def test_conditional_redefinition_picks_the_one_python_binds() -> None:
    loc = find_function(SAMPLE, "chosen")
    assert loc.def_line == line_of(SAMPLE, "def chosen", start=line_of(SAMPLE, "else:"))
    assert run(SAMPLE)["chosen"]() == "second"
    assert find_function(SAMPLE, "chosen", occurrence=0).def_line == line_of(SAMPLE, "def chosen")


def test_global_declared_nested_function_has_a_bare_qualname() -> None:
    source = (
        "def outer():\n    global helper\n    def helper():\n        return 1\n"
        "    class K:\n        def m(self):\n            pass\n"
    )
    assert [loc.qualname for loc in list_functions(source)] == [q for q, _ in code_qualnames(source)]
    assert find_function(source, "helper").def_line == 3
    assert find_function(source, "outer.<locals>.K.m").indent == "        "


def test_not_found_names_the_qualname_and_near_candidates() -> None:
    with pytest.raises(FunctionNotFoundError) as info:
        find_function(SAMPLE, "Shape.aera")
    message = str(info.value)
    assert "'Shape.aera'" in message
    assert "Shape.area" in message
    assert info.value.exit_code == 8


def test_not_found_lists_at_most_ten_candidates() -> None:
    source = "".join(f"def handler_{i}():\n    pass\n" for i in range(30))
    with pytest.raises(FunctionNotFoundError) as info:
        find_function(source, "handler_")
    candidates = str(info.value).split("candidates: ")[1].split(", ")
    assert 1 <= len(candidates) <= 10
    with pytest.raises(FunctionNotFoundError, match="defines no functions"):
        find_function("x = 1\n", "f")
    with pytest.raises(FunctionNotFoundError, match="it defines: handler_0"):
        find_function(source, "zzzzzzzzzzzzzzzzzzzzz")


def test_a_module_that_does_not_parse_is_a_source_edit_error() -> None:
    with pytest.raises(SourceEditError, match="does not parse") as info:
        find_function("def f(:\n", "f")
    assert not isinstance(info.value, FunctionNotFoundError)


@pytest.mark.parametrize(
    ("fqn", "module", "expected"),
    [
        ("pkg.mod.Cls.m", "pkg.mod", "Cls.m"),
        ("pkg.mod.f", "pkg.mod", "f"),
        ("mod.outer.<locals>.inner", "mod", "outer.<locals>.inner"),
    ],
)
def test_module_qualname(fqn: str, module: str, expected: str) -> None:
    assert module_qualname(fqn, module) == expected


@pytest.mark.parametrize(
    ("fqn", "module"),
    [("pkg.module.f", "pkg.mod"), ("pkg.mod", "pkg.mod"), ("other.f", "pkg"), ("f", "")],
)
def test_module_qualname_rejects_fqns_outside_the_module(fqn: str, module: str) -> None:
    with pytest.raises(ValueError, match="does not name"):
        module_qualname(fqn, module)


# --- function_source ----------------------------------------------------------------------------


def test_function_source_includes_decorators_and_is_dedented() -> None:
    assert function_source(SAMPLE, "Shape.tagged") == (
        '@deco(\n    "tagged",\n)\ndef tagged(self, n):\n    return n\n'
    )
    assert function_source(SAMPLE, "deco.wrap.wrapper") == textwrap.dedent(
        """\
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return (tag, fn(*args, **kwargs))
        """
    )


def test_function_source_leaves_string_contents_alone() -> None:
    source = 'class A:\n    def f(self):\n        """Doc.\n\ncolumn zero\n  two\n"""\n        return 1\n'
    assert function_source(source, "A.f") == (
        'def f(self):\n    """Doc.\n\ncolumn zero\n  two\n"""\n    return 1\n'
    )


# --- replacing: each kind -----------------------------------------------------------------------


def test_replace_module_level_function() -> None:
    result = replace_function(SAMPLE, "plain", "def plain(x):\n    return x + 2\n")
    assert run(result)["plain"](1) == 3


def test_replace_method_keeps_indentation() -> None:
    result = replace_function(SAMPLE, "Shape.area", "def area(self):\n    return 42\n")
    assert "    def area(self):\n        return 42\n" in result
    assert run(result)["Shape"]().area() == 42


def test_replace_nested_class_method() -> None:
    result = replace_function(SAMPLE, "Shape.Inner.depth", "def depth(self):\n    return 3")
    assert "        def depth(self):\n            return 3\n" in result
    assert run(result)["Shape"].Inner().depth() == 3


@pytest.mark.parametrize("qualname", ["outer.<locals>.inner", "outer.inner"])
def test_replace_nested_function(qualname: str) -> None:
    result = replace_function(SAMPLE, qualname, "def inner(b):\n    return a * b\n")
    assert "    def inner(b):\n        return a * b\n" in result
    assert run(result)["outer"](3)(4) == 12


def test_replace_functools_wraps_wrapper() -> None:
    new = "def wrapper(*args, **kwargs):\n    return (tag, fn(*args, **kwargs), 'x')\n"
    result = replace_function(SAMPLE, "deco.<locals>.wrap.<locals>.wrapper", new)
    assert "        @functools.wraps(fn)\n        def wrapper(" in result
    shape = run(result)["Shape"]()
    assert shape.tagged(3) == ("tagged", 3, "x")
    assert type(shape).tagged.__name__ == "tagged"  # functools.wraps kept


def test_replace_property_setter_is_the_default_and_getter_by_occurrence() -> None:
    result = replace_function(SAMPLE, "Shape.name", "def name(self, value):\n    self._name = value * 2\n")
    result = replace_function(result, "Shape.name", "def name(self):\n    return 'circle'", occurrence=0)
    assert result.count("@property") == 1 and result.count("@name.setter") == 1
    shape = run(result)["Shape"]()
    shape.name = 2
    assert shape._name == 4
    assert shape.name == "circle"


def test_replace_staticmethod_and_classmethod_keep_their_decorators() -> None:
    result = replace_function(SAMPLE, "Shape.unit", "def unit():\n    return 7\n")
    result = replace_function(result, "Shape.make", "def make(cls):\n    return (cls, 'made')\n")
    shape_cls = run(result)["Shape"]
    assert shape_cls.unit() == 7
    assert shape_cls.make() == (shape_cls, "made")
    assert "    @staticmethod\n    def unit():\n        return 7\n" in result


def test_replace_custom_decorated_keeps_multiline_decorator() -> None:
    result = replace_function(SAMPLE, "Shape.tagged", "def tagged(self, n):\n    return n * 2\n")
    assert '    @deco(\n        "tagged",\n    )\n    def tagged(self, n):\n' in result
    assert run(result)["Shape"]().tagged(3) == ("tagged", 6)


def test_decorators_in_new_code_replace_the_original_ones() -> None:
    new = "@deco('other')\ndef tagged(self, n):\n    return n\n"
    result = replace_function(SAMPLE, "Shape.tagged", new)
    assert '"tagged",' not in result
    assert "    @deco('other')\n    def tagged(self, n):\n        return n\n" in result
    assert run(result)["Shape"]().tagged(3) == ("other", 3)


def test_decorators_can_be_added_to_an_undecorated_function() -> None:
    new = "@staticmethod\ndef area():\n    return 5\n"
    result = replace_function(SAMPLE, "Shape.area", new, allow_signature_change=True)
    assert run(result)["Shape"].area() == 5


def test_replace_async_function() -> None:
    result = replace_function(SAMPLE, "fetch", "async def fetch(n):\n    return n * 10\n")
    assert asyncio.run(run(result)["fetch"](2)) == 20


def test_replace_conditional_redefinition_replaces_the_bound_one() -> None:
    result = replace_function(SAMPLE, "chosen", "def chosen():\n    return 'patched'\n")
    assert 'return "first"' in result
    assert "    def chosen():\n        return 'patched'\n" in result
    assert run(result)["chosen"]() == "patched"


# --- replacing: indentation forms ---------------------------------------------------------------

AREA_FORMS = [
    "def area(self):\n    if self.sides:\n        return 1\n    return 42\n",
    "    def area(self):\n        if self.sides:\n            return 1\n        return 42\n",
    "def area(self):\n\tif self.sides:\n\t\treturn 1\n\treturn 42\n",
    "\tdef area(self):\n\t\tif self.sides:\n\t\t\treturn 1\n\t\treturn 42",
    "\n\n            def area(self):\r\n                if self.sides:\r\n"
    "                    return 1\r\n                return 42\r\n\n   \n",
]


@pytest.mark.parametrize("new_code", AREA_FORMS)
def test_new_code_at_any_indentation_lands_at_the_original_one(new_code: str) -> None:
    result = replace_function(SAMPLE, "Shape.area", new_code)
    expected_body = (
        "    def area(self):\n"
        "        if self.sides:\n"
        "            return 1\n"
        "        return 42\n"
        "\n"
        "    @property\n"
    )
    assert expected_body in result
    assert "\t" not in result
    assert run(result)["Shape"]().area() == 42
    # everything outside the function is byte-for-byte the same
    loc = find_function(SAMPLE, "Shape.area")
    before_lines = SAMPLE.splitlines(keepends=True)
    after_lines = result.splitlines(keepends=True)
    assert after_lines[: loc.start_line - 1] == before_lines[: loc.start_line - 1]
    assert after_lines[loc.start_line + 3 :] == before_lines[loc.end_line :]


def test_leading_comments_are_kept_above_the_function() -> None:
    new = "\n# Fixed: off by one.\n\ndef plain(x):\n    return x + 2\n"
    result = replace_function(SAMPLE, "plain", new)
    assert "# Fixed: off by one.\n\ndef plain(x):\n    return x + 2\n" in result
    assert run(result)["plain"](1) == 3


def test_tab_indented_file_keeps_tabs() -> None:
    source = "class A:\n\tdef f(self):\n\t\treturn 1\n\n\tdef g(self):\n\t\treturn 2\n"
    result = replace_function(source, "A.f", "def f(self):\n\treturn 3\n")
    assert result == source.replace("return 1", "return 3")
    result = replace_function(source, "A.f", "def f(self):\n    return 3\n")
    assert result.startswith("class A:\n\tdef f(self):\n\t    return 3\n")
    assert run(result)["A"]().f() == 3


def test_multiline_strings_are_not_reindented() -> None:
    source = "class A:\n    def f(self):\n        return 1\n"
    new = 'def f(self):\n    text = """first\ncolumn zero\n    four\n"""\n    return text\n'
    result = replace_function(source, "A.f", new)
    assert '        text = """first\ncolumn zero\n    four\n"""\n        return text\n' in result
    assert run(result)["A"]().f() == "first\ncolumn zero\n    four\n"
    # the same new code given at the original indentation gives the same result
    indented = 'def f(self):\n        text = """first\ncolumn zero\n    four\n"""\n        return text\n'
    assert replace_function(source, "A.f", "    " + indented) == result


def test_compiler_warnings_in_user_code_do_not_break_edits() -> None:
    source = 'import re\n\n\ndef digits(s):\n    return re.findall("\\d+", s)\n'
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert find_function(source, "digits").def_line == 4
        new = 'def digits(s):\n    return re.findall("\\d", s)\n'
        assert replace_function(source, "digits", new) == source.replace("\\d+", "\\d")


# --- replacing: rejections ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("qualname", "new_code"),
    [
        ("plain", "def plain(y):\n    return y\n"),
        ("plain", "def plain(x=1):\n    return x\n"),
        ("plain", "def plain(x: int):\n    return x\n"),
        ("plain", "def plain(*x):\n    return x\n"),
        ("plain", "def plain(x, /):\n    return x\n"),
        ("plain", "def plain(x) -> int:\n    return x\n"),
        ("plain", "async def plain(x):\n    return x\n"),
        ("fetch", "def fetch(n):\n    return n\n"),
        ("Shape.area", "def area(self, extra):\n    return 0\n"),
    ],
)
def test_signature_change_is_rejected_unless_allowed(qualname: str, new_code: str) -> None:
    with pytest.raises(InvalidReplacementError, match="signature"):
        replace_function(SAMPLE, qualname, new_code)
    result = replace_function(SAMPLE, qualname, new_code, allow_signature_change=True)
    ast.parse(result)


@pytest.mark.parametrize(
    ("new_code", "message"),
    [
        ("def plain(x):\n    return (\n", "does not parse"),
        ("def plain(x)\n    return x\n", "does not parse"),
        ("def plain(x):\n    return 1\n\ndef helper():\n    pass\n", "exactly one function"),
        ("def plain(x):\n    return 1\nprint('side effect')\n", "exactly one function"),
        ("class plain:\n    pass\n", "exactly one function"),
        ("x = 1\n", "exactly one function"),
        ("# only a comment\n", "exactly one function"),
        ("", "empty"),
        ("  \n\n", "empty"),
        ("def other(x):\n    return x\n", "defines 'other', expected 'plain'"),
        ("def plain(x):\n    nonlocal y\n    return x\n", "does not compile"),
        ("def plain(x):\n    return await x\n", "does not compile"),
    ],
)
def test_invalid_replacements_are_rejected(new_code: str, message: str) -> None:
    with pytest.raises(InvalidReplacementError, match=message) as info:
        replace_function(SAMPLE, "plain", new_code)
    assert info.value.exit_code == 8


def test_unknown_function_cannot_be_replaced() -> None:
    with pytest.raises(FunctionNotFoundError, match="'nope'"):
        replace_function(SAMPLE, "nope", "def nope():\n    pass\n")


# --- replacing: bytes outside the function ------------------------------------------------------


def test_crlf_file_stays_crlf() -> None:
    source = SAMPLE.replace("\n", "\r\n")
    result = replace_function(source, "Shape.area", "def area(self):\n    return 42\n")
    expected = replace_function(SAMPLE, "Shape.area", "def area(self):\n    return 42\n")
    assert result == expected.replace("\n", "\r\n")
    assert result.count("\n") == result.count("\r\n")
    assert run(result)["Shape"]().area() == 42
    assert function_source(source, "Shape.area") == "def area(self):\n    return 0\n"


def test_file_without_final_newline() -> None:
    source = "def a():\n    return 1\n\n\ndef b():\n    return 2"
    result = replace_function(source, "b", "def b():\n    return 3\n")
    assert result == "def a():\n    return 1\n\n\ndef b():\n    return 3"
    result = replace_function(source, "a", "def a():\n    x = 5\n    return x\n")
    assert result == "def a():\n    x = 5\n    return x\n\n\ndef b():\n    return 2"
    one_liner = "class A:\n    def f(self): return 1"
    result = replace_function(one_liner, "A.f", "def f(self):\n    return 2")
    assert result == "class A:\n    def f(self):\n        return 2"


def test_encoding_cookie_and_bom_are_kept() -> None:
    source = "\ufeff# -*- coding: utf-8 -*-\ndef f():\n    return 'é'\n"
    result = replace_function(source, "f", "def f():\n    return 'è'\n")
    assert result == "\ufeff# -*- coding: utf-8 -*-\ndef f():\n    return 'è'\n"
    latin = "# -*- coding: latin-1 -*-\ndef f():\n    return 1\n"
    assert replace_function(latin, "f", "def f():\n    return 2\n").startswith("# -*- coding: latin-1 -*-\n")


def test_replacing_a_function_by_its_own_source_is_the_identity() -> None:
    for qualname, count in Counter(loc.qualname for loc in list_functions(SAMPLE)).items():
        for k in range(count):
            code = function_source(SAMPLE, qualname, occurrence=k)
            assert replace_function(SAMPLE, qualname, code, occurrence=k) == SAMPLE


# --- diffs --------------------------------------------------------------------------------------


def test_unified_diff_identical_is_empty() -> None:
    assert unified_diff("pkg/mod.py", SAMPLE, SAMPLE) == ""


def test_unified_diff_format() -> None:
    before = "a\nb\nc\nd\ne\nf\ng\n"
    after = "a\nb\nc\nD\ne\nf\ng\n"
    assert unified_diff("pkg/mod.py", before, after) == (
        "diff --git a/pkg/mod.py b/pkg/mod.py\n"
        "--- a/pkg/mod.py\n"
        "+++ b/pkg/mod.py\n"
        "@@ -1,7 +1,7 @@\n"
        " a\n b\n c\n-d\n+D\n e\n f\n g\n"
    )


def test_unified_diff_marks_a_missing_final_newline_like_git() -> None:
    assert unified_diff("m.py", "a\nb", "a\nc") == (
        "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n"
        " a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
    )
    assert unified_diff("m.py", "a\nb", "a\nb\n").endswith("-b\n\\ No newline at end of file\n+b\n")
    assert unified_diff("m.py", "x\nb", "y\nb").endswith(" b\n\\ No newline at end of file\n")


@pytest.mark.parametrize("path", ["", "/abs/m.py", "a\\b.py", "../m.py", "a//b.py", "./m.py"])
def test_unified_diff_rejects_bad_paths(path: str) -> None:
    with pytest.raises(ValueError, match="relative"):
        unified_diff(path, "a\n", "b\n")


def test_combine_diffs_skips_empty_ones() -> None:
    one = unified_diff("a.py", "x\n", "y\n")
    two = unified_diff("b.py", "x\n", "z\n")
    assert combine_diffs([one, "", two]) == one + two
    assert combine_diffs(["", ""]) == ""
    assert combine_diffs(iter([one.rstrip("\n"), two])) == one + two


# --- diffs against real git ---------------------------------------------------------------------

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """Run git in ``repo`` isolated from the user's and the system's configuration."""
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    command = ["git", "-c", "core.autocrlf=false", "-c", "core.quotePath=true", *args]
    return subprocess.run(command, cwd=repo, env=env, capture_output=True, check=True)


def apply_in_repo(tmp_path: Path, files: dict[str, tuple[str, str]], patch: str) -> Path:
    """Commit the 'before' files, ``git apply`` the patch, and check every file's bytes."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    for path, (before, _) in files.items():
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(before.encode("utf-8"))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "before")
    (tmp_path / "fix.patch").write_bytes(patch.encode("utf-8"))
    git(repo, "apply", "--check", str(tmp_path / "fix.patch"))
    git(repo, "apply", str(tmp_path / "fix.patch"))
    for path, (_, after) in files.items():
        assert (repo / path).read_bytes() == after.encode("utf-8"), path
    git(repo, "apply", "--check", "-R", str(tmp_path / "fix.patch"))
    return repo


def _far_apart() -> tuple[str, str]:
    before = "".join(f"line {i}\n" for i in range(40))
    return before, before.replace("line 3\n", "LINE 3\n").replace("line 30\n", "")


GIT_CASES = {
    "method": (SAMPLE, replace_function(SAMPLE, "Shape.area", "def area(self):\n    return 42\n")),
    "crlf": (
        SAMPLE.replace("\n", "\r\n"),
        replace_function(SAMPLE.replace("\n", "\r\n"), "outer.inner", "def inner(b):\n    return b"),
    ),
    "no-final-newline-change-last-line": (
        "def a():\n    return 1\n\ndef b():\n    return 2",
        "def a():\n    return 1\n\ndef b():\n    return 3",
    ),
    "no-final-newline-change-elsewhere": (
        "def a():\n    return 1\n\ndef b():\n    return 2",
        "def a():\n    return 0\n\ndef b():\n    return 2",
    ),
    "add-final-newline": ("x = 1\ny = 2", "x = 1\ny = 2\n"),
    "remove-final-newline": ("x = 1\ny = 2\n", "x = 1\ny = 2"),
    "two-hunks": _far_apart(),
    "from-empty": ("", "x = 1\n"),
    "non-ascii": ("s = 'é'\n", "s = 'è'\n"),
}


@needs_git
@pytest.mark.parametrize("case", sorted(GIT_CASES))
def test_git_apply_accepts_the_diff(tmp_path: Path, case: str) -> None:
    before, after = GIT_CASES[case]
    patch = unified_diff("pkg/mod.py", before, after)
    assert patch
    apply_in_repo(tmp_path, {"pkg/mod.py": (before, after)}, patch)


@needs_git
@pytest.mark.parametrize("path", ["my module.py", "pkg/é.py", 'odd"name.py', "deep/er/m.py"])
def test_git_apply_accepts_quoted_paths(tmp_path: Path, path: str) -> None:
    patch = unified_diff(path, "a\nb\n", "a\nc")
    apply_in_repo(tmp_path, {path: ("a\nb\n", "a\nc")}, patch)


@needs_git
def test_our_diff_is_byte_identical_to_gits_for_simple_changes(tmp_path: Path) -> None:
    files = {
        "plain.py": ("a\nb\nc\nd\ne\nf\ng\nh\n", "a\nb\nc\nD\ne\nf\ng\nh\n"),
        "tail.py": ("a\nb", "a\nc"),
        "with space.py": ("a\nb\n", "a\nb\nc\n"),
        "é.py": ("x\n", "y\n"),
    }
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    for path, (before, _) in files.items():
        (repo / path).write_bytes(before.encode())
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "before")
    for path, (_, after) in files.items():
        (repo / path).write_bytes(after.encode())
        out = git(repo, "diff", "--no-color", "--no-ext-diff", "--", path).stdout.decode()
        ours = unified_diff(path, *files[path])
        gits = "".join(line for line in out.splitlines(keepends=True) if not line.startswith("index "))
        assert ours == gits, path


@needs_git
def test_git_apply_accepts_combined_diffs(tmp_path: Path) -> None:
    files = {
        "pkg/sample.py": (
            SAMPLE,
            replace_function(SAMPLE, "plain", "def plain(x):\n    return x - 1\n"),
        ),
        "pkg/other.py": ("def f():\n    return 1", "def f():\n    return 2"),
        "pkg/same.py": ("x = 1\n", "x = 1\n"),
    }
    patch = combine_diffs(unified_diff(path, b, a) for path, (b, a) in files.items())
    assert "pkg/same.py" not in patch
    apply_in_repo(tmp_path, files, patch)


# --- properties ---------------------------------------------------------------------------------

NAMES = ["f", "g", "run", "value", "_helper"]
PARAMS = ["", "x", "x, y=1", "*args, **kwargs", "self, a: int = 2", "a, /, b, *, c=3"]


@st.composite
def body_lines(draw: st.DrawFn, indent: str, unit: str, depth: int, outdent: bool) -> list[str]:
    """Lines of a function body at ``indent``: statements, blank lines, strings, nested defs."""
    kinds = ["stmt", "comment", "blank", "string"] + (["def", "class", "if"] if depth < 2 else [])
    kinds += ["col0comment", "continuation"] if outdent else []
    groups: list[list[str]] = []
    for kind in draw(st.lists(st.sampled_from(kinds), max_size=4)):
        if kind == "stmt":
            stmt = draw(st.sampled_from(["z = 1", "x = [1,\n2]", "pass"]))
            groups.append([indent + part for part in stmt.split("\n")])
        elif kind == "comment":
            groups.append([indent + "# note"])
        elif kind == "blank":
            groups.append([draw(st.sampled_from(["", " ", indent, indent + unit, "\t"]))])
        elif kind == "string":
            groups.append([indent + 's = """top', "col0", "  two", '"""'])
        elif kind == "def":
            groups.append(draw(function_lines(indent, unit, depth + 1, outdent)))
        elif kind == "class":
            groups.append(draw(class_lines(indent, unit, depth + 1, outdent)))
        elif kind == "if":
            groups.append(
                [indent + "if x:", *draw(function_lines(indent + unit, unit, depth + 1, outdent))]
                + [indent + "else:", *draw(function_lines(indent + unit, unit, depth + 1, outdent))]
            )
        elif kind == "col0comment":
            groups.append(["# column zero"])
        else:
            groups.append([indent + "y = (1,", "2)"])
    groups.insert(draw(st.integers(0, len(groups))), [indent + "pass"])
    return [line for group in groups for line in group]


@st.composite
def function_lines(draw: st.DrawFn, indent: str, unit: str, depth: int, outdent: bool) -> list[str]:
    lines: list[str] = []
    for decorator in draw(st.lists(st.sampled_from(["d", "d.e(1)", "multi"]), max_size=2)):
        if decorator == "multi":
            lines += [indent + "@deco(", indent + unit + "1,", indent + ")"]
        else:
            lines.append(indent + "@" + decorator)
    prefix = draw(st.sampled_from(["def", "async def"]))
    name, params = draw(st.sampled_from(NAMES)), draw(st.sampled_from(PARAMS))
    returns = draw(st.sampled_from(["", " -> int"]))
    lines.append(f"{indent}{prefix} {name}({params}){returns}:")
    return lines + draw(body_lines(indent + unit, unit, depth, outdent))


@st.composite
def class_lines(draw: st.DrawFn, indent: str, unit: str, depth: int, outdent: bool) -> list[str]:
    lines = [indent + "class " + draw(st.sampled_from(["A", "B", "f"])) + ":", indent + unit + "attr = 1"]
    for _ in range(draw(st.integers(1, 3))):
        if depth < 2 and draw(st.booleans()):
            lines += draw(class_lines(indent + unit, unit, depth + 1, outdent))
        else:
            lines += draw(function_lines(indent + unit, unit, depth + 1, outdent))
        lines += draw(st.sampled_from([[], [""], ["", ""]]))
    return lines


@st.composite
def modules(draw: st.DrawFn, outdent: bool = True) -> str:
    """A module's source: random functions and classes, LF or CRLF, with or without final newline."""
    unit = draw(st.sampled_from(["    ", "  ", "\t"]))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    lines = [draw(st.sampled_from(["import os", "# -*- coding: utf-8 -*-", '"""Doc."""']))]
    for kind in draw(st.lists(st.sampled_from(["def", "class", "blank", "stmt"]), min_size=1, max_size=5)):
        if kind == "def":
            lines += draw(function_lines("", unit, 0, outdent))
        elif kind == "class":
            lines += draw(class_lines("", unit, 0, outdent))
        elif kind == "blank":
            lines.append(draw(st.sampled_from(["", "   "])))
        else:
            lines.append("CONSTANT = 1")
    if not any(line.lstrip().startswith(("def ", "async def ")) for line in lines):
        lines += draw(function_lines("", unit, 0, outdent))
    source = newline.join(lines)
    return source + newline if draw(st.booleans()) else source


def occurrences(source: str) -> list[tuple[FunctionLocation, int]]:
    """Each function with its index among the definitions sharing its qualname."""
    seen: Counter[str] = Counter()
    out = []
    for loc in list_functions(source):
        out.append((loc, seen[loc.qualname]))
        seen[loc.qualname] += 1
    return out


PROPERTY_SETTINGS = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@PROPERTY_SETTINGS
@given(modules())
def test_locations_match_the_compiler(source: str) -> None:
    found = [(loc.qualname, loc.start_line) for loc in list_functions(source)]
    assert found == code_qualnames(source)


@PROPERTY_SETTINGS
@given(modules())
def test_replacing_by_own_source_is_identity_and_diff_is_empty(source: str) -> None:
    lines = source.splitlines(keepends=True)
    for loc, k in occurrences(source):
        own = function_source(source, loc.qualname, occurrence=k)
        result = replace_function(source, loc.qualname, own, occurrence=k)
        assert result == source
        assert unified_diff("pkg/mod.py", source, result) == ""
        # the same code as it stands in the file, at its original indentation
        raw = "".join(lines[loc.start_line - 1 : loc.end_line])
        assert replace_function(source, loc.qualname, raw, occurrence=k) == source


@PROPERTY_SETTINGS
@given(modules(outdent=False))
def test_dedent_then_indent_round_trips(source: str) -> None:
    """Appending a comment forces a real edit: the function's own lines come back unchanged."""
    lines = source.splitlines(keepends=True)
    newline = "\r\n" if "\r\n" in source else "\n"
    for loc, k in occurrences(source):
        own = function_source(source, loc.qualname, occurrence=k)
        result = replace_function(source, loc.qualname, own + "# end\n", occurrence=k)
        last = lines[loc.end_line - 1]
        ending = last[len(last.rstrip("\r\n")) :]
        expected = (
            "".join(lines[: loc.end_line - 1])
            + last.rstrip("\r\n")
            + newline
            + loc.indent
            + "# end"
            + ending
            + "".join(lines[loc.end_line :])
        )
        assert result == expected


@PROPERTY_SETTINGS
@given(modules(), st.data())
def test_new_body_changes_only_that_function(source: str, data: st.DataObject) -> None:
    loc, k = data.draw(st.sampled_from(occurrences(source)))
    node = ast.parse(function_source(source, loc.qualname, occurrence=k)).body[0]
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    node.body = [ast.Return(value=ast.Constant(value=12345))]
    new_code = ast.unparse(node)
    result = replace_function(source, loc.qualname, new_code, occurrence=k)
    before, after = source.splitlines(keepends=True), result.splitlines(keepends=True)
    assert after[: loc.start_line - 1] == before[: loc.start_line - 1]
    tail = len(before) - loc.end_line
    assert after[len(after) - tail :] == before[loc.end_line :]
    assert function_source(result, loc.qualname, occurrence=k) == new_code + "\n"
    compile(result, "m.py", "exec")
    diff = unified_diff("pkg/mod.py", source, result)
    assert ("+" + loc.indent + "    return 12345") in diff

"""Generated test modules as text: the model's answer cleaned, tests listed, tests kept or dropped.

Names are ``test_x`` for module-level functions and ``TestClass.test_x`` for methods, matching
pytest's node ids after the file (``path::TestClass::test_x`` -> ``TestClass.test_x``).
"""

from __future__ import annotations

import ast
from collections.abc import Collection
from typing import TypeGuard

from equisa_core.common.llm_text import InvalidAnswerError, strip_think_and_fences

__all__ = ["clean_generated_module", "list_tests", "keep_tests", "node_id_name"]


def _is_test(node: ast.AST) -> TypeGuard[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Whether ``node`` is a test function (its name starts with ``test``)."""
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")


def list_tests(source: str) -> dict[str, str]:
    """Test name -> its source segment (decorators included), in order; {} when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    lines = source.splitlines(keepends=True)
    found: dict[str, str] = {}

    def segment(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        return "".join(lines[first - 1 : node.end_lineno])

    for node in tree.body:
        if _is_test(node):
            found[node.name] = segment(node)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if _is_test(item):
                    found[f"{node.name}.{item.name}"] = segment(item)
    return found


def keep_tests(source: str, keep: Collection[str]) -> str:
    """``source`` without the tests not named in ``keep`` (whole lines cut); a class left without
    any method keeps a ``pass``."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    cut: set[int] = set()
    fillers: dict[int, str] = {}

    def drop(node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        cut.update(range(first - 1, node.end_lineno or node.lineno))

    for node in tree.body:
        if _is_test(node) and node.name not in keep:
            drop(node)
        elif isinstance(node, ast.ClassDef):
            dropped = [i for i in node.body if _is_test(i) and f"{node.name}.{i.name}" not in keep]
            for item in dropped:
                drop(item)
            if dropped and len(dropped) == len(node.body):
                fillers[node.end_lineno or node.lineno] = " " * (node.col_offset + 4) + "pass\n"
    out = []
    for index, line in enumerate(lines):
        if index not in cut:
            out.append(line)
        if index + 1 in fillers:
            out.append(fillers[index + 1])
    return "".join(out)


def node_id_name(test_id: str) -> str:
    """The test name of a pytest node id: 'a/test_x.py::T::test_y[1]' -> 'T.test_y'."""
    parts = [p.split("[", 1)[0] for p in test_id.split("::")[1:]]
    return ".".join(parts)


def clean_generated_module(answer: str) -> str:
    """The test module in a model's answer: fences and think blocks removed; it must parse and define
    a test function or a test class. Raises InvalidAnswerError otherwise."""
    code = strip_think_and_fences(answer).strip("\n")
    try:
        ast.parse(code)
    except (SyntaxError, ValueError) as exc:
        raise InvalidAnswerError(f"the test module does not parse: {exc}", answer=answer) from exc
    if not list_tests(code):
        raise InvalidAnswerError("the answer defines no test function or test method", answer=answer)
    return code.rstrip() + "\n"

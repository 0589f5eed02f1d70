"""The shadow plugin's code objects: the target's function found by qualified name among a module's
nested ``co_consts`` (never run), its executable lines, and the key its frames are matched by.
Standard library only (it runs in the suite's interpreter)."""

from __future__ import annotations

import dis
import os
import types
from collections.abc import Iterator

_CO_GENERATOR = 0x20
_CO_VARARGS = 0x04
_CO_VARKEYWORDS = 0x08
_CO_ASYNC = 0x80 | 0x100 | 0x200  # coroutine, iterable coroutine, async generator
_FUNCTION_FLAGS = 0x01 | 0x02  # CO_OPTIMIZED | CO_NEWLOCALS: a function's code, not a class body's


def _code_tree(
    code: types.CodeType,
    prefix: str,
    in_class: bool,
) -> Iterator[tuple[str, types.CodeType, bool]]:
    """(qualified name, code, defined in a class body) of every function and class body nested in
    ``code``, in source order; lambdas and comprehensions are left out."""
    for const in code.co_consts:
        if not isinstance(const, types.CodeType) or const.co_name.startswith("<"):
            continue
        qualname = prefix + const.co_name
        yield qualname, const, in_class
        is_function = bool(const.co_flags & _FUNCTION_FLAGS == _FUNCTION_FLAGS)
        yield from _code_tree(const, qualname + (".<locals>." if is_function else "."), not is_function)


def find_code(text: str, filename: str, qualname: str) -> tuple[types.CodeType, bool] | None:
    """The code object of the function ``qualname`` in the module ``text`` (compiled, never run),
    and whether it is defined in a class body; the first definition when there are several (a
    property's getter before its setter). None when there is none."""
    module = compile(text, filename, "exec", dont_inherit=True)
    for name, code, in_class in _code_tree(module, "", False):
        if name == qualname and code.co_flags & _FUNCTION_FLAGS == _FUNCTION_FLAGS:
            return code, in_class
    return None


def _own_codes(code: types.CodeType) -> list[types.CodeType]:
    """``code`` and the comprehensions and lambdas nested in it (their lines are the function's)."""
    codes = [code]
    for const in code.co_consts:
        if isinstance(const, types.CodeType) and const.co_name.startswith("<"):
            codes += _own_codes(const)
    return codes


def executable_lines(code: types.CodeType) -> list[int]:
    """The lines of the function's body that hold instructions (the ``def`` line left out)."""
    lines: set[int] = set()
    for index, own in enumerate(_own_codes(code)):
        for _, line in dis.findlinestarts(own):
            if line is not None and (index > 0 or line != code.co_firstlineno):
                lines.add(line)
    return sorted(lines)


def _key(code: types.CodeType) -> tuple[str, int, str]:
    return os.path.realpath(code.co_filename), code.co_firstlineno, code.co_name

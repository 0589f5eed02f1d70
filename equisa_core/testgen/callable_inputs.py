"""Callables as inputs of the input search (issue 49): a small set of well-behaved callables whose
source a test file can hold and a maintainer can read, chosen by how the function calls the
parameter (``usage_shapes``: the number of positional arguments at its call sites).

- builtins (``len``, ``str``, ``abs``...) and ``operator`` functions (``operator.add``,
  ``operator.itemgetter(0)``), lambdas (``lambda x: x``, ``lambda *args: args``);
- for a parameter whose docstring is read (``func.__doc__``: a decorator that combines docstrings),
  small module-level functions carrying docstrings (Google, reST or epydoc style, as the module's
  own strings show), which the search's driver and the generated test module both define
  (``DOCUMENTED``); a decorator is applied to a fresh copy of one,
  ``functools.wraps(google_documented)(lambda *args: None)``, so no test changes another's function.

The texts are the whole vocabulary: a text outside them is never drawn nor written
(``is_callable_text``). ``callable_strategy`` writes the Hypothesis strategy's text: the texts
sampled, each draw made by the driver's ``_callable`` (a fresh object, its text kept for the
record). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "DOCUMENTED",
    "applied_texts",
    "callable_imports",
    "callable_strategy",
    "definitions_used",
    "documented_styles",
    "is_callable_text",
    "recorded_callable_text",
]

#: Callables by the number of positional arguments they are called with (-1: any number).
_BY_ARITY: dict[int, tuple[str, ...]] = {
    0: ("list", "dict", "int", "lambda: None"),
    1: ("len", "str", "abs", "bool", "repr", "sorted", "sum", "max", "lambda x: x",
        "operator.itemgetter(0)", "operator.not_"),
    2: ("operator.add", "operator.mul", "max", "min", "lambda x, y: x", "lambda *args: args"),
    3: ("lambda x, y, z: x", "lambda *args: args"),
    -1: ("lambda *args: args", "lambda x: x", "len", "str", "bool", "operator.add"),
}

#: Module-level functions carrying a docstring in each style: name -> definition. A test module that
#: names one defines it (``definitions_used``).
DOCUMENTED: dict[str, str] = {
    "google_documented": '''def google_documented(a, b=1):
    """Add two numbers.

    Args:
        a (int): the first number.
        b (int, optional): the second number. Defaults to 1.

    Returns:
        int: their sum.

    Raises:
        TypeError: when they cannot be added.
    """
    return a + b
''',
    "rest_documented": '''def rest_documented(a, c=None):
    """Scale a number.

    :param a: the number.
    :type a: int
    :param c: the factor, or none.
    :returns: the scaled number.
    :rtype: int
    :raises ValueError: when the factor is negative.
    """
    return a * (c or 1)
''',
    "epydoc_documented": '''def epydoc_documented(a, d=0):
    """Shift a number.

    @param a: the number.
    @type a: int
    @param d: the shift.
    @return: the shifted number.
    @rtype: int
    @raise KeyError: never.
    """
    return a + d
''',
}

#: What in a module's own text shows each docstring style.
_STYLE_MARKS = {"google_documented": ("Args", "Returns", "Raises"),
                "rest_documented": (":param", ":returns", ":raises", ":type"),
                "epydoc_documented": ("@param", "@return", "@raise", "@type")}


def documented_styles(source: str) -> tuple[str, ...]:
    """The documented functions (``DOCUMENTED`` names) whose style ``source`` shows; all of them
    when it shows none."""
    shown = tuple(name for name, marks in _STYLE_MARKS.items() if any(mark in source for mark in marks))
    return shown or tuple(DOCUMENTED)


def applied_texts(documented: Iterable[str]) -> tuple[str, ...]:
    """Fresh copies of ``documented`` functions (a decorator may set their docstring) and a plain
    lambda: what a decorator factory's result is applied to."""
    return (*(f"functools.wraps({name})(lambda *args: None)" for name in documented), "lambda *args: None")


def _texts(arity: int, documented: Iterable[str]) -> tuple[str, ...]:
    """The callables offered for a parameter called with ``arity`` positional arguments."""
    named = tuple(documented)
    if named:
        return named
    return _BY_ARITY.get(arity, _BY_ARITY[-1])


def _known() -> frozenset[str]:
    texts = {text for group in _BY_ARITY.values() for text in group}
    return frozenset(texts | set(DOCUMENTED) | set(applied_texts(DOCUMENTED)))


_KNOWN = _known()


def is_callable_text(text: str) -> bool:
    """Whether ``text`` is one of the callables the search draws (and a test may hold)."""
    return text in _KNOWN


def callable_strategy(arity: int = -1, documented: Iterable[str] = (), applied: bool = False) -> str:
    """A Hypothesis strategy's text drawing callables for a parameter called with ``arity``
    positional arguments (-1: not known); ``documented``: the documented functions to draw instead
    (copies of them when ``applied``: what a decorator is applied to)."""
    texts = applied_texts(documented) if applied else _texts(arity, documented)
    return f"st.sampled_from({list(texts)!r}).map(_callable)"


def definitions_used(texts: Iterable[str]) -> list[str]:
    """The definitions (``DOCUMENTED``) that code holding ``texts`` needs, in a fixed order."""
    joined = " ".join(texts)
    return [definition for name, definition in DOCUMENTED.items() if name in joined]


def recorded_callable_text(type_name: str, shown: str | None) -> str | None:
    """The text of a callable the probe recorded (by its type and repr only): a builtin the search
    offers as itself (``<built-in function len>`` is ``len``), any other function as
    ``lambda *args: args`` (a function was passed: evidence for the search, not its behaviour)."""
    builtin = type_name == "builtins.builtin_function_or_method"
    if builtin and shown and shown.startswith("<built-in function "):
        name = shown.removeprefix("<built-in function ").removesuffix(">")
        return name if is_callable_text(name) else "lambda *args: args"
    return "lambda *args: args" if type_name == "builtins.function" else None


def callable_imports(texts: Iterable[str]) -> set[str]:
    """The imports code holding the callable ``texts`` needs (``operator``, ``functools``)."""
    joined = " ".join(texts)
    return {f"import {module}" for module in ("operator", "functools") if f"{module}." in joined}

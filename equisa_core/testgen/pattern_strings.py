"""Strings a module's regular expressions look for: for each pattern the module passes to ``re``
as a literal (``re.compile(r"[A-Z]")``, ``re.sub(r"_(\\w)", ...)``), the shortest text it finds, so
that the input search draws the characters and neighbours the code branches on (an upper-case letter
after a lower-case one for ``(?<=[a-z])[A-Z]``), which short texts over the module's other strings
rarely hold.

The texts come from Hypothesis's ``from_regex``, shrunk by ``find`` with a fixed seed
(``derandomize``): the same module gives the same texts. Writing a regex sampler by hand would
repeat what ``from_regex`` already does for every construct ``re`` accepts.
"""

from __future__ import annotations

import ast
import functools
import re

from hypothesis import HealthCheck, find, settings
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException

__all__ = ["MAX_PATTERNS", "module_patterns", "pattern_strings", "shortest_match"]

#: Patterns read per module (the first ones in source order): each costs a shrink of about 0.4 s.
MAX_PATTERNS = 8
#: ``re``'s functions whose first argument is a pattern.
_RE_FUNCTIONS = frozenset({"compile", "search", "match", "fullmatch", "sub", "subn", "split", "findall",
                           "finditer"})
#: Printable ASCII: a found text is written into a test module.
_ALPHABET = st.characters(codec="ascii", categories=["L", "N", "P", "S", "Zs"])
_FIND = settings(database=None, derandomize=True, max_examples=10, suppress_health_check=list(HealthCheck))


def module_patterns(tree: ast.Module) -> list[str]:
    """The literal patterns the module passes to ``re.<function>`` (or to a function it imported
    from ``re``), each once, in ``ast.walk`` order, at most ``MAX_PATTERNS``."""
    imported = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and node.module == "re" for alias in node.names if alias.name in _RE_FUNCTIONS}
    patterns = [
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and _re_function(node.func, imported)
        and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
    ]
    return list(dict.fromkeys(patterns))[:MAX_PATTERNS]


def _re_function(func: ast.expr, imported: set[str]) -> bool:
    """``re.sub`` and the like, or a bare name the module imported from ``re``."""
    if isinstance(func, ast.Attribute):
        return func.attr in _RE_FUNCTIONS and isinstance(func.value, ast.Name) and func.value.id == "re"
    return isinstance(func, ast.Name) and func.id in imported


@functools.lru_cache(maxsize=256)
def shortest_match(pattern: str) -> str | None:
    """The shortest non-empty printable text in which ``pattern`` finds a match (``re.search``); None
    when it does not compile or Hypothesis finds none."""
    try:
        re.compile(pattern)
        text: str = find(st.from_regex(pattern, alphabet=_ALPHABET), bool, settings=_FIND)
    except (re.error, HypothesisException):
        return None
    return text


def pattern_strings(tree: ast.Module) -> list[str]:
    """``shortest_match`` of each of the module's patterns, each once."""
    found = (shortest_match(pattern) for pattern in module_patterns(tree))
    return list(dict.fromkeys(text for text in found if text))

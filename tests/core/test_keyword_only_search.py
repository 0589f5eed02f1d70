"""Keyword-only parameters in the input search (issue 49): drawn like the others and passed by name,
a required one on every call, one with a default on some; the tests written from what the search
kept pass them by name too."""

from __future__ import annotations

import textwrap
from pathlib import Path

from equisa_core.testgen.input_search import read_search_records, search_driver_module
from equisa_core.testgen.search_sequence_tests import sequence_tests
from equisa_core.testgen.searched_members import searched_functions
from tests.core.test_input_search import _run_driver, _run_made, _search_sequences

KEYWORDS = textwrap.dedent('''
    def clip(x: int, *, limit: int, strict: bool = False) -> int:
        if x > limit:
            if strict:
                raise ValueError("over the limit")
            return limit
        return x


    def joined(first, *rest, sep="-"):
        if sep == ",":
            return first
        return sep.join([first, *rest])


    class Counter:
        def __init__(self, *, start: int = 0):
            self.value = 0
            if start > 0:
                self.value = start

        def bump(self, by: int = 1, *, twice: bool = False) -> int:
            if twice:
                self.value += 2 * by
            else:
                self.value += by
            return self.value
''')


def test_keyword_only_parameters_get_strategies_and_recorded_calls_seed_them_by_name():
    seen = {"clip": [("5", "3", "False"), ("7",)]}  # a recorded call holds every parameter, in order
    found = {f.qualname: f for f in searched_functions(KEYWORDS, ["clip", "joined"], seen, [])}
    clip, joined = found["clip"], found["joined"]
    assert clip.typed and len(clip.strategies) == 3
    assert clip.strategies[1].startswith("_keyword('limit', ") and clip.strategies[1].endswith(", True)")
    assert clip.strategies[2] == "_keyword('strict', st.booleans(), False)"
    # The row without ``limit`` would raise TypeError: no seed; the recorded one passes both by name.
    assert clip.seeds == (("5", "_Keyword('limit', 3)", "_Keyword('strict', False)"),)
    assert joined.strategies[-1].startswith("_keyword('sep', ") and not joined.typed


def test_the_search_passes_keyword_only_arguments_by_name_and_reaches_their_branches(tmp_path: Path):
    functions = searched_functions(KEYWORDS, ["clip", "joined"], {}, [])
    driver = search_driver_module("keywords.py", "keywords", functions, 120, 30.0)
    lines = _run_driver(tmp_path, "keywords", KEYWORDS, driver)
    records = {r.qualname: r for r in read_search_records(lines)}
    clip, joined = records["clip"], records["joined"]
    assert clip.error is None and joined.error is None
    assert all(any(a.startswith("limit=") for a in k.args) for k in clip.kept)  # required: always passed
    assert any(k.raised == "ValueError" and "strict=True" in k.args for k in clip.kept)
    assert any(not any(a.startswith("strict=") for a in k.args) for k in clip.kept)  # optional: sometimes
    assert any("sep=','" in k.args for k in joined.kept)
    # Each kept input, written as the call a test makes, does what the search saw.
    namespace: dict[str, object] = {}
    exec(KEYWORDS, namespace)
    for record in (clip, joined):
        for kept in record.kept:
            call = f"{record.qualname}({', '.join(kept.args)})"
            try:
                eval(call, namespace)
                raised = None
            except Exception as error:  # what the call raised is compared
                raised = type(error).__name__
            assert raised == kept.raised, call


def test_method_sequences_pass_keyword_only_arguments_by_name_in_the_search_and_the_tests(tmp_path: Path):
    record = _search_sequences(tmp_path, "keywords", KEYWORDS, ["Counter.bump"], {})
    assert record.error is None
    assert any(a.startswith("start=") for k in record.kept for a in k.init)
    assert any("twice=True" in s.args for k in record.kept for s in k.steps)
    tests, _ = sequence_tests(record, "keywords", 0)
    module = _run_made(tmp_path, "import pytest\nfrom keywords import Counter", tests)
    assert "obj = Counter(start=" in module and "twice=True)" in module

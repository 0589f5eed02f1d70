"""Enum members and classes as inputs of the input search (issue 49): a parameter whose default is an
enum member is drawn from all the enum's members, one whose default is a tuple of classes (or that is
annotated ``Iterable[Type[X]]``) as collections of the module's classes of that base; both are written
by the names the module knows them by, which the tests import from it."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from equisa_core.testgen.boundary import ScratchCall, driver_module
from equisa_core.testgen.input_search import read_search_records, search_driver_module
from equisa_core.testgen.named_inputs import is_named_text, module_names, named_imports, named_strategy
from equisa_core.testgen.search_sequence_tests import sequence_tests
from equisa_core.testgen.searched_members import searched_classes, searched_functions
from tests.core.test_input_search import _run_driver, _run_made

#: The enum lives in another module, imported by the one searched (as ``docstring_parser.util`` does).
STYLES = textwrap.dedent('''
    import enum


    class Style(enum.Enum):
        PLAIN = "plain"
        FANCY = "fancy"
        LOUD = "loud"
''')

SHAPES = textwrap.dedent('''
    import sys
    from typing import Iterable, Type

    from h49_styles import Style


    class Meta:
        pass


    class Param(Meta):
        pass


    class Returns(Meta):
        pass


    class Raises(Meta):
        pass


    def render(text: str, style: Style = Style.PLAIN) -> str:
        if style is Style.LOUD:
            return text.upper() + "!"
        return text


    def excluded(exclude=(Raises,)) -> str:
        if Returns in exclude:
            return "no returns"
        return "returns"


    def kinds(*, exclude: Iterable[Type[Meta]] = ()) -> int:
        if Param in exclude:
            return 0
        return 1


    def plain(x: int, limit=sys.maxsize, scale=2):
        return min(x * scale, limit)


    class Printer:
        def __init__(self, style=Style.PLAIN):
            self.style = style
            self.shown = 0

        def show(self, text: str) -> str:
            self.shown += 1
            if self.style is Style.FANCY:
                return "*" + text + "*"
            return text

        def skips(self, exclude=(Raises,)) -> str:
            if Param in exclude:
                return "skipped"
            return "shown"
''')


def test_enum_defaults_and_class_collections_get_strategies_of_the_module_names():
    qualnames = ["render", "excluded", "kinds", "plain"]
    found = {f.qualname: f for f in searched_functions(SHAPES, qualnames, {}, [])}
    assert found["render"].strategies[1] == "_members('Style', 'Style.PLAIN')"
    assert found["excluded"].strategies == ("_classes(['Raises'], 'tuple')",)
    assert found["kinds"].strategies == ("_keyword('exclude', _classes(['Meta'], 'tuple'), False)",)
    # No evidence of enum members or classes: as before (``sys.maxsize`` gets none, the rest keep defaults).
    assert found["plain"].strategies == (
        "st.one_of(st.sampled_from([-2, -1, 0, 1, 2]), st.integers(min_value=-2, max_value=2))",)


def test_the_evidence_is_read_from_defaults_annotations_and_recorded_values():
    names = module_names(ast.parse(SHAPES + "\nclass Color(enum.Enum):\n    RED = 1\n"))
    assert {"Style", "Meta", "Raises", "sys", "render", "Color"} <= names.bound and names.enums == {"Color"}
    arg = ast.parse("def f(color: Color): pass").body[0].args.args[0]  # type: ignore[attr-defined]
    assert named_strategy(arg.annotation, None, [], names) == "_members('Color', None)"
    recorded = ["h49_styles.Style.FANCY"]  # the probe writes an enum member as module.Class.MEMBER
    assert named_strategy(None, None, recorded, names) == "_members('Style', None)"
    for default in ("sys.maxsize", "MAX_SIZE.real", "(1, 2)", "()", "Style", "Meta.LIMIT"):  # no evidence
        assert named_strategy(None, ast.parse(default, mode="eval").body, ["3"], names) is None, default
    assert named_strategy(None, ast.parse("[ValueError, Param]", mode="eval").body, [], names) == (
        "_classes(['ValueError', 'Param'], 'list')")
    assert is_named_text("(Returns, Param)", ["Returns", "Param"]) and is_named_text("Style.LOUD", ["Style"])
    assert not is_named_text("inf", ["Style"]) and not is_named_text("Style.LOUD", [])
    imported = named_imports(["(ValueError, Returns)", "Style.LOUD"], ["Returns", "Style"])
    assert imported == ["Returns", "Style"]  # a builtin class needs no import


@pytest.fixture
def searched(tmp_path: Path) -> Path:
    """``tmp_path`` holding the module the searched one imports its enum from."""
    (tmp_path / "h49_styles.py").write_text(STYLES)
    return tmp_path


def test_the_search_draws_members_and_classes_and_reaches_their_branches(searched: Path,
                                                                        monkeypatch: pytest.MonkeyPatch):
    functions = searched_functions(SHAPES, ["render", "excluded", "kinds"], {}, [])
    driver = search_driver_module("h49_shapes.py", "h49_shapes", functions, 100, 30.0)
    lines = _run_driver(searched, "h49_shapes", SHAPES, driver)
    records = {r.qualname: r for r in read_search_records(lines)}
    assert all(r.error is None for r in records.values())
    assert {"Style", "Returns", "Raises", "Param"} <= {n for r in records.values() for n in r.names}
    assert any("style=Style.LOUD" in k.args or "Style.LOUD" in k.args for k in records["render"].kept)
    assert any("Returns" in k.args[0] for k in records["excluded"].kept if k.args)
    assert any("Param" in a for k in records["kinds"].kept for a in k.args)
    # Each kept input, called as the host's driver module writes it (its imports), does what the search saw.
    monkeypatch.syspath_prepend(str(searched))
    calls = [ScratchCall(test="t", qualname=r.qualname, call=f"{r.qualname}({', '.join(k.args)})")
             for r in records.values() for k in r.kept]
    drive = driver_module("h49_shapes", calls, sorted({n for r in records.values() for n in r.names}))
    namespace: dict[str, object] = {}
    exec(drive.split("\n\n\n", 1)[0], namespace)  # its imports
    results = {eval(c.call, namespace) for c in calls}
    assert {"no returns", "returns", 0, 1} <= results and any(str(r).endswith("!") for r in results)


def test_method_sequences_draw_members_and_classes_and_their_tests_import_them_and_pass(searched: Path):
    classes = searched_classes(SHAPES, ["Printer.show"], {}, [])
    assert classes[0].init == ("_members('Style', 'Style.PLAIN')",)
    driver = search_driver_module("h49_shapes.py", "h49_shapes", [], 100, 30.0, classes)
    from equisa_core.testgen.input_search import read_sequence_records

    (record,) = read_sequence_records(_run_driver(searched, "h49_shapes", SHAPES, driver))
    assert record.error is None
    tests, _ = sequence_tests(record, "h49_shapes", 0)
    code = "\n".join(t.code for t in tests)
    assert "Printer(Style.FANCY)" in code and "== '*" in code  # the branch only FANCY reaches, asserted
    assert "Param" in code and "== 'skipped'" in code
    imports = sorted({line for t in tests for line in t.imports})
    assert "from h49_shapes import Style" in imports and "from h49_shapes import Param" in imports
    _run_made(searched, "\n".join(imports), tests)

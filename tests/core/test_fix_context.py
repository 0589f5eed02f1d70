"""Tests for equisa_core.mutation.fix_context: what a fix may draw on beyond its function."""

from __future__ import annotations

import textwrap

import pytest

from equisa_core.errors import FunctionNotFoundError
from equisa_core.mutation.fix_context import FixContext, fix_context, literal_constants

MODULE = textwrap.dedent(
    '''
    """A shop's basket."""
    import decimal
    from os import path as osp
    import xml.etree.ElementTree

    TAX_RATE = 0.2
    CURRENCY = "EUR"
    MAX_LINES, MIN_LINES = 50, 1
    try:
        import json as codec
    except ImportError:
        FALLBACK = True

    def round_price(amount):
        """Two decimals."""
        return round(amount, 2)

    class Basket:
        """Lines of an order."""
        kind = "basket"

        def __init__(self, owner):
            self.owner = owner
            self.lines = []

        @property
        def size(self):
            return len(self.lines)

        def add(self, sku, quantity=1):
            if quantity > MAX_LINES:
                raise ValueError(f"at most {MAX_LINES} lines")
            self.lines.append((sku, quantity))
            self.last_sku = sku
            return -1 if quantity < 0 else 2

        @staticmethod
        def parse(text):
            def clean(part):
                return part.strip()
            return [clean(p) for p in text.split(",")]
    '''
)


def test_the_module_names_and_their_kinds() -> None:
    context = fix_context(MODULE, "round_price")
    assert context.module_names == {
        "decimal": "import",
        "osp": "import",
        "xml": "import",
        "TAX_RATE": "variable",
        "CURRENCY": "variable",
        "MAX_LINES": "variable",
        "MIN_LINES": "variable",
        "codec": "import",
        "FALLBACK": "variable",
        "round_price": "function",
        "Basket": "class",
    }
    assert context.global_names("variable") == ("TAX_RATE", "CURRENCY", "MAX_LINES", "MIN_LINES", "FALLBACK")
    assert context.global_names("function", "class") == ("round_price", "Basket")


def test_constants_by_type_without_docstrings_or_f_string_parts() -> None:
    context = fix_context(MODULE, "round_price")
    assert context.module_constants == {
        "float": ("0.2",),
        "int": ("1", "2", "50", "0", "-1"),  # 1 and 2 twice each
        "str": ("'EUR'", "'basket'", "','"),
    }
    assert context.function_constants == {"int": ("2",)}
    assert context.constants("int") == ("2", "1", "50", "0", "-1")  # the function's own first


def test_a_method_sees_its_class_attributes_and_methods() -> None:
    context = fix_context(MODULE, "Basket.add")
    assert context.qualname == "Basket.add"
    assert context.class_name == "Basket"
    # body names, `self.x` assigned in any method (in source order), properties
    assert context.class_attributes == ("kind", "owner", "lines", "size", "last_sku")
    assert context.class_methods == ("__init__", "add", "parse")
    assert context.function_constants == {"int": ("1", "0", "-1", "2")}


def test_the_positional_arities_of_functions_and_methods() -> None:
    context = fix_context(MODULE, "Basket.add")
    assert context.function_arities == {"round_price": (1, 1)}
    # the receiver is not counted, except for a static method; a property is no method
    assert context.method_arities == {"__init__": (1, 1), "add": (1, 2), "parse": (1, 1)}


def test_a_nested_function_sees_its_enclosing_class() -> None:
    context = fix_context(MODULE, "Basket.parse.<locals>.clean")
    assert context.class_name == "Basket"
    assert context.function_constants == {}
    assert fix_context(MODULE, "round_price").class_name is None


def test_an_unknown_function_is_refused() -> None:
    with pytest.raises(FunctionNotFoundError):
        fix_context(MODULE, "Basket.remove")


def test_long_strings_and_special_floats_are_not_constants() -> None:
    import ast

    tree = ast.parse("x = 'a' * 3\ny = '" + "z" * 41 + "'\nz = -2.5\nw = b'ok'\n")
    assert literal_constants(tree) == {
        "bytes": ("b'ok'",),
        "float": ("-2.5",),
        "int": ("3",),
        "str": ("'a'",),
    }


def test_the_context_is_frozen_and_serializable() -> None:
    context = fix_context(MODULE, "Basket.add")
    assert FixContext.model_validate_json(context.model_dump_json()) == context
    assert FixContext() == FixContext(qualname="")


def test_the_other_functions_statements_and_the_module_s_exceptions() -> None:
    module = textwrap.dedent(
        """
        import json

        class ConfigError(ValueError):
            pass

        def load(path):
            try:
                return json.load(open(path))
            except (OSError, json.JSONDecodeError):
                raise ConfigError(path)

        def keys(config):
            found = []
            for key in config:
                found.append(key)
                found.append(key)
            return found

        def far_away(items):
            total = sum(items)
            yield total
        """
    )
    context = fix_context(module, "keys")
    texts = [s.text for s in context.copyable_statements]
    # the nearest function's first, repeats and the function's own statements left out; a
    # statement that yields is not copyable, nor is a bare expression that is not a call
    assert texts == ["return json.load(open(path))", "total = sum(items)"]
    assert [s.parameters for s in context.copyable_statements] == [("path",), ("items",)]
    assert context.exceptions == ("ConfigError", "OSError", "json.JSONDecodeError")
    assert FixContext.model_validate_json(context.model_dump_json()) == context

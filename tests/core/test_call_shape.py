"""How generated tests call and construct: parameter kinds and bindings read from definitions, and the
constructors that rebuild an object from its attributes (checked by building the object both ways)."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from decimal import Decimal

import pytest

from equisa_core.testgen.call_shape import Constructor, call_shape, constructor_of, init_parameters


def test_parameter_kinds_and_bindings_come_from_the_definition():
    shape = call_shape("def f(a, /, b, *rest, scale=1, **options):\n    pass\n", in_class=False)
    assert shape is not None and shape.binding == "function"
    assert shape.parameters == (("a", "positional_only"), ("b", "positional"), ("rest", "var_positional"),
                                ("scale", "keyword_only"), ("options", "var_keyword"))
    assert call_shape("def m(self, x):\n    pass\n", in_class=True).binding == "method"
    assert call_shape("@classmethod\ndef c(cls, x):\n    pass\n", in_class=True).binding == "classmethod"
    assert call_shape("@staticmethod\ndef s(x):\n    pass\n", in_class=True).binding == "staticmethod"
    for not_a_call in ("@property\ndef p(self):\n    pass\n", "async def a(x):\n    pass\n", "x = 1\n",
                       "def m(*args):\n    pass\n"):
        assert call_shape(not_a_call, in_class=True) is None, not_a_call


MODULE = textwrap.dedent('''
    from dataclasses import dataclass, field
    from decimal import Decimal


    @dataclass(frozen=True)
    class Money:
        amount: Decimal
        currency: str = "EUR"

        def __post_init__(self):
            object.__setattr__(self, "amount", self.amount.quantize(Decimal("0.01")))
            object.__setattr__(self, "currency", self.currency.upper())


    @dataclass(kw_only=True)
    class Options:
        verbose: bool = False


    class Percent:
        """Checked, converted, stored."""

        def __init__(self, value):
            value = Decimal(value)
            if not 0 < value <= 100:
                raise ValueError(value)
            self.value = value


    class Derived:
        def __init__(self, low, high):
            self.low = low
            self.width = high - low


    class Slotted:
        __slots__ = ("x",)

        def __init__(self, x):
            self.x = x


    class Child(Percent):
        pass


    @dataclass
    class Hidden:
        shown: int
        cache: dict = field(init=False, default_factory=dict)


    class Stack:
        def __init__(self, strip=False):
            self.preprocess = []
            self.grouping = False
            self.strip = strip


    class Filters:
        def __init__(self, strip_semicolon=False, name="f"):
            self.steps = []
            self.name = name
            if strip_semicolon:
                self.steps.append("strip")
''')


def test_constructors_that_rebuild_their_objects_and_those_that_do_not():
    assert init_parameters(MODULE, "Money") == (("amount", "positional"), ("currency", "positional"))
    assert init_parameters(MODULE, "Options") == (("verbose", "keyword_only"),)
    assert init_parameters(MODULE, "Percent") == (("value", "positional"),)
    for qualname in ("Derived", "Slotted", "Child", "Hidden", "Missing", "Stack"):
        assert init_parameters(MODULE, qualname) is None, qualname


def test_a_constructor_that_also_stores_literals_rebuilds_objects_that_still_hold_them():
    assert constructor_of(MODULE, "Stack") == Constructor(
        parameters=(("strip", "positional"),), constants=(("preprocess", "[]"), ("grouping", "False")))
    assert constructor_of(MODULE, "Money") == Constructor(
        parameters=(("amount", "positional"), ("currency", "positional")))
    assert constructor_of(MODULE, "Derived") is None
    # ``if strip_semicolon:`` with a falsy default: called without it, the literal still holds.
    assert constructor_of(MODULE, "Filters") == Constructor(
        parameters=(("name", "keyword_only"),), constants=(("steps", "[]"),))


@pytest.mark.parametrize("qualname, arguments",
                         [("Money", (Decimal("5.991"), "eur")), ("Percent", ("12.5",))])
def test_a_known_constructor_called_with_the_attributes_gives_the_same_state(qualname, arguments):
    namespace: dict[str, object] = {"dataclass": dataclass}
    exec(compile(MODULE, "module.py", "exec"), namespace)
    cls = namespace[qualname]
    made = cls(*arguments)
    parameters = init_parameters(MODULE, qualname)
    assert parameters is not None
    again = cls(*(getattr(made, name) for name, _ in parameters))
    assert vars(again) == vars(made)

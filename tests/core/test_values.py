"""Builds: the probe writes them, ``equisa_core.common.values`` checks, decodes and writes them as code."""

from __future__ import annotations

import ast
import datetime
import decimal
import fractions
import importlib
import sys
import textwrap
import threading
import uuid
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import pytest

from equisa_core.common.models import EncodedValue
from equisa_core.common.values import (
    MAX_BUILD_NESTING,
    MAX_BUILD_TEXT,
    ClassValue,
    EnumMember,
    ObjectValue,
    build_expression,
    build_of,
    decode_value,
    object_build,
    parse_build,
    walk_build,
)
from equisa_core.errors import ProbeProtocolError
from equisa_core.probe import equisa_probe
from equisa_core.probe.equisa_probe import encode_value

D = decimal.Decimal

# A module of user classes, importable by name as the probe requires (classes of a test module
# defined under pytest's rootdir-relative names would work too, but this keeps the names short).
LEDGER = '''
import dataclasses
import decimal
import enum
import typing


@dataclasses.dataclass(frozen=True)
class Money:
    amount: decimal.Decimal
    currency: str = "EUR"


class Threshold:
    def __init__(self, minimum, off):
        self.minimum = Money(decimal.Decimal(minimum))
        self.off = Money(decimal.Decimal(off))


class Point:
    __slots__ = ("x", "y", "__tag", "unset")

    def __init__(self, x, y):
        self.x = x
        self.y = y
        self.__tag = "p"


class Both:
    __slots__ = ("slot", "__dict__")

    def __init__(self):
        self.slot = 1
        self.extra = decimal.Decimal("2.5")


@dataclasses.dataclass(frozen=True, slots=True)
class Frozen:
    when: object
    note: str = ""


class Status(enum.Enum):
    OPEN = "open"
    PAID = "paid"


class Perm(enum.IntFlag):
    R = 4
    W = 2


T = typing.TypeVar("T")


@dataclasses.dataclass
class Box(typing.Generic[T]):
    item: object


class Chain:
    def __init__(self, depth):
        self.next = Chain(depth - 1) if depth else None


class Guarded:
    """Every attribute lookup, comparison and hash of user code raises: the probe must not call them."""

    def __init__(self):
        self.value = decimal.Decimal("1")

    def __getattribute__(self, name):
        raise RuntimeError("user __getattribute__ ran")

    def __eq__(self, other):
        raise RuntimeError("user __eq__ ran")

    __hash__ = None


class Error(Exception):
    pass


class Amount(decimal.Decimal):
    pass


class Items(list):
    pass


class Holder:
    def __init__(self, kind):
        self.kind = kind


def local_instance():
    class Local:
        pass
    return Local()
'''


@pytest.fixture(scope="module")
def ledger(tmp_path_factory):
    root = tmp_path_factory.mktemp("ledger")
    (root / "ledger_types.py").write_text(textwrap.dedent(LEDGER), encoding="utf-8")
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module("ledger_types")
    finally:
        sys.path.remove(str(root))
        sys.modules.pop("ledger_types", None)


def build(value: Any) -> str | None:
    return encode_value(value).get("build")


class _Recorder:
    """A ``values.Emitter`` that imports stdlib modules plainly and classes from their module."""

    def __init__(self) -> None:
        self.imports: set[str] = set()
        self.setup: list[str] = []
        self.names: set[str] = set()

    def module(self, name: str) -> str:
        self.imports.add(f"import {name}")
        return name

    def cls(self, module: str | None, qualname: str) -> str | None:
        if module is None:  # an enum's class path: the module is all but the last part here
            module, _, qualname = qualname.rpartition(".")
        self.imports.add(f"import {module}")
        return f"{module}.{qualname}"

    def variable(self, hint: str) -> str:
        name = hint
        while name in self.names:
            name += "_"
        self.names.add(name)
        return name

    def statement(self, line: str) -> None:
        self.setup.append(line)


def rebuild(text: str) -> Any:
    """Run the code ``build_expression`` writes for ``text`` and return the value it makes."""
    emitter = _Recorder()
    expression = build_expression(parse_build(text), emitter, "obj")
    assert expression is not None
    namespace: dict[str, Any] = {}
    exec("\n".join([*sorted(emitter.imports), *emitter.setup, f"__value__ = {expression}"]), namespace)
    return namespace["__value__"]


# ---------------------------------------------------------------------------------------------
# Round trips: probe -> build -> decoded value and rebuilt value.

STDLIB_VALUES = [
    D("10.00"),
    D("-0.5"),
    D("-Infinity"),
    D(7),
    fractions.Fraction(1, 3),
    fractions.Fraction(-7, 2),
    datetime.date(2024, 1, 1),
    datetime.datetime(2024, 2, 29, 13, 45, 1, 250),
    datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC),
    datetime.datetime(2024, 1, 1, 8, tzinfo=datetime.timezone(datetime.timedelta(hours=-5, minutes=-30))),
    datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=1), "CET"), fold=1),
    datetime.time(23, 59, 59, 999999),
    datetime.time(8, tzinfo=datetime.UTC),
    datetime.timedelta(0),
    datetime.timedelta(days=-1, seconds=5, microseconds=7),
    datetime.timezone(datetime.timedelta(hours=2)),
    datetime.UTC,
    uuid.UUID("12345678-1234-5678-1234-567812345678"),
    PurePosixPath("a/b.txt"),
    PureWindowsPath("C:/Users/x"),
    Path("/tmp/x"),
    float("inf"),
    float("-inf"),
    [D("1"), fractions.Fraction(1, 2)],
    (D("1"),),
    {D("1.5"): datetime.date(2024, 1, 1), "k": [uuid.UUID(int=1)]},
    {D("1"), D("2")},
    frozenset({datetime.date(2024, 1, 2), datetime.date(2024, 1, 1)}),
    (float("inf"), [1, (2, "x")]),
]


@pytest.mark.parametrize("value", STDLIB_VALUES, ids=repr)
def test_stdlib_values_round_trip(value: Any) -> None:
    encoded = EncodedValue.model_validate(encode_value(value))
    assert encoded.literal is None and encoded.build is not None
    decoded = decode_value(encoded.build)
    assert decoded == value and type(decoded) is type(value)
    rebuilt = rebuild(encoded.build)
    assert rebuilt == value and type(rebuilt) is type(value)
    assert build_of(encoded) == encoded.build
    if isinstance(value, datetime.datetime | datetime.time) and value.tzinfo is not None:
        assert rebuilt.tzname() == value.tzname()


def test_nan_is_built_but_never_equal_and_nan_decimals_have_no_build() -> None:
    assert build(float("nan")) == "float('nan')"
    assert decode_value("float('nan')") != decode_value("float('nan')")
    assert build([1.0, float("nan")]) == "[1.0, float('nan')]"
    assert build(D("NaN")) is None and build(D("sNaN")) is None  # comparing them raises


def test_literals_keep_their_literal_and_get_no_build() -> None:
    for value in (1, "x", [1, 2.5], {"a": (1, None)}, b"x", 1 + 2j):
        encoded = encode_value(value)
        assert "build" not in encoded and "literal" in encoded
        assert build_of(EncodedValue.model_validate(encoded)) == repr(value)


def test_old_records_without_build_still_parse() -> None:
    old = EncodedValue.model_validate({"type": "shop.Rate", "repr": "<Rate>", "state": {"percent": "20"}})
    assert old.build is None and build_of(old) is None


def test_a_frozen_dataclass_holding_a_decimal(ledger) -> None:
    money = ledger.Money(D("100.00"))
    text = build(money)
    assert text == ("__equisa_object__('ledger_types:Money', "
                    "{'amount': decimal.Decimal('100.00'), 'currency': 'EUR'})")
    decoded = decode_value(text)
    assert isinstance(decoded, ObjectValue)
    assert decoded.__type__ == "ledger_types:Money"
    assert decoded.amount == D("100.00") and decoded.currency == "EUR"
    assert dict(decoded.__attributes__) == {"amount": D("100.00"), "currency": "EUR"}
    with pytest.raises(AttributeError):
        decoded.amount = 1
    with pytest.raises(AttributeError):
        decoded.missing  # noqa: B018
    assert rebuild(text) == money  # frozen: rebuilt without __setattr__ and without __init__


def test_objects_nested_two_levels(ledger) -> None:
    threshold = ledger.Threshold("100", "10")
    text = build(threshold)
    decoded = decode_value(text)
    assert decoded.minimum.amount == D("100") and decoded.off.__type__ == "ledger_types:Money"
    emitter = _Recorder()
    expression = build_expression(parse_build(text), emitter, "obj")
    assert expression == "obj"
    assert emitter.setup[0] == "obj_minimum = ledger_types.Money.__new__(ledger_types.Money)"
    assert emitter.setup[-2:] == [
        "obj = ledger_types.Threshold.__new__(ledger_types.Threshold)",
        "obj.__dict__.update({'minimum': obj_minimum, 'off': obj_off})",
    ]
    rebuilt = rebuild(text)
    assert type(rebuilt) is ledger.Threshold and vars(rebuilt) == vars(threshold)


def test_slots_private_names_unset_slots_and_slots_with_a_dict(ledger) -> None:
    point = ledger.Point(1, D("2"))
    text = build(point)
    assert text == ("__equisa_object__('ledger_types:Point', {}, "
                    "{'x': 1, 'y': decimal.Decimal('2'), '_Point__tag': 'p'})")
    rebuilt = rebuild(text)
    assert (rebuilt.x, rebuilt.y, rebuilt._Point__tag) == (1, D("2"), "p")
    assert not hasattr(rebuilt, "unset")
    assert decode_value(text).y == D("2")
    both = rebuild(build(ledger.Both()))
    assert (both.slot, both.extra) == (1, D("2.5"))
    frozen = ledger.Frozen(datetime.date(2024, 5, 1), "due")
    assert rebuild(build(frozen)) == frozen


def test_generic_dataclasses_and_enum_members(ledger) -> None:
    box = ledger.Box(ledger.Status.PAID)
    assert build(box) == "__equisa_object__('ledger_types:Box', {'item': ledger_types.Status.PAID})"
    assert rebuild(build(box)) == box
    assert build(ledger.Status.OPEN) == "ledger_types.Status.OPEN"
    assert decode_value("ledger_types.Status.OPEN") == EnumMember("ledger_types.Status", "OPEN")
    assert rebuild("ledger_types.Status.OPEN") is ledger.Status.OPEN
    assert build(ledger.Perm.R) == "ledger_types.Perm.R"
    assert build(ledger.Perm.R | ledger.Perm.W) is None  # a combination has no member to name


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.Error("boom"),  # exceptions keep args in C
        lambda m: m.Amount("1"),  # a Decimal subclass keeps its digits in C
        lambda m: m.Items([1]),  # a list subclass keeps its items in C
        lambda m: m.local_instance(),  # not importable by name
        lambda m: m.Chain(5),  # nested deeper than the probe writes
        lambda m: object(),  # a sentinel: only its identity means something
        lambda m: threading.Lock(),
        lambda m: m.Money(threading.Lock()),  # one attribute without a build
        lambda m: print,
        lambda m: type(m.local_instance()),  # a class not importable by name
        lambda m: list(range(1000)),  # more items than a build holds
        lambda m: ["x" * 3000],  # more characters than a build holds
    ],
    ids=["exception", "decimal-subclass", "list-subclass", "local-class", "too-deep", "sentinel", "lock",
         "unbuildable-attribute", "builtin-function", "local-class-itself", "too-many-items", "too-long"],
)
def test_values_without_a_build(ledger, make) -> None:
    assert build(make(ledger)) is None


def test_classes_are_values_named_where_they_are_imported_from(ledger) -> None:
    """A function that returns types (``[(1, int)]``) or objects holding one can be asserted."""
    text = build(([(1, int)], {"money": ledger.Money}))
    assert text == ("([(1, __equisa_class__('builtins:int'))], "
                    "{'money': __equisa_class__('ledger_types:Money')})")
    expected = ([(1, ClassValue("builtins:int"))], {"money": ClassValue("ledger_types:Money")})
    assert decode_value(text) == expected
    assert repr(decode_value(text)[0][0][1]) == "int"
    emitter = _Recorder()
    assert build_expression(parse_build(text), emitter, "x") == "([(1, int)], {'money': ledger_types.Money})"
    assert rebuild(text) == ([(1, int)], {"money": ledger.Money})
    holder = ledger.Holder(float)
    assert rebuild(build(holder)).kind is float


def test_the_probe_runs_no_user_code_to_build(ledger) -> None:
    guarded = ledger.Guarded()
    text = build(guarded)
    assert text == "__equisa_object__('ledger_types:Guarded', {'value': decimal.Decimal('1')})"


def test_depth_limit_of_the_probe(ledger) -> None:
    assert decode_value(build(ledger.Chain(4))).next.next.next.next.next is None
    assert build(ledger.Chain(5)) is None
    assert equisa_probe.MAX_BUILD_DEPTH == 5


# ---------------------------------------------------------------------------------------------
# The grammar: what is accepted and what is rejected.

ACCEPTED = [
    "None", "True", "-1", "+2.5", "1e999", "(1-2j)", "b'x'", "'s'", "[]", "()", "{}", "set()",
    "frozenset()", "frozenset({1, 2})", "[1, (2,), {3: 'x'}, {4}]",
    "float('nan')", "float('-inf')",
    "decimal.Decimal('1.50')", "decimal.Decimal(-3)", "fractions.Fraction(1, 3)", "fractions.Fraction(2)",
    "datetime.date(2024, 1, 1)", "datetime.date(year=2024, month=1, day=1)",
    "datetime.datetime(2024, 1, 1, 0, 0, 0, 0, tzinfo=datetime.timezone.utc, fold=1)",
    "datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(seconds=3600), 'CET'))",
    "datetime.time()", "datetime.time(1, 2, tzinfo=None)", "datetime.timedelta(0)",
    "datetime.timedelta(days=-1, seconds=5)", "datetime.timezone.utc",
    "uuid.UUID('12345678-1234-5678-1234-567812345678')", "pathlib.PurePosixPath('a/b')",
    "pkg.mod.Status.OPEN", "a.b.C.D.E",
    "__equisa_object__('pkg.mod:Money', {'amount': decimal.Decimal('1')})",
    "__equisa_object__('pkg.mod:Outer.Inner', {}, {'slot': [1, pkg.mod.Status.OPEN]})",
    "__equisa_object__(type='m:C', attributes={'x': 1})",
    "__equisa_class__('builtins:int')", "[(1, __equisa_class__('pkg.mod:Outer.Inner'))]",
]


@pytest.mark.parametrize("text", ACCEPTED)
def test_accepted(text: str) -> None:
    node = parse_build(text)
    assert isinstance(node, ast.expr)
    decode_value(node)  # decodable too


REJECTED = [
    # hostile: calls of anything else, attribute access, lambdas, comprehensions, imports
    "__import__('os').system('echo hacked')",
    "os.system('echo hacked')",
    "eval('1')",
    "exec('x = 1')",
    "getattr(decimal, 'Decimal')('1')",
    "decimal.Decimal.__class__",
    "decimal.Decimal('1').__class__.__bases__",
    "(1).__class__",
    "pkg.mod.__dict__.clear",
    "().__class__.__base__.__subclasses__()",
    "lambda: 1",
    "(lambda: 1)()",
    "[x for x in ()]",
    "{x: 1 for x in ()}",
    "f'{1}'",
    "x",
    "pkg.Status",  # two names: not a module, a class and a member
    "a[0]",
    "1 + 1",
    "not 1",
    "1 if 2 else 3",
    "1 < 2",
    "(x := 1)",
    "[*a]",
    "{**a}",
    "decimal.Decimal",
    "decimal.getcontext",
    "decimal.getcontext()",
    "datetime.timezone.min",
    "pathlib.Path('/etc/passwd')",
    "pathlib.Path.home()",
    "open('/etc/passwd')",
    "float('1.5')",
    "set([1])",
    "frozenset([1, 2])",
    "frozenset({1}, {2})",
    # wrong arguments
    "decimal.Decimal('NaN')",
    "decimal.Decimal('snan')",
    "decimal.Decimal(1.5)",
    "fractions.Fraction('1e999999999')",
    "fractions.Fraction(1, 2, 3)",
    "datetime.date(2024, 1)",
    "datetime.date(2024, 1, '1')",
    "datetime.date(2024, 1, True)",
    "datetime.date(2024, month=1, month=1)",
    "datetime.datetime(2024, 1, 1, tzinfo=pytz.utc)",
    "datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone(3600))",
    "datetime.timedelta(hours=1)",
    "uuid.UUID(int=5)",
    "decimal.Decimal(*['1'])",
    "datetime.date(**{'year': 1})",
    # the object marker
    "__equisa_object__('pkg.mod.Money', {})",
    "__equisa_object__('pkg.mod:<locals>.C', {})",
    "__equisa_object__('pkg.__main__:C', {})",
    "__equisa_object__('m:C', {'a': 1}, {'b': 2}, {})",
    "__equisa_object__('m:C', {1: 2})",
    "__equisa_object__('m:C', {'a': x})",
    "__equisa_object__('m:C')",
    "__equisa_object__(1, {})",
    # the class marker
    "__equisa_class__('builtins.int')",
    "__equisa_class__('m:<locals>.C')",
    "__equisa_class__('m:C', {})",
    "__equisa_class__()",
    "__equisa_class__(int)",
    # not text, not one expression
    "",
    "1; 2",
    "import os",
    "[",
]


@pytest.mark.parametrize("text", REJECTED)
def test_rejected(text: str) -> None:
    with pytest.raises(ProbeProtocolError, match="build rejected"):
        parse_build(text)
    with pytest.raises(ProbeProtocolError):
        decode_value(text)


def test_deep_nesting_and_size_limits_are_rejected_without_crashing() -> None:
    within = "[" * MAX_BUILD_NESTING + "]" * MAX_BUILD_NESTING
    parse_build(within)
    with pytest.raises(ProbeProtocolError, match="nested deeper"):
        parse_build("[" * (MAX_BUILD_NESTING + 1) + "]" * (MAX_BUILD_NESTING + 1))
    for hostile in ("[" * 5000 + "]" * 5000, "-" * 5000 + "1", "(" * 1000 + "1" + ")" * 1000):
        with pytest.raises(ProbeProtocolError):
            parse_build(hostile)
    with pytest.raises(ProbeProtocolError, match="longer than"):
        parse_build("'" + "x" * MAX_BUILD_TEXT + "'")
    with pytest.raises(ProbeProtocolError, match="syntax nodes"):
        parse_build("[" + ", ".join(["1"] * 6000) + "]")
    objects = "__equisa_object__('m:C', {'a': " * 9 + "1" + "})" * 9
    with pytest.raises(ProbeProtocolError, match="nested deeper"):
        parse_build(objects)
    not_text: Any = None  # what a broken probe could send
    with pytest.raises(ProbeProtocolError, match="not text"):
        parse_build(not_text)


@pytest.mark.parametrize(
    "text",
    ["datetime.date(2024, 13, 1)", "datetime.timedelta(days=1000000000)", "{(1, [2]): 2}",
     "{__equisa_object__('m:C', {'a': [1]})}", "uuid.UUID('not-a-uuid')", "pathlib.WindowsPath('c:/x')"],
)
def test_builds_the_constructors_refuse_are_not_decodable(text: str) -> None:
    with pytest.raises(ProbeProtocolError, match="not decodable"):
        decode_value(text)


def test_object_build_and_walk_build() -> None:
    node = parse_build("__equisa_object__('p.m:C', {'a': [decimal.Decimal('1')]}, {'s': p.m.E.X})")
    found = object_build(node)
    assert found is not None
    assert (found.module, found.qualname, found.type_name) == ("p.m", "C", "p.m:C")
    assert list(found.attributes) == ["a"] and list(found.slots) == ["s"]
    assert object_build(parse_build("[1]")) is None
    parts = [ast.unparse(n) for n in walk_build(node)]
    assert "decimal.Decimal('1')" in parts and "p.m.E.X" in parts
    assert "decimal.Decimal" not in parts  # callees and attribute paths are not values


def test_build_expression_gives_up_when_a_class_cannot_be_named() -> None:
    class Refusing(_Recorder):
        def cls(self, module: str | None, qualname: str) -> str | None:
            return None

    node = parse_build("[__equisa_object__('m:C', {})]")
    assert build_expression(node, Refusing(), "x") is None
    stdlib_only = "[decimal.Decimal('1')]"
    assert build_expression(parse_build(stdlib_only), Refusing(), "x") == stdlib_only


def test_object_values_compare_and_hash_by_type_and_attributes() -> None:
    one = decode_value("__equisa_object__('m:Money', {'amount': decimal.Decimal('1.0')})")
    same = decode_value("__equisa_object__('m:Money', {'amount': decimal.Decimal('1.00')})")
    other = decode_value("__equisa_object__('m:Other', {'amount': decimal.Decimal('1.0')})")
    assert one == same and hash(one) == hash(same) and one != other
    assert repr(one) == "Money(amount=Decimal('1.0'))"
    assert {one, same, other} == {one, other}


def test_probe_build_helpers_are_cached_per_class(ledger) -> None:
    build(ledger.Money(D("1")))
    known = equisa_probe._CLASSES[id(ledger.Money)]
    assert known[0] is ledger.Money and known[1] == ("ledger_types", "Money")
